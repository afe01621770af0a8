// SPDX-License-Identifier: GPL-2.0
// Micro-benchmarks behind `make bench`. scripts/bench.py turns their JSON
// into ratios measured in the same run.
#include <benchmark/benchmark.h>

#include <sys/mman.h>

#include "ptwalk/clock.hpp"
#include "ptwalk/histogram.hpp"
#include "ptwalk/workload.hpp"

using namespace ptwalk;

namespace {

uint64_t next_value(uint64_t &s)
{
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s & 0xfffff; // up to ~1 ms
}

void BM_EmptyLoop(benchmark::State &st)
{
	uint64_t s = 88172645463325252ull;
	for (auto _ : st) {
		uint64_t v = next_value(s);
		benchmark::DoNotOptimize(v);
	}
}
BENCHMARK(BM_EmptyLoop);

void BM_HistogramRecord(benchmark::State &st)
{
	static Histogram h; // static: keep the 60 KiB off the stack
	uint64_t s = 88172645463325252ull;
	for (auto _ : st) {
		h.record(next_value(s));
		benchmark::ClobberMemory();
	}
}
BENCHMARK(BM_HistogramRecord);

void BM_ClockRead(benchmark::State &st)
{
	for (auto _ : st)
		benchmark::DoNotOptimize(now_ns());
}
BENCHMARK(BM_ClockRead);

constexpr size_t kPopulate = 1ull << 30;

void BM_PopulateThreads(benchmark::State &st)
{
	const unsigned threads = unsigned(st.range(0));
	for (auto _ : st) {
		void *p = mmap(nullptr, kPopulate, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) {
			st.SkipWithError("mmap");
			return;
		}
		madvise(p, kPopulate, MADV_NOHUGEPAGE);
		int e = populate(p, kPopulate, true, threads, nullptr, nullptr);
		st.PauseTiming();
		munmap(p, kPopulate);
		st.ResumeTiming();
		if (e) {
			st.SkipWithError("populate");
			return;
		}
	}
	st.SetBytesProcessed(int64_t(st.iterations()) * int64_t(kPopulate));
}
BENCHMARK(BM_PopulateThreads)
	->Arg(1)
	->Arg(2)
	->Unit(benchmark::kMillisecond)
	->Iterations(3)
	->Repetitions(1);

void BM_MapPopulate(benchmark::State &st)
{
	for (auto _ : st) {
		void *p = mmap(nullptr, kPopulate, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (p == MAP_FAILED) {
			st.SkipWithError("mmap");
			return;
		}
		st.PauseTiming();
		munmap(p, kPopulate);
		st.ResumeTiming();
	}
	st.SetBytesProcessed(int64_t(st.iterations()) * int64_t(kPopulate));
}
BENCHMARK(BM_MapPopulate)->Unit(benchmark::kMillisecond)->Iterations(3)->Repetitions(1);

} // namespace

BENCHMARK_MAIN();

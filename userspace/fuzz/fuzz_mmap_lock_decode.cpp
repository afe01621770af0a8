// SPDX-License-Identifier: GPL-2.0
// mmap_lock_trace.hpp: raw mmap_lock tracepoint records decoded by the real
// format files of 6.1 (memcg_path) and 6.18 (memcg_id) from
// userspace/testdata/tracefs, the decoded events paired into waits and holds.
// Input: records, each one length byte and that many bytes of record.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>

#include "ptwalk/mmap_lock_trace.hpp"
#include "ptwalk/procfs.hpp"
#include "ptwalk/tracefs.hpp"

namespace {

ptwalk::MmapLockDecoder decoders[2];

ptwalk::TraceEventFormat load(const std::string &kernel, const char *event)
{
	const std::string path =
		std::string(PTWALK_TESTDATA) + "/tracefs/" + kernel + "/" + event + "/format";
	std::string err;
	std::optional<ptwalk::TraceEventFormat> f;
	if (auto text = ptwalk::read_file(path, &err))
		f = ptwalk::parse_event_format(*text, &err);
	if (!f) {
		fprintf(stderr, "fuzz_mmap_lock_decode: %s\n", err.c_str());
		exit(1);
	}
	return *f;
}

struct NullSink : ptwalk::LockPairer::Sink {
	void wait(const ptwalk::LockSpan &) override {}
	void hold(const ptwalk::LockSpan &) override {}
};

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
	const char *kernels[2] = {"6.1", "6.18"};
	for (int k = 0; k < 2; k++) {
		std::string err;
		if (!decoders[k].init(load(kernels[k], "mmap_lock_start_locking"),
				      load(kernels[k], "mmap_lock_acquire_returned"),
				      load(kernels[k], "mmap_lock_released"), &err)) {
			fprintf(stderr, "fuzz_mmap_lock_decode: %s\n", err.c_str());
			exit(1);
		}
	}
	return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	NullSink sink;
	ptwalk::LockPairer pairers[2] = {ptwalk::LockPairer(sink), ptwalk::LockPairer(sink)};
	uint64_t time = 0;
	for (size_t p = 0; p < size;) {
		const size_t len = data[p++];
		if (len > size - p)
			break;
		ptwalk::PerfSample s;
		s.time_ns = time += 1000;
		s.pid = s.tid = 1;
		s.raw = std::span<const uint8_t>(data + p, len);
		p += len;
		for (int k = 0; k < 2; k++) {
			ptwalk::LockEvent e;
			if (decoders[k].decode(s, e))
				pairers[k].feed(e);
		}
	}
	return 0;
}

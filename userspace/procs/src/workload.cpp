// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/workload.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/prctl.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "ptwalk/clock.hpp"
#include "ptwalk/fd.hpp"
#include "ptwalk/toucher.hpp"

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 1U
#endif

namespace ptwalk {

namespace {

constexpr size_t kHuge = 2u << 20;

void set_message(Shared *sh, const std::string &m)
{
	snprintf(sh->message, sizeof(sh->message), "%s", m.c_str());
}

// xorshift64*: cheap, allocation-free randomness for victims.
struct Rng {
	uint64_t s;
	uint64_t next()
	{
		s ^= s >> 12;
		s ^= s << 25;
		s ^= s >> 27;
		return s * 2685821657736338717ull;
	}
};

struct Region {
	Mapping map;
	uint8_t *base = nullptr;
	size_t len = 0;
	Fd fd;
	bool populate_write = true;
	size_t page = 4096;
};

// One memfd of sc.physical bytes mapped over and over (MAP_SHARED, 4 KiB
// pages): page tables of --size virtual bytes over little real memory.
// Adjacent aliases all start at file offset 0, so their VMAs never merge.
bool map_alias(const Scenario &sc, Shared *sh, Region *r)
{
	const size_t len = sc.size;
	const size_t phys = (std::min<uint64_t>(sc.physical, len) + 4095) & ~size_t(4095);
	r->fd.reset(int(memfd_create("ptwalk-alias", MFD_CLOEXEC)));
	if (!r->fd) {
		set_message(sh, std::string("memfd_create: ") + strerror(errno));
		return false;
	}
	if (ftruncate(r->fd.get(), off_t(phys)) != 0) {
		set_message(sh, std::string("ftruncate: ") + strerror(errno));
		return false;
	}
	void *p = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		set_message(sh, std::string("reserving ") + std::to_string(len) +
					" bytes of address space: " + strerror(errno));
		return false;
	}
	r->map = Mapping(p, len);
	r->base = static_cast<uint8_t *>(p);
	r->len = len;
	for (size_t off = 0; off < len; off += phys) {
		const size_t n = std::min(phys, len - off);
		void *q = mmap(r->base + off, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			       r->fd.get(), 0);
		if (q == MAP_FAILED) {
			set_message(sh, std::string("mapping alias at offset ") +
						std::to_string(off) + ": " + strerror(errno) +
						(errno == ENOMEM ? " (vm.max_map_count?)" : ""));
			return false;
		}
		madvise(q, n, MADV_NOHUGEPAGE);
	}
	// read faults: shmem fault-around maps many PTEs per fault
	r->populate_write = false;
	return true;
}

// Maps the region for the backing; on failure sets the message and returns
// false (state kSkipped for a hugetlb shortage, kFailed otherwise).
bool map_region(const Scenario &sc, Shared *sh, Region *r)
{
	const size_t len = sc.size;
	int flags = MAP_NORESERVE;
	int fd = -1;
	size_t extra = 0;
	switch (sc.backing) {
	case Backing::anon:
		flags |= MAP_PRIVATE | MAP_ANONYMOUS;
		break;
	case Backing::thp:
		flags |= MAP_PRIVATE | MAP_ANONYMOUS;
		extra = kHuge; // room to align to 2 MiB
		break;
	case Backing::hugetlb:
		flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB;
		r->page = kHuge;
		break;
	case Backing::shmem:
		r->fd.reset(int(memfd_create("ptwalk-shmem", MFD_CLOEXEC)));
		if (!r->fd) {
			set_message(sh, std::string("memfd_create: ") + strerror(errno));
			return false;
		}
		flags |= MAP_SHARED;
		break;
	case Backing::zeropage:
		flags |= MAP_PRIVATE | MAP_ANONYMOUS;
		r->populate_write = false; // read faults map the zero page
		break;
	case Backing::alias:
		return map_alias(sc, sh, r);
	case Backing::file: {
		std::string path = sc.dir + "/ptwalk-file-XXXXXX";
		std::vector<char> tmpl(path.begin(), path.end());
		tmpl.push_back('\0');
		r->fd.reset(mkostemp(tmpl.data(), O_CLOEXEC));
		if (!r->fd) {
			set_message(sh, path + ": " + strerror(errno));
			return false;
		}
		unlink(tmpl.data()); // nothing left behind, whatever happens
		flags |= MAP_SHARED;
		// a sparse file: read faults map zeroed page cache, no disk writes
		r->populate_write = false;
		break;
	}
	}
	fd = r->fd.get();
	if (fd >= 0 && ftruncate(fd, off_t(len)) != 0) {
		set_message(sh, std::string("ftruncate: ") + strerror(errno));
		return false;
	}
	void *p = mmap(nullptr, len + extra, PROT_READ | PROT_WRITE, flags, fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;
		set_message(sh,
			    std::string("mmap ") + std::to_string(len) + " bytes: " + strerror(e));
		sh->workload_state = sc.backing == Backing::hugetlb ? kSkipped : kFailed;
		return false;
	}
	r->map = Mapping(p, len + extra);
	uintptr_t a = uintptr_t(p);
	if (extra)
		a = (a + kHuge - 1) & ~uintptr_t(kHuge - 1);
	r->base = reinterpret_cast<uint8_t *>(a);
	r->len = len;
	if (sc.backing == Backing::thp)
		madvise(r->base, len, MADV_HUGEPAGE);
	else if (sc.backing != Backing::hugetlb)
		// 4 KiB pages whatever the THP mode: the walk size is the point
		madvise(r->base, len, MADV_NOHUGEPAGE);
	return true;
}

// The thread's name ("victim-<kind>"), a 1 ns timer slack, its tid in the
// slot.
void name_victim_thread(Victim kind, VictimSlot *slot)
{
	char comm[16];
	snprintf(comm, sizeof(comm), "victim-%s", name(kind));
	prctl(PR_SET_NAME, comm);
	prctl(PR_SET_TIMERSLACK, 1UL);
	slot->tid = int32_t(gettid());
}

// The calling thread's time runnable but waiting for a CPU so far: the
// second field of /proc/thread-self/schedstat (run_delay, ns; kernels with
// CONFIG_SCHED_INFO, which every Debian flavour has); nullopt without it.
std::optional<uint64_t> thread_run_delay_ns()
{
	FILE *f = fopen("/proc/thread-self/schedstat", "re");
	if (!f)
		return std::nullopt;
	unsigned long long run = 0, delay = 0;
	const int n = fscanf(f, "%llu %llu", &run, &delay);
	fclose(f);
	if (n != 2)
		return std::nullopt;
	return uint64_t(delay);
}

// The parent measures the walk size first: that read is a walk too.
void wait_for_victims_go(const Shared *sh)
{
	while (!sh->victims_go.load() && !sh->stop.load())
		usleep(1000);
}

// A victim's operation and its state from one to the next. Its members
// that touch the state are always inlined into victim_loop (op() is the
// timed region) and the object's address never leaves it, so the state
// stays in registers as if it were victim_loop's own locals.
class VictimOp {
public:
	static constexpr size_t kFaultPages = 256; // fault victim: 4 KiB pages
	static constexpr size_t kMmapBytes = 64 << 10;
	static constexpr uint64_t kPlacementTries = 4096; // 2 MiB apart: 8 GiB
	static constexpr uint64_t kVmaBytes = 2ull << 20; // vma victim: the last 2 MiB

	[[gnu::always_inline]] VictimOp(Victim kind, const Region *r, unsigned seed)
		: kind_(kind), rng_{0x9e3779b97f4a7c15ull ^ (uint64_t(seed) << 32) ^
				    uint64_t(gettid())},
		  words_(r->len / 8), words_base_(reinterpret_cast<volatile uint64_t *>(r->base)),
		  region_(r)
	{
	}

	// The fault victim's own small region, 4 KiB pages, placed as
	// --fault-region asks; false (why in *err) when it cannot be mapped.
	// Nothing to do for the others.
	[[gnu::always_inline]] bool prepare(FaultRegion where, std::string *err)
	{
		if (kind_ == Victim::vma)
			return prepare_vma(err);
		if (kind_ != Victim::fault)
			return true;
		uint64_t at = fault_region_address(where, uint64_t(uintptr_t(region_->base)),
						   region_->len, kFaultPages * 4096);
		if (where != FaultRegion::any && !at) {
			*err = std::string("no room ") + name(where) + " the walked mapping";
			return false;
		}
		// MAP_FIXED_NOREPLACE (4.17) fails rather than replace a mapping:
		// the first free 2 MiB slot from `at` on, away from the mapping
		// (the libraries and stacks mapped next to it take the nearest)
		void *p = MAP_FAILED;
		for (uint64_t i = 0, try_at = at; i < kPlacementTries; i++) {
			p = mmap(reinterpret_cast<void *>(uintptr_t(try_at)), kFaultPages * 4096,
				 PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED_NOREPLACE : 0), -1,
				 0);
			if (p != MAP_FAILED || errno != EEXIST || try_at < (4ull << 20))
				break;
			try_at = where == FaultRegion::above ? try_at + (2ull << 20)
							     : try_at - (2ull << 20);
			at = try_at;
		}
		if (p == MAP_FAILED) {
			*err = std::string("mmap ") + name(where) +
			       " the walked mapping: " + strerror(errno);
			return false;
		}
		if (at && p != reinterpret_cast<void *>(uintptr_t(at))) { // a kernel before 4.17
			munmap(p, kFaultPages * 4096);
			*err = "mmap did not honour MAP_FIXED_NOREPLACE";
			return false;
		}
		fault_map_ = Mapping(p, kFaultPages * 4096);
		madvise(p, kFaultPages * 4096, MADV_NOHUGEPAGE);
		return true;
	}

	// The vma victim's range: the walked mapping's last 2 MiB from a 2 MiB
	// boundary (a huge page is not split; hugetlb's 2 MiB pages allow it),
	// or the whole mapping when it is smaller. One round trip first, so a
	// backing that refuses it is an error before the run, not mid-run.
	bool prepare_vma(std::string *err)
	{
		const uint64_t base = uint64_t(uintptr_t(region_->base));
		const uint64_t end = base + region_->len;
		uint64_t start = end >= kVmaBytes ? (end - kVmaBytes) & ~(kVmaBytes - 1) : base;
		if (start < base)
			start = base;
		vma_addr_ = reinterpret_cast<void *>(uintptr_t(start));
		vma_len_ = size_t(end - start);
		if (madvise(vma_addr_, vma_len_, MADV_DONTFORK) ||
		    madvise(vma_addr_, vma_len_, MADV_DOFORK)) {
			*err = std::string("madvise(MADV_DONTFORK) of the walked mapping's last ") +
			       std::to_string(vma_len_ >> 10) + " KiB: " + strerror(errno);
			return false;
		}
		return true;
	}

	// One operation, the timed one (t0: its start, what a write stores).
	[[gnu::always_inline]] void op(uint64_t t0)
	{
		switch (kind_) {
		case Victim::read:
			(void)words_base_[rng_.next() % words_];
			break;
		case Victim::write:
			words_base_[rng_.next() % words_] = t0;
			break;
		case Victim::fault:
			static_cast<volatile uint8_t *>(fault_map_.get())[fault_next_ * 4096] = 1;
			break;
		case Victim::mmap:
			if (mapped_phase_) {
				mmap_addr_ = mmap(nullptr, kMmapBytes, PROT_READ | PROT_WRITE,
						  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
				if (mmap_addr_ == MAP_FAILED)
					mmap_addr_ = nullptr;
			} else if (mmap_addr_) {
				munmap(mmap_addr_, kMmapBytes);
				mmap_addr_ = nullptr;
			}
			mapped_phase_ = !mapped_phase_;
			break;
		case Victim::vma:
			// the split (DONTFORK) and the merge back (DOFORK) alternate;
			// a failure cannot happen after prepare_vma's round trip
			// but for ENOMEM, and the next operation retries it
			if (madvise(vma_addr_, vma_len_,
				    mapped_phase_ ? MADV_DONTFORK : MADV_DOFORK) == 0)
				mapped_phase_ = !mapped_phase_;
			break;
		}
	}

	// After an operation: true when upkeep() is due. The fault victim
	// returns its pages once it has touched them all, so the next touches
	// fault.
	[[gnu::always_inline]] bool after_op()
	{
		return kind_ == Victim::fault && ++fault_next_ == kFaultPages;
	}

	// The upkeep, timed apart from the operations: MADV_DONTNEED takes
	// mmap_lock for read, so it waits behind a walk like a fault without
	// per-VMA locks does (on 6.12 most faults take only the VMA's lock,
	// and then these are most of the fault victim's waits on mmap_lock).
	[[gnu::always_inline]] void upkeep()
	{
		madvise(fault_map_.get(), kFaultPages * 4096, MADV_DONTNEED);
		fault_next_ = 0;
	}

	// The mmap victim's last mapping, if any.
	[[gnu::always_inline]] void finish()
	{
		if (mmap_addr_)
			munmap(mmap_addr_, kMmapBytes);
		if (kind_ == Victim::vma && !mapped_phase_)
			madvise(vma_addr_, vma_len_, MADV_DOFORK);
	}

private:
	const Victim kind_;
	Rng rng_;
	const size_t words_;
	volatile uint64_t *const words_base_;
	const Region *const region_;
	Mapping fault_map_;
	size_t fault_next_ = 0;
	bool mapped_phase_ = true;
	void *mmap_addr_ = nullptr;
	void *vma_addr_ = nullptr;
	size_t vma_len_ = 0;
};

// The thread's voluntary and involuntary context switches so far.
struct Switches {
	long vol = 0, invol = 0;
};

Switches thread_switches()
{
	struct rusage ru;
	Switches s;
	if (getrusage(RUSAGE_THREAD, &ru) == 0) {
		s.vol = ru.ru_nvcsw;
		s.invol = ru.ru_nivcsw;
	}
	return s;
}

// After an operation timed [t0, t1] between walk_seq reads s0 and s1: into
// the slot's histogram for during or outside walks; when slow, also into
// its slow operations, with whether it slept (v0: the switches before).
void record_op(VictimSlot *slot, uint64_t s0, uint64_t s1, uint64_t t0, uint64_t t1,
	       bool track_sleep, const Switches &v0, bool upkeep = false)
{
	const bool during = (s0 & 1) || s1 != s0;
	if (!upkeep) // upkeep goes to the slow-op log only
		(during ? slot->during : slot->outside).record(t1 - t0);
	const Switches v1 = track_sleep ? thread_switches() : Switches{};
	if (t1 - t0 >= kSlowOpNs) {
		// rare: a fetch_add and a store, no allocation, no lock
		const uint32_t k = slot->nslow.fetch_add(1, std::memory_order_relaxed);
		const uint32_t slept = !track_sleep
					       ? kSleepUnknown
					       : (v1.vol != v0.vol ? kOpSlept : 0u) |
							 (v1.invol != v0.invol ? kOpPreempted : 0u);
		if (k < kMaxSlowOps)
			slot->slow[k] = SlowOp{t0, t1,
					       (during ? kOpDuring : 0u) |
						       ((s0 & 1) ? kOpBeganDuring : 0u) |
						       (upkeep ? kOpUpkeep : 0u),
					       slept};
	}
}

// --op-interval: sleeps until next + interval, the next deadline returned;
// no catch-up bursts after a stall.
uint64_t pace(uint64_t next, uint64_t op_interval_ns)
{
	next += op_interval_ns;
	const uint64_t now = now_ns();
	if (next > now) {
		timespec ts{time_t(next / 1000000000ull), long(next % 1000000000ull)};
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
	} else {
		next = now;
	}
	return next;
}

// A victim thread: its operation over and over until the stop, each timed
// alone (walk_seq read around the timing says whether a walk overlapped it).
void victim_loop(Victim kind, VictimSlot *slot, Shared *sh, const Region *r, const Scenario *sc,
		 unsigned seed)
{
	name_victim_thread(kind, slot);
	VictimOp v(kind, r, seed);
	std::string err;
	if (!v.prepare(sc->fault_region, &err)) {
		set_message(sh, std::string(name(kind)) + " victim: " + err);
		return;
	}
	const uint64_t op_interval_ns = sc->op_interval_ns;
	wait_for_victims_go(sh);
	const std::optional<uint64_t> delay0 = thread_run_delay_ns();
	// Victims that take mmap_lock also note whether an operation slept
	// (a voluntary context switch, getrusage): a slow operation that slept
	// waited for something; one that did not was preempted or frozen.
	const bool track_sleep = kind == Victim::mmap || kind == Victim::fault ||
				 kind == Victim::vma;
	uint64_t next = now_ns();
	// one timed step: the operation, or the upkeep after it
	auto timed = [&](bool upkeep) {
		const Switches v0 = track_sleep ? thread_switches() : Switches{};
		const uint64_t s0 = sh->walk_seq.load(std::memory_order_acquire);
		std::atomic_signal_fence(std::memory_order_seq_cst);
		const uint64_t t0 = now_ns();
		if (upkeep)
			v.upkeep();
		else
			v.op(t0);
		const uint64_t t1 = now_ns();
		std::atomic_signal_fence(std::memory_order_seq_cst);
		const uint64_t s1 = sh->walk_seq.load(std::memory_order_acquire);
		record_op(slot, s0, s1, t0, t1, track_sleep, v0, upkeep);
	};
	while (!sh->stop.load(std::memory_order_relaxed)) {
		timed(false);
		if (v.after_op())
			timed(true);
		if (op_interval_ns)
			next = pace(next, op_interval_ns);
	}
	const std::optional<uint64_t> delay1 = thread_run_delay_ns();
	if (delay0 && delay1 && *delay1 >= *delay0) {
		slot->run_delay_ns = *delay1 - *delay0;
		slot->run_delay_known = 1;
	}
	v.finish();
}

} // namespace

int workload_main(const Scenario &sc, Shared *sh)
{
	prctl(PR_SET_NAME, "ptwalk-workload");
	Region r;
	sh->workload_state = kPopulating;
	if (!map_region(sc, sh, &r)) {
		if (sh->workload_state != kSkipped)
			sh->workload_state = kFailed;
		return 1;
	}
	sh->mapping_bytes = r.len;
	sh->mapping_base = uint64_t(uintptr_t(r.base));
	unsigned threads = sc.populate_threads
				   ? sc.populate_threads
				   : unsigned(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
	const uint64_t t0 = now_ns();
	const char *method = "";
	int err = populate(r.base, r.len, r.populate_write, threads, &sh->populated_bytes, &method);
	sh->populate_ns = now_ns() - t0;
	if (err) {
		set_message(sh, std::string("populate (") + method + "): " + strerror(err));
		// a hugetlb shortage is a skip (the pool ran dry), anything else a failure
		const bool shortage = sc.backing == Backing::hugetlb &&
				      (err == ENOMEM || err == EFAULT);
		sh->workload_state = shortage ? kSkipped : kFailed;
		return 1;
	}

	std::vector<std::thread> victims;
	for (unsigned i = 0; i < sh->nvictims; i++)
		victims.emplace_back(victim_loop, sc.victims[i], &sh->victims[i], sh, &r, &sc,
				     i + 1);
	if (sc.working_set) // joined with the victims
		victims.emplace_back(touch_loop, &sc, sh, r.base, r.len);
	// ready once every victim has published its tid
	for (;;) {
		bool all = true;
		for (unsigned i = 0; i < sh->nvictims; i++)
			if (!sh->victims[i].tid.load())
				all = false;
		if (all || sh->stop.load())
			break;
		usleep(1000);
	}
	sh->workload_state = kReady;
	while (!sh->stop.load())
		usleep(10000);
	for (auto &t : victims)
		t.join();
	// the mapping stays until the parent has measured it once more
	sh->workload_state = kStopped;
	while (!sh->exit_now.load())
		usleep(1000);
	return 0;
}

} // namespace ptwalk

// SPDX-License-Identifier: GPL-2.0
// Loader of the monitor's BPF program: libbpf and the skeleton bpftool
// generates from os/bpf/lock_spans.bpf.c at build time.
#include "ptwalk/bpf_lock_spans.hpp"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <unistd.h>
#include <vector>

#include "lock_spans.skel.h"

namespace ptwalk {

namespace {

// libbpf's messages, kept for the one-line error instead of printed
std::mutex g_log_mu;
std::string *g_log = nullptr;

int log_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	char buf[512];
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	std::lock_guard<std::mutex> g(g_log_mu);
	if (g_log && n > 0) {
		std::string line(buf);
		while (!line.empty() && (line.back() == '\n' || line.back() == ' '))
			line.pop_back();
		if (line.rfind("libbpf: ", 0) == 0)
			line.erase(0, 8);
		if (!line.empty())
			*g_log = line; // the last message is the reason
	}
	return 0;
}

// libbpf's messages while a loader runs: the last one is kept as the
// reason of a failure, none is printed; the previous printer is restored.
struct LogCapture {
	std::string text;
	libbpf_print_fn_t old;
	LogCapture()
	{
		std::lock_guard<std::mutex> g(g_log_mu);
		g_log = &text;
		old = libbpf_set_print(log_libbpf);
	}
	~LogCapture()
	{
		std::lock_guard<std::mutex> g(g_log_mu);
		libbpf_set_print(old);
		g_log = nullptr;
	}
	LogCapture(const LogCapture &) = delete;
	LogCapture &operator=(const LogCapture &) = delete;
};

constexpr int kWithPath = 1, kWithoutPath = 2;

// The arguments of mmap_lock_start_locking in the running kernel, from its
// BTF: (mm, memcg_path, write) through 6.13 (6.1 and 6.12 have it), (mm,
// write) since 6.14's "mm: mmap_lock: optimize mmap_lock tracepoints".
// "" and *form set, or why not.
std::string tracepoint_form(int *form)
{
	btf *vm = btf__load_vmlinux_btf();
	if (!vm)
		return "BPF: the kernel's BTF (/sys/kernel/btf/vmlinux) is unavailable: " +
		       std::string(strerror(errno));
	std::string why;
	const int id =
		btf__find_by_name_kind(vm, "btf_trace_mmap_lock_start_locking", BTF_KIND_TYPEDEF);
	const btf_type *t = id > 0 ? btf__type_by_id(vm, uint32_t(id)) : nullptr;
	// typedef -> pointer -> function prototype (void *__data, ...)
	for (int hop = 0; t && hop < 2; hop++)
		t = btf__type_by_id(vm, t->type);
	if (!t || !btf_is_func_proto(t)) {
		why = "BPF: no mmap_lock_start_locking tracepoint in the kernel's BTF (mmap_lock tracepoints need 5.11+)";
	} else if (btf_vlen(t) == 4) {
		*form = kWithPath;
	} else if (btf_vlen(t) == 3) {
		*form = kWithoutPath;
	} else {
		why = "BPF: mmap_lock_start_locking has " + std::to_string(btf_vlen(t) - 1) +
		      " arguments here, a form this program does not know";
	}
	btf__free(vm);
	return why;
}

} // namespace

struct BpfLockSpans::Impl {
	lock_spans_bpf *skel = nullptr;
	ring_buffer *rb = nullptr;
	int stats_fd = -1;
	const std::function<void(const ptw_bpf_rec &)> *cb = nullptr;

	static int on_record(void *ctx, void *data, size_t size)
	{
		auto *self = static_cast<Impl *>(ctx);
		if (size >= sizeof(ptw_bpf_rec) && self->cb) {
			ptw_bpf_rec r;
			memcpy(&r, data, sizeof(r));
			(*self->cb)(r);
		}
		return 0;
	}
	void close()
	{
		if (rb)
			ring_buffer__free(rb);
		rb = nullptr;
		if (skel)
			lock_spans_bpf__destroy(skel);
		skel = nullptr;
		if (stats_fd >= 0)
			::close(stats_fd);
		stats_fd = -1;
	}
};

BpfLockSpans::BpfLockSpans() : impl_(std::make_unique<Impl>()) {}
BpfLockSpans::~BpfLockSpans()
{
	close();
}

bool BpfLockSpans::is_open() const
{
	return impl_->skel != nullptr;
}

void BpfLockSpans::close()
{
	impl_->close();
}

bool BpfLockSpans::open(const BpfLockSpansConfig &c, std::string *err)
{
	close();
	LogCapture log;
	auto fail = [&](const std::string &what, int e) {
		if (err) {
			*err = e ? what + ": " + strerror(e < 0 ? -e : e) : what;
			if (e && !log.text.empty())
				*err += " (libbpf: " + log.text + ")";
		}
		impl_->close();
		return false;
	};
	Impl &m = *impl_;
	m.skel = lock_spans_bpf__open();
	if (!m.skel)
		return fail("BPF open", errno);
	m.skel->rodata->min_hold_ns = c.min_hold_ns;
	m.skel->rodata->min_wait_ns = c.min_wait_ns;
	m.skel->rodata->prober_tid = uint32_t(c.prober_tid);
	// one program per event for the running kernel's form of the
	// tracepoints' arguments
	int form = 0;
	if (std::string e = tracepoint_form(&form); !e.empty())
		return fail(e, 0);
	auto &p = m.skel->progs;
	for (bpf_program *x : {p.ptw_start_path, p.ptw_acquire_path, p.ptw_release_path})
		bpf_program__set_autoload(x, form == kWithPath);
	for (bpf_program *x : {p.ptw_start, p.ptw_acquire, p.ptw_release})
		bpf_program__set_autoload(x, form == kWithoutPath);
	if (int e = lock_spans_bpf__load(m.skel))
		return fail("BPF load", e);
	if (int e = lock_spans_bpf__attach(m.skel))
		return fail("BPF attach to the mmap_lock tracepoints", e);
	// one program after the other: pairing starts once all three see
	// every event
	__atomic_store_n(&m.skel->bss->armed, 1u, __ATOMIC_RELEASE);
	m.rb = ring_buffer__new(bpf_map__fd(m.skel->maps.records), &Impl::on_record, &m, nullptr);
	if (!m.rb)
		return fail("BPF ring buffer", errno);
	if (c.run_time_stats)
		m.stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME); // < 0: not counted
	return true;
}

size_t BpfLockSpans::consume(const std::function<void(const ptw_bpf_rec &)> &f)
{
	if (!impl_->rb)
		return 0;
	impl_->cb = &f;
	int n = ring_buffer__consume(impl_->rb);
	impl_->cb = nullptr;
	return n > 0 ? size_t(n) : 0;
}

int BpfLockSpans::wake_fd() const
{
	return impl_->rb ? ring_buffer__epoll_fd(impl_->rb) : -1;
}

BpfLockStats BpfLockSpans::stats() const
{
	BpfLockStats s;
	const Impl &m = *impl_;
	if (!m.skel)
		return s;
	const int ncpu = libbpf_num_possible_cpus();
	if (ncpu > 0) {
		std::vector<uint64_t> v(static_cast<size_t>(ncpu), 0);
		uint64_t sum[PTW_BPF_NSTATS] = {};
		for (uint32_t k = 0; k < PTW_BPF_NSTATS; k++) {
			if (bpf_map_lookup_elem(bpf_map__fd(m.skel->maps.stats), &k, v.data()) == 0)
				for (uint64_t x : v)
					sum[k] += x;
		}
		s.events = sum[PTW_BPF_EVENTS];
		s.unpaired = sum[PTW_BPF_UNPAIRED];
		s.records = sum[PTW_BPF_RECORDS];
		s.dropped = sum[PTW_BPF_DROPPED];
		s.waits_behind = sum[PTW_BPF_WAITS_BEHIND];
	}
	s.run_time_counted = m.stats_fd >= 0;
	const auto &p = m.skel->progs;
	for (bpf_program *x : {p.ptw_start, p.ptw_acquire, p.ptw_release, p.ptw_start_path,
			       p.ptw_acquire_path, p.ptw_release_path}) {
		if (!bpf_program__autoload(x))
			continue;
		bpf_prog_info info{};
		uint32_t len = sizeof(info);
		if (bpf_obj_get_info_by_fd(bpf_program__fd(x), &info, &len) == 0) {
			s.run_ns += info.run_time_ns;
			s.run_count += info.run_cnt;
			s.misses += info.recursion_misses;
		}
	}
	return s;
}

} // namespace ptwalk

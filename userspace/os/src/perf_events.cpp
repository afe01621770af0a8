// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/perf_events.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <linux/perf_event.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

#include "ptwalk/clock.hpp"
#include "ptwalk/fd.hpp"
#include "ptwalk/procfs.hpp"

namespace ptwalk {

namespace {

// sample_id_all's trailer of a non-sample record, as sample_type TID |
// TIME | CPU lays it out: u32 pid, tid; u64 time; u32 cpu, res
constexpr size_t kSampleIdBytes = 24;

uint64_t sample_id_time(const uint8_t *rec, size_t size)
{
	uint64_t t;
	std::memcpy(&t, rec + size - 16, 8);
	return t;
}

long sys_perf_event_open(perf_event_attr *attr, pid_t pid, int cpu, int group, unsigned long flags)
{
	return syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

std::string errno_text(int e)
{
	return std::strerror(e);
}

struct Ring {
	int cpu = 0;
	Fd leader;              // owns the mapping
	std::vector<Fd> others; // redirected with PERF_EVENT_IOC_SET_OUTPUT
	Mapping map;
	perf_event_mmap_page *meta = nullptr;
	uint8_t *data = nullptr;
	uint64_t data_size = 0;
};

} // namespace

std::vector<int> parse_cpu_list(std::string_view s)
{
	// Larger CPU numbers are not a CPU list (NR_CPUS is at most 8192): no
	// billions of entries, no overflow of the range loop at INT_MAX.
	constexpr int kMaxCpu = 1 << 16;
	std::vector<int> out;
	size_t pos = 0;
	while (pos < s.size()) {
		size_t comma = s.find(',', pos);
		std::string_view part = s.substr(pos, comma == std::string_view::npos
							      ? std::string_view::npos
							      : comma - pos);
		pos = comma == std::string_view::npos ? s.size() : comma + 1;
		while (!part.empty() && (part.back() == '\n' || part.back() == ' '))
			part.remove_suffix(1);
		if (part.empty())
			continue;
		size_t dash = part.find('-');
		int a = 0, b = 0;
		auto ra = std::from_chars(
			part.data(),
			part.data() + (dash == std::string_view::npos ? part.size() : dash), a);
		if (ra.ec != std::errc())
			return {};
		b = a;
		if (dash != std::string_view::npos) {
			auto rb = std::from_chars(part.data() + dash + 1, part.data() + part.size(),
						  b);
			if (rb.ec != std::errc() || b < a)
				return {};
		}
		if (b >= kMaxCpu)
			return {};
		for (int c = a; c <= b; c++)
			out.push_back(c);
	}
	return out;
}

std::vector<int> online_cpus()
{
	if (auto t = read_file("/sys/devices/system/cpu/online", nullptr)) {
		auto v = parse_cpu_list(*t);
		if (!v.empty())
			return v;
	}
	std::vector<int> v;
	long n = sysconf(_SC_NPROCESSORS_CONF);
	for (long i = 0; i < (n > 0 ? n : 1); i++)
		v.push_back(int(i));
	return v;
}

struct PerfTracepoints::Impl {
	PerfTracepointConfig cfg;
	std::vector<Ring> rings;
	Fd stop_fd;
	std::thread reader;
	PerfSink *sink = nullptr;
	bool started = false, stopped = false;
	std::vector<bool> filter_ok;         // per tracepoint
	std::vector<std::string> filter_err; // per tracepoint
	size_t ring_bytes = 0;
	std::atomic<uint64_t> samples{0}, lost{0}, lost_records{0};
	std::vector<uint8_t> scratch;

	void drain(Ring &r);
	// the steps of open(): each false with *err and no rings left
	bool open_events(size_t pages, long page, std::string *err);
	bool map_rings(size_t &pages, size_t min_pages, long page, std::string *err);
	bool redirect_to_rings(std::string *err);
	void apply_filter();
	void run();
	void for_each_fd(unsigned long req)
	{
		for (auto &r : rings) {
			ioctl(r.leader.get(), req, 0);
			for (auto &o : r.others)
				ioctl(o.get(), req, 0);
		}
	}
};

PerfTracepoints::PerfTracepoints() : impl_(std::make_unique<Impl>()) {}

PerfTracepoints::~PerfTracepoints()
{
	stop();
}

// One event per tracepoint id on each online CPU, the first of each CPU
// the leader whose ring the others share (a CPU gone offline is skipped).
bool PerfTracepoints::Impl::open_events(size_t pages, long page, std::string *err)
{
	for (int cpu : online_cpus()) {
		Ring r;
		r.cpu = cpu;
		for (size_t i = 0; i < cfg.tracepoint_ids.size(); i++) {
			perf_event_attr attr;
			std::memset(&attr, 0, sizeof(attr));
			attr.size = sizeof(attr);
			attr.type = PERF_TYPE_TRACEPOINT;
			attr.config = cfg.tracepoint_ids[i];
			attr.sample_period = 1;
			attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
					   PERF_SAMPLE_RAW;
			attr.disabled = 1;
			attr.use_clockid = 1;
			attr.clockid = CLOCK_MONOTONIC;
			attr.watermark = 1;
			attr.wakeup_watermark = uint32_t(pages * size_t(page) / 4);
			if (i == 0 && cfg.track_tasks) {
				attr.comm = 1;
				attr.comm_exec = 1;
				attr.task = 1;
				// their records end with the sample's TID, TIME
				// and CPU: the time orders a task's records read
				// from different CPUs' rings
				attr.sample_id_all = 1;
			}
			long fd = sys_perf_event_open(&attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
			if (fd < 0) {
				int e = errno;
				if (e == ENODEV && i == 0)
					goto next_cpu; // CPU went offline
				if (err) {
					*err = "perf_event_open(tracepoint " +
					       std::to_string(cfg.tracepoint_ids[i]) + ", cpu " +
					       std::to_string(cpu) + "): " + errno_text(e);
					if (e == EACCES || e == EPERM)
						*err += " (needs root / CAP_PERFMON, or kernel.perf_event_paranoid)";
				}
				rings.clear();
				return false;
			}
			if (i == 0) {
				r.leader.reset(int(fd));
			} else {
				r.others.emplace_back(static_cast<int>(fd));
			}
		}
		rings.push_back(std::move(r));
next_cpu:;
	}
	if (rings.empty()) {
		if (err)
			*err = "perf_event_open: no online CPU accepted the events";
		return false;
	}
	return true;
}

// Maps every CPU's ring, all of one size, halving it on EPERM/ENOMEM (the
// mlock limit) down to min_pages.
bool PerfTracepoints::Impl::map_rings(size_t &pages, size_t min_pages, long page, std::string *err)
{
	for (;;) {
		bool ok = true;
		int e = 0;
		for (auto &r : rings) {
			size_t len = (pages + 1) * size_t(page);
			void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED,
				       r.leader.get(), 0);
			if (p == MAP_FAILED) {
				e = errno;
				ok = false;
				break;
			}
			r.map = Mapping(p, len);
			r.meta = static_cast<perf_event_mmap_page *>(p);
			r.data = static_cast<uint8_t *>(p) + page;
			r.data_size = pages * size_t(page);
		}
		if (ok)
			break;
		for (auto &r : rings) {
			r.map.reset();
			r.meta = nullptr;
			r.data = nullptr;
		}
		if ((e != EPERM && e != ENOMEM) || pages <= min_pages) {
			if (err)
				*err = "mmap perf ring (" + std::to_string(pages * size_t(page)) +
				       " bytes): " + errno_text(e);
			rings.clear();
			return false;
		}
		pages /= 2;
	}
	return true;
}

// Redirects the other events of each CPU into its ring (the target must
// already be mapped, else EINVAL).
bool PerfTracepoints::Impl::redirect_to_rings(std::string *err)
{
	for (auto &r : rings)
		for (auto &o : r.others)
			if (ioctl(o.get(), PERF_EVENT_IOC_SET_OUTPUT, r.leader.get()) != 0) {
				int e = errno;
				if (err)
					*err = "PERF_EVENT_IOC_SET_OUTPUT(cpu " +
					       std::to_string(r.cpu) + "): " + errno_text(e);
				rings.clear();
				return false;
			}
	return true;
}

// Each event's filter (cfg.filters[i], else cfg.filter); a group of events
// sharing one text that any of them refuses is left unfiltered as a whole.
void PerfTracepoints::Impl::apply_filter()
{
	const size_t n = cfg.tracepoint_ids.size();
	filter_ok.assign(n, false);
	filter_err.assign(n, std::string());
	auto text = [&](size_t i) -> const std::string & {
		return cfg.filters.size() == n ? cfg.filters[i] : cfg.filter;
	};
	auto fd_of = [](Ring &r, size_t i) -> const Fd & {
		return i == 0 ? r.leader : r.others[i - 1];
	};
	std::vector<bool> done(n, false);
	for (size_t g = 0; g < n; g++) {
		if (done[g] || text(g).empty())
			continue;
		const std::string &f = text(g);
		std::vector<size_t> group;
		for (size_t i = g; i < n; i++)
			if (!done[i] && text(i) == f) {
				group.push_back(i);
				done[i] = true;
			}
		bool ok = true;
		std::string why;
		for (auto &r : rings)
			for (size_t i : group)
				if (ok && ioctl(fd_of(r, i).get(), PERF_EVENT_IOC_SET_FILTER,
						f.c_str()) != 0) {
					ok = false;
					why = "PERF_EVENT_IOC_SET_FILTER: " + errno_text(errno);
				}
		if (!ok) // clear a half-applied filter: the group unfiltered
			for (auto &r : rings)
				for (size_t i : group)
					ioctl(fd_of(r, i).get(), PERF_EVENT_IOC_SET_FILTER, "");
		for (size_t i : group) {
			filter_ok[i] = ok;
			filter_err[i] = why;
		}
	}
}

bool PerfTracepoints::open(const PerfTracepointConfig &cfg, std::string *err)
{
	Impl &m = *impl_;
	m.cfg = cfg;
	m.rings.clear();
	if (cfg.tracepoint_ids.empty()) {
		if (err)
			*err = "no tracepoint ids";
		return false;
	}
	const long page = sysconf(_SC_PAGESIZE);
	size_t pages = 1;
	while (pages * 2 * size_t(page) <= cfg.ring_bytes_per_cpu)
		pages *= 2;
	size_t min_pages = 1;
	while (min_pages * 2 * size_t(page) <= cfg.min_ring_bytes_per_cpu)
		min_pages *= 2;
	if (!m.open_events(pages, page, err) || !m.map_rings(pages, min_pages, page, err))
		return false;
	m.ring_bytes = pages * size_t(page);
	if (!m.redirect_to_rings(err))
		return false;
	// wakeup_watermark was set for the first size; a smaller ring just
	// wakes us when full-ish, and the poll timeout drains it anyway.
	m.apply_filter();
	m.stop_fd.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (!m.stop_fd) {
		if (err)
			*err = "eventfd: " + errno_text(errno);
		m.rings.clear();
		return false;
	}
	return true;
}

void PerfTracepoints::Impl::drain(Ring &r)
{
	const uint64_t head = __atomic_load_n(&r.meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r.meta->data_tail;
	const uint64_t mask = r.data_size - 1;
	while (tail < head) {
		perf_event_header hdr;
		const uint64_t off = tail & mask;
		if (off + sizeof(hdr) <= r.data_size) {
			std::memcpy(&hdr, r.data + off, sizeof(hdr));
		} else {
			const size_t first = size_t(r.data_size - off);
			std::memcpy(&hdr, r.data + off, first);
			std::memcpy(reinterpret_cast<uint8_t *>(&hdr) + first, r.data,
				    sizeof(hdr) - first);
		}
		if (hdr.size < sizeof(hdr) || tail + hdr.size > head)
			break; // corrupt or torn: stop here, resync next round
		const uint8_t *rec;
		if (off + hdr.size <= r.data_size) {
			rec = r.data + off;
		} else {
			scratch.resize(hdr.size);
			const size_t first = size_t(r.data_size - off);
			std::memcpy(scratch.data(), r.data + off, first);
			std::memcpy(scratch.data() + first, r.data, hdr.size - first);
			rec = scratch.data();
		}
		if (hdr.type == PERF_RECORD_SAMPLE) {
			// u32 pid, tid; u64 time; u32 cpu, res; u32 size; raw[size]
			const uint8_t *p = rec + sizeof(hdr);
			const uint8_t *end = rec + hdr.size;
			if (p + 28 <= end) {
				PerfSample s;
				uint32_t u32;
				std::memcpy(&u32, p, 4);
				s.pid = pid_t(u32);
				std::memcpy(&u32, p + 4, 4);
				s.tid = pid_t(u32);
				std::memcpy(&s.time_ns, p + 8, 8);
				std::memcpy(&s.cpu, p + 16, 4);
				uint32_t raw_size;
				std::memcpy(&raw_size, p + 24, 4);
				if (p + 28 + raw_size <= end) {
					s.raw = std::span<const uint8_t>(p + 28, raw_size);
					samples.fetch_add(1, std::memory_order_relaxed);
					sink->sample(s);
				}
			}
		} else if (hdr.type == PERF_RECORD_COMM) {
			// u32 pid, tid; char comm[] (NUL-terminated, padded);
			// sample_id: u32 pid, tid; u64 time; u32 cpu, res
			const uint8_t *p = rec + sizeof(hdr);
			const size_t n = hdr.size - sizeof(hdr);
			if (n > 8 + kSampleIdBytes) {
				uint32_t pid, tid;
				std::memcpy(&pid, p, 4);
				std::memcpy(&tid, p + 4, 4);
				const char *c = reinterpret_cast<const char *>(p + 8);
				sink->task_comm(
					pid_t(pid), pid_t(tid),
					std::string_view(c, strnlen(c, n - 8 - kSampleIdBytes)),
					sample_id_time(rec, hdr.size));
			}
		} else if (hdr.type == PERF_RECORD_FORK) {
			// u32 pid, ppid, tid, ptid; u64 time; sample_id
			if (hdr.size >= sizeof(hdr) + 16 + kSampleIdBytes) {
				uint32_t v[4];
				std::memcpy(v, rec + sizeof(hdr), 16);
				sink->task_fork(pid_t(v[0]), pid_t(v[1]), pid_t(v[2]), pid_t(v[3]),
						sample_id_time(rec, hdr.size));
			}
		} else if (hdr.type == PERF_RECORD_LOST) {
			// u64 id; u64 lost
			if (hdr.size >= sizeof(hdr) + 16) {
				uint64_t n;
				std::memcpy(&n, rec + sizeof(hdr) + 8, 8);
				lost.fetch_add(n, std::memory_order_relaxed);
				lost_records.fetch_add(1, std::memory_order_relaxed);
			}
		}
		tail += hdr.size;
		__atomic_store_n(&r.meta->data_tail, tail, __ATOMIC_RELEASE);
	}
}

void PerfTracepoints::Impl::run()
{
	std::vector<pollfd> pfds;
	for (auto &r : rings)
		pfds.push_back({r.leader.get(), POLLIN, 0});
	for (int fd : cfg.wake_fds)
		pfds.push_back({fd, POLLIN, 0});
	pfds.push_back({stop_fd.get(), POLLIN, 0});
	for (;;) {
		int n = poll(pfds.data(), nfds_t(pfds.size()), sink->next_poll_ms(cfg.poll_ms));
		if (n < 0 && errno != EINTR)
			break;
		if (pfds.back().revents & POLLIN)
			break;
		const uint64_t at = now_ns();
		for (auto &r : rings)
			drain(r);
		sink->round_end(at, false);
	}
	// stop(): events are disabled; take what is left.
	const uint64_t at = now_ns();
	for (auto &r : rings)
		drain(r);
	sink->round_end(at, true);
}

bool PerfTracepoints::start(PerfSink &sink, std::string *err)
{
	Impl &m = *impl_;
	if (m.rings.empty()) {
		if (err)
			*err = "perf events not open";
		return false;
	}
	if (m.started) {
		if (err)
			*err = "already started";
		return false;
	}
	m.sink = &sink;
	m.started = true;
	m.stopped = false;
	m.reader = std::thread([&m] { m.run(); });
	m.for_each_fd(PERF_EVENT_IOC_ENABLE);
	return true;
}

void PerfTracepoints::stop()
{
	Impl &m = *impl_;
	if (!m.started || m.stopped)
		return;
	m.stopped = true;
	m.for_each_fd(PERF_EVENT_IOC_DISABLE);
	uint64_t one = 1;
	// An eventfd write only fails on counter overflow; the reader polls it.
	(void)!write(m.stop_fd.get(), &one, sizeof(one));
	if (m.reader.joinable())
		m.reader.join();
}

bool PerfTracepoints::filter_applied() const
{
	return filter_applied(0);
}
const std::string &PerfTracepoints::filter_error() const
{
	return filter_error(0);
}
bool PerfTracepoints::filter_applied(size_t i) const
{
	return i < impl_->filter_ok.size() && impl_->filter_ok[i];
}
const std::string &PerfTracepoints::filter_error(size_t i) const
{
	static const std::string none;
	return i < impl_->filter_err.size() ? impl_->filter_err[i] : none;
}
unsigned PerfTracepoints::cpus() const
{
	return unsigned(impl_->rings.size());
}
size_t PerfTracepoints::ring_bytes_per_cpu() const
{
	return impl_->ring_bytes;
}
uint64_t PerfTracepoints::samples() const
{
	return impl_->samples.load();
}
uint64_t PerfTracepoints::lost() const
{
	return impl_->lost.load();
}
uint64_t PerfTracepoints::lost_records() const
{
	return impl_->lost_records.load();
}

} // namespace ptwalk

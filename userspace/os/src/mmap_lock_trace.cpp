// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/mmap_lock_trace.hpp"

#include <algorithm>

namespace ptwalk {

void LockPairer::feed(const LockEvent &e)
{
	State &st = states_[Key{e.tid, e.mm}];
	st.tgid = e.tgid;
	switch (e.type) {
	case LockEventType::StartLocking:
		if (st.phase != Phase::Idle)
			unpaired_++; // lost acquire_returned or released
		st.phase = Phase::Waiting;
		st.write = e.write;
		st.since = e.time_ns;
		break;
	case LockEventType::AcquireReturned:
		if (st.phase == Phase::Waiting) {
			LockSpan w{st.since, e.time_ns, e.mm, e.tgid, e.tid, e.write, e.success};
			sink_.wait(w);
		} else if (st.phase == Phase::Holding && st.write && !e.write) {
			// mmap_write_downgrade(): the write hold ends, a read hold starts
			LockSpan h{st.since, e.time_ns, e.mm, e.tgid, e.tid, true, true};
			sink_.hold(h);
		} else {
			unpaired_++; // lost start_locking (or released)
		}
		if (e.success) {
			st.phase = Phase::Holding;
			st.write = e.write;
			st.since = e.time_ns;
			LockSpan h{e.time_ns, e.time_ns, e.mm, e.tgid, e.tid, e.write, true};
			sink_.hold_begin(h);
		} else {
			st.phase = Phase::Idle;
		}
		break;
	case LockEventType::Released:
		if (st.phase == Phase::Holding) {
			LockSpan h{st.since, e.time_ns, e.mm, e.tgid, e.tid, st.write, true};
			sink_.hold(h);
		} else {
			unpaired_++;
		}
		st.phase = Phase::Idle;
		break;
	}
}

bool SchedSwitchDecoder::init(const TraceEventFormat &f, std::string *err)
{
	const TraceField *ty = f.find("common_type");
	const TraceField *pr = f.find("prev_pid");
	const TraceField *nx = f.find("next_pid");
	if (!ty || !pr || !nx || pr->data_loc || nx->data_loc || pr->size > 8 || nx->size > 8) {
		if (err)
			*err = f.name +
			       ": format lacks usable common_type/prev_pid/next_pid fields";
		return false;
	}
	id_ = f.id;
	type_ = *ty;
	prev_ = *pr;
	next_ = *nx;
	const TraceField *st = f.find("prev_state");
	has_state_ = st && !st->data_loc && st->size <= 8;
	if (has_state_)
		state_ = *st;
	return true;
}

bool SchedSwitchDecoder::decode(const PerfSample &s, SchedSwitch &out) const
{
	uint64_t type = 0, prev = 0, next = 0, state = 1;
	if (!read_field_u64(type_, s.raw, type) || type != id_ ||
	    !read_field_u64(prev_, s.raw, prev) || !read_field_u64(next_, s.raw, next))
		return false;
	if (has_state_ && !read_field_u64(state_, s.raw, state))
		return false;
	// TASK_REPORT_MAX (0x100): preempted; 0: TASK_RUNNING; below 0x100 a
	// sleeping state's bit (see the header)
	constexpr uint64_t kTaskReportMax = 0x100;
	out.time_ns = s.time_ns;
	out.prev_tid = pid_t(uint32_t(prev));
	out.next_tid = pid_t(uint32_t(next));
	out.prev_runnable = (state & (kTaskReportMax - 1)) == 0;
	return true;
}

bool SchedWakeupDecoder::init(const TraceEventFormat &f, std::string *err)
{
	const TraceField *ty = f.find("common_type");
	const TraceField *pid = f.find("pid");
	if (!ty || !pid || pid->data_loc || pid->size > 8) {
		if (err)
			*err = f.name + ": format lacks usable common_type/pid fields";
		return false;
	}
	id_ = f.id;
	type_ = *ty;
	pid_ = *pid;
	return true;
}

bool SchedWakeupDecoder::decode(const PerfSample &s, SchedWakeup &out) const
{
	uint64_t type = 0, pid = 0;
	if (!read_field_u64(type_, s.raw, type) || type != id_ || !read_field_u64(pid_, s.raw, pid))
		return false;
	out.time_ns = s.time_ns;
	out.tid = pid_t(uint32_t(pid));
	return true;
}

bool MmapLockDecoder::init(const Tracefs &tfs, std::string *err)
{
	static const char *names[3] = {"mmap_lock_start_locking", "mmap_lock_acquire_returned",
				       "mmap_lock_released"};
	std::optional<TraceEventFormat> f[3];
	for (int i = 0; i < 3; i++) {
		f[i] = tfs.event_format("mmap_lock", names[i], err);
		if (!f[i]) {
			if (err)
				*err += " (tracepoint mmap_lock:" + std::string(names[i]) +
					" missing? needs Linux >= 5.11)";
			return false;
		}
	}
	if (!init(*f[0], *f[1], *f[2], err))
		return false;
	return true;
}

bool MmapLockDecoder::init(const TraceEventFormat &start, const TraceEventFormat &acq,
			   const TraceEventFormat &rel, std::string *err)
{
	const TraceEventFormat *f[3] = {&start, &acq, &rel};
	memcg_ = "none";
	for (int i = 0; i < 3; i++) {
		Ev &ev = ev_[i];
		ev.id = f[i]->id;
		const TraceField *ty = f[i]->find("common_type");
		const TraceField *mm = f[i]->find("mm");
		const TraceField *wr = f[i]->find("write");
		if (!ty || !mm || !wr || mm->data_loc || wr->data_loc ||
		    (mm->size != 4 && mm->size != 8) || wr->size > 8) {
			if (err)
				*err = f[i]->name +
				       ": format lacks usable common_type/mm/write fields";
			return false;
		}
		ev.type = *ty;
		ev.mm = *mm;
		ev.write = *wr;
		if (i == 1) {
			const TraceField *su = f[i]->find("success");
			if (su && !su->data_loc && su->size <= 8) {
				ev.success = *su;
				ev.has_success = true;
			}
		}
		if (f[i]->find("memcg_id"))
			memcg_ = "memcg_id";
		else if (f[i]->find("memcg_path"))
			memcg_ = "memcg_path";
	}
	return true;
}

std::vector<uint32_t> MmapLockDecoder::ids() const
{
	return {ev_[0].id, ev_[1].id, ev_[2].id};
}

bool MmapLockDecoder::decode(const PerfSample &s, LockEvent &out) const
{
	uint64_t type = 0;
	// common_type sits at the same place in every event
	if (!read_field_u64(ev_[0].type, s.raw, type))
		return false;
	int i = -1;
	for (int k = 0; k < 3; k++)
		if (type == ev_[k].id)
			i = k;
	if (i < 0)
		return false;
	const Ev &ev = ev_[i];
	uint64_t mm = 0, wr = 0, su = 1;
	if (!read_field_u64(ev.mm, s.raw, mm) || !read_field_u64(ev.write, s.raw, wr))
		return false;
	if (ev.has_success && !read_field_u64(ev.success, s.raw, su))
		return false;
	out.time_ns = s.time_ns;
	out.mm = mm;
	out.tgid = s.pid;
	out.tid = s.tid;
	out.type = LockEventType(i);
	out.write = wr != 0;
	out.success = su != 0;
	return true;
}

bool MmapLockTrace::start(const Options &o, Consumer consumer, std::string *err)
{
	if (running_) {
		if (err)
			*err = "already running";
		return false;
	}
	Tracefs tfs;
	if (!tfs.open(err))
		return false;
	mounted_by_us_ = tfs.mounted_by_us();
	if (!decoder_.init(tfs, err))
		return false;

	PerfTracepointConfig cfg;
	cfg.tracepoint_ids = decoder_.ids();
	cfg.ring_bytes_per_cpu = o.ring_bytes_per_cpu;
	cfg.filter = o.filter;
	cfg.track_tasks = bool(o.on_comm) || bool(o.on_fork);
	opt_ = o;
	sched_on_ = false;
	sched_why_.clear();
	wakeup_on_ = false;
	wakeup_why_.clear();
	if (o.on_sched) {
		std::string serr;
		auto f = tfs.event_format("sched", "sched_switch", &serr);
		if (f && sched_decoder_.init(*f, &serr)) {
			sched_on_ = true;
		} else {
			sched_why_ = "sched:sched_switch: " + serr;
		}
	}
	if (sched_on_ && o.on_wakeup) {
		std::string serr;
		auto f = tfs.event_format("sched", "sched_wakeup", &serr);
		if (f && wakeup_decoder_.init(*f, &serr))
			wakeup_on_ = true;
		else
			wakeup_why_ = "sched:sched_wakeup: " + serr;
	} else if (o.on_wakeup) {
		wakeup_why_ = "needs sched:sched_switch (" + sched_why_ + ")";
	}
	tfs.release(); // the perf events keep their tracepoints

	if (wakeup_on_) {
		PerfTracepointConfig with = cfg;
		with.tracepoint_ids.push_back(sched_decoder_.id());
		with.tracepoint_ids.push_back(wakeup_decoder_.id());
		with.filters = {o.filter, o.filter, o.filter, o.sched_filter, o.wakeup_filter};
		std::string serr;
		if (!perf_.open(with, &serr)) {
			wakeup_on_ = false;
			wakeup_why_ = "sched:sched_wakeup: " + serr;
		}
	}
	if (sched_on_ && !wakeup_on_) {
		PerfTracepointConfig with = cfg;
		with.tracepoint_ids.push_back(sched_decoder_.id());
		with.filters = {o.filter, o.filter, o.filter, o.sched_filter};
		std::string serr;
		if (!perf_.open(with, &serr)) {
			sched_on_ = false;
			sched_why_ = "sched:sched_switch: " + serr;
		}
	}
	if (!sched_on_ && !perf_.open(cfg, err))
		return false;
	reorder_ = BasicEventReorder<TraceEvent>(o.reorder_margin_ns);
	consumer_ = std::move(consumer);
	if (!perf_.start(*this, err))
		return false;
	running_ = true;
	return true;
}

void MmapLockTrace::stop()
{
	if (!running_)
		return;
	perf_.stop();
	running_ = false;
}

void MmapLockTrace::sample(const PerfSample &s)
{
	TraceEvent t;
	if (decoder_.decode(s, t.lock)) {
		events_.fetch_add(1, std::memory_order_relaxed);
		t.time_ns = t.lock.time_ns;
		reorder_.push(t);
	} else if (sched_on_ && sched_decoder_.decode(s, t.sw)) {
		t.kind = TraceEvent::Kind::Switch;
		t.time_ns = t.sw.time_ns;
		reorder_.push(t);
	} else if (wakeup_on_ && wakeup_decoder_.decode(s, t.wk)) {
		t.kind = TraceEvent::Kind::Wakeup;
		t.time_ns = t.wk.time_ns;
		reorder_.push(t);
	} else {
		undecoded_.fetch_add(1, std::memory_order_relaxed);
	}
}

void MmapLockTrace::round_end(uint64_t drained_at_ns, bool final)
{
	reorder_.flush(drained_at_ns, final, [this](const TraceEvent &t) {
		switch (t.kind) {
		case TraceEvent::Kind::Lock:
			consumer_(t.lock);
			break;
		case TraceEvent::Kind::Switch:
			if (opt_.on_sched)
				opt_.on_sched(t.sw);
			break;
		case TraceEvent::Kind::Wakeup:
			if (opt_.on_wakeup)
				opt_.on_wakeup(t.wk);
			break;
		}
	});
}

void MmapLockTrace::task_comm(pid_t pid, pid_t tid, std::string_view comm, uint64_t)
{
	if (opt_.on_comm)
		opt_.on_comm(pid, tid, comm);
}

void MmapLockTrace::task_fork(pid_t pid, pid_t ppid, pid_t tid, pid_t ptid, uint64_t)
{
	if (opt_.on_fork)
		opt_.on_fork(pid, ppid, tid, ptid);
}

size_t MmIndex::index(uint64_t mm)
{
	auto [it, fresh] = idx_.try_emplace(mm, idx_.size());
	(void)fresh;
	return it->second;
}

} // namespace ptwalk

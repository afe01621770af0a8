// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/module_view.hpp"
#include "ptwalk/stall_attribution.hpp"

#include <algorithm>
#include <atomic>
#include <thread>
#include <tuple>
#include <cerrno>
#include <cstring>
#include <sys/mount.h>
#include <unistd.h>

#include "ptwalk/module_abi.hpp"
#include "ptwalk/procfs.hpp"
#include "ptwalk/walk_kinds.hpp"

namespace ptwalk {

namespace {

constexpr const char *kDebugfs = "/sys/kernel/debug";
constexpr const char *kDir = kModuleDir;

uint64_t u64(const Record &r, const char *k)
{
	auto it = r.find(k);
	return it == r.end() ? 0 : strtoull(it->second.c_str(), nullptr, 10);
}
int32_t i32(const Record &r, const char *k)
{
	auto it = r.find(k);
	return it == r.end() ? 0 : int32_t(strtol(it->second.c_str(), nullptr, 10));
}
std::string s(const Record &r, const char *k)
{
	auto it = r.find(k);
	return it == r.end() ? "" : it->second;
}
// a record's kind: one of the module's own (PTW_KINDS), each a walk kind
std::optional<WalkKind> module_record_kind(const Record &r, const char *key)
{
	auto it = r.find(key);
	if (it == r.end())
		return std::nullopt;
	const auto k = parse_walk_kind(it->second);
	return k && module_kind(*k) == k ? k : std::nullopt;
}
// a lock mode by the contract's names (PTW_LOCK_MODES); none if absent or unknown
LockMode mode(const Record &r, const char *key)
{
	auto it = r.find(key);
	return it == r.end() ? LockMode::none
			     : module_lock_mode(it->second).value_or(LockMode::none);
}

} // namespace

std::string unescape_comm(std::string_view v)
{
	auto hex = [](char c) -> int {
		if (c >= '0' && c <= '9')
			return c - '0';
		if (c >= 'a' && c <= 'f')
			return c - 'a' + 10;
		if (c >= 'A' && c <= 'F')
			return c - 'A' + 10;
		return -1;
	};
	std::string out;
	for (size_t i = 0; i < v.size(); i++) {
		if (v[i] == '%' && i + 2 < v.size()) {
			const int hi = hex(v[i + 1]), lo = hex(v[i + 2]);
			if (hi >= 0 && lo >= 0) {
				if (const char c = char(hi * 16 + lo))
					out += c;
				i += 2;
				continue;
			}
		}
		out += v[i];
	}
	return out;
}

std::vector<Record> parse_records(std::string_view text)
{
	std::vector<Record> out;
	for_each_line(text, [&](std::string_view line) {
		Record r;
		size_t p = 0;
		while (p < line.size()) {
			while (p < line.size() && line[p] == ' ')
				p++;
			size_t e = line.find(' ', p);
			if (e == std::string_view::npos)
				e = line.size();
			std::string_view tok = line.substr(p, e - p);
			p = e;
			size_t eq = tok.find('=');
			if (eq == std::string_view::npos || eq == 0)
				continue;
			std::string key(tok.substr(0, eq));
			std::string_view val = tok.substr(eq + 1);
			r[key] = key.size() > 5 && key.compare(key.size() - 5, 5, "_comm") == 0
					 ? unescape_comm(val)
					 : std::string(val);
		}
		if (!r.empty())
			out.push_back(std::move(r));
	});
	return out;
}

// keys by the contract's names: a key the module does not print fails to compile
#define W(key) PTW_WALK_KEY(key)
#define S(key) PTW_STALL_KEY(key)

std::vector<ModuleWalk> parse_module_walks(std::string_view text)
{
	std::vector<ModuleWalk> out;
	for (const Record &r : parse_records(text)) {
		const auto kind = module_record_kind(r, W(kind));
		if (!r.count(W(seq)) || !kind)
			continue;
		ModuleWalk w;
		w.seq = u64(r, W(seq));
		w.kind = *kind;
		w.walker_pid = i32(r, W(walker_pid));
		w.walker_comm = s(r, W(walker_comm));
		w.target_tgid = i32(r, W(target_tgid));
		w.start_ns = u64(r, W(start_ns));
		w.end_ns = u64(r, W(end_ns));
		// call_ns since the walk-proper split; duration_ns before it
		w.call_ns = r.count(W(call_ns)) ? u64(r, W(call_ns)) : u64(r, "duration_ns");
		w.duration_ns = w.call_ns;
		w.walk_timed = u64(r, W(walk_timed)) != 0;
		w.walk_ns = u64(r, W(walk_ns));
		w.pte_revisits = u64(r, W(pte_revisits));
		w.tlb_ipis = u64(r, W(tlb_ipis));
		w.probe_missed = u64(r, W(probe_missed));
		w.lock_wait_ns = u64(r, W(lock_wait_ns));
		w.lock_holds = u64(r, W(lock_holds));
		w.pte_tables = u64(r, W(pte_tables));
		w.pte_tables_mmap_locked = u64(r, W(pte_tables_mmap_locked));
		w.pte_slots = u64(r, W(pte_slots));
		w.lock_hold_ns = u64(r, W(lock_hold_ns));
		w.lock_mode = mode(r, W(lock_mode));
		w.tlb_flushes = u64(r, W(tlb_flushes));
		w.calls = u64(r, W(calls));
		w.stalls = u64(r, W(stalls));
		w.vma_locks = u64(r, W(vma_locks));
		w.vma_hold_ns = u64(r, W(vma_hold_ns));
		w.vma_hold_max_ns = u64(r, W(vma_hold_max_ns));
		w.vma_fallbacks = u64(r, W(vma_fallbacks));
		out.push_back(std::move(w));
	}
	return out;
}

std::vector<ModuleStall> parse_module_stalls(std::string_view text)
{
	std::vector<ModuleStall> out;
	for (const Record &r : parse_records(text)) {
		const auto kind = module_record_kind(r, S(kind));
		if (!r.count(S(walk_seq)) || !kind)
			continue;
		ModuleStall st;
		st.walk_seq = u64(r, S(walk_seq));
		st.kind = *kind;
		st.waiter_pid = i32(r, S(waiter_pid));
		st.waiter_comm = s(r, S(waiter_comm));
		st.target_tgid = i32(r, S(target_tgid));
		st.start_ns = u64(r, S(start_ns));
		st.wait_ns = u64(r, S(wait_ns));
		st.mode = mode(r, S(mode));
		st.walker_pid = i32(r, S(walker_pid));
		st.walker_mode = mode(r, S(walker_mode));
		st.acquired = s(r, S(acquired)) != "0";
		// split_complete=0: a hold within the wait was not seen, no split
		if (r.count(S(walker_held_ns)) && r.count(S(others_held_ns)) &&
		    s(r, S(split_complete)) == "1") {
			const uint64_t wh = u64(r, S(walker_held_ns));
			const uint64_t oh = u64(r, S(others_held_ns));
			// the module clamps; a record that does not is not split
			if (wh <= st.wait_ns && oh <= st.wait_ns - wh) {
				st.walker_held_ns = wh;
				st.others_held_ns = oh;
				if (r.count(S(clock_spread_ns)))
					st.clock_spread_ns = u64(r, S(clock_spread_ns));
			}
		}
		// the chain is the writer's VMA wait's, not the holders': within
		// the wait without the split, within others_held with it
		if (r.count(S(vma_chain_ns))) {
			const uint64_t c = u64(r, S(vma_chain_ns));
			if (st.others_held_ns ? c <= *st.others_held_ns : c <= st.wait_ns)
				st.vma_chain_ns = c;
		}
		// without a split only (an absent key reads 0)
		st.at_release = u64(r, S(at_release)) && !st.walker_held_ns;
		const uint64_t late = st.walker_held_ns ? 0 : u64(r, S(late_hold_ns));
		if (late && late <= st.wait_ns)
			st.late_hold_ns = late;
		out.push_back(std::move(st));
	}
	return out;
}

#define V(key) PTW_VMA_WAIT_KEY(key)

std::vector<ModuleVmaWait> parse_module_vma_waits(std::string_view text)
{
	std::vector<ModuleVmaWait> out;
	for (const Record &r : parse_records(text)) {
		const auto kind = module_record_kind(r, V(kind));
		if (!r.count(V(walk_seq)) || !kind)
			continue;
		ModuleVmaWait v;
		v.walk_seq = u64(r, V(walk_seq));
		v.kind = *kind;
		v.writer_pid = i32(r, V(writer_pid));
		v.writer_comm = s(r, V(writer_comm));
		v.target_tgid = i32(r, V(target_tgid));
		v.start_ns = u64(r, V(start_ns));
		v.wait_ns = u64(r, V(wait_ns));
		v.walker_held_ns = u64(r, V(walker_held_ns));
		v.walker_pid = i32(r, V(walker_pid));
		v.behind_walk = s(r, V(behind_walk)) == "1";
		v.detach = s(r, V(detach)) == "1";
		// the module clamps; a record that does not is not one of its
		if (v.walker_held_ns > v.wait_ns || (!v.behind_walk && v.walker_held_ns))
			continue;
		out.push_back(std::move(v));
	}
	return out;
}

#undef W
#undef S
#undef V

std::vector<int> match_walks(const std::vector<WalkSpan> &spans, const std::vector<ModuleWalk> &mw,
			     uint64_t slack_ns)
{
	std::vector<int> out(spans.size(), -1);
	std::vector<bool> used(mw.size(), false);
	for (size_t i = 0; i < spans.size(); i++) {
		const auto mk = module_kind(spans[i].kind);
		if (!mk)
			continue;
		const uint64_t lo = spans[i].start_ns > slack_ns ? spans[i].start_ns - slack_ns : 0;
		const uint64_t hi = spans[i].end_ns + slack_ns;
		for (size_t j = 0; j < mw.size(); j++) {
			if (used[j] || mw[j].kind != *mk || mw[j].walker_pid != spans[i].walker_pid)
				continue;
			if (mw[j].start_ns >= lo && mw[j].end_ns <= hi) {
				out[i] = int(j);
				used[j] = true;
				break;
			}
		}
	}
	return out;
}

namespace {

// The walk record of each matched span into its view.
void fill_walk_view(WalkKernelView &v, const ModuleWalk &m)
{
	v.seen = v.has_module = v.has_lock = true;
	v.kernel_duration_ns = m.call_ns;
	v.kernel_walk_ns = m.walk_ns;
	v.walk_timed = m.walk_timed;
	v.pte_revisits = m.pte_revisits;
	v.tlb_ipis = m.tlb_ipis;
	v.probe_missed = m.probe_missed;
	v.lock_wait_ns = m.lock_wait_ns;
	v.lock_acquisitions = uint32_t(m.lock_holds);
	v.pte_tables = m.pte_tables;
	v.pte_tables_mmap_locked = m.pte_tables_mmap_locked;
	v.pte_slots = m.pte_slots;
	v.tlb_flushes = m.tlb_flushes;
	v.lock_hold_ns = m.lock_hold_ns;
	v.lock_mode = m.lock_mode;
}

// Another call of the same scanner walk: its figures added.
void join_walk_view(WalkKernelView &v, const ModuleWalk &m)
{
	v.kernel_duration_ns += m.call_ns;
	v.kernel_walk_ns += m.walk_ns;
	v.walk_timed = v.walk_timed && m.walk_timed;
	v.pte_revisits += m.pte_revisits;
	v.tlb_ipis += m.tlb_ipis;
	v.probe_missed += m.probe_missed;
	v.lock_wait_ns += m.lock_wait_ns;
	v.lock_acquisitions += uint32_t(m.lock_holds);
	v.pte_tables += m.pte_tables;
	v.pte_tables_mmap_locked += m.pte_tables_mmap_locked;
	v.pte_slots += m.pte_slots;
	v.tlb_flushes += m.tlb_flushes;
	v.lock_hold_ns += m.lock_hold_ns;
	auto has = [](LockMode x, LockMode y) { return x == y || x == LockMode::mixed; };
	v.lock_mode =
		lock_mode(has(v.lock_mode, LockMode::read) || has(m.lock_mode, LockMode::read),
			  has(v.lock_mode, LockMode::write) || has(m.lock_mode, LockMode::write));
}

// The stalls of matched walks, longest first: each into its walk's view,
// its waiter's waits (its victim's, else those of its comm) and the list.
StallsView module_stalls(const ModuleRecords &rec, std::map<uint64_t, size_t> &seq_to_span,
			 std::vector<WalkKernelView> &views)
{
	std::map<pid_t, Victim> victims;
	for (auto &t : rec.threads)
		victims[t.tid] = t.victim;
	std::map<std::string, ThreadWaits> waits; // by name
	std::vector<ModuleStall> st;
	for (auto &[key, x] : rec.stalls)
		if (seq_to_span.count(x.walk_seq))
			st.push_back(x);
	std::sort(st.begin(), st.end(), [](auto &a, auto &b) { return a.wait_ns > b.wait_ns; });
	StallsView sv;
	const AttributionStats keep;
	for (auto &x : st) {
		const size_t i = seq_to_span[x.walk_seq];
		views[i].stalls++;
		views[i].max_stall_ns = std::max(views[i].max_stall_ns, x.wait_ns);
		const auto v = victims.find(x.waiter_pid);
		const Waiter who = v != victims.end() ? Waiter{v->second, {}}
						      : Waiter{std::nullopt, x.waiter_comm};
		ThreadWaits &w = waits[waiter_name(who)];
		w.waiter = who;
		w.waits.record(x.wait_ns);
		w.attributed++;
		w.max_attributed_ns = std::max(w.max_attributed_ns, x.wait_ns);
		if (x.walker_held_ns) {
			const uint64_t wh = *x.walker_held_ns;
			views[i].max_stall_walker_held_ns =
				std::max(views[i].max_stall_walker_held_ns.value_or(0), wh);
			w.max_attributed_walker_held_ns =
				std::max(w.max_attributed_walker_held_ns.value_or(0), wh);
		}
		if (keep_stall(sv.list.size(), x.wait_ns, keep)) {
			KernelStall k{x.waiter_pid, who,         x.mode,    x.start_ns,
				      x.wait_ns,    uint64_t(i), x.acquired};
			if (x.walker_held_ns && x.others_held_ns) {
				k.walker_held_ns = x.walker_held_ns;
				k.others_held_ns = x.others_held_ns;
				k.free_ns = x.wait_ns - *x.walker_held_ns - *x.others_held_ns;
				k.clock_spread_ns = x.clock_spread_ns;
			}
			k.vma_chain_ns = x.vma_chain_ns;
			k.late_hold_ns = x.late_hold_ns;
			k.at_release = x.at_release ? std::optional(true) : std::nullopt;
			sv.list.push_back(std::move(k));
		}
	}
	sv.total = uint64_t(st.size());
	if (st.size() < keep.hard_cap)
		sv.complete_above_ns = keep.keep_above_ns;
	for (auto &[key, w] : waits)
		sv.threads.push_back(std::move(w));
	return sv;
}

// The hooks' records, their missed probes, and the counters.
void module_facts(const ModuleRecords &rec, ModuleKernelView &mv)
{
	for (auto &h : rec.hooks) {
		if (!h.count(PTW_HOOK_KEY(hook)))
			continue;
		mv.nmissed += u64(h, PTW_HOOK_KEY(nmissed)) + u64(h, PTW_HOOK_KEY(kp_nmissed));
		mv.hooks.push_back(h);
	}
	for (auto &c : parse_records(rec.counters_text)) {
		if (!c.count(PTW_COUNTER_KEY(counter)))
			continue;
		const std::string k =
			s(c, PTW_COUNTER_KEY(counter)) + "." + s(c, PTW_COUNTER_KEY(kind));
		const uint64_t n = u64(c, PTW_COUNTER_KEY(value));
		auto it = std::find_if(mv.counters.begin(), mv.counters.end(),
				       [&](const auto &e) { return e.first == k; });
		if (it != mv.counters.end())
			it->second = n; // a repeated name keeps its first place
		else
			mv.counters.emplace_back(k, n);
	}
}

} // namespace

std::vector<WalkKernelView> module_kernel_view(const std::vector<WalkSpan> &spans,
					       const ModuleRecords &rec, KernelView &kv)
{
	std::vector<WalkKernelView> views(spans.size());
	kv = KernelView{};
	kv.source = "ptwalk.ko debugfs (walks, stalls, vma_waits, counters, hooks)";
	ModuleKernelView &mv = kv.module.emplace();
	std::vector<ModuleWalk> mine;
	// ptwalk's own smaps_rollup read of the stopped workload at the
	// end (measure_walk_size): nothing contends it, so it walks every
	// VMA, the module's reference for a complete walk
	const ModuleWalk *ref = nullptr;
	for (auto &[seq, m] : rec.walks) {
		if (m.walker_pid == rec.walker)
			mine.push_back(m);
		if (m.walker_pid == rec.self && m.target_tgid == rec.target &&
		    m.kind == WalkKind::smaps_rollup)
			ref = &m;
	}
	if (ref)
		mv.reference_walk = {ref->pte_slots, ref->lock_holds};
	auto match = match_walks(spans, mine, 1000000);
	std::map<uint64_t, size_t> seq_to_span;
	for (size_t i = 0; i < spans.size(); i++) {
		if (module_kind(spans[i].kind))
			mv.walks_hookable++;
		if (match[i] < 0)
			continue;
		const ModuleWalk &m = mine[size_t(match[i])];
		fill_walk_view(views[i], m);
		seq_to_span[m.seq] = i;
		mv.walks_matched++;
	}
	// A scanner walk made of several calls (PAGEMAP_SCAN: an ioctl per
	// output buffer, each a walk of the module's) is all of them: the
	// records of its walker and kind within it join the matched one.
	std::vector<bool> used(mine.size(), false);
	for (int m : match)
		if (m >= 0)
			used[size_t(m)] = true;
	uint64_t joined = 0;
	for (size_t j = 0; j < mine.size(); j++)
		for (size_t i = 0; i < spans.size() && !used[j]; i++) {
			const ModuleWalk &m = mine[j];
			if (match[i] < 0 || mine[size_t(match[i])].kind != m.kind ||
			    spans[i].walker_pid != m.walker_pid ||
			    m.start_ns + 1000000 < spans[i].start_ns ||
			    m.end_ns > spans[i].end_ns + 1000000)
				continue;
			join_walk_view(views[i], m);
			seq_to_span[m.seq] = i;
			used[j] = true;
			joined++;
		}
	mv.module_walks_unmatched = uint64_t(mine.size() - mv.walks_matched - joined);
	kv.stalls = module_stalls(rec, seq_to_span, views);
	module_facts(rec, mv);
	module_vma_view(rec, seq_to_span, views, kv);
	return views;
}

bool module_loaded()
{
	return access("/sys/module/ptwalk", F_OK) == 0;
}

namespace {

class ModuleBackend : public Backend {
public:
	~ModuleBackend() override
	{
		quit_ = true;
		if (poller_.joinable())
			poller_.join();
		unmount();
	}
	BackendKind kind() const override { return BackendKind::module; }
	std::string detail() const override { return detail_; }

	// Walks are matched by walker and time, so the target is not needed.
	bool start(pid_t target, const std::vector<WatchedThread> &threads, pid_t walker) override
	{
		rec_.walker = walker;
		rec_.target = target;
		rec_.self = getpid();
		rec_.threads = threads;
		if (!module_loaded()) {
			detail_ = "ptwalk.ko is not loaded (/sys/module/ptwalk missing)";
			return false;
		}
		if (access(kDir, F_OK) != 0) {
			if (mount("debugfs", kDebugfs, "debugfs", 0, nullptr) != 0) {
				detail_ = std::string("mounting debugfs on ") + kDebugfs + ": " +
					  strerror(errno);
				return false;
			}
			mounted_ = true;
			if (access(kDir, F_OK) != 0) {
				detail_ =
					std::string(kDir) + " missing although ptwalk.ko is loaded";
				unmount();
				return false;
			}
		}
		std::string err;
		auto hooks = read_file(std::string(kDir) + "/hooks", &err);
		if (!hooks) {
			detail_ = err;
			unmount();
			return false;
		}
		rec_.hooks = parse_records(*hooks);
		unsigned attached = 0, total = 0;
		for (auto &h : rec_.hooks)
			if (h.count(PTW_HOOK_KEY(hook))) {
				total++;
				attached += s(h, PTW_HOOK_KEY(status)) == "attached";
			}
		// walks before this run are not ours: remember where the ring is
		if (auto w = read_file(std::string(kDir) + "/walks", nullptr))
			for (auto &m : parse_module_walks(*w))
				seq0_ = std::max(seq0_, m.seq);
		detail_ = "ptwalk.ko debugfs records (" + std::to_string(attached) + "/" +
			  std::to_string(total) + " hooks attached" +
			  (mounted_ ? ", debugfs mounted and unmounted by ptwalk" : "") + ")";
		// the rings hold the last 4096 records: collect as the run goes
		poller_ = std::thread([this] {
			while (!quit_.load()) {
				collect();
				for (int i = 0; i < 25 && !quit_.load(); i++)
					usleep(20000);
			}
		});
		return true;
	}

	void stop() override
	{
		if (stopped_)
			return;
		stopped_ = true;
		quit_ = true;
		if (poller_.joinable())
			poller_.join();
		collect();
		const std::string d = kDir;
		rec_.counters_text = read_file(d + "/counters", nullptr).value_or("");
		if (auto h = read_file(d + "/hooks", nullptr))
			rec_.hooks = parse_records(*h);
		unmount();
	}

	std::vector<WalkKernelView> annotate(const std::vector<WalkSpan> &spans,
					     KernelView &kv) override
	{
		return module_kernel_view(spans, rec_, kv);
	}

private:
	// Merges the current rings into the records (deduplicated).
	void collect()
	{
		const std::string d = kDir;
		if (auto w = read_file(d + "/walks", nullptr))
			for (auto &m : parse_module_walks(*w))
				if (m.seq > seq0_)
					rec_.walks.emplace(m.seq, m);
		if (auto s2 = read_file(d + "/stalls", nullptr))
			for (auto &x : parse_module_stalls(*s2))
				if (x.walk_seq > seq0_)
					rec_.stalls.emplace(std::make_tuple(x.walk_seq,
									    x.waiter_pid,
									    x.start_ns),
							    x);
		if (auto v = read_file(d + "/vma_waits", nullptr))
			for (auto &x : parse_module_vma_waits(*v))
				if (x.walk_seq > seq0_)
					rec_.vma_waits.emplace(std::make_tuple(x.walk_seq,
									       x.writer_pid,
									       x.start_ns),
							       x);
	}

	void unmount()
	{
		if (mounted_ && umount(kDebugfs) == 0)
			mounted_ = false;
	}

	std::string detail_ = "ptwalk.ko";
	ModuleRecords rec_;
	uint64_t seq0_ = 0;
	bool mounted_ = false, stopped_ = false;
	std::thread poller_;
	std::atomic<bool> quit_{false};
};

} // namespace

std::unique_ptr<Backend> make_module_backend()
{
	return std::make_unique<ModuleBackend>();
}

} // namespace ptwalk

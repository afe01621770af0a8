/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The contract between ptwalk.ko and everything that reads it, in one
 * place: the module prints its debugfs records from these lists, the
 * userspace library reads them by these names (ptwalk/module_abi.hpp), the
 * selftests include it, and the Python tools parse this file
 * (scripts/ptwalk_abi.py; scripts/tests/test_abi.py checks every reader
 * against it).  Plain macros only: it needs no kernel or libc header.
 */
#ifndef PTWALK_ABI_H
#define PTWALK_ABI_H

/* the module's directory under debugfs */
#define PTW_DEBUGFS_DIR "ptwalk"

/*
 * Walk kinds: enum value, and the name in debugfs records, trace events
 * and the kinds= module parameter.
 */
#define PTW_KINDS(X)					\
	X(PTW_CLEAR_REFS, "clear_refs")			\
	X(PTW_SMAPS, "smaps")				\
	X(PTW_SMAPS_ROLLUP, "smaps_rollup")		\
	X(PTW_PAGEMAP, "pagemap")			\
	X(PTW_PAGEMAP_SCAN, "pagemap_scan")

/* lock_mode: bit 0 the walker held mmap_lock for read, bit 1 for write */
#define PTW_LOCK_MODES(X)				\
	X(0, "none") X(1, "read") X(2, "write") X(3, "mixed")

/*
 * Histograms (debugfs "hist"): slot 0 counts zeros, slot i in 1..62 counts
 * values in [2^(i-1), 2^i - 1] ns, slot 63 everything from 2^62 up.
 */
#define PTW_HIST_SLOTS 64

/*
 * Records: one line each, "key=value" pairs separated by one space, keys
 * in the order below, values in the printf conversion given.  Names
 * (*_comm) are escaped: bytes outside [!-~], '=' and '%' as %xx, an empty
 * name as %00.
 */

/* debugfs "walks": one finished walk (one pass) */
#define PTW_WALK_KEYS(X)							\
	X(seq, "%llu") X(kind, "%s") X(walker_pid, "%d")			\
	X(walker_comm, "%s") X(target_tgid, "%d") X(start_ns, "%llu")		\
	X(end_ns, "%llu") X(call_ns, "%llu") X(walk_ns, "%llu")		\
	X(walk_timed, "%u") X(pte_tables, "%llu") X(pte_slots, "%llu")		\
	X(pte_revisits, "%llu") X(lock_hold_ns, "%llu")			\
	X(lock_holds, "%llu") X(lock_mode, "%s") X(tlb_flushes, "%llu")	\
	X(tlb_ipis, "%llu") X(calls, "%llu") X(stalls, "%llu")			\
	X(lock_wait_ns, "%llu") X(probe_missed, "%llu")			\
	X(vma_locks, "%llu") X(vma_hold_ns, "%llu")				\
	X(vma_hold_max_ns, "%llu") X(vma_fallbacks, "%llu")		\
	X(pte_tables_mmap_locked, "%llu")

/* debugfs "stalls": one wait of another task for a walked mm's lock */
#define PTW_STALL_KEYS(X)							\
	X(walk_seq, "%llu") X(kind, "%s") X(waiter_pid, "%d")			\
	X(waiter_comm, "%s") X(target_tgid, "%d") X(start_ns, "%llu")		\
	X(wait_ns, "%llu") X(mode, "%s") X(walker_pid, "%d")			\
	X(walker_mode, "%s") X(acquired, "%u") X(walker_held_ns, "%llu")	\
	X(others_held_ns, "%llu") X(split_complete, "%u")			\
	X(clock_spread_ns, "%llu") X(vma_chain_ns, "%llu")			\
	X(late_hold_ns, "%llu") X(at_release, "%u")

/*
 * debugfs "vma_waits": one wait of a writer (holding the walked mm's
 * mmap_lock for write) for the read locks of one of its VMAs to go, on
 * kernels whose VMA locks are reference counts: behind_walk 1 when a walk
 * held that VMA during it, walker_held_ns the part until the walk's hold
 * ended; detach 1 for the wait of a VMA's removal
 */
#define PTW_VMA_WAIT_KEYS(X)						\
	X(walk_seq, "%llu") X(kind, "%s") X(writer_pid, "%d")			\
	X(writer_comm, "%s") X(target_tgid, "%d") X(start_ns, "%llu")		\
	X(wait_ns, "%llu") X(walker_held_ns, "%llu") X(walker_pid, "%d")	\
	X(behind_walk, "%u") X(detach, "%u")

/* debugfs "hist": one non-empty slot */
#define PTW_HIST_KEYS(X)							\
	X(hist, "%s") X(kind, "%s") X(slot, "%u") X(lo, "%llu")		\
	X(hi, "%llu") X(count, "%llu")

/* debugfs "counters": one counter, per kind or for kind=all */
#define PTW_COUNTER_KEYS(X)						\
	X(counter, "%s") X(kind, "%s") X(value, "%lld")

/* the counters: per kind, then for all kinds */
#define PTW_COUNTERS_PER_KIND(X) X(walks) X(pte_slots) X(stalls) X(vma_waits)
#define PTW_COUNTERS_ALL(X)						\
	X(walks_dropped) X(waits_dropped) X(walks_open_unread)		\
	X(holders_dropped) X(arg_faults) X(walks_missed) X(kp_nmissed)	\
	X(krp_nmissed) X(inject_delay_ns) X(failed_attempts)		\
	X(vma_waits_dropped) X(waits_unblocked) X(tp_stamps_lost)	\
	X(waits_marked_late) X(waits_split_late) X(waits_marked_retired)

/* debugfs "hooks": one hook (kinds: a comma list of kind names, or none) */
#define PTW_HOOK_KEYS(X)							\
	X(hook, "%s") X(type, "%s") X(kinds, "%s") X(status, "%s")		\
	X(err, "%d") X(nmissed, "%d") X(kp_nmissed, "%lu")			\
	X(maxactive, "%d") X(required, "%u")

/* debugfs "hooks", after the hooks: one line per kind */
#define PTW_KIND_STATE_KEYS(X)						\
	X(kind, "%s") X(requested, "%u") X(active, "%u")

/* hook status values */
#define PTW_HOOK_STATUSES(X) X("attached") X("missing") X("disabled")

/*
 * For C readers: PTW_WALK_KEY(pte_slots) is "pte_slots", and a key missing
 * from the list does not compile (likewise PTW_STALL_KEY, PTW_HIST_KEY,
 * PTW_COUNTER_KEY, PTW_HOOK_KEY).
 */
#define PTW_KEY_ENUM_WALK(key, conv) PTW_WALK_KEY_##key,
#define PTW_KEY_ENUM_STALL(key, conv) PTW_STALL_KEY_##key,
#define PTW_KEY_ENUM_VMA_WAIT(key, conv) PTW_VMA_WAIT_KEY_##key,
#define PTW_KEY_ENUM_HIST(key, conv) PTW_HIST_KEY_##key,
#define PTW_KEY_ENUM_COUNTER(key, conv) PTW_COUNTER_KEY_##key,
#define PTW_KEY_ENUM_HOOK(key, conv) PTW_HOOK_KEY_##key,
enum ptw_walk_key { PTW_WALK_KEYS(PTW_KEY_ENUM_WALK) PTW_NR_WALK_KEYS };
enum ptw_stall_key { PTW_STALL_KEYS(PTW_KEY_ENUM_STALL) PTW_NR_STALL_KEYS };
enum ptw_vma_wait_key { PTW_VMA_WAIT_KEYS(PTW_KEY_ENUM_VMA_WAIT) PTW_NR_VMA_WAIT_KEYS };
enum ptw_hist_key { PTW_HIST_KEYS(PTW_KEY_ENUM_HIST) PTW_NR_HIST_KEYS };
enum ptw_counter_key { PTW_COUNTER_KEYS(PTW_KEY_ENUM_COUNTER) PTW_NR_COUNTER_KEYS };
enum ptw_hook_key { PTW_HOOK_KEYS(PTW_KEY_ENUM_HOOK) PTW_NR_HOOK_KEYS };
#undef PTW_KEY_ENUM_WALK
#undef PTW_KEY_ENUM_STALL
#undef PTW_KEY_ENUM_VMA_WAIT
#undef PTW_KEY_ENUM_HIST
#undef PTW_KEY_ENUM_COUNTER
#undef PTW_KEY_ENUM_HOOK
#define PTW_WALK_KEY(key) ((void)PTW_WALK_KEY_##key, #key)
#define PTW_STALL_KEY(key) ((void)PTW_STALL_KEY_##key, #key)
#define PTW_VMA_WAIT_KEY(key) ((void)PTW_VMA_WAIT_KEY_##key, #key)
#define PTW_HIST_KEY(key) ((void)PTW_HIST_KEY_##key, #key)
#define PTW_COUNTER_KEY(key) ((void)PTW_COUNTER_KEY_##key, #key)
#define PTW_HOOK_KEY(key) ((void)PTW_HOOK_KEY_##key, #key)

#endif /* PTWALK_ABI_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk walks: per-walk bookkeeping, read passes, PTE counting, records,
 * rings and histograms.
 *
 * Every function here runs in probe context (kprobe handler or tracepoint
 * probe, preemption disabled), also on PREEMPT_RT, so only atomics and raw
 * spinlocks are used and nothing is allocated.  Kernel pointers (file, task,
 * mm) are opaque unsigned long keys: compared, never dereferenced after the
 * call that supplied them, never printed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/fs.h>
#include <linux/dcache.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/proc_fs.h>
#include <linux/sched.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/mm_types.h>

#include "ptwalk.h"
#include "ptwalk_trace.h"

struct ptw_active ptw_act[PTW_MAX_ACTIVE];
static atomic_t ptw_act_hw = ATOMIC_INIT(0);	/* slots ever used */
atomic_t ptw_nr_live = ATOMIC_INIT(0);

static atomic64_t ptw_seq = ATOMIC64_INIT(0);

/* ---- target identification ------------------------------------------ */

/*
 * The walked process is named by the /proc directory the file lives in:
 * /proc/PID/<file> or /proc/PID/task/TID/<file>.  proc pid directories are
 * never renamed, and short names live inline in the dentry, so reading the
 * parent's name under RCU is safe.  The number is resolved in the pid
 * namespace of that proc mount; the global tgid is reported.
 */
static void ptw_target_from_file(const struct file *file, pid_t *tgid,
				 unsigned long *mm_key)
{
	struct dentry *parent;
	struct task_struct *task;
	const unsigned char *name;
	struct pid *pid;
	unsigned int i;
	int nr = 0;

	*tgid = 0;
	*mm_key = 0;
	if (!file)
		return;

	rcu_read_lock();
	parent = READ_ONCE(file->f_path.dentry->d_parent);
	name = READ_ONCE(parent->d_name.name);
	for (i = 0; i < 10 && name[i] >= '0' && name[i] <= '9'; i++)
		nr = nr * 10 + (name[i] - '0');
	if (i == 0 || i == 10 || name[i] != '\0')
		goto out;
	pid = find_pid_ns(nr, proc_pid_ns(file_inode(file)->i_sb));
	task = pid ? pid_task(pid, PIDTYPE_PID) : NULL;
	if (task) {
		*tgid = task_tgid_nr(task);
		*mm_key = (unsigned long)READ_ONCE(task->mm);
	}
out:
	rcu_read_unlock();
}
NOKPROBE_SYMBOL(ptw_target_from_file);

/* ---- active walk slots ---------------------------------------------- */

unsigned int ptw_act_limit(void)
{
	return min_t(unsigned int, atomic_read(&ptw_act_hw), PTW_MAX_ACTIVE);
}
NOKPROBE_SYMBOL(ptw_act_limit);

/* per-pass fields; the lock state (a hold in progress) carries over */
static void ptw_pass_reset(struct ptw_active *a)
{
	a->started = false;
	a->lock_mode = 0;
	a->lock_hold_ns = 0;
	a->lock_holds = a->lock_t0 ? 1 : 0;	/* a hold in progress */
	a->lock_wait_ns = 0;
	a->seq = 0;
	a->start_ns = 0;
	a->end_ns = 0;
	a->call_ns = 0;
	a->walk_ns = 0;
	a->walk_t0 = 0;
	a->walk_depth = 0;
	a->walk_timed = false;
	a->calls = 0;
	a->covered_end = 0;
	a->pte_tables = 0;
	a->pte_slots = 0;
	a->pte_revisits = 0;
	a->next_pos = 0;
	atomic64_set(&a->tlb_flushes, 0);
	atomic64_set(&a->tlb_ipis, 0);
	atomic64_set(&a->stalls, 0);
	a->missed0 = 0;
	a->walker_pid = 0;
	a->walker_comm[0] = '\0';
}
NOKPROBE_SYMBOL(ptw_pass_reset);

static int ptw_claim(enum ptw_kind kind, unsigned long key,
		     const struct file *file, bool call_scoped)
{
	struct ptw_active *a;
	int i, hw;

	for (i = 0; i < PTW_MAX_ACTIVE; i++) {
		a = &ptw_act[i];
		if (atomic_cmpxchg(&a->state, PTW_S_FREE, PTW_S_BUSY) ==
		    PTW_S_FREE)
			goto found;
	}
	atomic64_inc(&ptw_stats.walks_dropped);
	return -1;

found:
	a->key = key;
	a->task_key = (unsigned long)current;
	atomic_set(&a->in_call, 0);
	a->call_scoped = call_scoped;
	a->hold_used = false;
	a->kind = kind;
	a->lock_t0 = 0;
	a->lock_write = false;
	a->wait_t0 = 0;
	ptw_pass_reset(a);
	ptw_target_from_file(file, &a->target_tgid, &a->mm_key);

	hw = atomic_read(&ptw_act_hw);
	while (hw < i + 1) {
		int old = atomic_cmpxchg(&ptw_act_hw, hw, i + 1);

		if (old == hw)
			break;
		hw = old;
	}
	atomic_inc(&ptw_nr_live);
	atomic_set_release(&a->state, PTW_S_LIVE);
	return i;
}
NOKPROBE_SYMBOL(ptw_claim);

static struct ptw_active *ptw_find_key(unsigned long key)
{
	unsigned int i, n = ptw_act_limit();

	for (i = 0; i < n; i++) {
		struct ptw_active *a = &ptw_act[i];

		if (ptw_live(a) && READ_ONCE(a->key) == key)
			return a;
	}
	return NULL;
}
NOKPROBE_SYMBOL(ptw_find_key);

/* the walk the current task is inside of (a hooked call is running) */
struct ptw_active *ptw_find_current_call(void)
{
	unsigned long me = (unsigned long)current;
	unsigned int i, n = ptw_act_limit();

	for (i = 0; i < n; i++) {
		struct ptw_active *a = &ptw_act[i];

		if (ptw_live(a) && READ_ONCE(a->task_key) == me &&
		    atomic_read(&a->in_call) > 0)
			return a;
	}
	return NULL;
}
NOKPROBE_SYMBOL(ptw_find_current_call);

/* A walk starts at its first hooked call, or when its walker takes the lock. */
void ptw_begin(struct ptw_active *a, u64 now)
{
	a->started = true;
	a->seq = atomic64_inc_return(&ptw_seq);
	a->start_ns = a->lock_t0 ? a->lock_t0 : now;
	a->walker_pid = task_pid_nr(current);
	a->missed0 = ptw_missed_total();
	ptw_current_comm(a->walker_comm);
	trace_walk_start(a->kind, a->seq, a->walker_pid, a->walker_comm,
			 a->target_tgid);
}
NOKPROBE_SYMBOL(ptw_begin);

static void ptw_emit(struct ptw_active *a)
{
	struct ptw_walk_rec r;

	memset(&r, 0, sizeof(r));
	r.seq = a->seq;
	r.kind = a->kind;
	r.start_ns = a->start_ns;
	r.end_ns = max(a->end_ns, a->start_ns);
	r.call_ns = a->call_ns;
	r.walk_ns = a->walk_ns;
	r.walk_timed = a->walk_timed;
	r.pte_tables = a->pte_tables;
	r.pte_slots = a->pte_slots;
	r.pte_revisits = a->pte_revisits;
	r.lock_hold_ns = a->lock_hold_ns;
	r.lock_wait_ns = a->lock_wait_ns;
	r.lock_holds = a->lock_holds;
	r.lock_mode = a->lock_mode;
	r.tlb_flushes = atomic64_read(&a->tlb_flushes);
	r.tlb_ipis = atomic64_read(&a->tlb_ipis);
	r.calls = a->calls;
	r.stalls = atomic64_read(&a->stalls);
	r.probe_missed = ptw_missed_total() - a->missed0;
	r.walker_pid = a->walker_pid;
	r.target_tgid = a->target_tgid;
	memcpy(r.walker_comm, a->walker_comm, TASK_COMM_LEN);

	ptw_push_walk(&r);
	atomic64_inc(&ptw_stats.walks[r.kind]);
	atomic64_add(r.pte_slots, &ptw_stats.pte_slots[r.kind]);
	if (r.probe_missed)
		atomic64_inc(&ptw_stats.walks_missed);
	ptw_hist_add(&ptw_stats.walk_ns[r.kind],
		     r.walk_timed ? r.walk_ns : r.call_ns);
	if (r.pte_slots && r.walk_timed)
		ptw_hist_add(&ptw_stats.ns_per_pte[r.kind],
			     div64_u64(r.walk_ns, r.pte_slots));
	if (r.lock_mode)
		ptw_hist_add(&ptw_stats.lock_hold_ns[r.kind], r.lock_hold_ns);
	trace_walk_end(r.kind, r.seq, r.walker_pid, r.walker_comm,
		       r.target_tgid, r.pte_tables, r.pte_slots, r.call_ns,
		       r.walk_ns, r.lock_hold_ns, r.lock_mode, r.tlb_flushes);
}
NOKPROBE_SYMBOL(ptw_emit);

/* Emit the record of a finished walk and free its slot. */
static void ptw_finish(struct ptw_active *a, bool emit)
{
	if (atomic_cmpxchg(&a->state, PTW_S_LIVE, PTW_S_BUSY) != PTW_S_LIVE)
		return;
	if (!a->started)
		atomic64_inc(&ptw_stats.walks_open_unread);
	else if (emit)
		ptw_emit(a);
	atomic_dec(&ptw_nr_live);
	atomic_set_release(&a->state, PTW_S_FREE);
}
NOKPROBE_SYMBOL(ptw_finish);

/* ---- entry points used by the kprobes ------------------------------ */

int ptw_walk_open(enum ptw_kind kind, unsigned long key,
		  const struct file *file)
{
	return ptw_claim(kind, key, file, false);
}
NOKPROBE_SYMBOL(ptw_walk_open);

void ptw_walk_close(unsigned long key, bool emit)
{
	struct ptw_active *a;

	if (!atomic_read(&ptw_nr_live))
		return;
	a = ptw_find_key(key);
	if (a && !a->call_scoped)
		ptw_finish(a, emit);
}
NOKPROBE_SYMBOL(ptw_walk_close);

/*
 * A hooked call begins.  File kinds (smaps, pagemap): pos is where this
 * call reads (smaps: the VMA's start; pagemap: *ppos).  A read below
 * next_pos does not continue the pass: the pass so far is one walk, and a
 * new one begins (a pread from 0 of a file kept open, a re-read).  The
 * same position again is one pass (seq_file shows a record again when its
 * buffer overflowed).
 */
int ptw_call_enter(enum ptw_kind kind, unsigned long key,
		   const struct file *file, u64 now, bool pos_valid, u64 pos)
{
	bool call_scoped = kind == PTW_CLEAR_REFS || kind == PTW_SMAPS_ROLLUP ||
			   kind == PTW_PAGEMAP_SCAN;
	struct ptw_active *a;
	int slot;

	if (call_scoped) {
		slot = ptw_claim(kind, key, file, true);
		if (slot < 0)
			return -1;
		a = &ptw_act[slot];
	} else {
		a = ptw_find_key(key);
		if (!a || a->kind != kind) {
			/* file opened before the module was loaded */
			slot = ptw_claim(kind, key, file, false);
			if (slot < 0)
				return -1;
			a = &ptw_act[slot];
		}
		if (a->started && pos_valid && pos < a->next_pos) {
			ptw_emit(a);
			ptw_pass_reset(a);
		}
		if (pos_valid)
			a->next_pos = pos;
	}
	WRITE_ONCE(a->task_key, (unsigned long)current);
	atomic_inc(&a->in_call);
	/* smaps: the reader took the lock in m_start, before this call */
	if (!a->lock_t0)
		ptw_adopt_hold(a);
	if (!a->started)
		ptw_begin(a, now);
	if (a->lock_t0)
		a->hold_used = true;
	a->calls++;
	return a - ptw_act;
}
NOKPROBE_SYMBOL(ptw_call_enter);

void ptw_call_exit(int slot, u64 t0, u64 now, bool pos_valid, u64 next_pos)
{
	struct ptw_active *a = &ptw_act[slot];

	if (!ptw_live(a))
		return;
	a->call_ns += now - t0;
	a->end_ns = max(a->end_ns, now);
	if (pos_valid)
		a->next_pos = max(a->next_pos, next_pos);
	atomic_dec(&a->in_call);
	if (a->call_scoped)
		ptw_finish(a, true);
}
NOKPROBE_SYMBOL(ptw_call_exit);

/* walk_page_range()/walk_page_vma() inside a walk call: the walk proper */
int ptw_walk_proper_enter(u64 now)
{
	struct ptw_active *a;

	if (!atomic_read(&ptw_nr_live))
		return -1;
	a = ptw_find_current_call();
	if (!a)
		return -1;
	if (a->walk_depth++ == 0)
		a->walk_t0 = now;
	return a - ptw_act;
}
NOKPROBE_SYMBOL(ptw_walk_proper_enter);

void ptw_walk_proper_exit(int slot, u64 now)
{
	struct ptw_active *a = &ptw_act[slot];

	if (!ptw_live(a) || !a->walk_depth)
		return;
	if (--a->walk_depth == 0) {
		a->walk_ns += now - a->walk_t0;
		a->walk_timed = true;
	}
}
NOKPROBE_SYMBOL(ptw_walk_proper_exit);

/*
 * One per-PMD-range callback.  Addresses only grow within one pass, so a
 * range below covered_end was counted already (ACTION_AGAIN retries, a
 * seq_file record shown again, a PAGEMAP_SCAN restart): each PTE slot is
 * counted once per walk and the repeat in pte_revisits.
 */
void ptw_pte_range(unsigned long addr, unsigned long end)
{
	struct ptw_active *a;
	unsigned long d;

	if (!atomic_read(&ptw_nr_live))
		return;
	a = ptw_find_current_call();
	if (!a)
		return;
	if (end <= a->covered_end) {
		a->pte_revisits++;
	} else {
		a->pte_tables++;
		a->pte_slots += (end - max(addr, a->covered_end)) >> PAGE_SHIFT;
		a->covered_end = end;
	}

	/*
	 * Busy-wait on the walk's own clock rather than ndelay(): udelay's
	 * loop calibration is unreliable in emulators, ktime is not.
	 */
	d = READ_ONCE(ptw_inject_delay_ns);
	if (d) {
		u64 until = ktime_get_ns() + min(d, ptw_max_inject_ns());

		while (ktime_get_ns() < until)
			cpu_relax();
	}
}
NOKPROBE_SYMBOL(ptw_pte_range);

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

/* the figures of a pass but its tlb counts: ptw_pass_reset() clears them */
struct ptw_walk_pass {
	bool started;
	u64 next_pos;		/* file kinds: a read below this starts a pass */
	u64 start_ns;
	u64 end_ns;
	u64 call_ns;
	u64 walk_ns;
	u64 walk_t0;
	u32 walk_depth;
	bool walk_timed;
	u64 calls;
	unsigned long covered_end;	/* PTE slots below are counted */
	u64 pte_tables;
	u64 pte_slots;
	u64 pte_revisits;
	u64 pte_tables_mmap_locked;
	u64 missed0;
	u64 vma_locks;
	u64 vma_hold_ns;
	u64 vma_hold_max_ns;
	u64 vma_fallbacks;
	char walker_comm[TASK_COMM_LEN];
};

/*
 * The pass of one walk slot (the slot is claimed in ptwalk_lock.c, which
 * keeps who walks and the lock hold; see ptw_claim()): written only by the
 * walking task in its own context, the tlb counts also from its
 * tracepoints.
 */
struct ptw_walk {
	/* the walk, set when its slot is claimed */
	bool call_scoped;
	u32 kind;
	pid_t target_tgid;
	/*
	 * the walker holds a VMA's read lock since (0: none); it carries over
	 * a pass reset: smaps' m_start locks the first VMA of a new pass
	 * before the call that begins it, and the hold is counted when it ends
	 */
	u64 vma_t0;
	unsigned long vma_key;	/* the VMA it holds (opaque) */
	struct ptw_walk_pass pass;
	/* the pass's tlb counts (reset by atomic64_set(), not by a memset) */
	atomic64_t tlb_flushes;
	atomic64_t tlb_ipis;
};

static struct ptw_walk ptw_walks[PTW_MAX_ACTIVE];

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

/* ---- walk slots ------------------------------------------------------ */

/*
 * per-pass fields; the walk's (kind, target) and the lock state (a hold in
 * progress) carry over
 */
static void ptw_pass_reset(int slot)
{
	struct ptw_walk *w = &ptw_walks[slot];

	memset(&w->pass, 0, sizeof(w->pass));
	atomic64_set(&w->tlb_flushes, 0);
	atomic64_set(&w->tlb_ipis, 0);
	ptw_lock_pass_reset(slot);
}
NOKPROBE_SYMBOL(ptw_pass_reset);

static int ptw_claim(enum ptw_kind kind, unsigned long key,
		     const struct file *file, bool call_scoped)
{
	unsigned long mm_key;
	struct ptw_walk *w;
	pid_t tgid;
	int slot;

	ptw_target_from_file(file, &tgid, &mm_key);
	slot = ptw_lock_claim(key, mm_key, kind, tgid);
	if (slot < 0) {
		atomic64_inc(&ptw_stats.walks_dropped);
		return -1;
	}
	w = &ptw_walks[slot];
	w->call_scoped = call_scoped;
	w->kind = kind;
	w->target_tgid = tgid;
	w->vma_t0 = 0;
	WRITE_ONCE(w->vma_key, 0);
	ptw_pass_reset(slot);
	ptw_lock_publish(slot);
	return slot;
}
NOKPROBE_SYMBOL(ptw_claim);

/*
 * A walk starts at its first hooked call, or when its walker takes the
 * lock (since: the hold's start, 0 for none).
 */
static void ptw_begin(int slot, u64 since, u64 now)
{
	struct ptw_walk *w = &ptw_walks[slot];
	pid_t walker_pid = task_pid_nr(current);
	u64 seq = atomic64_inc_return(&ptw_seq);

	w->pass.started = true;
	w->pass.start_ns = since ? since : now;
	ptw_lock_walk_begins(slot, seq, walker_pid);
	w->pass.missed0 = ptw_missed_total();
	ptw_current_comm(w->pass.walker_comm);
	trace_walk_start(w->kind, seq, walker_pid, w->pass.walker_comm,
			 w->target_tgid);
}
NOKPROBE_SYMBOL(ptw_begin);

static void ptw_emit(int slot)
{
	struct ptw_walk *w = &ptw_walks[slot];
	struct ptw_lock_pass p;
	struct ptw_walk_rec r;

	ptw_lock_pass_read(slot, &p);
	memset(&r, 0, sizeof(r));
	r.seq = p.seq;
	r.kind = w->kind;
	r.start_ns = w->pass.start_ns;
	r.end_ns = max3(w->pass.end_ns, p.hold_end_ns, w->pass.start_ns);
	r.call_ns = w->pass.call_ns;
	r.walk_ns = w->pass.walk_ns;
	r.walk_timed = w->pass.walk_timed;
	r.pte_tables = w->pass.pte_tables;
	r.pte_slots = w->pass.pte_slots;
	r.pte_revisits = w->pass.pte_revisits;
	r.pte_tables_mmap_locked = w->pass.pte_tables_mmap_locked;
	r.lock_hold_ns = p.lock_hold_ns;
	r.lock_wait_ns = p.lock_wait_ns;
	r.lock_holds = p.lock_holds;
	r.lock_mode = p.lock_mode;
	r.tlb_flushes = atomic64_read(&w->tlb_flushes);
	r.tlb_ipis = atomic64_read(&w->tlb_ipis);
	r.calls = w->pass.calls;
	r.stalls = p.stalls;
	r.probe_missed = ptw_missed_total() - w->pass.missed0;
	r.vma_locks = w->pass.vma_locks;
	r.vma_hold_ns = w->pass.vma_hold_ns;
	r.vma_hold_max_ns = w->pass.vma_hold_max_ns;
	r.vma_fallbacks = w->pass.vma_fallbacks;
	r.walker_pid = p.walker_pid;
	r.target_tgid = w->target_tgid;
	memcpy(r.walker_comm, w->pass.walker_comm, TASK_COMM_LEN);

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
static void ptw_finish(int slot, bool emit)
{
	if (!ptw_lock_retire(slot))
		return;
	if (!ptw_walks[slot].pass.started)
		atomic64_inc(&ptw_stats.walks_open_unread);
	else if (emit)
		ptw_emit(slot);
	ptw_lock_free(slot);
}
NOKPROBE_SYMBOL(ptw_finish);

/* ---- entry points used by the probes -------------------------------- */

int ptw_walk_open(enum ptw_kind kind, unsigned long key,
		  const struct file *file)
{
	return ptw_claim(kind, key, file, false);
}
NOKPROBE_SYMBOL(ptw_walk_open);

void ptw_walk_close(unsigned long key, bool emit)
{
	int slot = ptw_lock_find_key(key);

	if (slot >= 0 && !ptw_walks[slot].call_scoped)
		ptw_finish(slot, emit);
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
	struct ptw_walk *w;
	int slot;

	if (call_scoped) {
		slot = ptw_claim(kind, key, file, true);
		if (slot < 0)
			return -1;
		w = &ptw_walks[slot];
	} else {
		slot = ptw_lock_find_key(key);
		if (slot < 0 || ptw_walks[slot].kind != kind) {
			/* file opened before the module was loaded */
			slot = ptw_claim(kind, key, file, false);
			if (slot < 0)
				return -1;
		}
		w = &ptw_walks[slot];
		if (w->pass.started && pos_valid && pos < w->pass.next_pos) {
			ptw_emit(slot);
			ptw_pass_reset(slot);
		}
		if (pos_valid)
			w->pass.next_pos = pos;
	}
	ptw_lock_call_enter(slot);
	/*
	 * smaps: the reader took the lock in m_start, before this call: the
	 * walk starts then, and the hold is adopted as the walk's.
	 */
	if (!w->pass.started)
		ptw_begin(slot, ptw_lock_hold_since(slot, !w->call_scoped), now);
	ptw_lock_call_hold(slot, !w->call_scoped);
	w->pass.calls++;
	return slot;
}
NOKPROBE_SYMBOL(ptw_call_enter);

/* the walker's VMA read hold ends (or the walk of its VMA did) */
/*
 * The writers waiting for a VMA of a walked mm (ptwalk_vma.c registers
 * them): when a walk's hold of that VMA ends, the entry learns when and
 * which walk, before the writer can go on (it waits for this release).
 */
struct ptw_vma_writer {
	atomic_long_t vma_key;	/* 0 = free; the low bit: being claimed */
	u64 t0;
	u64 end;		/* a walk's hold of it ended (0: none) */
	int slot;		/* that walk */
	u64 seq;
};

static struct ptw_vma_writer ptw_vma_writers[PTW_MAX_VMA_WRITERS];

/* the walk a slot's pass is (ptwalk_lock.c); 0 before it begins */
static u64 ptw_walks_seq(int slot)
{
	u64 seq;
	u32 kind;
	pid_t tgid;

	return ptw_lock_walk_id(slot, &seq, &kind, &tgid) ? seq : 0;
}
NOKPROBE_SYMBOL(ptw_walks_seq);
static atomic_t ptw_vma_nr_writers = ATOMIC_INIT(0);

int ptw_walk_vma_writer_begin(unsigned long vma_key, u64 t0)
{
	int i;

	for (i = 0; i < PTW_MAX_VMA_WRITERS; i++) {
		struct ptw_vma_writer *v = &ptw_vma_writers[i];

		if (atomic_long_cmpxchg(&v->vma_key, 0, 1) != 0)
			continue;
		v->t0 = t0;
		WRITE_ONCE(v->end, 0);
		v->slot = -1;
		v->seq = 0;
		/* published: a hold's end matches a whole entry */
		atomic_long_set_release(&v->vma_key, vma_key);
		atomic_inc(&ptw_vma_nr_writers);
		return i;
	}
	atomic64_inc(&ptw_stats.vma_waits_dropped);
	return -1;
}
NOKPROBE_SYMBOL(ptw_walk_vma_writer_begin);

/*
 * The writer's wait is over: the walk whose hold ended in it (false: none
 * did), when, and the entry freed.  A hold still open is taken as ending
 * now: the release came before the walk's next step.
 */
bool ptw_walk_vma_writer_end(int idx, unsigned long mm_key, u32 kinds,
			     u64 now, int *slot, u64 *end)
{
	struct ptw_vma_writer *v = &ptw_vma_writers[idx];
	unsigned long key = atomic_long_read(&v->vma_key);
	bool found = false;
	int s;

	*end = READ_ONCE(v->end);
	if (*end) {
		*slot = READ_ONCE(v->slot);
		found = ptw_lock_live(*slot) &&
			READ_ONCE(v->seq) == ptw_walks_seq(*slot);
	}
	for (s = ptw_lock_mm_walked_from(mm_key, kinds, 0); !found && s >= 0;
	     s = ptw_lock_mm_walked_from(mm_key, kinds, s + 1)) {
		struct ptw_walk *w = &ptw_walks[s];
		u64 h0 = READ_ONCE(w->vma_t0);

		if (h0 && h0 < now && READ_ONCE(w->vma_key) == key) {
			*slot = s;
			*end = now;
			found = true;
		}
	}
	atomic_dec(&ptw_vma_nr_writers);
	atomic_long_set_release(&v->vma_key, 0);
	return found;
}
NOKPROBE_SYMBOL(ptw_walk_vma_writer_end);

/* a walk's hold of vma_key ends now: the writers waiting for it learn so */
static void ptw_vma_writers_release(int slot, unsigned long vma_key, u64 now)
{
	int i;

	if (!atomic_read(&ptw_vma_nr_writers))
		return;
	for (i = 0; i < PTW_MAX_VMA_WRITERS; i++) {
		struct ptw_vma_writer *v = &ptw_vma_writers[i];

		/* pairs with the begin's release: a match sees a whole entry */
		if (atomic_long_read_acquire(&v->vma_key) != vma_key ||
		    READ_ONCE(v->t0) >= now)
			continue;
		WRITE_ONCE(v->slot, slot);
		WRITE_ONCE(v->seq, ptw_walks_seq(slot));
		WRITE_ONCE(v->end, now);
	}
}
NOKPROBE_SYMBOL(ptw_vma_writers_release);

static void ptw_vma_hold_end(struct ptw_walk *w, u64 now)
{
	u64 held;

	if (!w->vma_t0)
		return;
	held = now > w->vma_t0 ? now - w->vma_t0 : 0;
	ptw_vma_writers_release(w - ptw_walks, w->vma_key, now);
	WRITE_ONCE(w->vma_t0, 0);
	WRITE_ONCE(w->vma_key, 0);
	w->pass.vma_locks++;
	w->pass.vma_hold_ns += held;
	w->pass.vma_hold_max_ns = max(w->pass.vma_hold_max_ns, held);
}
NOKPROBE_SYMBOL(ptw_vma_hold_end);

void ptw_call_exit(int slot, u64 t0, u64 now, bool pos_valid, u64 next_pos)
{
	struct ptw_walk *w = &ptw_walks[slot];

	if (!ptw_lock_live(slot))
		return;
	ptw_vma_hold_end(w, now);
	w->pass.call_ns += now - t0;
	w->pass.end_ns = max(w->pass.end_ns, now);
	if (pos_valid)
		w->pass.next_pos = max(w->pass.next_pos, next_pos);
	ptw_lock_call_exit(slot);
	if (w->call_scoped)
		ptw_finish(slot, true);
}
NOKPROBE_SYMBOL(ptw_call_exit);

/*
 * The current task took the lock of mm_key (mmap_lock_acquire_returned,
 * before ptwalk_lock.c looks at the hold): a file walk of it by this task
 * that has not begun begins now (smaps' m_start).
 */
void ptw_walk_lock_taken(unsigned long mm_key, u64 now)
{
	int slot;

	/* inside a hooked call, the lock is that call's walk's (ptwalk_lock.c) */
	if (ptw_lock_current_walk() >= 0)
		return;
	for (slot = ptw_lock_next_walk(mm_key, 0); slot >= 0;
	     slot = ptw_lock_next_walk(mm_key, slot + 1))
		if (!ptw_walks[slot].pass.started)
			ptw_begin(slot, 0, now);
}
NOKPROBE_SYMBOL(ptw_walk_lock_taken);

/*
 * lock_next_vma() in the current task, walking in slot (ptwalk_vma.c): the
 * previous VMA's read lock was just dropped; then the next one was taken
 * (locked), or the call gave up with an error and the reader goes on under
 * mmap_lock (fallback).
 */
void ptw_walk_vma_unlocking(int slot, u64 now)
{
	ptw_vma_hold_end(&ptw_walks[slot], now);
}
NOKPROBE_SYMBOL(ptw_walk_vma_unlocking);

void ptw_walk_vma_locked(int slot, u64 now, unsigned long vma_key,
			 bool fallback)
{
	struct ptw_walk *w = &ptw_walks[slot];

	if (!ptw_lock_live(slot))
		return;
	if (vma_key) {
		WRITE_ONCE(w->vma_key, vma_key);
		WRITE_ONCE(w->vma_t0, now);
	}
	if (fallback)
		w->pass.vma_fallbacks++;
}
NOKPROBE_SYMBOL(ptw_walk_vma_locked);

/* a tlb flush in the walker's own context inside a walk call */
void ptw_walk_tlb_flush(bool ipi)
{
	int slot = ptw_lock_current_walk();

	if (slot < 0)
		return;
	if (ipi)
		atomic64_inc(&ptw_walks[slot].tlb_ipis);
	else
		atomic64_inc(&ptw_walks[slot].tlb_flushes);
}
NOKPROBE_SYMBOL(ptw_walk_tlb_flush);

/* walk_page_range()/walk_page_vma() inside a walk call: the walk proper */
int ptw_walk_proper_enter(u64 now)
{
	struct ptw_walk *w;
	int slot;

	slot = ptw_lock_current_walk();
	if (slot < 0)
		return -1;
	w = &ptw_walks[slot];
	if (w->pass.walk_depth++ == 0)
		w->pass.walk_t0 = now;
	return slot;
}
NOKPROBE_SYMBOL(ptw_walk_proper_enter);

void ptw_walk_proper_exit(int slot, u64 now)
{
	struct ptw_walk *w = &ptw_walks[slot];

	if (!ptw_lock_live(slot) || !w->pass.walk_depth)
		return;
	if (--w->pass.walk_depth == 0) {
		w->pass.walk_ns += now - w->pass.walk_t0;
		w->pass.walk_timed = true;
	}
}
NOKPROBE_SYMBOL(ptw_walk_proper_exit);

/*
 * One per-PMD-range callback.  Addresses only grow within one pass, so a
 * range below covered_end was counted already (ACTION_AGAIN retries, a
 * seq_file record shown again, a PAGEMAP_SCAN restart): each PTE slot is
 * counted once per walk and the repeat in pte_revisits.  A table walked
 * while the walker holds the target's mmap_lock (its own lock events say
 * so) counts in pte_tables_mmap_locked too: per-VMA-locked walks walk none.
 */
void ptw_pte_range(unsigned long addr, unsigned long end)
{
	struct ptw_walk *w;
	int slot;

	slot = ptw_lock_current_walk();
	if (slot < 0)
		return;
	w = &ptw_walks[slot];
	if (end <= w->pass.covered_end) {
		w->pass.pte_revisits++;
	} else {
		w->pass.pte_tables++;
		w->pass.pte_slots += (end - max(addr, w->pass.covered_end)) >> PAGE_SHIFT;
		w->pass.covered_end = end;
		if (ptw_lock_hold_since(slot, false))
			w->pass.pte_tables_mmap_locked++;
	}

	ptw_inject_wait(READ_ONCE(ptw_inject_delay_ns));
}
NOKPROBE_SYMBOL(ptw_pte_range);

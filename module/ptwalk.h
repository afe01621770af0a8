/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ptwalk - measure userspace-triggered page-table walks and the stalls
 * they cause.  Declarations shared by the module's files.
 */
#ifndef _PTWALK_H
#define _PTWALK_H

#include <linux/types.h>
#include <linux/atomic.h>
#include <linux/sched.h>
#include <linux/kprobes.h>
#include <linux/string.h>
#include <linux/timekeeping.h>

#include "ptwalk_abi.h"

#define PTW_KIND_ENUM(e, name) e,
enum ptw_kind {
	PTW_KINDS(PTW_KIND_ENUM)
	PTW_NR_KINDS,
};
#undef PTW_KIND_ENUM

#define PTW_ALL_KINDS		((1U << PTW_NR_KINDS) - 1)
/*
 * The hooked kinds that read-lock VMAs one at a time (lock_next_vma(),
 * 7.2+): a lock_next_vma() or a release of the current task is one of
 * its walk of these, not of another walk it has open on the same mm
 * (maps and numa_maps, which do the same, are not hooked kinds)
 */
#define PTW_VMA_LOCK_KINDS	BIT(PTW_SMAPS)

/* lock_mode bits, as seen from the mmap_lock tracepoints */
#define PTW_LOCK_READ		0x1
#define PTW_LOCK_WRITE		0x2

#define PTW_MAX_ACTIVE		256	/* concurrently open/in-flight walks */
#define PTW_MAX_WAITERS		256	/* concurrently waiting tasks */
#define PTW_MAX_HOLDERS		64	/* concurrent holders of walked mms */
#define PTW_WALK_RING		4096	/* recent walk records kept */
#define PTW_STALL_RING		4096	/* recent stall records kept */
#define PTW_VMA_WAIT_RING	4096	/* recent VMA-lock wait records kept */
#define PTW_MAX_VMA_WRITERS	64	/* concurrent VMA writers of walked mms */
#define PTW_MAX_INJECT_NS	1000000UL
/*
 * PREEMPT_RT: the delay runs in a kprobe handler with preemption off, so
 * it is a non-preemptible section; keep it short there.
 */
#define PTW_MAX_INJECT_NS_RT	100000UL

static inline unsigned long ptw_max_inject_ns(void)
{
	return IS_ENABLED(CONFIG_PREEMPT_RT) ? PTW_MAX_INJECT_NS_RT :
					       PTW_MAX_INJECT_NS;
}

/*
 * Every stamp the module takes: CLOCK_MONOTONIC, as ktime_get_ns() and the
 * victims' clock_gettime() give it, but without the timekeeper's seqcount
 * read side. A kprobe's handler runs from the int3 trap, which lockdep
 * counts as NMI context, and ktime_get_ns() there is "inconsistent
 * {INITIAL USE} -> {IN-NMI} usage" of the timekeeping seqcount (7.3.4 with
 * PROVE_LOCKING, make kernel-debug, 12-05). ktime_get_mono_fast_ns() is
 * the NMI-safe accessor (kernel/time/timekeeping.c, exported since 3.17);
 * one clock for the probes of both kinds keeps their stamps comparable.
 * Its caveat (7.3.4 timekeeping.c, ktime_get_mono_fast_ns()): across an
 * NTP slope update a reader on another CPU, or an NMI inside the update,
 * may see time a little behind a read before it: the slope change times
 * the cycles since the last update, nanoseconds. Every interval here is
 * one task's, from one event to a later one (a probe hit, a lock event,
 * microseconds apart at least, a migration included); the one pair that
 * may be read close together, a tracepoint's stamp and its decision,
 * checks for a backward step (ptw_tp_time()).
 */
static inline u64 ptw_now_ns(void)
{
	return ktime_get_mono_fast_ns();
}

/*
 * Test only: busy-wait d ns on the clock rather than ndelay(): udelay's
 * loop calibration is unreliable in emulators, ktime is not.
 */
static inline void ptw_inject_wait(unsigned long d)
{
	u64 until;

	if (!d)
		return;
	until = ptw_now_ns() + min(d, ptw_max_inject_ns());
	while (ptw_now_ns() < until)
		cpu_relax();
}

/* One finished walk (one pass), as kept in the ring and shown in debugfs. */
struct ptw_walk_rec {
	u64 seq;
	u64 start_ns;
	u64 end_ns;
	u64 call_ns;		/* inside the hooked calls (syscall part) */
	u64 walk_ns;		/* inside walk_page_range/walk_page_vma */
	u64 pte_tables;
	u64 pte_slots;
	u64 pte_revisits;	/* callbacks on ranges already counted */
	u64 pte_tables_mmap_locked;	/* of pte_tables, while holding mmap_lock */
	u64 lock_hold_ns;
	u64 lock_wait_ns;
	u64 lock_holds;		/* times the walker took the lock */
	u64 tlb_flushes;	/* local flushes the walker did */
	u64 tlb_ipis;		/* flush IPIs the walker sent */
	u64 calls;
	u64 stalls;
	u64 probe_missed;	/* kprobe/kretprobe misses during the walk */
	u64 vma_locks;		/* VMA read locks the walk took (lock_next_vma) */
	u64 vma_hold_ns;	/* held from each lock to the end of its walk */
	u64 vma_hold_max_ns;
	u64 vma_fallbacks;	/* lock_next_vma gave up (-EAGAIN): mmap_lock */
	pid_t walker_pid;
	pid_t target_tgid;
	u32 kind;
	u32 lock_mode;
	u32 walk_timed;		/* walk_ns measured (walk hooks attached) */
	char walker_comm[TASK_COMM_LEN];
};

/* One wait by another task that a walk's lock hold blocked. */
struct ptw_stall_rec {
	u64 walk_seq;
	u64 start_ns;
	u64 wait_ns;
	pid_t waiter_pid;
	pid_t target_tgid;
	pid_t walker_pid;
	u32 kind;
	u32 write;
	u32 success;
	u32 walker_write;	/* mode of the walker's hold that blocked it */
	u32 split_complete;	/* every hold that overlapped the wait was seen */
	u64 walker_held_ns;	/* the walk's excluding holds within the wait */
	u64 others_held_ns;	/* other tasks' excluding holds, the rest of it */
	u64 clock_spread_ns;	/* other probes' reads of its boundaries: within */
	u64 vma_chain_ns;	/* of others_held: a writer behind the walk's VMA */
	u64 late_hold_ns;	/* the walk's part, all before the other probes' start */
	u32 at_release;		/* began as the walk released: its part not known */
	char waiter_comm[TASK_COMM_LEN];
};

/*
 * One wait of a writer for the read locks of a walked mm's VMA
 * (reference-count VMA locks): __vma_start_write() or the wait of a VMA's
 * detach.  The writer holds that mm's mmap_lock for write meanwhile.
 */
struct ptw_vma_wait_rec {
	u64 walk_seq;		/* the walk it waited for, else a live one */
	u64 start_ns;
	u64 wait_ns;
	u64 walker_held_ns;	/* from the start to the walk's hold's end */
	pid_t writer_pid;
	pid_t target_tgid;
	pid_t walker_pid;	/* the walker it waited for; 0 for none */
	u32 kind;
	u32 behind_walk;	/* a walk held the VMA during it */
	u32 detach;
	char writer_comm[TASK_COMM_LEN];
};

struct ptw_hist {
	atomic64_t slot[PTW_HIST_SLOTS];
};

struct ptw_stats {
	struct ptw_hist walk_ns[PTW_NR_KINDS];
	struct ptw_hist ns_per_pte[PTW_NR_KINDS];
	struct ptw_hist lock_hold_ns[PTW_NR_KINDS];
	struct ptw_hist stall_ns[PTW_NR_KINDS];
	atomic64_t walks[PTW_NR_KINDS];
	atomic64_t pte_slots[PTW_NR_KINDS];
	atomic64_t stalls[PTW_NR_KINDS];
	atomic64_t vma_waits[PTW_NR_KINDS];	/* behind a walk of the kind */
	atomic64_t walks_dropped;	/* no free active slot */
	atomic64_t waits_dropped;	/* no free waiter slot */
	atomic64_t holders_dropped;	/* no free holder slot */
	atomic64_t walks_open_unread;	/* opened, never walked */
	atomic64_t arg_faults;		/* probe argument unreadable */
	atomic64_t walks_missed;	/* walks flagged probe_missed */
	atomic64_t failed_attempts;	/* blocked lock attempts that failed */
	atomic64_t waits_unblocked;	/* marked blocked, no hold excluded */
	atomic64_t tp_stamps_lost;	/* event time read late, spread 0 */
	atomic64_t waits_marked_late;	/* marked by the release of a hold */
	atomic64_t waits_split_late;	/* a hold ended before the slot was seen */
	atomic64_t waits_marked_retired; /* by a walk retired before the slot */
	atomic64_t vma_waits_dropped;	/* no free VMA writer entry */
};

extern struct ptw_stats ptw_stats;
extern unsigned int ptw_kinds_mask;
extern unsigned long ptw_inject_delay_ns;
extern unsigned long ptw_inject_slot_late_ns, ptw_inject_mark_late_ns;
extern unsigned long ptw_inject_stamp_late_ns;
extern const char *const ptw_kind_names[PTW_NR_KINDS];

/* ptwalk_rec.c: rings, counters, probe misses (calls no other file) */
void ptw_push_walk(const struct ptw_walk_rec *r);
void ptw_push_stall(const struct ptw_stall_rec *r);
void ptw_push_vma_wait(const struct ptw_vma_wait_rec *r);
void ptw_rec_watch_kprobe(struct kprobe *kp);
void ptw_rec_watch_kretprobe(struct kretprobe *krp);
void ptw_rec_unwatch_all(void);
u64 ptw_missed_total(void);
void ptw_reset(void);
/* snapshots for debugfs; return number of records copied, oldest first */
size_t ptw_walk_ring_snapshot(struct ptw_walk_rec *buf, size_t max);
size_t ptw_stall_ring_snapshot(struct ptw_stall_rec *buf, size_t max);
size_t ptw_vma_wait_ring_snapshot(struct ptw_vma_wait_rec *buf, size_t max);

/*
 * get_task_comm() takes task_lock(), a sleeping lock on PREEMPT_RT: copy
 * current->comm directly.  Only /proc/PID/comm writers race with this;
 * the copy is always NUL terminated.
 */
static inline void ptw_current_comm(char *buf)
{
	memcpy(buf, current->comm, TASK_COMM_LEN);
	buf[TASK_COMM_LEN - 1] = '\0';
}

/*
 * ptwalk_walk.c: walks and their passes (PTE counts, times, the record);
 * called by the probes of ptwalk_hooks.c and ptwalk_lock_tp.c
 */
int ptw_walk_open(enum ptw_kind kind, unsigned long key,
		  const struct file *file);
void ptw_walk_close(unsigned long key, bool emit);
int ptw_call_enter(enum ptw_kind kind, unsigned long key,
		   const struct file *file, u64 now, bool pos_valid, u64 pos);
void ptw_call_exit(int slot, u64 t0, u64 now, bool pos_valid, u64 next_pos);
int ptw_walk_proper_enter(u64 now);
void ptw_walk_proper_exit(int slot, u64 now);
void ptw_pte_range(unsigned long addr, unsigned long end);
void ptw_walk_lock_taken(unsigned long mm_key, u64 now);
void ptw_walk_tlb_flush(bool ipi);
void ptw_walk_vma_unlocking(int slot, u64 now);
void ptw_walk_vma_locked(int slot, u64 now, unsigned long vma_key,
			 bool fallback);
int ptw_walk_vma_writer_begin(unsigned long vma_key, u64 t0);
bool ptw_walk_vma_writer_end(int idx, unsigned long mm_key, u32 kinds,
			     u64 now, int *slot, u64 *end);

/*
 * ptwalk_lock.c: the walkers (which task walks which mm, inside a hooked
 * call or not, the walk slots ptwalk_walk.c claims), their holds of the
 * target's mmap_lock and the stalls they cause.  It calls no walk or hook
 * function; a slot number names the same walk in both files.
 */
struct ptw_lock_pass {		/* the lock side of one pass, for its record */
	u64 seq;
	u64 lock_hold_ns;
	u64 lock_holds;
	u64 lock_wait_ns;
	u64 hold_end_ns;	/* the pass's last walk hold ended */
	u64 stalls;
	u32 lock_mode;
	pid_t walker_pid;
};

int ptw_lock_claim(unsigned long key, unsigned long mm_key, u32 kind,
		   pid_t target_tgid);
void ptw_lock_publish(int slot);
bool ptw_lock_retire(int slot);
void ptw_lock_free(int slot);
bool ptw_lock_live(int slot);
int ptw_lock_find_key(unsigned long key);
int ptw_lock_current_walk(void);
int ptw_lock_next_walk(unsigned long mm_key, int from);
void ptw_lock_call_enter(int slot);
void ptw_lock_call_exit(int slot);
u64 ptw_lock_hold_since(int slot, bool adopt);
void ptw_lock_call_hold(int slot, bool adopt);
void ptw_lock_walk_begins(int slot, u64 seq, pid_t walker_pid);
void ptw_lock_pass_reset(int slot);
void ptw_lock_pass_read(int slot, struct ptw_lock_pass *p);
int ptw_lock_walk_of(unsigned long mm_key, u32 kinds);
int ptw_lock_mm_walked_from(unsigned long mm_key, u32 kinds, int from);
pid_t ptw_lock_walker_pid(int slot);
bool ptw_lock_walk_id(int slot, u64 *seq, u32 *kind, pid_t *target_tgid);
void ptw_lock_vma_chain(int slot, u64 seq, u64 t0, u64 t1);

/* ptwalk_lock_tp.c: the mmap_lock and tlb tracepoint probes */
int ptw_lock_init(void);
void ptw_lock_exit(void);

struct ptw_tp_hook {
	const char *name;
	int err;
	bool attached;
};

extern struct ptw_tp_hook ptw_tp_hooks[];
extern const unsigned int ptw_nr_tp_hooks;

/* ptwalk_hooks.c: kprobes and kretprobes; a kretprobe instance's data */
struct ptw_ri {
	u64 t0;
	unsigned long key;
	loff_t *ppos;		/* pagemap_read: read again on return */
	int slot;
};

struct ptw_krp_hook {
	struct kretprobe krp;
	const char *sym;
	u32 kinds;		/* kinds this hook serves */
	bool required;		/* kind unusable without it */
	bool vma;		/* the VMA-lock view's (optional: mm->vma_writer_wait) */
	int err;
	bool attached;
};

struct ptw_kp_hook {
	struct kprobe kp;
	const char *sym;
	u32 kinds;
	bool required;
	bool vma;
	int err;
	bool attached;
};

extern struct ptw_krp_hook ptw_krp_hooks[];
extern const unsigned int ptw_nr_krp_hooks;
extern struct ptw_kp_hook ptw_kp_hooks[];
extern const unsigned int ptw_nr_kp_hooks;
extern unsigned int ptw_kinds_active;
extern bool ptw_walk_timed;

int ptw_hooks_init(void);
void ptw_hooks_exit(void);

/*
 * ptwalk_vma.c: the per-VMA lock view (kernels whose VMA locks are
 * reference counts: mm->vma_writer_wait): the walker's VMA read locks
 * (lock_next_vma) and the writers that wait for them; its handlers are
 * hooked by ptwalk_hooks.c's tables (.vma), the calls go to walk, lock and
 * rec
 */
extern const bool ptw_vma_view_built;
/* a VMA writer's wait, as its entry probe saw it (kretprobe data) */
struct ptw_vma_ri {
	u64 t0;
	unsigned long mm_key;
	unsigned long vma_key;
	int idx;		/* its entry (ptw_walk_vma_writer_begin()) */
	bool detach;
};

int ptw_vma_write_entry(struct kretprobe_instance *ri, struct pt_regs *regs);
int ptw_vma_detach_entry(struct kretprobe_instance *ri, struct pt_regs *regs);
int ptw_vma_write_ret(struct kretprobe_instance *ri, struct pt_regs *regs);
int ptw_vma_next_entry(struct kretprobe_instance *ri, struct pt_regs *regs);
int ptw_vma_next_ret(struct kretprobe_instance *ri, struct pt_regs *regs);

/* ptwalk_debugfs.c */
int ptw_debugfs_init(void);
void ptw_debugfs_exit(void);

static inline unsigned int ptw_log2_slot(u64 v)
{
	return v ? min_t(unsigned int, fls64(v), PTW_HIST_SLOTS - 1) : 0;
}

static inline void ptw_hist_add(struct ptw_hist *h, u64 v)
{
	atomic64_inc(&h->slot[ptw_log2_slot(v)]);
}

#endif /* _PTWALK_H */

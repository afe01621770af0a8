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

#include "ptwalk_abi.h"

#define PTW_KIND_ENUM(e, name) e,
enum ptw_kind {
	PTW_KINDS(PTW_KIND_ENUM)
	PTW_NR_KINDS,
};
#undef PTW_KIND_ENUM

#define PTW_ALL_KINDS		((1U << PTW_NR_KINDS) - 1)

/* lock_mode bits, as seen from the mmap_lock tracepoints */
#define PTW_LOCK_READ		0x1
#define PTW_LOCK_WRITE		0x2

#define PTW_MAX_ACTIVE		256	/* concurrently open/in-flight walks */
#define PTW_MAX_WAITERS		256	/* concurrently waiting tasks */
#define PTW_MAX_HOLDERS		64	/* concurrent holders of walked mms */
#define PTW_WALK_RING		4096	/* recent walk records kept */
#define PTW_STALL_RING		4096	/* recent stall records kept */
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
	u64 lock_hold_ns;
	u64 lock_wait_ns;
	u64 lock_holds;		/* times the walker took the lock */
	u64 tlb_flushes;	/* local flushes the walker did */
	u64 tlb_ipis;		/* flush IPIs the walker sent */
	u64 calls;
	u64 stalls;
	u64 probe_missed;	/* kprobe/kretprobe misses during the walk */
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
	char waiter_comm[TASK_COMM_LEN];
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
	atomic64_t walks_dropped;	/* no free active slot */
	atomic64_t waits_dropped;	/* no free waiter slot */
	atomic64_t holders_dropped;	/* no free holder slot */
	atomic64_t walks_open_unread;	/* opened, never walked */
	atomic64_t arg_faults;		/* probe argument unreadable */
	atomic64_t walks_missed;	/* walks flagged probe_missed */
	atomic64_t failed_attempts;	/* blocked lock attempts that failed */
};

enum { PTW_S_FREE = 0, PTW_S_BUSY, PTW_S_LIVE };

/*
 * One walk in progress (call-scoped: clear_refs, smaps_rollup,
 * pagemap_scan) or one open proc file (file-scoped: smaps, pagemap), whose
 * read passes are walks of their own.  Per-walk fields are written only by
 * the walking task in its own context; other tasks read them.
 */
struct ptw_active {
	atomic_t state;
	unsigned long key;	/* opaque: struct file * or walker task */
	unsigned long mm_key;	/* opaque: target mm, compared only */
	unsigned long task_key;	/* opaque: task currently walking */
	atomic_t in_call;
	bool call_scoped;
	bool started;
	bool hold_used;
	u32 kind;
	u64 next_pos;		/* file kinds: a read below this starts a pass */
	/* the walker's hold of the target's mmap_lock */
	u64 lock_t0;		/* holding since (0: not holding) */
	bool lock_write;
	u32 lock_mode;
	u64 lock_hold_ns;
	u64 lock_holds;
	u64 wait_t0;		/* the walker itself waits since */
	u64 lock_wait_ns;
	/* the pass */
	u64 seq;
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
	atomic64_t tlb_flushes;
	atomic64_t tlb_ipis;
	atomic64_t stalls;
	u64 missed0;
	pid_t walker_pid;
	pid_t target_tgid;
	char walker_comm[TASK_COMM_LEN];
};

extern struct ptw_active ptw_act[PTW_MAX_ACTIVE];
extern atomic_t ptw_nr_live;
extern struct ptw_stats ptw_stats;
extern unsigned int ptw_kinds_mask;
extern unsigned long ptw_inject_delay_ns;
extern const char *const ptw_kind_names[PTW_NR_KINDS];

static inline bool ptw_live(struct ptw_active *a)
{
	return atomic_read_acquire(&a->state) == PTW_S_LIVE;
}

unsigned int ptw_act_limit(void);

/* ptwalk_rec.c: rings, counters, probe misses (calls no other file) */
void ptw_push_walk(const struct ptw_walk_rec *r);
void ptw_push_stall(const struct ptw_stall_rec *r);
void ptw_rec_watch_kprobe(struct kprobe *kp);
void ptw_rec_watch_kretprobe(struct kretprobe *krp);
void ptw_rec_unwatch_all(void);
u64 ptw_missed_total(void);
void ptw_reset(void);
/* snapshots for debugfs; return number of records copied, oldest first */
size_t ptw_walk_ring_snapshot(struct ptw_walk_rec *buf, size_t max);
size_t ptw_stall_ring_snapshot(struct ptw_stall_rec *buf, size_t max);

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

/* ptwalk_walk.c: walk slots, passes, records */
int ptw_walk_open(enum ptw_kind kind, unsigned long key,
		  const struct file *file);
void ptw_walk_close(unsigned long key, bool emit);
int ptw_call_enter(enum ptw_kind kind, unsigned long key,
		   const struct file *file, u64 now, bool pos_valid, u64 pos);
void ptw_call_exit(int slot, u64 t0, u64 now, bool pos_valid, u64 next_pos);
int ptw_walk_proper_enter(u64 now);
void ptw_walk_proper_exit(int slot, u64 now);
void ptw_pte_range(unsigned long addr, unsigned long end);
struct ptw_active *ptw_find_current_call(void);
void ptw_begin(struct ptw_active *a, u64 now);

/* ptwalk_lock.c: mmap_lock and tlb probes, stall decisions */
int ptw_lock_init(void);
void ptw_lock_exit(void);
void ptw_adopt_hold(struct ptw_active *a);

struct ptw_tp_hook {
	const char *name;
	int err;
	bool attached;
};

extern struct ptw_tp_hook ptw_tp_hooks[];
extern const unsigned int ptw_nr_tp_hooks;

/* ptwalk_hooks.c: kprobes and kretprobes */
struct ptw_krp_hook {
	struct kretprobe krp;
	const char *sym;
	u32 kinds;		/* kinds this hook serves */
	bool required;		/* kind unusable without it */
	int err;
	bool attached;
};

struct ptw_kp_hook {
	struct kprobe kp;
	const char *sym;
	u32 kinds;
	bool required;
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

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ptwalk - measure userspace-triggered page-table walks and the stalls
 * they cause.  Shared declarations.
 */
#ifndef _PTWALK_H
#define _PTWALK_H

#include <linux/types.h>
#include <linux/atomic.h>
#include <linux/sched.h>
#include <linux/kprobes.h>

enum ptw_kind {
	PTW_CLEAR_REFS,
	PTW_SMAPS,
	PTW_SMAPS_ROLLUP,
	PTW_PAGEMAP,
	PTW_PAGEMAP_SCAN,
	PTW_NR_KINDS,
};

#define PTW_ALL_KINDS		((1U << PTW_NR_KINDS) - 1)

/* lock_mode bits, as seen from the mmap_lock tracepoints */
#define PTW_LOCK_READ		0x1
#define PTW_LOCK_WRITE		0x2

#define PTW_HIST_SLOTS		64
#define PTW_MAX_ACTIVE		256	/* concurrently open/in-flight walks */
#define PTW_MAX_WAITERS		256	/* concurrently waiting tasks */
#define PTW_WALK_RING		4096	/* recent walk records kept */
#define PTW_STALL_RING		4096	/* recent stall records kept */
#define PTW_MAX_INJECT_NS	1000000UL

/* One finished walk, as kept in the ring and printed in debugfs. */
struct ptw_walk_rec {
	u64 seq;
	u64 start_ns;
	u64 end_ns;
	u64 duration_ns;
	u64 pte_tables;
	u64 pte_slots;
	u64 lock_hold_ns;
	u64 lock_wait_ns;
	u64 tlb_flushes;
	u64 calls;
	u64 stalls;
	u64 stall_ns;
	pid_t walker_pid;
	pid_t target_tgid;
	u32 kind;
	u32 lock_mode;
	char walker_comm[TASK_COMM_LEN];
};

/* One wait by another task of the walked mm that overlapped a walk. */
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
	atomic64_t walks_open_unread;	/* opened, never walked */
};

extern struct ptw_stats ptw_stats;
extern unsigned int ptw_kinds_mask;
extern unsigned long ptw_inject_delay_ns;
extern const char *const ptw_kind_names[PTW_NR_KINDS];

/* ptwalk_core.c: walk bookkeeping, rings, mmap_lock/tlb probes */
int ptw_core_init(void);
void ptw_core_exit(void);
void ptw_reset(void);

int ptw_walk_open(enum ptw_kind kind, unsigned long key, const struct file *file,
		  bool call_scoped);
void ptw_walk_close(unsigned long key, bool emit);
int ptw_call_enter(enum ptw_kind kind, unsigned long key, const struct file *file,
		   u64 now);
void ptw_call_exit(int slot, u64 t0, u64 now);
void ptw_pte_range(unsigned long addr, unsigned long end,
		   const void *walk_mm);

/* snapshots for debugfs; return number of records copied, oldest first */
size_t ptw_walk_ring_snapshot(struct ptw_walk_rec *buf, size_t max);
size_t ptw_stall_ring_snapshot(struct ptw_stall_rec *buf, size_t max);

/* tracepoint hooks status, for debugfs "hooks" */
struct ptw_tp_hook {
	const char *name;
	void *probe;
	struct tracepoint *tp;
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

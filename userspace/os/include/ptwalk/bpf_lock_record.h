/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What ptwalk's BPF program (os/bpf/lock_spans.bpf.c) hands to userspace
 * through its ring buffer, and its counters: C, included by the program and
 * by its loader (os/src/bpf_lock_spans.cpp).
 *
 * The program pairs the mmap_lock tracepoints per (task, mm) in the kernel
 * and passes on only what the monitor keeps: long holds, the waits behind
 * them, the start of walks of another process's mm (so the walker's fd
 * table can be read while it walks), and the monitor's own probes.
 */
#ifndef PTWALK_BPF_LOCK_RECORD_H
#define PTWALK_BPF_LOCK_RECORD_H

#include <linux/types.h>

enum ptw_bpf_kind {
	/* start_locking -> acquire_returned, >= min_wait, overlapping a
	 * hold >= min_hold on the same mm that ended before it */
	PTW_BPF_WAIT = 0,
	/* acquire_returned(success) -> released (or a downgrade), >= min_hold */
	PTW_BPF_HOLD = 1,
	/* a task acquired another process's mm (mm != current->mm) */
	PTW_BPF_FOREIGN_ACQUIRE = 2,
	/* ... and released it before min_hold (a long one is a HOLD) */
	PTW_BPF_FOREIGN_RELEASE = 3,
	/* the monitor's prober thread acquired an mm (acquire time only) */
	PTW_BPF_PROBE = 4,
};

struct ptw_bpf_rec {
	__u64 start_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u64 end_ns;   /* == start_ns for FOREIGN_ACQUIRE and PROBE */
	__u64 mm;       /* opaque key, as the tracepoint's mm field */
	__u32 tgid, tid;
	__u32 owner_tgid; /* mm->owner's tgid when read; 0: unknown */
	__u8 kind;        /* enum ptw_bpf_kind */
	__u8 write;
	__u8 success;
	__u8 foreign;  /* enum ptw_bpf_mm: whose mm the task locked */
	__u8 teardown; /* HOLD: mm_users was 0 (exit_mmap(), by whoever
			   * dropped the last reference) */
	__u8 pad[7];
};

enum ptw_bpf_mm {
	PTW_MM_OWN = 0,   /* its own (current->mm) */
	PTW_MM_OTHER = 1, /* not its own: a walk of another process, or the mm
			   * execve() builds for it */
	PTW_MM_NONE = 2,  /* the task has no mm: its exit tearing down the
			   * one it had, or a kernel thread */
};

/* Per-CPU counters, the "stats" array map's slots. */
enum ptw_bpf_stat {
	PTW_BPF_EVENTS = 0,   /* mmap_lock tracepoint hits */
	PTW_BPF_UNPAIRED,     /* events that did not fit the state machine */
	PTW_BPF_RECORDS,      /* records handed on */
	PTW_BPF_DROPPED,      /* records lost: the ring buffer was full */
	PTW_BPF_WAITS_BEHIND, /* waits >= min_wait behind a long hold (handed on) */
	PTW_BPF_NSTATS,
};

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ptwalk tracepoints, after samples/trace_events/trace-events-sample.h.
 * No kernel pointer is recorded: walks are named by seq, tasks by pid.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM ptwalk

#if !defined(_PTWALK_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _PTWALK_TRACE_H

#include <linux/tracepoint.h>
#include <linux/sched.h>

#include "ptwalk.h"

/* kinds in the event format by name, from the one list in ptwalk_abi.h */
#define PTW_KIND_DEFINE_ENUM(e, name) TRACE_DEFINE_ENUM(e);
PTW_KINDS(PTW_KIND_DEFINE_ENUM)
#undef PTW_KIND_DEFINE_ENUM

#define PTW_KIND_SYMBOL(e, name) { e, name },
#define ptw_show_kind(k)					\
	__print_symbolic(k, PTW_KINDS(PTW_KIND_SYMBOL) { -1, NULL })

#define PTW_MODE_SYMBOL(v, name) { v, name },
#define ptw_show_mode(m)					\
	__print_symbolic(m, PTW_LOCK_MODES(PTW_MODE_SYMBOL) { -1, NULL })

TRACE_EVENT(walk_start,

	TP_PROTO(u32 kind, u64 seq, pid_t walker_pid, const char *walker_comm,
		 pid_t target_tgid),

	TP_ARGS(kind, seq, walker_pid, walker_comm, target_tgid),

	TP_STRUCT__entry(
		__field(u64, seq)
		__field(u32, kind)
		__field(pid_t, walker_pid)
		__array(char, walker_comm, TASK_COMM_LEN)
		__field(pid_t, target_tgid)
	),

	TP_fast_assign(
		__entry->seq = seq;
		__entry->kind = kind;
		__entry->walker_pid = walker_pid;
		memcpy(__entry->walker_comm, walker_comm, TASK_COMM_LEN);
		__entry->target_tgid = target_tgid;
	),

	TP_printk("seq=%llu kind=%s walker_pid=%d walker_comm=%s target_tgid=%d",
		  __entry->seq, ptw_show_kind(__entry->kind),
		  __entry->walker_pid, __entry->walker_comm,
		  __entry->target_tgid)
);

TRACE_EVENT(walk_end,

	TP_PROTO(u32 kind, u64 seq, pid_t walker_pid, const char *walker_comm,
		 pid_t target_tgid, u64 pte_tables, u64 pte_slots,
		 u64 call_ns, u64 walk_ns, u64 lock_hold_ns, u32 lock_mode,
		 u64 tlb_flushes),

	TP_ARGS(kind, seq, walker_pid, walker_comm, target_tgid, pte_tables,
		pte_slots, call_ns, walk_ns, lock_hold_ns, lock_mode,
		tlb_flushes),

	TP_STRUCT__entry(
		__field(u64, seq)
		__field(u64, pte_tables)
		__field(u64, pte_slots)
		__field(u64, call_ns)
		__field(u64, walk_ns)
		__field(u64, lock_hold_ns)
		__field(u64, tlb_flushes)
		__field(u32, kind)
		__field(u32, lock_mode)
		__field(pid_t, walker_pid)
		__field(pid_t, target_tgid)
		__array(char, walker_comm, TASK_COMM_LEN)
	),

	TP_fast_assign(
		__entry->seq = seq;
		__entry->pte_tables = pte_tables;
		__entry->pte_slots = pte_slots;
		__entry->call_ns = call_ns;
		__entry->walk_ns = walk_ns;
		__entry->lock_hold_ns = lock_hold_ns;
		__entry->tlb_flushes = tlb_flushes;
		__entry->kind = kind;
		__entry->lock_mode = lock_mode;
		__entry->walker_pid = walker_pid;
		__entry->target_tgid = target_tgid;
		memcpy(__entry->walker_comm, walker_comm, TASK_COMM_LEN);
	),

	TP_printk("seq=%llu kind=%s walker_pid=%d walker_comm=%s target_tgid=%d pte_tables=%llu pte_slots=%llu call_ns=%llu walk_ns=%llu lock_hold_ns=%llu lock_mode=%s tlb_flushes=%llu",
		  __entry->seq, ptw_show_kind(__entry->kind),
		  __entry->walker_pid, __entry->walker_comm,
		  __entry->target_tgid, __entry->pte_tables,
		  __entry->pte_slots, __entry->call_ns, __entry->walk_ns,
		  __entry->lock_hold_ns, ptw_show_mode(__entry->lock_mode),
		  __entry->tlb_flushes)
);

TRACE_EVENT(stall,

	TP_PROTO(u32 kind, u64 walk_seq, pid_t waiter_pid,
		 const char *waiter_comm, pid_t target_tgid, u64 wait_ns,
		 u32 write, pid_t walker_pid),

	TP_ARGS(kind, walk_seq, waiter_pid, waiter_comm, target_tgid, wait_ns,
		write, walker_pid),

	TP_STRUCT__entry(
		__field(u64, walk_seq)
		__field(u64, wait_ns)
		__field(u32, kind)
		__field(u32, write)
		__field(pid_t, waiter_pid)
		__field(pid_t, target_tgid)
		__field(pid_t, walker_pid)
		__array(char, waiter_comm, TASK_COMM_LEN)
	),

	TP_fast_assign(
		__entry->walk_seq = walk_seq;
		__entry->wait_ns = wait_ns;
		__entry->kind = kind;
		__entry->write = write;
		__entry->waiter_pid = waiter_pid;
		__entry->target_tgid = target_tgid;
		__entry->walker_pid = walker_pid;
		memcpy(__entry->waiter_comm, waiter_comm, TASK_COMM_LEN);
	),

	TP_printk("walk_seq=%llu kind=%s waiter_pid=%d waiter_comm=%s target_tgid=%d wait_ns=%llu mode=%s walker_pid=%d",
		  __entry->walk_seq, ptw_show_kind(__entry->kind),
		  __entry->waiter_pid, __entry->waiter_comm,
		  __entry->target_tgid, __entry->wait_ns,
		  __entry->write ? "write" : "read", __entry->walker_pid)
);

#endif /* _PTWALK_TRACE_H */

/* This part must be outside protection */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE ptwalk_trace
#include <trace/define_trace.h>

// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk monitor's in-kernel half: the three mmap_lock tracepoints paired
 * per (task, mm), as the userspace pairing does (LockPairer), so that only
 * what the monitor keeps crosses to userspace (ptwalk/bpf_lock_record.h).
 * At hundreds of thousands of lock events a second on a busy host, that is
 * a few records a second instead of every event.
 *
 * The kernel structures' field offsets are relocated against the running
 * kernel's BTF (CO-RE).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "ptwalk/bpf_lock_record.h"

char LICENSE[] SEC("license") = "GPL";

/* set by the loader before the program is loaded */
const volatile __u64 min_hold_ns = 1000000;
const volatile __u64 min_wait_ns = 1000;
const volatile __u32 prober_tid = 0;
/* set by the loader once the three programs are attached: until then a
 * task's events are seen in part (start_locking's program attached,
 * released's not yet: a hold with no end, closed by a later trylock as
 * if it were a downgrade), and nothing is paired */
volatile __u32 armed = 0;

/* the kernel's types, only the fields read here (relocated by name) */
typedef struct {
	int counter;
} atomic_t;

struct mm_struct {
	struct task_struct *owner; /* CONFIG_MEMCG */
	atomic_t mm_users;
} __attribute__((preserve_access_index));

struct task_struct {
	struct mm_struct *mm;
	int tgid;
	unsigned int __state;
} __attribute__((preserve_access_index));

/* include/linux/sched.h: a task fork() is still building */
#define PTW_TASK_NEW 0x00000800

enum phase { IDLE = 0, WAITING = 1, HOLDING = 2 };

struct state {
	__u64 mm;
	__u64 since;
	__u8 phase;
	__u8 write;
	__u8 foreign;
	__u8 teardown; /* mm_users was 0 when the lock was taken */
	__u8 pad[4];
};

/* a task's states, one per mm it locks at once: its own and, in a walk,
 * the target's (a third mm at once is counted unpaired, not tracked) */
#define PTW_SLOTS 2
struct task_states {
	struct state s[PTW_SLOTS];
};

/* in the task itself (freed with it): no hashing, no eviction */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_states);
} states SEC(".maps");

/* mm -> end of its latest hold >= min_hold: a wait that began before it
 * overlapped a long hold */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u64);
} long_end SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} records SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PTW_BPF_NSTATS);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void count(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &slot);

	if (v)
		*v += 1;
}

static __always_inline __u32 owner_tgid(struct mm_struct *mm)
{
	struct task_struct *owner;

	if (!bpf_core_field_exists(mm->owner))
		return 0;
	owner = BPF_CORE_READ(mm, owner);
	if (!owner)
		return 0;
	/* fork() copies the parent's mm into the child's while the child
	 * still carries the parent's tgid: no fact until it is a process */
	if (bpf_core_field_exists(owner->__state) && (BPF_CORE_READ(owner, __state) & PTW_TASK_NEW))
		return 0;
	return (__u32)BPF_CORE_READ(owner, tgid);
}

static __always_inline void emit(__u8 kind, __u64 start, __u64 end, __u64 mm, __u8 write,
				 __u8 success, __u8 foreign, __u8 teardown)
{
	struct ptw_bpf_rec *r;
	__u64 id = bpf_get_current_pid_tgid();

	r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
	if (!r) {
		count(PTW_BPF_DROPPED);
		return;
	}
	r->start_ns = start;
	r->end_ns = end;
	r->mm = mm;
	r->tgid = id >> 32;
	r->tid = (__u32)id;
	/* a torn-down mm's owner pointer is stale or NULL: no fact */
	r->owner_tgid = (kind == PTW_BPF_HOLD || kind == PTW_BPF_FOREIGN_ACQUIRE) && !teardown
				? owner_tgid((struct mm_struct *)mm)
				: 0;
	/* no owner to read: a task's own mm (current->mm) is its process's */
	if (!r->owner_tgid && kind == PTW_BPF_HOLD && !foreign)
		r->owner_tgid = r->tgid;
	r->kind = kind;
	r->write = write;
	r->success = success;
	r->foreign = foreign;
	r->teardown = teardown;
	__builtin_memset(r->pad, 0, sizeof(r->pad));
	bpf_ringbuf_submit(r, 0);
	count(PTW_BPF_RECORDS);
}

/* The current task's state for mm: its slot, else (create) an idle
 * slot taken for mm; NULL when both slots are busy with other mms. */
static __always_inline struct state *state_of(struct task_struct *t, __u64 mm, int create)
{
	struct task_states *ts;
	int i, idle = -1;

	ts = bpf_task_storage_get(&states, t, 0, create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	if (!ts)
		return 0;
	for (i = 0; i < PTW_SLOTS; i++) {
		if (ts->s[i].mm == mm)
			return &ts->s[i];
		if (ts->s[i].phase == IDLE && idle < 0)
			idle = i;
	}
	if (!create || idle < 0)
		return 0;
	/* bounded for the verifier */
	if (idle >= PTW_SLOTS)
		return 0;
	ts->s[idle].mm = mm;
	ts->s[idle].phase = IDLE;
	return &ts->s[idle];
}

/* the end of a hold: handed on when long (and remembered for the waits
 * behind it), or, for another process's mm, its end told */
static __always_inline void hold_ended(struct state *s, __u64 mm, __u64 now)
{
	if (now - s->since >= min_hold_ns) {
		bpf_map_update_elem(&long_end, &mm, &now, BPF_ANY);
		emit(PTW_BPF_HOLD, s->since, now, mm, s->write, 1, s->foreign, s->teardown);
	} else if (s->foreign) {
		emit(PTW_BPF_FOREIGN_RELEASE, s->since, now, mm, s->write, 1, 1, 0);
	}
}

/*
 * Raw tracepoints: the tracepoints' arguments as they are called, before
 * any record is formatted, and apart from perf (a program on a perf
 * tracepoint event would, by its return value, filter what every other
 * perf user of that tracepoint sees). The arguments changed in 6.14 ("mm:
 * mmap_lock: optimize mmap_lock tracepoints"): (mm, memcg_path, write[,
 * success]) before, 6.1 and 6.12 included, (mm, write[, success]) after;
 * each event has a program per form and the loader loads
 * the one the running kernel's BTF prototype matches. Programs are named
 * ptw_* (a kernel object name has 15 characters): bpftool shows whose.
 */
static __always_inline int on_start_locking(__u64 mm, __u8 write)
{
	__u64 now = bpf_ktime_get_ns();
	struct state *s;

	if (!armed)
		return 0;
	count(PTW_BPF_EVENTS);
	s = state_of(bpf_get_current_task_btf(), mm, 1);
	if (!s) {
		count(PTW_BPF_UNPAIRED); /* a third mm at once */
		return 0;
	}
	if (s->phase != IDLE)
		count(PTW_BPF_UNPAIRED); /* a lost acquire_returned or released */
	s->phase = WAITING;
	s->write = write;
	s->since = now;
	return 0;
}

static __always_inline int on_acquire_returned(__u64 mm, __u8 write, __u8 success)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct task_struct *t = bpf_get_current_task_btf();
	struct state *s;

	if (!armed)
		return 0;
	count(PTW_BPF_EVENTS);
	s = state_of(t, mm, 1);
	if (!s) {
		count(PTW_BPF_UNPAIRED);
		return 0;
	}
	if (s->phase == WAITING) {
		__u64 *le;

		if (now - s->since >= min_wait_ns && tid != prober_tid &&
		    (le = bpf_map_lookup_elem(&long_end, &mm)) && s->since < *le) {
			count(PTW_BPF_WAITS_BEHIND);
			emit(PTW_BPF_WAIT, s->since, now, mm, write, success, 0, 0);
		}
	} else if (s->phase == HOLDING && s->write && !write) {
		/* mmap_write_downgrade(): the write hold ends, a read hold starts */
		hold_ended(s, mm, now);
	} else {
		count(PTW_BPF_UNPAIRED); /* a lost start_locking or released */
	}
	if (!success) {
		s->phase = IDLE;
		return 0;
	}
	s->phase = HOLDING;
	s->write = write;
	s->since = now;
	s->foreign = (__u64)t->mm == mm ? PTW_MM_OWN : t->mm ? PTW_MM_OTHER : PTW_MM_NONE;
	/* exit_mmap() runs once mm_users is 0, in whichever task dropped
	 * the last reference: the owner's exit or exec, or a /proc reader */
	s->teardown = s->foreign != PTW_MM_OWN &&
		      BPF_CORE_READ((struct mm_struct *)mm, mm_users.counter) == 0;
	if (tid == prober_tid)
		emit(PTW_BPF_PROBE, now, now, mm, write, 1, s->foreign, 0);
	else if (s->foreign)
		emit(PTW_BPF_FOREIGN_ACQUIRE, now, now, mm, write, 1, 1, 0);
	return 0;
}

static __always_inline int on_released(__u64 mm)
{
	__u64 now = bpf_ktime_get_ns();
	struct state *s;

	if (!armed)
		return 0;
	count(PTW_BPF_EVENTS);
	s = state_of(bpf_get_current_task_btf(), mm, 0);
	if (!s || s->phase != HOLDING) {
		count(PTW_BPF_UNPAIRED);
		if (s)
			s->phase = IDLE;
		return 0;
	}
	hold_ended(s, mm, now);
	s->phase = IDLE;
	return 0;
}

/* (mm, memcg_path, write[, success]): up to the 6.8-era change */
SEC("raw_tp/mmap_lock_start_locking")
int ptw_start_path(__u64 *ctx)
{
	return on_start_locking(ctx[0], (__u8)ctx[2]);
}

SEC("raw_tp/mmap_lock_acquire_returned")
int ptw_acquire_path(__u64 *ctx)
{
	return on_acquire_returned(ctx[0], (__u8)ctx[2], (__u8)ctx[3]);
}

SEC("raw_tp/mmap_lock_released")
int ptw_release_path(__u64 *ctx)
{
	return on_released(ctx[0]);
}

/* (mm, write[, success]): since */
SEC("raw_tp/mmap_lock_start_locking")
int ptw_start(__u64 *ctx)
{
	return on_start_locking(ctx[0], (__u8)ctx[1]);
}

SEC("raw_tp/mmap_lock_acquire_returned")
int ptw_acquire(__u64 *ctx)
{
	return on_acquire_returned(ctx[0], (__u8)ctx[1], (__u8)ctx[2]);
}

SEC("raw_tp/mmap_lock_released")
int ptw_release(__u64 *ctx)
{
	return on_released(ctx[0]);
}

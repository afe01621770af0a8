/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ptwalk selftests: shared helpers, one file each: the system and options
 * (ptwalk_sys.c), mappings per
 * backing (ptwalk_map.c), /proc parsing, pagemap and PAGEMAP_SCAN
 * (ptwalk_proc.c), budgets (ptwalk_budget.c), walk targets and their timing
 * (ptwalk_target.c), fits (ptwalk_fit.h).
 * Modelled on tools/testing/selftests/mm/vm_util.[ch]. The tests themselves
 * run on the kernel's kselftest_harness.h (ptwalk_test.h); these helpers
 * report through their return values and why buffers, diagnostics through
 * kselftest.h's ksft_print_msg().
 */
#ifndef PTWALK_UTIL_H
#define PTWALK_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptwalk_fit.h"

/* ---- system -------------------------------------------------------- */

extern size_t ptw_page_size;
extern size_t ptw_pmd_size;

void ptw_init(void);		/* page sizes, line-buffered stdout */
uint64_t ptw_now_ns(void);	/* CLOCK_MONOTONIC */
uint64_t ptw_cpu_ns(void);	/* CLOCK_THREAD_CPUTIME_ID */
/* 'y', 'm', 'n' or '?' (config unreadable) for e.g. "CONFIG_MEM_SOFT_DIRTY" */
char ptw_kconfig(const char *opt);
/* THP usable for MADV_HUGEPAGE? If not, why says so. */
bool ptw_thp_usable(char *why, size_t len);
/* soft-dirty tracked? Checked by behaviour (fresh written page, bit 55). */
bool ptw_soft_dirty_usable(char *why, size_t len);
/* PAGEMAP_SCAN ioctl present (6.7+)? */
bool ptw_pagemap_scan_usable(char *why, size_t len);
/* host class: slug of cpu model, cpu count, "-vm" when hypervisor */
void ptw_host_class(char *buf, size_t len);

/* ---- options (env first, then argv) -------------------------------- */

struct ptw_opts {
	size_t min_mb;		/* smallest cost size; PTWALK_MIN_MB, --min-mb */
	unsigned int points;	/* sizes min << 0 .. min << (points-1) */
	unsigned int reps;	/* repetitions per size; PTWALK_REPS, --reps */
	size_t small_mb;	/* correctness tests; PTWALK_SMALL_MB */
	unsigned int walks;	/* stall test walks; PTWALK_WALKS */
	size_t thp_mb;		/* THP ratio test size; PTWALK_THP_MB */
	unsigned int replicas;	/* children per cost size; PTWALK_REPLICAS */
	bool long_mode;		/* PTWALK_LONG=1, --long */
	const char *budget;	/* --budget FILE, else PTWALK_BUDGET */
	const char *out;	/* --out FILE (calibration) */
};

/* every option; an unknown one prints the usage and exits 1 */
void ptw_parse_opts(int argc, char **argv, struct ptw_opts *o);
/*
 * The test programs' options: ptwalk's are taken out of argv (argc
 * updated), anything else is left for the kselftest harness.
 */
void ptw_take_opts(int *argc, char **argv, struct ptw_opts *o);
/* the test programs' options, set by ptw_take_opts() before the harness runs */
extern struct ptw_opts ptw_opts;
static inline size_t ptw_max_mb(const struct ptw_opts *o)
{
	return o->min_mb << (o->points - 1);
}

/* ---- mappings per backing ------------------------------------------ */

enum ptw_backing { PTW_ANON, PTW_THP, PTW_SHMEM, PTW_FILE, PTW_NR_BACKINGS };

const char *ptw_backing_name(int b);

struct ptw_region {
	int backing;
	char *addr;
	size_t size;
	char *resv;		/* PROT_NONE reservation around it (guards) */
	size_t resv_size;
	int fd;
};

/*
 * Map size bytes of the given backing, between PROT_NONE guards so it
 * never merges with a neighbour VMA; THP regions are PMD aligned and
 * MADV_HUGEPAGE, all others MADV_NOHUGEPAGE (4 KiB PTEs).
 * Returns 0, or -1 with why filled.
 */
int ptw_region_map(struct ptw_region *r, int backing, size_t size,
		   char *why, size_t len);
void ptw_region_unmap(struct ptw_region *r);
/* write (or read) one byte in every page of [addr, addr+len) */
void ptw_touch(char *addr, size_t len, bool write);
/* force a TLB flush of the region (mprotect round trip, young bits kept) */
int ptw_region_flush_tlb(struct ptw_region *r);

/* ---- /proc --------------------------------------------------------- */

struct ptw_smaps {
	unsigned long start, end;
	uint64_t rss_kb, referenced_kb, anonymous_kb, anon_huge_kb;
	bool found;
};

/* the smaps entry of the VMA containing addr */
int ptw_smaps_vma(const void *addr, struct ptw_smaps *out);
/* sum of Rss over all VMAs of /proc/self/smaps */
int ptw_smaps_rss_sum(uint64_t *rss_kb);
int ptw_smaps_rollup(struct ptw_smaps *out);
/* write val ("1".."5") to /proc/self/clear_refs */
int ptw_clear_refs(const char *val);

#define PM_PRESENT	(1ULL << 63)
#define PM_SWAP		(1ULL << 62)
#define PM_SOFT_DIRTY	(1ULL << 55)

int ptw_pagemap_fd(void);	/* cached fd of /proc/self/pagemap */
int ptw_pagemap_read(const void *addr, size_t npages, uint64_t *ents);

/* The walk triggers and the PAGEMAP_SCAN uapi, shared with the module's
 * test walker and ptwalk's scanner (lib/ptwalk_trigger.h).
 */
#include "ptwalk_trigger.h"

/* regions of [start,end) matching PAGE_IS_PRESENT; count or -errno */
long ptw_pagemap_scan_present(const void *start, const void *end,
			      struct page_region *vec, size_t vec_len,
			      uint64_t *walk_end);

/* ---- budgets ------------------------------------------------------- */

/* the keys and defaults: generated from results/budgets/default.json */
#include "ptwalk_budget_defaults.h"

#define PTW_BUDGET_ENUM(e, key, def) e,
enum ptw_budget_key {
	PTW_BUDGET_KEYS(PTW_BUDGET_ENUM)
	PB_NR_KEYS
};
#undef PTW_BUDGET_ENUM

struct ptw_budget {
	double v[PB_NR_KEYS];
	char source[512];
};

extern const char *const ptw_budget_keys[PB_NR_KEYS];
extern const double ptw_budget_defaults[PB_NR_KEYS];

/*
 * Load a budget: explicit path (--budget), else $PTWALK_BUDGET, else
 * <exe dir>/budgets/<host class>.budget, else <exe dir>/budgets/default.budget,
 * else built-in defaults (== budgets/default.budget, both generated from
 * results/budgets/default.json). Keys missing from a
 * file keep their default. Returns 0 or -1 (unreadable/malformed explicit
 * file: a test must fail, never silently fall back).
 */
int ptw_budget_load(struct ptw_budget *b, const char *path);

/* ---- walks and their timing --------------------------------------- */

enum ptw_walker {
	PW_CLEAR_REFS, PW_SMAPS, PW_SMAPS_ROLLUP, PW_PAGEMAP, PW_PAGEMAP_SCAN,
	PW_NR
};

extern const char *const ptw_walker_names[PW_NR];
extern const enum ptw_budget_key ptw_walker_budget[PW_NR];

/*
 * A walk target: a forked child that mapped and populated a region of
 * the given backing and then waits; walks go through /proc/<pid>/, as a
 * monitor (cAdvisor) would do it.
 */
#include <sys/types.h>
struct ptw_target {
	pid_t pid;
	int backing;
	char *addr;		/* in the child */
	size_t size;
	uint64_t anon_huge_kb;	/* AnonHugePages of the child's VMA */
	int clear_fd, pagemap_fd;
};

int ptw_target_spawn(struct ptw_target *t, int backing, size_t size,
		     char *why, size_t len);
void ptw_target_kill(struct ptw_target *t);
/*
 * One walk of kind w over target t (whole process, or its region for
 * pagemap/PAGEMAP_SCAN). Returns the CPU time of the walking thread in ns
 * (CLOCK_THREAD_CPUTIME_ID: the walk runs in our syscall, and CPU time
 * does not count time we sat preempted on this shared 2-vCPU box), or 0
 * on error; the wall time is left in ptw_last_wall_ns.
 */
uint64_t ptw_walk_target(int w, const struct ptw_target *t);
extern uint64_t ptw_last_wall_ns;
/* which clock ptw_walk_target() reports (falls back to wall time when
 * the thread CPU clock is tick-grained); a description for diagnostics
 */
const char *ptw_cost_clock(void);

struct ptw_cost_point {
	size_t ptes;
	uint64_t ns[PW_NR];	/* min over reps */
	uint64_t med[PW_NR];	/* median over reps */
	uint64_t base[PW_NR];	/* min over reps, same walk of a process
				 * with a 1-page region: the fixed cost
				 */
};

/*
 * For each of o->points sizes (min_mb << k), spawn a target with that much
 * populated 4 KiB anon memory; then time every walker over every target
 * o->reps times (after one warm-up), sizes interleaved per repetition;
 * plus a baseline target with a single page for the fixed per-walk cost.
 * pts must hold o->points entries. attempt: the measurement's number,
 * which rotates the order the sizes are populated in (so that measurements
 * one after the other do not get each size the same memory back).
 * Returns 0 or -1 with why.
 */
/*
 * How many times a timing check measures before it fails:
 * PTWALK_ATTEMPTS (1..100), else dflt (also when it does not parse).
 */
unsigned int ptw_attempts(unsigned int dflt);

int ptw_measure_costs(const struct ptw_opts *o, unsigned int attempt,
		      struct ptw_cost_point *pts, bool with_scan, char *why,
		      size_t len);

/* opt-in cold-cache walks (PTWALK_FLUSH_MB=N|llc): a buffer read through
 * before each timed walk; init returns its size (0: off), flush whether
 * it flushed
 */
size_t ptw_cache_flush_init(void);
bool ptw_cache_flush(void);

#endif /* PTWALK_UTIL_H */

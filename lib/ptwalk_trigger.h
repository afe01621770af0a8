/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ptwalk_trigger: the system calls that make the kernel walk a process's
 * page tables, in one place for the selftests, the module's test walker
 * (module/tests/walker.c) and ptwalk's scanner (userspace/procs): writing
 * clear_refs, reading smaps/smaps_rollup (or any /proc text) to its end,
 * reading pagemap entries of a range, and the PAGEMAP_SCAN ioctl, with its
 * uapi declared once for headers older than 6.7. Plain C99, no state; the
 * callers open the /proc files (of a target or of themselves) and time.
 */
#ifndef PTWALK_TRIGGER_H
#define PTWALK_TRIGGER_H

#include <stddef.h>
#include <stdint.h>
#include <linux/fs.h>
#include <linux/types.h>
#include <sys/ioctl.h>

#ifdef __cplusplus
extern "C" {
#endif

/* PAGEMAP_SCAN uapi (include/uapi/linux/fs.h, 6.7+) */
#ifndef PAGEMAP_SCAN
#define PAGEMAP_SCAN	_IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_WPALLOWED	(1 << 0)
#define PAGE_IS_WRITTEN		(1 << 1)
#define PAGE_IS_FILE		(1 << 2)
#define PAGE_IS_PRESENT		(1 << 3)
#define PAGE_IS_SWAPPED		(1 << 4)
#define PAGE_IS_PFNZERO		(1 << 5)
#define PAGE_IS_HUGE		(1 << 6)
#define PAGE_IS_SOFT_DIRTY	(1 << 7)
struct page_region {
	__u64 start;
	__u64 end;
	__u64 categories;
};

struct pm_scan_arg {
	__u64 size;
	__u64 flags;
	__u64 start;
	__u64 end;
	__u64 walk_end;
	__u64 vec;
	__u64 vec_len;
	__u64 max_pages;
	__u64 category_inverted;
	__u64 category_mask;
	__u64 category_anyof_mask;
	__u64 return_mask;
};
#endif

/* Called after every read of a walk (NULL: none); the test walker kills
 * its target there to race a walk with an exit.
 */
typedef void (*ptw_trigger_each_fn)(void *arg);

/*
 * clear_refs: writes `value` ("1".."5", a newline allowed) to an open
 * /proc/PID/clear_refs; EINTR is retried. 0, or the errno (EIO: short).
 */
int ptw_trigger_clear_refs(int fd, const char *value);

/*
 * A /proc text file (smaps, smaps_rollup, numa_maps, ...) read to its end;
 * EINTR is retried. Each read asks for the rest of buf (a seq_file drops
 * mmap_lock between reads: their size shapes the walk); once less than 64
 * KiB is left, reads go to the last 64 KiB (or all of a smaller buf). With
 * keep, *kept is how much of buf holds the text from its start. The bytes
 * read, or -errno.
 */
long long ptw_trigger_read_all(int fd, char *buf, size_t len, int keep, size_t *kept,
			       ptw_trigger_each_fn each, void *arg);

/*
 * The pagemap entries of [start, end) (bytes of address space) of an open
 * /proc/PID/pagemap, in preads of at most len bytes into buf: when buf
 * holds them all they land in order, else each read reuses buf. The bytes
 * read (8 per page, short when the file ends early), or -errno.
 */
long long ptw_trigger_pagemap(int fd, uint64_t start, uint64_t end, void *buf, size_t len,
			      ptw_trigger_each_fn each, void *arg);

/*
 * One PAGEMAP_SCAN ioctl on an open pagemap fd (arg->size is set here);
 * EINTR is retried. The number of regions in arg->vec, or -errno.
 */
long ptw_trigger_pagemap_scan(int fd, struct pm_scan_arg *arg);

#ifdef __cplusplus
}
#endif

#endif

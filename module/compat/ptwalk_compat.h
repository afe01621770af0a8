/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ptwalk compat layer: every kernel difference lives here, behind one
 * stable name.  Callers never test LINUX_VERSION_CODE themselves.
 */
#ifndef _PTWALK_COMPAT_H
#define _PTWALK_COMPAT_H

#include <linux/version.h>
#include <linux/types.h>
#include <linux/fs.h>

struct mm_struct;

/*
 * mmap_lock tracepoint prototypes.
 * 5.11: 2b5067a8143e "mm: mmap_lock: add tracepoints around lock acquisition"
 *       (mm, const char *memcg_path, bool write[, bool success]).
 * 6.14: "mm: mmap_lock: optimize mmap_lock tracepoints" dropped memcg_path:
 *       (mm, bool write[, bool success]).
 * Which one this kernel has is read from its own event header by Kbuild
 * (PTW_MMAP_LOCK_MEMCG_PATH), not from the version number, so a backport
 * is followed; and the probes are registered with the kernel's typed
 * register_trace_*(), so a prototype we did not foresee fails the build.
 */
#ifdef PTW_MMAP_LOCK_MEMCG_PATH
#define PTW_MMAP_LOCK_ARGS \
	struct mm_struct *mm, const char *memcg_path, bool write
#define PTW_MMAP_LOCK_ACQ_ARGS \
	struct mm_struct *mm, const char *memcg_path, bool write, bool success
#else
#define PTW_MMAP_LOCK_ARGS \
	struct mm_struct *mm, bool write
#define PTW_MMAP_LOCK_ACQ_ARGS \
	struct mm_struct *mm, bool write, bool success
#endif

/*
 * PAGEMAP_SCAN ioctl on /proc/PID/pagemap.
 * 6.7: 52526ca7fdb9 "fs/proc/task_mmu: implement IOCTL to get and optionally
 *      clear info about PTEs".  do_pagemap_cmd() is the ioctl handler of the
 *      pagemap file; only PAGEMAP_SCAN walks, so filter on cmd.
 */
static inline bool ptw_is_pagemap_scan_cmd(unsigned int cmd)
{
#ifdef PAGEMAP_SCAN
	return cmd == PAGEMAP_SCAN;
#else
	return false;	/* pre-6.7: the hooked symbol does not exist either */
#endif
}

#endif /* _PTWALK_COMPAT_H */

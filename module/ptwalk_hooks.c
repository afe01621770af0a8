// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk hooks: kretprobes on the /proc walk entry points, kprobes on the
 * per-PMD-range callbacks and on the proc file release functions.  Every
 * symbol is resolved at load time; a missing one disables the kinds that
 * need it and is reported, it never fails the load.
 *
 * Timing follows samples/kprobes/kretprobe_example.c: the entry handler
 * stores ktime in ri->data, the return handler computes the delta.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/kprobes.h>
#include <linux/ptrace.h>
#include <linux/seq_file.h>
#include <linux/pagewalk.h>
#include <linux/timekeeping.h>
#include <linux/cpumask.h>
#include <linux/uaccess.h>
#include <linux/mm_types.h>

#include "ptwalk.h"
#include "compat/ptwalk_compat.h"

unsigned int ptw_kinds_active;
bool ptw_walk_timed;

static inline bool ptw_kind_on(enum ptw_kind kind)
{
	return READ_ONCE(ptw_kinds_active) & BIT(kind);
}

/*
 * Arguments of the hooked (often static) functions are read with
 * get_kernel_nofault(): a later kernel that changes a type makes us skip
 * the call and count it (arg_faults), not dereference a stale layout.
 */
#define PTW_READ(dst, src) ({						\
	bool __ok = !get_kernel_nofault(dst, src);			\
	if (!__ok)							\
		atomic64_inc(&ptw_stats.arg_faults);			\
	__ok; })

/* ---- walk calls: one call = part of (or all of) one walk ------------- */

static int ptw_call_entry(enum ptw_kind kind, unsigned long key,
			  const struct file *file, bool pos_valid, u64 pos,
			  struct kretprobe_instance *ri)
{
	struct ptw_ri *d = (struct ptw_ri *)ri->data;

	if (!ptw_kind_on(kind))
		return 1;
	d->t0 = ptw_now_ns();
	d->key = key;
	d->ppos = NULL;
	d->slot = ptw_call_enter(kind, key, file, d->t0, pos_valid, pos);
	return d->slot < 0 ? 1 : 0;
}
NOKPROBE_SYMBOL(ptw_call_entry);

static int ptw_call_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct ptw_ri *d = (struct ptw_ri *)ri->data;
	loff_t pos = 0;
	bool valid = d->ppos && !get_kernel_nofault(pos, d->ppos);

	ptw_call_exit(d->slot, d->t0, ptw_now_ns(), valid, pos);
	return 0;
}
NOKPROBE_SYMBOL(ptw_call_ret);

/* ssize_t clear_refs_write(struct file *, const char __user *, size_t, loff_t *) */
static int ptw_clear_refs_entry(struct kretprobe_instance *ri,
				struct pt_regs *regs)
{
	struct file *file = (struct file *)regs_get_kernel_argument(regs, 0);

	return ptw_call_entry(PTW_CLEAR_REFS, (unsigned long)current, file,
			      false, 0, ri);
}
NOKPROBE_SYMBOL(ptw_clear_refs_entry);

/* int show_smap(struct seq_file *m, void *v): v is the VMA shown */
static int ptw_show_smap_entry(struct kretprobe_instance *ri,
			       struct pt_regs *regs)
{
	struct seq_file *m = (struct seq_file *)regs_get_kernel_argument(regs, 0);
	struct vm_area_struct *vma =
		(struct vm_area_struct *)regs_get_kernel_argument(regs, 1);
	const struct file *file;
	unsigned long start;

	if (!ptw_kind_on(PTW_SMAPS) || !PTW_READ(file, &m->file) ||
	    !PTW_READ(start, &vma->vm_start))
		return 1;
	return ptw_call_entry(PTW_SMAPS, (unsigned long)file, file, true,
			      start, ri);
}
NOKPROBE_SYMBOL(ptw_show_smap_entry);

/* int show_smaps_rollup(struct seq_file *m, void *v): one call, one walk */
static int ptw_show_rollup_entry(struct kretprobe_instance *ri,
				 struct pt_regs *regs)
{
	struct seq_file *m = (struct seq_file *)regs_get_kernel_argument(regs, 0);
	const struct file *file;

	if (!ptw_kind_on(PTW_SMAPS_ROLLUP) || !PTW_READ(file, &m->file))
		return 1;
	return ptw_call_entry(PTW_SMAPS_ROLLUP, (unsigned long)current, file,
			      false, 0, ri);
}
NOKPROBE_SYMBOL(ptw_show_rollup_entry);

/* ssize_t pagemap_read(struct file *, char __user *, size_t, loff_t *) */
static int ptw_pagemap_read_entry(struct kretprobe_instance *ri,
				  struct pt_regs *regs)
{
	struct file *file = (struct file *)regs_get_kernel_argument(regs, 0);
	loff_t *ppos = (loff_t *)regs_get_kernel_argument(regs, 3);
	struct ptw_ri *d = (struct ptw_ri *)ri->data;
	loff_t pos;
	int skip;

	if (!ptw_kind_on(PTW_PAGEMAP) || !PTW_READ(pos, ppos))
		return 1;
	skip = ptw_call_entry(PTW_PAGEMAP, (unsigned long)file, file, true,
			      pos, ri);
	d->ppos = ppos;
	return skip;
}
NOKPROBE_SYMBOL(ptw_pagemap_read_entry);

/* long do_pagemap_cmd(struct file *, unsigned int cmd, unsigned long arg) */
static int ptw_pagemap_cmd_entry(struct kretprobe_instance *ri,
				 struct pt_regs *regs)
{
	struct file *file = (struct file *)regs_get_kernel_argument(regs, 0);
	unsigned int cmd = regs_get_kernel_argument(regs, 1);

	if (!ptw_is_pagemap_scan_cmd(cmd))
		return 1;
	return ptw_call_entry(PTW_PAGEMAP_SCAN, (unsigned long)current, file,
			      false, 0, ri);
}
NOKPROBE_SYMBOL(ptw_pagemap_cmd_entry);

/* ---- the walk proper: walk_page_range() / walk_page_vma() ------------ */

static int ptw_walk_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct ptw_ri *d = (struct ptw_ri *)ri->data;

	d->slot = ptw_walk_proper_enter(ptw_now_ns());
	return d->slot < 0 ? 1 : 0;
}
NOKPROBE_SYMBOL(ptw_walk_entry);

static int ptw_walk_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct ptw_ri *d = (struct ptw_ri *)ri->data;

	ptw_walk_proper_exit(d->slot, ptw_now_ns());
	return 0;
}
NOKPROBE_SYMBOL(ptw_walk_ret);

/* ---- file lifetime: open creates the per-file walk, release ends it -- */

static int ptw_open_entry(enum ptw_kind kind, struct kretprobe_instance *ri,
			  struct pt_regs *regs)
{
	/* int xxx_open(struct inode *inode, struct file *file) */
	struct file *file = (struct file *)regs_get_kernel_argument(regs, 1);
	struct ptw_ri *d = (struct ptw_ri *)ri->data;

	if (!ptw_kind_on(kind))
		return 1;
	d->key = (unsigned long)file;
	d->slot = ptw_walk_open(kind, d->key, file);
	return d->slot < 0 ? 1 : 0;
}
NOKPROBE_SYMBOL(ptw_open_entry);

static int ptw_open_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct ptw_ri *d = (struct ptw_ri *)ri->data;

	if (regs_return_value(regs))	/* open failed: no release will come */
		ptw_walk_close(d->key, false);
	return 0;
}
NOKPROBE_SYMBOL(ptw_open_ret);

static int ptw_smaps_open_entry(struct kretprobe_instance *ri,
				struct pt_regs *regs)
{
	return ptw_open_entry(PTW_SMAPS, ri, regs);
}
NOKPROBE_SYMBOL(ptw_smaps_open_entry);

static int ptw_pagemap_open_entry(struct kretprobe_instance *ri,
				  struct pt_regs *regs)
{
	return ptw_open_entry(PTW_PAGEMAP, ri, regs);
}
NOKPROBE_SYMBOL(ptw_pagemap_open_entry);

/* int xxx_release(struct inode *inode, struct file *file) */
static int ptw_release_pre(struct kprobe *p, struct pt_regs *regs)
{
	ptw_walk_close(regs_get_kernel_argument(regs, 1), true);
	return 0;
}
NOKPROBE_SYMBOL(ptw_release_pre);

/* int xxx_pte_range(pmd_t *pmd, unsigned long addr, unsigned long end,
 *		     struct mm_walk *walk): only the two integers are used
 */
static int ptw_pte_range_pre(struct kprobe *p, struct pt_regs *regs)
{
	ptw_pte_range(regs_get_kernel_argument(regs, 1),
		      regs_get_kernel_argument(regs, 2));
	return 0;
}
NOKPROBE_SYMBOL(ptw_pte_range_pre);

#define KRP_OPT(_sym, _kinds, _entry, _ret, _req)			\
	{ .sym = _sym, .kinds = _kinds, .required = _req,		\
	  .krp = { .entry_handler = _entry, .handler = _ret,		\
		   .data_size = sizeof(struct ptw_ri) } }
#define KRP(_sym, _kinds, _entry, _ret) KRP_OPT(_sym, _kinds, _entry, _ret, true)
/* the VMA-lock view's kretprobes: a writer's wait or lock_next_vma() */
union ptw_vma_data {
	struct ptw_ri call;
	struct ptw_vma_ri wait;
};

#define KRP_VMA(_sym, _entry, _ret)					\
	{ .sym = _sym, .kinds = PTW_ALL_KINDS, .vma = true,		\
	  .krp = { .entry_handler = _entry, .handler = _ret,		\
		   .data_size = sizeof(union ptw_vma_data) } }

struct ptw_krp_hook ptw_krp_hooks[] = {
	KRP("clear_refs_write", BIT(PTW_CLEAR_REFS),
	    ptw_clear_refs_entry, ptw_call_ret),
	KRP("show_smap", BIT(PTW_SMAPS), ptw_show_smap_entry, ptw_call_ret),
	KRP("show_smaps_rollup", BIT(PTW_SMAPS_ROLLUP),
	    ptw_show_rollup_entry, ptw_call_ret),
	KRP("pagemap_read", BIT(PTW_PAGEMAP), ptw_pagemap_read_entry,
	    ptw_call_ret),
	KRP("do_pagemap_cmd", BIT(PTW_PAGEMAP_SCAN), ptw_pagemap_cmd_entry,
	    ptw_call_ret),
	KRP("pid_smaps_open", BIT(PTW_SMAPS), ptw_smaps_open_entry,
	    ptw_open_ret),
	KRP("pagemap_open", BIT(PTW_PAGEMAP), ptw_pagemap_open_entry,
	    ptw_open_ret),
	/* the walk proper (walk_ns); without them walk_timed=0, not fatal */
	KRP_OPT("walk_page_range", PTW_ALL_KINDS, ptw_walk_entry,
		ptw_walk_ret, false),
	KRP_OPT("walk_page_vma", PTW_ALL_KINDS, ptw_walk_entry, ptw_walk_ret,
		false),
	/* the VMA-lock view (ptwalk_vma.c): optional, where built */
	KRP_VMA("__vma_start_write", ptw_vma_write_entry, ptw_vma_write_ret),
	KRP_VMA("__vma_exclude_readers_for_detach", ptw_vma_detach_entry,
		ptw_vma_write_ret),
	KRP_VMA("lock_next_vma", ptw_vma_next_entry, ptw_vma_next_ret),
};

const unsigned int ptw_nr_krp_hooks = ARRAY_SIZE(ptw_krp_hooks);

#define KP(_sym, _kinds, _pre)						\
	{ .sym = _sym, .kinds = _kinds, .required = true,		\
	  .kp = { .pre_handler = _pre } }

struct ptw_kp_hook ptw_kp_hooks[] = {
	KP("proc_map_release", BIT(PTW_SMAPS), ptw_release_pre),
	KP("pagemap_release", BIT(PTW_PAGEMAP), ptw_release_pre),
	KP("clear_refs_pte_range", BIT(PTW_CLEAR_REFS), ptw_pte_range_pre),
	KP("smaps_pte_range", BIT(PTW_SMAPS) | BIT(PTW_SMAPS_ROLLUP),
	   ptw_pte_range_pre),
	KP("pagemap_pmd_range", BIT(PTW_PAGEMAP), ptw_pte_range_pre),
	/* 6.7+ PAGEMAP_SCAN walk callback */
	KP("pagemap_scan_pmd_entry", BIT(PTW_PAGEMAP_SCAN), ptw_pte_range_pre),
};

const unsigned int ptw_nr_kp_hooks = ARRAY_SIZE(ptw_kp_hooks);

/* Batched: one grace period for all kretprobes, one for all kprobes. */
static void ptw_unregister_all(void)
{
	struct kretprobe *rps[ARRAY_SIZE(ptw_krp_hooks)];
	struct kprobe *kps[ARRAY_SIZE(ptw_kp_hooks)];
	unsigned int i;
	int nr = 0, nk = 0;

	/* stop new walks first, then the per-range and release probes */
	for (i = 0; i < ptw_nr_krp_hooks; i++)
		if (ptw_krp_hooks[i].attached)
			rps[nr++] = &ptw_krp_hooks[i].krp;
	for (i = 0; i < ptw_nr_kp_hooks; i++)
		if (ptw_kp_hooks[i].attached)
			kps[nk++] = &ptw_kp_hooks[i].kp;
	if (nr)
		unregister_kretprobes(rps, nr);
	if (nk)
		unregister_kprobes(kps, nk);
	for (i = 0; i < ptw_nr_krp_hooks; i++)
		WRITE_ONCE(ptw_krp_hooks[i].attached, false);
	for (i = 0; i < ptw_nr_kp_hooks; i++)
		WRITE_ONCE(ptw_kp_hooks[i].attached, false);
	ptw_rec_unwatch_all();
}

int ptw_hooks_init(void)
{
	unsigned int i, k, missing = 0;
	int maxactive = max_t(int, 128, 8 * num_possible_cpus());

	for (i = 0; i < ptw_nr_krp_hooks; i++) {
		struct ptw_krp_hook *h = &ptw_krp_hooks[i];

		if (!(h->kinds & ptw_kinds_mask) ||
		    (h->vma && !ptw_vma_view_built))
			continue;
		h->krp.kp.symbol_name = h->sym;
		h->krp.maxactive = maxactive;
		h->err = register_kretprobe(&h->krp);
		if (h->err) {
			if (h->required)
				missing |= h->kinds;
			pr_info("kretprobe %s: missing (%d), hook disabled\n",
				h->sym, h->err);
			continue;
		}
		h->attached = true;
		ptw_rec_watch_kretprobe(&h->krp);
		pr_info("kretprobe %s: attached (maxactive=%d)\n", h->sym,
			maxactive);
	}
	for (i = 0; i < ptw_nr_kp_hooks; i++) {
		struct ptw_kp_hook *h = &ptw_kp_hooks[i];

		if (!(h->kinds & ptw_kinds_mask) ||
		    (h->vma && !ptw_vma_view_built))
			continue;
		h->kp.symbol_name = h->sym;
		h->err = register_kprobe(&h->kp);
		if (h->err) {
			if (h->required)
				missing |= h->kinds;
			pr_info("kprobe %s: missing (%d), hook disabled\n",
				h->sym, h->err);
			continue;
		}
		h->attached = true;
		ptw_rec_watch_kprobe(&h->kp);
		pr_info("kprobe %s: attached\n", h->sym);
	}

	ptw_walk_timed = true;
	for (i = 0; i < ptw_nr_krp_hooks; i++)
		if (!ptw_krp_hooks[i].required && !ptw_krp_hooks[i].vma &&
		    !ptw_krp_hooks[i].attached)
			ptw_walk_timed = false;	/* a walk-proper timer is missing */
	if (!ptw_vma_view_built)
		pr_info("VMA-lock view: not built, this kernel's VMA locks are not reference counts (no mm->vma_writer_wait)\n");
	if (!ptw_walk_timed)
		pr_info("walk_page_range/walk_page_vma not hooked: walk_ns is not measured (walk_timed=0)\n");
	WRITE_ONCE(ptw_kinds_active, ptw_kinds_mask & ~missing);
	for (k = 0; k < PTW_NR_KINDS; k++) {
		if (!(ptw_kinds_mask & BIT(k)))
			pr_info("kind %s: not requested\n", ptw_kind_names[k]);
		else if (ptw_kinds_active & BIT(k))
			pr_info("kind %s: active\n", ptw_kind_names[k]);
		else
			pr_info("kind %s: disabled, a required hook is missing\n",
				ptw_kind_names[k]);
	}
	return 0;
}

void ptw_hooks_exit(void)
{
	WRITE_ONCE(ptw_kinds_active, 0);
	ptw_unregister_all();
}

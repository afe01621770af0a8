// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk - measure the cost of userspace-triggered page-table walks
 * (/proc/PID/clear_refs, smaps, smaps_rollup, pagemap, PAGEMAP_SCAN) and
 * the mmap_lock stalls they cause to the walked process.
 *
 * The kernel side only counts and buckets; userspace renders.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/string.h>

#include "ptwalk.h"

#define PTW_KIND_NAME(e, name) [e] = name,
const char *const ptw_kind_names[PTW_NR_KINDS] = {
	PTW_KINDS(PTW_KIND_NAME)
};
#undef PTW_KIND_NAME

unsigned int ptw_kinds_mask = PTW_ALL_KINDS;
unsigned long ptw_inject_delay_ns;
unsigned long ptw_inject_slot_late_ns, ptw_inject_mark_late_ns;
unsigned long ptw_inject_stamp_late_ns;

/* ---- kinds=clear_refs,smaps,...|all ------------------------------------ */

static int ptw_kinds_set(const char *val, const struct kernel_param *kp)
{
	char buf[128], *s, *tok;
	unsigned int mask = 0, k;

	if (strscpy(buf, val, sizeof(buf)) < 0)
		goto bad;
	s = strim(buf);
	while ((tok = strsep(&s, ",")) != NULL) {
		tok = strim(tok);
		if (!*tok)
			goto bad;
		if (!strcmp(tok, "all")) {
			mask |= PTW_ALL_KINDS;
			continue;
		}
		for (k = 0; k < PTW_NR_KINDS; k++)
			if (!strcmp(tok, ptw_kind_names[k]))
				break;
		if (k == PTW_NR_KINDS)
			goto bad;
		mask |= BIT(k);
	}
	if (!mask)
		goto bad;
	*(unsigned int *)kp->arg = mask;
	return 0;
bad:
	pr_err("invalid kinds=\"%.64s\" (comma list of clear_refs,smaps,smaps_rollup,pagemap,pagemap_scan or all)\n",
	       val);
	return -EINVAL;
}

static int ptw_kinds_get(char *buffer, const struct kernel_param *kp)
{
	unsigned int mask = *(unsigned int *)kp->arg, k;
	int len = 0;

	for (k = 0; k < PTW_NR_KINDS; k++)
		if (mask & BIT(k))
			len += scnprintf(buffer + len, PAGE_SIZE - len, "%s%s",
					 len ? "," : "", ptw_kind_names[k]);
	len += scnprintf(buffer + len, PAGE_SIZE - len, "\n");
	return len;
}

static const struct kernel_param_ops ptw_kinds_ops = {
	.set = ptw_kinds_set,
	.get = ptw_kinds_get,
};

module_param_cb(kinds, &ptw_kinds_ops, &ptw_kinds_mask, 0444);
MODULE_PARM_DESC(kinds,
		 "walk kinds to hook: comma list of clear_refs,smaps,smaps_rollup,pagemap,pagemap_scan or all (default all; load time only)");

/* ---- inject_delay_ns=N, 0..PTW_MAX_INJECT_NS --------------------------- */

static int ptw_delay_set(const char *val, const struct kernel_param *kp)
{
	unsigned long v;

	if (kstrtoul(val, 0, &v) || v > ptw_max_inject_ns()) {
		pr_err("invalid %s=\"%.32s\" (0..%lu%s)\n", kp->name, val,
		       ptw_max_inject_ns(),
		       IS_ENABLED(CONFIG_PREEMPT_RT) ?
		       ": PREEMPT_RT, the delay runs with preemption off" : "");
		return -EINVAL;
	}
	WRITE_ONCE(*(unsigned long *)kp->arg, v);
	if (v)
		pr_warn("%s=%lu: %s delayed artificially, timings are NOT natural\n",
			kp->name, v,
			kp->arg == &ptw_inject_delay_ns ?
			"every PTE table walked is" :
			"every mmap_lock wait tracked is");
	return 0;
}

static const struct kernel_param_ops ptw_delay_ops = {
	.set = ptw_delay_set,
	.get = param_get_ulong,
};

module_param_cb(inject_delay_ns, &ptw_delay_ops, &ptw_inject_delay_ns, 0644);
MODULE_PARM_DESC(inject_delay_ns,
		 "test only: busy-wait this many ns per PTE table walked (0..1000000, 0..100000 on PREEMPT_RT; default 0)");

/*
 * Test only: the decision on a wait's start runs late, as a vCPU not run
 * makes it (KERNEL-FACTS.md 26): before its slot is visible to the holders'
 * releases, or after it and before it looks at the walkers.
 */
module_param_cb(inject_slot_late_ns, &ptw_delay_ops, &ptw_inject_slot_late_ns,
		0644);
MODULE_PARM_DESC(inject_slot_late_ns,
		 "test only: busy-wait this many ns before a tracked wait's slot is published (limits as inject_delay_ns)");
module_param_cb(inject_mark_late_ns, &ptw_delay_ops, &ptw_inject_mark_late_ns,
		0644);
MODULE_PARM_DESC(inject_mark_late_ns,
		 "test only: busy-wait this many ns after a tracked wait's slot is published (limits as inject_delay_ns)");
module_param_cb(inject_stamp_late_ns, &ptw_delay_ops, &ptw_inject_stamp_late_ns,
		0644);
MODULE_PARM_DESC(inject_stamp_late_ns,
		 "test only: busy-wait this many ns after stamping a write lock's start, before the other probes read it (limits as inject_delay_ns)");

/* ---- init / exit ------------------------------------------------------- */

static int __init ptw_init(void)
{
	int err, ntp;

	ntp = ptw_lock_init();
	pr_info("%d of %u tracepoint hooks attached\n", ntp, ptw_nr_tp_hooks);

	err = ptw_hooks_init();
	if (err)
		goto err_core;

	err = ptw_debugfs_init();
	if (err)
		goto err_hooks;

	pr_info("loaded\n");
	return 0;

err_hooks:
	ptw_hooks_exit();
err_core:
	ptw_lock_exit();
	return err;
}

static void __exit ptw_exit(void)
{
	/* debugfs first: no reader may start after this */
	ptw_debugfs_exit();
	/* entry points, then per-range/release probes (waits for handlers) */
	ptw_hooks_exit();
	/* mmap_lock/tlb probes, then tracepoint_synchronize_unregister() */
	ptw_lock_exit();
	pr_info("unloaded\n");
}

module_init(ptw_init);
module_exit(ptw_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Measure /proc page-table walks and the mmap_lock stalls they cause");
MODULE_AUTHOR("ptwalk project");

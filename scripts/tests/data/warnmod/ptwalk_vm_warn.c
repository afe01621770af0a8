// SPDX-License-Identifier: GPL-2.0
/* Test module for ptwalk-vm's kernel-log detector: loading it WARNs once. */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bug.h>
#include <linux/init.h>
#include <linux/module.h>

static int __init ptwalk_vm_warn_init(void)
{
	pr_info("about to WARN on purpose\n");
	WARN(1, "ptwalk_vm_warn: deliberate warning for the harness test\n");
	return 0;
}

static void __exit ptwalk_vm_warn_exit(void)
{
}

module_init(ptwalk_vm_warn_init);
module_exit(ptwalk_vm_warn_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ptwalk-vm test: WARN at load");

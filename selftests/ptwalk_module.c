// SPDX-License-Identifier: GPL-2.0
/*
 * With the ptwalk module loaded (/sys/kernel/debug/ptwalk/ exists):
 *  - pte_slots.<backing>: the PTE slots the module counts for one walk
 *    equal the mapped size of the walked target;
 *  - walk_recorded_once.<backing>: every walk is recorded exactly once.
 * SKIPs "ptwalk module not loaded" without the debugfs directory.
 *
 * TODO(ptwalk module): the debugfs record format is not yet documented in
 * module/README.md. When it is, fill in module_check() below: the target
 * child and the trigger are already in place; what remains is to parse
 * /sys/kernel/debug/ptwalk/walks (ptw_kv_get() reads "key=value" records)
 * for records with target_tgid == t->pid and compare their pte_slots
 * against t->size / page size (plus the child's other VMAs, which need a
 * documented definition), and count them (== walks done).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptwalk_util.h"

#define PTWALK_DEBUGFS "/sys/kernel/debug/ptwalk"

static struct ptw_opts opts;

/* value of key in one "k1=v1 k2=v2 ..." record line, or NULL */
static __attribute__((unused)) const char *
ptw_kv_get(const char *line, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);
	const char *p = line;

	while ((p = strstr(p, key))) {
		if ((p == line || p[-1] == ' ') && p[kl] == '=') {
			size_t n = strcspn(p + kl + 1, " \n");

			snprintf(buf, len, "%.*s", (int)n, p + kl + 1);
			return buf;
		}
		p += kl;
	}
	return NULL;
}

static enum ptw_result module_check(const struct ptw_case *c,
				    struct ptw_target *t, char *why,
				    size_t len)
{
	(void)c;
	(void)t;
	/* TODO(ptwalk module): see the header comment. */
	snprintf(why, len, "ptwalk module loaded, but its debugfs walk "
		 "record format is not yet documented in module/README.md "
		 "(TODO hook in ptwalk_module.c)");
	return PTW_SKIP;
}

static enum ptw_result t_module(const struct ptw_case *c, char *why,
				size_t len)
{
	struct ptw_target t;
	enum ptw_result r;

	if (access(PTWALK_DEBUGFS, F_OK)) {
		snprintf(why, len, "ptwalk module not loaded");
		return PTW_SKIP;
	}
	if (c->backing == PTW_THP && !ptw_thp_usable(why, len))
		return PTW_SKIP;
	if (ptw_target_spawn(&t, c->backing, opts.small_mb << 20, why, len))
		return PTW_FAIL;
	r = module_check(c, &t, why, len);
	ptw_target_kill(&t);
	return r;
}

int main(int argc, char **argv)
{
	static const char *const kinds[] = { "pte_slots", "walk_recorded_once" };
	struct ptw_case cases[2 * PTW_NR_BACKINGS];
	unsigned int n = 0, k;
	int b;

	ptw_parse_opts(argc, argv, &opts);
	for (k = 0; k < 2; k++)
		for (b = 0; b < PTW_NR_BACKINGS; b++) {
			cases[n] = (struct ptw_case){ .fn = t_module,
						      .backing = b, .arg = k };
			snprintf(cases[n++].name, sizeof(cases[0].name),
				 "%s.%s", kinds[k], ptw_backing_name(b));
		}
	return ptw_run_cases(cases, n);
}

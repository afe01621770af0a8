/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every ptwalk test program includes first: the kernel's kselftest
 * harness (TEST/TEST_F, FIXTURE_VARIANT, one forked child per test, KTAP
 * output) and the helpers. kselftest_harness.h and kselftest.h are the
 * kernel tree's own in an in-tree build (tools/testing/selftests) and, in
 * the standalone build, the pair the Makefile extracts from Debian's
 * linux-source-6.1 into $(OUTPUT)/include. Each program ends with
 * #include "ptwalk_test_main.h" (its main()).
 */
#ifndef PTWALK_TEST_H
#define PTWALK_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "ptwalk_util.h"

/* per-test limits (the harness's default is 30 s; qemu TCG is far slower) */
#define PTW_TIMEOUT_SHORT	300
#define PTW_TIMEOUT_LONG	900

/*
 * Skip a THP variant when THP cannot be requested here (the reason names
 * what is missing).
 */
#define PTW_SKIP_UNLESS_THP(backing, statement) do {			\
	char __why[256];						\
									\
	if ((backing) == PTW_THP &&					\
	    !ptw_thp_usable(__why, sizeof(__why)))			\
		SKIP(statement, "%s", __why);				\
} while (0)

/*
 * The four backings every per-backing fixture runs over, declared once:
 * FIXTURE_VARIANT(name) with its backing, and a variant for each.
 */
#define PTW_BACKING_VARIANTS(name)					\
FIXTURE_VARIANT(name) {							\
	int backing;							\
};									\
FIXTURE_VARIANT_ADD(name, anon) { .backing = PTW_ANON };		\
FIXTURE_VARIANT_ADD(name, thp) { .backing = PTW_THP };			\
FIXTURE_VARIANT_ADD(name, shmem) { .backing = PTW_SHMEM };		\
FIXTURE_VARIANT_ADD(name, file) { .backing = PTW_FILE }

/*
 * budget_file: the budget the tests of this program load (--budget,
 * $PTWALK_BUDGET, budgets/<host class>.budget, budgets/default.budget,
 * built-in defaults) is readable and well formed. A broken file fails
 * here, naming it, never silently falls back; the other tests still run
 * with what could be read (defaults for the rest).
 */
#define PTW_BUDGET_FILE_TEST						\
TEST(budget_file)							\
{									\
	struct ptw_budget b;						\
									\
	ASSERT_EQ(0, ptw_budget_load(&b, ptw_opts.budget))		\
		TH_LOG("budget file %s unreadable or malformed",	\
		       ptw_opts.budget ? ptw_opts.budget : "(default)"); \
}

#endif /* PTWALK_TEST_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk selftests helpers: KTAP output: the plan, results, diagnostics and the case runner.
 * Declared in ptwalk_util.h.
 */
#include "ptwalk_util_int.h"

/* ---- KTAP ---------------------------------------------------------- */

static bool header_done;

static void ktap_header(void)
{
	if (!header_done)
		printf("TAP version 13\n");
	header_done = true;
}

void ptw_diag(const char *fmt, ...)
{
	va_list ap;

	ktap_header();
	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
}

int ptw_run_cases(const struct ptw_case *cases, unsigned int n)
{
	unsigned int i, pass = 0, fail = 0, skip = 0;

	ktap_header();
	printf("1..%u\n", n);
	for (i = 0; i < n; i++) {
		char why[1024] = "";
		enum ptw_result r = cases[i].fn(&cases[i], why, sizeof(why));

		switch (r) {
		case PTW_PASS:
			pass++;
			printf("ok %u %s\n", i + 1, cases[i].name);
			break;
		case PTW_SKIP:
			skip++;
			printf("ok %u %s # SKIP %s\n", i + 1, cases[i].name,
			       why[0] ? why : "no reason given");
			break;
		default:
			fail++;
			if (why[0])
				ptw_diag("FAIL %s: %s", cases[i].name, why);
			printf("not ok %u %s\n", i + 1, cases[i].name);
			break;
		}
		fflush(stdout);
	}
	printf("# Totals: pass:%u fail:%u xfail:0 xpass:0 skip:%u error:0\n",
	       pass, fail, skip);
	fflush(stdout);
	if (fail)
		return KSFT_FAIL;
	if (!pass && skip)
		return KSFT_SKIP;
	return KSFT_PASS;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Included once, last, by each test program: TEST_HARNESS_MAIN's main(),
 * renamed, behind a main() that first takes ptwalk's own options
 * (--min-mb, --budget, ...; ptw_take_opts()) out of argv and leaves the
 * rest to the harness. Tests read them from ptw_opts.
 */
#ifndef PTWALK_TEST_MAIN_H
#define PTWALK_TEST_MAIN_H

int ptw_harness_main(int argc, char **argv);

#define main ptw_harness_main
TEST_HARNESS_MAIN
#undef main

int main(int argc, char **argv)
{
	ptw_take_opts(&argc, argv, &ptw_opts);
	return ptw_harness_main(argc, argv);
}

#endif /* PTWALK_TEST_MAIN_H */

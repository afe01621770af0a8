// SPDX-License-Identifier: GPL-2.0
/*
 * walker - deterministic trigger for ptwalk tests.
 *
 * Forks a target that maps SIZE MiB of anonymous memory with 4 KiB pages
 * (MADV_NOHUGEPAGE), populates it, and optionally runs a thread that
 * mmap()s/munmap()s 64 KiB in a loop (to be stalled by the walks; the
 * target is then pinned to CPU 1 and the walker to CPU 0).  The
 * parent then performs N walks of each requested kind on the target and
 * prints one line per walk:
 *   walk kind=K walker_pid=P target_tgid=T start_ns=S end_ns=E
 * Kinds: clear_refs smaps smaps_rollup pagemap.
 *
 * -x: target exits mid-walk; only the first KIND is walked, once.  For
 *     clear_refs a thread SIGKILLs the target 2 ms into the write (make the
 *     walk slower with ptwalk inject_delay_ns); for the file kinds the
 *     target is killed right after the first read() and reading goes on.
 *
 * usage: walker [-m MiB] [-n N] [-s] [-x] KIND...
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* the walk triggers shared with the selftests and the scanner */
#include "ptwalk_trigger.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "walker: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void *churn(void *arg)
{
	(void)arg;
	for (;;) {
		void *p = mmap(NULL, 65536, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED)
			munmap(p, 65536);
	}
	return NULL;
}

/* -s: walker on CPU 0, target (and its mmap thread) on CPU 1, if present */
static void pin(int cpu)
{
	cpu_set_t set;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void target(size_t mib, int stall, int ready_fd)
{
	size_t len = mib << 20, i;
	pthread_t th;
	char *p;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap");
	madvise(p, len, MADV_NOHUGEPAGE);
	for (i = 0; i < len; i += 4096)
		p[i] = 1;
	if (stall && pthread_create(&th, NULL, churn, NULL))
		die("pthread_create");
	if (write(ready_fd, "r", 1) != 1)
		die("write ready");
	for (;;)
		pause();
}

static int exiting;
static pid_t exit_target;

/* -x, file kinds: kill the target once the walk has begun */
static void exit_after_first_read(void)
{
	if (exit_target > 0) {
		kill(exit_target, SIGKILL);
		exit_target = 0;
	}
}

static void *killer(void *arg)
{
	pid_t tgt = *(pid_t *)arg;
	struct timespec ts = { 0, 2000000 };

	nanosleep(&ts, NULL);
	kill(tgt, SIGKILL);
	return NULL;
}

/* -k: file kinds keep one fd open and re-read it from offset 0 per walk */
static int keep_open;
static int kept_fd = -1;

static void each_read(void *arg)
{
	(void)arg;
	exit_after_first_read();
}

static void walk(const char *kind, pid_t tgt)
{
	char path[64];
	static char buf[65536];
	uint64_t s, e = 0;
	int fd;

	if (!strcmp(kind, "clear_refs")) {
		snprintf(path, sizeof(path), "/proc/%d/clear_refs", tgt);
		fd = open(path, O_WRONLY);
		if (fd < 0)
			die(path);
		s = now_ns();
		if (ptw_trigger_clear_refs(fd, "1") && !exiting)
			die("write clear_refs");
		e = now_ns();
	} else {
		snprintf(path, sizeof(path), "/proc/%d/%s", tgt, kind);
		s = now_ns();
		fd = keep_open && kept_fd >= 0 ? kept_fd : open(path, O_RDONLY);
		if (fd < 0)
			die(path);
		if (keep_open) {
			kept_fd = fd;
			if (lseek(fd, 0, SEEK_SET) != 0)
				die("lseek");
		}
		if (!strcmp(kind, "pagemap")) {
			/* the pagemap entries of every mapping listed in
			 * /proc/PID/maps, 64 KiB (8192 entries) per read; a
			 * target that exits ends them early
			 */
			char mpath[64], line[512];
			FILE *maps;

			snprintf(mpath, sizeof(mpath), "/proc/%d/maps", tgt);
			maps = fopen(mpath, "r");
			if (!maps && !exiting)
				die(mpath);
			while (maps && fgets(line, sizeof(line), maps)) {
				unsigned long lo, hi;

				if (sscanf(line, "%lx-%lx", &lo, &hi) != 2)
					continue;
				ptw_trigger_pagemap(fd, lo, hi, buf, sizeof(buf), each_read, NULL);
			}
			if (maps)
				fclose(maps);
		} else {
			ptw_trigger_read_all(fd, buf, sizeof(buf), 0, NULL, each_read, NULL);
		}
	}
	if (!keep_open || !strcmp(kind, "clear_refs"))
		close(fd);
	if (strcmp(kind, "clear_refs"))
		e = now_ns();
	printf("walk kind=%s walker_pid=%d target_tgid=%d start_ns=%llu end_ns=%llu\n",
	       kind, getpid(), tgt, (unsigned long long)s,
	       (unsigned long long)e);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	size_t mib = 256;
	int n = 1, stall = 0, opt, i, pfd[2];
	pid_t pid;
	char c;

	while ((opt = getopt(argc, argv, "m:n:sxk")) != -1) {
		switch (opt) {
		case 'm':
			mib = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			n = atoi(optarg);
			break;
		case 's':
			stall = 1;
			break;
		case 'x':
			exiting = 1;
			break;
		case 'k':
			keep_open = 1;
			break;
		default:
			fprintf(stderr, "usage: walker [-m MiB] [-n N] [-s] [-x] [-k] KIND...\n");
			return 2;
		}
	}
	if (pipe(pfd))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(pfd[0]);
		if (stall)
			pin(1);
		target(mib, stall, pfd[1]);
	}
	if (stall)
		pin(0);
	close(pfd[1]);
	if (read(pfd[0], &c, 1) != 1)
		die("target did not get ready");
	printf("target tgid=%d mib=%zu\n", pid, mib);
	if (exiting && optind < argc) {
		pthread_t th;

		if (strcmp(argv[optind], "clear_refs")) {
			exit_target = pid;
			walk(argv[optind], pid);
			waitpid(pid, NULL, 0);
			return 0;
		}
		if (pthread_create(&th, NULL, killer, &pid))
			die("pthread_create");
		walk(argv[optind], pid);
		pthread_join(th, NULL);
		waitpid(pid, NULL, 0);
		return 0;
	}
	for (i = 0; i < n; i++) {
		int k;

		for (k = optind; k < argc; k++)
			walk(argv[k], pid);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return 0;
}

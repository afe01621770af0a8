// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk selftests helpers: the system: page sizes, clocks, kernel config,
 * what this kernel can do, the host class; and the options.
 * Declared in ptwalk_util.h.
 */
#include "ptwalk_util_int.h"

size_t ptw_page_size = 4096;
size_t ptw_pmd_size = 2UL << 20;

/* ---- system -------------------------------------------------------- */

static size_t read_ulong_file(const char *path, size_t dflt)
{
	FILE *f = fopen(path, "r");
	unsigned long v;

	if (!f)
		return dflt;
	if (fscanf(f, "%lu", &v) != 1)
		v = dflt;
	fclose(f);
	return v;
}

void ptw_init(void)
{
	long ps = sysconf(_SC_PAGESIZE);

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (ps > 0)
		ptw_page_size = ps;
	ptw_pmd_size = read_ulong_file("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size",
				       ptw_page_size * (ptw_page_size / 8));
}

uint64_t ptw_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

uint64_t ptw_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static char kconfig_scan(FILE *f, const char *opt)
{
	char line[512];
	size_t ol = strlen(opt);
	char res = 'n';

	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, opt, ol) && line[ol] == '=') {
			res = line[ol + 1];
			break;
		}
	}
	return res;
}

/*
 * The running kernel's own config first (/proc/config.gz), then
 * /boot/config-<release>: the order of kernel_info() in userspace/os/src/procfs.cpp.
 */
char ptw_kconfig(const char *opt)
{
	struct utsname u;
	char path[300];
	FILE *f;
	char r;

	if (access("/proc/config.gz", R_OK) == 0) {
		f = popen("gzip -dc /proc/config.gz 2>/dev/null", "r");
		if (f) {
			r = kconfig_scan(f, opt);
			/* drain so gzip exits cleanly */
			while (fgetc(f) != EOF)
				;
			if (pclose(f) == 0)
				return r;
		}
	}
	if (uname(&u) == 0) {
		snprintf(path, sizeof(path), "/boot/config-%s", u.release);
		f = fopen(path, "r");
		if (f) {
			r = kconfig_scan(f, opt);
			fclose(f);
			return r;
		}
	}
	return '?';
}

bool ptw_thp_usable(char *why, size_t len)
{
	char buf[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

	if (!f) {
		snprintf(why, len, "THP not available (no "
			 "/sys/kernel/mm/transparent_hugepage; "
			 "CONFIG_TRANSPARENT_HUGEPAGE off?)");
		return false;
	}
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	if (strstr(buf, "[never]")) {
		snprintf(why, len, "THP disabled (transparent_hugepage/enabled"
			 " is [never]; not changed by this test)");
		return false;
	}
	return true;
}

bool ptw_soft_dirty_usable(char *why, size_t len)
{
	char *p = mmap(NULL, ptw_page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t ent = 0;
	char cfg = ptw_kconfig("CONFIG_MEM_SOFT_DIRTY");
	bool ok;

	if (p == MAP_FAILED) {
		snprintf(why, len, "mmap: %s", strerror(errno));
		return false;
	}
	p[0] = 1;
	if (ptw_pagemap_read(p, 1, &ent)) {
		snprintf(why, len, "pagemap read: %s", strerror(errno));
		munmap(p, ptw_page_size);
		return false;
	}
	munmap(p, ptw_page_size);
	ok = (ent & PM_PRESENT) && (ent & PM_SOFT_DIRTY);
	if (!ok)
		snprintf(why, len, "soft-dirty not tracked: pagemap bit 55 "
			 "clear on a freshly written page (CONFIG_MEM_SOFT_DIRTY %s)",
			 cfg == 'y' ? "=y ?!" : cfg == '?' ? "unknown" :
			 "is not set");
	return ok;
}

bool ptw_pagemap_scan_usable(char *why, size_t len)
{
	struct page_region vec[1];
	uint64_t we;
	char *p = mmap(NULL, ptw_page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long r;

	if (p == MAP_FAILED) {
		snprintf(why, len, "mmap: %s", strerror(errno));
		return false;
	}
	p[0] = 1;
	r = ptw_pagemap_scan_present(p, p + ptw_page_size, vec, 1, &we);
	munmap(p, ptw_page_size);
	if (r < 0) {
		snprintf(why, len, "PAGEMAP_SCAN ioctl not supported "
			 "(needs 6.7+): %s", strerror((int)-r));
		return false;
	}
	return true;
}

void ptw_host_class(char *buf, size_t len)
{
	char line[512], model[256] = "unknown-cpu";
	bool hv = false;
	FILE *f = fopen("/proc/cpuinfo", "r");
	size_t i, o = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct utsname u;

	if (f) {
		while (fgets(line, sizeof(line), f)) {
			char *c = strchr(line, ':');

			if (!c)
				continue;
			if (!strncmp(line, "model name", 10) &&
			    !strcmp(model, "unknown-cpu")) {
				snprintf(model, sizeof(model), "%s", c + 2);
			} else if (!strncmp(line, "flags", 5) &&
				   strstr(c, " hypervisor")) {
				hv = true;
			}
		}
		fclose(f);
	}
	uname(&u);
	o = snprintf(buf, len, "%s-", u.machine);
	for (i = 0; model[i] && o + 2 < len; i++) {
		unsigned char ch = model[i];

		if (isalnum(ch))
			buf[o++] = tolower(ch);
		else if (o && buf[o - 1] != '-')
			buf[o++] = '-';
	}
	while (o && buf[o - 1] == '-')
		o--;
	buf[o] = 0;
	snprintf(buf + o, len - o, "-%ldcpu%s", ncpu, hv ? "-vm" : "");
}

/* ---- options ------------------------------------------------------- */

static unsigned long env_ul(const char *name, unsigned long dflt)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return dflt;
	v = strtoul(s, &end, 0);
	return *end ? dflt : v;
}

unsigned int ptw_attempts(unsigned int dflt)
{
	unsigned long v = env_ul("PTWALK_ATTEMPTS", dflt);

	return v >= 1 && v <= 100 ? (unsigned int)v : dflt;
}

static void usage(const char *prog)
{
	printf("usage: %s [--min-mb N] [--reps N] [--small-mb N] [--walks N]\n"
	       "          [--thp-mb N] [--long] [--budget FILE] [--out FILE]\n"
	       "env: PTWALK_MIN_MB PTWALK_REPS PTWALK_SMALL_MB PTWALK_WALKS\n"
	       "     PTWALK_THP_MB PTWALK_LONG=1 PTWALK_BUDGET PTWALK_TMPDIR\n"
	       "     PTWALK_ATTEMPTS PTWALK_REPLICAS PTWALK_BUDGET_DIR PTWALK_FLUSH_MB\n"
	       "test programs: other arguments are left to the kselftest harness\n",
	       prog);
}

struct ptw_opts ptw_opts;

/*
 * Environment first, then arguments. strict: an unknown argument prints
 * the usage and exits 1; otherwise it is kept in argv (compacted, *argc
 * updated) for the kselftest harness.
 */
static void parse_opts(int *argcp, char **argv, struct ptw_opts *o,
		       bool strict)
{
	int i, argc = *argcp, kept = 1;

	ptw_init();
	memset(o, 0, sizeof(*o));
	o->long_mode = env_ul("PTWALK_LONG", 0) != 0;
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--long"))
			o->long_mode = true;
	o->points = 5;
	o->min_mb = env_ul("PTWALK_MIN_MB", o->long_mode ? 256 : 64);
	o->reps = env_ul("PTWALK_REPS", o->long_mode ? 9 : 7);
	o->small_mb = env_ul("PTWALK_SMALL_MB", 8);
	o->walks = env_ul("PTWALK_WALKS", o->long_mode ? 40 : 12);
	o->thp_mb = env_ul("PTWALK_THP_MB", 0);
	o->replicas = env_ul("PTWALK_REPLICAS", o->long_mode ? 1 : 2);
	o->budget = getenv("PTWALK_BUDGET");
	if (o->budget && !*o->budget)
		o->budget = NULL;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--long")) {
			continue;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(argv[0]);
			exit(0);
		} else if (v && !strcmp(a, "--min-mb")) {
			o->min_mb = strtoul(v, NULL, 0), i++;
		} else if (v && !strcmp(a, "--reps")) {
			o->reps = strtoul(v, NULL, 0), i++;
		} else if (v && !strcmp(a, "--small-mb")) {
			o->small_mb = strtoul(v, NULL, 0), i++;
		} else if (v && !strcmp(a, "--thp-mb")) {
			o->thp_mb = strtoul(v, NULL, 0), i++;
		} else if (v && !strcmp(a, "--walks")) {
			o->walks = strtoul(v, NULL, 0), i++;
		} else if (v && !strcmp(a, "--budget")) {
			o->budget = v, i++;
		} else if (v && !strcmp(a, "--out")) {
			o->out = v, i++;
		} else if (strict) {
			usage(argv[0]);
			exit(1);
		} else {
			argv[kept++] = argv[i];
			continue;
		}
	}
	if (!strict) {
		*argcp = kept;
		argv[kept] = NULL;
	}
	if (!o->min_mb)
		o->min_mb = 1;
	if (!o->reps)
		o->reps = 1;
	if (o->small_mb < 4)
		o->small_mb = 4;	/* THP variant needs >= 2 huge pages */
	if (!o->walks)
		o->walks = 1;
	if (!o->replicas)
		o->replicas = 1;
	if (!o->thp_mb) {
		o->thp_mb = ptw_max_mb(o);
		if (o->thp_mb < 256)
			o->thp_mb = 256;
	}
}

void ptw_parse_opts(int argc, char **argv, struct ptw_opts *o)
{
	parse_opts(&argc, argv, o, true);
}

void ptw_take_opts(int *argc, char **argv, struct ptw_opts *o)
{
	parse_opts(argc, argv, o, false);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk selftests: shared helpers. See ptwalk_util.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "ptwalk_util.h"

#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE 14
#endif
#ifndef MADV_NOHUGEPAGE
#define MADV_NOHUGEPAGE 15
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 1U
#endif

size_t ptw_page_size = 4096;
size_t ptw_pmd_size = 2UL << 20;

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
	ptw_pmd_size = read_ulong_file(
		"/sys/kernel/mm/transparent_hugepage/hpage_pmd_size",
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

char ptw_kconfig(const char *opt)
{
	struct utsname u;
	char path[300];
	FILE *f;
	char r;

	if (uname(&u) == 0) {
		snprintf(path, sizeof(path), "/boot/config-%s", u.release);
		f = fopen(path, "r");
		if (f) {
			r = kconfig_scan(f, opt);
			fclose(f);
			return r;
		}
	}
	if (access("/proc/config.gz", R_OK) == 0) {
		f = popen("gzip -dc /proc/config.gz 2>/dev/null", "r");
		if (f) {
			r = kconfig_scan(f, opt);
			/* drain so gzip exits cleanly */
			while (fgetc(f) != EOF)
				;
			return pclose(f) == 0 ? r : '?';
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

		if (isalnum(ch)) {
			buf[o++] = tolower(ch);
		} else if (o && buf[o - 1] != '-') {
			buf[o++] = '-';
		}
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

static void usage(const char *prog)
{
	printf("usage: %s [--min-mb N] [--reps N] [--small-mb N] [--walks N]\n"
	       "          [--thp-mb N] [--long] [--budget FILE] [--out FILE]\n"
	       "env: PTWALK_MIN_MB PTWALK_REPS PTWALK_SMALL_MB PTWALK_WALKS\n"
	       "     PTWALK_THP_MB PTWALK_LONG=1 PTWALK_BUDGET PTWALK_TMPDIR\n"
	       "     PTWALK_ATTEMPTS PTWALK_REPLICAS PTWALK_BUDGET_DIR PTWALK_FLUSH_MB\n",
	       prog);
}

void ptw_parse_opts(int argc, char **argv, struct ptw_opts *o)
{
	int i;

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
		} else {
			usage(argv[0]);
			exit(KSFT_FAIL);
		}
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

/* ---- mappings ------------------------------------------------------ */

const char *ptw_backing_name(int b)
{
	static const char *const n[] = { "anon", "thp", "shmem", "file" };

	return b >= 0 && b < PTW_NR_BACKINGS ? n[b] : "?";
}

static int tmpfile_fd(char *why, size_t len)
{
	const char *dirs[3] = { getenv("PTWALK_TMPDIR"), "/var/tmp", "/tmp" };
	char path[PATH_MAX];
	int i, fd;

	for (i = 0; i < 3; i++) {
		if (!dirs[i] || !*dirs[i])
			continue;
		snprintf(path, sizeof(path), "%s/ptwalk-XXXXXX", dirs[i]);
		fd = mkstemp(path);
		if (fd >= 0) {
			unlink(path);
			return fd;
		}
	}
	snprintf(why, len, "no writable directory for a test file "
		 "(PTWALK_TMPDIR, /var/tmp, /tmp): %s", strerror(errno));
	return -1;
}

int ptw_region_map(struct ptw_region *r, int backing, size_t size,
		   char *why, size_t len)
{
	size_t align = backing == PTW_THP ? ptw_pmd_size : ptw_page_size;
	int flags = MAP_FIXED;
	uintptr_t a;
	char *p;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->backing = backing;
	r->size = size;
	r->resv_size = size + 2 * align + 2 * ptw_page_size;
	r->resv = mmap(NULL, r->resv_size, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r->resv == MAP_FAILED) {
		snprintf(why, len, "mmap reserve %zu bytes: %s", r->resv_size,
			 strerror(errno));
		r->resv = NULL;
		return -1;
	}
	a = (uintptr_t)r->resv + ptw_page_size;
	a = (a + align - 1) & ~(uintptr_t)(align - 1);

	switch (backing) {
	case PTW_ANON:
	case PTW_THP:
		flags |= MAP_PRIVATE | MAP_ANONYMOUS;
		break;
	case PTW_SHMEM:
		r->fd = memfd_create("ptwalk", MFD_CLOEXEC);
		if (r->fd < 0) {
			snprintf(why, len, "memfd_create: %s", strerror(errno));
			goto err;
		}
		flags |= MAP_SHARED;
		break;
	case PTW_FILE:
		r->fd = tmpfile_fd(why, len);
		if (r->fd < 0)
			goto err;
		flags |= MAP_SHARED;
		break;
	default:
		snprintf(why, len, "bad backing %d", backing);
		goto err;
	}
	if (r->fd >= 0 && ftruncate(r->fd, size)) {
		snprintf(why, len, "ftruncate %zu: %s", size, strerror(errno));
		goto err;
	}
	p = mmap((void *)a, size, PROT_READ | PROT_WRITE, flags, r->fd, 0);
	if (p == MAP_FAILED) {
		snprintf(why, len, "mmap %s %zu bytes: %s",
			 ptw_backing_name(backing), size, strerror(errno));
		goto err;
	}
	r->addr = p;
	if (madvise(p, size, backing == PTW_THP ? MADV_HUGEPAGE :
		    MADV_NOHUGEPAGE) && backing == PTW_THP) {
		snprintf(why, len, "madvise(MADV_HUGEPAGE): %s",
			 strerror(errno));
		goto err;
	}
	return 0;
err:
	ptw_region_unmap(r);
	return -1;
}

void ptw_region_unmap(struct ptw_region *r)
{
	if (r->resv)
		munmap(r->resv, r->resv_size);
	if (r->fd >= 0)
		close(r->fd);
	r->resv = NULL;
	r->addr = NULL;
	r->fd = -1;
}

void ptw_touch(char *addr, size_t len, bool write)
{
	volatile char *p = addr;
	size_t off;
	char sink = 0;

	for (off = 0; off < len; off += ptw_page_size) {
		if (write)
			p[off] = (char)(off >> 12) | 1;
		else
			sink += p[off];
	}
	(void)sink;
}

int ptw_region_flush_tlb(struct ptw_region *r)
{
	if (mprotect(r->addr, r->size, PROT_READ))
		return -1;
	return mprotect(r->addr, r->size, PROT_READ | PROT_WRITE);
}

/* ---- /proc --------------------------------------------------------- */

/* whole file into a reusable buffer, pre-touched so Rss stays stable */
static char *slurp(const char *path, size_t *outlen)
{
	static char *buf;
	static size_t cap;
	size_t n = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	if (!buf) {
		cap = 1 << 20;
		buf = malloc(cap);
		if (!buf)
			goto err;
		memset(buf, 0, cap);
	}
	for (;;) {
		if (n + 65536 + 1 > cap) {
			char *nb = realloc(buf, cap * 2);

			if (!nb)
				goto err;
			buf = nb;
			cap *= 2;
			memset(buf + n, 0, cap - n);
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			goto err;
		}
		if (r == 0)
			break;
		n += r;
	}
	close(fd);
	buf[n] = 0;
	*outlen = n;
	return buf;
err:
	close(fd);
	return NULL;
}

static uint64_t field_kb(const char *line, const char *key)
{
	size_t kl = strlen(key);

	if (strncmp(line, key, kl) || line[kl] != ':')
		return UINT64_MAX;
	return strtoull(line + kl + 1, NULL, 10);
}

static void account(struct ptw_smaps *s, const char *line)
{
	uint64_t v;

	if ((v = field_kb(line, "Rss")) != UINT64_MAX)
		s->rss_kb += v;
	else if ((v = field_kb(line, "Referenced")) != UINT64_MAX)
		s->referenced_kb += v;
	else if ((v = field_kb(line, "Anonymous")) != UINT64_MAX)
		s->anonymous_kb += v;
	else if ((v = field_kb(line, "AnonHugePages")) != UINT64_MAX)
		s->anon_huge_kb += v;
}

/*
 * Walk /proc/self/smaps: for every VMA header call back; if want is
 * non-NULL only the VMA containing want is accounted into out.
 */
static int smaps_parse(const void *want, bool all, struct ptw_smaps *out)
{
	size_t n;
	char *buf = slurp("/proc/self/smaps", &n);
	char *line, *save = NULL;
	bool in = false;

	memset(out, 0, sizeof(*out));
	if (!buf)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long s, e;
		char dash;

		if (isxdigit((unsigned char)line[0]) &&
		    sscanf(line, "%lx%c%lx ", &s, &dash, &e) == 3 &&
		    dash == '-') {
			in = all || ((uintptr_t)want >= s && (uintptr_t)want < e);
			if (in && !all) {
				out->start = s;
				out->end = e;
				out->found = true;
			}
			continue;
		}
		if (in)
			account(out, line);
	}
	if (all)
		out->found = true;
	return out->found ? 0 : -1;
}

int ptw_smaps_vma(const void *addr, struct ptw_smaps *out)
{
	return smaps_parse(addr, false, out);
}

int ptw_smaps_rss_sum(uint64_t *rss_kb)
{
	struct ptw_smaps s;
	int r = smaps_parse(NULL, true, &s);

	*rss_kb = s.rss_kb;
	return r;
}

int ptw_smaps_rollup(struct ptw_smaps *out)
{
	size_t n;
	char *buf = slurp("/proc/self/smaps_rollup", &n);
	char *line, *save = NULL;

	memset(out, 0, sizeof(*out));
	if (!buf)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		account(out, line);
	out->found = true;
	return 0;
}

static int clear_refs_fd = -1;

int ptw_clear_refs(const char *val)
{
	if (clear_refs_fd < 0)
		clear_refs_fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
	if (clear_refs_fd < 0)
		return -1;
	return write(clear_refs_fd, val, strlen(val)) == (ssize_t)strlen(val)
		? 0 : -1;
}

int ptw_pagemap_fd(void)
{
	static int fd = -1;

	if (fd < 0)
		fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	return fd;
}

int ptw_pagemap_read(const void *addr, size_t npages, uint64_t *ents)
{
	int fd = ptw_pagemap_fd();
	off_t off = (uintptr_t)addr / ptw_page_size * sizeof(uint64_t);
	size_t want = npages * sizeof(uint64_t), got = 0;

	if (fd < 0)
		return -1;
	while (got < want) {
		ssize_t r = pread(fd, (char *)ents + got, want - got, off + got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += r;
	}
	return 0;
}

long ptw_pagemap_scan_present(const void *start, const void *end,
			      struct page_region *vec, size_t vec_len,
			      uint64_t *walk_end)
{
	struct pm_scan_arg arg = {
		.size = sizeof(arg),
		.start = (uintptr_t)start,
		.end = (uintptr_t)end,
		.vec = (uintptr_t)vec,
		.vec_len = vec_len,
		.category_mask = PAGE_IS_PRESENT,
		.return_mask = PAGE_IS_PRESENT,
	};
	int fd = ptw_pagemap_fd();
	long r;

	if (fd < 0)
		return -errno;
	r = ioctl(fd, PAGEMAP_SCAN, &arg);
	if (r < 0)
		return -errno;
	*walk_end = arg.walk_end;
	return r;
}

/* ---- budgets ------------------------------------------------------- */

const char *const ptw_budget_keys[PB_NR_KEYS] = {
	[PB_CLEAR_REFS] = "clear_refs_ns_per_pte",
	[PB_SMAPS] = "smaps_ns_per_pte",
	[PB_SMAPS_ROLLUP] = "smaps_rollup_ns_per_pte",
	[PB_PAGEMAP] = "pagemap_ns_per_pte",
	[PB_PAGEMAP_SCAN] = "pagemap_scan_ns_per_pte",
	[PB_STALL_FACTOR] = "stall_factor",
	[PB_STALL_SLACK_NS] = "stall_slack_ns",
	[PB_THP_MIN_RATIO] = "thp_min_ratio",
	[PB_LINEAR_R2_MIN] = "linear_r2_min",
	[PB_LINEAR_RATIO_MIN] = "linear_ratio_min",
	[PB_LINEAR_RATIO_MAX] = "linear_ratio_max",
};

/* keep in sync with budgets/default.budget */
const double ptw_budget_defaults[PB_NR_KEYS] = {
	[PB_CLEAR_REFS] = 4000,
	[PB_SMAPS] = 4000,
	[PB_SMAPS_ROLLUP] = 4000,
	[PB_PAGEMAP] = 2000,
	[PB_PAGEMAP_SCAN] = 2000,
	[PB_STALL_FACTOR] = 1.2,
	[PB_STALL_SLACK_NS] = 50e6,
	[PB_THP_MIN_RATIO] = 20,
	[PB_LINEAR_R2_MIN] = 0.9,
	[PB_LINEAR_RATIO_MIN] = 8,
	[PB_LINEAR_RATIO_MAX] = 32,
};

static int budget_parse(struct ptw_budget *b, const char *path)
{
	char line[512];
	int lineno = 0, bad = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		ptw_diag("budget: cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *k = line, *eq, *v, *end;
		size_t kl;
		double d;
		int i;

		lineno++;
		k += strspn(k, " \t");
		if (*k == '#' || *k == '\n' || !*k)
			continue;
		eq = strchr(k, '=');
		if (!eq) {
			ptw_diag("budget %s:%d: no '=': %s", path, lineno, k);
			bad++;
			continue;
		}
		kl = eq - k;
		while (kl && isspace((unsigned char)k[kl - 1]))
			kl--;
		v = eq + 1;
		d = strtod(v, &end);
		end += strspn(end, " \t\r\n");
		if (end == v || (*end && *end != '#')) {
			ptw_diag("budget %s:%d: bad number: %s", path, lineno, v);
			bad++;
			continue;
		}
		for (i = 0; i < PB_NR_KEYS; i++)
			if (strlen(ptw_budget_keys[i]) == kl &&
			    !strncmp(k, ptw_budget_keys[i], kl))
				break;
		if (i == PB_NR_KEYS) {
			ptw_diag("budget %s:%d: unknown key %.*s (ignored)",
				 path, lineno, (int)kl, k);
			continue;
		}
		b->v[i] = d;
	}
	fclose(f);
	snprintf(b->source, sizeof(b->source), "%s", path);
	return bad ? -1 : 0;
}

static bool exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n <= 0)
		return false;
	buf[n] = 0;
	slash = strrchr(buf, '/');
	if (!slash)
		return false;
	*slash = 0;
	return true;
}

static char ptw_bad_budget[256];

static enum ptw_result t_budget_file(const struct ptw_case *c, char *why,
				     size_t len)
{
	(void)c;
	snprintf(why, len, "budget file %s unreadable or malformed",
		 ptw_bad_budget);
	return PTW_FAIL;
}

void ptw_budget_load_case(struct ptw_budget *b, const char *path,
			  struct ptw_case *cases, unsigned int *n)
{
	if (!ptw_budget_load(b, path))
		return;
	snprintf(ptw_bad_budget, sizeof(ptw_bad_budget), "%s",
		 path ? path : "(default)");
	cases[*n] = (struct ptw_case){ .fn = t_budget_file };
	snprintf(cases[(*n)++].name, sizeof(cases[0].name), "budget_file");
}

int ptw_budget_load(struct ptw_budget *b, const char *path)
{
	char dir[PATH_MAX], cls[200], p[PATH_MAX + 256];
	const char *bdir = getenv("PTWALK_BUDGET_DIR");
	int i, r;

	for (i = 0; i < PB_NR_KEYS; i++)
		b->v[i] = ptw_budget_defaults[i];
	snprintf(b->source, sizeof(b->source), "built-in defaults");
	if (path) {
		r = budget_parse(b, path);
		ptw_diag("budget: %s%s", path, r ? " (ERROR)" : "");
		return r;
	}
	if (bdir && *bdir) {
		snprintf(dir, sizeof(dir), "%s", bdir);
	} else if (exe_dir(dir, sizeof(dir) - 16)) {
		strcat(dir, "/budgets");
	} else {
		dir[0] = 0;
	}
	ptw_host_class(cls, sizeof(cls));
	if (dir[0]) {
		snprintf(p, sizeof(p), "%s/%s.budget", dir, cls);
		if (access(p, R_OK) == 0) {
			r = budget_parse(b, p);
			ptw_diag("budget: %s (host class %s)%s", p, cls,
				 r ? " (ERROR)" : "");
			return r;
		}
		snprintf(p, sizeof(p), "%s/default.budget", dir);
		if (access(p, R_OK) == 0) {
			r = budget_parse(b, p);
			ptw_diag("budget: %s (no %s.budget for this host class)%s",
				 p, cls, r ? " (ERROR)" : "");
			return r;
		}
	}
	ptw_diag("budget: built-in defaults (host class %s)", cls);
	return 0;
}

/* ---- walks --------------------------------------------------------- */

const char *const ptw_walker_names[PW_NR] = {
	[PW_CLEAR_REFS] = "clear_refs",
	[PW_SMAPS] = "smaps",
	[PW_SMAPS_ROLLUP] = "smaps_rollup",
	[PW_PAGEMAP] = "pagemap",
	[PW_PAGEMAP_SCAN] = "pagemap_scan",
};

const enum ptw_budget_key ptw_walker_budget[PW_NR] = {
	[PW_CLEAR_REFS] = PB_CLEAR_REFS,
	[PW_SMAPS] = PB_SMAPS,
	[PW_SMAPS_ROLLUP] = PB_SMAPS_ROLLUP,
	[PW_PAGEMAP] = PB_PAGEMAP,
	[PW_PAGEMAP_SCAN] = PB_PAGEMAP_SCAN,
};

static int read_all_discard(const char *path)
{
	static char chunk[65536];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return -1;
	while ((r = read(fd, chunk, sizeof(chunk))) > 0)
		;
	close(fd);
	return r < 0 ? -1 : 0;
}

struct child_report {
	int err;
	uintptr_t addr;
	uint64_t anon_huge_kb;
	char why[256];
};

int ptw_target_spawn(struct ptw_target *t, int backing, size_t size,
		     char *why, size_t len)
{
	int rep[2];
	struct child_report cr;
	char path[64];
	ssize_t n;

	memset(t, 0, sizeof(*t));
	t->clear_fd = t->pagemap_fd = -1;
	if (pipe2(rep, O_CLOEXEC)) {
		snprintf(why, len, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(stdout);
	t->pid = fork();
	if (t->pid < 0) {
		snprintf(why, len, "fork: %s", strerror(errno));
		return -1;
	}
	if (t->pid == 0) {
		struct ptw_region r;
		struct ptw_smaps s;
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(rep[0]);
		memset(&cr, 0, sizeof(cr));
		if (ptw_region_map(&r, backing, size, cr.why, sizeof(cr.why))) {
			cr.err = 1;
		} else {
			ptw_touch(r.addr, size, true);
			cr.addr = (uintptr_t)r.addr;
			if (ptw_smaps_vma(r.addr, &s) == 0)
				cr.anon_huge_kb = s.anon_huge_kb;
		}
		if (write(rep[1], &cr, sizeof(cr)) != sizeof(cr))
			_exit(1);
		/* live until the parent kills us (or dies: PDEATHSIG) */
		for (;;)
			pause();
	}
	close(rep[1]);
	n = read(rep[0], &cr, sizeof(cr));
	close(rep[0]);
	if (n != sizeof(cr)) {
		snprintf(why, len, "child %d died while populating %zu MiB "
			 "(out of memory?)", t->pid, size >> 20);
		ptw_target_kill(t);
		return -1;
	}
	if (cr.err) {
		snprintf(why, len, "child: %s", cr.why);
		ptw_target_kill(t);
		return -1;
	}
	t->backing = backing;
	t->addr = (char *)cr.addr;
	t->size = size;
	t->anon_huge_kb = cr.anon_huge_kb;
	snprintf(path, sizeof(path), "/proc/%d/clear_refs", t->pid);
	t->clear_fd = open(path, O_WRONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/pagemap", t->pid);
	t->pagemap_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (t->clear_fd < 0 || t->pagemap_fd < 0) {
		snprintf(why, len, "open /proc/%d/{clear_refs,pagemap}: %s",
			 t->pid, strerror(errno));
		ptw_target_kill(t);
		return -1;
	}
	return 0;
}

void ptw_target_kill(struct ptw_target *t)
{
	if (t->clear_fd >= 0)
		close(t->clear_fd);
	if (t->pagemap_fd >= 0)
		close(t->pagemap_fd);
	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		waitpid(t->pid, NULL, 0);
	}
	t->clear_fd = t->pagemap_fd = -1;
	t->pid = 0;
}

/* pagemap read buffer, in chunks so it stays small and cache-friendly */
#define PM_CHUNK 4096
static uint64_t pm_chunk[PM_CHUNK];

uint64_t ptw_last_wall_ns;

/*
 * Thread CPU time is only usable when it is fine grained: in some guests
 * (e.g. qemu TCG without a stable TSC) it advances per tick (4 ms), which
 * would turn sub-ms walks into 0 or one tick. Check empirically once.
 */
static int cpu_clock_ok = -1;
static double cpu_clock_step_ns;

/* x86: the task clock is only trustworthy on a stable TSC; a guest that
 * fell back to hpet/acpi_pm (qemu TCG) gave erratic thread CPU times */
static bool clocksource_ok(char *cs, size_t len)
{
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/"
			"current_clocksource", "r");
	bool ok = true;

	snprintf(cs, len, "unknown");
	if (!f)
		return true;
	if (fgets(cs, len, f)) {
		cs[strcspn(cs, "\n")] = 0;
#if defined(__x86_64__) || defined(__i386__)
		ok = !strcmp(cs, "tsc") || !strcmp(cs, "kvm-clock");
#endif
	}
	fclose(f);
	return ok;
}

const char *ptw_cost_clock(void)
{
	static char desc[160];
	const char *env = getenv("PTWALK_CLOCK");
	char cs[64];

	if (cpu_clock_ok < 0 && env && (!strcmp(env, "cpu") ||
					!strcmp(env, "wall"))) {
		cpu_clock_ok = !strcmp(env, "cpu");
		snprintf(desc, sizeof(desc), "%s (PTWALK_CLOCK)",
			 cpu_clock_ok ? "CPU time of the walking thread" :
			 "wall time");
	}
	if (cpu_clock_ok < 0 && !clocksource_ok(cs, sizeof(cs))) {
		cpu_clock_ok = 0;
		snprintf(desc, sizeof(desc), "wall time: clocksource %s, the "
			 "thread CPU clock is not trusted (PTWALK_CLOCK=cpu "
			 "overrides)", cs);
	}
	if (cpu_clock_ok < 0) {
		uint64_t end = ptw_now_ns() + 3000000, c0 = ptw_cpu_ns();
		uint64_t a = c0, b;
		unsigned int changes = 0;

		while (ptw_now_ns() < end) {
			b = ptw_cpu_ns();
			if (b != a)
				changes++;
			a = b;
		}
		cpu_clock_step_ns = changes ? (double)(a - c0) / changes : 1e9;
		cpu_clock_ok = changes >= 100 && cpu_clock_step_ns < 10000;
		if (cpu_clock_ok)
			snprintf(desc, sizeof(desc), "CPU time of the walking "
				 "thread (CLOCK_THREAD_CPUTIME_ID)");
		else
			snprintf(desc, sizeof(desc), "wall time: the thread CPU "
				 "clock is coarse here (%u steps of ~%.0f us in 3 "
				 "ms)", changes, cpu_clock_step_ns / 1e3);
	}
	return desc;
}

uint64_t ptw_walk_target(int w, const struct ptw_target *t)
{
	uint64_t t0, t1, c0, c1;
	size_t npages = t->size / ptw_page_size, done;
	struct page_region vec[8];
	char path[64];
	int rc = 0;

	if (w == PW_SMAPS)
		snprintf(path, sizeof(path), "/proc/%d/smaps", t->pid);
	else if (w == PW_SMAPS_ROLLUP)
		snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", t->pid);
	t0 = ptw_now_ns();
	c0 = ptw_cpu_ns();
	switch (w) {
	case PW_CLEAR_REFS:
		rc = write(t->clear_fd, "1", 1) == 1 ? 0 : -1;
		break;
	case PW_SMAPS:
	case PW_SMAPS_ROLLUP:
		rc = read_all_discard(path);
		break;
	case PW_PAGEMAP:
		for (done = 0; done < npages && !rc; done += PM_CHUNK) {
			size_t n = npages - done < PM_CHUNK ?
				   npages - done : PM_CHUNK;
			off_t off = ((uintptr_t)t->addr / ptw_page_size + done) *
				    sizeof(uint64_t);

			rc = pread(t->pagemap_fd, pm_chunk, n * 8, off) ==
			     (ssize_t)(n * 8) ? 0 : -1;
		}
		break;
	case PW_PAGEMAP_SCAN: {
		struct pm_scan_arg arg = {
			.size = sizeof(arg),
			.start = (uintptr_t)t->addr,
			.end = (uintptr_t)t->addr + t->size,
			.vec = (uintptr_t)vec,
			.vec_len = 8,
			.category_mask = PAGE_IS_PRESENT,
			.return_mask = PAGE_IS_PRESENT,
		};

		rc = ioctl(t->pagemap_fd, PAGEMAP_SCAN, &arg) < 0 ? -1 : 0;
		break;
	}
	default:
		rc = -1;
	}
	c1 = ptw_cpu_ns();
	t1 = ptw_now_ns();
	if (rc)
		return 0;
	ptw_last_wall_ns = t1 - t0;
	if (cpu_clock_ok < 0)
		ptw_cost_clock();
	if (!cpu_clock_ok)
		return t1 - t0 ? t1 - t0 : 1;
	return c1 - c0 ? c1 - c0 : 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Opt-in cold-cache walks (PTWALK_FLUSH_MB=N, or =llc for twice the
 * last-level cache): read through a buffer before each timed walk, then
 * re-warm the common path (proc file, task, mm, code) with an untimed walk
 * of the 1-page baseline, so only the region's page tables and struct
 * pages are cold. Off by default: on the 6.18 dev VM a cold walk carried
 * a ~0.6-1 ms size-independent extra cost, which pulls cost(16N)/cost(N)
 * down to 8-10, closer to the bound than warm walks (~15-20).
 */
static size_t llc_bytes(void)
{
	size_t best = 0;
	int i;

	for (i = 0; i < 8; i++) {
		char path[96], buf[32];
		FILE *f;
		size_t v;
		char unit = 0;

		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) &&
		    sscanf(buf, "%zu%c", &v, &unit) >= 1) {
			if (unit == 'K')
				v <<= 10;
			else if (unit == 'M')
				v <<= 20;
			if (v > best)
				best = v;
		}
		fclose(f);
	}
	return best;
}

static char *flush_buf;
static size_t flush_size;

size_t ptw_cache_flush_init(void)
{
	const char *e = getenv("PTWALK_FLUSH_MB");

	if (flush_buf || flush_size == (size_t)-1)
		return flush_buf ? flush_size : 0;
	if (!e || !*e)
		flush_size = 0;		/* off by default, see above */
	else if (!strcmp(e, "llc"))
		flush_size = 2 * (llc_bytes() ? llc_bytes() : (32UL << 20));
	else
		flush_size = strtoul(e, NULL, 0) << 20;
	if (flush_size > (256UL << 20))
		flush_size = 256UL << 20;
	if (!flush_size) {
		flush_size = (size_t)-1;
		return 0;
	}
	/* not inherited by the walk targets forked later (MADV_DONTFORK):
	 * it would add its PTEs to every walk */
	flush_buf = mmap(NULL, flush_size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (flush_buf == MAP_FAILED || madvise(flush_buf, flush_size,
					       MADV_DONTFORK)) {
		if (flush_buf != MAP_FAILED)
			munmap(flush_buf, flush_size);
		flush_buf = NULL;
		flush_size = (size_t)-1;
		return 0;
	}
	memset(flush_buf, 1, flush_size);
	return flush_size;
}

bool ptw_cache_flush(void)
{
	/* read, not write: dirty lines would add writeback to the walk */
	volatile const char *p = flush_buf;
	size_t i;
	char sink = 0;

	if (!flush_buf)
		return false;
	for (i = 0; i < flush_size; i += 64)
		sink += p[i];
	(void)sink;
	return true;
}

int ptw_measure_costs(const struct ptw_opts *o, struct ptw_cost_point *pts,
		      bool with_scan, char *why, size_t len)
{
	/*
	 * Targets: o->replicas independently populated children per size
	 * (index k * replicas + r), then the 1-page baseline. Replicas guard
	 * against one child whose memory happens to be slow for the whole
	 * measurement (seen on this VM: one size 1.8x slower per PTE in every
	 * repetition); the per-size minimum is over reps x replicas.
	 */
	unsigned int nrep = o->replicas ? o->replicas : 1;
	unsigned int nsz = o->points * nrep, nt = nsz + 1, base = nsz;
	unsigned int ns = o->reps * nrep;	/* samples per size and walker */
	uint64_t *samples = calloc((size_t)ns * PW_NR * (o->points + 1),
				   sizeof(uint64_t));
	struct ptw_target *t = calloc(nt, sizeof(*t));
	unsigned int k, rep, w, r, spawned = 0;
	int ret = -1;

	if (!samples || !t) {
		snprintf(why, len, "out of memory");
		goto out;
	}
	ptw_cache_flush_init();
	/* every child populated and alive at once */
	for (k = 0; k < nt; k++) {
		size_t size = k < nsz ? (o->min_mb << (k / nrep)) << 20 :
			      ptw_page_size;

		if (ptw_target_spawn(&t[k], PTW_ANON, size, why, len))
			goto out;
		spawned++;
		if (t[k].anon_huge_kb) {
			snprintf(why, len, "4 KiB region got %llu kB "
				 "AnonHugePages despite MADV_NOHUGEPAGE",
				 (unsigned long long)t[k].anon_huge_kb);
			goto out;
		}
		if (k < nsz)
			pts[k / nrep].ptes = size / ptw_page_size;
	}
	/* warm-up: one walk of each kind per target */
	for (k = 0; k < nt; k++)
		for (w = 0; w < PW_NR; w++) {
			if (w == PW_PAGEMAP_SCAN && !with_scan)
				continue;
			if (!ptw_walk_target(w, &t[k])) {
				snprintf(why, len, "%s walk of pid %d failed: %s",
					 ptw_walker_names[w], t[k].pid,
					 strerror(errno));
				goto out;
			}
		}
	/*
	 * Sizes and walkers interleaved within each repetition, so a slow
	 * phase of this noisy machine hits all sizes alike and the
	 * per-size minimum stays representative.
	 */
	for (rep = 0; rep < o->reps; rep++)
		for (k = 0; k < nt; k++)
			for (w = 0; w < PW_NR; w++) {
				unsigned int sz = k < nsz ? k / nrep : o->points;
				unsigned int idx = k < nsz ? rep * nrep + k % nrep :
						   rep;

				if (w == PW_PAGEMAP_SCAN && !with_scan)
					continue;
				/*
				 * Every timed walk (the baseline's too) follows
				 * an untimed walk of the baseline, so all start
				 * from the same state of the common path (proc
				 * file, task, mm, code; in TCG also qemu's soft
				 * TLB): without it the baseline, walked right
				 * after the largest size, measured 2x its real
				 * fixed cost in a 6.1 TCG guest. Opt-in cold
				 * caches: flush first.
				 */
				ptw_cache_flush();
				ptw_walk_target(w, &t[base]);
				samples[(sz * PW_NR + w) * ns + idx] =
					ptw_walk_target(w, &t[k]);
			}
	for (k = 0; k <= o->points; k++)
		for (w = 0; w < PW_NR; w++) {
			uint64_t *s0 = samples + (k * PW_NR + w) * ns;
			unsigned int cnt = k < o->points ? ns : o->reps;

			if (w == PW_PAGEMAP_SCAN && !with_scan) {
				if (k < o->points)
					pts[k].ns[w] = pts[k].med[w] = 0;
				continue;
			}
			qsort(s0, cnt, sizeof(*s0), cmp_u64);
			if (k < o->points) {
				pts[k].ns[w] = s0[0];
				pts[k].med[w] = s0[cnt / 2];
			} else {
				for (r = 0; r < o->points; r++)
					pts[r].base[w] = s0[0];
			}
		}
	ret = 0;
out:
	for (k = 0; k < spawned; k++)
		ptw_target_kill(&t[k]);
	free(samples);
	free(t);
	return ret;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk selftests helpers: /proc: smaps, smaps_rollup, clear_refs, pagemap, PAGEMAP_SCAN.
 * Declared in ptwalk_util.h.
 */
#include "ptwalk_util_int.h"

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

/* adds the line's value to *sum when the line is key's; whether it was */
static bool add_kb(uint64_t *sum, const char *line, const char *key)
{
	uint64_t v = field_kb(line, key);

	if (v == UINT64_MAX)
		return false;
	*sum += v;
	return true;
}

static void account(struct ptw_smaps *s, const char *line)
{
	if (!add_kb(&s->rss_kb, line, "Rss") &&
	    !add_kb(&s->referenced_kb, line, "Referenced") &&
	    !add_kb(&s->anonymous_kb, line, "Anonymous"))
		add_kb(&s->anon_huge_kb, line, "AnonHugePages");
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
	return ptw_trigger_clear_refs(clear_refs_fd, val) ? -1 : 0;
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
	uint64_t start = (uintptr_t)addr, len = npages * sizeof(uint64_t);

	if (fd < 0)
		return -1;
	/* ents holds them all: they land in order */
	return ptw_trigger_pagemap(fd, start, start + npages * ptw_page_size, ents, len,
				   NULL, NULL) == (long long)len ? 0 : -1;
}

long ptw_pagemap_scan_present(const void *start, const void *end,
			      struct page_region *vec, size_t vec_len,
			      uint64_t *walk_end)
{
	struct pm_scan_arg arg = {
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
	r = ptw_trigger_pagemap_scan(fd, &arg);
	if (r >= 0)
		*walk_end = arg.walk_end;
	return r;
}

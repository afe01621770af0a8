// SPDX-License-Identifier: GPL-2.0
/*
 * clear_refs correctness, per backing (anon, thp, shmem, file):
 *  - "1" clears Referenced: in smaps, touching sets it again;
 *  - "2" clears anon only, "3" file-backed only (mixed process);
 *  - "4" clears soft-dirty (pagemap bit 55), writes set it again.
 * Each fact is read back through /proc/self/smaps or /proc/self/pagemap.
 *
 * Note: clear_refs 1..3 do not flush the TLB (only 4 does), so a page still
 * cached in the TLB with its Accessed bit set would not set it again on the
 * next touch. Before re-touching we force a flush with an mprotect round
 * trip (which keeps the young bit as is).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptwalk_util.h"

static struct ptw_opts opts;

enum { CASE_REF1, CASE_MIXED, CASE_SOFTDIRTY };

/* map + populate (write), skip THP that did not become huge */
static enum ptw_result setup(struct ptw_region *r, int backing, size_t size,
			     char *why, size_t len)
{
	struct ptw_smaps s;

	if (backing == PTW_THP && !ptw_thp_usable(why, len))
		return PTW_SKIP;
	if (ptw_region_map(r, backing, size, why, len))
		return PTW_FAIL;
	ptw_touch(r->addr, size, true);
	if (ptw_smaps_vma(r->addr, &s)) {
		snprintf(why, len, "%s region not found in smaps",
			 ptw_backing_name(backing));
		ptw_region_unmap(r);
		return PTW_FAIL;
	}
	if (s.start != (uintptr_t)r->addr || s.end != (uintptr_t)r->addr + size) {
		snprintf(why, len, "smaps VMA %lx-%lx != mapping %p+%zu",
			 s.start, s.end, r->addr, size);
		ptw_region_unmap(r);
		return PTW_FAIL;
	}
	if (backing == PTW_THP && s.anon_huge_kb * 1024 != size) {
		snprintf(why, len, "pages did not become huge (AnonHugePages "
			 "%llu of %zu kB)", (unsigned long long)s.anon_huge_kb,
			 size >> 10);
		ptw_region_unmap(r);
		return PTW_SKIP;
	}
	return PTW_PASS;
}

/* Referenced of r's VMA must be 0 (want_all false) or == Rss == size */
static bool check_ref(const struct ptw_region *r, bool want_all,
		      const char *when, char *why, size_t len)
{
	struct ptw_smaps s;
	uint64_t want = want_all ? r->size >> 10 : 0;

	if (ptw_smaps_vma(r->addr, &s)) {
		snprintf(why, len, "%s: smaps entry missing", when);
		return false;
	}
	ptw_diag("%-5s %-28s Rss %6llu kB Referenced %6llu kB",
		 ptw_backing_name(r->backing), when,
		 (unsigned long long)s.rss_kb,
		 (unsigned long long)s.referenced_kb);
	if (s.rss_kb != r->size >> 10) {
		snprintf(why, len, "%s %s: Rss %llu kB != %zu kB populated",
			 ptw_backing_name(r->backing), when,
			 (unsigned long long)s.rss_kb, r->size >> 10);
		return false;
	}
	if (s.referenced_kb != want) {
		snprintf(why, len, "%s %s: Referenced %llu kB, expected %llu kB",
			 ptw_backing_name(r->backing), when,
			 (unsigned long long)s.referenced_kb,
			 (unsigned long long)want);
		return false;
	}
	return true;
}

static enum ptw_result t_ref1(const struct ptw_case *c, char *why, size_t len)
{
	struct ptw_region r;
	enum ptw_result res = setup(&r, c->backing, opts.small_mb << 20,
				    why, len);
	bool ok;

	if (res != PTW_PASS)
		return res;
	ok = check_ref(&r, true, "after populate", why, len);
	if (ok && ptw_clear_refs("1")) {
		snprintf(why, len, "write 1 to clear_refs: %s", strerror(errno));
		ok = false;
	}
	ok = ok && check_ref(&r, false, "after clear_refs 1", why, len);
	if (ok && ptw_region_flush_tlb(&r)) {
		snprintf(why, len, "mprotect: %s", strerror(errno));
		ok = false;
	}
	if (ok)
		ptw_touch(r.addr, r.size, false);
	ok = ok && check_ref(&r, true, "after re-touch", why, len);
	ptw_region_unmap(&r);
	return ok ? PTW_PASS : PTW_FAIL;
}

/* arg: clear_refs value (2 or 3); backing: the file-backed partner */
static enum ptw_result t_mixed(const struct ptw_case *c, char *why, size_t len)
{
	struct ptw_region a, f;
	size_t size = opts.small_mb << 20;
	enum ptw_result res;
	char val[2] = { (char)('0' + c->arg), 0 };
	bool ok;

	res = setup(&a, PTW_ANON, size, why, len);
	if (res != PTW_PASS)
		return res;
	res = setup(&f, c->backing, size, why, len);
	if (res != PTW_PASS) {
		ptw_region_unmap(&a);
		return res;
	}
	ok = check_ref(&a, true, "after populate", why, len) &&
	     check_ref(&f, true, "after populate", why, len);
	if (ok && ptw_clear_refs(val)) {
		snprintf(why, len, "write %s to clear_refs: %s", val,
			 strerror(errno));
		ok = false;
	}
	/* 2: anon cleared, file kept; 3: file cleared, anon kept */
	ok = ok && check_ref(&a, c->arg == 3,
			     c->arg == 2 ? "after clear_refs 2" :
			     "after clear_refs 3", why, len);
	ok = ok && check_ref(&f, c->arg == 2,
			     c->arg == 2 ? "after clear_refs 2" :
			     "after clear_refs 3", why, len);
	ptw_region_unmap(&f);
	ptw_region_unmap(&a);
	return ok ? PTW_PASS : PTW_FAIL;
}

static enum ptw_result t_softdirty(const struct ptw_case *c, char *why,
				   size_t len)
{
	struct ptw_region r;
	size_t size = opts.small_mb << 20, npages, i, unit, nsd = 0;
	size_t bad = SIZE_MAX;
	uint64_t *ent;
	enum ptw_result res;
	bool ok = true;

	if (!ptw_soft_dirty_usable(why, len))
		return PTW_SKIP;
	res = setup(&r, c->backing, size, why, len);
	if (res != PTW_PASS)
		return res;
	npages = size / ptw_page_size;
	unit = c->backing == PTW_THP ? ptw_pmd_size / ptw_page_size : 1;
	ent = calloc(npages, sizeof(*ent));
	if (!ent) {
		snprintf(why, len, "out of memory");
		ptw_region_unmap(&r);
		return PTW_FAIL;
	}
	if (ptw_clear_refs("4")) {
		snprintf(why, len, "write 4 to clear_refs: %s", strerror(errno));
		ok = false;
	}
	if (ok && ptw_pagemap_read(r.addr, npages, ent)) {
		snprintf(why, len, "pagemap read: %s", strerror(errno));
		ok = false;
	}
	for (i = 0; ok && i < npages; i++)
		if (!(ent[i] & PM_PRESENT) || (ent[i] & PM_SOFT_DIRTY)) {
			snprintf(why, len, "after clear_refs 4: page %zu of %zu "
				 "pagemap %#llx (want present, not soft-dirty)",
				 i, npages, (unsigned long long)ent[i]);
			ok = false;
		}
	/* write the first byte of every other unit (page, or huge page) */
	for (i = 0; ok && i < npages; i += 2 * unit)
		r.addr[i * ptw_page_size] ^= 1;
	if (ok && ptw_pagemap_read(r.addr, npages, ent)) {
		snprintf(why, len, "pagemap read: %s", strerror(errno));
		ok = false;
	}
	for (i = 0; ok && i < npages; i++) {
		bool want = (i / unit) % 2 == 0;
		bool sd = ent[i] & PM_SOFT_DIRTY;

		nsd += sd;
		if (sd != want && bad == SIZE_MAX)
			bad = i;
	}
	if (ok)
		ptw_diag("%-5s soft-dirty after writing every other %zu KiB: "
			 "%zu of %zu pages", ptw_backing_name(c->backing),
			 unit * ptw_page_size >> 10, nsd, npages);
	if (ok && bad != SIZE_MAX) {
		snprintf(why, len, "page %zu: soft-dirty %d, expected %d "
			 "(%zu of %zu pages soft-dirty, expected %zu)", bad,
			 !!(ent[bad] & PM_SOFT_DIRTY), (bad / unit) % 2 == 0,
			 nsd, npages, (npages / unit + 1) / 2 * unit);
		ok = false;
	}
	free(ent);
	ptw_region_unmap(&r);
	return ok ? PTW_PASS : PTW_FAIL;
}

int main(int argc, char **argv)
{
	struct ptw_case cases[4 * PTW_NR_BACKINGS];
	unsigned int n = 0;
	int b, v;

	ptw_parse_opts(argc, argv, &opts);
	for (b = 0; b < PTW_NR_BACKINGS; b++) {
		cases[n] = (struct ptw_case){ .fn = t_ref1, .backing = b };
		snprintf(cases[n++].name, sizeof(cases[0].name),
			 "clear_refs_1.%s", ptw_backing_name(b));
	}
	for (v = 2; v <= 3; v++)
		for (b = PTW_SHMEM; b <= PTW_FILE; b++) {
			cases[n] = (struct ptw_case){ .fn = t_mixed,
						      .backing = b, .arg = v };
			snprintf(cases[n++].name, sizeof(cases[0].name),
				 "clear_refs_%d.anon+%s", v,
				 ptw_backing_name(b));
		}
	for (b = 0; b < PTW_NR_BACKINGS; b++) {
		cases[n] = (struct ptw_case){ .fn = t_softdirty, .backing = b };
		snprintf(cases[n++].name, sizeof(cases[0].name),
			 "clear_refs_4.%s", ptw_backing_name(b));
	}
	ptw_diag("region %zu MiB per backing (PTWALK_SMALL_MB)", opts.small_mb);
	return ptw_run_cases(cases, n);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * clear_refs correctness, per backing (the variants anon, thp, shmem, file):
 *  - refs.<backing>.clear_refs_1: "1" clears Referenced: in smaps, touching
 *    sets it again;
 *  - mixed.<shmem|file>.clear_refs_{2,3}: on a process with an anon and a
 *    file-backed VMA, "2" clears anon only, "3" file-backed only;
 *  - refs.<backing>.clear_refs_4: "4" clears soft-dirty (pagemap bit 55),
 *    writes set it again.
 * Each fact is read back through /proc/self/smaps or /proc/self/pagemap.
 *
 * Note: clear_refs 1..3 do not flush the TLB (only 4 does), so a page still
 * cached in the TLB with its Accessed bit set would not set it again on the
 * next touch. Before re-touching we force a flush with an mprotect round
 * trip (which keeps the young bit as is).
 */
#include "ptwalk_test.h"

/* map + populate (write); 1 when a THP region did not become huge */
static int region_setup(struct ptw_region *r, int backing, size_t size,
			char *why, size_t len)
{
	struct ptw_smaps s;

	if (ptw_region_map(r, backing, size, why, len))
		return -1;
	ptw_touch(r->addr, size, true);
	if (ptw_smaps_vma(r->addr, &s)) {
		snprintf(why, len, "%s region not found in smaps",
			 ptw_backing_name(backing));
		ptw_region_unmap(r);
		return -1;
	}
	if (s.start != (uintptr_t)r->addr || s.end != (uintptr_t)r->addr + size) {
		snprintf(why, len, "smaps VMA %lx-%lx != mapping %p+%zu",
			 s.start, s.end, r->addr, size);
		ptw_region_unmap(r);
		return -1;
	}
	if (backing == PTW_THP && s.anon_huge_kb * 1024 != size) {
		snprintf(why, len, "pages did not become huge (AnonHugePages "
			 "%llu of %zu kB)", (unsigned long long)s.anon_huge_kb,
			 size >> 10);
		ptw_region_unmap(r);
		return 1;
	}
	return 0;
}

/* Referenced of r's VMA must be 0 (want_all false) or == Rss == size */
static bool check_ref(struct __test_metadata *_metadata,
		      const struct ptw_region *r, bool want_all,
		      const char *when, char *why, size_t len)
{
	struct ptw_smaps s;
	uint64_t want = want_all ? r->size >> 10 : 0;

	if (ptw_smaps_vma(r->addr, &s)) {
		snprintf(why, len, "%s: smaps entry missing", when);
		return false;
	}
	TH_LOG("%-5s %-28s Rss %6llu kB Referenced %6llu kB",
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

/* ---- one region of each backing ------------------------------------ */

FIXTURE(refs) {
	struct ptw_region r;
	bool mapped;
};

PTW_BACKING_VARIANTS(refs);

FIXTURE_SETUP(refs)
{
	char why[512];
	int r;

	PTW_SKIP_UNLESS_THP(variant->backing, return);
	TH_LOG("region %zu MiB (PTWALK_SMALL_MB)", ptw_opts.small_mb);
	r = region_setup(&self->r, variant->backing, ptw_opts.small_mb << 20,
			 why, sizeof(why));
	if (r > 0)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	self->mapped = true;
}

FIXTURE_TEARDOWN(refs)
{
	if (self->mapped)
		ptw_region_unmap(&self->r);
}

TEST_F_TIMEOUT(refs, clear_refs_1, PTW_TIMEOUT_SHORT)
{
	struct ptw_region *r = &self->r;
	char why[512] = "";

	/* the 6.1 harness runs the test after a SKIP() in setup */
	if (!self->mapped)
		return;
	ASSERT_TRUE(check_ref(_metadata, r, true, "after populate", why,
			      sizeof(why))) TH_LOG("%s", why);
	ASSERT_EQ(0, ptw_clear_refs("1"))
		TH_LOG("write 1 to clear_refs: %s", strerror(errno));
	ASSERT_TRUE(check_ref(_metadata, r, false, "after clear_refs 1", why,
			      sizeof(why))) TH_LOG("%s", why);
	ASSERT_EQ(0, ptw_region_flush_tlb(r))
		TH_LOG("mprotect: %s", strerror(errno));
	ptw_touch(r->addr, r->size, false);
	ASSERT_TRUE(check_ref(_metadata, r, true, "after re-touch", why,
			      sizeof(why))) TH_LOG("%s", why);
}

TEST_F_TIMEOUT(refs, clear_refs_4, PTW_TIMEOUT_SHORT)
{
	struct ptw_region *r = &self->r;
	size_t npages, i, unit, nsd = 0, bad = SIZE_MAX;
	uint64_t *ent;
	char why[512];

	if (!self->mapped)
		return;
	if (!ptw_soft_dirty_usable(why, sizeof(why)))
		SKIP(return, "%s", why);
	npages = r->size / ptw_page_size;
	unit = variant->backing == PTW_THP ? ptw_pmd_size / ptw_page_size : 1;
	ent = calloc(npages, sizeof(*ent));
	ASSERT_NE(NULL, ent) TH_LOG("out of memory");
	ASSERT_EQ(0, ptw_clear_refs("4"))
		TH_LOG("write 4 to clear_refs: %s", strerror(errno));
	ASSERT_EQ(0, ptw_pagemap_read(r->addr, npages, ent))
		TH_LOG("pagemap read: %s", strerror(errno));
	for (i = 0; i < npages; i++)
		ASSERT_TRUE((ent[i] & PM_PRESENT) && !(ent[i] & PM_SOFT_DIRTY))
			TH_LOG("after clear_refs 4: page %zu of %zu pagemap "
			       "%#llx (want present, not soft-dirty)", i,
			       npages, (unsigned long long)ent[i]);
	/* write the first byte of every other unit (page, or huge page) */
	for (i = 0; i < npages; i += 2 * unit)
		r->addr[i * ptw_page_size] ^= 1;
	ASSERT_EQ(0, ptw_pagemap_read(r->addr, npages, ent))
		TH_LOG("pagemap read: %s", strerror(errno));
	for (i = 0; i < npages; i++) {
		bool want = (i / unit) % 2 == 0;
		bool sd = ent[i] & PM_SOFT_DIRTY;

		nsd += sd;
		if (sd != want && bad == SIZE_MAX)
			bad = i;
	}
	TH_LOG("%-5s soft-dirty after writing every other %zu KiB: %zu of %zu "
	       "pages", ptw_backing_name(variant->backing),
	       unit * ptw_page_size >> 10, nsd, npages);
	EXPECT_EQ(SIZE_MAX, bad)
		TH_LOG("page %zu: soft-dirty %d, expected %d (%zu of %zu pages "
		       "soft-dirty, expected %zu)", bad,
		       !!(ent[bad] & PM_SOFT_DIRTY), (bad / unit) % 2 == 0,
		       nsd, npages, (npages / unit + 1) / 2 * unit);
	free(ent);
}

/* ---- an anon and a file-backed region in one process ---------------- */

FIXTURE(mixed) {
	struct ptw_region a, f;
	bool mapped;
};

/* the file-backed partner of the anon region */
FIXTURE_VARIANT(mixed) {
	int backing;
};

FIXTURE_VARIANT_ADD(mixed, shmem) { .backing = PTW_SHMEM };
FIXTURE_VARIANT_ADD(mixed, file) { .backing = PTW_FILE };

FIXTURE_SETUP(mixed)
{
	size_t size = ptw_opts.small_mb << 20;
	char why[512];

	TH_LOG("anon + %s, %zu MiB each (PTWALK_SMALL_MB)",
	       ptw_backing_name(variant->backing), ptw_opts.small_mb);
	ASSERT_EQ(0, region_setup(&self->a, PTW_ANON, size, why, sizeof(why)))
		TH_LOG("%s", why);
	if (region_setup(&self->f, variant->backing, size, why, sizeof(why))) {
		ptw_region_unmap(&self->a);
		ASSERT_TRUE(false) TH_LOG("%s", why);
	}
	self->mapped = true;
}

FIXTURE_TEARDOWN(mixed)
{
	if (!self->mapped)
		return;
	ptw_region_unmap(&self->f);
	ptw_region_unmap(&self->a);
}

/* 2: anon cleared, file kept; 3: file cleared, anon kept */
static void check_mixed(struct __test_metadata *_metadata,
			FIXTURE_DATA(mixed) *self, int val)
{
	char v[2] = { (char)('0' + val), 0 }, when[32], why[512] = "";

	snprintf(when, sizeof(when), "after clear_refs %d", val);
	ASSERT_TRUE(check_ref(_metadata, &self->a, true, "after populate",
			      why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_TRUE(check_ref(_metadata, &self->f, true, "after populate",
			      why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_EQ(0, ptw_clear_refs(v))
		TH_LOG("write %s to clear_refs: %s", v, strerror(errno));
	ASSERT_TRUE(check_ref(_metadata, &self->a, val == 3, when, why,
			      sizeof(why))) TH_LOG("%s", why);
	ASSERT_TRUE(check_ref(_metadata, &self->f, val == 2, when, why,
			      sizeof(why))) TH_LOG("%s", why);
}

TEST_F_TIMEOUT(mixed, clear_refs_2, PTW_TIMEOUT_SHORT)
{
	check_mixed(_metadata, self, 2);
}

TEST_F_TIMEOUT(mixed, clear_refs_3, PTW_TIMEOUT_SHORT)
{
	check_mixed(_metadata, self, 3);
}

#include "ptwalk_test_main.h"

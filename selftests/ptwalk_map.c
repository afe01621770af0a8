// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk selftests helpers: the mappings the tests walk, per backing.
 * Declared in ptwalk_util.h.
 */
#include "ptwalk_util_int.h"

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

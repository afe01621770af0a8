// SPDX-License-Identifier: GPL-2.0
/* ptwalk_trigger: see ptwalk_trigger.h. */
#include "ptwalk_trigger.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int ptw_trigger_clear_refs(int fd, const char *value)
{
	size_t n = strlen(value);
	ssize_t w;

	do {
		w = write(fd, value, n);
	} while (w < 0 && errno == EINTR);
	if (w < 0)
		return errno;
	return w == (ssize_t)n ? 0 : EIO;
}

long long ptw_trigger_read_all(int fd, char *buf, size_t len, int keep, size_t *kept,
			       ptw_trigger_each_fn each, void *arg)
{
	const size_t tail = len < 65536 ? len : 65536;
	long long total = 0;
	size_t off = 0;

	if (!len)
		return -EINVAL;
	for (;;) {
		/* reads as large as the buffer allows (a seq_file drops
		 * mmap_lock between reads, so their size shapes the walk);
		 * what fits below the tail stays, the tail takes the rest
		 */
		char *dst = buf + off;
		size_t room = len - off;
		ssize_t n;

		if (room < tail) {
			dst = buf + len - tail;
			room = tail;
		}
		n = read(fd, dst, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		total += n;
		if (off + (size_t)n <= len - tail)
			off += (size_t)n;
		if (each)
			each(arg);
	}
	if (kept)
		*kept = keep ? off : 0;
	return total;
}

long long ptw_trigger_pagemap(int fd, uint64_t start, uint64_t end, void *buf, size_t len,
			      ptw_trigger_each_fn each, void *arg)
{
	const long page = sysconf(_SC_PAGESIZE);
	const uint64_t first = start / (uint64_t)page * 8, last = end / (uint64_t)page * 8;
	const int whole = last - first <= len; /* the entries land in order */
	uint64_t off = first;
	long long total = 0;

	if (len < 8)
		return -EINVAL;
	len -= len % 8;
	while (off < last) {
		char *dst = (char *)buf + (whole ? off - first : 0);
		size_t want = last - off < len ? (size_t)(last - off) : len;
		ssize_t n = pread(fd, dst, want, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		total += n;
		off += (uint64_t)n;
		if (each)
			each(arg);
	}
	return total;
}

long ptw_trigger_pagemap_scan(int fd, struct pm_scan_arg *arg)
{
	long r;

	arg->size = sizeof(*arg);
	do {
		r = ioctl(fd, PAGEMAP_SCAN, arg);
	} while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

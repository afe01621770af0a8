// SPDX-License-Identifier: GPL-2.0
// lib/ptwalk_trigger.c, the walk triggers shared by the scanner, the
// selftests and the module's test walker, on this process's own /proc files.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#include "ptwalk_trigger.h"

namespace {

const size_t kPage = size_t(sysconf(_SC_PAGESIZE));

void count(void *arg)
{
	++*static_cast<int *>(arg);
}

struct Touched {
	explicit Touched(size_t pages) : n(pages)
	{
		p = static_cast<char *>(mmap(nullptr, n * kPage, PROT_READ | PROT_WRITE,
					     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
		if (p != MAP_FAILED) {
			madvise(p, n * kPage, MADV_NOHUGEPAGE);
			for (size_t i = 0; i < n; i++)
				p[i * kPage] = 1;
		}
	}
	~Touched()
	{
		if (p != MAP_FAILED)
			munmap(p, n * kPage);
	}
	uint64_t start() const { return uint64_t(uintptr_t(p)); }
	uint64_t end() const { return start() + n * kPage; }
	size_t n;
	char *p;
};

TEST(Trigger, ReadAllKeepsASmallTextAndCountsEveryRead)
{
	char path[] = "/tmp/ptwalk-trigger-XXXXXX";
	int fd = mkstemp(path);
	ASSERT_GE(fd, 0);
	unlink(path);
	std::string text(10000, 'x');
	for (size_t i = 0; i < text.size(); i += 97)
		text[i] = char('a' + i % 26);
	ASSERT_EQ(write(fd, text.data(), text.size()), ssize_t(text.size()));
	std::vector<char> buf(128 << 10);
	size_t kept = 7;
	int reads = 0;
	ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
	EXPECT_EQ(ptw_trigger_read_all(fd, buf.data(), buf.size(), 1, &kept, count, &reads), 10000);
	EXPECT_EQ(kept, 10000u);
	EXPECT_EQ(std::string(buf.data(), kept), text);
	EXPECT_EQ(reads, 1);
	// a larger file in a small buffer: all read and counted, nothing kept
	std::string big(300000, 'y');
	ASSERT_EQ(write(fd, big.data(), big.size()), ssize_t(big.size()));
	ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
	reads = 0;
	EXPECT_EQ(ptw_trigger_read_all(fd, buf.data(), 4096, 0, &kept, count, &reads), 310000);
	EXPECT_EQ(kept, 0u);
	EXPECT_EQ(reads, (310000 + 4095) / 4096);
	close(fd);
	EXPECT_EQ(ptw_trigger_read_all(fd, buf.data(), buf.size(), 0, nullptr, nullptr, nullptr),
		  -EBADF);
}

TEST(Trigger, PagemapEntriesInOrderOrThroughASmallBuffer)
{
	Touched t(64);
	ASSERT_NE(t.p, MAP_FAILED);
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	std::vector<uint64_t> ent(64, 0);
	int reads = 0;
	EXPECT_EQ(ptw_trigger_pagemap(fd, t.start(), t.end(), ent.data(), ent.size() * 8, count,
				      &reads),
		  64 * 8);
	EXPECT_EQ(reads, 1);
	for (size_t i = 0; i < ent.size(); i++)
		EXPECT_TRUE(ent[i] >> 63) << "page " << i << " not present";
	// 8 entries a read: 8 reads, the same 512 bytes
	reads = 0;
	EXPECT_EQ(ptw_trigger_pagemap(fd, t.start(), t.end(), ent.data(), 64, count, &reads),
		  64 * 8);
	EXPECT_EQ(reads, 8);
	EXPECT_EQ(ptw_trigger_pagemap(fd, t.start(), t.end(), ent.data(), 4, nullptr, nullptr),
		  -EINVAL);
	close(fd);
}

TEST(Trigger, PagemapScanFindsThePresentRange)
{
	Touched t(64);
	ASSERT_NE(t.p, MAP_FAILED);
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	page_region vec[4];
	pm_scan_arg arg{};
	arg.start = t.start();
	arg.end = t.end();
	arg.vec = uint64_t(uintptr_t(vec));
	arg.vec_len = 4;
	arg.category_mask = PAGE_IS_PRESENT;
	arg.return_mask = PAGE_IS_PRESENT;
	long n = ptw_trigger_pagemap_scan(fd, &arg);
	close(fd);
	if (n == -ENOTTY || n == -EINVAL)
		GTEST_SKIP() << "PAGEMAP_SCAN not in this kernel (6.7+): " << strerror(int(-n));
	ASSERT_EQ(n, 1);
	EXPECT_EQ(arg.size, sizeof(arg));
	EXPECT_EQ(vec[0].start, t.start());
	EXPECT_EQ(vec[0].end, t.end());
	EXPECT_EQ(arg.walk_end, t.end());
}

TEST(Trigger, ClearRefsOnItselfAndErrors)
{
	Touched t(16);
	ASSERT_NE(t.p, MAP_FAILED);
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	EXPECT_EQ(ptw_trigger_clear_refs(fd, "1"), 0);
	EXPECT_EQ(ptw_trigger_clear_refs(fd, "4\n"), 0);
	EXPECT_EQ(ptw_trigger_clear_refs(fd, "9"), EINVAL); // the kernel refuses it
	close(fd);
	EXPECT_EQ(ptw_trigger_clear_refs(fd, "1"), EBADF);
}

} // namespace

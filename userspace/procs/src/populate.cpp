// SPDX-License-Identifier: GPL-2.0
// The workload's populate(): see workload.hpp.
#include <atomic>
#include <cerrno>
#include <sys/mman.h>
#include <thread>
#include <vector>

#include "ptwalk/workload.hpp"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace ptwalk {

namespace {

constexpr size_t kChunk = 64u << 20;

void touch_range(uint8_t *p, size_t len, bool write, size_t page)
{
	volatile uint8_t *v = p;
	for (size_t off = 0; off < len; off += page) {
		if (write)
			v[off] = 1;
		else
			(void)v[off];
	}
}

} // namespace

int populate(void *addr, size_t len, bool write, unsigned threads, std::atomic<uint64_t> *progress,
	     const char **method)
{
	auto *base = static_cast<uint8_t *>(addr);
	const int advice = write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ;
	// probe once: MADV_POPULATE_* exist since 5.14
	bool use_madvise = madvise(base, 0, advice) == 0 || (errno != EINVAL && errno != ENOSYS);
	if (method)
		*method = use_madvise ? (write ? "MADV_POPULATE_WRITE" : "MADV_POPULATE_READ")
				      : "touch";
	std::atomic<size_t> next{0};
	std::atomic<int> error{0};
	auto worker = [&] {
		for (;;) {
			size_t off = next.fetch_add(kChunk);
			if (off >= len || error.load())
				return;
			size_t n = std::min(kChunk, len - off);
			if (use_madvise) {
				while (madvise(base + off, n, advice) != 0) {
					if (errno == EINTR || errno == EAGAIN)
						continue;
					error = errno;
					return;
				}
			} else {
				touch_range(base + off, n, write, 4096);
			}
			if (progress)
				progress->fetch_add(n);
		}
	};
	if (threads == 0)
		threads = 1;
	std::vector<std::thread> pool;
	for (unsigned i = 1; i < threads; i++)
		pool.emplace_back(worker);
	worker();
	for (auto &t : pool)
		t.join();
	return error.load();
}

} // namespace ptwalk

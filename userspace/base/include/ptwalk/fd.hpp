// SPDX-License-Identifier: GPL-2.0
// RAII owners for file descriptors and mappings.
#pragma once

#include <cstddef>
#include <sys/mman.h>
#include <unistd.h>
#include <utility>

namespace ptwalk {

class Fd {
public:
	Fd() = default;
	explicit Fd(int fd) : fd_(fd) {}
	Fd(const Fd &) = delete;
	Fd &operator=(const Fd &) = delete;
	Fd(Fd &&o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
	Fd &operator=(Fd &&o) noexcept
	{
		if (this != &o) {
			reset();
			fd_ = std::exchange(o.fd_, -1);
		}
		return *this;
	}
	~Fd() { reset(); }
	int get() const { return fd_; }
	explicit operator bool() const { return fd_ >= 0; }
	int release() { return std::exchange(fd_, -1); }
	void reset(int fd = -1)
	{
		if (fd_ >= 0)
			close(fd_);
		fd_ = fd;
	}

private:
	int fd_ = -1;
};

class Mapping {
public:
	Mapping() = default;
	Mapping(void *addr, size_t len) : addr_(addr), len_(len) {}
	Mapping(const Mapping &) = delete;
	Mapping &operator=(const Mapping &) = delete;
	Mapping(Mapping &&o) noexcept
		: addr_(std::exchange(o.addr_, nullptr)), len_(std::exchange(o.len_, 0))
	{
	}
	Mapping &operator=(Mapping &&o) noexcept
	{
		if (this != &o) {
			reset();
			addr_ = std::exchange(o.addr_, nullptr);
			len_ = std::exchange(o.len_, 0);
		}
		return *this;
	}
	~Mapping() { reset(); }
	void *get() const { return addr_; }
	size_t size() const { return len_; }
	explicit operator bool() const { return addr_ != nullptr; }
	void reset()
	{
		if (addr_)
			munmap(addr_, len_);
		addr_ = nullptr;
		len_ = 0;
	}

private:
	void *addr_ = nullptr;
	size_t len_ = 0;
};

} // namespace ptwalk

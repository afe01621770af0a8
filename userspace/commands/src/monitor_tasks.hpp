// SPDX-License-Identifier: GPL-2.0
// ptwalk monitor's view of tasks, for monitor.cpp only: a task's comm in
// /proc (the names kept are model's TaskNames), and the prober that makes
// the kernel take each process's mmap_lock so the trace learns which mm is
// whose (Prober).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#include "ptwalk/clock.hpp"
#include "ptwalk/procfs.hpp"

namespace ptwalk::monitor_detail {

inline std::string trim_nl(std::string s)
{
	while (!s.empty() && s.back() == '\n')
		s.pop_back();
	return s;
}

inline std::string proc_comm(pid_t pid)
{
	if (pid <= 0)
		return "";
	auto t = read_file("/proc/" + std::to_string(pid) + "/comm", nullptr);
	return t ? trim_nl(*t) : "";
}

inline pid_t my_tid()
{
	return pid_t(syscall(SYS_gettid));
}

// The prober: reads /proc/PID/cmdline of processes so that the kernel takes
// their mmap_lock on its behalf; the trace sees that lock event (its tid,
// inside the logged interval) and so learns each process's mm.
class Prober {
public:
	struct Entry {
		pid_t pid;
		uint64_t t0, t1;
	};
	~Prober() { stop(); }
	void start()
	{
		std::unique_lock<std::mutex> l(mu_);
		running_ = true;
		full_scan_ = true;
		thread_ = std::thread([this] { run(); });
		ready_.wait(l, [this] { return tid_ != 0; });
	}
	void stop()
	{
		{
			std::lock_guard<std::mutex> g(mu_);
			if (!running_)
				return;
			running_ = false;
		}
		cv_.notify_all();
		if (thread_.joinable())
			thread_.join();
	}
	pid_t tid() const { return tid_; }
	// a new process or an exec: probe it soon
	void queue(pid_t pid)
	{
		std::lock_guard<std::mutex> g(mu_);
		queue_[pid] = now_ns() + 20'000'000; // after a fork, exec usually follows
	}
	// unknown mm seen: probe every process again (at most every 2 s)
	void rescan()
	{
		std::lock_guard<std::mutex> g(mu_);
		if (now_ns() >= last_full_ + 2'000'000'000ull) {
			full_scan_ = true;
			cv_.notify_all();
		}
	}
	// pid probed at time t (the trace thread), or 0
	pid_t at(uint64_t t) const
	{
		std::lock_guard<std::mutex> g(mu_);
		for (auto it = log_.rbegin(); it != log_.rend(); ++it)
			if (it->t0 <= t && t <= it->t1)
				return it->pid;
		return 0;
	}
	std::string comm(pid_t pid) const
	{
		std::lock_guard<std::mutex> g(mu_);
		auto it = comms_.find(pid);
		return it == comms_.end() ? "" : it->second;
	}
	uint64_t probes() const { return probes_.load(); }
	// Waits until the first full scan is done (bounded).
	void wait_first_scan(uint64_t timeout_ns)
	{
		std::unique_lock<std::mutex> l(mu_);
		ready_.wait_for(l, std::chrono::nanoseconds(timeout_ns),
				[this] { return last_full_ != 0; });
	}

private:
	void probe(pid_t pid)
	{
		const std::string d = "/proc/" + std::to_string(pid);
		std::string c = proc_comm(pid);
		Fd fd(open((d + "/cmdline").c_str(), O_RDONLY | O_CLOEXEC));
		if (!fd)
			return;
		char b[1];
		const uint64_t t0 = now_ns();
		ssize_t n = read(fd.get(), b, 1); // access_remote_vm: mmap_read_lock
		const uint64_t t1 = now_ns();
		probes_++;
		if (n <= 0)
			return; // kernel thread or zombie: no mm
		std::lock_guard<std::mutex> g(mu_);
		log_.push_back({pid, t0, t1});
		while (!log_.empty() && log_.front().t1 + 30'000'000'000ull < t1)
			log_.pop_front();
		if (!c.empty())
			comms_[pid] = c;
		if (comms_.size() > 65536)
			comms_.clear(); // bounded; names are re-read on the next probe
	}
	void run()
	{
		{
			std::lock_guard<std::mutex> g(mu_);
			tid_ = my_tid();
		}
		ready_.notify_all();
		const pid_t self = getpid();
		std::unique_lock<std::mutex> l(mu_);
		while (running_) {
			std::vector<pid_t> todo;
			bool full = full_scan_;
			full_scan_ = false;
			const uint64_t now = now_ns();
			for (auto it = queue_.begin(); it != queue_.end();) {
				if (it->second <= now || full) {
					todo.push_back(it->first);
					it = queue_.erase(it);
				} else {
					++it;
				}
			}
			l.unlock();
			if (full) {
				if (DIR *d = opendir("/proc")) {
					while (dirent *e = readdir(d)) {
						char *end;
						long p = strtol(e->d_name, &end, 10);
						if (*end == 0 && p > 0)
							todo.push_back(pid_t(p));
					}
					closedir(d);
				}
			}
			std::sort(todo.begin(), todo.end());
			todo.erase(std::unique(todo.begin(), todo.end()), todo.end());
			for (pid_t p : todo)
				if (p != self)
					probe(p);
			l.lock();
			if (full) {
				last_full_ = now_ns();
				ready_.notify_all();
			}
			cv_.wait_for(l, std::chrono::milliseconds(100),
				     [this] { return !running_ || full_scan_; });
		}
	}

	mutable std::mutex mu_;
	std::condition_variable cv_, ready_;
	std::thread thread_;
	bool running_ = false, full_scan_ = false;
	pid_t tid_ = 0;
	uint64_t last_full_ = 0;
	std::map<pid_t, uint64_t> queue_;
	std::deque<Entry> log_;
	std::unordered_map<pid_t, std::string> comms_;
	std::atomic<uint64_t> probes_{0};
};

} // namespace ptwalk::monitor_detail

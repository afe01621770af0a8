// SPDX-License-Identifier: GPL-2.0
// The stop signals of a command (SIGINT, SIGTERM, SIGHUP), one setup for
// `ptwalk run` and both monitors: caught while a StopSignals lives, the
// previous handlers restored after it, and the last one caught readable
// from the handler's flag. One flag for the process: commands do not nest.
#pragma once

#include <csignal>

namespace ptwalk {

class StopSignals {
public:
	StopSignals();  // the flag cleared, the handlers installed
	~StopSignals(); // the previous handlers back
	StopSignals(const StopSignals &) = delete;
	StopSignals &operator=(const StopSignals &) = delete;

	// 0, or the number of the last stop signal caught
	static int caught() { return int(flag()); }
	// what the handler writes, for code that polls it (measure_alias_bias)
	static volatile sig_atomic_t &flag();

private:
	static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction old_[3];
	bool ok_[3] = {false, false, false};
};

} // namespace ptwalk

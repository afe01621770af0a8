// SPDX-License-Identifier: GPL-2.0
// Least privilege after start: once a command holds the fds it needed
// privileges to open (BPF programs, perf events), every thread of the
// process keeps only the capabilities named, in its effective, permitted
// and bounding sets; inheritable and ambient sets end empty.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

namespace ptwalk {

// Capability numbers as <linux/capability.h> has them (CAP_SYS_PTRACE...);
// one the process does not hold is not kept (capset(2) cannot raise it).
// "" when every thread holds exactly `keep`, else what failed (with errno
// text). Capabilities are per thread (capset(2) and PR_CAPBSET_DROP
// change the caller only) and the threads the caller already runs (an
// HTTP server's, readers) would keep theirs: each sets its own, in a
// signal handler, until /proc/self/task/*/status shows every one done.
// Dropping from the bounding set takes CAP_SETPCAP: without it in the
// effective set, the bounding set stays as it was and *bounding_kept says
// so (true when it holds more than `keep`).
std::string keep_only_capabilities(std::initializer_list<int> keep, bool *bounding_kept);

// The mask /proc/PID/status prints (CapEff:, CapPrm:, CapBnd:) for `caps`.
uint64_t capability_mask(std::initializer_list<int> caps);

} // namespace ptwalk

// SPDX-License-Identifier: GPL-2.0
// `ptwalk locking`: each walk kind's locking on a kernel release, from the
// one table every figure of ptwalk uses (model/locking_table).
#include <cstdio>
#include <string>

#include "ptwalk/locking_table.hpp"
#include "ptwalk/procfs.hpp"
#include "options.hpp"

namespace ptwalk::cli {

namespace {

const char kLockingUsage[] =
	"usage: ptwalk locking [--release R] [--json]\n"
	"\n"
	"Each walk kind's locking on the running kernel (uname -r) or on release R\n"
	"(\"7.3.4+deb13-amd64\", \"6.12\"): the mmap_lock mode and what one hold\n"
	"covers, or none where the kind walks under per-VMA locks, and whether an\n"
	"mmap_lock waiter waits for such a walk. basis: table (no change known up\n"
	"to this release), changed (the kind's locking changed by it), unread (a\n"
	"release between the last read with the old locking and the first read\n"
	"with the new: a run there, ptwalk run --backend module, tells). The same\n"
	"table every figure of ptwalk uses; --json adds the kernel source each fact\n"
	"was read in.\n"
	"\n"
	"  --release R          a kernel release instead of the running one\n"
	"  --json               JSON on stdout\n";

} // namespace

int cmd_locking(Args &a)
{
	std::string release, k, v;
	bool json = false, given = false;
	if (wants_help(a)) {
		fputs(kLockingUsage, stdout);
		return 0;
	}
	while (a.next(&k, &v, {"--json"})) {
		if (k == "--json") {
			json = true;
		} else if (k == "--release") {
			if (v.empty() || v.size() > 64 || v[0] < '0' || v[0] > '9' ||
			    v.find('.') == std::string::npos)
				usage_error(a.cmd, "--release '" + v.substr(0, 64) +
							   "': a kernel release (MAJOR.MINOR...)");
			release = v;
			given = true;
		} else {
			usage_error(a.cmd, "unknown option '" + k + "'");
		}
	}
	if (!given) {
		const KernelInfo ki = kernel_info();
		if (ki.uname)
			release = ki.uname->release;
	}
	if (json)
		printf("%s\n", locking_table_json(release).dump(1).c_str());
	else
		fputs(locking_table_text(release).c_str(), stdout);
	return 0;
}

} // namespace ptwalk::cli

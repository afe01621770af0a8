#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# One suite of a boot that runs several (scripts/ptwalk_vm/suites.py), inside
# a kernel booted by scripts/ptwalk-vm (busybox sh). The suite's own files go
# to /results/NAME (PTWALK_RESULTS), what the host needs to judge it apart
# from the other suites of the boot to /results/.suites/NAME:
#   stdout, stderr   the suite's output
#   status           "RC ELAPSED_S LIMIT_S TIMED_OUT" (guest clock)
#   dmesg            the kernel log when the suite ended; its part from
#                    the "ptwalk-suite: begin NAME" line on is the suite's
#                    (a suite that clears the log keeps only its own part)
# The kernel log marks each suite's begin and end, so the console log can be
# split the same way. A suite that leaves ptwalk.ko loaded (one that timed
# out, or failed halfway) has it unloaded here, and says so in its stderr,
# so that the next suite starts from the same state as in a boot of its own.
#
# usage: suite.sh NAME LIMIT_S COMMAND [ARG...]
set -u
name=${1:?name}
limit=${2:?limit}
shift 2
R=/results/$name
M=/results/.suites/$name
mkdir -p "$R" "$M"
now() { cut -d' ' -f1 /proc/uptime; }
echo "suite $name" > /tmp/.phase
echo "ptwalk-suite: begin $name" > /dev/kmsg
t0=$(now)
# timeout(1) sends SIGTERM at the limit, then SIGKILL 10 s later
PTWALK_RESULTS=$R timeout -k 10 "$limit" "$@" > "$M/stdout" 2> "$M/stderr" < /dev/null
rc=$?
t1=$(now)
elapsed=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
late=$(awk -v e="$elapsed" -v l="$limit" 'BEGIN { print (e >= l) ? 1 : 0 }')
if [ -d /sys/module/ptwalk ]; then
	echo "suite.sh: ptwalk.ko still loaded after suite $name: unloaded" >> "$M/stderr"
	for p in inject_delay_ns inject_slot_late_ns inject_mark_late_ns inject_stamp_late_ns; do
		echo 0 > /sys/module/ptwalk/parameters/$p 2>/dev/null
	done
	rmmod ptwalk 2>> "$M/stderr"
fi
echo "ptwalk-suite: end $name $rc" > /dev/kmsg
dmesg -r > "$M/dmesg"
echo "$rc $elapsed $limit $late" > "$M/status"
echo "suite $name: exit $rc in $elapsed s"
exit "$rc"

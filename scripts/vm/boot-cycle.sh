#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# One boot of the boot-reliability test (scripts/tests/test_vm_boot_reliability.py),
# inside a kernel booted by scripts/ptwalk-vm (busybox sh), in two stages:
#   bare:   the kernel alone: which one runs, two clear_refs and two smaps
#           walks of a 32 MiB target by the walker (its mmap victim thread
#           stalled behind them), and the kernel log so far;
#   module: ptwalk.ko loaded, the same walks, the module's walk records,
#           ptwalk.ko unloaded.  KO "none" (a kernel ptwalk.ko cannot be
#           built for): the bare stage alone.
# The host checks each stage's files and the kernel log; a boot that dies
# is charged to the stage whose files are missing. Exits non-zero at the
# first step that fails (10 + the step).
#
# usage: boot-cycle.sh KO|none WALKER
set -u
KO=${1:?ko}
WALKER=${2:?walker}
R=/results
uname -r > $R/release
"$WALKER" -m 32 -n 2 -s clear_refs smaps > $R/bare-walker.txt || exit 11
dmesg > $R/bare-dmesg.txt
[ "$KO" = none ] && exit 0
mountpoint -q /sys/kernel/debug 2>/dev/null || mount -t debugfs none /sys/kernel/debug
insmod "$KO" || exit 12
"$WALKER" -m 32 -n 2 -s clear_refs smaps > $R/walker.txt || exit 13
cat /sys/kernel/debug/ptwalk/walks > $R/walks.txt || exit 14
rmmod ptwalk || exit 15
[ ! -d /sys/module/ptwalk ] || exit 16
echo done > $R/module-done
exit 0

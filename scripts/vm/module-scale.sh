#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# ptwalk.ko at incident-like scale inside a VM kernel: an aliased mapping of
# SIZE (16M PTEs at 64G) walked by clear_refs; the module's records,
# counters and histograms go to /results for the host-side checks.
# usage: module-scale.sh KO PTWALK SIZE
set -u
KO=$1 PTWALK=$2 SIZE=$3
R=/results
mountpoint -q /sys/kernel/debug 2>/dev/null || mount -t debugfs none /sys/kernel/debug
insmod "$KO" || exit 1
"$PTWALK" run --backend module --size "$SIZE" --backing alias --physical 256M \
	--calibrate-size 0 --scanner clear_refs --interval 1s --scans 3 --duration 300s --victims mmap \
	--out $R/scale.json
rc=$?
for f in counters hist walks; do cat /sys/kernel/debug/ptwalk/$f > $R/$f.txt; done
rmmod ptwalk || rc=1
exit $rc

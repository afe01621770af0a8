#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The per-kernel locking facts against a kernel that changed them, inside a
# kernel booted by scripts/ptwalk-vm (Debian 7.3 cloud: smaps under per-VMA
# locks): smaps and, as the control, smaps_rollup with the tracepoint
# backend, then smaps with the vma victim and PAGEMAP_SCAN with ptwalk.ko's
# views and the tracepoints beside it (--cross-check).  Results go to
# $PTWALK_RESULTS; scripts/tests/test_locking_in_vm.py judges them.
# usage: locking.sh KO PTWALK
set -u
KO=${1:?ko}
PTWALK=${2:?ptwalk}
R=${PTWALK_RESULTS:-/results}
mkdir -p "$R"
COMMON="--size 256M --backing anon --populate-threads 1 --interval 200ms --op-interval 500us"
for k in smaps smaps_rollup; do
	# shellcheck disable=SC2086 # COMMON is words
	"$PTWALK" run --backend tracepoint $COMMON --scanner $k --duration 6s \
		--victims mmap,fault --out "$R/$k.json" > "$R/$k.txt" 2>&1
	echo "$k exit $?"
done
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
insmod "$KO" || { echo "insmod exit $?"; exit 1; }
# shellcheck disable=SC2086
"$PTWALK" run --backend module --cross-check $COMMON --scanner smaps --duration 6s \
	--victims vma,mmap --out "$R/smaps_vma.json" > "$R/smaps_vma.txt" 2>&1
echo "smaps_vma exit $?"
# shellcheck disable=SC2086
"$PTWALK" run --backend module --cross-check $COMMON --scanner pagemap_scan --duration 4s \
	--victims mmap,fault --out "$R/pagemap_scan.json" > "$R/pagemap_scan.txt" 2>&1
echo "pagemap_scan exit $?"
rmmod ptwalk

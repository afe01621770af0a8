#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The stall table's runs in one kernel (scripts/ptwalk-stall-table): each
# walk kind given (ptwalk.ko's contract) against the victims read, fault, mmap
# and vma, through ptwalk.ko when one is given and loads (its VMA-lock view
# where the kernel's VMA locks are reference counts), else the mmap_lock
# tracepoints. A kind the kernel lacks (PAGEMAP_SCAN before 6.7) exits 4:
# recorded as such, not a failure.
#
# usage: stall-table.sh PTWALK OUT SIZE KO|- KIND...
set -u
PTWALK=$1 OUT=$2 SIZE=$3 KO=$4
shift 4
mkdir -p "$OUT"
backend=tracepoint
if [ "$KO" != - ]; then
	mountpoint -q /sys/kernel/debug 2>/dev/null || mount -t debugfs none /sys/kernel/debug
	if insmod "$KO"; then backend=module; else echo "stall-table: ptwalk.ko did not load"; fi
fi
echo "stall-table: backend $backend, kernel $(uname -r)"
fail=0
for k in "$@"; do
	"$PTWALK" run --backend $backend --size "$SIZE" --backing anon --populate-threads 1 \
		--scanner $k --interval 200ms --duration 4s --victims read,fault,mmap,vma \
		--op-interval 1ms --quiet --out "$OUT/$k.json" > "$OUT/$k.txt" 2>&1
	rc=$?
	echo "stall-table: $k exit $rc"
	[ $rc = 0 ] || [ $rc = 4 ] || fail=1
done
[ "$backend" = module ] && rmmod ptwalk
exit $fail

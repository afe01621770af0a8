#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A reference table's runs in one kernel, through ptwalk.ko when one is
# given and loads (its VMA-lock view where the kernel's VMA locks are
# reference counts), else the mmap_lock tracepoints. TABLE:
#   stall-table (scripts/ptwalk-stall-table): ITEM a walk kind (ptwalk.ko's
#     contract) against the victims read, fault, mmap and vma; a kind the
#     kernel lacks (PAGEMAP_SCAN before 6.7) exits 4: recorded as such, not
#     a failure.
#   working-set (scripts/ptwalk-working-set-table): ITEM SHARE,PATTERN, the
#     wss scanner (clear_refs, then smaps Referenced) against that known
#     working set, with the victims mmap and fault; damon:SHARE,PATTERN the
#     damon scanner (DAMON vaddr) the same way. In a guest (ptwalk-vm's
#     kernel command line) damon_stat, which Debian's 6.18 and 7.3 turn on
#     and which excludes every other kdamond, is turned off first: the
#     guest is the table's own. Never on a host.
# Each run prints "TABLE: NAME exit RC", which the table's script reads.
#
# usage: table-runs.sh PTWALK OUT SIZE KO|- TABLE ITEM...
set -u
PTWALK=$1 OUT=$2 SIZE=$3 KO=$4 TABLE=$5
shift 5
case $TABLE in
stall-table | working-set) ;;
*) echo "table-runs: no table $TABLE (stall-table, working-set)" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
backend=tracepoint
if [ "$KO" != - ]; then
	mountpoint -q /sys/kernel/debug 2>/dev/null || mount -t debugfs none /sys/kernel/debug
	if insmod "$KO"; then backend=module; else echo "$TABLE: ptwalk.ko did not load"; fi
fi
echo "$TABLE: backend $backend, kernel $(uname -r)"
stat=/sys/module/damon_stat/parameters/enabled
if [ "$TABLE" = working-set ] && grep -q ptwalk_accel= /proc/cmdline && [ -w $stat ]; then
	echo N > $stat && echo "$TABLE: damon_stat turned off in this guest"
fi
fail=0
for item in "$@"; do # items hold no blanks: $opts splits on them
	if [ "$TABLE" = stall-table ]; then
		name=$item opts="--scanner $item --victims read,fault,mmap,vma"
	elif [ "${item#damon:}" != "$item" ]; then
		name=damon-$(echo "${item#damon:}" | tr , -)
		opts="--working-set ${item#damon:} --scanner damon --victims mmap,fault"
	else
		name=ws-$(echo "$item" | tr , -)
		opts="--working-set $item --scanner wss --victims mmap,fault"
	fi
	# shellcheck disable=SC2086 # $opts splits into its words on purpose
	"$PTWALK" run --backend $backend --size "$SIZE" --backing anon --populate-threads 1 \
		--interval 200ms --duration 4s --op-interval 1ms --quiet $opts \
		--out "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
	rc=$?
	echo "$TABLE: $name exit $rc"
	# 4: a kind or method this kernel lacks, recorded as such
	[ $rc = 0 ] || [ $rc = 4 ] || fail=1
done
[ "$backend" = module ] && rmmod ptwalk
exit $fail

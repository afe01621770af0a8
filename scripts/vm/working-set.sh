#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The working-set table's runs in one kernel (scripts/ptwalk-working-set-table):
# the wss scanner (clear_refs, then smaps Referenced) against a known working
# set, one run per SHARE,PATTERN given, with the victims mmap and fault,
# through ptwalk.ko when one is given and loads, else the mmap_lock
# tracepoints.
#
# usage: working-set.sh PTWALK OUT SIZE KO|- SPEC...
set -u
PTWALK=$1 OUT=$2 SIZE=$3 KO=$4
shift 4
mkdir -p "$OUT"
backend=tracepoint
if [ "$KO" != - ]; then
	mountpoint -q /sys/kernel/debug 2>/dev/null || mount -t debugfs none /sys/kernel/debug
	if insmod "$KO"; then backend=module; else echo "working-set: ptwalk.ko did not load"; fi
fi
echo "working-set: backend $backend, kernel $(uname -r)"
fail=0
for spec in "$@"; do
	name=ws-$(echo "$spec" | tr , -)
	"$PTWALK" run --backend $backend --size "$SIZE" --backing anon --populate-threads 1 \
		--working-set "$spec" --scanner wss --interval 200ms --duration 4s \
		--victims mmap,fault --op-interval 1ms --quiet --out "$OUT/$name.json" \
		> "$OUT/$name.txt" 2>&1
	rc=$?
	echo "working-set: $name exit $rc"
	[ $rc = 0 ] || fail=1
done
[ "$backend" = module ] && rmmod ptwalk
exit $fail

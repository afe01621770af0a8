#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `ptwalk run --scanner damon` inside a kernel booted by scripts/ptwalk-vm
# that has DAMON vaddr and its sysfs (Debian 6.12 and 7.3 cloud): the known
# working set under DAMON with the kernel's own count of aggregations
# traced, then a second run whose scanner is killed mid-run.  Debian's 7.3
# turns damon_stat on, which excludes every other kdamond: it is turned off
# first (the test's own doing; ptwalk never does that itself).  Results go
# to $PTWALK_RESULTS; scripts/tests/test_damon_in_vm.py judges them.
# usage: damon.sh PTWALK
set -u
PTWALK=${1:?ptwalk}
R=${PTWALK_RESULTS:-/results}
mkdir -p "$R"
NR=/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds
T=/sys/kernel/tracing
# damon_aggregated fires for each region as kdamond_reset_aggregated() ends
# an aggregation (7.3.4 mm/damon/core.c 2218), on CLOCK_MONOTONIC, the clock
# of the scanner's reads
AGGR=$T/events/damon/damon_aggregated/enable
run() {	# NAME DURATION
	"$PTWALK" run --scanner damon --working-set 0.25,hot --size 64M --backing anon \
		--populate-threads 1 --interval 200ms --duration "$2" \
		--out "$R/$1.json" > "$R/$1.txt" 2>&1
	echo "damon: $1 exit $?"
	echo "damon: $1 nr_kdamonds $(cat $NR)"
}
# what this changes, restored at the end for the suites after it
f=/sys/module/damon_stat/parameters/enabled
stat=$(cat $f 2>/dev/null)
clock=$(sed 's/.*\[\(.*\)\].*/\1/' $T/trace_clock)
size=$(cat $T/buffer_size_kb)
[ -e $f ] && echo N > $f
echo mono > $T/trace_clock
echo 8192 > $T/buffer_size_kb
echo > $T/trace
echo 1 > "$AGGR"
run hot 6s
echo 0 > "$AGGR"
cat $T/trace > "$R/aggregated.txt"
echo > $T/trace
echo "$clock" > $T/trace_clock
echo "$size" > $T/buffer_size_kb
run killed 30s &
sleep 4
killall -KILL ptwalk-scanner
wait
[ -n "$stat" ] && echo "$stat" > $f
exit 0

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Produce sample debugfs output for module/testdata/ (run in a VM as root):
#   vm-sample.sh [DIR]
# Each file is printed between "=== BEGIN <name>" and "=== END <name>".
DIR=${1:-$(dirname "$0")}
DBG=/sys/kernel/debug/ptwalk
rmmod ptwalk 2>/dev/null
insmod "$DIR/ptwalk.ko" || exit 1
TR=/sys/kernel/tracing
[ -d $TR/events ] || mount -t tracefs none $TR 2>/dev/null
if [ -d $TR/events/ptwalk ]; then
	echo > $TR/trace
	echo 1 > $TR/events/ptwalk/enable
fi
"$DIR/walker" -m 64 -n 2 clear_refs smaps_rollup smaps pagemap > /tmp/walker.out
echo 1000000 > /sys/module/ptwalk/parameters/inject_delay_ns
"$DIR/walker" -m 256 -n 3 -s clear_refs > /tmp/walker-stall.out
echo 0 > /sys/module/ptwalk/parameters/inject_delay_ns
for f in walks stalls hist counters hooks; do
	echo "=== BEGIN $f"
	cat $DBG/$f
	echo "=== END $f"
done
for f in walker walker-stall; do
	echo "=== BEGIN $f.out"
	cat /tmp/$f.out
	echo "=== END $f.out"
done
echo "=== BEGIN trace"
if [ -d $TR/events/ptwalk ]; then
	echo 0 > $TR/events/ptwalk/enable
	grep -v '^#' $TR/trace | head -40
fi
echo "=== END trace"
rmmod ptwalk

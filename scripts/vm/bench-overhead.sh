#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make bench, inside a VM kernel: ptwalk.ko's overhead on each walk kind,
# the same walks with the module loaded and not, same boot, rounds
# interleaved so drift falls on both sides.  Timed by the syscall backend on
# both sides (the module backend's debugfs polling would add its own cost).
# usage: bench-overhead.sh KO PTWALK SIZE ROUNDS
set -u
KO=$1 PTWALK=$2 SIZE=$3 ROUNDS=$4
R=/results
mountpoint -q /sys/kernel/debug 2>/dev/null || mount -t debugfs none /sys/kernel/debug
one() { # dir kind round
	mkdir -p "$R/$1"
	"$PTWALK" run --backend syscall --size "$SIZE" --scanner "$2" --interval 150ms \
		--duration 2s --victims none --populate-threads 1 --quiet \
		--out "$R/$1/$2-$3.json"
	rc=$?
	# 4: a kind this kernel lacks (PAGEMAP_SCAN before 6.7), no result
	[ $rc = 0 ] || [ $rc = 4 ] || echo "bench: run $1 $2 $3 failed (exit $rc)"
}
i=1
while [ $i -le "$ROUNDS" ]; do
	for k in clear_refs smaps smaps_rollup pagemap pagemap_scan; do
		one nomodule $k $i
		insmod "$KO" || exit 1
		one module $k $i
		rmmod ptwalk || exit 1
	done
	i=$((i + 1))
done

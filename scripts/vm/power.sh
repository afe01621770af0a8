#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make bench, inside a VM kernel with ptwalk.ko: the power of ptwalk compare.
# PAIRS pairs of result sets, each set RUNS runs of clear_refs with the
# QUICK=1 run settings (128M, 100ms interval, 800ms): A with no injected
# delay, B with inject_delay_ns sized to add PCT% to clear_refs ns/PTE
# (sized in this boot from the fastest walk of a warm-up run). ORDER
# "sequential": set A, then set B, as a user's before/after would;
# "interleaved" (default): A and B alternate run by run, so that drift of a
# shared host hits both alike and the figure is the power of the statistics.
#
# usage: power.sh KO PTWALK SIZE RUNS PAIRS PCT [ORDER]
set -u
KO=$1 PTWALK=$2 SIZE=$3 RUNS=$4 PAIRS=$5 PCT=$6 ORDER=${7:-interleaved}
R=/results
P=/sys/module/ptwalk/parameters/inject_delay_ns
mkdir -p $R
insmod "$KO" || exit 1
trap 'echo 0 > $P; rmmod ptwalk' EXIT

nspte() { # fastest clear_refs ns/PTE of a result, x1000
	awk -F'"ns_per_pte_min": ' 'NF > 1 { split($2, a, /[,}]/); printf "%d\n", a[1] * 1000; exit }' "$1"
}
one() { # dir name
	mkdir -p "$R/$1"
	"$PTWALK" run --backend syscall --size "$SIZE" --scanner clear_refs --interval 100ms \
		--duration 800ms --victims none --populate-threads 1 --quiet \
		--out "$R/$1/$2.json" || { echo "power: run $1/$2 failed"; exit 1; }
}
set_of() { # dir delay
	echo "$2" > $P
	i=1
	while [ $i -le "$RUNS" ]; do one "$1" "r$i"; i=$((i + 1)); done
	echo 0 > $P
}

echo 0 > $P
one W 1
one W 2
base=$(nspte $R/W/2.json)
[ "$base" -gt 0 ] || { echo "power: no baseline ns/PTE"; exit 1; }
# one delay per PTE table of 512 entries: PCT% of base ns/PTE x 512
d=$((base * 512 * PCT / 100 / 1000 + 1))
echo "power: baseline $base/1000 ns/PTE, inject_delay_ns=$d for +$PCT%"
rm -r $R/W
p=1
while [ $p -le "$PAIRS" ]; do
	if [ "$ORDER" = sequential ]; then
		set_of "p$p/A" 0
		set_of "p$p/B" "$d"
	else
		i=1
		while [ $i -le "$RUNS" ]; do
			one "p$p/A" "r$i"
			echo "$d" > $P
			one "p$p/B" "r$i"
			echo 0 > $P
			i=$((i + 1))
		done
	fi
	echo "power: pair $p done ($ORDER)"
	p=$((p + 1))
done

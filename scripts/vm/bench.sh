#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make bench, inside a VM kernel: result sets for the module overhead (the
# same walks without and with ptwalk.ko loaded, same boot) and for the
# smallest regression ptwalk compare detects (inject_delay_ns steps).
#
# usage: bench.sh KO PTWALK SIZE RUNS PCT...
set -u
KO=$1 PTWALK=$2 SIZE=$3 RUNS=$4
shift 4
R=/results
P=/sys/module/ptwalk/parameters/inject_delay_ns
one() { # set run backend
	mkdir -p $R/$1
	"$PTWALK" run --backend $3 --size "$SIZE" --scanner clear_refs --interval 150ms \
		--duration 2s --victims none --populate-threads 1 --quiet \
		--out "$R/$1/$1-$2.json" || echo "bench: run $1-$2 failed"
}
runs() { i=1; while [ $i -le "$RUNS" ]; do one "$1" $i "$2"; i=$((i + 1)); done; }
nspte() { # fastest walk's ns/PTE x1000 (robust to an emulator's tail)
	awk -F'"ns_per_pte_min": ' 'NF > 1 { split($2, a, /[,}]/); printf "%d\n", a[1] * 1000; exit }' "$1"
}
one warm 1 syscall
rm -r $R/warm
runs nomodule syscall
insmod "$KO" || exit 1
runs module module
base=$(nspte $R/module/module-1.json)
for pct in "$@"; do
	d=$((base * 512 * pct / 100 / 1000))
	[ "$d" -ge 1 ] || d=1
	echo $d > $P
	runs inject$pct syscall
	echo 0 > $P
done
rmmod ptwalk

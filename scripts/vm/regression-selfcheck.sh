#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs inside a VM kernel with ptwalk.ko: result sets for the regression
# self-check. A1 and A2: the same kernel twice (A/A). R10 and R25: ptwalk.ko's
# inject_delay_ns set to add about 10% and 25% to clear_refs ns/PTE. The delay
# is calibrated in this boot: a large trial delay measures how much of a
# busy-wait per PTE table really shows (emulation overruns it), and the two
# targets are scaled by that.
#
# usage: regression-selfcheck.sh KO PTWALK SIZE RUNS [PCT...]   (default PCT: 10 25)
set -u
KO=$1 PTWALK=$2 SIZE=$3 RUNS=$4
shift 4
PCTS=${*:-10 25}
R=/results
P=/sys/module/ptwalk/parameters/inject_delay_ns
mkdir -p $R
insmod "$KO" || exit 1

nspte() { # p50 ns/PTE of clear_refs in a result, as an integer x1000
	awk -F'"ns_per_pte_p50": ' 'NF > 1 { split($2, a, /[,}]/); printf "%d\n", a[1] * 1000; exit }' "$1"
}
one() { # set run
	mkdir -p $R/$1
	"$PTWALK" run --backend module --size "$SIZE" --scanner clear_refs --interval 150ms \
		--duration 2s --victims none --populate-threads 1 --quiet \
		--out "$R/$1/$1-$2.json" || { echo "selfcheck: run $1-$2 failed"; exit 1; }
}
set_runs() { # set
	i=1
	while [ $i -le "$RUNS" ]; do one "$1" $i; i=$((i + 1)); done
}

echo 0 > $P
# warm-up (discarded): the first walks after boot run cold in an emulator
one W 1
set_runs A1
set_runs A2
base=$(nspte $R/A1/A1-1.json)
[ "$base" -gt 0 ] || { echo "selfcheck: no baseline ns/PTE"; exit 1; }
echo "selfcheck: baseline $base/1000 ns/PTE"
for pct in $PCTS; do
	# one delay per PTE table of 512 entries: pct% of base ns/PTE x 512
	d=$((base * 512 * pct / 100 / 1000))
	[ "$d" -ge 1 ] || d=1
	echo "selfcheck: R$pct: inject_delay_ns=$d"
	echo $d > $P
	set_runs R$pct
	echo 0 > $P
done
rm -r $R/W
rmmod ptwalk

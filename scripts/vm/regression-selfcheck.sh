#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs inside a VM kernel with ptwalk.ko: result sets for the regression
# self-check. A1 and A2: the same kernel twice (A/A). R10 and R25: ptwalk.ko's
# inject_delay_ns set to add about 10% and 25% (or PCT...) to clear_refs
# ns/PTE. The delays are sized in this boot, from the fastest walk of the
# last warm-up run: PCT% of its ns/PTE for each PTE table of 512 entries.
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

nspte() { # fastest ns/PTE of clear_refs in a result (robust to the
	# emulator's long tail), as an integer x1000
	awk -F'"ns_per_pte_min": ' 'NF > 1 { split($2, a, /[,}]/); printf "%d\n", a[1] * 1000; exit }' "$1"
}
one() { # set run
	mkdir -p $R/$1
	# syscall backend: the module stays loaded (it injects), but no debugfs
	# reader competes with the walks for the CPU
	"$PTWALK" run --backend syscall --size "$SIZE" --scanner clear_refs --interval 150ms \
		--duration 2s --victims none --populate-threads 1 --quiet \
		--out "$R/$1/$1-$2.json" || { echo "selfcheck: run $1-$2 failed"; exit 1; }
}

echo 0 > $P
# warm-up (discarded): an emulator keeps getting faster over the first runs
# after boot; the fastest walk of the last warm-up run is the baseline
one W 1
one W 2
base=$(nspte $R/W/W-2.json)
[ "$base" -gt 0 ] || { echo "selfcheck: no baseline ns/PTE"; exit 1; }
echo "selfcheck: baseline $base/1000 ns/PTE"
# What a delay per PTE table adds to ns/PTE is not delay / 512: the wait
# overshoots by the clock reads it polls, and the walk meets tables beyond
# the mapping's (under icount, 6.1 cloud: 2.5-2.6 times that; scripts/vm/power.sh
# says 2.4 on 6.12). One trial run at a first guess for the largest PCT
# measures that factor; every delay is the first guess scaled by it.
top=0
for pct in $PCTS; do [ "$pct" -gt "$top" ] && top=$pct; done
guess=$((base * 512 * top / 100 / 1000 + 1))
echo $guess > $P
one W 3
echo 0 > $P
trial=$(nspte $R/W/W-3.json)
# the trial's effect, in thousandths of the first guess's aim (top%)
got=$(( (trial - base) * 100 * 1000 / base / top ))
[ "$got" -gt 0 ] || { echo "selfcheck: the trial delay of $guess ns added nothing ($trial/1000 ns/PTE)"; exit 1; }
echo "selfcheck: trial inject_delay_ns=$guess: $trial/1000 ns/PTE, $got/1000 of its aim"
for pct in $PCTS; do
	eval d$pct=$((base * 512 * pct / 100 / got + 1))
	eval echo "selfcheck: R$pct: inject_delay_ns=\$d$pct"
done
# the sets are interleaved run by run, so any drift left hits them alike,
# and their order turns by one each round, so that no set always runs
# first or right after the same other one (the A/A of a fixed order, A1
# after the largest injection and A2 after A1 in every round, differed
# by +29% beside another guest under real-time TCG, stop 50's CI)
one_set() { # set run
	case $1 in
	A*) one "$1" "$2" ;;
	R*)
		eval d=\$d${1#R}
		echo "$d" > $P
		one "$1" "$2"
		echo 0 > $P ;;
	esac
}
SETS="A1 A2"
for pct in $PCTS; do SETS="$SETS R$pct"; done
i=1
while [ $i -le "$RUNS" ]; do
	for s in $SETS; do one_set "$s" $i; done
	first=${SETS%% *}
	SETS="${SETS#* } $first"
	i=$((i + 1))
done
rm -r $R/W
rmmod ptwalk

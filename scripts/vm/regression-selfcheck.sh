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
# after boot; the fastest walk of the last warm-up run sizes the delays
one W 1
one W 2
base=$(nspte $R/W/W-2.json)
[ "$base" -gt 0 ] || { echo "selfcheck: no baseline ns/PTE"; exit 1; }
echo "selfcheck: baseline $base/1000 ns/PTE"
for pct in $PCTS; do
	# one delay per PTE table of 512 entries: pct% of base ns/PTE x 512
	eval d$pct=$((base * 512 * pct / 100 / 1000 + 1))
	eval echo "selfcheck: R$pct: inject_delay_ns=\$d$pct"
done
# the sets are interleaved run by run, so any drift left hits them alike
i=1
while [ $i -le "$RUNS" ]; do
	one A1 $i
	one A2 $i
	for pct in $PCTS; do
		eval d=\$d$pct
		echo $d > $P
		one R$pct $i
		echo 0 > $P
	done
	i=$((i + 1))
done
rm -r $R/W
rmmod ptwalk

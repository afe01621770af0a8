#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs inside a VM kernel with ptwalk.ko: result sets for the stall-budget
# check (scripts/tests/test_vm_stall_budget.py). H: healthy clear_refs runs
# with an mmap victim queued behind each walk; X: the same with ptwalk.ko's
# inject_delay_ns sized so that each walk holds mmap_lock about twice as
# long. The delay is calibrated in this boot: a trial delay of one base
# walk's worth shows how much of a busy-wait per PTE table really lands in
# the hold (an emulator overruns or undershoots it), and the delay is
# scaled by that. Then, when SMAPS_ROLLUP=1, S: smaps_rollup runs over 64
# VMAs with an mmap victim (Debian 6.1 skips a VMA after yielding mmap_lock).
#
# usage: stall-budget.sh KO PTWALK SIZE RUNS
# environment: SMAPS_ROLLUP=1, DURATION (800ms), WARMUP (runs, 1)
set -u
KO=$1 PTWALK=$2 SIZE=$3 RUNS=$4
R=/results
P=/sys/module/ptwalk/parameters/inject_delay_ns
mkdir -p $R
insmod "$KO" || exit 1
trap 'echo 0 > $P; rmmod ptwalk' EXIT

one() { # set run scanner
	mkdir -p $R/$1
	"$PTWALK" run --backend module --size "$SIZE" --scanner "$3" --interval 150ms \
		--duration "${DURATION:-800ms}" --victims mmap --populate-threads 1 --quiet \
		--out "$R/$1/$1-$2.json" || { echo "stall-budget: run $1-$2 failed"; exit 1; }
}
hold() { # median lock_hold_ns of a result's walks
	tr ',{}' '\n\n\n' < "$1" | sed -n 's/.*"lock_hold_ns": *\([0-9]*\).*/\1/p' |
		sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'
}
ptes() { # the first walk's leaf entries
	tr ',{}' '\n\n\n' < "$1" | sed -n 's/.*"ptes": *\([0-9]*\).*/\1/p' | head -1
}

echo 0 > $P
# the base: under icount guest time follows instructions, so one run is the
# walk's cost (with real time, an emulator keeps getting faster over the
# first runs: the last of WARMUP runs is taken)
i=1
while [ $i -le "${WARMUP:-1}" ]; do one W $i clear_refs; i=$((i + 1)); done
base=$(hold $R/W/W-$((i - 1)).json)
n=$(ptes $R/W/W-$((i - 1)).json)
[ "${base:-0}" -gt 0 ] && [ "${n:-0}" -gt 0 ] || { echo "stall-budget: no baseline hold"; exit 1; }
tables=$(((n + 511) / 512))
# trial: a delay per PTE table adding the base hold once, if it landed whole
d0=$((base / tables + 1))
echo "$d0" > $P
one T 1 clear_refs
echo 0 > $P
h0=$(hold $R/T/T-1.json)
added=$((h0 - base))
[ "$added" -gt 0 ] || { echo "stall-budget: the trial delay added nothing ($h0 vs $base)"; exit 1; }
# scale: the delay that adds one base hold, as the trial measured it
d=$((d0 * base / added + 1))
echo "stall-budget: base hold $base ns over $n entries ($tables tables); trial" \
	"inject_delay_ns=$d0 held $h0 ns; inject_delay_ns=$d for 2x"
rm -r $R/W $R/T
i=1
while [ $i -le "$RUNS" ]; do
	one H $i clear_refs
	echo "$d" > $P
	one X $i clear_refs
	echo 0 > $P
	i=$((i + 1))
done
echo "stall-budget: H hold $(hold $R/H/H-1.json) ns, X hold $(hold $R/X/X-1.json) ns"
if [ "${SMAPS_ROLLUP:-0}" = 1 ]; then
	# 64 VMAs (aliased 4 MiB) and a writer every 100 us: smaps_rollup yields
	# between VMAs, and 6.1 skips the VMA it finds each time
	mkdir -p $R/S
	i=1
	while [ $i -le "$RUNS" ]; do
		"$PTWALK" run --backend module --size 256M --backing alias --physical 4M \
			--calibrate-size 0 --scanner smaps_rollup --interval 100ms \
			--duration "${DURATION:-800ms}" --victims mmap --op-interval 100us --quiet \
			--out "$R/S/S-$i.json" || { echo "stall-budget: run S-$i failed"; exit 1; }
		i=$((i + 1))
	done
fi
echo "stall-budget: done"

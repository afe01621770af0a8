#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make bench, inside a VM kernel with ptwalk.ko: the power of ptwalk compare.
# PAIRS pairs of result sets, each set RUNS runs of clear_refs with the
# QUICK=1 run settings (128M, 100ms interval, 800ms): A with no injected
# delay, B with inject_delay_ns sized to add PCT% to clear_refs ns/PTE.
# PCT 0: B has no delay either (an A/A session, for the noise calibration).
#
# Sizing, in this boot: inject_delay_ns busy-waits per PTE table walked, and
# what that adds to ns/PTE is not delay / 512 (measured under icount on
# 6.12 cloud: 2.4 times that; the wait overshoots by the clock reads it
# polls, and the walk meets tables beyond the 128M mapping's), so the delay
# is fitted: two runs without delay give the baseline; a run at a first
# guess, then one at that guess scaled by what it missed by, then secant
# steps, one run each, until a run lands within 8% of PCT%; a clock too
# noisy for that (real-time TCG) gets a least-squares line through the
# origin over every trial instead. The intended and fitted effects are
# printed; the measured effect of every pair is the host's to report.
#
# ORDER "sequential": set A, then set B, as a user's before/after would;
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

p50() { # median clear_refs ns/PTE of a result
	awk -F'"ns_per_pte_p50": ' 'NF > 1 { split($2, a, /[,}]/); print a[1] + 0; exit }' "$1"
}
one() { # dir name
	mkdir -p "$R/$1"
	"$PTWALK" run --backend syscall --size "$SIZE" --scanner clear_refs --interval 100ms \
		--duration 800ms --victims none --populate-threads 1 --quiet \
		--out "$R/$1/$2.json" || { echo "power: run $1/$2 failed" >&2; exit 1; }
}
at() { # name delay: one warm-up-set run at that delay, prints its ns/PTE
	echo "$2" > $P
	one W "$1"
	echo 0 > $P
	v=$(p50 "$R/W/$1.json")
	[ -n "$v" ] || { echo "power: no ns/PTE in run W/$1" >&2; exit 1; }
	echo "$v"
}
eff() { # effect of a run's ns/PTE over the baseline, a fraction
	awk -v t="$1" -v b="$base" 'BEGIN { printf "%.5f", t / b - 1 }'
}
pct() { awk -v e="$1" 'BEGIN { printf "%.2f", 100 * e }'; }
set_of() { # dir delay
	echo "$2" > $P
	i=1
	while [ $i -le "$RUNS" ]; do one "$1" "r$i"; i=$((i + 1)); done
	echo 0 > $P
}

echo 0 > $P
d=0
# PCT may be a fraction (0.5): compared by awk, not test(1)
if awk -v p="$PCT" 'BEGIN { exit !(p > 0) }'; then
	at w 0 >/dev/null
	b1=$(at b1 0) || exit 1
	# first guess: PCT% of ns/PTE per PTE, once per table of 512
	d1=$(awk -v b="$b1" -v p="$PCT" 'BEGIN { printf "%d", b * 512 * p / 100 + 1 }')
	t1=$(at t1 "$d1") || exit 1
	b2=$(at b2 0) || exit 1
	# second: the first scaled by what it missed by
	d2=$(awk -v b1="$b1" -v b2="$b2" -v t="$t1" -v d="$d1" -v p="$PCT" 'BEGIN {
		e = t / ((b1 + b2) / 2) - 1; x = e > 0 ? d * p / 100 / e : 2 * d
		printf "%d", (x < 1 ? 1 : x) + 0.5 }')
	[ "$d2" -ne "$d1" ] || d2=$((d1 + 1))
	t2=$(at t2 "$d2") || exit 1
	base=$(awk -v b1="$b1" -v b2="$b2" 'BEGIN { printf "%.4f", (b1 + b2) / 2 }')
	e1=$(eff "$t1") e2=$(eff "$t2")
	log="+$(pct "$e1")% at $d1 ns, +$(pct "$e2")% at $d2 ns"
	# secant steps through the last two points until a run lands within
	# 8% of the target (the effect is not linear in the delay: the wait
	# polls a clock); a step that is no line (a noisy clock) falls back to
	# proportion through the last point
	pts="$d1 $e1 $d2 $e2"
	n=1
	while :; do
		d=$(awk -v d1="$d1" -v e1="$e1" -v d2="$d2" -v e2="$e2" -v p="$PCT" 'BEGIN {
			want = p / 100; beta = d2 != d1 ? (e2 - e1) / (d2 - d1) : 0
			if (beta > 0) d = d2 + (want - e2) / beta
			if (beta <= 0 || d < 1 || d > 4 * (d1 > d2 ? d1 : d2))
				d = e2 > 0 ? d2 * want / e2 : 2 * d2
			printf "%d", (d < 1 ? 1 : d) + 0.5 }')
		[ "$d" -ne "$d2" ] || break
		t=$(at "s$n" "$d") || exit 1
		e=$(eff "$t")
		log="$log, +$(pct "$e")% at $d ns"
		pts="$pts $d $e"
		close=$(awk -v e="$e" -v p="$PCT" 'BEGIN { r = e / (p / 100) - 1
			print (r < 0 ? -r : r) <= 0.08 }')
		d1=$d2 e1=$e2 d2=$d e2=$e
		[ "$close" = 1 ] && break
		if [ $n -ge 5 ]; then
			# a clock too noisy for single runs (real-time TCG, or icount
			# at +0.5%): a least-squares line over every trial. It has an
			# intercept: any delay at all adds the wait's clock reads, so
			# the effect is not proportional to the delay (7.3 icount:
			# +0.41% at 50 ns, +1.40% at 272 ns); through the origin
			# when the line does not rise
			d=$(echo "$pts" | awk -v p="$PCT" '{
				for (i = 1; i < NF; i += 2) {
					n++; sd += $i; se += $(i + 1)
					sde += $i * $(i + 1); sdd += $i * $i } }
				END { want = p / 100; den = n * sdd - sd * sd
				b = den > 0 ? (n * sde - sd * se) / den : 0; a = (se - b * sd) / n
				d = b > 0 ? (want - a) / b : 0
				if (d < 1) d = sde > 0 ? want * sdd / sde : 0
				printf "%d", (d < 1 ? 1 : d) + 0.5 }')
			log="$log; not within 8% after $n steps: least-squares line over the trials"
			break
		fi
		n=$((n + 1))
	done
	echo "power: baseline $base ns/PTE; trials: $log;" \
		"inject_delay_ns=$d for intended +$PCT%"
fi
rm -rf $R/W
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

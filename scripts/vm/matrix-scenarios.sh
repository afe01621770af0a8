#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The vm-matrix scenarios, run the same way in a VM kernel (with ptwalk.ko when
# one is given and loads) and on the host: results into OUT/<scenario>-r<N>.json.
#
# usage: matrix-scenarios.sh PTWALK OUT SIZE RUNS [KO]
set -u
PTWALK=$1 OUT=$2 SIZE=$3 RUNS=$4 KO=${5:-}
mkdir -p "$OUT"
if [ -n "$KO" ]; then
	insmod "$KO" && echo "matrix: ptwalk.ko loaded" || echo "matrix: ptwalk.ko did not load"
fi
fail=0
# warm-up (discarded): cold caches and, in an emulator, cold translations
"$PTWALK" run --size "$SIZE" --scanner clear_refs --interval 100ms --duration 1s \
	--victims none --quiet --out "$OUT/warmup.json" >/dev/null 2>&1
rm -f "$OUT/warmup.json"
for sc in clear_refs smaps_rollup cadvisor; do
	i=1
	while [ $i -le "$RUNS" ]; do
		"$PTWALK" run --size "$SIZE" --backing anon --scanner $sc --interval 250ms \
			--duration 2s --victims read,mmap,fault --populate-threads 1 --quiet \
			--out "$OUT/$sc-r$i.json" || { echo "matrix: $sc run $i failed"; fail=1; }
		i=$((i + 1))
	done
done
[ -n "$KO" ] && [ -d /sys/module/ptwalk ] && rmmod ptwalk
exit $fail

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs inside a kernel booted by scripts/kernel_ab.py (busybox sh): loads
# ptwalk.ko and runs each scenario RUNS times, interleaved, one result file
# per run under /results (SCENARIO-N.json). The same on both kernels of an
# A/B; the host compares them.
#
# usage: kernel-ab.sh KO PTWALK RUNS SCENARIO...
#   rollup_alias  smaps_rollup over 64 VMAs (256 MiB aliasing 4 MiB) while
#                 an mmap victim waits for mmap_lock: the walk yields the
#                 lock between VMAs (module-acceptance.sh's scenario)
#   smaps_rollup  smaps_rollup over 64 MiB anon, mmap victim
#   clear_refs    clear_refs over 64 MiB anon, mmap victim
#   pagemap       pagemap over 64 MiB anon, no victim
set -u
KO=${1:?ko}
PTWALK=${2:?ptwalk}
RUNS=${3:?runs}
shift 3
SCENARIOS="$*"
R=/results
mkdir -p $R
fail=0

mountpoint -q /sys/kernel/debug 2>/dev/null || mount -t debugfs none /sys/kernel/debug
insmod "$KO" || { echo "kernel-ab: insmod $KO failed"; exit 1; }

i=1
while [ "$i" -le "$RUNS" ]; do
	for s in $SCENARIOS; do
		case "$s" in
		rollup_alias) set -- --size 256M --backing alias --physical 4M --calibrate-size 0 \
			--scanner smaps_rollup --interval 100ms --duration 3s --victims mmap \
			--op-interval 100us ;;
		smaps_rollup) set -- --size 64M --backing anon --populate-threads 1 \
			--scanner smaps_rollup --interval 300ms --duration 2s --victims mmap ;;
		clear_refs) set -- --size 64M --backing anon --populate-threads 1 \
			--scanner clear_refs --interval 300ms --duration 2s --victims mmap ;;
		pagemap) set -- --size 64M --backing anon --populate-threads 1 \
			--scanner pagemap --interval 300ms --duration 2s --victims none ;;
		*) echo "kernel-ab: unknown scenario $s"; exit 2 ;;
		esac
		"$PTWALK" run --backend module "$@" --out "$R/$s-$i.json" >"$R/$s-$i.txt" 2>&1 \
			|| { echo "kernel-ab: ptwalk run $s-$i exited $?"; fail=1; }
		tail -3 "$R/$s-$i.txt"
	done
	i=$((i + 1))
done
rmmod ptwalk || { echo "kernel-ab: rmmod failed"; fail=1; }
exit $fail

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs a cross-version plan (scripts/cross_version.py writes it): in a
# kernel booted by ptwalk-vm (busybox sh), or on the host itself. Each plan
# line is "NAME ARG...": one `ptwalk run ARG... --out OUT/NAME.json`, in the
# plan's order (the runs of all cells interleaved). With a KO, ptwalk.ko
# is loaded and every run uses --backend module; with "none", no module
# and --backend auto (the host).
#
# usage: cross-version.sh KO|none PTWALK PLAN [OUT]   (OUT default /results)
set -u
KO=${1:?ko or none}
PTWALK=${2:?ptwalk}
PLAN=${3:?plan}
R=${4:-/results}
mkdir -p "$R"
fail=0

backend=auto
if [ "$KO" != none ]; then
	mountpoint -q /sys/kernel/debug 2>/dev/null || mount -t debugfs none /sys/kernel/debug
	insmod "$KO" || { echo "cross-version: insmod $KO failed"; exit 1; }
	backend=module
fi

n=0
total=$(grep -c . "$PLAN")
while read -r name args; do
	[ -n "$name" ] || continue
	n=$((n + 1))
	# word splitting of $args is wanted: the plan holds plain options
	# shellcheck disable=SC2086
	"$PTWALK" run --backend "$backend" $args --out "$R/$name.json" >"$R/$name.txt" 2>&1
	rc=$?
	# 4: skipped, unsupported by this kernel (PAGEMAP_SCAN before 6.7):
	# a finding of the comparison, not a failure of the set
	case $rc in
	0) echo "cross-version: $n/$total $name ok" ;;
	4) echo "cross-version: $n/$total $name skipped: $(tail -1 "$R/$name.txt")" ;;
	*) echo "cross-version: $n/$total $name exited $rc: $(tail -1 "$R/$name.txt")"
	   fail=1 ;;
	esac
done <"$PLAN"

if [ "$KO" != none ]; then
	rmmod ptwalk || { echo "cross-version: rmmod failed"; fail=1; }
fi
exit $fail

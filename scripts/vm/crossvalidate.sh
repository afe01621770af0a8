#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Three views of the same walks and waits, inside a kernel booted by
# scripts/ptwalk-vm: the victims' own clocks, the kernel's mmap_lock
# tracepoints read through perf_event_open (the tracepoint backend) and
# ptwalk.ko.  One run per kind; the results go to /results and
# scripts/tests/test_crossvalidation.py judges them.
# usage: crossvalidate.sh KO PTWALK [KIND...]
set -u
KO=${1:?ko}
PTWALK=${2:?ptwalk}
shift 2
KINDS=${*:-clear_refs smaps smaps_rollup pagemap cadvisor}
R=${PTWALK_RESULTS:-/results}
mkdir -p $R
mountpoint -q /sys/kernel/debug 2>/dev/null || mount -t debugfs none /sys/kernel/debug
insmod "$KO" || { echo "crossvalidate: insmod failed"; exit 1; }
rc=0
for k in $KINDS; do
	# victims at one operation per 500 us: every walk blocks each of them,
	# and a 2-vCPU TCG guest is not so busy that preemption hides the waits
	"$PTWALK" run --backend module --cross-check --size 256M --backing anon \
		--populate-threads 1 --scanner "$k" --interval 200ms --duration 6s \
		--victims mmap,fault --op-interval 500us --out $R/$k.json > $R/$k.txt 2>&1 \
		|| { echo "crossvalidate: ptwalk run $k exited $?"; rc=1; }
	grep -A6 '^validation' $R/$k.txt | sed "s/^/$k: /"
done
cat /sys/kernel/debug/ptwalk/counters > $R/counters.txt
rmmod ptwalk || { echo "crossvalidate: rmmod failed"; rc=1; }
exit $rc

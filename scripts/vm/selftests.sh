#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# In a VM kernel: the KTAP selftests with ptwalk.ko loaded, then the cost
# test again with a large inject_delay_ns, which must breach its budget.
# KO "none" (a kernel ptwalk.ko cannot be built for): the selftests and
# the calibrated cost test without it, no injection.
# Sizes are TCG-friendly (PTWALK_MIN_MB); KTAP goes to /results/*.tap.
#
# usage: selftests.sh KO|none SELFTESTS_DIR
set -u
KO=$1 T=$2
R=${PTWALK_RESULTS:-/results}
mkdir -p $R
mountpoint -q /sys/kernel/debug 2>/dev/null || mount -t debugfs none /sys/kernel/debug
if [ "$KO" != none ]; then
	insmod "$KO" || { echo "selftests: insmod failed"; exit 1; }
fi
export PTWALK_MIN_MB=${PTWALK_MIN_MB:-8} PTWALK_SMALL_MB=${PTWALK_SMALL_MB:-16}
# THP vs 4 KiB: a larger mapping amortizes the fixed per-walk cost, which an
# emulator inflates
export PTWALK_THP_MB=${PTWALK_THP_MB:-512}
fail=0
for t in ptwalk_refs ptwalk_smaps ptwalk_module ptwalk_cost ptwalk_thp ptwalk_stall; do
	"$T/$t" > $R/$t.tap 2>&1
	rc=$?
	echo "selftests: $t exit $rc"
	cat $R/$t.tap
	[ $rc = 0 ] || [ $rc = 4 ] || fail=1
done
# fault injection, as a fleet would meet it: calibrate this kernel's budget,
# which the unmodified kernel passes, then make walks slower by 1 ms per PTE
# table (100 us on PREEMPT_RT): the figures must show it, and the budget
# must be breached where the delay exceeds its headroom (the judgement is
# scripts/tests/test_selftests_in_vm.py check_injected_breach)
"$T/ptwalk_calibrate" --out $R/calibrated.budget > $R/calibrate.txt 2>&1 ||
	{ echo "selftests: calibrate failed"; cat $R/calibrate.txt; fail=1; }
PTWALK_BUDGET=$R/calibrated.budget "$T/ptwalk_cost" > $R/calibrated_cost.tap 2>&1
echo "selftests: ptwalk_cost against the calibrated budget exit $?" | tee $R/calibrated_cost.rc
if [ "$KO" = none ]; then
	echo "selftests: no ptwalk.ko: no inject_delay_ns run"
	exit $fail
fi
# the largest delay this kernel accepts (PREEMPT_RT caps it at 100 us)
inj=1000000
echo $inj > /sys/module/ptwalk/parameters/inject_delay_ns 2>/dev/null || {
	inj=100000
	echo $inj > /sys/module/ptwalk/parameters/inject_delay_ns
}
PTWALK_BUDGET=$R/calibrated.budget PTWALK_ATTEMPTS=1 "$T/ptwalk_cost" > $R/inject_cost.tap 2>&1
echo "selftests: ptwalk_cost with inject_delay_ns=$inj exit $?" | tee $R/inject_cost.rc
echo 0 > /sys/module/ptwalk/parameters/inject_delay_ns
rmmod ptwalk || fail=1
exit $fail

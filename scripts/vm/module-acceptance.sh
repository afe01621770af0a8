#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs inside a kernel booted by scripts/ptwalk-vm (busybox sh): loads
# ptwalk.ko and drives `ptwalk run` through it. Results go to /results for
# the host-side assertions (scripts/tests/test_module_in_vm.py); this script
# fails only on what it checks itself.
#
# usage: module-acceptance.sh KO PTWALK [SIZE]
set -u
KO=${1:?ko}
PTWALK=${2:?ptwalk}
SIZE=${3:-256M}
R=${PTWALK_RESULTS:-/results}
mkdir -p $R
fail=0
say() { echo "acceptance: $*"; }
bad() { echo "acceptance: FAIL: $*"; fail=1; }

mountpoint -q /sys/kernel/debug 2>/dev/null || mount -t debugfs none /sys/kernel/debug

# bad parameters are refused with a message, and nothing stays loaded
for p in "inject_delay_ns=-5" "inject_delay_ns=99999999999" "kinds=bogus" "kinds=" ; do
	dmesg -c >/dev/null
	if insmod "$KO" "$p" 2>/dev/null; then
		bad "insmod $p was accepted"
		rmmod ptwalk
	elif ! dmesg | grep -q "ptwalk: invalid"; then
		bad "insmod $p refused without a 'ptwalk: invalid' line"
	else
		say "refused $p: $(dmesg | grep 'ptwalk: invalid' | head -1)"
	fi
	[ -d /sys/module/ptwalk ] && bad "module loaded after refused $p"
done

insmod "$KO" || { bad "insmod"; exit 1; }
cat /sys/kernel/debug/ptwalk/hooks > $R/hooks.txt
say "hooks:"; cat $R/hooks.txt

run() { # name args...
	n=$1; shift
	"$PTWALK" run --backend module --size "$SIZE" --backing anon --populate-threads 1 \
		--out $R/$n.json "$@" > $R/$n.txt 2>&1
	rc=$?
	cat $R/$n.txt
	[ $rc = 0 ] || bad "ptwalk run $n exited $rc"
}
run clear_refs --scanner clear_refs --interval 300ms --duration 4s --victims mmap
run smaps_rollup --scanner smaps_rollup --interval 300ms --duration 3s --victims mmap
run pagemap --scanner pagemap --interval 300ms --duration 2s --victims none
run smaps --scanner smaps --interval 300ms --duration 2s --victims none

# smaps_rollup over 64 VMAs while a writer waits: it yields mmap_lock
# between VMAs, and 6.1 skips the VMA it finds each time; the walk's own Rss
# and the module must both see it (6d065f507d82 is not in 6.1.y)
"$PTWALK" run --backend module --size 256M --backing alias --physical 4M \
	--calibrate-size 0 --scanner smaps_rollup --interval 100ms --duration 3s \
	--victims mmap --op-interval 100us --out $R/rollup_alias.json \
	> $R/rollup_alias.txt 2>&1 || bad "ptwalk run rollup_alias exited $?"
cat $R/rollup_alias.txt

# the tracepoint backend on this kernel's field layout
"$PTWALK" run --backend tracepoint --size 64M --scanner clear_refs --interval 200ms \
	--duration 2s --victims mmap --out $R/tracepoint.json > $R/tracepoint.txt 2>&1 \
	|| bad "ptwalk run --backend tracepoint exited $?"

# ptwalk monitor with the module: catches a walker it knows nothing of; the
# bpf backend watches the same walks (this kernel's tracepoint arguments,
# BTF and task storage), with a threshold well below their ~1 ms holds
"$PTWALK" monitor --duration 5s --out $R/monitor.json > $R/monitor.txt 2>&1 &
mp=$!
"$PTWALK" monitor --backend bpf --min-hold 200us --duration 5s --out $R/monitor_bpf.json \
	> $R/monitor_bpf.txt 2>&1 &
bp=$!
sleep 1
"$PTWALK" run --backend syscall --size 64M --scanner clear_refs --interval 200ms \
	--duration 2s --victims mmap --quiet --out $R/monitored.json || bad "monitored run exited $?"
wait $mp || bad "ptwalk monitor exited $?"
wait $bp || bad "ptwalk monitor --backend bpf exited $?"
cat $R/monitor.txt $R/monitor_bpf.txt

# fault injection: a delay per PTE table must show in the walk's time and
# ns/PTE. Base and injected runs alternate, so a change in what else the
# host runs falls on both: under TCG the un-injected part of a walk doubles
# while another guest holds the host's CPUs (6.12 base walks of one run
# 9-22 ms), and the busy-wait, exact in guest time, does not. The delay is
# the largest of the two this kernel's module accepts: PREEMPT_RT caps it
# (the busy-wait runs with preemption off), as selftests.sh finds too
P=/sys/module/ptwalk/parameters
inj=${INJECT_NS:-500000}
echo "$inj" > $P/inject_delay_ns 2>/dev/null || inj=${INJECT_NS_RT:-100000}
echo 0 > $P/inject_delay_ns
echo "$inj" > $R/inject_ns
for k in 1 2; do
	run base$k --scanner clear_refs --interval 300ms --duration 1500ms --victims none
	dmesg -c >/dev/null
	echo "$inj" > $P/inject_delay_ns || bad "inject_delay_ns=$inj refused"
	dmesg | grep -q "inject_delay_ns" || bad "inject_delay_ns set without a loud dmesg line"
	run inject$k --scanner clear_refs --interval 300ms --duration 1500ms --victims none
	echo 0 > $P/inject_delay_ns
done
cat /sys/kernel/debug/ptwalk/counters > $R/counters.txt
# every debugfs file as printed, for the check against module/ptwalk_abi.h
for f in walks stalls hist counters hooks; do
	cat /sys/kernel/debug/ptwalk/$f > $R/debugfs-$f.txt
done

rmmod ptwalk || bad "rmmod"
exit $fail

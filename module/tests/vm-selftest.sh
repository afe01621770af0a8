#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# ptwalk in-VM selftest (busybox sh compatible).  Run as root inside a
# disposable VM running the kernel the module was built for:
#   vm-selftest.sh [DIR]   DIR holds ptwalk.ko and walker (default: script dir)
# Output is KTAP-like; exit 0 = all passed, 1 = a test failed, 4 = skipped.

DIR=${1:-$(dirname "$0")}
KO=$DIR/ptwalk.ko
WALKER=$DIR/walker
DBG=/sys/kernel/debug/ptwalk
TMP=${TMPDIR:-/tmp}/ptwalk-selftest.$$
NR=0
FAILED=0

ok() { NR=$((NR + 1)); echo "ok $NR - $*"; }
fail() { NR=$((NR + 1)); FAILED=1; echo "not ok $NR - $*"; }
check() { # check DESC CMD...
	d=$1; shift
	if "$@"; then ok "$d"; else fail "$d"; fi
}
cleanup() {
	[ -n "$BGPID" ] && kill "$BGPID" 2>/dev/null
	rmmod ptwalk 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP not root"; exit 4; }
[ -f "$KO" ] && [ -x "$WALKER" ] || { echo "1..0 # SKIP no $KO or $WALKER"; exit 4; }
mountpoint -q /sys/kernel/debug 2>/dev/null || mount -t debugfs none /sys/kernel/debug
mkdir -p "$TMP"
echo "TAP version 13"
echo "# kernel $(uname -r)"
rmmod ptwalk 2>/dev/null
# PREEMPT_RT caps inject_delay_ns at 100 us (it runs with preemption off)
if uname -v | grep -q PREEMPT_RT; then
	MAXINJ=100000; STALL_MIB=1024; RT=1
else
	MAXINJ=1000000; STALL_MIB=256; RT=0
fi
echo "# inject_delay_ns limit here: $MAXINJ (PREEMPT_RT=$RT)"

# ---- bad parameters are refused with one dmesg line each -------------
dmesg -c >/dev/null
check "inject_delay_ns=2000000 refused" sh -c "! insmod $KO inject_delay_ns=2000000 2>/dev/null"
check "inject_delay_ns=abc refused" sh -c "! insmod $KO inject_delay_ns=abc 2>/dev/null"
check "inject_delay_ns=$((MAXINJ + 1)) (over this kernel's limit) refused" \
	sh -c "! insmod $KO inject_delay_ns=$((MAXINJ + 1)) 2>/dev/null"
check "kinds=bogus refused" sh -c "! insmod $KO kinds=bogus 2>/dev/null"
check "kinds= (empty) refused" sh -c "! insmod $KO kinds= 2>/dev/null"
# busybox insmod may try twice (finit_module, init_module): compare our
# line with the kernel's own generic one, which comes once per attempt
n=$(dmesg | grep -c "ptwalk: invalid")
g=$(dmesg | grep -c "invalid for parameter")
check "one ptwalk dmesg line per refused load ($n/$g)" [ "$n" = "$g" -a "$n" -ge 5 ]
if [ $RT = 1 ]; then
	check "PREEMPT_RT: the refusal says why" sh -c "dmesg | grep -q 'PREEMPT_RT, the delay runs with preemption off'"
fi

# ---- kinds= hooks the kinds named, no other (ptwalk.ko(4)'s example) --
check "insmod kinds=clear_refs,smaps" insmod "$KO" kinds=clear_refs,smaps
check "kinds=: clear_refs and smaps active" sh -c \
	"grep -q '^kind=clear_refs requested=1 active=1' $DBG/hooks && grep -q '^kind=smaps requested=1 active=1' $DBG/hooks"
check "kinds=: smaps_rollup and pagemap not hooked" sh -c \
	"grep -q '^kind=smaps_rollup requested=0 active=0' $DBG/hooks && grep -q '^kind=pagemap requested=0 active=0' $DBG/hooks"
check "cat /sys/kernel/debug/ptwalk/walks" cat /sys/kernel/debug/ptwalk/walks
check "rmmod after kinds=" rmmod ptwalk

# ---- load lists attached hooks ---------------------------------------
dmesg -c >/dev/null
check "insmod" insmod "$KO"
dmesg | grep "ptwalk:" | sed 's/^/# /'
for k in clear_refs smaps smaps_rollup pagemap; do
	check "kind $k active" grep -q "^kind=$k requested=1 active=1" $DBG/hooks
done
check "mmap_lock tracepoints attached" sh -c \
	"[ \$(grep -c '^hook=mmap_lock_.* status=attached' $DBG/hooks) = 3 ]"
check "debugfs modes root-only" sh -c \
	"[ \"\$(stat -c %a $DBG/walks $DBG/stalls $DBG/vma_waits $DBG/hist $DBG/counters $DBG/hooks $DBG/reset | tr '\n' ' ')\" = '400 400 400 400 400 400 200 ' ]"
# the VMA-lock view: built where VMA locks are reference counts (the kernel
# logs which); its three hooks all attached there, all disabled elsewhere
if dmesg | grep -q "VMA-lock view: not built"; then VMA_VIEW=0; want=disabled; else VMA_VIEW=1; want=attached; fi
check "VMA-lock view hooks: $want" sh -c \
	"[ \$(grep -Ec '^hook=(__vma_start_write|__vma_exclude_readers_for_detach|lock_next_vma) .* status=$want ' $DBG/hooks) = 3 ]"

# ---- every walk appears exactly once, with the right fields -----------
echo 1 > $DBG/reset
"$WALKER" -m 256 -n 2 clear_refs smaps_rollup smaps pagemap > $TMP/w.out || fail "walker ran"
cat $TMP/w.out | sed 's/^/# /'
cat $DBG/walks > $TMP/walks
sed 's/^/# /' $TMP/walks
# match: same kind, walker, target, and kernel start/end inside the
# userspace [start,end] window; exactly one record each; slots ~ 65536
awk -v MIN=65536 -v MAX=70000 '
function kv(line, key,   a, i, n) {
	n = split(line, a, " ")
	for (i = 1; i <= n; i++)
		if (index(a[i], key "=") == 1)
			return substr(a[i], length(key) + 2)
	return ""
}
FNR == NR { if ($1 == "walk") u[++nu] = $0; next }
{ k[++nk] = $0 }
END {
	bad = 0
	for (i = 1; i <= nu; i++) {
		kind = kv(u[i], "kind"); wp = kv(u[i], "walker_pid")
		tg = kv(u[i], "target_tgid")
		s = kv(u[i], "start_ns") + 0; e = kv(u[i], "end_ns") + 0
		m = 0
		for (j = 1; j <= nk; j++) {
			if (kv(k[j], "kind") != kind || kv(k[j], "walker_pid") != wp ||
			    kv(k[j], "target_tgid") != tg)
				continue
			ks = kv(k[j], "start_ns") + 0; ke = kv(k[j], "end_ns") + 0
			if (ks >= s && ke <= e) { m++; hit = k[j] }
		}
		sl = kv(hit, "pte_slots") + 0
		if (m != 1) { print "# " kind " walk " i ": " m " matching records"; bad = 1 }
		else if (sl < MIN || sl > MAX) { print "# " kind " walk " i ": pte_slots=" sl; bad = 1 }
		else print "# " kind " walk " i ": matched, pte_slots=" sl " pte_tables=" kv(hit, "pte_tables") " lock_hold_ns=" kv(hit, "lock_hold_ns") " lock_mode=" kv(hit, "lock_mode")
	}
	if (nu != 8 || nk != nu) { print "# " nu " walks by walker, " nk " records"; bad = 1 }
	exit bad
}' $TMP/w.out $TMP/walks
check "8 walks each recorded exactly once with pte_slots ~65536" [ $? = 0 ]
check "clear_refs holds mmap_lock for write" sh -c \
	"grep 'kind=clear_refs' $TMP/walks | grep -q 'lock_mode=write'"
check "smaps_rollup holds mmap_lock for read" sh -c \
	"grep 'kind=smaps_rollup' $TMP/walks | grep -q 'lock_mode=read'"
# smaps: mmap_lock for read over the walk up to 7.1 (6.19, 7.0 and 7.1
# measured); from 7.2 each VMA under its own read lock, mmap_lock only as a
# fallback that a quiet target never needs (KERNEL-FACTS.md 28,
# walk_kinds.def PTW_LOCK_CHANGES, ptwalk locking)
case "$(uname -r)" in
[0-6].* | 7.[01].*) smaps_lock=read ;;
*) smaps_lock=none ;;
esac
check "smaps holds mmap_lock: $smaps_lock (kernel $(uname -r))" sh -c \
	"grep 'kind=smaps ' $TMP/walks | grep -Eq 'lock_mode=$smaps_lock( |\$)'"
# and, where it does not, the VMA-lock view sees the walk's VMA read locks:
# one per VMA shown (the walker's 256 MiB mapping among a few dozen),
# held for most of the walk. The gate VMA ([vsyscall], shown where the
# kernel has LEGACY_VSYSCALL_XONLY, as defconfig does and Debian's
# LEGACY_VSYSCALL_NONE does not) is a shared static VMA that m_next() hands
# out without a lock (7.3.4 fs/proc/task_mmu.c proc_get_vma(), m_start()):
# it is shown, and counts a call, with no VMA read lock.
gate=$(grep -c '\[vsyscall\]' /proc/self/maps)
if [ $smaps_lock = none ] && [ $VMA_VIEW = 1 ]; then
	check "smaps walks took a VMA read lock per VMA shown, held for the walk" awk -v gate="$gate" '
	function kv(line, key,   a, i, n) {
		n = split(line, a, " ")
		for (i = 1; i <= n; i++)
			if (index(a[i], key "=") == 1)
				return substr(a[i], length(key) + 2)
		return ""
	}
	/kind=smaps / { n++; c = kv($0, "calls") + 0; l = kv($0, "vma_locks") + 0
		h = kv($0, "vma_hold_ns") + 0; w = kv($0, "walk_ns") + 0
		if (l < c - gate || l < 2 || h < w / 2) { print "# " $0; bad = 1 } }
	END { exit (n == 2 && !bad) ? 0 : 1 }' $TMP/walks
else
	check "no VMA read locks recorded (smaps under mmap_lock or no view)" sh -c \
		"! grep -v 'vma_locks=0 ' $TMP/walks"
fi
check "hist has walk_ns for clear_refs" grep -q "^hist=walk_ns kind=clear_refs" $DBG/hist
check "counters: 2 clear_refs walks" grep -q "^counter=walks kind=clear_refs value=2$" $DBG/counters
check "no kretprobe misses" sh -c "! grep 'type=kretprobe' $DBG/hooks | grep -v 'nmissed=0 kp_nmissed=0 '"
check "walks flagged probe_missed=0" sh -c "! grep -v 'probe_missed=0' $TMP/walks"
check "counters report kp_nmissed and krp_nmissed" sh -c \
	"grep -q '^counter=kp_nmissed kind=all value=0' $DBG/counters && grep -q '^counter=krp_nmissed kind=all value=0' $DBG/counters"
check "walk proper timed and within its call (walk_ns <= call_ns)" awk '
function kv(line, key,   a, i, n) {
	n = split(line, a, " ")
	for (i = 1; i <= n; i++)
		if (index(a[i], key "=") == 1)
			return substr(a[i], length(key) + 2)
	return ""
}
{ if (kv($0, "walk_timed") != 1 || kv($0, "walk_ns") + 0 > kv($0, "call_ns") + 0 || kv($0, "walk_ns") + 0 == 0) bad = 1 }
END { exit bad }' $TMP/walks

# ---- one walk per read pass of a file kept open ---------------------------
for k in smaps pagemap; do
	echo 1 > $DBG/reset
	"$WALKER" -m 64 -n 3 -k $k > $TMP/k.out || fail "walker -k $k ran"
	n=$(grep -c "kind=$k " $DBG/walks)
	sed 's/^/# /' $DBG/walks
	check "$k: 3 passes over one open fd are 3 walks ($n)" [ "$n" = 3 ]
	check "$k: each pass counts its PTE slots once" awk -v MIN=16384 -v MAX=20000 '
	{ for (i = 1; i <= NF; i++) if ($i ~ /^pte_slots=/) { split($i, a, "="); if (a[2] < MIN || a[2] > MAX) bad = 1 } }
	END { exit bad }' $DBG/walks
done
sed 's/^/# /' $DBG/hooks

# ---- inject_delay_ns raises duration ------------------------------------
# Judged on the delayed walk alone, by two views of it: the module's
# walk_ns and the walker's own clock around its write(). Each must hold
# the busy-wait, tables * MAXINJ (>= 12.8 ms). A comparison with an
# undelayed walk is not made: under real-time TCG an undelayed walk of
# the same size measured 4.9 ms inside the delayed one and 10.5 ms alone
# (6.1-rt), so noise, not the delay, decides such a difference.
dmesg -c >/dev/null
echo $MAXINJ > /sys/module/ptwalk/parameters/inject_delay_ns
check "inject_delay_ns warns loudly" sh -c "dmesg | grep -q inject_delay_ns=$MAXINJ"
echo 1 > $DBG/reset
"$WALKER" -m 256 -n 1 clear_refs > $TMP/inj.out
echo 0 > /sys/module/ptwalk/parameters/inject_delay_ns
rec=$(grep 'kind=clear_refs' $DBG/walks | head -1)
slow=$(echo "$rec" | sed 's/.*call_ns=\([0-9]*\).*/\1/')
walkp=$(echo "$rec" | sed 's/.*walk_ns=\([0-9]*\).*/\1/')
tables=$(echo "$rec" | sed 's/.*pte_tables=\([0-9]*\).*/\1/')
own=$(awk '/^walk kind=clear_refs/ { for (i = 1; i <= NF; i++) { split($i, a, "="); v[a[1]] = a[2] } print v["end_ns"] - v["start_ns"] }' $TMP/inj.out)
echo "# with $MAXINJ ns/table: call_ns $slow, walk_ns $walkp, $tables tables; walker's own clock ${own:-none} ns"
check "inject_delay_ns=$MAXINJ (max) adds >= pte_tables * $MAXINJ ns to the walk proper" \
	[ "$tables" -ge 128 -a "$walkp" -ge $((tables * MAXINJ)) -a "$slow" -ge "$walkp" ]
check "the walker's own clock holds the injected delay too" \
	[ "${own:-0}" -ge $((tables * MAXINJ)) ]
check "bad runtime inject_delay_ns refused" sh -c \
	"! echo $((MAXINJ + 1)) > /sys/module/ptwalk/parameters/inject_delay_ns 2>/dev/null"

# ---- stalls: a thread of the target mmaps while clear_refs walks -------
# 1 ms per PTE table makes each walk >= 128 ms, so the mmap/munmap thread
# of the target (on the other CPU) queues behind the walker's write lock,
# also under single-threaded TCG, which switches vCPUs only every 100 ms
echo 1 > $DBG/reset
echo $MAXINJ > /sys/module/ptwalk/parameters/inject_delay_ns
"$WALKER" -m $STALL_MIB -n 4 -s clear_refs > /dev/null
echo 0 > /sys/module/ptwalk/parameters/inject_delay_ns
cat $DBG/stalls > $TMP/stalls
head -5 $TMP/stalls | sed 's/^/# /'
echo "# $(wc -l < $TMP/stalls) stall records"
check "stalls recorded against clear_refs walks" grep -q "kind=clear_refs .* mode=write" $TMP/stalls
seqs=$(sed -n 's/^seq=\([0-9]*\).*/\1/p' $DBG/walks | tr '\n' ' ')
s1=$(sed -n 's/^walk_seq=\([0-9]*\).*/\1/p' $TMP/stalls | sort -u | head -1)
check "stall walk_seq $s1 names a recorded walk" sh -c "echo ' $seqs' | grep -q ' $s1 '"
# the split: walker_held + others_held within the wait, the walker part
# within the walk's lock hold and not 0 (the walk blocked it); no failed
# attempt listed; the mmap thread's waits are mostly held (by the walk, and
# by the next walk when the walker takes the lock again before it runs)
cat $DBG/walks > $TMP/walks
split=$(awk '
function val(k,   i, n) {
	for (i = 1; i <= NF; i++) {
		n = index($i, "=")
		if (substr($i, 1, n - 1) == k)
			return substr($i, n + 1)
	}
	return ""
}
NR == FNR { if (val("seq") != "") hold[val("seq")] = val("lock_hold_ns"); next }
{
	if (val("acquired") != "1")
		failed++
	if (val("split_complete") != "1")
		next
	n++
	w = val("walker_held_ns") + 0; o = val("others_held_ns") + 0; t = val("wait_ns") + 0
	if (w + o > t || w == 0 || !(val("walk_seq") in hold) ||
	    w > hold[val("walk_seq")] + 50000)
		bad++
	if (2 * (w + o) >= t)
		most++
}
END { printf "%d %d %d %d\n", n, bad, failed, most }' $TMP/walks $TMP/stalls)
set -- $split
echo "# split: $1 complete, $2 out of bounds, $3 failed attempts listed, $4 mostly held"
check "no failed lock attempt is a stall" [ "$3" = 0 ]
check "stall splits within the wait and the walk's lock hold" [ "$1" -ge 1 -a "$2" = 0 ]
check "a stall behind the clear_refs write hold is mostly held" [ "$4" -ge 1 ]

# ---- target exits mid-walk ------------------------------------------------
echo 1 > $DBG/reset
echo 50000 > /sys/module/ptwalk/parameters/inject_delay_ns
for k in clear_refs smaps_rollup smaps pagemap; do
	"$WALKER" -m 256 -x $k > $TMP/x.out 2>&1
	t=$(sed -n 's/^target tgid=\([0-9]*\).*/\1/p' $TMP/x.out)
	check "target exit mid-$k walk: one record" sh -c \
		"[ \$(grep -c 'kind=$k .*target_tgid=$t ' $DBG/walks) = 1 ]"
done
echo 0 > /sys/module/ptwalk/parameters/inject_delay_ns
sed 's/^/# /' $DBG/walks

# ---- 20 load/unload cycles while walking ---------------------------------
dmesg -c >/dev/null
( while :; do "$WALKER" -m 32 -n 20 -s clear_refs smaps_rollup smaps pagemap >/dev/null 2>&1; done ) &
BGPID=$!
i=0
cycles_ok=1
while [ $i -lt 20 ]; do
	rmmod ptwalk 2>/dev/null
	insmod "$KO" || cycles_ok=0
	sleep 0.3
	i=$((i + 1))
done
# the last load records the walks that follow it: 0.3 s may hold none
# under single-threaded TCG (a walker restarting, an rt kernel), so wait
# for one, up to 20 s
n=0
while [ $n -lt 200 ] && [ "$(wc -l < $DBG/walks)" -eq 0 ]; do
	sleep 0.1
	n=$((n + 1))
done
kill $BGPID 2>/dev/null
wait $BGPID 2>/dev/null
BGPID=
check "20 load/unload cycles while walking" [ $cycles_ok = 1 ]
check "walks recorded during cycling" sh -c "[ \$(wc -l < $DBG/walks) -gt 0 ]"
rmmod ptwalk
check "rmmod" sh -c "! grep -q '^ptwalk ' /proc/modules"
check "dmesg free of oops/WARN/BUG" sh -c \
	"! dmesg | grep -E 'Oops|WARNING:|BUG:|Call Trace|general protection'"

echo "1..$NR"
exit $FAILED

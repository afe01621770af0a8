#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The debug flavour: builds a packaged kernel source (default Debian's
# linux-source-7.3, the mainline users patch) with scripts/kernel/ptwalk.config,
# the preemption model its Kconfig offers (as Debian builds it) and
# scripts/kernel/debug.config (DEBUG_PREEMPT, PROVE_LOCKING,
# DEBUG_ATOMIC_SLEEP, KASAN), builds ptwalk.ko against it, boots it in the
# VM harness and runs the module's own selftest there
# (module/tests/vm-selftest.sh: each walk kind recorded, a target exiting
# mid-walk, load/unload cycles while walkers run, rmmod with walks in
# flight). Passes only if every test passes and the kernel log has no
# splat: the harness's findings (oops, BUG, WARNING, lockdep, KASAN, a
# sleep in atomic context, smp_processor_id() in a preemptible probe).
# Too slow for make test (a KASAN and lockdep build and a guest under
# TCG): make kernel-debug.
#
# usage: scripts/kernel-debug.sh [--src TARBALL] [--dir DIR] [--jobs N]
#                                [--only build|run]
#   --src   default /var/lib/ptwalk/kernels/usr/src/linux-source-7.3.tar.xz
#           (scripts/deps.sh kernel-src-7.3); /usr/src/linux-source-6.1.tar.xz
#           works the same way
#   --dir   build dir (default build/kernel-debug): DIR/<tree> the sources,
#           DIR/obj-<tree> the objects, DIR/<tree>-debug the bzImage,
#           config, release, ptwalk.ko and build log, DIR/results the run
#   --jobs  make -j (default 2)
#   --only  build: stop after the build; run: boot what a build left
# Bad input: one line on stderr, exit 2. Build failure, a failed test or a
# splat: exit 1.
set -eu
cd "$(dirname "$0")/.."
PROJECT=$PWD

die() { echo "kernel-debug: $*" >&2; exit 2; }
fail() { echo "kernel-debug: $*" >&2; exit 1; }
. "$PROJECT/scripts/kernel/lib.sh"

dir=build/kernel-debug
jobs=2
only=""
src=/var/lib/ptwalk/kernels/usr/src/linux-source-7.3.tar.xz
while [ $# -gt 0 ]; do
	case "$1" in
	--dir) [ $# -ge 2 ] || die "--dir needs a value"; dir=$2; shift 2 ;;
	--jobs) [ $# -ge 2 ] || die "--jobs needs a value"; jobs=$2; shift 2 ;;
	--only) [ $# -ge 2 ] || die "--only needs a value"; only=$2; shift 2 ;;
	--src) [ $# -ge 2 ] || die "--src needs a value"; src=$2; shift 2 ;;
	-h|--help) sed -n '3,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
done
kernel_check_options "$jobs" "$only" "$dir"
kernel_resolve_src "$src"
name=$(kernel_tree_name "$src")
tree=$dir/$name
obj=$dir/obj-$name
out=$dir/$name-debug

if [ "$only" != run ]; then
	scripts/deps.sh kernel vm || fail "missing build dependencies (scripts/deps.sh kernel vm)"
	kernel_unpack "$src" "$dir" "$tree"
	kernel_configure "$tree" "$obj" "$dir/merge.log" "$PROJECT/scripts/kernel/ptwalk.config" \
		"$(kernel_preempt_fragment "$tree")" "$PROJECT/scripts/kernel/debug.config"
	kernel_build "$tree" "$obj" "$jobs" -ptwalk-debug "$out"
	make -C module walker >/dev/null || fail "module/tests/walker build failed"
fi
[ "$only" = build ] && exit 0
for f in bzImage ptwalk.ko release; do
	[ -f "$out/$f" ] || die "$out/$f missing: build first (--only build)"
done
[ -x module/tests/walker ] || make -C module walker >/dev/null || fail "module/tests/walker build failed"
mkdir -p "$dir/results"
echo "kernel-debug: booting $(cat "$out/release") with the module's selftest" >&2
rc=0
scripts/ptwalk-vm run --kernel "$out/bzImage" --name "$(cat "$out/release")" \
	--ko "$out/ptwalk.ko" --no-default-files \
	--add "$out/ptwalk.ko:/ptwalk/module/ptwalk.ko" \
	--add "module/tests/vm-selftest.sh:/ptwalk/scripts/module-vm-selftest.sh" \
	--add "module/tests/walker:/ptwalk/module/walker" \
	--timeout 3600 --results "$dir/results" \
	-- sh /ptwalk/scripts/module-vm-selftest.sh /ptwalk/module >"$dir/results/selftest.tap" || rc=$?
cat "$dir/results/selftest.tap"
# the harness's exit: the selftest's own when the kernel log is clean,
# 120 a splat, 121 the guest died, 122 the harness, 124 a timeout
case $rc in
0) ;;
120) fail "kernel log problems on the debug kernel (exit 120): see $dir/results" ;;
*) fail "the module's selftest failed on the debug kernel (exit $rc): see $dir/results" ;;
esac
grep -q '^TAP version 13' "$dir/results/selftest.tap" || fail "no TAP output from the selftest"
if grep -q '^not ok' "$dir/results/selftest.tap"; then
	fail "a test failed: $(grep '^not ok' "$dir/results/selftest.tap" | head -3 | tr '\n' ' ')"
fi
echo "kernel-debug: $(cat "$out/release"): $(grep -c '^ok' "$dir/results/selftest.tap") tests ok, no splat" >&2

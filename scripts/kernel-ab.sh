#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A kernel patch, before and after: builds a packaged kernel source (default
# Debian's linux-source-6.1; --src linux-source-7.3 or 7.2 for mainline) with
# scripts/kernel/ptwalk.config and the preemption model its Kconfig offers
# (scripts/kernel/lib.sh; on top of `make defconfig`) twice, without
# and with PATCH, builds ptwalk.ko against each tree, boots each in the VM
# harness, runs the same scenarios in both and compares them
# (scripts/kernel_ab.py). The second build reuses the first one's object
# tree: only the files PATCH touches (and the release string) recompile.
#
# usage: scripts/kernel-ab.sh [--dir DIR] [--jobs N] [--only build|run]
#                             [--src TARBALL] [--out DIR]
#                             [--expect no-change|skip-fix] PATCH
#   --dir   build dir (default build/kernel-ab): DIR/<tree> (the sources as
#           the tarball names them, patched in place during the second
#           build), DIR/obj-<tree> (objects), DIR/before and DIR/after
#           (bzImage, .config, build log)
#   --src   a tarball or a packaged name (linux-source-7.3); default
#           /usr/src/linux-source-6.1.tar.xz; scripts/deps.sh
#           kernel-src-7.3 (kernel-src-7.2) unpacks /var/lib/ptwalk/kernels/usr/src/
#           linux-source-7.3.tar.xz (7.2 from sid)
#   --jobs  make -j (default 2: the machine's vCPUs are shared)
#   --only  build: stop after both builds; run: boot and compare what an
#           earlier build left in DIR
#   --out   where kernel_ab.py writes result sets and verdicts
#           (default DIR/results)
#   --expect what the verdict asks (kernel_ab.py --expect): no-change
#           (default; any moved budget or compare verdict is named, exit 1)
#           or skip-fix (the 6.1 smaps_rollup backport: walks skip a VMA
#           before, none after, nothing else moves)
# Bad input: one line on stderr, exit 2. Build or boot failure: exit 1.
set -eu
cd "$(dirname "$0")/.."
PROJECT=$PWD
PY=/usr/bin/python3

die() { echo "kernel-ab: $*" >&2; exit 2; }
fail() { echo "kernel-ab: $*" >&2; exit 1; }
. "$PROJECT/scripts/kernel/lib.sh"

dir=build/kernel-ab
jobs=2
only=""
src=/usr/src/linux-source-6.1.tar.xz
out=""
expect=no-change
patch=""
while [ $# -gt 0 ]; do
	case "$1" in
	--dir) [ $# -ge 2 ] || die "--dir needs a value"; dir=$2; shift 2 ;;
	--jobs) [ $# -ge 2 ] || die "--jobs needs a value"; jobs=$2; shift 2 ;;
	--only) [ $# -ge 2 ] || die "--only needs a value"; only=$2; shift 2 ;;
	--src) [ $# -ge 2 ] || die "--src needs a value"; src=$2; shift 2 ;;
	--out) [ $# -ge 2 ] || die "--out needs a value"; out=$2; shift 2 ;;
	--expect) [ $# -ge 2 ] || die "--expect needs a value"
		# kernel_ab.py checks it too, but only after both builds
		case "$2" in no-change | skip-fix) ;; *) die "--expect wants no-change or skip-fix, got '$2'" ;; esac
		expect=$2; shift 2 ;;
	-h|--help) sed -n '3,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	--) shift; break ;;
	-*) die "unknown option $1 (see --help)" ;;
	*) [ -z "$patch" ] || die "one PATCH only, got '$patch' and '$1'"; patch=$1; shift ;;
	esac
done
[ $# -eq 0 ] || { [ -z "$patch" ] && [ $# -eq 1 ] && patch=$1; } || die "one PATCH only"
[ -n "$patch" ] || die "no PATCH given (usage: scripts/kernel-ab.sh [options] PATCH)"
if [ ! -f "$patch" ] || [ ! -r "$patch" ]; then die "PATCH $patch: not a readable file"; fi
if ! grep -q '^+++ ' "$patch" || ! grep -q '^@@ ' "$patch"; then
	die "PATCH $patch: no unified diff in it"
fi
kernel_check_options "$jobs" "$only" "$dir"
case "$patch" in /*) ;; *) patch=$PROJECT/$patch ;; esac
[ -n "$out" ] || out=$dir/results
if [ "$only" != run ]; then
	kernel_resolve_src "$src"
	name=$(kernel_tree_name "$src")
	tree=$dir/$name
	obj=$dir/obj-$name
	scripts/deps.sh kernel vm || fail "missing build dependencies (scripts/deps.sh kernel vm)"
	kernel_unpack "$src" "$dir" "$tree"
	# a tree a previous run left patched goes back to the source as shipped
	if [ -f "$dir/applied.patch" ]; then
		patch -d "$tree" -p1 -R -s <"$dir/applied.patch" || fail "cannot revert $dir/applied.patch"
		rm -f "$dir/applied.patch"
	fi
	patch -d "$tree" -p1 --dry-run -s <"$patch" >/dev/null 2>&1 \
		|| die "PATCH $patch does not apply to $tree"
	kernel_configure "$tree" "$obj" "$dir/merge.log" "$PROJECT/scripts/kernel/ptwalk.config" \
		"$(kernel_preempt_fragment "$tree")"

	kernel_build "$tree" "$obj" "$jobs" -ab-before "$dir/before"
	patch -d "$tree" -p1 -s <"$patch" || fail "PATCH $patch failed to apply"
	cp "$patch" "$dir/applied.patch"
	kernel_build "$tree" "$obj" "$jobs" -ab-after "$dir/after"
	# leave the sources as shipped
	patch -d "$tree" -p1 -R -s <"$dir/applied.patch" && rm -f "$dir/applied.patch"
fi
[ "$only" = build ] && exit 0

for n in before after; do
	[ -f "$dir/$n/bzImage" ] || die "$dir/$n/bzImage missing: build first (--only build)"
done
exec "$PY" scripts/kernel_ab.py --out "$out" --expect "$expect" \
	--before "$dir/before/bzImage" --before-ko "$dir/before/ptwalk.ko" \
	--after "$dir/after/bzImage" --after-ko "$dir/after/ptwalk.ko"

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A kernel patch, before and after: builds Debian's linux-source-6.1 with
# scripts/kernel/ptwalk.config (on top of `make defconfig`) twice, without
# and with PATCH, builds ptwalk.ko against each tree, boots each in the VM
# harness, runs the same scenarios in both and compares them
# (scripts/kernel_ab.py). The second build reuses the first one's object
# tree: only the files PATCH touches (and the release string) recompile.
#
# usage: scripts/kernel-ab.sh [--dir DIR] [--jobs N] [--only build|run]
#                             [--src TARBALL] [--out DIR] PATCH
#   --dir   build dir (default build/kernel-ab): DIR/linux-source-6.1 (the
#           sources, patched in place during the second build), DIR/obj
#           (objects), DIR/before and DIR/after (bzImage, .config, build log)
#   --jobs  make -j (default 2: the machine's vCPUs are shared)
#   --only  build: stop after both builds; run: boot and compare what an
#           earlier build left in DIR
#   --out   where kernel_ab.py writes result sets and verdicts
#           (default DIR/results)
# Bad input: one line on stderr, exit 2. Build or boot failure: exit 1.
set -eu
cd "$(dirname "$0")/.."
PROJECT=$PWD
PY=/usr/bin/python3

die() { echo "kernel-ab: $*" >&2; exit 2; }
fail() { echo "kernel-ab: $*" >&2; exit 1; }

dir=build/kernel-ab
jobs=2
only=""
src=/usr/src/linux-source-6.1.tar.xz
out=""
patch=""
while [ $# -gt 0 ]; do
	case "$1" in
	--dir) [ $# -ge 2 ] || die "--dir needs a value"; dir=$2; shift 2 ;;
	--jobs) [ $# -ge 2 ] || die "--jobs needs a value"; jobs=$2; shift 2 ;;
	--only) [ $# -ge 2 ] || die "--only needs a value"; only=$2; shift 2 ;;
	--src) [ $# -ge 2 ] || die "--src needs a value"; src=$2; shift 2 ;;
	--out) [ $# -ge 2 ] || die "--out needs a value"; out=$2; shift 2 ;;
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
case "$jobs" in ''|*[!0-9]*|0) die "--jobs wants a positive integer, got '$jobs'" ;; esac
case "$only" in ''|build|run) ;; *) die "--only wants build or run, got '$only'" ;; esac
case "$dir" in /*) ;; *) dir=$PROJECT/$dir ;; esac
case "$patch" in /*) ;; *) patch=$PROJECT/$patch ;; esac
[ -n "$out" ] || out=$dir/results
frag=$PROJECT/scripts/kernel/ptwalk.config
tree=$dir/linux-source-6.1
obj=$dir/obj

build_one() { # NAME LOCALVERSION: build the tree as it is now into $obj
	name=$1
	mkdir -p "$dir/$name"
	echo "kernel-ab: building $name (make -j$jobs, log $dir/$name/build.log)" >&2
	t0=$(date +%s)
	make -C "$tree" O="$obj" -j"$jobs" LOCALVERSION="$2" bzImage modules \
		>"$dir/$name/build.log" 2>&1 || {
		tail -30 "$dir/$name/build.log" >&2
		fail "$name: kernel build failed (log $dir/$name/build.log)"
	}
	echo "kernel-ab: $name built in $(( $(date +%s) - t0 )) s" >&2
	cp "$obj/arch/x86/boot/bzImage" "$dir/$name/bzImage"
	cp "$obj/.config" "$dir/$name/config"
	rel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' "$obj/include/generated/utsrelease.h")
	echo "$rel" >"$dir/$name/release"
	# ptwalk.ko against this tree: module/build/<release>/ptwalk.ko, where
	# scripts/kernels.toml looks for it
	scripts/build-modules.sh "$obj" || fail "$name: ptwalk.ko build failed"
	cp "module/build/$rel/ptwalk.ko" "$dir/$name/ptwalk.ko"
}

if [ "$only" != run ]; then
	scripts/deps.sh kernel vm || fail "missing build dependencies (scripts/deps.sh kernel vm)"
	[ -f "$src" ] || die "kernel source $src not found (scripts/deps.sh kernel installs it)"
	mkdir -p "$dir"
	if [ ! -f "$tree/Makefile" ]; then
		echo "kernel-ab: unpacking $src into $dir" >&2
		tar -C "$dir" -xf "$src"
	fi
	# a tree a previous run left patched goes back to the source as shipped
	if [ -f "$dir/applied.patch" ]; then
		patch -d "$tree" -p1 -R -s <"$dir/applied.patch" || fail "cannot revert $dir/applied.patch"
		rm -f "$dir/applied.patch"
	fi
	patch -d "$tree" -p1 --dry-run -s <"$patch" >/dev/null 2>&1 \
		|| die "PATCH $patch does not apply to $tree"
	mkdir -p "$obj"
	make -C "$tree" O="$obj" -s defconfig >/dev/null
	"$tree/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$frag" >"$dir/merge.log" 2>&1 \
		|| { cat "$dir/merge.log" >&2; fail "merge_config.sh failed"; }
	make -C "$tree" O="$obj" -s olddefconfig >/dev/null
	# every option of the fragment survived olddefconfig (a dependency
	# missing would silently drop one)
	# (a subshell's loop: lost is its output)
	lost=$(sed -n 's/^\(CONFIG_[A-Z0-9_]*=.*\)$/\1/p' "$frag" | while read -r l; do
		grep -qxF "$l" "$obj/.config" || printf ' %s' "$l"
	done; sed -n 's/^# \(CONFIG_[A-Z0-9_]*\) is not set$/\1/p' "$frag" | while read -r o; do
		! grep -q "^$o=" "$obj/.config" || printf ' %s(unset)' "$o"
	done)
	[ -z "$lost" ] || fail "options of $frag lost by olddefconfig:$lost"

	build_one before -ab-before
	patch -d "$tree" -p1 -s <"$patch" || fail "PATCH $patch failed to apply"
	cp "$patch" "$dir/applied.patch"
	build_one after -ab-after
	# leave the sources as shipped
	patch -d "$tree" -p1 -R -s <"$dir/applied.patch" && rm -f "$dir/applied.patch"
fi
[ "$only" = build ] && exit 0

for n in before after; do
	[ -f "$dir/$n/bzImage" ] || die "$dir/$n/bzImage missing: build first (--only build)"
done
exec "$PY" scripts/kernel_ab.py --out "$out" \
	--before "$dir/before/bzImage" --before-ko "$dir/before/ptwalk.ko" \
	--after "$dir/after/bzImage" --after-ko "$dir/after/ptwalk.ko"

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Builds ptwalk.ko once per installed kernel headers tree (one copy of the
# sources per release, so the builds never share objects), into
# module/build/<release>/ptwalk.ko: where scripts/kernels.toml looks for
# the module of each VM kernel.
#
# Trees inside the trixie build root (scripts/deps.sh buildroot: the deb13
# kernels' headers and their gcc-14) are built there, through chroot: the
# sources are copied in, the module and its log copied out.
#
# usage: scripts/build-modules.sh [HEADERS_DIR...]   (default: every
#        /usr/src/linux-headers-* with a Module.symvers, here and in the
#        build root)
set -eu
root=${PTWALK_BUILDROOT:-/var/lib/ptwalk/trixie-root}
jobs=$(nproc 2>/dev/null || echo 2)
cd "$(dirname "$0")/.."
if [ ! -f module/Kbuild ]; then
	echo "build-modules: skipped: no module sources (module/Kbuild) in this tree" >&2
	exit 0
fi
dirs="$*"
if [ -z "$dirs" ]; then
	for d in /usr/src/linux-headers-* "$root"/usr/src/linux-headers-*; do
		[ -f "$d/Module.symvers" ] && dirs="$dirs $d"
	done
fi
[ -n "$dirs" ] || { echo "build-modules: no kernel headers installed" >&2; exit 1; }
for kdir in $dirs; do
	# the release the module's vermagic names (UTS_RELEASE), as uname -r says it
	rel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' "$kdir/include/generated/utsrelease.h" 2>/dev/null || true)
	[ -n "$rel" ] || rel=$(basename "$kdir" | sed 's/^linux-headers-//')
	out=module/build/$rel
	# a fresh tree each time: objects or symbol versions left from another
	# build (or from sources since removed) never leak into this one
	rm -rf "$out"
	mkdir -p "$out"
	# sources only: Kbuild, Makefile, *.c, *.h, compat/
	for f in module/Kbuild module/Makefile module/*.c module/*.h; do
		cmp -s "$f" "$out/$(basename "$f")" 2>/dev/null || cp "$f" "$out/"
	done
	mkdir -p "$out/compat"
	for f in module/compat/*; do
		cmp -s "$f" "$out/compat/$(basename "$f")" 2>/dev/null || cp "$f" "$out/compat/"
	done
	echo "build-modules: $rel" >&2
	case "$kdir" in
	"$root"/*)
		# in the build root: its own copy of the sources, the build, the
		# module and the log back to $out
		in=/tmp/ptwalk-build/$rel
		rm -rf "$root$in"
		mkdir -p "$root$in"
		cp -r "$out"/. "$root$in/"
		rc=0
		# objtool reads /proc: mounted in a mount namespace of the
		# build's own, gone with it on every exit path
		# shellcheck disable=SC2016 # the inner shell's arguments
		unshare --mount --propagation private sh -c \
			'mount -t proc proc "$1/proc" && shift && exec chroot "$@"' \
			sh "$root" "$root" make -s -j"$jobs" -C "${kdir#"$root"}" M="$in" W=1 modules \
			>"$out/build.log" 2>&1 || rc=$?
		[ ! -f "$root$in/ptwalk.ko" ] || cp "$root$in/ptwalk.ko" "$out/"
		rm -rf "$root$in"
		[ $rc = 0 ]
		;;
	*) make -s -j"$jobs" -C "$kdir" M="$PWD/$out" W=1 modules >"$out/build.log" 2>&1 ;;
	esac || {
		cat "$out/build.log" >&2
		echo "build-modules: $rel: build failed" >&2
		exit 1
	}
	# W=1 must stay quiet
	if grep -q "warning:" "$out/build.log"; then
		grep "warning:" "$out/build.log" >&2
		echo "build-modules: $rel: warnings with W=1" >&2
		exit 1
	fi
done

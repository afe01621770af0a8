#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Builds ptwalk.ko once per installed kernel headers tree (one copy of the
# sources per release, so the builds never share objects), into
# module/build/<release>/ptwalk.ko: where scripts/kernels.toml looks for
# the module of each VM kernel.
#
# usage: scripts/build-modules.sh [HEADERS_DIR...]   (default: every
#        /usr/src/linux-headers-* with a Module.symvers)
set -eu
cd "$(dirname "$0")/.."
if [ ! -f module/Kbuild ]; then
	echo "build-modules: skipped: no module sources (module/Kbuild) in this tree" >&2
	exit 0
fi
dirs="$*"
if [ -z "$dirs" ]; then
	for d in /usr/src/linux-headers-*; do
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
	make -s -C "$kdir" M="$PWD/$out" W=1 modules >"$out/build.log" 2>&1 || {
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

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Build ptwalk through dkms for every installed 6.1 kernel, from a temp
# copy of this directory, then remove it from dkms again.  Needs root
# (dkms writes /var/lib/dkms).  Exit status non-zero on any failure.
#   usage: test-dkms.sh [KERNELRELEASE...]   (default: all installed 6.1.*)
set -u
here=$(cd "$(dirname "$0")" && pwd)
name=ptwalk
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$here/dkms.conf")
src=/usr/src/$name-$ver
rc=0

kernels=${*:-}
if [ -z "$kernels" ]; then
	for d in /usr/src/linux-headers-6.1.*; do
		[ -f "$d/Module.symvers" ] || continue
		kernels="$kernels ${d#/usr/src/linux-headers-}"
	done
fi
[ -n "$kernels" ] || { echo "test-dkms: no 6.1 kernel headers found" >&2; exit 1; }

if [ -e "$src" ] || dkms status -m $name -v "$ver" 2>/dev/null | grep -q .; then
	echo "test-dkms: $name/$ver already present in dkms or $src; refusing" >&2
	exit 1
fi

# dkms generates a module signing key on first use; do not leave one behind
mok_existed=0
[ -e /var/lib/dkms/mok.key ] && mok_existed=1

fake=
cleanup() {
	dkms remove -m $name -v "$ver" --all >/dev/null 2>&1
	rm -rf "$src"
	[ -n "$fake" ] && rm -rf "$fake"
	if [ $mok_existed = 0 ]; then
		rm -f /var/lib/dkms/mok.key /var/lib/dkms/mok.pub
	fi
}
trap cleanup EXIT INT TERM

mkdir -p "$src"
# copy only the sources (no build products)
(cd "$here" && tar cf - --exclude='*.o' --exclude='*.ko' --exclude='*.mod*' \
	--exclude='.*.cmd' --exclude=Module.symvers --exclude=modules.order \
	--exclude=tests/walker --exclude=./build .) | (cd "$src" && tar xf -)

dkms add -m $name -v "$ver" || exit 1
for k in $kernels; do
	if dkms build -m $name -v "$ver" -k "$k" \
		--kernelsourcedir "/usr/src/linux-headers-$k"; then
		echo "test-dkms: ok $k"
	else
		echo "test-dkms: FAILED $k" >&2
		cat "/var/lib/dkms/$name/$ver/build/make.log" 2>/dev/null | tail -20 >&2
		rc=1
	fi
done

# a kernel without kprobes: dkms must skip it (BUILD_EXCLUSIVE_CONFIG),
# not build a module that cannot work.  The kernel tree is the first one
# above, linked file by file, with CONFIG_KPROBES removed from .config.
k=$(echo $kernels | cut -d' ' -f1)
fake=$(mktemp -d /tmp/ptwalk-nokprobes.XXXXXX)
cp -as "/usr/src/linux-headers-$k/." "$fake/"
rm -f "$fake/.config"
grep -v '^CONFIG_KPROBES=' "/usr/src/linux-headers-$k/.config" > "$fake/.config"
out=$(dkms build -m $name -v "$ver" -k "$k" --force --kernelsourcedir "$fake" 2>&1)
brc=$?
echo "$out" | tail -3
if [ $brc = 0 ]; then
	echo "test-dkms: FAILED: built for a kernel without CONFIG_KPROBES" >&2
	rc=1
elif ! echo "$out" | grep -q BUILD_EXCLUSIVE; then
	echo "test-dkms: FAILED: refused without naming BUILD_EXCLUSIVE (exit $brc)" >&2
	rc=1
else
	echo "test-dkms: ok: a kernel without CONFIG_KPROBES is skipped (exit $brc)"
fi
exit $rc

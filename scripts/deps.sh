#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Installs the Debian packages ptwalk needs. Every package the project uses is
# listed here, in one place, by group. Idempotent: installs only what is
# missing. As non-root with something missing, says what to install and fails.
#
# usage: scripts/deps.sh [GROUP...]   (default: all groups)
set -eu

pkgs_build="make g++ cmake pkg-config libgtest-dev libgmock-dev libbenchmark-dev gzip procps linux-source-6.1 \
clang bpftool libbpf-dev libelf-dev zlib1g-dev libzstd-dev nlohmann-json3-dev \
libtraceevent-dev libmicrohttpd-dev \
libyaml-cpp-dev libcrypt-dev libgnutls28-dev libcap-dev"
pkgs_python="python3 python3-pytest python3-matplotlib python3-scipy"
pkgs_vm="qemu-system-x86 busybox-static cpio kmod zstd \
linux-image-amd64 linux-image-cloud-amd64 linux-image-rt-amd64 \
linux-headers-amd64 linux-headers-cloud-amd64 linux-headers-rt-amd64"
pkgs_module="dkms pahole linux-headers-amd64 linux-headers-cloud-amd64 linux-headers-rt-amd64"
# From bookworm-backports (the machine's own bookworm mirror), through a
# private apt configuration (/var/lib/ptwalk/apt): the machine's apt
# sources stay as they are. NAME/SUITE:MINVERSION is installed from SUITE
# when missing or older than MINVERSION.
# - QEMU 10: Debian 12's QEMU 7.2 double-faults 6.12 guests under TCG and
#   hangs at boot with -icount and -smp 2 (docs/vm.md, "The VM matrix").
# - Debian's 6.12 kernels and headers: the debian-6.12 matrix of
#   scripts/kernels.toml (scripts/tests/test_kernels_toml.py holds the two
#   together).
bpo_suite="bookworm-backports"
bpo_k612="6.12.95+deb12"
pkgs_vm_bpo="qemu-system-x86/$bpo_suite:1:10.0 qemu-system-common/$bpo_suite:1:10.0 \
qemu-system-data/$bpo_suite:1:10.0 seabios/$bpo_suite:1.16.3 \
linux-image-$bpo_k612-amd64 linux-image-$bpo_k612-cloud-amd64 linux-image-$bpo_k612-rt-amd64 \
linux-headers-$bpo_k612-amd64 linux-headers-$bpo_k612-cloud-amd64 linux-headers-$bpo_k612-rt-amd64"
# Kernels newer than bookworm's, for the debian-6.18 and debian-7.3
# matrices of scripts/kernels.toml: Debian's images from trixie-backports
# (built for deb13), downloaded and unpacked under /var/lib/ptwalk/kernels,
# never installed: their packages want trixie's kmod and initramfs tools,
# and a guest needs only the image and its module tree. 7.x split the
# image (linux-binary-*, /usr/lib/modules/REL/vmlinuz) from its modules
# (linux-modules-*) and its base files (linux-base-*: config, System.map,
# modules.builtin). 6.18 has no headers left on the mirror, so no
# ptwalk.ko for it.
tbpo_suite="trixie-backports"
tbpo_k618="6.18.15+deb13"
tbpo_k73="7.3.4+deb13"
pkgs_kernels_tbpo="linux-image-$tbpo_k618-amd64 linux-image-$tbpo_k618-cloud-amd64 \
linux-image-$tbpo_k618-rt-amd64 \
linux-binary-$tbpo_k73-amd64 linux-binary-$tbpo_k73-cloud-amd64 linux-binary-$tbpo_k73-rt-amd64 \
linux-modules-$tbpo_k73-amd64 linux-modules-$tbpo_k73-cloud-amd64 linux-modules-$tbpo_k73-rt-amd64 \
linux-base-$tbpo_k73-amd64 linux-base-$tbpo_k73-cloud-amd64 linux-base-$tbpo_k73-rt-amd64"
# make test boots the cloud flavour of each (test_matrices in
# scripts/kernels.toml): 7.3 cloud (37 MB of packages) with the ptwalk.ko
# built in the build root below, 6.18 cloud without one
pkgs_kernel73_cloud="linux-binary-$tbpo_k73-cloud-amd64 linux-modules-$tbpo_k73-cloud-amd64 \
linux-base-$tbpo_k73-cloud-amd64"
pkgs_kernel618_cloud="linux-image-$tbpo_k618-cloud-amd64"
kernels_dir=/var/lib/ptwalk/kernels
# ptwalk.ko for the deb13 kernels (7.3): their headers need the compiler
# the kernel was built with, gcc-14, which bookworm lacks. A trixie build
# root in $buildroot_dir, made by mmdebstrap (bookworm's) from the machine's
# mirror: trixie and trixie-backports in one call, into a plain directory,
# run as root with no daemon or image tool; nothing of trixie is installed
# on the host. scripts/build-modules.sh builds there through chroot. (A
# cross gcc-14 on bookworm does not exist; debootstrap takes one suite per
# call and caches on the host.)
buildroot_dir=/var/lib/ptwalk/trixie-root
pkgs_buildroot="make gcc-14 linux-headers-$tbpo_k73-amd64 linux-headers-$tbpo_k73-cloud-amd64 \
linux-headers-$tbpo_k73-rt-amd64"
pkgs_perf="linux-perf"
# the real Prometheus server and promtool for the monitor tests (the
# package's own service is not used: tests run a private instance), and
# a YAML parser for the deploy/ files' test, openssl for the TLS test's
# certificates
pkgs_prometheus="prometheus python3-yaml openssl"
# libFuzzer, ASan and UBSan for the parsers' fuzz targets (scripts/fuzz.sh)
pkgs_fuzz="clang libclang-rt-14-dev"
# make lint: checkpatch.pl (perl) from linux-source-6.1's tarball (xz),
# clang-format for userspace/, mypy and flake8 for scripts/
pkgs_lint="perl xz-utils git linux-source-6.1 clang-format-14 python3-mypy python3-flake8"
# the man pages (scripts/gen-man.py): go-md2man turns docs/man/*.md into
# roff, man-db and groff render and check them
pkgs_man="go-md2man man-db groff-base"
# make deb: debhelper with its DKMS and python3 add-ons, lintian to check
# the packages
pkgs_deb="debhelper dh-dkms dh-python dpkg-dev lintian"
# mainline for patch work and the debug flavour (scripts/kernel-ab.sh
# --src, scripts/kernel-debug.sh): trixie-backports' linux-source-7.3,
# unpacked as the images are: $kernels_dir/usr/src/linux-source-7.3.tar.xz
pkgs_kernel_src73="linux-source-7.3"
# and sid's linux-source-7.2 (7.2.13), unpacked the same way:
# $kernels_dir/usr/src/linux-source-7.2.tar.xz
sid_suite=sid
pkgs_kernel_src72="linux-source-7.2"
# building a kernel from linux-source-6.1 (scripts/kernel-ab.sh, make kernel-ab)
pkgs_kernel="make gcc flex bison bc libelf-dev libssl-dev pahole xz-utils cpio kmod linux-source-6.1"

# kernel is not in the default set: only make kernel-ab builds kernels
groups="${*:-build python vm module perf prometheus fuzz lint man deb}"
want=""
want_bpo=""
want_kernels=""
want_sid=""
want_buildroot=""
for g in $groups; do
	case "$g" in
	build) want="$want $pkgs_build" ;;
	python) want="$want $pkgs_python" ;;
	vm) want="$want $pkgs_vm"; want_bpo="$want_bpo $pkgs_vm_bpo" ;;
	module) want="$want $pkgs_module"; want_bpo="$want_bpo $pkgs_vm_bpo" ;;
	perf) want="$want $pkgs_perf" ;;
	prometheus) want="$want $pkgs_prometheus" ;;
	fuzz) want="$want $pkgs_fuzz" ;;
	lint) want="$want $pkgs_lint" ;;
	man) want="$want $pkgs_man" ;;
	deb) want="$want $pkgs_deb $pkgs_man" ;;
	kernel) want="$want $pkgs_kernel" ;;
	kernels) want_kernels="$want_kernels $pkgs_kernels_tbpo" ;;
	kernel-7.3-cloud) want_kernels="$want_kernels $pkgs_kernel73_cloud" ;;
	kernel-6.18-cloud) want_kernels="$want_kernels $pkgs_kernel618_cloud" ;;
	kernel-src-7.3) want_kernels="$want_kernels $pkgs_kernel_src73" ;;
	kernel-src-7.2) want_sid="$want_sid $pkgs_kernel_src72" ;;
	buildroot) want="$want mmdebstrap"; want_buildroot=$pkgs_buildroot ;;
	*) echo "deps.sh: unknown group '$g' (build python vm module perf prometheus fuzz lint man deb kernel kernels kernel-7.3-cloud kernel-6.18-cloud kernel-src-7.3 kernel-src-7.2 buildroot)" >&2; exit 2 ;;
	esac
done

installed() { # NAME [MINVERSION]: installed, and not older than MINVERSION
	v=$(dpkg-query -W -f='${db:Status-Abbrev} ${Version}' "$1" 2>/dev/null) || return 1
	case "$v" in ii*) ;; *) return 1 ;; esac
	[ -z "${2:-}" ] || dpkg --compare-versions "${v#* }" ge "$2"
}

missing=""
for p in $want; do
	case " $missing " in *" $p "*) continue ;; esac
	installed "$p" || missing="$missing $p"
done
# NAME[/SUITE:MINVERSION] -> apt-get's NAME or NAME/SUITE
missing_bpo=""
for e in $want_bpo; do
	min=""
	case "$e" in */*:*) min=${e#*:} ;; esac
	case " $missing_bpo " in *" ${e%%:*} "*) continue ;; esac
	installed "${e%%/*}" "$min" || missing_bpo="$missing_bpo ${e%%:*}"
done
# the kernels groups: packages not yet unpacked under $kernels_dir, once each
not_unpacked() {
	out=""
	for p in "$@"; do
		case " $out " in *" $p "*) continue ;; esac
		[ -e "$kernels_dir/.unpacked/$p" ] || out="$out $p"
	done
	echo "$out"
}
# shellcheck disable=SC2086
missing_kernels=$(not_unpacked $want_kernels)
# shellcheck disable=SC2086
missing_sid=$(not_unpacked $want_sid)
# the buildroot group: a root made with other packages is made again
missing_buildroot=""
if [ -n "$want_buildroot" ] &&
	[ "$(cat "$buildroot_dir/.ptwalk-packages" 2>/dev/null)" != "$want_buildroot" ]; then
	missing_buildroot=" $buildroot_dir (trixie:$(echo "$want_buildroot" | tr -s ' ' ,))"
fi
[ -z "$missing$missing_bpo$missing_kernels$missing_sid$missing_buildroot" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "ptwalk: missing Debian packages:$missing$missing_bpo$missing_kernels$missing_sid$missing_buildroot" >&2
	[ -z "$missing" ] || echo "ptwalk: install them as root: apt-get install$missing" >&2
	[ -z "$missing_bpo" ] || echo "ptwalk: and from $bpo_suite:$missing_bpo" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# The machine's Debian mirror (its bookworm source) in $uri, to take $1 from
mirror() {
	uri=$(awk '/^URIs:/ { u = $2 } /^Suites:/ && / bookworm( |$)/ { print u; exit }' \
		/etc/apt/sources.list.d/*.sources 2>/dev/null || true)
	[ -n "$uri" ] || uri=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' \
		/etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true)
	if [ -z "$uri" ]; then
		echo "ptwalk: no Debian mirror in /etc/apt to take $1 from" >&2
		exit 1
	fi
}

# A private apt configuration in $2 for suite $1 of the machine's own Debian
# mirror: its own source list, package lists and cache. With $3 "alone", no
# other source (downloads only); else the machine's sources.list.d beside
# it (the suite's dependencies). Nothing under /etc/apt changes, and the
# machine's apt never offers a package of that suite as an upgrade.
# Use: APT_CONFIG="$2/apt.conf".
private_apt() {
	mirror "$1"
	mkdir -p "$2/lists/partial" "$2/cache/archives/partial"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $1 main" \
		>"$2/sources.list"
	printf 'Dir::Etc::SourceList "%s";\nDir::State::Lists "%s";\nDir::Cache "%s";\n' \
		"$2/sources.list" "$2/lists" "$2/cache" >"$2/apt.conf"
	if [ "${3:-}" = alone ]; then
		printf 'Dir::Etc::SourceParts "%s";\n' "$2/none" >>"$2/apt.conf"
	fi
}

if [ -n "$missing" ]; then
	echo "ptwalk: installing Debian packages:$missing" >&2
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >&2
fi
if [ -n "$missing_bpo" ]; then
	echo "ptwalk: installing from $bpo_suite:$missing_bpo" >&2
	d=/var/lib/ptwalk/apt
	private_apt "$bpo_suite" "$d"
	APT_CONFIG="$d/apt.conf" apt-get update -qq
	# shellcheck disable=SC2086
	APT_CONFIG="$d/apt.conf" apt-get install -y -qq --no-install-recommends $missing_bpo >&2
fi
# Packages $2... of suite $1, downloaded through its private apt
# configuration and unpacked (not installed) into $kernels_dir.
unpack_from() {
	suite=$1
	shift
	echo "ptwalk: unpacking from $suite into $kernels_dir: $*" >&2
	d=/var/lib/ptwalk/apt-$suite
	private_apt "$suite" "$d" alone
	mkdir -p "$d/debs" "$kernels_dir/.unpacked"
	APT_CONFIG="$d/apt.conf" apt-get update -qq
	(cd "$d/debs" && rm -f ./*.deb &&
		APT_CONFIG="$d/apt.conf" apt-get download -qq -o APT::Sandbox::User=root "$@")
	for p in "$@"; do
		deb=$(ls "$d/debs/${p}_"*.deb)
		dpkg-deb -x "$deb" "$kernels_dir"
		touch "$kernels_dir/.unpacked/$p"
	done
	rm -f "$d/debs/"*.deb
}
# shellcheck disable=SC2086
[ -z "$missing_sid" ] || unpack_from "$sid_suite" $missing_sid
if [ -n "$missing_kernels" ]; then
	# shellcheck disable=SC2086
	unpack_from "$tbpo_suite" $missing_kernels
	# modules.dep and the rest, as the packages' postinst would make them
	for m in "$kernels_dir"/usr/lib/modules/*/; do
		rel=$(basename "$m")
		[ -e "$m/kernel" ] || continue
		depmod -b "$kernels_dir/usr" "$rel"
	done
fi
if [ -n "$missing_buildroot" ]; then
	echo "ptwalk: making the trixie build root$missing_buildroot" >&2
	mirror trixie
	key=/usr/share/keyrings/debian-archive-keyring.gpg
	rm -rf "$buildroot_dir.new"
	mmdebstrap --quiet --variant=apt --include="$(echo "$want_buildroot" | tr -s ' ' ,)" \
		trixie "$buildroot_dir.new" "deb [signed-by=$key] $uri trixie main" \
		"deb [signed-by=$key] $uri $tbpo_suite main" >&2
	echo "$want_buildroot" >"$buildroot_dir.new/.ptwalk-packages"
	rm -rf "$buildroot_dir"
	mv "$buildroot_dir.new" "$buildroot_dir"
fi

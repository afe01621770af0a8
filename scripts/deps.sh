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
#   hangs at boot with -icount and -smp 2 (README, "The VM matrix").
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
kernels_dir=/var/lib/ptwalk/kernels
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
# building a kernel from linux-source-6.1 (scripts/kernel-ab.sh, make kernel-ab)
pkgs_kernel="make gcc flex bison bc libelf-dev libssl-dev pahole xz-utils cpio kmod linux-source-6.1"

# kernel is not in the default set: only make kernel-ab builds kernels
groups="${*:-build python vm module perf prometheus fuzz lint}"
want=""
want_bpo=""
want_kernels=""
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
	kernel) want="$want $pkgs_kernel" ;;
	kernels) want_kernels=$pkgs_kernels_tbpo ;;
	*) echo "deps.sh: unknown group '$g' (build python vm module perf prometheus fuzz lint kernel kernels)" >&2; exit 2 ;;
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
# the kernels group: packages not yet unpacked under $kernels_dir
missing_kernels=""
for p in $want_kernels; do
	[ -e "$kernels_dir/.unpacked/$p" ] || missing_kernels="$missing_kernels $p"
done
[ -z "$missing$missing_bpo$missing_kernels" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "ptwalk: missing Debian packages:$missing$missing_bpo$missing_kernels" >&2
	[ -z "$missing" ] || echo "ptwalk: install them as root: apt-get install$missing" >&2
	[ -z "$missing_bpo" ] || echo "ptwalk: and from $bpo_suite:$missing_bpo" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if [ -n "$missing" ]; then
	echo "ptwalk: installing Debian packages:$missing" >&2
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >&2
fi
if [ -n "$missing_bpo" ]; then
	echo "ptwalk: installing from $bpo_suite:$missing_bpo" >&2
	# Its own source list (the machine's bookworm mirror, suite
	# bookworm-backports) beside the machine's sources.list.d, its own
	# package lists and cache: nothing under /etc/apt changes, and the
	# machine's apt never offers a backport as an upgrade.
	d=/var/lib/ptwalk/apt
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
	uri=$(awk '/^URIs:/ { u = $2 } /^Suites:/ && / bookworm( |$)/ { print u; exit }' \
		/etc/apt/sources.list.d/*.sources 2>/dev/null || true)
	[ -n "$uri" ] || uri=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' \
		/etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true)
	if [ -z "$uri" ]; then
		echo "ptwalk: no bookworm mirror in /etc/apt to take $bpo_suite from" >&2
		exit 1
	fi
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $bpo_suite main" \
		>"$d/sources.list"
	printf 'Dir::Etc::SourceList "%s";\nDir::State::Lists "%s";\nDir::Cache "%s";\n' \
		"$d/sources.list" "$d/lists" "$d/cache" >"$d/apt.conf"
	APT_CONFIG="$d/apt.conf" apt-get update -qq
	# shellcheck disable=SC2086
	APT_CONFIG="$d/apt.conf" apt-get install -y -qq --no-install-recommends $missing_bpo >&2
fi
if [ -n "$missing_kernels" ]; then
	echo "ptwalk: unpacking from $tbpo_suite into $kernels_dir:$missing_kernels" >&2
	# The same kind of private apt configuration as above, for trixie's
	# backports from the same mirror.
	uri=$(awk '/^URIs:/ { u = $2 } /^Suites:/ && / bookworm( |$)/ { print u; exit }' \
		/etc/apt/sources.list.d/*.sources 2>/dev/null || true)
	[ -n "$uri" ] || uri=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' \
		/etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true)
	if [ -z "$uri" ]; then
		echo "ptwalk: no Debian mirror in /etc/apt to take $tbpo_suite from" >&2
		exit 1
	fi
	d=/var/lib/ptwalk/apt-$tbpo_suite
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial" "$d/debs" \
		"$kernels_dir/.unpacked"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $tbpo_suite main" \
		>"$d/sources.list"
	printf 'Dir::Etc::SourceList "%s";\nDir::Etc::SourceParts "%s";\nDir::State::Lists "%s";\nDir::Cache "%s";\n' \
		"$d/sources.list" "$d/none" "$d/lists" "$d/cache" >"$d/apt.conf"
	APT_CONFIG="$d/apt.conf" apt-get update -qq
	# shellcheck disable=SC2086
	(cd "$d/debs" && rm -f ./*.deb && \
		APT_CONFIG="$d/apt.conf" apt-get download -qq -o APT::Sandbox::User=root $missing_kernels)
	for p in $missing_kernels; do
		deb=$(ls "$d/debs/${p}_"*.deb)
		dpkg-deb -x "$deb" "$kernels_dir"
		touch "$kernels_dir/.unpacked/$p"
	done
	rm -f "$d/debs/"*.deb
	# modules.dep and the rest, as the packages' postinst would make them
	for m in "$kernels_dir"/usr/lib/modules/*/; do
		rel=$(basename "$m")
		[ -e "$m/kernel" ] || continue
		depmod -b "$kernels_dir/usr" "$rel"
	done
fi

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
libyaml-cpp-dev libcrypt-dev libgnutls28-dev"
pkgs_python="python3 python3-pytest python3-matplotlib python3-scipy"
pkgs_vm="qemu-system-x86 busybox-static cpio kmod zstd \
linux-image-amd64 linux-image-cloud-amd64 linux-image-rt-amd64 \
linux-headers-amd64 linux-headers-cloud-amd64 linux-headers-rt-amd64"
pkgs_module="dkms linux-headers-amd64 linux-headers-cloud-amd64 linux-headers-rt-amd64"
pkgs_perf="linux-perf"
# the real Prometheus server and promtool for the monitor tests (the
# package's own service is not used: tests run a private instance), and
# a YAML parser for the deploy/ files' test, openssl for the TLS test's
# certificates
pkgs_prometheus="prometheus python3-yaml openssl"
# libFuzzer, ASan and UBSan for the parsers' fuzz targets (scripts/fuzz.sh)
pkgs_fuzz="clang libclang-rt-14-dev"

groups="${*:-build python vm module perf prometheus fuzz}"
want=""
for g in $groups; do
	case "$g" in
	build) want="$want $pkgs_build" ;;
	python) want="$want $pkgs_python" ;;
	vm) want="$want $pkgs_vm" ;;
	module) want="$want $pkgs_module" ;;
	perf) want="$want $pkgs_perf" ;;
	prometheus) want="$want $pkgs_prometheus" ;;
	fuzz) want="$want $pkgs_fuzz" ;;
	*) echo "deps.sh: unknown group '$g' (build python vm module perf prometheus fuzz)" >&2; exit 2 ;;
	esac
done

missing=""
for p in $want; do
	case " $missing " in *" $p "*) continue ;; esac
	if ! dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii'; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "ptwalk: missing Debian packages:$missing" >&2
	echo "ptwalk: install them as root: apt-get install$missing" >&2
	exit 1
fi
echo "ptwalk: installing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >&2

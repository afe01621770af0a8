# SPDX-License-Identifier: GPL-2.0
# Building a kernel from a packaged source for the VM suites: sourced by
# scripts/kernel-ab.sh and scripts/kernel-debug.sh (POSIX sh). The caller
# defines fail() (exit 1) and die() (exit 2), and sets PROJECT.

# The options both scripts take, checked: --jobs, --only; DIR made absolute
# (sets dir).
kernel_check_options() { # JOBS ONLY DIR
	case "$1" in ''|*[!0-9]*|0) die "--jobs wants a positive integer, got '$1'" ;; esac
	case "$2" in ''|build|run) ;; *) die "--only wants build or run, got '$2'" ;; esac
	case "$3" in /*) dir=$3 ;; *) dir=$PROJECT/$3 ;; esac
}

# --src as given: a tarball's path, or a packaged source's name
# (linux-source-6.1, -7.3, -7.2), looked up where Debian installs it
# (/usr/src) and where scripts/deps.sh kernel-src-7.3 (7.2) unpacks it
# (/var/lib/ptwalk/kernels/usr/src). Sets src to a tarball that exists.
kernel_resolve_src() { # SRC
	hint="scripts/deps.sh kernel installs 6.1, kernel-src-7.3 and kernel-src-7.2 the mainline ones"
	src=$1
	case "$src" in
	*/*|*.tar.*) [ -f "$src" ] || die "kernel source $src not found ($hint)" ;;
	linux-source-*)
		for d in /usr/src /var/lib/ptwalk/kernels/usr/src; do
			[ -f "$d/$src.tar.xz" ] && { src=$d/$src.tar.xz; return 0; }
		done
		die "no $1.tar.xz in /usr/src or /var/lib/ptwalk/kernels/usr/src ($hint)" ;;
	*) die "--src wants a tarball or a name like linux-source-7.3, got '$src'" ;;
	esac
}

# The top directory of a linux-source tarball (linux-source-7.3), from its
# first member: the tarball names its own tree.
kernel_tree_name() { # TARBALL
	top=$(tar -tf "$1" 2>/dev/null | head -n 1 | cut -d/ -f1) || true
	case "$top" in
	linux-source-*|linux-*) echo "$top" ;;
	*) die "$1: not a kernel source tarball (its first member is '$top')" ;;
	esac
}

# The preemption fragment the tree's Kconfig allows on x86: voluntary, as
# Debian's 6.x build, where PREEMPT_VOLUNTARY is offered; lazy, as Debian's
# 7.3 builds, where x86 has PREEMPT_LAZY and PREEMPT_VOLUNTARY depends on
# its absence (7.3.4 kernel/Kconfig.preempt 38-42).
kernel_preempt_fragment() { # TREE
	kp=$1/kernel/Kconfig.preempt
	[ -f "$kp" ] || fail "$kp missing: not a kernel tree"
	if awk '/^config PREEMPT_VOLUNTARY$/ { v = 1; next } /^config / { v = 0 }
		v && /depends on !ARCH_HAS_PREEMPT_LAZY/ { found = 1 } END { exit !found }' "$kp" &&
		grep -q '^config PREEMPT_LAZY$' "$kp"; then
		echo "$PROJECT/scripts/kernel/preempt-lazy.config"
	else
		echo "$PROJECT/scripts/kernel/preempt-voluntary.config"
	fi
}

# defconfig, then the fragments merged in order, then olddefconfig; every
# option of every fragment must survive (a dependency missing would
# silently drop one). The merge log goes to LOG.
kernel_configure() { # TREE OBJ LOG FRAGMENT...
	tree=$1 obj=$2 log=$3
	shift 3
	mkdir -p "$obj"
	make -C "$tree" O="$obj" -s defconfig >/dev/null
	"$tree/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$@" >"$log" 2>&1 \
		|| { cat "$log" >&2; fail "merge_config.sh failed"; }
	make -C "$tree" O="$obj" -s olddefconfig >/dev/null
	lost=""
	for frag in "$@"; do
		# (a subshell's loop: lost is its output)
		lost=$lost$(sed -n 's/^\(CONFIG_[A-Z0-9_]*=.*\)$/\1/p' "$frag" | while read -r l; do
			grep -qxF "$l" "$obj/.config" || printf ' %s' "$l"
		done; sed -n 's/^# \(CONFIG_[A-Z0-9_]*\) is not set$/\1/p' "$frag" | while read -r o; do
			! grep -q "^$o=" "$obj/.config" || printf ' %s(unset)' "$o"
		done)
		[ -z "$lost" ] || fail "options of $frag lost by olddefconfig:$lost"
	done
}

# Builds TREE into OBJ (bzImage and modules) with LOCALVERSION, and copies
# the bzImage, the .config, the release and ptwalk.ko built against the
# objects (scripts/build-modules.sh, with the compiler that built the
# kernel) into OUTDIR.
kernel_build() { # TREE OBJ JOBS LOCALVERSION OUTDIR
	tree=$1 obj=$2 jobs=$3 outdir=$5
	mkdir -p "$outdir"
	echo "kernel: building $(basename "$outdir") from $(basename "$tree") (make -j$jobs, log $outdir/build.log)" >&2
	t0=$(date +%s)
	make -C "$tree" O="$obj" -j"$jobs" LOCALVERSION="$4" bzImage modules \
		>"$outdir/build.log" 2>&1 || {
		tail -30 "$outdir/build.log" >&2
		fail "$(basename "$outdir"): kernel build failed (log $outdir/build.log)"
	}
	echo "kernel: $(basename "$outdir") built in $(( $(date +%s) - t0 )) s" >&2
	cp "$obj/arch/x86/boot/bzImage" "$outdir/bzImage"
	cp "$obj/.config" "$outdir/config"
	rel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' "$obj/include/generated/utsrelease.h")
	echo "$rel" >"$outdir/release"
	# ptwalk.ko against this tree: module/build/<release>/ptwalk.ko, where
	# scripts/kernels.toml looks for it
	(cd "$PROJECT" && scripts/build-modules.sh "$obj") || fail "$(basename "$outdir"): ptwalk.ko build failed"
	cp "$PROJECT/module/build/$rel/ptwalk.ko" "$outdir/ptwalk.ko"
}

# Unpacks TARBALL (as kernel_resolve_src found it) into DIR unless its
# tree is there already.
kernel_unpack() { # TARBALL DIR TREE
	mkdir -p "$2"
	if [ ! -f "$3/Makefile" ]; then
		echo "kernel: unpacking $1 into $2" >&2
		tar -C "$2" -xf "$1"
	fi
}

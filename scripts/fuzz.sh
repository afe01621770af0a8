#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The libFuzzer targets of userspace/fuzz (README.md there): the parsers of
# kernel and file input, built with clang, ASan and UBSan in build/fuzz.
#
# usage: scripts/fuzz.sh build
#        scripts/fuzz.sh run brief|long|Ns|N [TARGET...]
#   brief  10 s per target, FUZZ_JOBS (default: nproc) targets at a time:
#          under a minute on 2 CPUs (make test, make fuzz)
#   long   10^6 executions per target (make bench)
#   Ns, N  N seconds, N executions per target
# Prints per target "fuzz T: N execs, 0 crashes", or one line "fuzz T:
# FAILED ..." with the reason, the input (build/fuzz/artifacts/T/) and the
# log (build/fuzz/logs/T.log). Each corpus grows in build/fuzz/corpus/T; the
# seeds are the recorded test data of the repo, read only.
# Exit: 0 every target clean, 1 a target failed, 2 usage or not built.
set -eu
cd "$(dirname "$0")/.."
out=build/fuzz
all="procfs module_view tracefs mmap_lock_decode perf_session vma_layout json strings"

# Seed directories of a target (libFuzzer reads them recursively).
seeds() {
	case "$1" in
	procfs | vma_layout) echo userspace/testdata/proc ;;
	module_view) echo userspace/testdata/module ;;
	tracefs) echo userspace/testdata/tracefs ;;
	perf_session) echo userspace/testdata/perf ;;
	json | strings) echo "$out/seeds/$1" ;;
	mmap_lock_decode) ;; # binary records: found from the formats' IDs
	esac
}

# Generated seeds: command-line strings, and pieces of recorded results
# (each top-level member, arrays cut to 3 elements) within -max_len.
make_seeds() {
	mkdir -p "$out/seeds/json" "$out/seeds/strings"
	/usr/bin/python3 - "$out/seeds/json" scripts/tests/data/results/aa/s0/*-r1.json.gz <<-'EOF' || true
	import gzip, json, sys
	def cut(v):
	    if isinstance(v, list):
	        return [cut(x) for x in v[:3]]
	    if isinstance(v, dict):
	        return {k: cut(x) for k, x in v.items()}
	    return v
	for path in sys.argv[2:]:
	    with gzip.open(path, "rt", encoding="utf-8") as f:
	        doc = json.load(f)
	    for k, v in doc.items():
	        text = json.dumps({k: cut(v)}, ensure_ascii=False)
	        if len(text.encode()) <= 4096:
	            name = path.split("/")[-1].split(".")[0] + "-" + k
	            with open(sys.argv[1] + "/" + name, "w", encoding="utf-8") as o:
	                o.write(text)
	EOF
	i=0
	for s in 4096 64K 1.5G 512MiB 250ms 1.5s 2m 127.0.0.1:9632 '[::1]:9632' \
		0-3,5,7-8 /proc/12/smaps_rollup /proc/12/task/13/clear_refs; do
		i=$((i + 1))
		printf '%s' "$s" >"$out/seeds/strings/$i"
	done
}

# One target, $1 the limit flag, $2 the target: one line, status 0/1.
run_one() {
	t=$2
	bin=$out/fuzz_$t
	log=$out/logs/$t.log
	if [ ! -x "$bin" ]; then
		echo "fuzz $t: FAILED: $bin missing (scripts/fuzz.sh build)"
		return 1
	fi
	mkdir -p "$out/corpus/$t" "$out/artifacts/$t" "$out/logs"
	rc=0
	# shellcheck disable=SC2046 # seeds: zero or one directory
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 nice -n 10 "$bin" "$1" \
		-max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$out/artifacts/$t/" "$out/corpus/$t" $(seeds "$t") \
		>"$log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	why=$(grep -m 1 -E 'runtime error:|ERROR: (libFuzzer|[A-Za-z]+Sanitizer)|^json check:' \
		"$log" | cut -c 1-240 || true)
	if [ "$rc" = 0 ] && [ -z "$why" ]; then
		echo "fuzz $t: ${execs:-?} execs, 0 crashes"
		return 0
	fi
	input=$(sed -n 's/.*Test unit written to //p' "$log" | tail -n 1)
	echo "fuzz $t: FAILED after ${execs:-?} execs: ${why:-exit status $rc};" \
		"input ${input:-none}; log $log"
	return 1
}

case "${1:-}" in
build)
	if ! command -v clang++ >/dev/null; then
		echo "fuzz: clang++ missing (scripts/deps.sh fuzz)" >&2
		exit 2
	fi
	# -O1 and line tables: the sanitizer builds' usual flags (OSS-Fuzz's),
	# enough for symbolized stacks; -O2 -g took 2.5 min of make test
	CC=clang CXX=clang++ cmake -S userspace -B "$out" -DPTWALK_FUZZ=ON \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
		-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" >/dev/null
	nice -n 10 cmake --build "$out" --target fuzzers -j"$(nproc)"
	;;
run)
	n=${2:-}
	case "$n" in
	brief) limit=-max_total_time=10 ;;
	long) limit=-runs=1000000 ;;
	*)
		case "${n%s}" in
		'' | *[!0-9]*) echo "usage: $0 run brief|long|Ns|N [TARGET...]" >&2; exit 2 ;;
		esac
		if [ "$n" = "${n%s}" ]; then limit=-runs=$n; else limit=-max_total_time=${n%s}; fi
		;;
	esac
	shift 2
	make_seeds
	start=$(date +%s)
	rc=0
	# shellcheck disable=SC2086 # the default: every target
	[ $# -gt 0 ] || set -- $all
	printf '%s\n' "$@" |
		xargs -P "${FUZZ_JOBS:-$(nproc)}" -n 1 "$0" _one "$limit" || rc=1
	if [ $rc = 0 ]; then
		echo "fuzz: every target clean in $(($(date +%s) - start)) s"
	else
		echo "fuzz: a target FAILED (see above)"
	fi
	exit $rc
	;;
_one) run_one "$2" "$3" ;;
*)
	echo "usage: $0 build | run brief|long|Ns|N [TARGET...]" >&2
	exit 2
	;;
esac

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make bench: benchmarks, reported as ratios measured in one run, and the
# error rates of ptwalk compare (A/A on this host, power in the VM).
# BENCH_AA_PAIRS: A/A pairs of QUICK=1 qualify (default 10, 0 to skip).
# Last, the parsers' fuzz targets for 10^6 executions each (scripts/fuzz.sh).
set -eu
cd "$(dirname "$0")/.."
out=build/bench
mkdir -p "$out"
build/ptwalk_bench --benchmark_format=json --benchmark_out="$out/core.json" \
	--benchmark_out_format=json --benchmark_repetitions=5 \
	--benchmark_report_aggregates_only=true >/dev/null
/usr/bin/python3 scripts/bench.py "$out"
/usr/bin/python3 scripts/bench_vm.py
/usr/bin/python3 scripts/bench_stall_budget.py
/usr/bin/python3 scripts/bench_monitor.py
/usr/bin/python3 scripts/bench_monitor_http.py
pairs=${BENCH_AA_PAIRS:-10}
if [ "$pairs" -gt 0 ]; then
	/usr/bin/python3 scripts/bench_aa.py --pairs "$pairs"
fi
scripts/fuzz.sh build
scripts/fuzz.sh run long

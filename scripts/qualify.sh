#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make qualify: run the standard scenario matrix (scripts/qualify/matrix.json)
# on this host through pytest, check the budgets (results/budgets/default.json)
# and write everything under results/<host>/<kernel-release>/<timestamp>/:
#   runs/*.json      one ptwalk result per scenario run
#   commands.txt     the exact ptwalk command lines
#   junit.xml        pytest's JUnit XML (one test per run and per budget)
#   summary.json     verdict per budget and scenario, backend in use
#   report/          report.md + PNG plots (scripts/ptwalk-report)
# QUICK=1: under 2 minutes; default: under 10 minutes on 2 CPUs; FULL=1: larger.
# Besides the main size, a sweep (matrix.json "sweep") runs every walk kind
# over >= 2 decades of entries (thp: PMD leaves) on every backing for the
# fit across sizes; budgets apply within their scope (summary.json
# not_applicable lists the rest) and at most 5% of verdicts may SKIP.
# Environment: PYTHON, PTWALK_BIN, PTWALK_BUDGETS, PTWALK_QUALIFY_OUT.
# Exit: 0 every run completed and every budget passed, 1 otherwise,
# 2 when qualify could not run at all.
set -eu

cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-/usr/bin/python3}
PTWALK_BIN=${PTWALK_BIN:-build/ptwalk}
PTWALK_BUDGETS=${PTWALK_BUDGETS:-results/budgets/default.json}

if [ ! -x "$PTWALK_BIN" ]; then
	echo "qualify: $PTWALK_BIN missing: run 'make build' first" >&2
	exit 2
fi
if ! "$PYTHON" -c 'import pytest, matplotlib' 2>/dev/null; then
	# make qualify installs only the build group: add python3-pytest and
	# python3-matplotlib (as root; as non-root deps.sh says what to install)
	scripts/deps.sh python || exit 2
	if ! "$PYTHON" -c 'import pytest, matplotlib' 2>/dev/null; then
		echo "qualify: $PYTHON needs pytest and matplotlib" >&2
		exit 2
	fi
fi

PYTHONPATH=scripts${PYTHONPATH:+:$PYTHONPATH}
export PYTHONPATH
PTWALK_QUALIFY_OUT=${PTWALK_QUALIFY_OUT:-$("$PYTHON" -m ptwalk_report.matrix outdir results)}
export PTWALK_BIN PTWALK_BUDGETS PTWALK_QUALIFY_OUT
OUT=$PTWALK_QUALIFY_OUT
mkdir -p "$OUT"
MODE=default
[ "${QUICK:-0}" != 0 ] && MODE=quick
[ "${FULL:-0}" != 0 ] && MODE=full

T0=$(date +%s)
echo "qualify: results in $OUT"
"$PYTHON" -m ptwalk_report.matrix plan

rc_tests=0
"$PYTHON" -m pytest -q -p no:cacheprovider -o junit_family=xunit1 \
	--junitxml="$OUT/junit.xml" scripts/qualify || rc_tests=$?
# 0 all passed, 1 some failed; anything else: pytest itself could not run
case $rc_tests in
0|1) ;;
*) echo "qualify: pytest exit $rc_tests" >&2; exit 2 ;;
esac

rc_budgets=0
"$PYTHON" -m ptwalk_report.budgets --budgets "$PTWALK_BUDGETS" \
	--summary "$OUT/summary.json" --meta mode="$MODE" \
	--meta pytest_exit="$rc_tests" --meta junit="$OUT/junit.xml" \
	--meta report="$OUT/report/report.md" "$OUT/runs" || rc_budgets=$?
[ "$rc_budgets" -le 1 ] || { echo "qualify: budget check failed to run" >&2; exit 2; }

# production-scale figures (incident-scale runs) next to the budgets
"$PYTHON" -m ptwalk_report.incident "$OUT/runs" --json "$OUT/incident.json"

"$PYTHON" scripts/ptwalk-report "$OUT/runs" --out "$OUT/report"

if [ "$rc_tests" -eq 0 ] && [ "$rc_budgets" -eq 0 ]; then
	echo "qualify: PASS ($OUT) in $(($(date +%s) - T0))s"
	exit 0
fi
echo "qualify: FAIL (scenario runs: pytest exit $rc_tests; budgets exit $rc_budgets; $OUT)" \
	"in $(($(date +%s) - T0))s"
exit 1

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Deliberately-broken check: a tiny budget (PTWALK_BUDGET) must make
# ptwalk_cost FAIL (its kselftest-harness test cost.clear_refs.budget), with
# the measured figure, the budget and the PTE count in the message; the
# same run with the default budget must pass that test, and a malformed
# budget file must fail global.budget_file. Exits 0 when all of that
# is detected correctly, 1 otherwise. Small sizes by default (fast);
# override with PTWALK_MIN_MB.
#
# usage: test-budget-breach.sh [path/to/ptwalk_cost]
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-}
if [ -z "$bin" ]; then
	for b in "$here/ptwalk_cost" "$here/../build/selftests/ptwalk_cost"; do
		[ -x "$b" ] && bin=$b && break
	done
fi
[ -n "$bin" ] && [ -x "$bin" ] || { echo "ptwalk_cost not found (build first)"; exit 1; }
export PTWALK_MIN_MB=${PTWALK_MIN_MB:-8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

cat > "$tmp/tiny.budget" <<EOB
# deliberately impossible: 0.001 ns per PTE
clear_refs_ns_per_pte=0.001
smaps_ns_per_pte=0.001
smaps_rollup_ns_per_pte=0.001
pagemap_ns_per_pte=0.001
pagemap_scan_ns_per_pte=0.001
EOB
printf 'clear_refs_ns_per_pte=fast\n' > "$tmp/bad.budget"

ok=0
check() { # description, command
	if eval "$2"; then echo "ok - $1"; else echo "not ok - $1"; ok=1; fi
}

PTWALK_BUDGET="$tmp/tiny.budget" "$bin" > "$tmp/tiny.out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/tiny.out"
check "tiny budget: exit status 1 (got $rc)" '[ $rc -eq 1 ]'
check "tiny budget: 'not ok N cost.clear_refs.budget'" \
	"grep -Eq '^not ok [0-9]+ cost\.clear_refs\.budget\$' '$tmp/tiny.out'"
check "tiny budget: message has figure, budget and PTE count" \
	"grep -Eq 'clear_refs: [0-9.]+ ns/PTE > budget 0.001 ns/PTE .* at [0-9]+ PTEs' '$tmp/tiny.out'"

"$bin" > "$tmp/default.out" 2>&1
sed 's/^/# /' "$tmp/default.out"
check "default budget: 'ok N cost.clear_refs.budget'" \
	"grep -Eq '^ok [0-9]+ cost\.clear_refs\.budget\$' '$tmp/default.out'"

# the THP ratio: an impossible bound fails every attempt, and says so
thp=$(dirname "$bin")/ptwalk_thp
printf 'thp_min_ratio=1000000\n' > "$tmp/thp.budget"
PTWALK_BUDGET="$tmp/thp.budget" PTWALK_THP_MB=64 "$thp" > "$tmp/thp.out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/thp.out"
if grep -q '^ok [0-9]* thp\.clear_refs\.thp_vs_4k # SKIP' "$tmp/thp.out"; then
	echo "ok - THP ratio breach # SKIP $(grep -m1 -o 'SKIP.*' "$tmp/thp.out")"
else
	check "THP ratio breach: exit 1 (got $rc), all 3 attempts, then 'not ok'" \
		"[ $rc -eq 1 ] && [ \$(grep -c 'attempt [1-3] of 3: clear_refs' '$tmp/thp.out') = 3 ] &&
		 grep -q 'in each of 3 attempts' '$tmp/thp.out' &&
		 grep -Eq '^not ok [0-9]+ thp\.clear_refs\.thp_vs_4k\$' '$tmp/thp.out'"
fi

PTWALK_BUDGET="$tmp/bad.budget" PTWALK_MIN_MB=4 PTWALK_ATTEMPTS=1 "$bin" > "$tmp/bad.out" 2>&1
rc=$?
check "malformed budget: fails (exit $rc) with 'not ok 1 global.budget_file'" \
	"[ $rc -eq 1 ] && grep -Eq '^not ok 1 global\.budget_file\$' '$tmp/bad.out'"
exit $ok

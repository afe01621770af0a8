#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Minimal stand-in for the kernel's tools/testing/selftests/run_kselftest.sh,
# installed by the standalone "make install" of ptwalk. Reads
# kselftest-list.txt ("collection:test" lines) next to this script, runs
# each test from its collection directory under the collection's
# "settings" timeout, and prints KTAP: each test's own output is nested as
# "# " comment lines. Exit status: 1 if any test failed or timed out, else 0.
#
# usage: run_kselftest.sh [-l] [-t collection:test]... [-c collection]...
set -u
BASE_DIR=$(cd "$(dirname "$0")" && pwd)
LIST="$BASE_DIR/kselftest-list.txt"
TESTS=""
COLLECTIONS=""
while [ $# -gt 0 ]; do
	case "$1" in
	-l|--list) cat "$LIST"; exit 0 ;;
	-t|--test) TESTS="$TESTS $2"; shift ;;
	-c|--collection) COLLECTIONS="$COLLECTIONS $2"; shift ;;
	-h|--help) sed -n '3,12p' "$0"; exit 0 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
	shift
done

selected=""
while IFS= read -r line; do
	[ -n "$line" ] || continue
	keep=1
	if [ -n "$TESTS$COLLECTIONS" ]; then
		keep=0
		for t in $TESTS; do [ "$t" = "$line" ] && keep=1; done
		for c in $COLLECTIONS; do [ "${line%%:*}" = "$c" ] && keep=1; done
	fi
	[ $keep = 1 ] && selected="$selected $line"
done < "$LIST"

# coreutils timeout wants --foreground (test keeps the tty); busybox has none
if timeout --foreground 1 true 2>/dev/null; then
	TIMEOUT="timeout --foreground -k 10"
else
	TIMEOUT="timeout -k 10"
fi

n=0
for t in $selected; do n=$((n + 1)); done
echo "TAP version 13"
echo "1..$n"
i=0
failed=0
for entry in $selected; do
	i=$((i + 1))
	coll=${entry%%:*}
	test=${entry#*:}
	dir="$BASE_DIR/$coll"
	timeout=45
	if [ -f "$dir/settings" ]; then
		v=$(sed -n 's/^timeout=\([0-9]*\).*/\1/p' "$dir/settings")
		[ -n "$v" ] && timeout=$v
	fi
	[ -n "${kselftest_override_timeout:-}" ] && timeout=$kselftest_override_timeout
	name="selftests: $coll: $test"
	echo "# timeout set to $timeout"
	echo "# $name"
	if [ ! -x "$dir/$test" ]; then
		echo "not ok $i $name # missing"
		failed=1
		continue
	fi
	tmp=$(mktemp)
	( cd "$dir" && $TIMEOUT "$timeout" "./$test" > "$tmp" 2>&1 )
	rc=$?
	sed 's/^/# /' "$tmp"
	rm -f "$tmp"
	case $rc in
	0) echo "ok $i $name" ;;
	4) echo "ok $i $name # SKIP" ;;
	124|137|143) echo "not ok $i $name # TIMEOUT $timeout seconds (exit=$rc)"; failed=1 ;;
	*) echo "not ok $i $name # exit=$rc"; failed=1 ;;
	esac
done
exit $failed

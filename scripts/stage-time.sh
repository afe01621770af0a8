#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make test's stage clock: runs one stage and appends its name, exit status
# and wall time to FILE; --table FILE prints the stages as a table.
#
# usage: stage-time.sh FILE NAME COMMAND [ARG...]
#        stage-time.sh --table FILE
set -u
if [ "${1:-}" = "--table" ]; then
	f=${2:?file}
	[ -s "$f" ] || { echo "stage-time.sh: no stages recorded in $f" >&2; exit 2; }
	awk '
	BEGIN { printf "\n%-16s %6s %10s\n", "stage", "exit", "time" }
	{ t += $3; printf "%-16s %6s %6d:%02d\n", $1, $2, $3 / 60, $3 % 60 }
	END { printf "%-16s %6s %6d:%02d\n", "total", "", t / 60, t % 60 }' "$f"
	exit 0
fi
f=${1:?file}
name=${2:?name}
shift 2
t0=$(date +%s)
"$@"
rc=$?
echo "$name $rc $(($(date +%s) - t0))" >> "$f"
exit "$rc"

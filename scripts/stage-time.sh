#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make test's stage clock: runs one stage and appends its name, exit status
# and wall time to FILE; --table FILE prints the stages as a table. A stage
# run --beside another (in the background) is listed but not added to the
# total, which stays the wall time of the stages one after another.
#
# usage: stage-time.sh FILE NAME [--beside] COMMAND [ARG...]
#        stage-time.sh --table FILE
set -u
if [ "${1:-}" = "--table" ]; then
	f=${2:?file}
	[ -s "$f" ] || { echo "stage-time.sh: no stages recorded in $f" >&2; exit 2; }
	awk '
	BEGIN { printf "\n%-16s %6s %10s\n", "stage", "exit", "time" }
	$4 == "beside" { printf "%-16s %6s %6d:%02d  (in the background)\n", $1, $2, $3 / 60, $3 % 60; next }
	{ t += $3; printf "%-16s %6s %6d:%02d\n", $1, $2, $3 / 60, $3 % 60 }
	END { printf "%-16s %6s %6d:%02d\n", "total", "", t / 60, t % 60 }' "$f"
	exit 0
fi
f=${1:?file}
name=${2:?name}
shift 2
beside=""
if [ "${1:-}" = "--beside" ]; then
	beside=" beside"
	shift
fi
t0=$(date +%s)
"$@"
rc=$?
echo "$name $rc $(($(date +%s) - t0))$beside" >> "$f"
exit "$rc"

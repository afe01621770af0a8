#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The static checks of `make lint` (also part of `make test`). Every check
# runs even when one before it failed; the exit status is 1 if any failed.
#
#   checkpatch    checkpatch.pl --strict on the C of module/, lib/ and
#                 selftests/ (scripts/lint_checkpatch.py, .checkpatch.conf,
#                 scripts/checkpatch-exceptions)
#   clang-format  userspace/ (C++ and the BPF C) against .clang-format
#   mypy          scripts/: the packages, tools and tests (mypy.ini)
#   flake8        scripts/ (.flake8)
#
# usage: scripts/lint.sh [CHECK...]    the checks named (default: all)
#        scripts/lint.sh --format      reformat userspace/ in place (make format)
set -u
cd "$(dirname "$0")/.." || exit 2
PYTHON=${PYTHON:-/usr/bin/python3}
CLANG_FORMAT=${CLANG_FORMAT:-clang-format-14}

# tracked sources only: nothing generated (build/) or vendored is formatted
cf_files() {
	git ls-files -- 'userspace/*.cpp' 'userspace/*.hpp' 'userspace/*.h' 'userspace/*.c'
}

# scripts/ and its extension-less Python entry points (ptwalk-report, ...)
py_files() {
	echo scripts
	git ls-files scripts | grep -v '\.py$' | while read -r f; do
		head -n 1 "$f" | grep -q '^#!.*python' && echo "$f"
	done
}

if [ "${1:-}" = "--format" ]; then
	# shellcheck disable=SC2046
	exec "$CLANG_FORMAT" -i --style=file $(cf_files)
fi

check_checkpatch() {
	"$PYTHON" scripts/lint_checkpatch.py
}

check_clang_format() {
	out=$(mktemp)
	# shellcheck disable=SC2046
	"$CLANG_FORMAT" --dry-run --Werror --style=file $(cf_files) >"$out" 2>&1
	rc=$?
	if [ $rc != 0 ]; then
		head -n 60 "$out"
		n=$(grep -c 'Wclang-format-violations' "$out")
		files=$(grep 'Wclang-format-violations' "$out" | cut -d: -f1 | sort -u | wc -l)
		echo "clang-format: $n places in $files files differ from .clang-format" \
			"(the first shown above); make format rewrites them"
	else
		echo "clang-format: $(cf_files | wc -l) files as .clang-format has them"
	fi
	rm -f "$out"
	return $rc
}

check_mypy() {
	# shellcheck disable=SC2046
	"$PYTHON" -m mypy $(py_files)
}

check_flake8() {
	# shellcheck disable=SC2046
	"$PYTHON" -m flake8 $(py_files) && echo "flake8: clean"
}

checks="${*:-checkpatch clang-format mypy flake8}"
failed=""
for c in $checks; do
	case "$c" in
	checkpatch | clang-format | mypy | flake8) ;;
	*) echo "lint.sh: unknown check '$c' (checkpatch clang-format mypy flake8)" >&2; exit 2 ;;
	esac
	echo "== lint: $c"
	t0=$(date +%s)
	"check_$(echo "$c" | tr - _)" || failed="$failed $c"
	echo "== lint: $c took $(($(date +%s) - t0)) s"
done
if [ -n "$failed" ]; then
	echo "make lint: FAILED:$failed"
	exit 1
fi
echo "make lint: every check passed"

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make install: the built ptwalk and what it execs, in an installed layout.
#   DESTDIR/PREFIX/bin/ptwalk
#   DESTDIR/PREFIX/libexec/ptwalk/  ptwalk-compare, ptwalk-report,
#       ptwalk_calibrate, ptwalk_report/, libptwalk_fit.so, layout.json
#   DESTDIR/PREFIX/share/ptwalk/budgets/
#   DESTDIR/PREFIX/share/doc/ptwalk/  README.md, SCHEMA.md, ARCHITECTURE.md, docs/
#   DESTDIR/PREFIX/share/man/man{1,4,5,8}/  the man pages (make man)
#   DESTDIR/PREFIX/share/bash-completion/completions/ptwalk
# usage: install.sh DESTDIR PREFIX     (run from the top of the tree)
set -eu
[ $# -eq 2 ] || { echo "usage: $0 DESTDIR PREFIX" >&2; exit 2; }
case "$2" in /*) ;; *) echo "install.sh: PREFIX must be absolute: $2" >&2; exit 2 ;; esac
for f in build/ptwalk build/selftests/ptwalk_calibrate; do
	[ -x "$f" ] || { echo "install.sh: $f missing: run 'make build' first" >&2; exit 1; }
done
root=$1$2
bin=$root/bin
lx=$root/libexec/ptwalk
share=$root/share/ptwalk
doc=$root/share/doc/ptwalk
install -d "$bin" "$lx/ptwalk_report" "$share/budgets" "$doc"
install -m 755 build/ptwalk "$bin/ptwalk"
install -m 755 scripts/ptwalk-compare scripts/ptwalk-report build/selftests/ptwalk_calibrate "$lx/"
install -m 644 scripts/ptwalk_report/*.py "$lx/ptwalk_report/"
# the fit the selftests use (selftests/ptwalk_fit.c), built once here
# libc named though the code calls only libm: a shared library states it
# shellcheck disable=SC2086 # the flags are lists
${CC:-cc} ${CPPFLAGS:-} ${CFLAGS:--O2} ${LDFLAGS:-} -shared -fPIC -o "$lx/libptwalk_fit.so" \
	selftests/ptwalk_fit.c -lm -Wl,--no-as-needed -lc
install -m 644 results/budgets/*.json "$share/budgets/"
install -m 644 README.md results/SCHEMA.md ARCHITECTURE.md "$doc/"
install -d "$doc/docs"
install -m 644 docs/*.md "$doc/docs/"
# the man pages, made by make man (scripts/gen-man.py) in build/man
for page in build/man/*.[1-9]; do
	[ -e "$page" ] || { echo "install.sh: no man pages in build/man (make man)" >&2; exit 1; }
	sec=${page##*.}
	install -d "$root/share/man/man$sec"
	install -m 644 "$page" "$root/share/man/man$sec/"
done
# bash completion, made by the binary from its option tables
install -d "$root/share/bash-completion/completions"
build/ptwalk completion > "$root/share/bash-completion/completions/ptwalk"
# written last: its presence makes the tools use this layout
printf '{"budgets": "../../share/ptwalk/budgets", "fit_library": "libptwalk_fit.so"}\n' \
	> "$lx/layout.json.tmp"
mv "$lx/layout.json.tmp" "$lx/layout.json"
echo "installed ptwalk in $root"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Every function librdmashare exports (its version script) has a section 3
# man page, every page (sections 3, 7 and 8) renders without a warning, and
# dkms.conf's version is the library's.  Without an argument it checks the
# sources (userlib/man, userlib/tools/rdmashare.8); the install stage passes
# the installed man directory (PREFIX/share/man, with man3, man7, man8).
#
# usage: man-check.sh [MANDIR]

set -uo pipefail
. "$(dirname "$0")/lib.sh"

map=$RS_TOP/userlib/librdmashare.map
fail=0

# Pages are rendered from a directory with man3/, man7/, man8/ so that the
# .so links between them resolve.
if [ $# -gt 0 ]; then
	dir=$1
	[ -d "$dir/man3" ] || rs_die "man-check: no $dir/man3"
else
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
	mkdir -p "$dir/man3" "$dir/man7" "$dir/man8"
	cp "$RS_TOP"/userlib/man/*.3 "$dir/man3/"
	cp "$RS_TOP"/userlib/man/*.7 "$dir/man7/"
	cp "$RS_TOP"/userlib/tools/*.8 "$dir/man8/"
fi

syms=$(sed -n 's/^[[:space:]]*\(rdmashare_[a-z0-9_]*\);$/\1/p' "$map")
[ -n "$syms" ] || rs_die "no symbols in $map"
for s in $syms; do
	if [ ! -e "$dir/man3/$s.3" ] && [ ! -e "$dir/man3/$s.3.gz" ]; then
		echo "man-check: $s is exported but has no page $dir/man3/$s.3"
		fail=1
	fi
done
for s in rdmashare.7 rdmashare.8; do
	if [ ! -e "$dir/man${s##*.}/$s" ]; then
		echo "man-check: no page $dir/man${s##*.}/$s"
		fail=1
	fi
done
pages=0
for p in "$dir"/man3/* "$dir"/man7/* "$dir"/man8/*; do
	[ -e "$p" ] || continue
	pages=$((pages + 1))
	out=$(cd "$dir" && MANWIDTH=80 man --warnings -E UTF-8 -l "$p" 2>&1 >/dev/null)
	if [ -n "$out" ]; then
		echo "man-check: ${p##*/}: $out"
		fail=1
	fi
done
echo "man-check: $(echo "$syms" | wc -w) exported functions, $pages pages in $dir"

want=$(sed -n 's/^VERSION := //p' "$RS_TOP/userlib/Makefile")
have=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$RS_TOP/dkms.conf")
if [ "$want" != "$have" ]; then
	echo "man-check: dkms.conf says version '$have', userlib/Makefile '$want'"
	fail=1
fi
[ $fail = 0 ] && echo "man-check: ok"
exit $fail

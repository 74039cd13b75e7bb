#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Every function librdmashare exports (its version script) has a section 3
# man page in MANDIR (default: the sources' userlib/man; the install stage
# passes the installed man3 directory), every page renders without a
# warning, and dkms.conf's version is the library's.
#
# usage: man-check.sh [MAN3DIR]

set -uo pipefail
. "$(dirname "$0")/lib.sh"

dir=${1:-$RS_TOP/userlib/man}
map=$RS_TOP/userlib/librdmashare.map
fail=0

syms=$(sed -n 's/^[[:space:]]*\(rdmashare_[a-z0-9_]*\);$/\1/p' "$map")
[ -n "$syms" ] || rs_die "no symbols in $map"
for s in $syms; do
	if [ ! -e "$dir/$s.3" ] && [ ! -e "$dir/$s.3.gz" ]; then
		echo "man-check: $s is exported but has no page $dir/$s.3"
		fail=1
	fi
done
echo "man-check: $(echo "$syms" | wc -w) exported functions"

# Render each page from a directory where .so links resolve (man3/).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/man3" "$work/man7"
cp "$dir"/*.3* "$work/man3/" 2>/dev/null
[ "$dir" = "$RS_TOP/userlib/man" ] && cp "$dir"/*.7 "$work/man7/" 2>/dev/null
for p in "$work"/man3/* "$work"/man7/*; do
	[ -e "$p" ] || continue
	out=$(cd "$work" && MANWIDTH=80 man --warnings -E UTF-8 -l "$p" 2>&1 >/dev/null)
	if [ -n "$out" ]; then
		echo "man-check: ${p##*/}: $out"
		fail=1
	fi
done

want=$(sed -n 's/^VERSION := //p' "$RS_TOP/userlib/Makefile")
have=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$RS_TOP/dkms.conf")
if [ "$want" != "$have" ]; then
	echo "man-check: dkms.conf says version '$have', userlib/Makefile '$want'"
	fail=1
fi
[ $fail = 0 ] && echo "man-check: ok"
exit $fail

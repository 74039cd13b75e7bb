#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build rdmashare.ko (and, when the kernel has KUnit, rdmashare_kunit.ko) for
# one kernel in a private copy of the sources, with W=1 and sparse (C=2).
# Fails when the build prints any warning.
#
# usage: build-module.sh KDIR OUTDIR [extra make args]
# Results: OUTDIR/kmod/rdmashare.ko, OUTDIR/kmod/tests/rdmashare_kunit.ko,
# OUTDIR/build.log.

set -euo pipefail
. "$(dirname "$0")/lib.sh"

kdir=$1
out=$2
shift 2
[ -e "$kdir/Makefile" ] || rs_die "no kernel build tree at $kdir"

mkdir -p "$out"
out=$(realpath "$out")
# Fresh copy of the module sources only.
rm -rf "$out/kmod" "$out/uapi" "$out/Kbuild"
(cd "$RS_TOP" && find Kbuild kmod uapi \( -name '*.[ch]' -o -name Kbuild \) -print0 |
	cpio -0 -pdmu --quiet "$out")

status=0
make -C "$kdir" M="$out" W=1 C=2 "$@" modules >"$out/build.log" 2>&1 || status=$?
if [ $status -ne 0 ]; then
	cat "$out/build.log"
	rs_die "module build failed against $kdir"
fi
# Any compiler or sparse diagnostic counts.  The headers' own notes about
# BTF or signing are not ours.
if grep -E 'warning:|error:|: note:' "$out/build.log" | grep -vE '^Skipping BTF' >"$out/warnings.log"; then
	cat "$out/warnings.log"
	rs_die "module build against $kdir printed warnings"
fi
[ -e "$out/kmod/rdmashare.ko" ] || rs_die "no rdmashare.ko after the build"

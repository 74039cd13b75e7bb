#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build rdmashare.ko (and, when the kernel has KUnit, rdmashare_kunit.ko) for
# one kernel in a private copy of the sources, with W=1 and sparse (C=2),
# then the transport benchmark's kernel-QP floor (selftests/bench/kqp) the
# same way.  Fails when a build prints any warning.
#
# usage: build-module.sh KDIR OUTDIR [extra make args]
# Results: OUTDIR/kmod/rdmashare.ko, OUTDIR/kmod/tests/rdmashare_kunit.ko,
# OUTDIR/build.log; OUTDIR/kqp/rs_kqp_floor.ko, OUTDIR/kqp/build.log.

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

rs_kbuild "$kdir" "$out" "$@"
[ -e "$out/kmod/rdmashare.ko" ] || rs_die "no rdmashare.ko after the build"
# The transport benchmark's kernel-QP floor, a test module like the KUnit one.
bash "$RS_TOP/selftests/bench/kqp/build.sh" "$kdir" "$out/kqp"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build rs_kqp_floor.ko, the transport benchmark's kernel-QP floor, for one
# kernel in a private copy of its sources, with W=1 and sparse (C=2).
# Fails when the build prints any warning.  build-module.sh runs it for
# make check's kernels, transport.sh for the benchmark guest's.
#
# usage: build.sh KDIR OUTDIR
# Results: OUTDIR/rs_kqp_floor.ko, OUTDIR/build.log.

set -euo pipefail
. "$(dirname "$0")/../../vm/lib.sh"

[ $# = 2 ] || rs_die "usage: build.sh KDIR OUTDIR"
kdir=$1
out=$2
[ -e "$kdir/Makefile" ] || rs_die "no kernel build tree at $kdir"

mkdir -p "$out"
out=$(realpath "$out")
src=$RS_TOP/selftests/bench/kqp
rm -f "$out"/*.[ch] "$out/Kbuild"
cp "$src/Kbuild" "$src"/*.[ch] "$out/"
rs_kbuild "$kdir" "$out"
[ -e "$out/rs_kqp_floor.ko" ] || rs_die "no rs_kqp_floor.ko after the build"

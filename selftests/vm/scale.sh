#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make scale: 16,384 ACs on one QP.  rdmashare_scale_test's procs_x_acs with
# RS_SCALE_PROCS (16) client processes of RS_SCALE_ACS (1024) ACs each, to
# as many servers on the same host, all over the one QP pair to it
# (qps_per_peer 1), every message checked, in a debug-kernel guest (KASAN,
# lockdep, kmemleak: the guest's verdict fails the run on any report).  It
# prints the slab memory per AC end.  Builds what it needs, as make check
# does.  Not part of make check, which runs 4 x 512.

set -uo pipefail
. "$(dirname "$0")/lib.sh"

B=${RS_BUILD:-$RS_TOP/build}
procs=${RS_SCALE_PROCS:-16}
acs=${RS_SCALE_ACS:-1024}
log=$B/scale.log

bash "$RS_VM_DIR/deps.sh" >/dev/null || rs_die "make deps failed"
dk=$(bash "$RS_VM_DIR/debug-kernel.sh" | tail -n1) || rs_die "no debug kernel"
make -s -C "$RS_TOP" userlib selftests >/dev/null || rs_die "user build failed"
bash "$RS_VM_DIR/build-module.sh" "$dk/build" "$B/debug" || rs_die "module build (debug) failed"

rs_log "scale: $procs processes x $acs ACs on one QP, debug kernel"
bash "$RS_VM_DIR/run-vm.sh" --kernel debug --module "$B/debug/kmod/rdmashare.ko" --timeout 5400 \
	-- "RS_SCALE_PROCS=$procs RS_SCALE_ACS=$acs $RS_TOP/selftests/build/rdmashare_scale_test -t procs_x_acs" \
	>"$log" 2>&1
rc=$?
grep -E 'procs_x_acs|ACs \(x2|messages echoed|exited' "$log" | sed 's/^/[scale] /'
[ "$rc" = 0 ] || rs_log "scale: failed (log: $log)"
exit "$rc"

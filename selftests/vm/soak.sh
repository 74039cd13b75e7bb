#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make soak: the two-guest soak (selftests/pair_soak.sh, rssoak.c) for
# RS_SOAK_SECS (default 1800) on the debug kernel: ACs opened and closed
# with every message checked, workers killed, the client's rxe0 removed and
# added back, the peer's power cut and the peer booting again.  Fails on a
# message lost, duplicated, reordered or corrupted, on ACs left after the
# workers ended, or on a guest's verdict (splat, KASAN, lockdep, kmemleak,
# unload).  make check runs the same for 2 minutes (stage vm-soak-debug).

set -uo pipefail
. "$(dirname "$0")/lib.sh"

B=${RS_BUILD:-$RS_TOP/build}
secs=${RS_SOAK_SECS:-1800}
st=$RS_TOP/selftests
log=$B/soak.log

bash "$RS_VM_DIR/deps.sh" >/dev/null || rs_die "make deps failed"
dk=$(bash "$RS_VM_DIR/debug-kernel.sh" | tail -n1) || rs_die "no debug kernel"
make -s -C "$RS_TOP" userlib selftests >/dev/null || rs_die "user build failed"
bash "$RS_VM_DIR/build-module.sh" "$dk/build" "$B/debug" || rs_die "module build (debug) failed"

echo "[soak] $secs s on two debug guests, log: $log"
rm -rf "$B/soak.vm"
RS_SOAK_SECS=$secs bash "$RS_VM_DIR/run-vm.sh" --kernel debug \
	--module "$B/debug/kmod/rdmashare.ko" --out "$B/soak.vm" --timeout $((secs * 3 + 300)) \
	--peer "RS_SOAK_SECS=$secs $st/pair_soak.sh peer" \
	--peer-reboot "RS_SOAK_SECS=$secs $st/pair_soak.sh peer-again" \
	-- "RS_SOAK_SECS=$secs $st/pair_soak.sh client" >"$log" 2>&1
rc=$?
grep -E '^# rssoak|^\[rdmashare\] vm|^  \| ' "$log" | sed 's/^/[soak] /'
[ $rc = 0 ] && echo "[soak] passed" || echo "[soak] FAILED"
exit $rc

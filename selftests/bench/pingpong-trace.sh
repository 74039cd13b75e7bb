#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make pingpong-trace: a 64 B ping-pong's time by stage, rdmashare (sleeping
# and busy polling) against ib_send_lat, from the function tracer in one
# guest (pingpong-trace-guest.sh).  Builds nothing: run make first.
# RS_BENCH_KERNEL picks the guest's stock kernel (6.12, the default, or
# 6.1), RS_BENCH_MODULE the module (default kmod/rdmashare.ko).  The
# traces stay in $RS_BUILD/bench/trace (default build/bench/trace).

set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"

B=${RS_BUILD:-$RS_TOP/build}
module=${RS_BENCH_MODULE:-$RS_TOP/kmod/rdmashare.ko}
kernel=${RS_BENCH_KERNEL:-6.12}
out=$B/bench/trace

kver=$(rs_stock_kver "$kernel") || rs_die "Debian's $kernel kernel is not installed (run: make deps)"
[ -e "$module" ] || rs_die "no module at $module (run: make)"
vermagic=$(modinfo -F vermagic "$module" | cut -d' ' -f1)
[ "$vermagic" = "$kver" ] ||
	rs_die "$module is built for $vermagic, the guest runs $kver (RS_BENCH_MODULE=...)"
[ -x "$RS_TOP/userlib/build/rs-pingpong" ] || rs_die "no userlib/build/rs-pingpong (run: make)"
rm -rf "$out"
mkdir -p "$out"
rc=0
bash "$RS_VM_DIR/run-vm.sh" --kernel "$kernel" --module "$module" --timeout 600 --out "$out" \
	-- "${RS_TRACE_MS:+RS_TRACE_MS=$RS_TRACE_MS }bash $RS_TOP/selftests/bench/pingpong-trace-guest.sh" \
	>"$out/run-vm.log" 2>&1 || rc=$?
grep -E '^\[trace\]|trips:|^\[rdmashare\]' "$out/run-vm.log" || true
[ "$rc" = 0 ] || rs_die "pingpong-trace: the guest run failed (exit $rc): $out/run-vm.log"
rs_log "pingpong-trace: traces in $out/a"

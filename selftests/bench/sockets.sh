#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench-sockets (part of make bench): unmodified TCP programs (iperf3,
# sockperf, redis-benchmark) under rdmashare-run and under rsocket's
# librspreload.so against the same programs over plain TCP, with rsocket's
# rstream and rdmashare's rs-stream on AC files beside them, all measured
# in one boot of one guest (Debian's 6.12 under QEMU, Soft-RoCE loopback),
# then reported as ratios to TCP; and SMC-R tried once.  See
# Documentation/benchmarks.rst.
#
# Builds nothing: run make first.  Results: $RS_BUILD/bench/sockets
# (default build/bench/sockets): the guest's sockets.tsv and raw logs
# under a/, sockets-table.rst, the tables printed at the end, and
# sockets-bench.svg, their plot (RS_BENCH_PLOT=PATH copies it there).
#
# Environment: RS_BENCH_MODULE (default kmod/rdmashare.ko, built for
# Debian's 6.12), and, passed to the guest with every other RS_BENCH_
# variable, RS_BENCH_REPEAT, RS_BENCH_TIME, RS_BENCH_SCALE, RS_BENCH_SIZES,
# RS_BENCH_PARTS, RS_BENCH_TRANSPORTS and RS_BENCH_SMC (see
# sockets-guest.sh).

set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"

B=${RS_BUILD:-$RS_TOP/build}
module=${RS_BENCH_MODULE:-$RS_TOP/kmod/rdmashare.ko}
here=$RS_TOP/selftests/bench
out=$B/bench/sockets

kver=$(rs_stock_kver 6.12) || rs_die "Debian's 6.12 kernel is not installed (run: make deps)"
[ -e "$module" ] || rs_die "no module at $module (run: make)"
vermagic=$(modinfo -F vermagic "$module" | cut -d' ' -f1)
[ "$vermagic" = "$kver" ] ||
	rs_die "$module is built for $vermagic, the guest runs $kver (RS_BENCH_MODULE=...)"
for f in rs-stream rdmashare-run librdmashare-preload.so; do
	[ -e "$RS_TOP/userlib/build/$f" ] || rs_die "no userlib/build/$f (run: make)"
done
for f in iperf3 sockperf redis-server redis-benchmark rstream; do
	command -v "$f" >/dev/null || rs_die "$f is missing (run: make deps)"
done
# Debian's python3, where python3-matplotlib is (not one earlier in PATH).
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3) || rs_die "python3 is missing (run: make deps)"
"$py" -c 'import matplotlib' 2>/dev/null ||
	rs_die "python3-matplotlib is missing for $py (run: make deps)"

# Every RS_BENCH_ variable set goes to the guest.
env=
for v in "${!RS_BENCH_@}"; do
	env+="$v='${!v}' "
done

rm -rf "$out"
mkdir -p "$out"
rs_log "bench: sockets benchmark in one $kver guest (about 15 minutes)"
{
	echo "host $(uname -r), $(nproc) CPUs, $(date -u +%FT%TZ)"
	echo "rdmashare $(git -C "$RS_TOP" describe --always --dirty 2>/dev/null || echo unknown)"
	echo "module $module srcversion $(modinfo -F srcversion "$module")"
	dpkg-query -W -f='${Package} ${Version}\n' iperf3 sockperf redis-server librdmacm1 \
		rdmacm-utils rdma-core qemu-system-x86 2>/dev/null || true
} >"$out/host-env.txt"
rc=0
bash "$RS_VM_DIR/run-vm.sh" --kernel 6.12 --module "$module" --timeout 3000 --out "$out" \
	-- "${env}bash $here/sockets-guest.sh" >"$out/run-vm.log" 2>&1 || rc=$?
grep -E '^\[bench\]|^\[rdmashare\]' "$out/run-vm.log" || true
if [ ! -s "$out/a/sockets.tsv" ]; then
	tail -n 40 "$out/run-vm.log" >&2
	rs_die "bench: no results (log: $out/run-vm.log)"
fi
echo
"$py" "$here/sockets-table.py" --plot "$out/sockets-bench.svg" "$out/a/sockets.tsv" \
	"$out/a/sockets-env.txt" "$out/host-env.txt" | tee "$out/sockets-table.rst"
echo
if [ -n "${RS_BENCH_PLOT:-}" ] && [ -e "$out/sockets-bench.svg" ]; then
	mkdir -p "$(dirname "$RS_BENCH_PLOT")"
	cp "$out/sockets-bench.svg" "$RS_BENCH_PLOT"
fi
rs_log "bench: results in $out"
[ "$rc" = 0 ] || rs_log "bench: the guest run failed (exit $rc): see the FAILED lines above and $out/run-vm.log"
exit "$rc"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench-sched (part of make bench): the same workload over the
# mutex-shared verbs QP, one verbs QP per sender, and rdmashare, all
# measured in one boot of one guest (Debian's 6.12 under QEMU, Soft-RoCE
# loopback): aggregate throughput, per-sender shares, Jain's index, and a
# 64-byte ping-pong's p50/p99 alone and behind 4 MiB transfers.  See
# Documentation/benchmarks.rst.
#
# Builds nothing: run make and make -C selftests bench first.  Results:
# $RS_BUILD/bench/sched (default build/bench/sched): the guest's sched.tsv
# and raw logs under a/, sched-table.rst (printed at the end) and the plot,
# sched-bench.svg.  RS_BENCH_PLOT=PATH writes the plot there as well (the
# documentation's copy is Documentation/images/sched-bench.svg).
#
# Environment: RS_BENCH_MODULE (default build/6.12/kmod/rdmashare.ko, else
# kmod/rdmashare.ko; built for the 6.12 kernel), and, passed to the guest,
# RS_BENCH_REPEAT, RS_BENCH_SCALE, RS_BENCH_PARTS, RS_BENCH_MODES,
# RS_BENCH_THREADS, RS_BENCH_SIZES, RS_BENCH_CREDITS, RS_BENCH_LAT_BULK,
# RS_BENCH_QPS and RS_BENCH_SYSFS (see sched-guest.sh).

set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"

B=${RS_BUILD:-$RS_TOP/build}
out=$B/bench/sched
here=$RS_TOP/selftests/bench
module=${RS_BENCH_MODULE:-}
if [ -z "$module" ]; then
	module=$RS_TOP/build/6.12/kmod/rdmashare.ko
	[ -e "$module" ] || module=$RS_TOP/kmod/rdmashare.ko
fi

kver=$(rs_stock_kver 6.12) || rs_die "Debian's 6.12 kernel is not installed (run: make deps)"
[ -e "$module" ] || rs_die "no module at $module (run: make)"
vermagic=$(modinfo -F vermagic "$module" | cut -d' ' -f1)
[ "$vermagic" = "$kver" ] ||
	rs_die "$module is built for $vermagic, the guest runs $kver (RS_BENCH_MODULE=...)"
for f in mutexqp rsbench; do
	[ -x "$RS_TOP/selftests/build/bench/$f" ] ||
		rs_die "no selftests/build/bench/$f (run: make && make -C selftests bench)"
done
# Debian's python3, where python3-matplotlib is (not one earlier in PATH).
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3) || rs_die "python3 is missing (run: make deps)"
"$py" -c 'import matplotlib' 2>/dev/null ||
	rs_die "python3-matplotlib is missing for $py (run: make deps)"

env=
for v in RS_BENCH_REPEAT RS_BENCH_SCALE RS_BENCH_PARTS RS_BENCH_MODES \
	RS_BENCH_THREADS RS_BENCH_SIZES RS_BENCH_CREDITS RS_BENCH_LAT_BULK RS_BENCH_QPS \
	RS_BENCH_SYSFS; do
	[ -z "${!v:-}" ] || env+="$v='${!v}' "
done

rm -rf "$out"
mkdir -p "$out"
rs_log "bench: scheduler benchmark in one $kver guest (15 to 30 minutes)"
{
	echo "host $(uname -r), $(nproc) CPUs, $(date -u +%FT%TZ)"
	echo "rdmashare $(git -C "$RS_TOP" describe --always --dirty 2>/dev/null || echo unknown)"
	echo "module $module srcversion $(modinfo -F srcversion "$module")"
	dpkg-query -W -f='${Package} ${Version}\n' rdma-core qemu-system-x86 2>/dev/null || true
} >"$out/host-env.txt"
rc=0
bash "$RS_VM_DIR/run-vm.sh" --kernel 6.12 --module "$module" --timeout 2400 --out "$out" \
	-- "${env}bash $here/sched-guest.sh" >"$out/run-vm.log" 2>&1 || rc=$?
grep -E '^\[bench\]|^\[rdmashare\]' "$out/run-vm.log" || true
if [ ! -s "$out/a/sched.tsv" ] || [ "$(wc -l <"$out/a/sched.tsv")" -le 1 ]; then
	tail -n 40 "$out/run-vm.log" >&2
	rs_die "bench: no results (log: $out/run-vm.log)"
fi
echo
"$py" "$here/sched-table.py" --plot "$out/sched-bench.svg" "$out/a/sched.tsv" \
	"$out/a/sched-env.txt" "$out/host-env.txt" | tee "$out/sched-table.rst"
if [ -n "${RS_BENCH_PLOT:-}" ]; then
	mkdir -p "$(dirname "$RS_BENCH_PLOT")"
	cp "$out/sched-bench.svg" "$RS_BENCH_PLOT"
fi
echo
rs_log "bench: results in $out"
[ "$rc" = 0 ] || rs_log "bench: the guest run failed (exit $rc): see the FAILED lines above and $out/run-vm.log"
exit "$rc"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench-transport (part of make bench): rdmashare's transport against
# raw verbs (perftest), RDS over rxe, rsocket and TCP, all measured in one
# boot of one guest (Debian's 6.12, or 6.1, under QEMU, Soft-RoCE
# loopback), then reported as ratios to perftest.  See
# Documentation/benchmarks.rst.
#
# Builds the kernel-QP floor (selftests/bench/kqp, rs_kqp_floor.ko) for
# the guest's kernel into the results directory, nothing else: run make
# first.  Results: $RS_BUILD/bench/transport (default
# build/bench/transport; transport-6.1 for 6.1): the guest's transport.tsv
# and raw logs under a/, and transport-table.rst, the table printed at the
# end.
#
# Environment: RS_BENCH_KERNEL (6.12, the default, or 6.1: the guest's
# stock kernel), RS_BENCH_MODULE (default kmod/rdmashare.ko, built for
# that kernel), RS_BENCH_FLOOR (an rs_kqp_floor.ko built for that kernel
# instead of building one), and, passed to the guest, RS_BENCH_REPEAT,
# RS_BENCH_SCALE, RS_BENCH_TIME, RS_BENCH_PARTS, RS_BENCH_SIZES,
# RS_BENCH_SLOTS, RS_BENCH_SMALL_SLOTS and RS_BENCH_SMALL_SLOT_SIZE (see
# transport-guest.sh).

set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"

B=${RS_BUILD:-$RS_TOP/build}
module=${RS_BENCH_MODULE:-$RS_TOP/kmod/rdmashare.ko}
here=$RS_TOP/selftests/bench

kernel=${RS_BENCH_KERNEL:-6.12}
case $kernel in
6.12 | 6.1) ;;
*) rs_die "RS_BENCH_KERNEL=$kernel: 6.12 or 6.1" ;;
esac
out=$B/bench/transport
[ "$kernel" = 6.12 ] || out+=-$kernel
kver=$(rs_stock_kver "$kernel") || rs_die "Debian's $kernel kernel is not installed (run: make deps)"
[ -e "$module" ] || rs_die "no module at $module (run: make)"
# check_vermagic KO VARIABLE: KO is built for the guest's kernel.
check_vermagic() {
	local vermagic
	vermagic=$(modinfo -F vermagic "$1" | cut -d' ' -f1)
	[ "$vermagic" = "$kver" ] ||
		rs_die "$1 is built for $vermagic, the guest runs $kver ($2=...)"
}
check_vermagic "$module" RS_BENCH_MODULE
for f in rs-stream rs-pingpong; do
	[ -x "$RS_TOP/userlib/build/$f" ] || rs_die "no userlib/build/$f (run: make)"
done
for f in ib_send_bw ib_send_lat qperf rstream python3; do
	command -v "$f" >/dev/null || rs_die "$f is missing (run: make deps)"
done

env=
for v in RS_BENCH_REPEAT RS_BENCH_SCALE RS_BENCH_TIME RS_BENCH_PARTS RS_BENCH_SIZES \
	RS_BENCH_SLOTS RS_BENCH_SMALL_SLOTS RS_BENCH_SMALL_SLOT_SIZE; do
	[ -z "${!v:-}" ] || env+="$v='${!v}' "
done

rm -rf "$out"
mkdir -p "$out"
floor=${RS_BENCH_FLOOR:-}
if [[ " ${RS_BENCH_PARTS:-kqp} " == *" kqp "* ]]; then
	if [ -z "$floor" ]; then
		rs_log "bench: building the kernel-QP floor for $kver"
		bash "$here/kqp/build.sh" "/usr/src/linux-headers-$kver" "$out/kqp" >&2
		floor=$out/kqp/rs_kqp_floor.ko
	fi
	floor=$(realpath "$floor")
	check_vermagic "$floor" RS_BENCH_FLOOR
	env+="RS_BENCH_FLOOR='$floor' "
fi
rs_log "bench: transport benchmark in one $kver guest (about 10 minutes)"
{
	echo "host $(uname -r), $(nproc) CPUs, $(date -u +%FT%TZ)"
	echo "rdmashare $(git -C "$RS_TOP" describe --always --dirty 2>/dev/null || echo unknown)"
	echo "module $module srcversion $(modinfo -F srcversion "$module")"
	[ -z "$floor" ] || echo "floor $floor srcversion $(modinfo -F srcversion "$floor")"
	dpkg-query -W -f='${Package} ${Version}\n' perftest qperf rdmacm-utils \
		rdma-core qemu-system-x86 2>/dev/null || true
} >"$out/host-env.txt"
rc=0
bash "$RS_VM_DIR/run-vm.sh" --kernel "$kernel" --module "$module" --timeout 3000 --out "$out" \
	-- "${env}bash $here/transport-guest.sh" >"$out/run-vm.log" 2>&1 || rc=$?
grep -E '^\[bench\]|^\[rdmashare\]' "$out/run-vm.log" || true
if [ ! -s "$out/a/transport.tsv" ]; then
	tail -n 40 "$out/run-vm.log" >&2
	rs_die "bench: no results (log: $out/run-vm.log)"
fi
echo
python3 "$here/transport-table.py" "$out/a/transport.tsv" "$out/a/transport-env.txt" \
	"$out/host-env.txt" | tee "$out/transport-table.rst"
echo
rs_log "bench: results in $out"
[ "$rc" = 0 ] || rs_log "bench: the guest run failed (exit $rc): see the FAILED lines above and $out/run-vm.log"
exit "$rc"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench-ps: libps's ps-bench (ps-lite's benchmark) over TCP, raw
# verbs (an RC QP per connection), rsocket's preload, rdmashare's own
# transport and rdmashare-run, every transport in the same run
# (ps-guest.sh): in one guest (Debian's 6.12 under QEMU, Soft-RoCE
# loopback; every node on the guest's rxe address), then in two guests
# (Debian's 6.1, one vCPU each, Soft-RoCE on one emulated link: the
# servers on one, the workers on the other), and reported as goodput,
# ratios of rdmashare to each in the same run, latency and the RC QPs in
# use.  See Documentation/benchmarks.rst.
#
# Builds nothing: run make first.  Results: $RS_BUILD/bench/ps (default
# build/bench/ps): one/ and pair/ (run-vm.sh's directories: the guests'
# ps.tsv, ps-env.txt and raw logs under a/, the servers' under pair/b/),
# ps-table.rst (printed at the end) and the plot, ps-bench.svg
# (RS_BENCH_PLOT=PATH copies it there).
#
# Environment: RS_BENCH_PARTS ("one pair"; unset and with no module for
# the pair's kernel, "one"); RS_BENCH_MODULE (the 6.12 module; default
# build/6.12/kmod/rdmashare.ko, else kmod/rdmashare.ko),
# RS_BENCH_PAIR_KERNEL (6.1: two stock 6.12 guests fault now and then
# under the emulator, Documentation/testing.rst) and RS_BENCH_PAIR_MODULE
# (default build/KERNEL/kmod/rdmashare.ko); every other RS_BENCH_ variable
# goes to the guests (RS_BENCH_REPEAT, RS_BENCH_SCALE, RS_BENCH_SERVERS,
# RS_BENCH_WORKERS, RS_BENCH_SIZES, RS_BENCH_MODES, RS_BENCH_TRANSPORTS:
# see ps-guest.sh), and in the two-guest part RS_BENCH_PAIR_X, if set,
# stands for RS_BENCH_X (RS_BENCH_PAIR_WORKERS="2 8", ...).

set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"

B=${RS_BUILD:-$RS_TOP/build}
here=$RS_TOP/selftests/bench
out=$B/bench/ps
parts=${RS_BENCH_PARTS:-one pair}
pair_kernel=${RS_BENCH_PAIR_KERNEL:-6.1}
module=${RS_BENCH_MODULE:-}
if [ -z "$module" ]; then
	module=$RS_TOP/build/6.12/kmod/rdmashare.ko
	[ -e "$module" ] || module=$RS_TOP/kmod/rdmashare.ko
fi
pair_module=${RS_BENCH_PAIR_MODULE:-$B/$pair_kernel/kmod/rdmashare.ko}
if [ -z "${RS_BENCH_PARTS:-}" ] && [ ! -e "$pair_module" ]; then
	rs_log "bench: no $pair_kernel module at $pair_module: the two-guest part is skipped" \
		"(selftests/vm/build-module.sh /usr/src/linux-headers-KVER $B/$pair_kernel builds it)"
	parts=one
fi

# check_module KERNEL MODULE: the module exists and is built for KERNEL.
check_module() {
	local kver vermagic
	kver=$(rs_stock_kver "$1") || rs_die "Debian's $1 kernel is not installed (run: make deps)"
	[ -e "$2" ] || rs_die "no module at $2 (run: make, or selftests/vm/build-module.sh)"
	vermagic=$(modinfo -F vermagic "$2" | cut -d' ' -f1)
	[ "$vermagic" = "$kver" ] ||
		rs_die "$2 is built for $vermagic, the guest runs $kver"
}
for p in $parts; do
	case $p in
	one) check_module 6.12 "$module" ;;
	pair) check_module "$pair_kernel" "$pair_module" ;;
	*) rs_die "unknown part '$p' (one, pair)" ;;
	esac
done
for f in ps-bench rdmashare-run librdmashare-preload.so; do
	[ -e "$RS_TOP/userlib/build/$f" ] || rs_die "no userlib/build/$f (run: make)"
done
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3) || rs_die "python3 is missing (run: make deps)"
plot=(--plot "$out/ps-bench.svg")
"$py" -c 'import matplotlib' 2>/dev/null || { rs_log "no python3-matplotlib: no plot"; plot=(); }

# guest_env PREFIX: the RS_BENCH_ variables for the guests, RS_BENCH_PAIR_X
# as RS_BENCH_X when PREFIX is PAIR_.
guest_env() {
	local v n env=
	for v in "${!RS_BENCH_@}"; do
		case $v in
		RS_BENCH_MODULE | RS_BENCH_PAIR_* | RS_BENCH_PARTS | RS_BENCH_PLOT) continue ;;
		esac
		n=RS_BENCH_$1${v#RS_BENCH_}
		[ -n "$1" ] && [ -n "${!n:-}" ] && continue
		env+="$v='${!v}' "
	done
	if [ -n "$1" ]; then
		for v in "${!RS_BENCH_PAIR_@}"; do
			case $v in
			RS_BENCH_PAIR_KERNEL | RS_BENCH_PAIR_MODULE) ;;
			*) env+="RS_BENCH_${v#RS_BENCH_PAIR_}='${!v}' " ;;
			esac
		done
	fi
	printf '%s' "$env"
}

rm -rf "$out"
mkdir -p "$out"
{
	echo "host $(uname -r), $(nproc) CPUs, $(date -u +%FT%TZ)"
	echo "rdmashare $(git -C "$RS_TOP" describe --always --dirty 2>/dev/null || echo unknown)"
	for p in $parts; do
		m=$module
		[ "$p" = one ] || m=$pair_module
		echo "$p: module $m srcversion $(modinfo -F srcversion "$m")"
	done
	dpkg-query -W -f='${Package} ${Version}\n' librdmacm1 rdma-core qemu-system-x86 2>/dev/null || true
} >"$out/host-env.txt"

rc=0
tables=()
for p in $parts; do
	d=$out/$p
	mkdir -p "$d"
	if [ "$p" = one ]; then
		rs_log "bench: ps-bench in one 6.12 guest"
		bash "$RS_VM_DIR/run-vm.sh" --kernel 6.12 --module "$module" --timeout 5400 --out "$d" \
			-- "$(guest_env '')bash $here/ps-guest.sh one" >"$d/run-vm.log" 2>&1 || rc=$?
	else
		rs_log "bench: ps-bench in two $pair_kernel guests, servers on one, workers on the other"
		bash "$RS_VM_DIR/run-vm.sh" --kernel "$pair_kernel" --module "$pair_module" --timeout 5400 \
			--out "$d" --peer "$(guest_env PAIR_)bash $here/ps-guest.sh peer" \
			-- "$(guest_env PAIR_)bash $here/ps-guest.sh client" >"$d/run-vm.log" 2>&1 || rc=$?
	fi
	grep -E '^\[bench\].*(FAILED|round|done)|^\[rdmashare\]' "$d/run-vm.log" || true
	if [ -s "$d/a/ps.tsv" ] && [ "$(wc -l <"$d/a/ps.tsv")" -gt 1 ]; then
		tables+=("$p=$d/a/ps.tsv")
	else
		tail -n 40 "$d/run-vm.log" >&2
		rs_log "bench: no results from the $p part (log: $d/run-vm.log)"
		rc=1
	fi
done
[ "${#tables[@]}" -gt 0 ] || rs_die "bench: no results"
echo
"$py" "$here/ps-table.py" "${plot[@]}" --env "$out/host-env.txt" "${tables[@]}" |
	tee "$out/ps-table.rst"
if [ -n "${RS_BENCH_PLOT:-}" ] && [ -e "$out/ps-bench.svg" ]; then
	mkdir -p "$(dirname "$RS_BENCH_PLOT")"
	cp "$out/ps-bench.svg" "$RS_BENCH_PLOT"
fi
echo
rs_log "bench: results in $out"
[ "$rc" = 0 ] || rs_log "bench: a guest run failed: see the FAILED lines above and $out/*/run-vm.log"
exit "$rc"

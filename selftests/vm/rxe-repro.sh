#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The smallest reproducer of the stock 6.12 two-guest fault under TCG
# (Documentation/testing.rst, "Stock 6.12 in two guests"): two Debian 6.12
# guests on one emulated link, Soft-RoCE on each, bidirectional perftest
# between them (rxe-repro-guest.sh), no rdmashare.  Runs ROUNDS rounds and
# counts those in which a guest's kernel log shows a fault (a kernel report,
# or a process's general protection fault); prints its first lines.
#
#   rxe-repro.sh [ROUNDS] [SECONDS]        (default 10 rounds of 30 s)
#
# The QEMU and kernel settings under test come from run-vm.sh's knobs:
# RS_VM_CPU, RS_VM_TCG_THREAD, RS_VM_APPEND, RS_VM_SMP; RS_REPRO_KERNEL
# picks the kernel (default 6.12).  Results: RS_REPRO_OUT (default
# build/rxe-repro/<settings>).

set -uo pipefail
. "$(dirname "$0")/lib.sh"

rounds=${1:-10}
secs=${2:-30}
kernel=${RS_REPRO_KERNEL:-6.12}
tag="kernel=$kernel,cpu=${RS_VM_CPU:-default},tcg=${RS_VM_TCG_THREAD:-multi},smp=${RS_VM_SMP:-1},append=${RS_VM_APPEND:-}"
out=${RS_REPRO_OUT:-$RS_TOP/build/rxe-repro/$(echo "$tag" | tr -c "A-Za-z0-9.-" _)}
g=$RS_VM_DIR/rxe-repro-guest.sh
rm -rf "$out"
mkdir -p "$out"
died=0
other=0
echo "rxe-repro: $tag, $rounds rounds of 2 x ${secs} s"
for i in $(seq "$rounds"); do
	t0=$(date +%s)
	if bash "$RS_VM_DIR/run-vm.sh" --kernel "$kernel" --no-module \
		--timeout $((secs * 2 + 300)) --out "$out/round$i" \
		--peer "$g server $secs" -- "$g client $secs" >"$out/round$i.log" 2>&1; then
		echo "rxe-repro: round $i: ok ($(( $(date +%s) - t0 ))s)"
		continue
	fi
	if grep -qE '^  \| ' "$out/round$i.log"; then
		died=$((died + 1))
		echo "rxe-repro: round $i: a guest's kernel log shows a fault ($(( $(date +%s) - t0 ))s):"
		grep -E '^  \| ' "$out/round$i.log" | grep -m3 -E 'Oops|BUG|fault|panic|RIP' |
			sed 's/^/    /'
	else
		other=$((other + 1))
		echo "rxe-repro: round $i: failed without a kernel report, log: $out/round$i.log"
	fi
done
echo "rxe-repro: $tag: $rounds rounds, $died runs with a fault, $other other failures"
[ $died = 0 ] && [ $other = 0 ]

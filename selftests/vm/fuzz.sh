#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make fuzz: the ABI fuzzer (selftests/rsfuzz.c) long, with a random seed
# (or RS_FUZZ_SEED), on Debian's stock 6.12 (RS_FUZZ_CALLS, default 10^6
# calls) and on the debug kernel (RS_FUZZ_DEBUG_CALLS, default 10^5), each
# in a guest of its own, with device removal on the guest's spare link
# (RS_TEST_NETDEV, default veth1).  Prints the seed and the calls made;
# fails if a worker hangs or dies, if the module stops carrying messages or
# keeps ACs after every file closed, or on the guest's verdict (a kernel
# splat, KASAN, lockdep, a kmemleak report, a failed unload).  Builds what
# it needs, as make check does.  Not part of make check (which runs a short
# fixed-seed round, rdmashare_fuzz_test): about 20-40 minutes.

set -uo pipefail
. "$(dirname "$0")/lib.sh"

B=${RS_BUILD:-$RS_TOP/build}
seed=${RS_FUZZ_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
[ "$seed" != 0 ] || seed=1
calls=${RS_FUZZ_CALLS:-1000000}
dcalls=${RS_FUZZ_DEBUG_CALLS:-100000}
failed=0

bash "$RS_VM_DIR/deps.sh" >/dev/null || rs_die "make deps failed"
dk=$(bash "$RS_VM_DIR/debug-kernel.sh" | tail -n1) || rs_die "no debug kernel"
make -s -C "$RS_TOP" userlib selftests >/dev/null || rs_die "user build failed"
k612=/usr/src/linux-headers-$(rs_stock_kver 6.12)
bash "$RS_VM_DIR/build-module.sh" "$k612" "$B/6.12" || rs_die "module build (6.12) failed"
bash "$RS_VM_DIR/build-module.sh" "$dk/build" "$B/debug" || rs_die "module build (debug) failed"

echo "[fuzz] seed $seed"
# run KERNEL MODULE CALLS: one guest, the fuzzer, its verdict.
run() {
	local kernel=$1 module=$2 n=$3 log=$B/fuzz-$1.log
	bash "$RS_VM_DIR/run-vm.sh" --kernel "$kernel" --module "$module" --timeout 7200 \
		-- "$RS_TOP/selftests/build/rsfuzz" -s "$seed" -n "$n" -p 3 -t 6000 \
		-d "${RS_TEST_NETDEV:-veth1}" >"$log" 2>&1
	local rc=$?
	grep '^# rsfuzz' "$log" | sed "s/^/[fuzz] $kernel: /"
	if [ $rc -ne 0 ] || ! grep -q '^# rsfuzz: ok' "$log"; then
		echo "[fuzz] $kernel: FAILED, log: $log"
		grep -E '^\[rdmashare\] vm .*FAIL|^  \| ' "$log" | head -n 40
		failed=1
	else
		echo "[fuzz] $kernel: ok (clean kernel log, unload, no leaks)"
	fi
}
run 6.12 "$B/6.12/kmod/rdmashare.ko" "$calls"
run debug "$B/debug/kmod/rdmashare.ko" "$dcalls"
echo "[fuzz] seed $seed: $([ $failed = 0 ] && echo passed || echo FAILED)"
exit $failed

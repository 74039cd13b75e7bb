#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make gloo-train: PyTorch's gloo backend (Debian 12's python3-torch)
# trains ps-train's MLP on Fashion-MNIST data parallel between two guests
# (Debian's 6.12 under QEMU, one vCPU each, Soft-RoCE on one emulated
# link), over plain TCP and under rdmashare-run (gloo-train-guest.sh), and
# reports each run's accuracy and seconds per epoch, and whether the final
# weights are the same bits.  Not part of make check; builds nothing (run
# make first).  See Documentation/parameter-server.rst.
#
# Results: $RS_BUILD/bench/gloo-train (default build/bench/gloo-train):
# the guests' logs under a/ (rank 1) and b/ (rank 0, gloo-TRANSPORT.log).
#
# Environment: RS_BENCH_MODULE (default kmod/rdmashare.ko, built for
# Debian's 6.12); RS_GLOO_EPOCHS, RS_GLOO_TRAIN, RS_GLOO_TEST and
# RS_GLOO_TRANSPORTS, passed to the guests (gloo-train-guest.sh).

set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"
. "$(dirname "$0")/train-lib.sh"

B=${RS_BUILD:-$RS_TOP/build}
module=${RS_BENCH_MODULE:-$RS_TOP/kmod/rdmashare.ko}
guest=$RS_TOP/selftests/bench/gloo-train-guest.sh
out=$B/bench/gloo-train

[ -e "$module" ] || rs_die "no module at $module (run: make)"
[ -e "$RS_TOP/userlib/build/rdmashare-run" ] || rs_die "no userlib/build/rdmashare-run (run: make)"
/usr/bin/python3 -c 'import torch' 2>/dev/null || rs_die "no python3-torch (run: make deps)"
env=
for v in "${!RS_GLOO_@}"; do
	env+="$v='${!v}' "
done

rm -rf "$out"
mkdir -p "$out"
rs_log "gloo-train: two 6.12 guests, ${RS_GLOO_TRANSPORTS:-tcp rdmashare}, ${RS_GLOO_EPOCHS:-1} epoch(s) each"
rc=0
bash "$RS_VM_DIR/run-vm.sh" --kernel 6.12 --module "$module" --timeout 5400 --out "$out" \
	--peer "${env}bash $guest peer" -- "${env}bash $guest client" >"$out/run-vm.log" 2>&1 || rc=$?

# Rank 0's lines, per transport; then the hashes compared.
logs=()
for t in ${RS_GLOO_TRANSPORTS:-tcp rdmashare}; do
	f=$out/b/gloo-$t.log
	[ -e "$f" ] || continue
	grep -E '^(train:|epoch |weights |run )' "$f" | sed "s/^/$t: /"
	logs+=("$f")
done
rs_same_weights gloo-train "${logs[@]}" || rc=1
[ "$rc" = 0 ] || { tail -n 40 "$out/run-vm.log" >&2; rs_log "gloo-train: failed (log: $out/run-vm.log)"; }
exit "$rc"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make ps-train-pair: ps-train's MLP trains on the whole of Fashion-MNIST
# with 2 servers and 2 workers split across two guests (Debian's stock
# kernel under QEMU, one vCPU each, Soft-RoCE on one emulated link), over
# TCP, raw verbs (a QP per connection), rsocket's preload, rdmashare's own
# transport and rdmashare-run (ps-train-guest.sh), and reports each run's
# accuracy, seconds per epoch split into compute and communication, the
# RC QPs in use, and whether the final weights are the same bits over every
# transport (sync SGD sums in rank order).  Not part of make check; builds
# nothing (run make first).  See Documentation/parameter-server.rst.
#
# Results: $RS_BUILD/bench/ps-train-pair (default build/bench/ps-train-pair):
# the guests' logs under a/ (worker 0's report, ps-TRANSPORT.log) and b/.
#
# Environment: RS_BENCH_KERNEL (6.1, the default: two stock 6.12 guests
# fault now and then under the emulator, Documentation/testing.rst),
# RS_BENCH_MODULE (default build/KERNEL/kmod/rdmashare.ko, as make check
# builds it); RS_PS_EPOCHS, RS_PS_TRAIN, RS_PS_TEST, RS_PS_TIMEOUT and
# RS_PS_TRANSPORTS, passed to the guests (ps-train-guest.sh).

set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"
. "$(dirname "$0")/train-lib.sh"

B=${RS_BUILD:-$RS_TOP/build}
kernel=${RS_BENCH_KERNEL:-6.1}
module=${RS_BENCH_MODULE:-$B/$kernel/kmod/rdmashare.ko}
guest=$RS_TOP/selftests/bench/ps-train-guest.sh
out=$B/bench/ps-train-pair

kver=$(rs_stock_kver "$kernel") || rs_die "Debian's $kernel kernel is not installed (run: make deps)"
[ -e "$module" ] || rs_die "no module at $module (run: make check's build stage, or RS_BENCH_MODULE=...)"
vermagic=$(modinfo -F vermagic "$module" | cut -d' ' -f1)
[ "$vermagic" = "$kver" ] ||
	rs_die "$module is built for $vermagic, the guests run $kver (RS_BENCH_MODULE=...)"
for f in ps-train rdmashare-run; do
	[ -x "$RS_TOP/userlib/build/$f" ] || rs_die "no userlib/build/$f (run: make)"
done
env=
for v in "${!RS_PS_@}"; do
	env+="$v='${!v}' "
done

rm -rf "$out"
mkdir -p "$out"
transports=${RS_PS_TRANSPORTS:-sockets verbs rsocket rdmashare preload}
rs_log "ps-train-pair: two $kver guests, $transports, ${RS_PS_EPOCHS:-1} epoch(s) each"
rc=0
bash "$RS_VM_DIR/run-vm.sh" --kernel "$kernel" --module "$module" --timeout 7200 --out "$out" \
	--peer "${env}bash $guest peer" -- "${env}bash $guest client" >"$out/run-vm.log" 2>&1 || rc=$?

# Worker 0's lines, per transport; then the hashes compared.
logs=()
for t in $transports; do
	f=$out/a/ps-$t.log
	[ -e "$f" ] || continue
	grep -E '^(epoch |weights |run |rc_qps )' "$f" | sed "s/^/$t: /"
	grep '^rc_qps ' "$out/b/ps-$t.log" 2>/dev/null | sed "s/^/$t: peer: /"
	logs+=("$f")
done
rs_same_weights ps-train-pair "${logs[@]}" || rc=1
[ "$rc" = 0 ] || { tail -n 40 "$out/run-vm.log" >&2; rs_log "ps-train-pair: failed (log: $out/run-vm.log)"; }
exit "$rc"

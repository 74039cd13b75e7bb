#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make gloo-train, guest side (gloo-train.sh runs it in two guests through
# run-vm.sh --peer): userlib/ps/torch-gloo.py train, rank 0 on the peer
# (its TCPStore on the peer's address), rank 1 on the client, once per
# transport in RS_GLOO_TRANSPORTS (default "tcp rdmashare"): tcp is plain
# python, rdmashare the same under rdmashare-run, rsocket with rsocket's
# librspreload.so preloaded (RS_BENCH_RSPRELOAD).  Rank 1 connects when
# it is ready; until rank 0 listens, its store refuses it and it tries
# again.  Each run's output goes to $RS_WORK/gloo-TRANSPORT.log, with
# what rdmashare's devices sent and TCP's segments sent during it.
#
# Environment: RS_GLOO_EPOCHS (1), RS_GLOO_TRAIN (training samples, 0:
# all 60000), RS_GLOO_TEST (test samples, 0: all 10000).
#
# roles: client (rank 1), peer (rank 0)

set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
case $1 in
client) rank=1 master=$RS_PEER_IP ;;
peer) rank=0 master=$RS_IP ;;
*) echo "gloo-train-guest: unknown role '$1'"; exit 2 ;;
esac

# shellcheck source=selftests/counters.sh
. "$top/selftests/counters.sh"

port=7340 rc=0
for t in ${RS_GLOO_TRANSPORTS:-tcp rdmashare}; do
	case $t in
	tcp) pre=() ;;
	rdmashare) pre=("$top/userlib/build/rdmashare-run") ;;
	rsocket)
		pre=(env LD_PRELOAD="${RS_BENCH_RSPRELOAD:-/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so}")
		;;
	*) echo "gloo-train-guest: unknown transport '$t'"; exit 2 ;;
	esac
	log=$RS_WORK/gloo-$t.log
	run_mark
	"${pre[@]}" "$top/userlib/ps/torch-gloo.py" train --rank $rank --master "$master:$port" \
		--iface eth0 --threads 1 --epochs "${RS_GLOO_EPOCHS:-1}" \
		--train "${RS_GLOO_TRAIN:-0}" --test "${RS_GLOO_TEST:-0}" >"$log" 2>&1 ||
		{ echo "$t: torch-gloo.py failed"; rc=1; }
	run_line >>"$log"
	sed "s/^/$t: /" "$log"
	port=$((port + 1))
done
exit $rc

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make ps-train-pair, guest side (ps-train-pair.sh runs it in two guests
# through run-vm.sh --peer): ps-train's MLP on Fashion-MNIST with 2
# servers and 2 workers, servers 0 and 1 and worker 1 on the peer, worker 0
# on the client, once per transport in RS_PS_TRANSPORTS (default "sockets
# verbs rsocket rdmashare preload"):
#   sockets    libps's sockets transport over TCP
#   verbs      libps's raw verbs transport: an RC QP per connection
#   rsocket    the sockets transport with rsocket's librspreload.so
#              preloaded on every node
#   rdmashare  libps's rdmashare transport: its rings, an AC per connection
#   preload    the sockets transport under rdmashare-run
# Nodes connect again until their peers listen, so the guests need no side
# channel; each run has its port.  Each run's output (worker 0's report on
# the client, the peer's nodes' on the peer) goes to
# $RS_WORK/ps-TRANSPORT.log, with what rdmashare's devices sent, TCP's
# segments sent and the RC QPs of the guest's rxe0 meanwhile.
#
# Environment: RS_PS_EPOCHS (1), RS_PS_TRAIN (training samples, 0: all
# 60000), RS_PS_TEST (0: all 10000), RS_PS_TIMEOUT (ms, 600000).
#
# roles: client (worker 0), peer (servers, worker 1)

set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
train=$top/userlib/build/ps-train
rspreload=${RS_BENCH_RSPRELOAD:-/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so}
case $1 in
client) host=$RS_PEER_IP ;;
peer) host=$RS_IP ;;
*) echo "ps-train-guest: unknown role '$1'"; exit 2 ;;
esac
role=$1
args=(--model mlp --hidden 32 --batch 32 --lr 0.1 --seed 1 --epochs "${RS_PS_EPOCHS:-1}"
	--timeout "${RS_PS_TIMEOUT:-600000}" -H "$host")
[ "${RS_PS_TRAIN:-0}" = 0 ] || args+=(--train "$RS_PS_TRAIN")
[ "${RS_PS_TEST:-0}" = 0 ] || args+=(--test "$RS_PS_TEST")

# shellcheck source=selftests/counters.sh
. "$top/selftests/counters.sh"
# RC QPs rxe0 has now (rdma's resource tracking), the QPs of every user.
rc_qps() { rdma resource show qp link rxe0/1 2>/dev/null | grep -c 'type RC'; }

port=7350 rc=0
for t in ${RS_PS_TRANSPORTS:-sockets verbs rsocket rdmashare preload}; do
	pre=()
	case $t in
	sockets | verbs | rdmashare) tr=$t ;;
	rsocket) tr=sockets pre=(env LD_PRELOAD="$rspreload") ;;
	preload) tr=sockets pre=("$top/userlib/build/rdmashare-run") ;;
	*) echo "ps-train-guest: unknown transport '$t'"; exit 2 ;;
	esac
	log=$RS_WORK/ps-$t.log
	run_mark
	: >"$log"
	if [ "$role" = peer ]; then
		pids=()
		"${pre[@]}" "$train" --server 0 -S 2 -W 2 -p $port "${args[@]}" --transport "$tr" \
			>>"$log" 2>&1 &
		pids+=($!)
		"${pre[@]}" "$train" --server 1 -p $port "${args[@]}" --transport "$tr" >>"$log" 2>&1 &
		pids+=($!)
		# The QPs while the job runs: the nodes are up within seconds.
		(sleep 20; echo "rc_qps $(rc_qps) during the run" >>"$log") &
		"${pre[@]}" "$train" --worker 1 -p $port "${args[@]}" --transport "$tr" >>"$log" 2>&1 ||
			{ echo "$t: worker 1 failed"; rc=1; }
		for p in "${pids[@]}"; do
			wait "$p" || { echo "$t: a server failed"; rc=1; }
		done
	else
		(sleep 20; echo "rc_qps $(rc_qps) during the run" >>"$log.qps") &
		"${pre[@]}" "$train" --worker 0 -p $port "${args[@]}" --transport "$tr" >>"$log" 2>&1 ||
			{ echo "$t: worker 0 failed"; rc=1; }
		wait
		cat "$log.qps" >>"$log" 2>/dev/null
	fi
	run_line >>"$log"
	sed "s/^/$t: /" "$log"
	port=$((port + 1))
done
exit $rc

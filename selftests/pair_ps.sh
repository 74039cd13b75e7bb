#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two-guest test of the parameter server (libps, userlib/ps/): ps-train's
# small MLP (as rdmashare_ps_test's train.tiny: 1200 Fashion-MNIST samples,
# one epoch) with 1 server and 2 workers, then 2 servers and 4 workers,
# over each of libps's transports in turn: sockets (TCP), rdmashare (its
# rings, an AC per connection), verbs (an RC QP per connection) and
# sockets under rdmashare-run.  The peer runs the servers and the odd
# workers, the client the even ones, so that every worker talks to a
# server in the other guest.  The client checks worker 0's report: the
# epoch ran, and the final weights' hash is the same over every transport
# for each shape (sync SGD sums in rank order: the same bits); over
# rdmashare, the client's rdmashare devices sent at least worker 0's bytes
# and TCP next to nothing; over TCP, the other way round.
#
# Each run has a port of its own, and nodes connect again until their peers
# listen (libps's start-up), so the guests need no side channel: a run
# that fails on one side fails on the other within the timeout.
#
# roles: client (guest a), peer (guest b).

set -u
role=$1
top=$(cd "$(dirname "$0")/.." && pwd)
train=$top/userlib/build/ps-train
run=$top/userlib/build/rdmashare-run
ARGS="--model mlp --hidden 16 --train 1200 --test 500 --epochs 1 --batch 20 --lr 0.1
	--seed 7 --big-bound 4096 --timeout 90000"
MAXSEGS=64	# TCP segments a run over rdmashare may send
OUT=/tmp/pair-ps.out

log() { echo "pair_ps ($role): $*"; }
fail() {
	log "FAIL: $*"
	exit 1
}

# shellcheck source=selftests/counters.sh
. "$top/selftests/counters.sh"

# node TRANSPORT PRE PORT ROLE...: one ps-train node (PRE: rdmashare-run or
# nothing), its output in /tmp/pair-ps.PORT.ROLE.
node() {
	local tr=$1 pre=$2 port=$3
	shift 3
	# shellcheck disable=SC2086
	$pre "$train" "$@" -H "$RS_SERVER" -p "$port" $ARGS --transport "$tr" \
		>"/tmp/pair-ps.$port.${*// /}" 2>&1
}

# job S W TRANSPORT PRE PORT: this guest's nodes of one run; the client's
# worker 0 in the foreground, its report in OUT.
job() {
	local S=$1 W=$2 tr=$3 pre=$4 port=$5 r pids=() st=0 p mine
	if [ "$role" = peer ]; then
		node "$tr" "$pre" "$port" --server 0 -S "$S" -W "$W" &
		pids+=($!)
		for ((r = 1; r < S; r++)); do
			node "$tr" "$pre" "$port" --server $r &
			pids+=($!)
		done
	fi
	# Even workers here on the client, odd ones on the peer; 0 below.
	mine=$([ "$role" = client ] && echo 0 || echo 1)
	for ((r = 1; r < W; r++)); do
		[ $((r % 2)) = "$mine" ] || continue
		node "$tr" "$pre" "$port" --worker $r &
		pids+=($!)
	done
	if [ "$role" = client ]; then
		# shellcheck disable=SC2086
		timeout 300 $pre "$train" --worker 0 -H "$RS_SERVER" -p "$port" $ARGS \
			--transport "$tr" >"$OUT" 2>&1 || st=1
	fi
	for p in "${pids[@]}"; do
		wait "$p" || st=1
	done
	if [ $st != 0 ]; then
		tail -n 5 /tmp/pair-ps."$port".* "$OUT" 2>/dev/null
		fail "${S}s${W}w over $tr${pre:+ (preloaded)}: a node failed"
	fi
}

[ -x "$train" ] || fail "no $train"
[ -e /dev/rdmashare ] || fail "/dev/rdmashare missing"
# The servers are the peer's: everyone connects to its address.
RS_SERVER=$([ "$role" = peer ] && echo "$RS_IP" || echo "$RS_PEER_IP")
case $role in
client | peer) ;;
*) fail "unknown role '$role'" ;;
esac

port=7340
for shape in "1 2" "2 4"; do
	read -r S W <<<"$shape"
	hash0=
	for tr in sockets rdmashare verbs preload; do
		pre='' t=$tr
		[ "$tr" = preload ] && pre=$run t=sockets
		tx0=$(rs_sum tx_bytes) segs0=$(out_segs)
		job "$S" "$W" "$t" "$pre" $port
		port=$((port + 1))
		[ "$role" = client ] || continue

		tx=$(($(rs_sum tx_bytes) - tx0)) segs=$(($(out_segs) - segs0))
		hash=$(sed -n 's/^weights fnv1a64 \([0-9a-f]*\).*/\1/p' "$OUT")
		acc=$(sed -n 's/^epoch 1: .* test_acc \([0-9.]*\) .*/\1/p' "$OUT")
		bytes=$(sed -n 's/^epoch 1: .* bytes \([0-9]*\).*/\1/p' "$OUT")
		if [ -z "$hash" ] || [ -z "$acc" ] || [ -z "$bytes" ]; then
			cat "$OUT"
			fail "${S}s${W}w over $tr: no epoch or hash reported"
		fi
		log "${S}s${W}w over $tr: test_acc $acc, worker 0 moved $bytes bytes, hash $hash;" \
			"rdmashare sent $tx bytes, TCP $segs segments"
		hash0=${hash0:-$hash}
		[ "$hash" = "$hash0" ] || fail "${S}s${W}w over $tr: hash $hash, not $hash0"
		# Worker 0 sent about half of what it moved (its pushes).
		case $tr in
		rdmashare | preload)
			[ "$tx" -ge $((bytes / 4)) ] ||
				fail "${S}s${W}w over $tr: rdmashare sent only $tx bytes"
			[ "$segs" -lt $MAXSEGS ] ||
				fail "${S}s${W}w over $tr: TCP sent $segs segments"
			;;
		sockets)
			[ "$tx" -lt $((bytes / 16)) ] ||
				fail "${S}s${W}w over TCP: rdmashare sent $tx bytes"
			[ "$segs" -ge $((bytes / 4 / 1448)) ] ||
				fail "${S}s${W}w over TCP: only $segs segments"
			;;
		esac
	done
done
log "ok (${SECONDS} s)"

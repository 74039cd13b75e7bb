#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two-guest peer-loss test, run by run-vm.sh --peer after pair_smoke.sh.
# The client streams on 8 ACs; mid-transfer the peer's link goes dark (the
# peer vanishes without a word, as a powered-off host does).  The client's
# ACs must fail within a bounded time (keepalive plus transport retries).
#
# Not covered yet: a new connect once the peer's link is back (see the
# notes in Documentation/design.rst, "Liveness").

set -u
role=$1
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/userlib/build
fail() { echo "pair_peerloss ($role): FAIL: $*"; exit 1; }
LIMIT=60	# seconds for the ACs to fail once the peer is gone

case $role in
peer)
	"$bin/rs-stream" -s -p 7300 -a 8 >/tmp/stream.log 2>&1 &
	# Let the transfer run, then vanish: no DISCONNECT goes out.
	sleep 10
	ip link set eth0 down
	echo "pair_peerloss (peer): link down"
	kill -9 %1 2>/dev/null
	sleep $((LIMIT + 10))
	;;
client)
	start=$(date +%s)
	# Far more data than can go in the time the peer lives.
	timeout 200 "$bin/rs-stream" -c "$RS_PEER_IP" -p 7300 -a 8 -l 65536 -n 100000
	rc=$?
	end=$(date +%s)
	[ "$rc" != 0 ] || fail "the stream completed although the peer vanished"
	[ "$rc" != 124 ] || fail "the ACs never failed"
	echo "pair_peerloss (client): stream failed after $((end - start)) s (peer gone after ~10 s)"
	[ $((end - start)) -le $((10 + LIMIT)) ] || fail "the ACs took too long to fail"
	;;
esac
echo "pair_peerloss ($role): ok"

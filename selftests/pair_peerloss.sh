#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two-guest peer-loss test, run by run-vm.sh --peer ... --peer-reboot after
# pair_smoke.sh.  The client streams on 8 ACs; mid-transfer the peer guest's
# power is cut (no DISCONNECT, no CLOSE goes out).  The client's ACs must fail
# within a bounded time (keepalive plus transport retries).  The peer then
# boots again with the same addresses, and a new connect from the client
# must build a new transport to it and carry a verified ping-pong.
#
# roles: client (guest a), peer (guest b, first boot), peer-again (second)

set -u
role=$1
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/userlib/build
fail() { echo "pair_peerloss ($role): FAIL: $*"; exit 1; }
LIMIT=60	# seconds for the ACs to fail once the peer is gone
BACK=180	# seconds for the peer to boot again and accept

case $role in
peer)
	"$bin/rs-stream" -s -p 7300 -a 8 >/tmp/stream.log 2>&1 &
	# Let the transfer run, then have run-vm.sh cut the power.
	sleep 10
	echo "pair_peerloss (peer): cutting the power"
	sync
	: >"$RS_WORK/poweroff"
	sleep 120
	fail "still running 120 s after asking for the power cut"
	;;
peer-again)
	echo "pair_peerloss (peer-again): up again as $RS_IP"
	timeout $BACK "$bin/rs-pingpong" -s -p 7301 -n 100 || fail "ping-pong server"
	;;
client)
	# Far more data than can go in the time the peer lives.  The peer's
	# server may not listen yet: try again while refused.
	for i in $(seq 30); do
		start=$(date +%s)
		timeout -k 5 200 "$bin/rs-stream" -c "$RS_PEER_IP" -p 7300 -a 8 \
			-l 65536 -n 100000 >/tmp/stream.log 2>&1
		rc=$?
		grep -q "refused" /tmp/stream.log || break
		sleep 1
	done
	cat /tmp/stream.log
	end=$(date +%s)
	! grep -q "refused" /tmp/stream.log || fail "the peer's stream server never listened"
	[ "$rc" != 0 ] || fail "the stream completed although the peer vanished"
	[ "$rc" != 124 ] || fail "the ACs never failed"
	echo "pair_peerloss (client): stream failed after $((end - start)) s (peer gone after ~10 s)"
	[ $((end - start)) -le $((10 + LIMIT)) ] || fail "the ACs took too long to fail"

	# The peer boots again; connect until its server is up.
	# Every attempt's output is kept.  The server serves until a client
	# had its 100 messages echoed: right after the reboot, a CONNECT may
	# wait on rdma_cm's retries until the client's connect timeout ends
	# just as the new server accepts it (the server then sees the AC
	# closed, and so must accept again).
	t0=$(date +%s)
	: >/tmp/pp-all.log
	while :; do
		timeout -k 5 60 "$bin/rs-pingpong" -c "$RS_PEER_IP" -p 7301 -n 100 -l 4000 \
			>/tmp/pp.log 2>&1 && break
		rc=$?
		echo "attempt at +$(( $(date +%s) - t0 )) s, exit $rc:" >>/tmp/pp-all.log
		cat /tmp/pp.log >>/tmp/pp-all.log
		[ $(( $(date +%s) - t0 )) -lt $BACK ] || {
			tail -n 40 /tmp/pp-all.log
			dmesg | grep -E 'rdmashare|rxe' | tail -n 20
			fail "no connect to the rebooted peer in $BACK s"
		}
		sleep 1
	done
	cat /tmp/pp.log
	echo "pair_peerloss (client): reconnected $(( $(date +%s) - t0 )) s after the failure"
	;;
*) fail "unknown role" ;;
esac
echo "pair_peerloss ($role): ok"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two-guest link-flap test, run by run-vm.sh --peer after pair_smoke.sh.
# The peer streams to the client; the peer's link (eth0) goes down for FLAP
# seconds under the stream.  Its QP fails at once (rxe cannot send), so the
# peer's rdmashare takes the QP down while its port is down.  A DREQ sent
# then would make rxe take the port's QP1 down for good, and the peer would
# ignore every later CONNECT (Documentation/design.rst, "Liveness");
# rdmashare holds it back until the port is up again (kmod/park.c).  Once
# the link is back, a new connect from the client must build a new QP to
# the peer and carry a verified ping-pong.
#
# roles: client (guest a), peer (guest b)

set -u
role=$1
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/userlib/build
fail() { echo "pair_linkflap ($role): FAIL: $*"; exit 1; }
FLAP=20		# seconds the peer's link is down
BACK=150	# seconds for a connect to work once it is up again
# The QPs (and ACs) this guest's rdmashare has to the other guest.
peer_qps() {
	cat "/sys/class/misc/rdmashare/peers/$RS_PEER_IP/qps" 2>/dev/null || echo 0
}
peer_acs() {
	cat "/sys/class/misc/rdmashare/peers/$RS_PEER_IP/acs" 2>/dev/null || echo 0
}

case $role in
peer)
	# The client's server may not listen yet: try again while refused.
	(
		for i in $(seq 30); do
			"$bin/rs-stream" -c "$RS_PEER_IP" -p 7310 -a 1 -l 65536 -n 1000000 \
				>/tmp/flap-stream.log 2>&1
			grep -q "refused" /tmp/flap-stream.log || break
			sleep 1
		done
	) &
	for i in $(seq 120); do
		[ "$(peer_acs)" -gt 0 ] && break
		sleep 0.5
	done
	[ "$(peer_acs)" -gt 0 ] || fail "the stream never connected"
	sleep 2
	echo "pair_linkflap (peer): eth0 down for $FLAP s under the stream"
	ip link set eth0 down || fail "link down"
	sleep $FLAP
	down_qps=$(peer_qps)
	ip link set eth0 up || fail "link up"
	wait
	cat /tmp/flap-stream.log
	echo "pair_linkflap (peer): eth0 up; QPs to $RS_PEER_IP at the end of the outage: $down_qps"
	dmesg | grep -E 'rdmashare: .*port [0-9]+ down' | sed 's/^/pair_linkflap (peer): /'
	[ "$down_qps" = 0 ] || fail "the QP outlived the link (nothing to test)"
	timeout $BACK "$bin/rs-pingpong" -s -p 7311 -n 100 || fail "ping-pong server"
	;;
client)
	"$bin/rs-stream" -s -p 7310 -a 1 >/tmp/flap-stream.log 2>&1 &
	server=$!
	# Until the peer's link is back and its ping-pong server listens.
	sleep 20
	t0=$(date +%s)
	while :; do
		timeout -k 5 60 "$bin/rs-pingpong" -c "$RS_PEER_IP" -p 7311 -n 100 -l 4000 \
			>/tmp/flap-pp.log 2>&1 && break
		[ $(( $(date +%s) - t0 )) -lt $BACK ] ||
			{ cat /tmp/flap-pp.log; fail "no connect to the peer in $BACK s"; }
		sleep 1
	done
	cat /tmp/flap-pp.log
	echo "pair_linkflap (client): connected to the peer $(( $(date +%s) - t0 )) s after trying"
	kill $server 2>/dev/null
	wait $server 2>/dev/null
	;;
*) fail "unknown role" ;;
esac
echo "pair_linkflap ($role): ok"

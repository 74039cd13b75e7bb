#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two-guest smoke test, run by run-vm.sh --peer: "client" on the first
# guest, "peer" on the second.  Each guest checks that rdmashare sees its
# rxe device; then rs-pingpong runs across the emulated link over IPv4 and
# over IPv6, every byte verified, and the client checks that its ACs shared
# the rdmashare QP to the peer.  Over IPv6 the client offers the previous
# protocol version, as a host not yet upgraded would, and the QP speaks it.

set -u
role=$1
top=$(cd "$(dirname "$0")/.." && pwd)
pp=$top/userlib/build/rs-pingpong
fail() { echo "pair_smoke ($role): FAIL: $*"; exit 1; }

[ -e /dev/rdmashare ] || fail "/dev/rdmashare missing"
name=$(cat /sys/class/misc/rdmashare/devices/rxe0/name 2>/dev/null) ||
	fail "rdmashare does not list rxe0"
[ "$name" = rxe0 ] || fail "device name '$name'"
echo "pair_smoke ($role): $(hostname) $RS_IP, rdmashare sees: $(ls /sys/class/misc/rdmashare/devices)"

# Wait for the other guest's address to answer on the link.
for i in $(seq 1 60); do
	ping -c1 -W1 "$RS_PEER_IP" >/dev/null 2>&1 && break
	[ "$i" = 60 ] && fail "peer $RS_PEER_IP unreachable"
done

case $role in
peer)
	timeout 200 "$pp" -s -p 7100 || fail "IPv4 server"
	timeout 200 "$pp" -s -p 7101 || fail "IPv6 server"
	;;
client)
	run() {
		local host=$1 port=$2 i
		for i in $(seq 1 60); do
			if timeout 100 "$pp" -c "$host" -p "$port" -n 100 -l 4000; then
				return 0
			fi
			sleep 1
		done
		return 1
	}
	v=/sys/class/misc/rdmashare/proto_version
	peers=/sys/kernel/debug/rdmashare/peers
	newest=$(cat $v) || fail "no proto_version"
	run "$RS_PEER_IP" 7100 || fail "rs-pingpong over IPv4"
	grep -q "^qp .* version $newest$" "$peers/$RS_PEER_IP" ||
		fail "the IPv4 QP does not speak version $newest"
	# A host of the previous protocol version against today's: this end
	# offers one version less (proto_version) as the IPv6 QP is set up,
	# and the QP must speak it.
	trap 'echo $newest >$v' EXIT
	echo $((newest - 1)) >$v || fail "proto_version $((newest - 1))"
	run "$RS_PEER_IP6" 7101 || fail "rs-pingpong over IPv6 (protocol $((newest - 1)))"
	echo "$newest" >$v
	grep -q "^qp .* version $((newest - 1))$" $peers/*:* ||
		fail "the IPv6 QP does not speak version $((newest - 1)): $(cat $peers/*:*)"
	;;
*) fail "unknown role" ;;
esac
echo "pair_smoke ($role): ok"

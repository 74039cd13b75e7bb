#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two-guest smoke test, run by run-vm.sh --peer: "client" on the first
# guest, "peer" on the second.  Each guest checks that rdmashare sees its
# rxe device; then rping (rdma_cm, RC QP, data verified) runs across the
# emulated link, proving the fabric between the guests carries RDMA.

set -u
role=$1
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
	# Serves one rping client, then exits.
	timeout 120 rping -s -a "$RS_IP" -C 5 -v || fail "rping server"
	;;
client)
	out=$(mktemp)
	for i in $(seq 1 30); do
		if timeout 60 rping -c -a "$RS_PEER_IP" -C 5 -v >"$out" 2>&1; then
			break
		fi
		sleep 1
	done
	cat "$out"
	n=$(grep -c 'ping data: rdma-ping-' "$out")
	[ "$n" = 5 ] || fail "expected 5 verified rping exchanges, saw $n"
	;;
*) fail "unknown role" ;;
esac
echo "pair_smoke ($role): ok"

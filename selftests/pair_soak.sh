#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two-guest soak (rssoak.c), run by run-vm.sh --peer ... --peer-reboot:
# RS_SOAK_SECS (default 120) of ACs opened and closed, every message
# checked, workers killed; the client's rxe0 removed and added back at a
# sixth of the time; the peer's power cut at a third, and the peer booting
# again.  make check runs 2 minutes (stage vm-soak-debug), make soak 30.
#
# roles: client (guest a), peer (guest b, first boot), peer-again (second)

set -u
role=$1
secs=${RS_SOAK_SECS:-120}
bin=$(cd "$(dirname "$0")" && pwd)/build/rssoak

case $role in
peer)
	exec "$bin" server -c $((secs / 3)) -t $((secs * 2))
	;;
peer-again)
	echo "pair_soak (peer-again): up again as $RS_IP"
	exec "$bin" server -t $((secs + 300))
	;;
client)
	exec "$bin" client -h "$RS_PEER_IP" -t "$secs" -r $((secs / 6))
	;;
*)
	echo "pair_soak: unknown role $role"
	exit 2
	;;
esac

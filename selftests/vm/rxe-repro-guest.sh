#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# One guest's half of rxe-repro.sh: perftest over Soft-RoCE, no rdmashare.
#
#   rxe-repro-guest.sh server|client SECONDS
#
# Bidirectional ib_send_bw, then ib_write_bw, 4 RC QPs, 64 KiB messages,
# SECONDS each, connected through rdma_cm (-R) between $RS_IP and
# $RS_PEER_IP.  The client tries to connect until the server listens.

set -uo pipefail
role=$1
secs=$2
args=(-d rxe0 -R -F -b -q 4 -s 65536 -D "$secs")
port=18600
for prog in ib_send_bw ib_write_bw; do
	port=$((port + 1))
	if [ "$role" = server ]; then
		timeout $((secs + 120)) "$prog" "${args[@]}" -p $port || exit 1
		continue
	fi
	ok=0
	for _ in $(seq 60); do
		if timeout $((secs + 60)) "$prog" "${args[@]}" -p $port "$RS_PEER_IP"; then
			ok=1
			break
		fi
		sleep 1
	done
	[ $ok = 1 ] || exit 1
done

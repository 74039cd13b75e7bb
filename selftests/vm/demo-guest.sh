#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The demo inside each guest: what rdmashare sees, then RDMA across the link.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
echo "== $(hostname) ($RS_IP): rdma link =="
rdma link show
echo "== $(hostname): rdmashare =="
"$top/userlib/build/rs-info"
echo "== $(hostname): rs-pingpong between the guests ($1) =="
"$top/selftests/pair_smoke.sh" "$1" || exit 1
bin=$top/userlib/build
echo "== $(hostname): rs-stream, 64 ACs from 4 processes over one shared QP ($1) =="
if [ "$1" = peer ]; then
	exec "$bin/rs-stream" -s -p 7400 -a 64
fi
for i in $(seq 1 60); do
	"$bin/rs-stream" -c "$RS_PEER_IP" -p 7400 -a 64 -P 4 -l 16384 -n 20 && break
	sleep 1
done
echo "== $(hostname): rdmashare's QPs (cm_ids) after 64 ACs =="
rdma resource show cm_id | grep rdmashare

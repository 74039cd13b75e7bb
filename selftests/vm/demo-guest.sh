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
exec "$top/selftests/pair_smoke.sh" "$1"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The measurement behind the default chunk_size (Documentation/scheduler.rst):
# rs-stream over rxe loopback, 8 ACs, 64 KiB messages, with chunks of 4, 8
# and 16 KiB, three rounds, in one guest:
#
#   selftests/vm/run-vm.sh --kernel 6.12 -- selftests/bench/chunk-guest.sh

set -euo pipefail
bin=$(cd "$(dirname "$0")/../../userlib/build" && pwd)
cs_file=/sys/class/misc/rdmashare/chunk_size
saved=$(cat "$cs_file")
for round in 1 2 3; do
	for cs in 4096 8192 16384; do
		echo "$cs" >"$cs_file"
		timeout 120 "$bin/rs-stream" -s -p 7900 -a 8 >/tmp/chunk-server.log 2>&1 &
		sleep 0.5
		timeout 120 "$bin/rs-stream" -c "$RS_IP" -p 7900 -a 8 -l 65536 -n 200 >/dev/null
		wait
		echo "round $round chunk_size $cs: $(grep -o '[0-9.]* MB/s' /tmp/chunk-server.log)"
	done
done
echo "$saved" >"$cs_file"

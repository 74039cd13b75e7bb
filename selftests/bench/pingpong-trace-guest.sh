#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make pingpong-trace, guest side (run by pingpong-trace.sh through run-vm.sh):
# where a 64 B ping-pong's time goes.  Runs rs-pingpong with sleeping waits,
# then with busy_poll_us 1000, then ib_send_lat (the baseline), and traces
# each for RS_TRACE_MS (default 50) ms of its steady state: the function
# tracer on the module's and rxe's posting and completion functions, and
# sched_switch and sched_wakeup.  Writes trace-<run>.txt to $RS_WORK and
# prints, per run, the medians of the stages of a one-way trip (see
# Documentation/benchmarks.rst, "Where a 64 B ping-pong's time goes").
# Tracing slows every run: compare the stages, not the totals.

set -euo pipefail

# shellcheck source=selftests/bench/guest-lib.sh
. "$(dirname "$0")/guest-lib.sh"
ms=${RS_TRACE_MS:-50}
T=/sys/kernel/tracing
busy=/sys/class/misc/rdmashare/busy_poll_us
busy_was=$(cat "$busy")
port=7900

log() { printf '[trace] %s\n' "$*"; }

fns="rs_enter rs_ac_send rs_rx_done rs_cq_event rs_cq_work rs_cq_post_rx
rs_busy_poll rs_sq_poll rs_ac_send_done rxe_post_send rxe_requester
rxe_receiver rxe_responder rxe_sender rxe_completer rxe_rcv rxe_sched_task
rxe_run_task rxe_cq_post rxe_xmit_packet ib_uverbs_post_send"

setup() {
	local f
	echo 0 >$T/tracing_on
	echo nop >$T/current_tracer
	: >$T/set_ftrace_filter
	# Functions this kernel does not have (rxe_responder is 6.1's,
	# rxe_receiver and rxe_sender 6.12's) are left out.
	for f in $fns; do
		echo "$f" >>$T/set_ftrace_filter 2>/dev/null || true
	done
	echo function >$T/current_tracer
	echo 1 >$T/events/sched/sched_switch/enable
	echo 1 >$T/events/sched/sched_wakeup/enable
	echo 16384 >$T/buffer_size_kb
}

# snap NAME: trace the next $ms ms into trace-NAME.txt, ordered by time
snap() {
	echo >$T/trace
	echo 1 >$T/tracing_on
	sleep "$(awk -v m="$ms" 'BEGIN { print m / 1000 }')"
	echo 0 >$T/tracing_on
	{ grep -v '^#' $T/trace || true; } | sort -s -g -k4,4 >"$work/trace-$1.txt"
}

# stages NAME: medians of a one-way trip's stages in trace-NAME.txt
stages() {
	awk -v name="$1" '
	function med(a, n,   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
				t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
			}
		return n ? a[int((n + 1) / 2)] : -1
	}
	{ t = $4 + 0; fn = $5; from = $6 }
	# post -> the requester sends -> the receive CQE -> [the module posts
	# the RECV entry] -> the next post (the reply)
	fn ~ /^rxe_post_send/ {
		if (c) {
			n++
			wire[n] = (b - a) * 1e6; recv[n] = (c - b) * 1e6
			mod[n] = d ? (d - c) * 1e6 : 0
			reply[n] = (t - (d ? d : c)) * 1e6; trip[n] = (t - a) * 1e6
		}
		a = t; b = c = d = 0
		next
	}
	a && !b && fn ~ /^rxe_xmit_packet/ && from ~ /rxe_requester/ { b = t; next }
	b && !c && fn ~ /^rxe_cq_post/ && from ~ /rxe_(receiver|responder)/ { c = t; next }
	c && !d && fn ~ /^rs_cq_post_rx/ { d = t; next }
	END {
		printf "%-9s %5d trips: post->wire %4.0f  ->receive CQE %4.0f  ->RECV entry %4.0f  ->reply posted %4.0f  one way %4.0f us\n",
		       name, n, med(wire, n), med(recv, n), med(mod, n), med(reply, n), med(trip, n)
	}' "$work/trace-$1.txt"
}

# rs NAME BUSY_US: rs-pingpong, traced once it runs
rs() {
	local spid cpid
	port=$((port + 1))
	echo "$2" >"$busy"
	"$bin/rs-pingpong" -s -p "$port" >"$work/pingpong-$1.server" 2>&1 &
	spid=$!
	sleep 1
	"$bin/rs-pingpong" -c "$ip" -p "$port" -l 64 -n 20000 >"$work/pingpong-$1.client" 2>&1 &
	cpid=$!
	sleep 1
	snap "$1"
	wait "$cpid" || log "rs-pingpong $1 failed"
	kill "$spid" 2>/dev/null || true
	wait "$spid" 2>/dev/null || true
	echo "$busy_was" >"$busy"
}

setup
rs sleeping 0
rs busy 1000
gidx=$(gid_index rxe0 || true)
conn=(-R)
[ -z "$gidx" ] || conn=(-x "$gidx")
ib_send_lat -d rxe0 "${conn[@]}" -F -s 64 -n 20000 >"$work/perftest.server" 2>&1 &
spid=$!
sleep 1
ib_send_lat -d rxe0 "${conn[@]}" -F -s 64 -n 20000 "$ip" >"$work/perftest.client" 2>&1 &
cpid=$!
sleep 2
snap perftest
wait "$cpid" || log "ib_send_lat failed"
wait "$spid" || true
echo nop >$T/current_tracer
for r in sleeping busy perftest; do
	stages "$r"
done

# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Sourced by the scripts that tell which transport carried a program's
# bytes (pair_preload.sh, pair_ps.sh, bench/gloo-train-guest.sh,
# bench/ps-train-guest.sh): rdmashare's counters and TCP's.

# rs_sum STAT: STAT (tx_bytes, rx_bytes, ...) of rdmashare's devices, all told.
rs_sum() {
	cat /sys/class/misc/rdmashare/devices/*/stats/"$1" 2>/dev/null |
		awk '{ n += $1 } END { print n + 0 }'
}

# out_segs: the TCP segments this host has sent (/proc/net/snmp's OutSegs).
out_segs() {
	awk '/^Tcp:/ { if (!c) { for (i = 1; i <= NF; i++) if ($i == "OutSegs") c = i }
		else print $c }' /proc/net/snmp
}

# run_mark, then run_line: a run's seconds, what rdmashare's devices sent
# and the TCP segments sent since the mark, as one line.
run_mark() {
	run_t0=$SECONDS run_tx0=$(rs_sum tx_bytes) run_segs0=$(out_segs)
}
run_line() {
	echo "run $((SECONDS - run_t0)) s, rdmashare sent $(($(rs_sum tx_bytes) - run_tx0))" \
		"bytes, TCP sent $(($(out_segs) - run_segs0)) segments"
}

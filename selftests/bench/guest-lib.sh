# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2034 # the variables are the sourcing scripts'
#
# Sourced by the guest sides of the benchmarks (run in a guest through
# run-vm.sh): the repository ($top), its user tools ($bin), the guest's
# output directory ($work) and address ($ip), its RDMA device ($dev) and
# that device's packet counter ($pkts), put (a results line), gid_index,
# log, n_of, stop, the counters rs_bytes and tcp_segs, wait_listen and
# rsocket's rstream (rstream_run, rstream_put).

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=$top/userlib/build
work=${RS_WORK:?RS_WORK is not set: run this in a guest through run-vm.sh}
ip=${RS_IP:?RS_IP is not set}
# The RDMA device on $ip, and the packets it sent
dev=rxe0
pkts=/sys/class/infiniband/$dev/ports/1/hw_counters/sent_pkts

# put TOOL SIZE METRIC VALUE: a line of the results ($res) for round $rep.
# shellcheck disable=SC2154 # the sourcing script's
put() { printf '%s\t%s\t%s\t%s\t%s\n' "$rep" "$1" "$2" "$3" "$4" >>"$res"; }

# gid_index DEV: the RoCE v2 GID index of $ip on RDMA device DEV's port 1
# (perftest's -x), a RoCE v1 one if there is no v2; nothing if none.
gid_index() {
	local dev=$1 g want d
	# shellcheck disable=SC2046,SC2183 # the four bytes of the address
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' $(echo "$ip" | tr . ' '))
	d=/sys/class/infiniband/$dev/ports/1
	for g in "$d"/gids/*; do
		[ "$(cat "$g" 2>/dev/null)" = "$want" ] || continue
		g=${g##*/}
		case $(cat "$d/gid_attrs/types/$g" 2>/dev/null) in
		*v2*) echo "$g"; return 0 ;;
		esac
	done
	for g in "$d"/gids/*; do
		[ "$(cat "$g" 2>/dev/null)" = "$want" ] && { echo "${g##*/}"; return 0; }
	done
}

log() { printf '[bench] %s\n' "$*"; }

# rs_bytes: the bytes rdmashare's devices sent; tcp_segs: the TCP segments
# this host sent (/proc/net/snmp's OutSegs).
rs_bytes() {
	local f n=0
	for f in /sys/class/misc/rdmashare/devices/*/stats/tx_bytes; do
		[ -r "$f" ] && n=$((n + $(cat "$f")))
	done
	echo "$n"
}

tcp_segs() {
	awk '$1 == "Tcp:" { if (!h) { for (i = 1; i <= NF; i++) if ($i == "OutSegs") c = i; h = 1 }
		else print $c }' /proc/net/snmp
}

# wait_listen TRANSPORT PORT PRELOADED: until a server listens on PORT (10
# s at most).  Under rdmashare-run (TRANSPORT is PRELOADED) both its TCP
# and its rdmashare listener: a client that connects in between goes over
# TCP.  rsocket's listener (rspreload) is not a socket the kernel lists: a
# second's grace.
wait_listen() {
	local _ listeners=/sys/kernel/debug/rdmashare/listeners
	if [ "$1" = rspreload ]; then
		sleep 1
		return 0
	fi
	for _ in $(seq 1 50); do
		if ss -Hltn "sport = :$2" 2>/dev/null | grep -q . &&
			{ [ "$1" != "$3" ] || [ ! -e "$listeners" ] ||
				grep -qw "$2" "$listeners" 2>/dev/null; }; then
			return 0
		fi
		sleep 0.2
	done
	return 1
}

# n_of KIND SIZE [N]: message (bw) or round-trip (lat) counts per size (N
# for another KIND), times $scale, chosen so that each measurement takes a
# few seconds under TCG (Soft-RoCE moves some 30-80 MB/s there, 30k-140k
# small messages a second): a run of a fraction of a second measures its
# own start more than the steady rate.  Above 64 KiB, the bytes of 64
# KiB's.
n_of() {
	local kind=$1 size=$2 n
	case $kind:$size in
	bw:64) n=150000 ;;
	bw:4096) n=20000 ;;
	bw:65536) n=3000 ;;
	bw:*) n=$((196608000 / size + 1)) ;;
	lat:64) n=5000 ;;
	lat:4096) n=2000 ;;
	lat:65536) n=1000 ;;
	lat:*) n=$((65536000 / size + 1)) ;;
	*) n=${3:?n_of: no count for $kind:$size} ;;
	esac
	awk -v n="$n" -v s="${scale:-1}" 'BEGIN { n = int(n * s); print n < 20 ? 20 : n }'
}

# stop PID [SECONDS]: a server normally exits on its own once its client is
# done; one still there after SECONDS (default 10) is killed.
stop() {
	local _
	for _ in $(seq 1 $((${2:-10} * 5))); do
		kill -0 "$1" 2>/dev/null || { wait "$1" 2>/dev/null || true; return 0; }
		sleep 0.2
	done
	log "server $1 did not exit; killing it"
	kill "$1" 2>/dev/null || true
	for _ in $(seq 1 10); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.2
	done
	kill -9 "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# rstream_run KIND SIZE N PORT LOG: rsocket's rstream, server and client on
# $ip, raw outputs in LOG.server and LOG.client; prints its usec/xfer.
# KIND bw: N messages of SIZE one way, then N back (-C N/2 -I 1); lat: a
# ping-pong of N round trips (-C 1 -I N).  rstream reports Gb/s over both
# directions and usec/xfer = time / (2 I C), half the round trip at C = 1.
rstream_run() {
	local kind=$1 size=$2 n=$3 port=$4 l=$5 spid v='' _ args
	if [ "$kind" = bw ]; then
		args=(-S "$size" -C $(((n + 1) / 2)) -I 1)
	else
		args=(-S "$size" -C 1 -I "$n")
	fi
	echo "rstream ${args[*]}" >"$l.client"
	rstream -p "$port" "${args[@]}" >"$l.server" 2>&1 &
	spid=$!
	sleep 0.5
	# A client started before its server listens fails: again.
	for _ in $(seq 1 20); do
		timeout 300 rstream -s "$ip" -p "$port" "${args[@]}" >>"$l.client" 2>&1 && { v=ok; break; }
		sleep 0.5
	done
	if [ -z "$v" ]; then
		kill "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
		return 1
	fi
	stop "$spid" >&2
	# name bytes xfers iters total time Gb/sec usec/xfer; Gb/sec has two
	# decimals only, so the rate comes from usec/xfer
	v=$(awk '$1 == "custom" && NF == 8 { print $8 }' "$l.client" | tail -n1)
	[ -n "$v" ] && echo "$v"
}

# rstream_put TOOL KIND SIZE USEC: rstream_run's result as put() lines.
rstream_put() {
	if [ "$2" = bw ]; then
		put "$1" "$3" rate_msgps "$(awk -v u="$4" 'BEGIN { printf "%.0f", 1e6 / u }')"
		put "$1" "$3" bw_MBps "$(awk -v u="$4" -v s="$3" 'BEGIN { printf "%.3f", s / u }')"
	else
		put "$1" "$3" lat_mean_us "$4"
	fi
}

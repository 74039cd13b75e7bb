#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench-ps, guest side (ps.sh runs it through run-vm.sh): ps-bench,
# libps's benchmark shaped like ps-lite's, with S servers and W workers,
# each node a process of its own, over every transport in the same run:
#
#   tcp        libps's sockets transport over TCP
#   verbs      libps's raw verbs transport: an RC QP per connection
#   rsocket    the sockets transport with rsocket's librspreload.so
#              preloaded on every node
#   rdmashare  libps's rdmashare transport: its rings, an AC per
#              connection, on the module's shared QPs
#   preload    the sockets transport under rdmashare-run (AC files)
#
# Roles: "one" runs every node in this guest against $RS_IP (rxe0 on
# veth0: RDMA loopback); "peer" runs the servers and "client" the workers
# (worker 0 measures) of two guests on one emulated link, both going
# through the same runs in the same order with the same ports, so that
# they need no side channel (libps's nodes connect again until their
# peer listens; a run that fails on one side fails on the other within
# the timeout).  Under rdmashare-run the other nodes start once server 0
# listens on rdmashare (one guest; a node connecting before that would go
# over TCP).
#
# For each round (RS_BENCH_REPEAT), each S (RS_BENCH_SERVERS), W
# (RS_BENCH_WORKERS), value size (RS_BENCH_SIZES) and mode
# (RS_BENCH_MODES), every transport one after the other: a slow minute
# hits all alike.  Keys per server: 16 at 4 KiB, 256 KiB of values per
# server above that, at least 1 (ps-bench --keys); measured rounds of
# ps-bench: enough for RS_BENCH_SCALE x 64 MB of values moved in all (at
# least 2; the warm-up a tenth of that, at least 1).  The measuring side
# (one, client) writes $RS_WORK/ps.tsv, one line per number: round,
# transport, config (S,W,size,mode), metric, value.  Metrics: ps-bench's
# goodput_MBps (values moved by all workers, both ways for pushpull),
# lat_p50_us, lat_p99_us (worker 0's requests, issue to completion),
# secs (the measured rounds), and around the whole run rxe_pkts (rxe0's
# packets sent), rs_bytes (rdmashare's devices), tcp_segs (TCP segments
# sent), wall_s; in round 1, qps_user and qps_rdmashare, the most RC QPs
# on rxe0 owned by processes and by rdmashare, sampled every 0.3 s
# during the run.  A run that failed has a "fail" line with what it said
# (rsocket's: a row of the table; any other also fails the script).
# Raw outputs: $RS_WORK/ps-logs/r<round>/.
#
# Environment: RS_BENCH_REPEAT (3), RS_BENCH_SCALE (1), RS_BENCH_SERVERS
# ("1 2"), RS_BENCH_WORKERS ("1 2 4 8"), RS_BENCH_SIZES ("4096 4194304"),
# RS_BENCH_MODES (pushpull), RS_BENCH_TRANSPORTS ("tcp verbs rsocket
# rdmashare preload"), RS_BENCH_TIMEOUT (ps-bench's, ms: 60000),
# RS_BENCH_GRACE (seconds the other nodes have to end once worker 0 has,
# the peer's once server 0 has: 20; then they are killed, and the run has
# a fail line), RS_BENCH_RUN_TIMEOUT (seconds a job may take: 4 times
# ps-bench's, plus 60; a job killed then has hung, and is not run again),
# RS_BENCH_RSPRELOAD (librspreload.so's path).

set -euo pipefail

role=${1:-one}
read -r -a servers <<<"${RS_BENCH_SERVERS:-1 2}"
read -r -a workers <<<"${RS_BENCH_WORKERS:-1 2 4 8}"
read -r -a sizes <<<"${RS_BENCH_SIZES:-4096 4194304}"
read -r -a modes <<<"${RS_BENCH_MODES:-pushpull}"
read -r -a transports <<<"${RS_BENCH_TRANSPORTS:-tcp verbs rsocket rdmashare preload}"
rspreload=${RS_BENCH_RSPRELOAD:-/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so}
tmo=${RS_BENCH_TIMEOUT:-60000}
grace=${RS_BENCH_GRACE:-20}
tl=${RS_BENCH_RUN_TIMEOUT:-$((tmo * 4 / 1000 + 60))}
declare -A hung=()
repeat=${RS_BENCH_REPEAT:-3}
scale=${RS_BENCH_SCALE:-1}
# shellcheck source=selftests/bench/guest-lib.sh
. "$(dirname "$0")/guest-lib.sh"
pb=$bin/ps-bench
res=$work/ps.tsv
rep=0
failures=0
case $role in
one) host=$ip ;;
client) host=$RS_PEER_IP ;;
peer) host=$ip ;;
*) log "ps-guest: unknown role '$role'"; exit 2 ;;
esac

# keys SIZE and rounds S W SIZE MODE KEYS: ps-bench's --keys and its --rounds.
keys() { awk -v s="$1" 'BEGIN { k = s <= 4096 ? 16 : int(262144 / s); print k < 1 ? 1 : k }'; }
rounds() {
	awk -v S="$1" -v W="$2" -v s="$3" -v m="$4" -v k="$5" -v x="$scale" 'BEGIN {
		per = W * S * k * s * (m == "pushpull" ? 2 : 1)
		r = int(x * 64e6 / per + 0.5); print r < 2 ? 2 : r }'
}

# rc_qps: the RC QPs on rxe0 now, "USER RDMASHARE" (process-owned, and
# owned by the module: comm [rdmashare]).
rc_qps() {
	rdma resource show qp link "$dev/1" 2>/dev/null |
		awk '/type RC/ { if (/comm \[rdmashare\]/) k++; else if (!/comm \[/) u++ }
			END { print u + 0, k + 0 }'
}

# qp_sampler FILE: the most RC QPs seen, in samples 0.3 s apart till killed.
qp_sampler() {
	local u k mu=0 mk=0
	while :; do
		read -r u k < <(rc_qps)
		[ "$u" -le "$mu" ] || mu=$u
		[ "$k" -le "$mk" ] || mk=$k
		echo "$mu $mk" >"$1"
		sleep 0.3
	done
}

# The command prefix and libps transport of a transport.
pre=() tr=
prefix() {
	case $1 in
	tcp | verbs | rdmashare) pre=() tr=$1 ;;
	rsocket) pre=(env LD_PRELOAD="$rspreload") tr=sockets ;;
	preload) pre=("$bin/rdmashare-run") tr=sockets ;;
	*) log "ps-guest: unknown transport '$1'"; exit 2 ;;
	esac
	[ "$tr" != tcp ] || tr=sockets
}

# reap GRACE N PID... NAME...: wait for the N processes, at most GRACE
# seconds for all; kill those still there then, their names in $stuck.
# 1 if any failed or was killed.
stuck=
reap() {
	local n=$2 end=$((SECONDS + $1)) i rc=0 s=()
	shift 2
	local p=("${@:1:n}") nm=("${@:n+1}")
	for ((i = 0; i < n; i++)); do
		while kill -0 "${p[i]}" 2>/dev/null && [ "$SECONDS" -lt "$end" ]; do
			sleep 0.2
		done
		if kill -0 "${p[i]}" 2>/dev/null; then
			s+=("${nm[i]}")
			kill "${p[i]}" 2>/dev/null || true
		fi
		wait "${p[i]}" || rc=1
	done
	stuck=${s[*]}
	return "$rc"
}

# run_one T S W SIZE MODE PORT: one ps-bench job over transport T, this
# guest's nodes of it.
run_one() {
	local t=$1 S=$2 W=$3 size=$4 mode=$5 port=$6 k n warm cfg l r pids=() names=() st=0 qpid=0
	local out first
	local t0 p0 b0 s0 v
	k=$(keys "$size")
	n=$(rounds "$S" "$W" "$size" "$mode" "$k")
	warm=$(((n + 9) / 10))
	cfg=$S,$W,$size,$mode
	l=$logs/$t-s$S-w$W-$size-$mode
	if [ -n "${hung[$t,$cfg]:-}" ]; then
		[ "$role" = peer ] || put "$t" "$cfg" fail "not run: it hung in round ${hung[$t,$cfg]}"
		return 0
	fi
	prefix "$t"
	local args=(-H "$host" -p "$port" -S "$S" -W "$W" --transport "$tr" --keys "$k" --size "$size"
		--mode "$mode" --rounds "$n" --warmup "$warm" --timeout "$tmo")
	[ "$role" = peer ] || log "$t: S $S W $W size $size $mode: $k keys/server, $n rounds"
	t0=$(date +%s.%N) p0=$(cat "$pkts" 2>/dev/null || echo 0) b0=$(rs_bytes) s0=$(tcp_segs)
	if [ "$rep" = 1 ] && [ "$role" != peer ]; then
		qp_sampler "$l.qps" &
		qpid=$!
	fi
	if [ "$role" != client ]; then
		timeout "$tl" "${pre[@]}" "$pb" --server 0 "${args[@]}" >"$l.server0" 2>&1 &
		first=$!
		# Under rdmashare-run, nobody connects before rdmashare listens.
		[ "$t" != preload ] || wait_listen "$t" "$port" preload ||
			log "$t: server 0 does not listen on rdmashare at $port"
		for ((r = 1; r < S; r++)); do
			timeout "$tl" "${pre[@]}" "$pb" --server "$r" "${args[@]}" >"$l.server$r" 2>&1 &
			pids+=($!)
			names+=("server$r")
		done
	fi
	if [ "$role" != peer ]; then
		for ((r = 1; r < W; r++)); do
			timeout "$tl" "${pre[@]}" "$pb" --worker "$r" "${args[@]}" >"$l.worker$r" 2>&1 &
			pids+=($!)
			names+=("worker$r")
		done
		timeout "$tl" "${pre[@]}" "$pb" --worker 0 "${args[@]}" >"$l.worker0" 2>&1 || st=$?
		[ "$role" = client ] || { pids+=("$first"); names+=(server0); }
	else
		wait "$first" || st=$?
	fi
	# A job that hangs is not run again in later rounds (on both guests: the
	# client's worker 0 and the peer's server 0 both run into the limit).
	[ "$st" != 124 ] || hung[$t,$cfg]=$rep
	# Worker 0 (the peer: server 0) is done: the other nodes have $grace s to
	# end, then they are stuck, and killed.
	reap "$grace" "${#pids[@]}" "${pids[@]}" "${names[@]}" || { [ "$st" != 0 ] || st=1; }
	[ "$qpid" = 0 ] || { kill "$qpid" 2>/dev/null; wait "$qpid" 2>/dev/null || true; }
	[ "$role" != peer ] || return 0

	put "$t" "$cfg" wall_s "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')"
	put "$t" "$cfg" rxe_pkts $(($(cat "$pkts" 2>/dev/null || echo 0) - p0))
	put "$t" "$cfg" rs_bytes $(($(rs_bytes) - b0))
	put "$t" "$cfg" tcp_segs $(($(tcp_segs) - s0))
	if [ -s "$l.qps" ]; then
		read -r v r <"$l.qps"
		put "$t" "$cfg" qps_user "$v"
		put "$t" "$cfg" qps_rdmashare "$r"
	fi
	put "$t" "$cfg" keys "$k"
	put "$t" "$cfg" rounds "$n"
	# ps-bench: goodput G MB/s in T s; latency us p50 A p90 B p99 C max D (N requests)
	out=$(sed -n 's/^ps-bench: goodput \([0-9.]*\) MB\/s in \([0-9.]*\) s; latency us p50 \([0-9]*\) p90 [0-9]* p99 \([0-9]*\) .*/\1 \2 \3 \4/p' \
		"$l.worker0")
	if [ -n "$out" ]; then
		read -r v r k n <<<"$out"
		put "$t" "$cfg" goodput_MBps "$v"
		put "$t" "$cfg" secs "$r"
		put "$t" "$cfg" lat_p50_us "$k"
		put "$t" "$cfg" lat_p99_us "$n"
		log "$t $cfg: $v MB/s, p50 $k us, p99 $n us"
	fi
	if [ -n "$stuck" ]; then
		v="$stuck still running ${grace} s after worker 0 ended: killed"
	elif [ "$st" != 0 ] || [ -z "$out" ]; then
		v=$(cat "$l".* 2>/dev/null | grep -m1 -iE 'ps-bench: [a-z]* [0-9]*: |error|fail|refused|timed out' |
			tr -d '\r\t' | cut -c1-160 || true)
		[ "$st" != 124 ] || v="hung: no result in $tl s, killed${v:+; $v}"
		v=${v:-exit $st, no goodput}
	else
		return 0
	fi
	put "$t" "$cfg" fail "$v"
	# rsocket's failures are rows of the table; any other fails the run.
	if [ "$t" = rsocket ]; then
		log "$t $cfg: $v"
	else
		log "FAILED: $t $cfg: $v"
		failures=$((failures + 1))
	fi
}

[ -x "$pb" ] || { log "no $pb (run make)"; exit 1; }
if [ "$role" != peer ]; then
	printf 'round\ttransport\tconfig\tmetric\tvalue\n' >"$res"
	{
		echo "kernel $(uname -r)"
		echo "role $role"
		echo "date $(date -u +%FT%TZ)"
		echo "cpus $(nproc)"
		echo "scale $scale"
		echo "repeat $repeat"
		echo "qps_per_peer $(cat /sys/class/misc/rdmashare/qps_per_peer 2>/dev/null)"
		echo "rspreload $rspreload"
		grep -m1 'cpu MHz' /proc/cpuinfo || true
		rdma link show 2>&1 || true
	} >"$work/ps-env.txt"
fi
[ -e "$rspreload" ] || log "no $rspreload: the rsocket runs will fail"
log "$role: $(uname -r), $(nproc) CPUs, $dev on $ip, servers at $host, $(date -u +%FT%TZ)"

t_all=$(date +%s)
port=7400
for rep in $(seq 1 "$repeat"); do
	log "round $rep of $repeat"
	logs=$work/ps-logs/r$rep
	mkdir -p "$logs"
	for S in "${servers[@]}"; do
		for W in "${workers[@]}"; do
			for size in "${sizes[@]}"; do
				for mode in "${modes[@]}"; do
					for t in "${transports[@]}"; do
						port=$((port + 1))
						run_one "$t" "$S" "$W" "$size" "$mode" "$port"
					done
				done
			done
		done
	done
done
log "$role: done in $(($(date +%s) - t_all)) s, $failures failure(s)"
[ "$failures" = 0 ]

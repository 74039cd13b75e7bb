#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The scheduler benchmark, guest side (run by sched.sh through run-vm.sh in
# one guest: rxe0 on veth0, RDMA loopback to $RS_IP).  In this one boot, the
# same workload over three ways of sharing the link:
#
#   mutex      mutexqp -m mutex: N threads share ONE verbs RC QP behind a
#              pthread mutex (FaRM style)
#   qp         mutexqp -m qp: one verbs RC QP per thread
#   rdmashare  rsbench: one /dev/rdmashare handle and AC per thread, all ACs
#              multiplexed over the module's one QP to the peer
#
# Throughput: N = 1, 2, 4, 8, 16 bulk senders of 64 B, 4 KiB and 64 KiB
# messages; the server counts bytes per sender over a window in which all
# are backlogged (aggregate MB/s, shares, Jain's index).  Latency: a 64-byte
# ping-pong alone, then behind RS_BENCH_LAT_BULK (default 2) senders of
# 4 MiB messages: mutex, qp, and rdmashare with split on (at credits_per_ac
# 4 and 64) and off.
#
# Results: $RS_WORK/sched.tsv, one number per line: round, kind (tput or
# lat), mode, config, threads, size, metric, value; raw outputs under
# $RS_WORK/sched-logs/r<round>/.
#
# Environment: RS_BENCH_REPEAT (rounds over everything, default 2),
# RS_BENCH_SCALE (multiplies message counts, default 1), RS_BENCH_PARTS
# (default "tput lat"), RS_BENCH_MODES (default "mutex qp rdmashare"),
# RS_BENCH_THREADS (default "1 2 4 8 16"), RS_BENCH_SIZES (default
# "64 4096 65536"), RS_BENCH_CREDITS (credits_per_ac for the throughput
# runs, default 64), RS_BENCH_LAT_BULK (bulk senders behind which the
# ping-pong runs, default 2), RS_BENCH_QPS (qps_per_peer for the whole run;
# default: the module's), RS_BENCH_SYSFS (more tunables for the whole run,
# "name=value ...", e.g. "inflight_max=524288"; restored at the end).

set -euo pipefail

# shellcheck source=selftests/bench/guest-lib.sh
. "$(dirname "$0")/guest-lib.sh"
bin=$top/selftests/build/bench
sys=/sys/class/misc/rdmashare
scale=${RS_BENCH_SCALE:-1}
repeat=${RS_BENCH_REPEAT:-2}
modes=${RS_BENCH_MODES:-mutex qp rdmashare}
threads_list=${RS_BENCH_THREADS:-1 2 4 8 16}
sizes=${RS_BENCH_SIZES:-64 4096 65536}
tput_credits=${RS_BENCH_CREDITS:-64}
lat_bulk=${RS_BENCH_LAT_BULK:-2}
qps=${RS_BENCH_QPS:-}
res=$work/sched.tsv
logroot=$work/sched-logs
logs=$logroot
rep=0
port=7400
failures=0

failed() {
	log "FAILED: $*"
	failures=$((failures + 1))
}

put() {
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$1" "$2" "$3" "$4" "$5" "$6" "$7" >>"$res"
}

# Total data messages of one throughput point, over all senders: about the
# same bytes whatever N, a few seconds under TCG.
total_msgs() {
	local n
	case $1 in
	64) n=24000 ;;
	4096) n=24000 ;;
	65536) n=3000 ;;
	*) n=$(( 64000000 / $1 )) ;;
	esac
	awk -v n="$n" -v s="$scale" 'BEGIN { print int(n * s) }'
}

# wait_for FILE PATTERN: until a server says it listens (20 s at most).
wait_for() {
	local _
	for _ in $(seq 1 100); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}

sysfs_set() {
	echo "$2" >"$sys/$1" || { failed "cannot set $1=$2"; return 1; }
}

# run MODE NAME CLIENT-ARGS...: one server, one client; NAME.{server,client}
# in $logs.  Returns non-zero when either failed.
run() {
	local mode=$1 name=$2 l=$logs/$2 spid rc=0 prog
	shift 2
	port=$((port + 1))
	case $mode in
	rdmashare) prog=$bin/rsbench ;;
	*) prog=$bin/mutexqp ;;
	esac
	"$prog" -s --once -p "$port" >"$l.server" 2>&1 &
	spid=$!
	if ! wait_for "$l.server" listening; then
		kill "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
		return 1
	fi
	case $mode in
	rdmashare) set -- "$@" ;;
	*) set -- -m "$mode" "$@" ;;
	esac
	timeout 300 "$prog" -c "$ip" -p "$port" "$@" >"$l.client" 2>&1 || rc=$?
	stop "$spid" 15	# it exits on its own once its client is done (--once)
	[ "$rc" = 0 ] || return "$rc"
	grep -q '^end$' "$l.server"
}

# rec FILE KEY FIELD: the value after FIELD in FILE's first record KEY.
rec() {
	awk -v k="$2" -v f="$3" '$1 == k { for (i = 2; i < NF; i++) if ($i == f) { print $(i + 1); exit } }' "$1"
}

# ---------------------------------------------------------------------------

tput_point() {
	local mode=$1 t=$2 size=$3 n name l cfg v i
	n=$(( $(total_msgs "$size") / t ))
	[ "$n" -ge 50 ] || n=50
	name=tput-$mode-t$t-l$size
	l=$logs/$name
	cfg=cr$tput_credits
	log "throughput: $mode, $t sender(s) x $n x $size B"
	if ! run "$mode" "$name" -t "$t" -l "$size" -n "$n"; then
		failed "throughput $mode t$t l$size (see $l.*)"
		return
	fi
	put tput "$mode" "$cfg" "$t" "$size" MBps "$(rec "$l.server" window MBps)"
	put tput "$mode" "$cfg" "$t" "$size" msgps "$(rec "$l.server" window msgps)"
	put tput "$mode" "$cfg" "$t" "$size" jain "$(rec "$l.server" window jain)"
	put tput "$mode" "$cfg" "$t" "$size" window_valid "$(rec "$l.server" window valid)"
	put tput "$mode" "$cfg" "$t" "$size" window_s "$(rec "$l.server" window elapsed_s)"
	put tput "$mode" "$cfg" "$t" "$size" total_MBps "$(rec "$l.server" total MBps)"
	put tput "$mode" "$cfg" "$t" "$size" client_s "$(rec "$l.client" client_total elapsed_s)"
	for ((i = 0; i < t; i++)); do
		v=$(awk -v i="$i" '$1 == "sender" && $2 == i { print $4; exit }' "$l.server")
		put tput "$mode" "$cfg" "$t" "$size" "bytes$i" "${v:-0}"
	done
	v=$(rec "$l.server" errors errors)
	if [ -n "$v" ] && [ "$v" != 0 ]; then
		failed "throughput $mode t$t l$size: the server counted $v errors"
		put tput "$mode" "$cfg" "$t" "$size" errors "$v"
	fi
}

bench_tput() {
	local size t mode
	sysfs_set credits_per_ac "$tput_credits"
	sysfs_set split 1
	for size in $sizes; do
		for t in $threads_list; do
			for mode in $modes; do
				tput_point "$mode" "$t" "$size"
			done
		done
	done
}

# lat_point MODE CONFIG BULK: 64-byte ping-pong, alone (BULK 0) or behind
# BULK senders of 4 MiB messages.
lat_point() {
	local mode=$1 cfg=$2 bulk=$3 name l args n
	name=lat-$mode-$cfg-b$bulk
	l=$logs/$name
	if [ "$bulk" = 0 ]; then
		n=$(awk -v s="$scale" 'BEGIN { print int(2000 * s) }')
		args=(-t 0 -P --pings "$n")
		log "latency: $mode ($cfg), 64 B ping-pong alone, $n round trips"
	else
		# 4 MiB messages, 2 outstanding per sender; the ping-pong
		# stops when the first bulk sender is done.
		n=$(awk -v s="$scale" -v b="$bulk" 'BEGIN { n = int(24 * s / b); print n < 4 ? 4 : n }')
		args=(-t "$bulk" -l 4M -n "$n" -d 2 -P --pings 1000000)
		log "latency: $mode ($cfg), 64 B ping-pong behind $bulk x $n x 4 MiB"
	fi
	if ! run "$mode" "$name" "${args[@]}"; then
		failed "latency $mode $cfg bulk $bulk (see $l.*)"
		return
	fi
	put lat "$mode" "$cfg" "$bulk" 64 p50_us "$(rec "$l.client" pingpong p50_us)"
	put lat "$mode" "$cfg" "$bulk" 64 p99_us "$(rec "$l.client" pingpong p99_us)"
	put lat "$mode" "$cfg" "$bulk" 64 mean_us "$(rec "$l.client" pingpong mean_us)"
	put lat "$mode" "$cfg" "$bulk" 64 max_us "$(rec "$l.client" pingpong max_us)"
	put lat "$mode" "$cfg" "$bulk" 64 count "$(rec "$l.client" pingpong count)"
	if [ "$bulk" != 0 ]; then
		put lat "$mode" "$cfg" "$bulk" 64 bulk_MBps "$(rec "$l.server" total MBps)"
	fi
}

bench_lat() {
	local mode
	# Idle first, then behind bulk; the same settings as in the runs
	# with bulk, so that only the bulk differs.
	for mode in $modes; do
		case $mode in
		rdmashare)
			sysfs_set split 1
			sysfs_set credits_per_ac 4
			lat_point rdmashare split1-cr4 0
			lat_point rdmashare split1-cr4 "$lat_bulk"
			sysfs_set credits_per_ac 64
			lat_point rdmashare split1-cr64 0
			lat_point rdmashare split1-cr64 "$lat_bulk"
			sysfs_set split 0
			sysfs_set credits_per_ac 4
			lat_point rdmashare split0-cr4 0
			lat_point rdmashare split0-cr4 "$lat_bulk"
			sysfs_set split 1
			;;
		*)
			lat_point "$mode" verbs 0
			lat_point "$mode" verbs "$lat_bulk"
			;;
		esac
	done
}

# ---------------------------------------------------------------------------

for f in mutexqp rsbench; do
	[ -x "$bin/$f" ] || { log "FAILED: no $bin/$f (run make -C selftests bench)"; exit 1; }
done
saved_split=$(cat "$sys/split")
saved_credits=$(cat "$sys/credits_per_ac")
# Before the first AC: QPs, once up, stay for the boot.
[ -z "$qps" ] || sysfs_set qps_per_peer "$qps" || exit 1
saved_sysfs=()
for kv in ${RS_BENCH_SYSFS:-}; do
	saved_sysfs+=("${kv%%=*}=$(cat "$sys/${kv%%=*}")") || exit 1
	sysfs_set "${kv%%=*}" "${kv#*=}" || exit 1
done

log "$(uname -r), $(nproc) CPUs, rxe0 on $ip, scale $scale, $(date -u +%FT%TZ)"
{
	echo "kernel $(uname -r)"
	echo "date $(date -u +%FT%TZ)"
	echo "cpus $(nproc)"
	echo "scale $scale"
	echo "repeat $repeat"
	echo "tput_credits_per_ac $tput_credits"
	echo "lat_bulk_senders $lat_bulk"
	grep -m1 'model name' /proc/cpuinfo || true
	for f in chunk_size sched_mode sched_quantum sched_latency_quantum qps_per_peer \
		$(for kv in ${RS_BENCH_SYSFS:-}; do echo "${kv%%=*}"; done); do
		echo "$f $(cat "$sys/$f")"
	done
	rdma link show 2>&1 || true
} >"$work/sched-env.txt"
printf 'round\tkind\tmode\tconfig\tthreads\tsize\tmetric\tvalue\n' >"$res"

t0=$(date +%s)
for rep in $(seq 1 "$repeat"); do
	log "round $rep of $repeat"
	logs=$logroot/r$rep
	mkdir -p "$logs"
	for part in ${RS_BENCH_PARTS:-tput lat}; do
		"bench_$part"
	done
done
echo "$saved_split" >"$sys/split"
echo "$saved_credits" >"$sys/credits_per_ac"
for kv in "${saved_sysfs[@]}"; do
	echo "${kv#*=}" >"$sys/${kv%%=*}"
done
log "done in $(( $(date +%s) - t0 ))s, $failures failure(s); results in $res"
[ "$failures" = 0 ]

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The transport benchmark, guest side (run by transport.sh through run-vm.sh
# in one guest: rxe0 on veth0, RDMA loopback to $RS_IP).  Measures, one after
# the other and in this one boot:
#
#   perftest   ib_send_bw, ib_send_lat: one RC QP, raw verbs (the baseline)
#   kqp        the kernel-QP floor: rs_kqp_floor.ko ($RS_BENCH_FLOOR, built
#              by transport.sh for this kernel) streams and ping-pongs
#              between two kernel RC QPs, its threads sleeping until a CQ
#              event (kqp-sleep) or polling the CQ (kqp-poll)
#   rdmashare  rs-stream on 1 AC and on 8 ACs from 4 processes; at 64 B
#              also 1024 ACs from 8 processes, at 64 KiB also 1 AC with
#              pullup_max 1 MiB (every chunk copied, the zero copy's
#              baseline); rs-pingpong, at 64 B also with busy_poll_us
#              1000.  rs-stream's server has
#              RS_BENCH_SLOTS (default 512) receive slots: the receives
#              ib_send_bw posts (its default rx depth)
#   rds        qperf rds_bw, rds_lat (the kernel's RDS over rxe, rds_rdma)
#   rsocket    rstream (librdmacm's rsockets)
#   tcp        qperf tcp_bw, tcp_lat to the same address
#
# at 64 B, 4 KiB and 64 KiB.  Results go to $RS_WORK/transport.tsv, one
# line per number: round, tool, size, metric, value.  Metrics: bw_MBps (10^6
# bytes/s of payload), rate_msgps (messages/s), lat_p50_us and lat_mean_us
# (one way: half the round trip, as perftest, qperf and rstream report it),
# {bw,lat}_wall_s (the measurement's wall time, servers included) and
# {bw,lat}_rxe_pkts (packets rxe0 sent meanwhile: proof that the traffic
# went through Soft-RoCE, or not).  Raw outputs are in
# $RS_WORK/transport-logs/r<round>/.
#
# Every measurement is repeated RS_BENCH_REPEAT times (default 3, in rounds
# over all tools, so that drift hits every tool alike): one line per round.
# RS_BENCH_SCALE (default 1) multiplies every message and iteration count;
# RS_BENCH_TIME (default 3) is the duration of qperf's timed tests;
# RS_BENCH_PARTS (default "perftest kqp rdmashare qperf rsocket") picks tools
# and RS_BENCH_SIZES (default "64 4096 65536") the sizes.
# A bandwidth measurement also records bw_msgs, the messages it moved, so
# that bw_rxe_pkts / bw_msgs is rxe's packets per message.

set -euo pipefail

# shellcheck source=selftests/bench/guest-lib.sh
. "$(dirname "$0")/guest-lib.sh"
scale=${RS_BENCH_SCALE:-1}
repeat=${RS_BENCH_REPEAT:-3}
qtime=${RS_BENCH_TIME:-3}
rs_slots=${RS_BENCH_SLOTS:-512}
# The 64 B rows: slots sized for small messages (RDMASHARE_SETUP_SLOT_SIZE),
# as many as a file may have (max_rx_slots), the same memory as the other
# rows' (32768 x 256 B = 512 x 16 KiB): a 64 B message takes a whole slot,
# so 16 KiB slots would leave eight ACs 64 messages in flight each, and
# 1024 ACs would share 512.
rs_small_slots=${RS_BENCH_SMALL_SLOTS:-32768}
rs_small_slot_size=${RS_BENCH_SMALL_SLOT_SIZE:-256}
read -r -a sizes <<<"${RS_BENCH_SIZES:-64 4096 65536}"
res=$work/transport.tsv
logroot=$work/transport-logs
logs=$logroot
rep=0
failures=0

printf 'round\ttool\tsize\tmetric\tvalue\n' >"$res"

# The counters around one measurement.
t_start=0
p_start=0
begin() {
	t_start=$(date +%s.%N)
	p_start=$(cat "$pkts" 2>/dev/null || echo 0)
}
end() {
	local tool=$1 size=$2 kind=$3 t p
	t=$(date +%s.%N)
	p=$(cat "$pkts" 2>/dev/null || echo 0)
	put "$tool" "$size" "${kind}_wall_s" "$(awk -v a="$t_start" -v b="$t" 'BEGIN { printf "%.2f", b - a }')"
	put "$tool" "$size" "${kind}_rxe_pkts" $((p - p_start))
}

# put_rtt TOOL SIZE "P50 MEAN" UNITS: a ping-pong's round trips, UNITS to
# the microsecond, as one-way latencies (half of them).
put_rtt() {
	put "$1" "$2" lat_p50_us "$(awk -v x="${3% *}" -v u="$4" 'BEGIN { printf "%.2f", x / u / 2 }')"
	put "$1" "$2" lat_mean_us "$(awk -v x="${3#* }" -v u="$4" 'BEGIN { printf "%.2f", x / u / 2 }')"
}

failed() {
	log "FAILED: $*"
	failures=$((failures + 1))
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

# retry N CMD...: a client started before its server listens fails; again.
retry() {
	local n=$1 _
	shift
	for _ in $(seq 1 "$n"); do
		"$@" && return 0
		sleep 0.5
	done
	return 1
}

# ---------------------------------------------------------------------------
# perftest: ib_send_bw and ib_send_lat, the verbs baseline.

perftest_conn=()
perftest_port=18515

perftest() {
	local prog=$1 size=$2 n=$3 l=$logs/$1-$2 spid rc=0
	perftest_port=$((perftest_port + 1))
	"$prog" -d "$dev" "${perftest_conn[@]}" -F -p "$perftest_port" -s "$size" -n "$n" \
		>"$l.server" 2>&1 &
	spid=$!
	sleep 0.5
	retry 20 timeout 120 "$prog" -d "$dev" "${perftest_conn[@]}" -F -p "$perftest_port" \
		-s "$size" -n "$n" "$ip" >"$l.client" 2>&1 || rc=$?
	stop "$spid"
	return $rc
}

bench_perftest() {
	local size n l v
	for size in "${sizes[@]}"; do
		n=$(n_of bw "$size")
		l=$logs/ib_send_bw-$size.client
		log "perftest: ib_send_bw -s $size -n $n"
		begin
		if perftest ib_send_bw "$size" "$n"; then
			end perftest "$size" bw
			put perftest "$size" bw_msgs "$n"
			# #bytes #iterations BW-peak BW-average[MiB/s] MsgRate[Mpps]
			v=$(awk -v s="$size" '$1 == s && NF == 5 { print $5 }' "$l" | tail -n1)
			if [ -z "$v" ]; then
				failed "ib_send_bw $size: no result line"
			elif awk -v r="$v" 'BEGIN { exit !(r > 0) }'; then
				put perftest "$size" rate_msgps "$(awk -v r="$v" 'BEGIN { printf "%.0f", r * 1e6 }')"
				put perftest "$size" bw_MBps "$(awk -v r="$v" -v s="$size" 'BEGIN { printf "%.2f", r * s }')"
			else
				# On a loaded host its client has printed 0 for a run that
				# moved every message (its server a rate): no number.
				log "perftest: ib_send_bw $size: the client reported 0 msg/s, not recorded"
			fi
		else
			failed "ib_send_bw $size"
		fi

		n=$(n_of lat "$size")
		l=$logs/ib_send_lat-$size.client
		log "perftest: ib_send_lat -s $size -n $n"
		begin
		if perftest ib_send_lat "$size" "$n"; then
			end perftest "$size" lat
			# #bytes #iter t_min t_max t_typical t_avg t_stdev 99% 99.9%
			v=$(awk -v s="$size" '$1 == s && NF == 9 { print $5, $6 }' "$l" | tail -n1)
			if [ -n "$v" ]; then
				put perftest "$size" lat_p50_us "${v% *}"
				put perftest "$size" lat_mean_us "${v#* }"
			else
				failed "ib_send_lat $size: no result line"
			fi
		else
			failed "ib_send_lat $size"
		fi
	done
}

# ---------------------------------------------------------------------------
# The kernel-QP floor: rs_kqp_floor.ko's debugfs file runs one command per
# write, in the writing thread, and its result is read back (see its
# main.c).  The stream's window and receives are ib_send_bw's tx and rx
# depths (128, 512).

kqp_ctl=/sys/kernel/debug/rs_kqp_floor/run
kqp_port=18870
kqp_v=

# kqp_run LOG CMD...: one command on $ip; its result line is in LOG.
kqp_run() {
	local l=$1
	shift
	kqp_port=$((kqp_port + 1))
	echo "$* addr=$ip port=$kqp_port" >"$l"
	if ! echo "$* addr=$ip port=$kqp_port" 2>>"$l" >"$kqp_ctl"; then
		cat "$kqp_ctl" >>"$l"
		return 1
	fi
	cat "$kqp_ctl" >>"$l"
}

# kqp_one KIND SIZE WAIT: one stream or pingpong of the floor, measured as
# the other tools are; its two numbers in $kqp_v: msg/s and MB/s, or the
# round trip's p50 and mean in ns.
kqp_one() {
	local kind=$1 size=$2 wait=$3 m=lat n l
	# ...: rtt_ns min=A p50=B p99=C max=D mean=E
	local re='s/.* p50=\([0-9]*\) .* mean=\([0-9]*\)$/\1 \2/p'
	if [ "$kind" = stream ]; then
		m=bw
		# ...: msgs=M bytes=B ns=T msgps=Q MBps=F
		re='s/.* msgps=\([0-9]*\) MBps=\([0-9.]*\)$/\1 \2/p'
	fi
	n=$(n_of $m "$size")
	l=$logs/kqp-$kind-$wait-$size
	kqp_v=
	log "kqp: $kind size=$size count=$n wait=$wait"
	begin
	if ! kqp_run "$l" "$kind" size="$size" count="$n" wait="$wait"; then
		failed "kqp $kind $size $wait: $(tail -n1 "$l")"
		return 1
	fi
	end "kqp-$wait" "$size" $m
	[ $m = lat ] || put "kqp-$wait" "$size" bw_msgs "$n"
	kqp_v=$(sed -n "$re" "$l")
	[ -n "$kqp_v" ] || { failed "kqp $kind $size $wait: no result line"; return 1; }
}

bench_kqp() {
	local size wait
	if [ ! -e /sys/module/rs_kqp_floor ] &&
		! insmod "${RS_BENCH_FLOOR:-no RS_BENCH_FLOOR}" >"$logs/insmod-kqp" 2>&1; then
		failed "kqp: insmod ${RS_BENCH_FLOOR:-(RS_BENCH_FLOOR not set)}"
		return
	fi
	for size in "${sizes[@]}"; do
		for wait in sleep poll; do
			if kqp_one stream "$size" "$wait"; then
				put "kqp-$wait" "$size" rate_msgps "${kqp_v% *}"
				put "kqp-$wait" "$size" bw_MBps "${kqp_v#* }"
			fi
			if kqp_one pingpong "$size" "$wait"; then
				put_rtt "kqp-$wait" "$size" "$kqp_v" 1000
			fi
		done
	done
}

# ---------------------------------------------------------------------------
# rdmashare: rs-stream (server's count) and rs-pingpong.

stream_port=7500

rs_stream() {
	local tool=$1 acs=$2 procs=$3 size=$4 slots=${5:-$rs_slots} slot_size=${6:-0} n l spid v
	n=$(n_of bw "$size")
	n=$(( (n + acs - 1) / acs ))
	# Many ACs: enough messages each that the stream outlasts the setup.
	[ "$n" -ge 64 ] || [ "$acs" -lt 64 ] || n=64
	l=$logs/$tool-$size
	stream_port=$((stream_port + 1))
	log "$tool: rs-stream -a $acs -P $procs -l $size -n $n (per AC), $slots slots of $slot_size bytes"
	begin
	"$bin/rs-stream" -s -p "$stream_port" -a "$acs" -r "$slots" -S "$slot_size" >"$l.server" 2>&1 &
	spid=$!
	if ! wait_for "$l.server" listening; then
		failed "$tool $size: server did not start"
		kill "$spid" 2>/dev/null || true
		return
	fi
	if ! timeout 300 "$bin/rs-stream" -c "$ip" -p "$stream_port" -a "$acs" -P "$procs" \
		-l "$size" -n "$n" >"$l.client" 2>&1; then
		failed "$tool $size: client"
	fi
	stop "$spid"
	end "$tool" "$size" bw
	put "$tool" "$size" bw_msgs $((n * acs))
	# received M messages, B bytes on A ACs in T s: X MB/s, Y msg/s[, ERRORS]
	v=$(sed -n 's/.* s: \([0-9.]*\) MB\/s, \([0-9]*\) msg\/s\(, ERRORS\)*$/\1 \2/p' "$l.server")
	if [ -z "$v" ]; then
		failed "$tool $size: no result line"
		return
	fi
	# The server checks every message's sequence number: the numbers of a
	# run with a message out of order or a failed receive are kept, marked,
	# and the benchmark fails.
	if grep -q ERRORS "$l.server"; then
		failed "$tool $size: rs-stream's server reports ERRORS"
		put "$tool" "$size" errors 1
	fi
	# MB/s from the message rate: the printed MB/s has one decimal only
	put "$tool" "$size" rate_msgps "${v#* }"
	put "$tool" "$size" bw_MBps "$(awk -v r="${v#* }" -v s="$size" 'BEGIN { printf "%.3f", r * s / 1e6 }')"
}

rs_pingpong() {
	local size=$1 tool=${2:-rdmashare-1ac} n l spid v
	n=$(n_of lat "$size")
	l=$logs/rs-pingpong-$tool-$size
	stream_port=$((stream_port + 1))
	log "rdmashare: rs-pingpong -l $size -n $n"
	begin
	"$bin/rs-pingpong" -s -p "$stream_port" >"$l.server" 2>&1 &
	spid=$!
	if ! wait_for "$l.server" listening; then
		failed "rs-pingpong $size: server did not start"
		kill "$spid" 2>/dev/null || true
		return
	fi
	if ! timeout 300 "$bin/rs-pingpong" -c "$ip" -p "$stream_port" -l "$size" -n "$n" \
		>"$l.client" 2>&1; then
		failed "rs-pingpong $size: client"
	fi
	stop "$spid"
	end "$tool" "$size" lat
	# rtt us min A p50 B p99 C max D mean E: one way is half of it
	v=$(sed -n 's/.* p50 \([0-9.]*\) .* mean \([0-9.]*\),.*/\1 \2/p' "$l.client")
	if [ -z "$v" ]; then
		failed "rs-pingpong $size: no result line"
		return
	fi
	put_rtt "$tool" "$size" "$v" 1
}

bench_rdmashare() {
	local size pullup=/sys/class/misc/rdmashare/pullup_max old
	local busy=/sys/class/misc/rdmashare/busy_poll_us
	local slots
	for size in "${sizes[@]}"; do
		slots=("$rs_slots" 0)
		[ "$size" != 64 ] || slots=("$rs_small_slots" "$rs_small_slot_size")
		rs_stream rdmashare-1ac 1 1 "$size" "${slots[@]}"
		rs_stream rdmashare-8ac 8 4 "$size" "${slots[@]}"
		[ "$size" != 64 ] ||
			rs_stream rdmashare-1024ac 1024 8 "$size" "${slots[@]}"
		if [ "$size" = 65536 ]; then
			old=$(cat "$pullup")
			echo 1048576 >"$pullup"
			rs_stream rdmashare-1ac-copy 1 1 "$size"
			echo "$old" >"$pullup"
		fi
		rs_pingpong "$size"
		if [ "$size" = 64 ]; then
			# Both ends' waits poll the CQ for up to 1 ms first.
			old=$(cat "$busy")
			echo 1000 >"$busy"
			rs_pingpong "$size" rdmashare-1ac-bp
			echo "$old" >"$busy"
		fi
	done
}

# ---------------------------------------------------------------------------
# qperf: RDS over rxe (rds_rdma) and TCP.

# qperf_val FILE KEY: a value in 10^6 bytes/s or microseconds.
qperf_val() {
	awk -v k="$2" '$1 == k && $2 == "=" {
		v = $3; u = $4
		if (u ~ /^GB/) v *= 1000; else if (u ~ /^KB/) v /= 1000
		else if (u ~ /^bytes/) v /= 1e6
		else if (u == "ms") v *= 1000; else if (u == "ns") v /= 1000
		else if (u == "sec" || u == "s") v *= 1e6
		printf "%.2f\n", v
	}' "$1" | tail -n1
}

qperf_one() {
	local tool=$1 test=$2 size=$3 l=$logs/qperf-$2-$3 v
	log "$tool: qperf -m $size -t $qtime $test"
	begin
	# The server sometimes refuses the connection right after the previous
	# test ("connect failed"): try again.
	if ! retry 5 timeout $((qtime * 4 + 30)) qperf "$ip" -ws 10 -t "$qtime" -m "$size" \
		"$test" >"$l" 2>&1; then
		failed "qperf $test $size"
		return
	fi
	end "$tool" "$size" "${test#*_}"
	case $test in
	*_bw)
		v=$(qperf_val "$l" bw)
		[ -n "$v" ] || { failed "qperf $test $size: no result"; return; }
		put "$tool" "$size" bw_MBps "$v"
		put "$tool" "$size" rate_msgps "$(awk -v b="$v" -v s="$size" 'BEGIN { printf "%.0f", b * 1e6 / s }')"
		;;
	*_lat)
		v=$(qperf_val "$l" latency)
		[ -n "$v" ] || { failed "qperf $test $size: no result"; return; }
		put "$tool" "$size" lat_mean_us "$v"
		;;
	esac
}

bench_qperf() {
	local size qpid rds=1
	if ! modprobe rds_rdma >"$logs/modprobe-rds_rdma" 2>&1; then
		failed "modprobe rds_rdma"
		rds=0
	fi
	qperf >"$logs/qperf-server" 2>&1 &
	qpid=$!
	sleep 1
	for size in "${sizes[@]}"; do
		if [ $rds = 1 ]; then
			qperf_one rds rds_bw "$size"
			qperf_one rds rds_lat "$size"
		fi
		qperf_one tcp tcp_bw "$size"
		qperf_one tcp tcp_lat "$size"
	done
	kill "$qpid" 2>/dev/null || true
	wait "$qpid" 2>/dev/null || true
}

# ---------------------------------------------------------------------------
# rsocket: rstream, bandwidth and latency (rstream_run).

rstream_port=7600

rstream_one() {
	local kind=$1 size=$2 n v
	n=$(n_of "$kind" "$size")
	rstream_port=$((rstream_port + 1))
	log "rsocket: rstream $kind -S $size, $n messages"
	begin
	if ! v=$(rstream_run "$kind" "$size" "$n" "$rstream_port" "$logs/rstream-$kind-$size"); then
		failed "rstream $kind $size"
		return
	fi
	end rsocket "$size" "$kind"
	rstream_put rsocket "$kind" "$size" "$v"
}

bench_rsocket() {
	local size
	for size in "${sizes[@]}"; do
		rstream_one bw "$size"
		rstream_one lat "$size"
	done
}

# ---------------------------------------------------------------------------

log "$(uname -r), $(nproc) CPUs, $dev on $ip, scale $scale, $(date -u +%FT%TZ)"
{
	echo "kernel $(uname -r)"
	echo "date $(date -u +%FT%TZ)"
	echo "cpus $(nproc)"
	echo "scale $scale"
	echo "repeat $repeat"
	grep -m1 'cpu MHz' /proc/cpuinfo || true
	echo "qperf_time $qtime"
	rdma link show 2>&1 || true
} >"$work/transport-env.txt"

gidx=$(gid_index "$dev" || true)
if [ -n "$gidx" ]; then
	perftest_conn=(-x "$gidx")
	log "perftest: GID index $gidx"
else
	perftest_conn=(-R)
	log "perftest: no GID for $ip found, using rdma_cm (-R)"
fi

t0=$(date +%s)
for rep in $(seq 1 "$repeat"); do
	log "round $rep of $repeat"
	logs=$logroot/r$rep
	mkdir -p "$logs"
	for part in ${RS_BENCH_PARTS:-perftest kqp rdmashare qperf rsocket}; do
		"bench_$part"
	done
done
# The floor's module unloads cleanly, as rdmashare's must.
if [ -e /sys/module/rs_kqp_floor ] && ! rmmod rs_kqp_floor >"$logroot/rmmod-kqp" 2>&1; then
	failed "rmmod rs_kqp_floor: $(cat "$logroot/rmmod-kqp")"
fi
log "done in $(( $(date +%s) - t0 ))s, $failures failure(s); results in $res"
[ "$failures" = 0 ]

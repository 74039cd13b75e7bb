#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The sockets benchmark, guest side (run by sockets.sh through run-vm.sh in
# one guest: rxe0 on veth0, RDMA loopback to $RS_IP).  Unmodified TCP
# programs, each server and client on $RS_IP (127.0.0.1 has no RDMA
# device), in this one boot:
#
#   tcp        plain TCP (the baseline; a local address, so the kernel's
#              loopback)
#   rdmashare  the same program under rdmashare-run (librdmashare-preload.so)
#   rspreload  the same program with rsocket's librspreload.so preloaded
#              (iperf3 and sockperf only)
#
# with these programs:
#
#   iperf3     one stream, -t RS_BENCH_TIME, -l SIZE (its write size), -J:
#              the server's received bytes
#   sockperf   ping-pong (pp: one-way latency, p50 and mean) and throughput
#              (tp: the client's message rate), -m SIZE, -t RS_BENCH_TIME;
#              a new server for each run.  1 MiB is 1048575 B for sockperf
#              (its largest message)
#   redis      redis-server and redis-benchmark -t set,get -q, plain (50
#              connections, one request in flight each: "size" 1) and
#              with -P 16 ("size" 16); requests per second
#
# and, for comparison, in the same rounds:
#
#   rstream    rsocket's own rstream, bandwidth (-C N -I 1: N messages one
#              way, then N back) and latency (-C 1 -I N), as
#              transport-guest.sh runs it
#   rs-stream  rdmashare's stream on 1 AC file (-F: a write(2) per message,
#              read(2) at the server): what the preload adds to AC files;
#              and with iperf3's calls (-F -I: a poll(2) before each write
#              and read, reads of one message), the same calls as iperf3
#              under the preload makes; and rs-stream on plain sockets
#              under rdmashare-run (-T, and -T -I): the same program and
#              calls as -F and -F -I, its AC files the preload's, so that
#              what sets the two apart is the preload alone
#   zcopy      rs-stream -F again, its writes copied (zcopy_min 0) and sent
#              from the writer's pages (zcopy_min at the write size), at
#              RS_BENCH_ZC_SIZES (default 16 KiB to 4 MiB): the crossover
#
# at 64 B, 4 KiB, 64 KiB and 1 MiB (RS_BENCH_SIZES).  Once, before the
# rounds, SMC-R as a new user would try it (modprobe smc, an AF_SMC stream
# to $RS_IP, no smc-tools): whether rxe0 carried it.
#
# Results go to $RS_WORK/sockets.tsv, one line per number: round, tool,
# size, metric, value.  tool is PROGRAM-TRANSPORT (iperf3-tcp,
# sockperf-rdmashare, ...), rstream, rs-stream-files, rs-stream-iperf,
# rs-stream-preload, rs-stream-preload-iperf, rs-stream-copy or
# rs-stream-zcopy.  Metrics: bw_MBps
# (10^6 bytes/s of payload), rate_msgps, lat_p50_us and lat_mean_us (one
# way: half the round trip), tp_MBps and tp_rate_msgps (sockperf's
# throughput mode), set_rps and get_rps (redis), bw_bytes (what the
# stream moved), and per measurement KIND (bw, tp, lat, redis)
# KIND_rxe_pkts (packets rxe0 sent),
# KIND_rs_bytes (bytes rdmashare's devices sent), KIND_tcp_segs (TCP
# segments sent, /proc/net/snmp's OutSegs) and KIND_wall_s.  A measurement
# that failed has a line with metric "fail" and, as its value, what the
# program said (for the expected failures of rspreload and SMC-R, a row of
# the table, not a failure of the benchmark).  Raw outputs are in
# $RS_WORK/sockets-logs/r<round>/.
#
# Environment: RS_BENCH_REPEAT (rounds over everything, default 3),
# RS_BENCH_TIME (seconds of iperf3 and sockperf, default 3), RS_BENCH_SCALE
# (multiplies the message and request counts, default 1), RS_BENCH_SIZES
# (default "64 4096 65536 1048576"), RS_BENCH_PARTS (default "iperf3
# sockperf redis rstream rsstream zcopy"), RS_BENCH_TRANSPORTS (default "tcp
# rdmashare rspreload"), RS_BENCH_SMC (default 1: the SMC-R try).

set -euo pipefail

# shellcheck source=selftests/bench/guest-lib.sh
. "$(dirname "$0")/guest-lib.sh"
scale=${RS_BENCH_SCALE:-1}
repeat=${RS_BENCH_REPEAT:-3}
qtime=${RS_BENCH_TIME:-3}
read -r -a sizes <<<"${RS_BENCH_SIZES:-64 4096 65536 1048576}"
read -r -a transports <<<"${RS_BENCH_TRANSPORTS:-tcp rdmashare rspreload}"
res=$work/sockets.tsv
logroot=$work/sockets-logs
logs=$logroot
rep=0
sys=/sys/class/misc/rdmashare
rspreload=${RS_BENCH_RSPRELOAD:-/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so}
failures=0
port=9000

printf 'round\ttool\tsize\tmetric\tvalue\n' >"$res"

# ---------------------------------------------------------------------------
# Counters around one measurement (guest-lib.sh's): rxe0's packets,
# rdmashare's bytes, TCP's segments, the wall time.

t_start=0 p_start=0 b_start=0 s_start=0
begin() {
	t_start=$(date +%s.%N)
	p_start=$(cat "$pkts" 2>/dev/null || echo 0)
	b_start=$(rs_bytes)
	s_start=$(tcp_segs)
}
end() {
	local tool=$1 size=$2 kind=$3 t
	t=$(date +%s.%N)
	put "$tool" "$size" "${kind}_wall_s" "$(awk -v a="$t_start" -v b="$t" 'BEGIN { printf "%.2f", b - a }')"
	put "$tool" "$size" "${kind}_rxe_pkts" $(($(cat "$pkts" 2>/dev/null || echo 0) - p_start))
	put "$tool" "$size" "${kind}_rs_bytes" $(($(rs_bytes) - b_start))
	put "$tool" "$size" "${kind}_tcp_segs" $(($(tcp_segs) - s_start))
}

# fail TOOL SIZE LOG WHAT: a measurement failed; its line says what the
# program said.  rspreload's and SMC-R's are expected (rows of the
# table); any other fails the benchmark.
fail() {
	local tool=$1 size=$2 l=$3 what=$4 said
	said=$(grep -m1 -iE 'error|fail|refused|denied|not supported|unable|cannot' "$l" 2>/dev/null |
		tr -d '\r\t' | sed 's/\x1b\[[0-9;]*m//g' | cut -c1-160 || true)
	put "$tool" "$size" fail "$what${said:+: $said}"
	case $tool in
	*-rspreload | smc-r) log "$tool $size: $what${said:+: $said}" ;;
	*)
		log "FAILED: $tool $size: $what${said:+: $said}"
		failures=$((failures + 1))
		;;
	esac
}

# The command prefix of a transport.
pre=()
prefix() {
	case $1 in
	tcp) pre=() ;;
	rdmashare) pre=("$bin/rdmashare-run") ;;
	rspreload) pre=(env LD_PRELOAD="$rspreload") ;;
	esac
}

# serve TRANSPORT TOOL SIZE LOG SERVER...: the server, under TRANSPORT's
# prefix, in the background (its pid in spid) until it listens on $port;
# 1 and a fail line if it does not.
spid=0
serve() {
	local tr=$1 tool=$2 size=$3 l=$4
	shift 4
	prefix "$tr"
	"${pre[@]}" "$@" >"$l.server" 2>&1 &
	spid=$!
	wait_listen "$tr" "$port" rdmashare && return 0
	fail "$tool" "$size" "$l.server" "$1: the server did not start"
	kill "$spid" 2>/dev/null || true
	stop "$spid" 2
	return 1
}

# ---------------------------------------------------------------------------
# iperf3: one stream, the server's received bytes (-J).

iperf3_one() {
	local tr=$1 size=$2 tool=iperf3-$1 l v
	l=$logs/$tool-$size
	port=$((port + 1))
	log "$tool: iperf3 -t $qtime -l $size"
	begin
	serve "$tr" "$tool" "$size" "$l" iperf3 -s -1 -B "$ip" -p "$port" || return 0
	timeout $((qtime * 3 + 20)) "${pre[@]}" iperf3 -c "$ip" -p "$port" -t "$qtime" \
		-l "$size" -J >"$l.json" 2>"$l.client" || true
	stop "$spid" 3
	end "$tool" "$size" bw
	# bytes seconds of what the server received; the error if any
	v=$(python3 -c 'import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("ERR no JSON output"); sys.exit()
r = d.get("end", {}).get("sum_received", {})
if d.get("error"):
    print("ERR", d["error"][:150].replace("\t", " "))
elif r.get("bytes", 0) <= 0:
    print("ERR 0 bytes received in %.1f s" % r.get("seconds", 0))
else:
    print(r["bytes"], r["seconds"])' "$l.json")
	case $v in
	ERR*)
		echo "${v#ERR }" >>"$l.client"
		fail "$tool" "$size" /dev/null "iperf3 -l $size: ${v#ERR }"
		return
		;;
	esac
	put "$tool" "$size" bw_MBps "$(awk -v b="${v% *}" -v t="${v#* }" 'BEGIN { printf "%.3f", b / t / 1e6 }')"
	put "$tool" "$size" rate_msgps "$(awk -v b="${v% *}" -v t="${v#* }" -v s="$size" 'BEGIN { printf "%.0f", b / t / s }')"
	put "$tool" "$size" bw_bytes "${v% *}"
}

bench_iperf3() {
	local size tr
	for size in "${sizes[@]}"; do
		for tr in "${transports[@]}"; do
			iperf3_one "$tr" "$size"
		done
	done
}

# ---------------------------------------------------------------------------
# sockperf: ping-pong and throughput, a new server each time.

sockperf_one() {
	local tr=$1 mode=$2 size=$3 tool=sockperf-$1 l m v
	m=$size
	[ "$m" -le 1048575 ] || m=1048575
	l=$logs/$tool-$mode-$size
	port=$((port + 1))
	log "$tool: sockperf $mode -m $m -t $qtime"
	begin
	serve "$tr" "$tool" "$size" "$l" sockperf sr --tcp -i "$ip" -p "$port" -m 1048575 || return 0
	timeout $((qtime * 3 + 20)) "${pre[@]}" sockperf "$mode" --tcp -i "$ip" -p "$port" -m "$m" \
		-t "$qtime" >"$l.client" 2>&1 || true
	kill "$spid" 2>/dev/null || true
	stop "$spid"
	if [ "$mode" = pp ]; then
		end "$tool" "$size" lat
		# Summary: Latency is X usec; ---> percentile 50.000 = X (one way)
		v=$(sed -n 's/.*Summary: Latency is \([0-9.]*\) usec.*/\1/p' "$l.client" | tail -n1)
		if [ -z "$v" ]; then
			fail "$tool" "$size" "$l.client" "sockperf pp -m $m"
			return
		fi
		put "$tool" "$size" lat_mean_us "$v"
		v=$(sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' "$l.client" | tail -n1)
		[ -z "$v" ] || put "$tool" "$size" lat_p50_us "$v"
	else
		end "$tool" "$size" tp
		# Summary: Message Rate is X [msg/sec]
		v=$(sed -n 's/.*Summary: Message Rate is \([0-9.]*\) .*/\1/p' "$l.client" | tail -n1)
		if [ -z "$v" ] || [ "$v" = 0 ]; then
			fail "$tool" "$size" "$l.client" "sockperf tp -m $m"
			return
		fi
		put "$tool" "$size" tp_rate_msgps "$v"
		put "$tool" "$size" tp_MBps "$(awk -v r="$v" -v s="$m" 'BEGIN { printf "%.3f", r * s / 1e6 }')"
	fi
}

bench_sockperf() {
	local size tr mode
	for size in "${sizes[@]}"; do
		for mode in pp tp; do
			for tr in "${transports[@]}"; do
				sockperf_one "$tr" "$mode" "$size"
			done
		done
	done
}

# ---------------------------------------------------------------------------
# redis: redis-benchmark -t set,get, plain and pipelined (-P 16).

redis_rps() {
	tr '\r' '\n' <"$1" | sed -n "s/^$2: \([0-9.]*\) requests per second.*/\1/p" | tail -n1
}

redis_one() {
	local tr=$1 pipe=$2 tool=redis-$1 l n v t args=()
	# requests: a few seconds each over TCP under TCG
	n=$(n_of redis "$pipe" $((pipe == 1 ? 20000 : 100000)))
	[ "$pipe" = 1 ] || args=(-P "$pipe")
	l=$logs/$tool-$pipe
	port=$((port + 1))
	log "$tool: redis-benchmark -t set,get -n $n ${args[*]}"
	begin
	serve "$tr" "$tool" "$pipe" "$l" redis-server --port "$port" --bind "$ip" --save '' \
		--appendonly no --protected-mode no --daemonize no || return 0
	timeout 300 "${pre[@]}" redis-benchmark -h "$ip" -p "$port" -t set,get -n "$n" \
		"${args[@]}" -q >"$l.client" 2>&1 || true
	kill "$spid" 2>/dev/null || true
	stop "$spid"
	end "$tool" "$pipe" redis
	for t in SET GET; do
		v=$(redis_rps "$l.client" "$t")
		if [ -z "$v" ]; then
			fail "$tool" "$pipe" "$l.client" "redis-benchmark $t ${args[*]}"
			continue
		fi
		put "$tool" "$pipe" "${t,,}_rps" "$v"
	done
}

bench_redis() {
	local pipe tr
	for pipe in 1 16; do
		for tr in "${transports[@]}"; do
			[ "$tr" != rspreload ] || continue
			redis_one "$tr" "$pipe"
		done
	done
}

# ---------------------------------------------------------------------------
# rstream: rsocket's own benchmark, as transport-guest.sh runs it.

rstream_one() {
	local kind=$1 size=$2 n v
	n=$(n_of "$kind" "$size")
	port=$((port + 1))
	log "rstream: rstream $kind -S $size, $n messages"
	begin
	if ! v=$(rstream_run "$kind" "$size" "$n" "$port" "$logs/rstream-$kind-$size"); then
		fail rstream "$size" "$logs/rstream-$kind-$size.client" "rstream $kind -S $size"
		return
	fi
	end rstream "$size" "$kind"
	rstream_put rstream "$kind" "$size" "$v"
}

bench_rstream() {
	local size
	for size in "${sizes[@]}"; do
		rstream_one bw "$size"
		rstream_one lat "$size"
	done
}

# ---------------------------------------------------------------------------
# rs-stream on one AC file (-F), the server's count.

# rsstream_one SIZE [TOOL [FLAGS [PRE]]]: FLAGS on both sides besides -F
# (-T: sockets instead), both run under PRE (rdmashare-run) if given.
rsstream_one() {
	local size=$1 tool=${2:-rs-stream-files} flags=${3:-} pre=${4:-} n l spid v
	n=$(n_of bw "$size")
	l=$logs/$tool-$size
	port=$((port + 1))
	log "$tool: ${pre:+$pre }rs-stream -F $flags -a 1 -l $size -n $n"
	begin
	# The server checks the stream in messages of -l bytes.
	# shellcheck disable=SC2086 # FLAGS and PRE are words
	$pre "$bin/rs-stream" -s -F $flags -p "$port" -a 1 -l "$size" >"$l.server" 2>&1 &
	spid=$!
	for _ in $(seq 1 50); do
		grep -q listening "$l.server" 2>/dev/null && break
		sleep 0.2
	done
	# shellcheck disable=SC2086
	timeout 300 $pre "$bin/rs-stream" -c "$ip" -F $flags -p "$port" -a 1 -P 1 -l "$size" \
		-n "$n" >"$l.client" 2>&1 || true
	stop "$spid"
	end "$tool" "$size" bw
	# received M messages, B bytes on A ACs (files) in T s: X MB/s, Y msg/s[, ERRORS]
	v=$(sed -n 's/.* s: \([0-9.]*\) MB\/s, \([0-9]*\) msg\/s\(, ERRORS\)*$/\1 \2/p' "$l.server")
	if [ -z "$v" ] || grep -q ERRORS "$l.server"; then
		cat "$l.server" >>"$l.client"
		fail "$tool" "$size" "$l.client" "rs-stream -F -l $size${v:+ (ERRORS)}"
		return
	fi
	put "$tool" "$size" rate_msgps "${v#* }"
	put "$tool" "$size" bw_MBps "$(awk -v r="${v#* }" -v s="$size" 'BEGIN { printf "%.3f", r * s / 1e6 }')"
	put "$tool" "$size" bw_bytes $((n * size))
}

bench_rsstream() {
	local size
	for size in "${sizes[@]}"; do
		rsstream_one "$size"
		rsstream_one "$size" rs-stream-iperf -I
		rsstream_one "$size" rs-stream-preload -T "$bin/rdmashare-run"
		rsstream_one "$size" rs-stream-preload-iperf "-T -I" "$bin/rdmashare-run"
	done
}

# The copy/zero-copy crossover: rs-stream -F with writes copied into the
# send buffer (zcopy_min 0: rs-stream-copy) and sent from the writer's own
# pages (zcopy_min at the write size: rs-stream-zcopy), one after the
# other at each size of RS_BENCH_ZC_SIZES.
bench_zcopy() {
	local size old
	old=$(cat "$sys/zcopy_min")
	for size in ${RS_BENCH_ZC_SIZES:-16384 65536 262144 1048576 4194304}; do
		echo 0 >"$sys/zcopy_min"
		rsstream_one "$size" rs-stream-copy
		echo "$size" >"$sys/zcopy_min"
		rsstream_one "$size" rs-stream-zcopy
	done
	echo "$old" >"$sys/zcopy_min"
}

# ---------------------------------------------------------------------------
# SMC-R, once, as a new user of Debian 12 would try it: no smc-tools (no
# smc_run, no smc_pnet), so an AF_SMC stream of its own (Python, ctypes)
# to $RS_IP with an empty pnet table, and rxe0's packets counted.

smc_try() {
	local l=$logs/smc-r size=16777216 v p
	log "smc-r: modprobe smc, an AF_SMC stream of 16 MiB to $ip"
	if ! modprobe smc >"$l.modprobe" 2>&1; then
		fail smc-r "$size" "$l.modprobe" "modprobe smc"
		return
	fi
	port=$((port + 1))
	begin
	timeout 120 python3 - "$ip" "$port" "$size" "${RS_BENCH_SMC_FAMILY:-43}" >"$l.out" 2>&1 <<'EOF' || true
import ctypes, errno, socket, struct, sys, threading, time
AF_SMC = int(sys.argv[4]) if len(sys.argv) > 4 else 43
libc = ctypes.CDLL(None, use_errno=True)
ip, port, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
# struct sockaddr_in: SMC takes AF_INET addresses
sin = struct.pack("=H", socket.AF_INET) + struct.pack("!H", port) + \
    socket.inet_aton(ip) + bytes(8)

def smc_socket():
    fd = libc.socket(AF_SMC, socket.SOCK_STREAM, 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "socket(AF_SMC)")
    return fd

def check(r, what):
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, errno.errorcode.get(e, e)))

lfd = smc_socket()
check(libc.bind(lfd, sin, len(sin)), "bind")
check(libc.listen(lfd, 1), "listen")
got = [0]

def serve():
    fd = libc.accept(lfd, None, None)
    check(fd, "accept")
    s = socket.socket(fileno=fd)
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        got[0] += len(b)
    s.close()

t = threading.Thread(target=serve)
t.start()
cfd = smc_socket()
check(libc.connect(cfd, sin, len(sin)), "connect")
c = socket.socket(fileno=cfd)
buf = b"x" * (1 << 20)
t0 = time.time()
for _ in range(size >> 20):
    c.sendall(buf)
c.close()
t.join()
dt = time.time() - t0
print("received %d bytes in %.2f s: %.1f MB/s" % (got[0], dt, got[0] / dt / 1e6))
EOF
	p=$(($(cat "$pkts" 2>/dev/null || echo 0) - p_start))
	end smc-r "$size" bw
	v=$(sed -n 's/^received \([0-9]*\) bytes in .*: \([0-9.]*\) MB\/s$/\1 \2/p' "$l.out")
	if [ -z "$v" ]; then
		fail smc-r "$size" "$l.out" "the AF_SMC stream failed"
		return
	fi
	put smc-r "$size" bw_MBps "${v#* }"
	put smc-r "$size" bw_bytes "${v% *}"
	# Fell back to TCP, or over rxe0 (SMC-R's data are RDMA WRITEs).
	if [ "$p" -lt $((size / 4096)) ]; then
		put smc-r "$size" fail "fell back to TCP: the AF_SMC stream worked, $p rxe0 packets for $size bytes"
		log "smc-r: fell back to TCP"
	fi
	lsmod | grep -E '^smc' >>"$l.modprobe" || true
}

# ---------------------------------------------------------------------------

log "$(uname -r), $(nproc) CPUs, $dev on $ip, $(date -u +%FT%TZ)"
{
	echo "kernel $(uname -r)"
	echo "date $(date -u +%FT%TZ)"
	echo "cpus $(nproc)"
	echo "scale $scale"
	echo "repeat $repeat"
	echo "time $qtime"
	grep -m1 'cpu MHz' /proc/cpuinfo || true
	iperf3 --version 2>&1 | head -n1
	sockperf --version 2>&1 | head -n1 | sed 's/\x1b\[[0-9;]*m//g'
	redis-server --version 2>&1 | head -n1
	echo "rspreload $rspreload"
	rdma link show 2>&1 || true
} >"$work/sockets-env.txt"

[ -e "$rspreload" ] || log "no $rspreload: the rspreload rows will fail"

t0=$(date +%s)
logs=$logroot/r0
mkdir -p "$logs"
[ "${RS_BENCH_SMC:-1}" = 0 ] || smc_try
for rep in $(seq 1 "$repeat"); do
	log "round $rep of $repeat"
	logs=$logroot/r$rep
	mkdir -p "$logs"
	for part in ${RS_BENCH_PARTS:-iperf3 sockperf redis rstream rsstream zcopy}; do
		"bench_$part"
	done
done
log "done in $(( $(date +%s) - t0 ))s, $failures failure(s); results in $res"
[ "$failures" = 0 ]

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two-guest test of unmodified programs under rdmashare-run, run by
# run-vm.sh --peer after pair_smoke.sh: the peer serves, the client drives
# (rdmashare_preload_test does the same within one guest).  Each program's
# output is checked, and the client's counters say which transport carried
# it: over rdmashare, the devices' tx_bytes (or rx_bytes) grew by at least
# what moved and TCP's OutSegs (/proc/net/snmp) by next to nothing (the
# peer checks its OutSegs too); over TCP, the other way round.
#
#  - nc copies a file to the peer (its sha256 compared there); socat
#    copies one back; iperf3 -t 3 -J each way (-R);
#    sockperf ping-pong (--tcp, then both ends on select, poll and epoll);
#    redis-server with redis-cli set and get, redis-benchmark -t set,get
#    -P 16, and -t get with 500 connections at once (-c 500: at most
#    twice qps_per_peer QPs to the peer, its and the client's); PyTorch's
#    gloo allreduce
#    (userlib/ps/torch-gloo.py: tensors up to 4 MiB, every sum checked on
#    both ranks; its TCPStore and gloo's own connections); Open MPI's
#    mpirun, 4 ranks of rs_mpi in turn on the client and the peer (an
#    allreduce and a ping-pong up to 1 MiB across the link, results
#    checked), its daemon started on the peer by pair_rexec.py.  All
#    preloaded at both ends: over rdmashare.
#  - Open MPI again with the peer's ranks not preloaded: right results, the
#    ping-pong over TCP.
#  - Fallbacks, over TCP with the file whole: a preloaded client to a plain
#    server, a plain client to a preloaded server; then the peer unloads
#    rdmashare (rmmod) and a preloaded client reaches its preloaded server,
#    and its preloaded client the client's.  socat, iperf3, sockperf and
#    redis-benchmark too, each output checked, to a plain server, from a
#    plain client and to a preloaded server on the host without the module.  The peer loads the module
#    again, and nc copies over rdmashare once more, over IPv6 (a new QP to
#    the peer, as the pair tests after this one need).
#
# The guests say when to go on over a side port (plain nc, not preloaded),
# each in turn (a message sent right after another could land in the
# backlog of the listener that took the first): the peer "ready STEP" once
# its server listens, the client "done STEP" once it checked its end; a
# guest that fails says "fail ..." to the other.
#
# roles: client (guest a), peer (guest b).  RS_PAIR_APPS says what runs:
# "all" (the default) everything above, "skip" everything but gloo and
# Open MPI (make check's two debug guests, where importing torch alone
# takes more than 5 minutes), "only" gloo and Open MPI alone (make check
# runs them so in two stock 6.1 guests).

set -u
role=$1
top=$(cd "$(dirname "$0")/.." && pwd)
run=$top/userlib/build/rdmashare-run
SIZE=$((256 << 10))
IN=/tmp/pair-preload.in
OUT=/tmp/pair-preload.out
LISTENERS=/sys/kernel/debug/rdmashare/listeners
MAXSEGS=32	# TCP segments a run over rdmashare may send (the side port's)
GLOO="$top/userlib/ps/torch-gloo.py allreduce --iface eth0 --max-size $((4 << 20)) --rounds 1"
REXEC=7333	# pair_rexec.py's port on the peer
# Open MPI across the guests (Documentation/preload.rst, "Open MPI"):
#  plm_rsh_agent     mpirun starts its daemon (orted) on the peer with
#                    pair_rexec.py, as with ssh, which the guests lack;
#                    plm_rsh_no_tree_spawn: that daemon starts no other
#  btl tcp,self      the TCP BTL between all ranks, also between the two of
#                    one guest (not the shared memory BTL)
#  btl_tcp_if_include, oob_tcp_if_include eth0
#                    the ranks' and the daemons' addresses on the link
#                    alone (eth0 has rxe0), not 127.0.0.1
#  btl_tcp_disable_family 6  IPv4 alone (preload.rst says why)
#  --oversubscribe   two ranks on a guest of one vCPU
MPI=(timeout 300 mpirun --allow-run-as-root --oversubscribe
	--mca plm_rsh_agent "$top/selftests/pair_rexec.py --port $REXEC"
	--mca plm_rsh_no_tree_spawn 1 --mca btl "tcp,self"
	--mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0
	--mca btl_tcp_disable_family 6)
MPI_PROG=$top/selftests/build/rs_mpi
# TCP segments an Open MPI run over rdmashare may send on the link: its
# out-of-band channel between mpirun and the peer's daemon, about 30 (the
# ranks' and daemons' own, on 127.0.0.1, are not counted).
MPISEGS=100
case $role in
client) my_ctl=7398 their_ctl=7399 ;;
peer) my_ctl=7399 their_ctl=7398 ;;
*) echo "pair_preload: unknown role '$role'"; exit 2 ;;
esac

log() { echo "pair_preload ($role): $*"; }
# say MSG SECS: one line to the other guest's side port, tried again while
# it does not listen.
say() {
	local t0=$SECONDS
	until echo "$1" | timeout 10 nc -N "$RS_PEER_IP" "$their_ctl" 2>/dev/null; do
		[ $((SECONDS - t0)) -lt "$2" ] || return 1
		sleep 0.2
	done
}
fail() {
	log "FAIL: $*"
	say "fail ($role): $*" 15
	exit 1
}
tell() { say "$1" 240 || fail "the other guest never took '$1'"; }
# hear MSG: wait for the other guest's MSG; its "fail ..." ends this one.
hear() {
	local got
	got=$(timeout 300 nc -l "$RS_IP" "$my_ctl" </dev/null)
	case $got in
	"$1") ;;
	"fail "*) log "FAIL: the other guest failed: ${got#fail }"; exit 1 ;;
	"") fail "nothing from the other guest in 300 s (waiting for '$1')" ;;
	*) fail "the other guest said '$got', not '$1'" ;;
	esac
}

# The counters: rdmashare's devices, all told, and TCP's segments sent.
# shellcheck source=selftests/counters.sh
. "$top/selftests/counters.sh"
lo_packets() { cat /sys/class/net/lo/statistics/tx_packets; }
mark() { tx0=$(rs_sum tx_bytes) rx0=$(rs_sum rx_bytes) segs0=$(out_segs) lo0=$(lo_packets); }
moved() {
	tx=$(($(rs_sum tx_bytes) - tx0)) rx=$(($(rs_sum rx_bytes) - rx0))
	segs=$(($(out_segs) - segs0))
	log "$1: rdmashare sent $tx bytes and received $rx, TCP sent $segs segments"
}
# over_rdma NAME TX RX: since mark, rdmashare sent TX bytes at least and
# received RX, and TCP sent next to nothing.
over_rdma() {
	moved "$1"
	[ "$tx" -ge "$2" ] || fail "$1: rdmashare sent $tx bytes, fewer than the $2 that moved"
	[ "$rx" -ge "$3" ] || fail "$1: rdmashare received $rx bytes, fewer than the $3 that moved"
	[ "$segs" -lt $MAXSEGS ] || fail "$1: TCP sent $segs segments: not over rdmashare"
}
# over_tcp NAME: this guest sent the file over TCP, not over rdmashare.
over_tcp() {
	moved "$1"
	[ "$tx" -lt $((SIZE / 16)) ] || fail "$1: rdmashare sent $tx bytes: not over TCP"
	[ "$segs" -ge $((SIZE >> 16)) ] || fail "$1: TCP sent only $segs segments for the file"
}
# same NAME: OUT is IN.
same() {
	local a b
	a=$(sha256sum <"$IN") b=$(sha256sum <"$OUT" 2>/dev/null)
	[ "$a" = "$b" ] || fail "$1: the copy's sha256 is ${b%% *}, not ${a%% *}"
	rm -f "$OUT"
}

# listening PORT RDMA PID: PID listens on TCP's PORT, and on rdmashare's too
# if RDMA is 1.
listening() {
	local t0=$SECONDS
	while kill -0 "$3" 2>/dev/null; do
		ss -ltn | grep -q ":$1 " &&
			{ [ "$2" = 0 ] || grep -q "^port $1 " $LISTENERS; } && return 0
		[ $((SECONDS - t0)) -lt "${WAIT:-60}" ] || break
		sleep 0.1
	done
	ss -ltn
	cat $LISTENERS 2>/dev/null
	return 1
}
# serve NAME PORT RDMA STOP CMD: run CMD (a server; under rdmashare-run -d,
# which tells on standard error what it decided) in the background; once
# it listens, tell the other guest, and wait for its "done NAME".  With STOP
# 1 the server is stopped then, else it must end by itself, successfully.
serve() {
	local name=$1 port=$2 rdma=$3 stop=$4 pid
	eval "exec $5" 2>"/tmp/$name.err" &
	pid=$!
	listening "$port" "$rdma" $pid || {
		cat "/tmp/$name.err"
		fail "$name: the server does not listen on port $port"
	}
	# After the message: its tries, refused until the client listens,
	# are segments too.
	tell "ready $name"
	mark
	hear "done $name"
	[ "$stop" = 0 ] || kill $pid
	for _ in $(seq 200); do
		kill -0 $pid 2>/dev/null || break
		sleep 0.1
	done
	kill -0 $pid 2>/dev/null && kill -9 $pid
	wait $pid && return
	[ "$stop" = 1 ] && return
	cat "/tmp/$name.err"
	fail "$name: the server failed"
}
# drive NAME CMD: run CMD (the client's end) once the other guest's server
# is ready.
drive() {
	hear "ready $1"
	mark
	timeout 120 bash -c "$2" 2>"/tmp/$1.err" || {
		tail -n 20 "/tmp/$1.err" "$OUT"
		fail "$1: '$2' failed"
	}
}
# gloo_moved: torch-gloo.py's allreduce checked its sums (OUT), and its
# bytes went both ways over rdmashare.
gloo_moved() {
	local bytes
	sed "s/^/pair_preload ($role): gloo: /" "$OUT"
	bytes=$(sed -n 's/^allreduce: .*, \([0-9]*\) bytes, sums exact.*/\1/p' "$OUT")
	[ -n "$bytes" ] || fail "gloo: no checked result"
	over_rdma gloo "$bytes" "$bytes"
}
# link_segs NAME: moved, and the TCP segments sent since mark but not on
# lo (whose packets are all TCP's here) in link.
link_segs() {
	moved "$1"
	link=$((segs - ($(lo_packets) - lo0)))
	log "$1: $link of those segments on the link"
}
# mpi NAME PRE: rs_mpi's 4 ranks in turn here (preloaded) and on the
# peer (under PRE: rdmashare-run or nothing), so that both ping-pong pairs
# (0-1, 2-3) cross the link; its results checked, the bytes it moved in
# bytes, the counters as link_segs has them.  The peer serves pair_rexec.py
# meanwhile.
mpi() {
	local apps=() r t0
	for r in 0 1 2 3; do
		[ "$r" = 0 ] || apps+=(:)
		if [ $((r % 2)) = 0 ]; then
			apps+=(-np 1 --host "$RS_IP" "$run" "$MPI_PROG")
		else
			apps+=(-np 1 --host "$peer" ${2:+"$2"} "$MPI_PROG")
		fi
	done
	hear "ready $1"
	mark
	t0=$SECONDS
	"${MPI[@]}" "${apps[@]}" >"$OUT" 2>&1 || { tail -n 30 "$OUT"; fail "$1: mpirun failed"; }
	grep -qx 'allreduce ok: 65536 ints, 4 ranks' "$OUT" || { cat "$OUT"; fail "$1: no allreduce checked"; }
	bytes=$(sed -n 's/^pingpong ok: \([0-9]*\) bytes, 2 pairs$/\1/p' "$OUT")
	[ -n "$bytes" ] || { cat "$OUT"; fail "$1: no ping-pong checked"; }
	log "$1: allreduce and ping-pong of $bytes bytes right ($((SECONDS - t0)) s)"
	grep -v '^allreduce ok\|^pingpong ok' "$OUT" | sed "s/^/pair_preload ($role): $1: /"
	link_segs "$1"
}
# Open MPI's steps: the peer serves pair_rexec.py for each run of the
# client's mpirun; the ranks there preloaded, then not.
mpi_peer() {
	local rexec="$top/selftests/pair_rexec.py --serve $REXEC --bind $RS_IP"
	serve mpi $REXEC 0 1 "$rexec"
	link_segs mpi
	[ "$link" -lt $MPISEGS ] || fail "mpi: TCP sent $link segments on the link: not over rdmashare"
	serve mpi-plain $REXEC 0 1 "$rexec"
	link_segs mpi-plain
	[ "$link" -ge $MPISEGS ] || fail "mpi-plain: TCP sent only $link segments on the link"
}
mpi_client() {
	local t0=$SECONDS half
	mpi mpi "$run"
	# Ranks 0 and 2 here sent and received half of it over the link.
	half=$((bytes / 2))
	[ "$tx" -ge $half ] || fail "mpi: rdmashare sent $tx bytes, fewer than the $half that crossed"
	[ "$rx" -ge $half ] || fail "mpi: rdmashare received $rx bytes, fewer than the $half that crossed"
	[ "$link" -lt $MPISEGS ] || fail "mpi: TCP sent $link segments on the link: not over rdmashare"
	tell "done mpi"

	# Ranks 0 and 2 still reach each other over rdmashare (the allreduce),
	# but the ping-pong's half goes in TCP segments of 1448 bytes at most
	# (the link's MTU is 1500).
	mpi mpi-plain ""
	[ "$tx" -lt $((half / 4)) ] || fail "mpi-plain: rdmashare sent $tx bytes: not over TCP"
	[ "$link" -ge $((half / 1448)) ] || fail "mpi-plain: TCP sent only $link segments on the link"
	tell "done mpi-plain"
	log "Open MPI: $((SECONDS - t0)) s"
}
# The applications' steps: PyTorch's gloo, then Open MPI.
apps_peer() {
	# Rank 0, its TCPStore on 7332 once torch is imported (about a
	# minute under emulation).
	WAIT=300 serve gloo 7332 1 0 "$run -d $GLOO --rank 0 --master $RS_IP:7332 >$OUT"
	gloo_moved
	mpi_peer
}
apps_client() {
	local pid

	# Rank 1 imports torch meanwhile, and meets rank 0 once it listens.
	rm -f /tmp/gloo.go
	timeout 600 "$run" -d $GLOO --rank 1 --master "$peer:7332" --start-after /tmp/gloo.go \
		>"$OUT" 2>/tmp/gloo.err &
	pid=$!
	hear "ready gloo"
	mark
	touch /tmp/gloo.go
	wait $pid || { tail -n 20 /tmp/gloo.err "$OUT"; fail "gloo: torch-gloo.py failed"; }
	gloo_moved
	tell "done gloo"
	mpi_client
}
# The fallbacks of socat, iperf3, sockperf and redis, STEP plain-server,
# plain-client or no-module-server: a port for each (over TCP, the end
# that closes first leaves its port in TIME_WAIT).
FB_PROGS="socat iperf3 sockperf redis"
fb_port() {
	local i=0 p
	for p in $FB_PROGS; do
		[ "$p" = "$1" ] && break
		i=$((i + 1))
	done
	case $2 in
	plain-server) echo $((7350 + i)) ;;
	plain-client) echo $((7354 + i)) ;;
	*) echo $((7358 + i)) ;;
	esac
}
# fb_serve PROG STEP PRE RDMA: PROG's server under PRE (rdmashare-run -d, or
# nothing), listening on rdmashare too if RDMA is 1, for the client's STEP.
fb_serve() {
	local name=$2-$1 port
	port=$(fb_port "$1" "$2")
	case $1 in
	socat) serve "$name" "$port" "$4" 0 \
		"$3 socat -u OPEN:$IN TCP-LISTEN:$port,bind=$ip,reuseaddr" ;;
	iperf3) serve "$name" "$port" "$4" 0 "$3 iperf3 -s -1 -B $ip -p $port >/dev/null" ;;
	sockperf) serve "$name" "$port" "$4" 1 \
		"$3 sockperf sr --tcp -i $ip -p $port >/dev/null 2>&1" ;;
	redis) serve "$name" "$port" "$4" 1 "$3 redis-server --port $port --bind $ip \
		--save '' --appendonly no --protected-mode no --daemonize no >/dev/null" ;;
	esac
}
# fb_drive PROG STEP PRE: PROG's client under PRE against the peer's server
# for STEP: its output right, and over TCP.
fb_drive() {
	local name=$2-$1 port n set get
	port=$(fb_port "$1" "$2")
	case $1 in
	socat)
		drive "$name" "$3 socat -u TCP:$peer:$port OPEN:$OUT,creat,trunc"
		over_tcp "$name"
		same "$name"
		;;
	iperf3)
		drive "$name" "$3 iperf3 -c $peer -p $port -t 2 -J >$OUT"
		over_tcp "$name"
		n=$(python3 -c "import json; d = json.load(open('$OUT'));
assert 'error' not in d, d['error']; print(d['end']['sum_received']['bytes'])") ||
			fail "$name: no result in its JSON"
		[ "$n" -ge $((64 << 10)) ] || fail "$name: only $n bytes moved"
		;;
	sockperf)
		drive "$name" "$3 sockperf pp --tcp -i $peer -p $port -t 2 -m 64 >$OUT 2>&1"
		over_tcp "$name"
		n=$(value 'ReceivedMessages=')
		[ "${n:-0}" -ge 5 ] || { cat $OUT; fail "$name: ${n:-no} round trips"; }
		;;
	redis)
		drive "$name" "$3 redis-benchmark -h $peer -p $port -t set,get -n 500 -q >$OUT 2>&1"
		over_tcp "$name"
		set=$(value 'SET: ') get=$(value 'GET: ')
		if [ -z "$set" ] || [ -z "$get" ]; then
			cat $OUT
			fail "$name: no SET or GET result"
		fi
		;;
	esac
	log "$name: over TCP, its output right"
	tell "done $name"
}
# sockperf_port MUX: the port of sockperf's run on select, poll or epoll.
sockperf_port() {
	case $1 in
	select) echo 7362 ;;
	poll) echo 7363 ;;
	*) echo 7364 ;;
	esac
}
# The number after KEY in OUT, the last one.
value() {
	tr '\r' '\n' <"$OUT" | grep -oE "$1[0-9.]+" | tail -n1 | sed "s/^$1//"
}

[ -e /dev/rdmashare ] || fail "/dev/rdmashare missing"
[ -x "$run" ] || fail "no $run"
# The same file on both guests.
python3 -c "import random, sys; random.seed(33); sys.stdout.buffer.write(random.randbytes($SIZE))" \
	>"$IN" || fail "cannot make $IN"
log "$(hostname) $RS_IP, file of $SIZE bytes, sha256 $(sha256sum <"$IN" | cut -c1-16)..."

peer=$RS_PEER_IP
appsmode=${RS_PAIR_APPS:-all}
case $appsmode in
all | skip) ;;
only)
	apps_"$role"
	log "ok (${SECONDS} s)"
	exit 0
	;;
*) fail "RS_PAIR_APPS is '$appsmode', not all, skip or only" ;;
esac
case $role in
peer)
	ip=$RS_IP
	serve nc 7320 1 0 "$run -d nc -l $ip 7320 >$OUT </dev/null"
	same nc
	moved nc
	[ "$segs" -lt $MAXSEGS ] || fail "nc: TCP sent $segs segments: not over rdmashare"

	serve socat 7322 1 0 "$run -d socat -u OPEN:$IN TCP-LISTEN:7322,bind=$ip,reuseaddr"
	moved socat
	[ "$segs" -lt $MAXSEGS ] || fail "socat: TCP sent $segs segments: not over rdmashare"

	for name in iperf3 iperf3-R; do
		port=$([ $name = iperf3 ] && echo 7323 || echo 7324)
		serve $name "$port" 1 0 "$run -d iperf3 -s -1 -B $ip -p $port >/dev/null"
		moved $name
		[ "$segs" -lt $MAXSEGS ] || fail "$name: TCP sent $segs segments: not over rdmashare"
	done

	serve sockperf 7325 1 1 "$run -d sockperf sr --tcp -i $ip -p 7325 >/dev/null 2>&1"
	moved sockperf
	[ "$segs" -lt $MAXSEGS ] || fail "sockperf: TCP sent $segs segments: not over rdmashare"
	for mux in select poll epoll; do
		port=$(sockperf_port $mux)
		echo "T:$ip:$port" >/tmp/sockperf-$mux.feed
		serve sockperf-$mux "$port" 1 1 \
			"$run -d sockperf sr -f /tmp/sockperf-$mux.feed -F $mux >/dev/null 2>&1"
		moved sockperf-$mux
		[ "$segs" -lt $MAXSEGS ] ||
			fail "sockperf-$mux: TCP sent $segs segments: not over rdmashare"
	done

	serve redis 7326 1 1 "$run -d redis-server --port 7326 --bind $ip --save '' \
		--appendonly no --protected-mode no --daemonize no >/dev/null"
	moved redis
	[ "$segs" -lt $MAXSEGS ] || fail "redis: TCP sent $segs segments: not over rdmashare"

	[ "$appsmode" = skip ] || apps_peer

	# Fallbacks: the client checks that the file went over TCP.
	serve plain-server 7327 0 0 "nc -l $ip 7327 >$OUT </dev/null"
	same plain-server
	serve plain-client 7328 1 0 "$run -d nc -l $ip 7328 >$OUT </dev/null"
	same plain-client
	for prog in $FB_PROGS; do
		fb_serve "$prog" plain-server "" 0
		fb_serve "$prog" plain-client "$run -d" 1
	done

	# No module on this host.
	for _ in $(seq 50); do
		rmmod rdmashare 2>/tmp/rmmod.err && break
		sleep 0.2
	done
	[ ! -e /sys/module/rdmashare ] || fail "rmmod rdmashare: $(cat /tmp/rmmod.err)"
	log "rdmashare unloaded"
	serve no-module-server 7329 0 0 "$run -d nc -l $ip 7329 >$OUT </dev/null"
	same no-module-server
	for prog in $FB_PROGS; do
		fb_serve "$prog" no-module-server "$run -d" 0
	done
	tell "go no-module-client"
	hear "ready no-module-client"
	timeout 120 "$run" nc "$peer" 7330 >"$OUT" </dev/null 2>/tmp/no-module-client.err || {
		cat /tmp/no-module-client.err
		fail "no-module-client: nc failed"
	}
	same no-module-client
	tell "done no-module-client"
	# Back, for the tests after this one.
	# shellcheck disable=SC1091,SC2046 # the module's parameters, as guest-init.sh gives them
	insmod "$RS_MODULE" $(. "$RS_WORK/job.env" && echo "$RS_MODULE_ARGS") ||
		fail "insmod $RS_MODULE"
	for _ in $(seq 50); do
		[ -e /sys/class/misc/rdmashare/devices/rxe0 ] && break
		sleep 0.2
	done
	[ -e /sys/class/misc/rdmashare/devices/rxe0 ] || fail "reloaded, rdmashare does not list rxe0"
	log "rdmashare loaded again"
	# Over IPv6.  A socket bound to an IPv6 address is IPv6-only (Linux
	# makes it so), and such a listener stays on TCP: the wildcard.
	serve reloaded 7331 1 0 "$run -d nc -l :: 7331 >$OUT </dev/null"
	same reloaded
	moved reloaded
	[ "$segs" -lt $MAXSEGS ] || fail "reloaded: TCP sent $segs segments: not over rdmashare"
	tell "finished"
	;;
client)
	drive nc "$run nc -N $peer 7320 <$IN"
	over_rdma nc $SIZE 0
	tell "done nc"

	drive socat "$run socat -u TCP:$peer:7322 OPEN:$OUT,creat,trunc"
	over_rdma socat 0 $SIZE
	same socat
	tell "done socat"

	for name in iperf3 iperf3-R; do
		if [ $name = iperf3 ]; then port=7323 dir=; else port=7324 dir=-R; fi
		drive $name "$run iperf3 -c $peer -p $port -t 3 -J $dir >$OUT"
		# What iperf3 says it moved, all of it over rdmashare.
		bytes=$(python3 -c "import json; d = json.load(open('$OUT'));
assert 'error' not in d, d['error']; print(d['end']['sum_received']['bytes'])") ||
			fail "$name: no result in its JSON"
		[ "$bytes" -ge $((64 << 10)) ] || fail "$name: only $bytes bytes moved"
		log "$name: $bytes bytes received"
		if [ $name = iperf3 ]; then over_rdma $name "$bytes" 0; else over_rdma $name 0 "$bytes"; fi
		tell "done $name"
	done

	drive sockperf "$run sockperf pp --tcp -i $peer -p 7325 -t 2 -m 64 >$OUT 2>&1"
	n=$(value 'ReceivedMessages=')
	log "sockperf: ${n:-no} round trips of 64 bytes"
	[ "${n:-0}" -ge 5 ] || { cat $OUT; fail "sockperf: ${n:-no} round trips"; }
	over_rdma sockperf $((n * 64)) $((n * 64))
	tell "done sockperf"
	# Both ends on select, poll and epoll in turn (-F needs a feed file).
	for mux in select poll epoll; do
		echo "T:$peer:$(sockperf_port $mux)" >/tmp/sockperf-$mux.feed
		drive sockperf-$mux \
			"$run sockperf pp -f /tmp/sockperf-$mux.feed -F $mux -t 2 -m 64 >$OUT 2>&1"
		n=$(value 'ReceivedMessages=')
		log "sockperf on $mux: ${n:-no} round trips of 64 bytes"
		[ "${n:-0}" -ge 5 ] || { cat $OUT; fail "sockperf-$mux: ${n:-no} round trips"; }
		over_rdma sockperf-$mux $((n * 64)) $((n * 64))
		tell "done sockperf-$mux"
	done

	hear "ready redis"
	mark
	cli=(timeout 60 "$run" redis-cli -h "$peer" -p 7326)
	got=$("${cli[@]}" set pair-preload "$(hostname) to $peer" &&
		"${cli[@]}" get pair-preload) ||
		fail "redis: redis-cli failed"
	[ "$got" = "OK
$(hostname) to $peer" ] || fail "redis: redis-cli set and get said '$got'"
	timeout 120 "$run" redis-benchmark -h "$peer" -p 7326 -t set,get -n 500 -P 16 -q \
		>$OUT 2>&1 || { cat $OUT; fail "redis: redis-benchmark failed"; }
	set=$(value 'SET: ') get=$(value 'GET: ')
	log "redis: SET ${set:-no} and GET ${get:-no} requests per second"
	if [ -z "$set" ] || [ -z "$get" ]; then
		cat $OUT
		fail "redis: no SET or GET result"
	fi
	# 500 connections at once, over no more QPs than qps_per_peer allows
	# each end (this one's and the peer's, to this one).
	timeout 150 "$run" redis-benchmark -h "$peer" -p 7326 -t get -n 2000 -c 500 -q \
		>$OUT 2>&1 || { cat $OUT; fail "redis: redis-benchmark -c 500 failed"; }
	get=$(value 'GET: ')
	qps=$(cat "/sys/class/misc/rdmashare/peers/$peer/qps" 2>/dev/null || echo 0)
	per=$(cat /sys/class/misc/rdmashare/qps_per_peer)
	log "redis -c 500: GET ${get:-no} requests per second over $qps QPs (qps_per_peer $per)"
	[ -n "$get" ] || { cat $OUT; fail "redis: no GET result with -c 500"; }
	if [ "$qps" -lt 1 ] || [ "$qps" -gt $((2 * per)) ]; then
		fail "redis: $qps QPs to the peer, qps_per_peer $per"
	fi
	# 3000 requests of 20 bytes at least, 1000 answers of 5 ("+OK\r\n")
	# and 2000 of 3 at least ("$-1\r\n" or a value).
	over_rdma redis $((3000 * 20)) $((1000 * 5 + 2000 * 3))
	tell "done redis"

	[ "$appsmode" = skip ] || apps_client

	drive plain-server "$run nc -N $peer 7327 <$IN"
	over_tcp plain-server
	tell "done plain-server"
	drive plain-client "nc -N $peer 7328 <$IN"
	over_tcp plain-client
	tell "done plain-client"
	for prog in $FB_PROGS; do
		fb_drive "$prog" plain-server "$run"
		fb_drive "$prog" plain-client ""
	done

	# The peer without rdmashare: its server, then its client.
	drive no-module-server "$run nc -N $peer 7329 <$IN"
	over_tcp no-module-server
	tell "done no-module-server"
	for prog in $FB_PROGS; do
		fb_drive "$prog" no-module-server "$run"
	done
	hear "go no-module-client"
	timeout 120 "$run" nc -N -l "$RS_IP" 7330 <"$IN" 2>/tmp/no-module-client.err &
	pid=$!
	listening 7330 1 $pid || fail "no-module-client: the server does not listen"
	mark
	tell "ready no-module-client"
	hear "done no-module-client"
	wait $pid || { cat /tmp/no-module-client.err; fail "no-module-client: the server failed"; }
	over_tcp no-module-client

	drive reloaded "$run nc -N $RS_PEER_IP6 7331 <$IN"
	over_rdma reloaded $SIZE 0
	tell "done reloaded"
	hear "finished"
	;;
esac
log "ok (${SECONDS} s)"

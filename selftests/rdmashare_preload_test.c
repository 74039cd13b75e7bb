// SPDX-License-Identifier: GPL-2.0
/*
 * Unmodified programs under rdmashare-run (librdmashare-preload.so), within
 * one host: each copies a 16 MiB file, compared byte for byte, and the
 * counters say which transport carried it: rdmashare's devices' tx_bytes
 * grew by at least the file's size and TCP's segments (/proc/net/snmp)
 * hardly at all, or the other way round for a fallback.
 *
 *  - nc_copy: OpenBSD nc, both ends preloaded: over rdmashare.
 *  - socat_copy: socat, both ends preloaded: over rdmashare.
 *  - plain_server: the server is not preloaded: the client falls back to TCP.
 *  - plain_client: the client is not preloaded: the server takes it on TCP.
 *  - no_module_client: the client cannot open /dev/rdmashare (as on a host
 *    without the module): TCP.
 *  - policy_port: RDMASHARE_PORTS leaves the port out: TCP.
 *  - iperf3: 2 s each way (-R), its JSON's bytes over rdmashare.
 *  - sockperf: 64 B ping-pong for 2 s with both ends on select, poll and
 *    epoll in turn, then in its default mode (recvfrom()), its
 *    observations over rdmashare and none over TCP.
 *  - redis: redis-server and redis-benchmark -t set,get, pipelined (-P 16),
 *    then with 500 connections at once (-c 500), all over rdmashare and
 *    over no more QPs than qps_per_peer allows each end.
 *  - fallbacks: socat, iperf3, sockperf and redis with the server not
 *    preloaded, the client not preloaded, and the client on a host without
 *    the module: each works, its output checked, over TCP.
 *  - v6only_listener: an IPv6 listener with IPV6_V6ONLY and an IPv4 one on
 *    the same port in one program (as Open MPI's ranks have): an IPv4
 *    client reaches the IPv4 one and an IPv6 client the IPv6 one, both
 *    over rdmashare (each listener on its own addresses).
 *  - v4mapped: an IPv6 socket connects to an IPv4-mapped address
 *    (::ffff:a.b.c.d; PyTorch's TCPStore does) and a dual-stack listener
 *    on :: takes it: over rdmashare, and both ends' names are v4-mapped
 *    IPv6 addresses, as over TCP.
 *  - port_names: a preloaded client's end has a port of its own, bound
 *    or chosen: its getsockname() is the server's getpeername() and
 *    accept()'s peer, a different port for each connection.
 *  - fstat_passed: fstat() says a listener, a connection, and an AC file
 *    that another process received (SCM_RIGHTS) are sockets; that process
 *    serves it.
 *  - node_cluster: Node.js's cluster: the primary accepts and passes each
 *    connection to a worker, whose libuv asks fstat() what it is.
 *  - curl: curl (a non-blocking connect, poll, then SO_ERROR) fetches the
 *    file from Python's http.server: both preloaded, over rdmashare; the
 *    server not preloaded, curl's connect refused over rdmashare, over TCP.
 *  - openmpi: Open MPI's mpirun, 4 ranks over its TCP BTL (rs_mpi: an
 *    allreduce and a ping-pong up to 1 MiB, results checked), first on a
 *    host without the module (TCP), then preloaded: the ping-pong's bytes
 *    over rdmashare, and TCP's segments fewer by at least what it would
 *    have needed for them.
 *  - early_calls: a library's constructor makes the calls the preload
 *    stands in for before the preload's constructor ran (PostgreSQL's
 *    libcap-ng closes a file in its own): they pass on.
 *  - listen_again: listen() on a listener sets its backlog, and epoll takes
 *    it with EPOLLEXCLUSIVE, registered before listen() and after, as
 *    nginx asks.
 *  - dup_listener: a listener's copies (dup, dup2, dup3, F_DUPFD) each
 *    accept over rdmashare on their own, the others closed, and free the
 *    port once all are closed.
 *  - raised_limit: a program that raises its file limit listens and
 *    connects on numbers past the one it started with, over rdmashare.
 *  - nginx: nginx sends the file with sendfile(2) to curl, two workers on
 *    one listener, then each on its own (reuseport): over rdmashare, and
 *    nginx logs no alert; a plain curl reaches it over TCP.
 *  - postgres: PostgreSQL and pgbench (kept connections, then one per
 *    transaction, each a forked backend), every transaction committed,
 *    over rdmashare; a plain pgbench reaches it over TCP.
 *  - openmpi_mixed: ranks 0 and 1 preloaded, 2 and 3 not: right results,
 *    the pair 0-1 over rdmashare, the ranks of either kind reach each other
 *    over TCP.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <libgen.h>
#include <net/if.h>

#include "common.h"

#include "kselftest_harness.h"

#define PORT		8300
#define SIZE		(16 << 20)
#define IN		"/tmp/rs-preload.in"
#define OUT		"/tmp/rs-preload.out"
#define LISTENERS	"/sys/kernel/debug/rdmashare/listeners"
#define FEED		"/tmp/rs-preload.feed"

static char run[512], mpi[600], early[600], cluster_js[600];
static const char *ip;

/* Bytes every device of rdmashare's sent, all told. */
static long rs_tx_bytes(void)
{
	return rs_devices_sum("stats/tx_bytes");
}

#define check_transport(m, rs0, tcp0, rdma) check_moved(m, rs0, tcp0, rdma, SIZE)

/* TCP segments sent, from /proc/net/snmp's second "Tcp:" line. */
static long tcp_out_segs(void)
{
	char line[1024], *tok;
	int col = -1, i, seen = 0;
	long v = -1;
	FILE *f;

	f = fopen("/proc/net/snmp", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Tcp:", 4))
			continue;
		for (i = 0, tok = strtok(line, " \n"); tok; tok = strtok(NULL, " \n"), i++) {
			if (!seen && !strcmp(tok, "OutSegs"))
				col = i;
			else if (seen && i == col)
				v = atol(tok);
		}
		seen = 1;
	}
	fclose(f);
	return v;
}

FIXTURE(pl) {
	long rs0, tcp0;
};

FIXTURE_SETUP(pl)
{
	char exe[512];
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ASSERT_LT(0, n);
	exe[n] = 0;
	snprintf(run, sizeof(run), "%s/../../userlib/build/rdmashare-run", dirname(exe));
	snprintf(mpi, sizeof(mpi), "%s/rs_mpi", exe);
	snprintf(early, sizeof(early), "%s/rs_early", exe);
	snprintf(cluster_js, sizeof(cluster_js), "%s/../rs_cluster.js", exe);
	/* An address with an RDMA device on its route (not lo's). */
	ip = getenv("RS_IP") ?: "127.0.0.1";
	if (access(run, X_OK) || rs_sh("command -v nc >/dev/null && command -v socat >/dev/null"))
		SKIP(return, "no rdmashare-run, nc or socat");
	ASSERT_EQ(0, rs_sh("test -s " IN " || head -c %d /dev/urandom > " IN, SIZE));
	unlink(OUT);
	self->rs0 = rs_tx_bytes();
	self->tcp0 = tcp_out_segs();
	ASSERT_LE(0, self->rs0);
	ASSERT_LE(0, self->tcp0);
}

FIXTURE_TEARDOWN(pl)
{
	unlink(OUT);
}

/*
 * Run @server in the background, wait until it listens on TCP's @port (and
 * on rdmashare's too if @rdma), run @client, wait for both: 0 if both exited 0
 * and the copy is whole.
 */
static int copy_with(const char *server, const char *client, int port, bool rdma)
{
	return rs_sh("(%s & pid=$!; for i in $(seq 100); do "
		     "ss -ltn | grep -q ':%d ' && { [ %d = 0 ] || grep -qw %d " LISTENERS "; } && "
		     "break; sleep 0.1; done; %s; c=$?; wait $pid; s=$?; "
		     "[ $c = 0 ] && [ $s = 0 ] && cmp -s " IN " " OUT ")",
		     server, port, rdma, port, client);
}

/* The copy (@size bytes) went over rdmashare, or over TCP. */
static void check_moved(struct __test_metadata *_metadata, long rs0, long tcp0, bool rdma,
			long size)
{
	long rs = rs_tx_bytes() - rs0, tcp = tcp_out_segs() - tcp0;

	TH_LOG("%ld bytes over rdmashare, %ld TCP segments", rs, tcp);
	if (rdma) {
		EXPECT_LE(size, rs);
		/* A 16 MiB copy takes at least 256 segments of 64 KiB on lo. */
		EXPECT_GT(32, tcp);
	} else {
		EXPECT_GT(SIZE / 16, rs);
		EXPECT_LE(SIZE >> 16, tcp);
	}
}

static void nc_pair(char *srv, char *cli, size_t len, const char *spre, const char *cpre)
{
	snprintf(srv, len, "%s nc -l %s %d > " OUT " < /dev/null", spre, ip, PORT);
	snprintf(cli, len, "%s nc -N %s %d < " IN, cpre, ip, PORT);
}

TEST_F_TIMEOUT(pl, nc_copy, 180)
{
	char srv[1024], cli[1024];

	nc_pair(srv, cli, sizeof(srv), run, run);
	ASSERT_EQ(0, copy_with(srv, cli, PORT, true));
	check_transport(_metadata, self->rs0, self->tcp0, true);
}

TEST_F_TIMEOUT(pl, socat_copy, 180)
{
	char srv[1024], cli[1024];

	snprintf(srv, sizeof(srv), "%s socat -u TCP-LISTEN:%d,bind=%s,reuseaddr "
		 "OPEN:" OUT ",creat,trunc", run, PORT, ip);
	snprintf(cli, sizeof(cli), "%s socat -u OPEN:" IN " TCP:%s:%d", run, ip, PORT);
	ASSERT_EQ(0, copy_with(srv, cli, PORT, true));
	check_transport(_metadata, self->rs0, self->tcp0, true);
}

TEST_F_TIMEOUT(pl, plain_server, 180)
{
	char srv[1024], cli[1024];

	nc_pair(srv, cli, sizeof(srv), "", run);
	ASSERT_EQ(0, copy_with(srv, cli, PORT, false));
	check_transport(_metadata, self->rs0, self->tcp0, false);
}

TEST_F_TIMEOUT(pl, plain_client, 180)
{
	char srv[1024], cli[1024];

	nc_pair(srv, cli, sizeof(srv), run, "");
	ASSERT_EQ(0, copy_with(srv, cli, PORT, true));
	check_transport(_metadata, self->rs0, self->tcp0, false);
}

TEST_F_TIMEOUT(pl, no_module_client, 180)
{
	char srv[1024], cli[1024], pre[700];

	/* Its own mount namespace, where /dev/rdmashare is /dev/null. */
	snprintf(pre, sizeof(pre), "unshare -m sh -c 'mount --bind /dev/null /dev/rdmashare && "
		 "exec \"$@\"' - %s", run);
	nc_pair(srv, cli, sizeof(srv), run, pre);
	ASSERT_EQ(0, copy_with(srv, cli, PORT, true));
	check_transport(_metadata, self->rs0, self->tcp0, false);
}

TEST_F_TIMEOUT(pl, policy_port, 180)
{
	char srv[1024], cli[1024], pre[600];

	snprintf(pre, sizeof(pre), "%s -p %d", run, PORT + 1);
	nc_pair(srv, cli, sizeof(srv), pre, pre);
	ASSERT_EQ(0, copy_with(srv, cli, PORT, false));
	check_transport(_metadata, self->rs0, self->tcp0, false);
}

/*
 * curl fetching the file from Python's http.server, each under @spre and
 * @cpre: 0 if curl succeeded and the copy is whole.  A port of its own:
 * the server closes first, and its TCP port stays in TIME_WAIT.
 */
#define HTTP_PORT	(PORT + 2)

static int fetch_with(const char *spre, const char *cpre, bool rdma)
{
	return rs_sh("(cd /tmp && exec %s python3 -m http.server %d --bind %s >/dev/null 2>&1) & "
		     "pid=$!; for i in $(seq 200); do "
		     "ss -ltn | grep -q ':%d ' && { [ %d = 0 ] || grep -qw %d " LISTENERS "; } && "
		     "break; sleep 0.1; done; "
		     "%s curl -sSf --max-time 60 -o " OUT " http://%s:%d/%s; c=$?; "
		     "kill $pid; wait $pid; [ $c = 0 ] && cmp -s " IN " " OUT,
		     spre, HTTP_PORT, ip, HTTP_PORT, rdma, HTTP_PORT, cpre, ip, HTTP_PORT, IN + 5);
}

TEST_F_TIMEOUT(pl, curl, 180)
{
	long rs0, tcp0;

	if (rs_sh("command -v curl >/dev/null && command -v python3 >/dev/null"))
		SKIP(return, "no curl or python3");
	ASSERT_EQ(0, fetch_with(run, run, true));
	check_transport(_metadata, self->rs0, self->tcp0, true);
	/* A plain server: curl's non-blocking connect goes to TCP. */
	rs0 = rs_tx_bytes();
	tcp0 = tcp_out_segs();
	ASSERT_EQ(0, fetch_with("", run, false));
	check_transport(_metadata, rs0, tcp0, false);
}

/* A number after the last @key in @path's text (progress comes first); -1 if none. */
static double number_after(const char *path, const char *key)
{
	static char buf[1 << 16];
	const char *p, *next;
	FILE *f;
	size_t n;

	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strstr(buf, key);
	while (p && (next = strstr(p + 1, key)))
		p = next;
	return p ? strtod(p + strlen(key), NULL) : -1;
}

/* The bytes iperf3's JSON in OUT says its server received; -1 on an error. */
static long iperf3_received(void)
{
	char bytes[32];

	if (rs_sh("python3 -c 'import json,sys; d=json.load(open(\"" OUT "\")); "
		  "print(-1 if \"error\" in d else d[\"end\"][\"sum_received\"][\"bytes\"])' "
		  "> " OUT ".n") ||
	    rs_read_file(OUT ".n", bytes, sizeof(bytes)))
		return -1;
	return atol(bytes);
}

TEST_F_TIMEOUT(pl, iperf3, 180)
{
	const char *dir[] = { "", "-R" };
	long bytes;
	int i;

	if (rs_sh("command -v iperf3 >/dev/null"))
		SKIP(return, "no iperf3");
	for (i = 0; i < 2; i++) {
		self->rs0 = rs_tx_bytes();
		self->tcp0 = tcp_out_segs();
		ASSERT_EQ(0, rs_sh("(%s iperf3 -s -1 -B %s -p %d >/dev/null 2>&1 & pid=$!; "
				   "for i in $(seq 100); do grep -qw %d " LISTENERS " && break; "
				   "sleep 0.1; done; timeout 60 %s iperf3 -c %s -p %d -t 2 %s -J > "
				   OUT "; c=$?; wait $pid; [ $c = 0 ])",
				   run, ip, PORT, PORT, run, ip, PORT, dir[i]));
		TH_LOG("iperf3 %s", dir[i][0] ? "reverse" : "forward");
		/* What iperf3 says it moved, all of it over rdmashare. */
		bytes = iperf3_received();
		ASSERT_LT(1 << 20, bytes);
		check_moved(_metadata, self->rs0, self->tcp0, true, bytes);
	}
}

/*
 * sockperf ping-pong, the server on select, poll and epoll (-F, which
 * needs a feed file: one TCP connection, both ends on the mux), and in its
 * default mode, blocked in recvfrom() with flags a TCP socket ignores.
 */
TEST_F_TIMEOUT(pl, sockperf, 180)
{
	static const char *const mux[] = { "s", "p", "e", NULL };
	char sr[256], pp[256];
	double seen;
	long rs, tcp;
	int i;

	if (rs_sh("command -v sockperf >/dev/null"))
		SKIP(return, "no sockperf");
	for (i = 0; i < 4; i++) {
		self->rs0 = rs_tx_bytes();
		self->tcp0 = tcp_out_segs();
		ASSERT_EQ(0, rs_sh("echo T:%s:%d > " FEED, ip, PORT));
		if (mux[i]) {
			snprintf(sr, sizeof(sr), "sr -f " FEED " -F %s", mux[i]);
			snprintf(pp, sizeof(pp), "pp -f " FEED " -F %s", mux[i]);
		} else {
			snprintf(sr, sizeof(sr), "sr --tcp -i %s -p %d", ip, PORT);
			snprintf(pp, sizeof(pp), "pp --tcp -i %s -p %d", ip, PORT);
		}
		ASSERT_EQ(0, rs_sh("(timeout 60 %s sockperf %s >/dev/null 2>&1 & "
				   "pid=$!; for i in $(seq 100); do grep -qw %d " LISTENERS " && break; "
				   "sleep 0.1; done; timeout 60 %s sockperf %s -t 2 "
				   "-m 64 > " OUT " 2>&1; c=$?; kill $pid; wait $pid; [ $c = 0 ])",
				   run, sr, PORT, run, pp));
		seen = number_after(OUT, "ReceivedMessages=");
		rs = rs_tx_bytes() - self->rs0;
		tcp = tcp_out_segs() - self->tcp0;
		TH_LOG("sockperf, server on %s: %.0f round trips, %ld bytes over rdmashare, %ld TCP segments",
		       !mux[i] ? "recvfrom" : mux[i][0] == 's' ? "select" :
		       mux[i][0] == 'p' ? "poll" : "epoll", seen, rs, tcp);
		/*
		 * A ping-pong that works: the debug kernel makes 50 to 120
		 * round trips a second here (98 in 2 s once, in CI).
		 */
		EXPECT_LT(20, seen);
		/* Each round trip is 64 B each way, none of it over TCP. */
		EXPECT_LE(seen * 128, rs);
		EXPECT_GT(32, tcp);
	}
}

/* Requests per second of @test ("SET", "GET") in redis-benchmark -q's output. */
static double rps(const char *test)
{
	char key[32];

	snprintf(key, sizeof(key), "%s: ", test);
	return number_after(OUT, key);
}

TEST_F_TIMEOUT(pl, redis, 300)
{
	char per_peer[16], path[128], nr[16];
	long rs, tcp;
	int qps;

	if (rs_sh("command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null"))
		SKIP(return, "no redis");
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/qps_per_peer", per_peer, sizeof(per_peer)));
	ASSERT_EQ(0, rs_sh("%s redis-server --port %d --bind %s --save '' --appendonly no "
			   "--protected-mode no --daemonize no >/dev/null 2>&1 & "
			   "for i in $(seq 100); do grep -qw %d " LISTENERS " && break; sleep 0.1; done",
			   run, PORT, ip, PORT));
	ASSERT_EQ(0, rs_sh("timeout 120 %s redis-benchmark -h %s -p %d -t set,get -n 20000 -P 16 -q "
			   "> " OUT " 2>&1", run, ip, PORT));
	TH_LOG("-P 16: SET %.0f/s, GET %.0f/s", rps("SET"), rps("GET"));
	EXPECT_LT(0, rps("SET"));
	EXPECT_LT(0, rps("GET"));
	ASSERT_EQ(0, rs_sh("timeout 120 %s redis-benchmark -h %s -p %d -t get -n 5000 -c 500 -q "
			   "> " OUT " 2>&1", run, ip, PORT));
	/*
	 * The QPs to this host's address (others, to its IPv6 address, may
	 * be up from earlier tests): both ends are this host's, each has
	 * its QPs to the other.
	 */
	snprintf(path, sizeof(path), RS_SYSFS "/peers/%s/qps", ip);
	ASSERT_EQ(0, rs_read_file(path, nr, sizeof(nr)));
	qps = atoi(nr);
	TH_LOG("-c 500: GET %.0f/s over %d QPs (qps_per_peer %s)", rps("GET"), qps, per_peer);
	EXPECT_LT(0, rps("GET"));
	EXPECT_LE(1, qps);
	EXPECT_GE(2 * atoi(per_peer), qps);
	EXPECT_EQ(0, rs_sh("%s redis-cli -h %s -p %d shutdown nosave >/dev/null 2>&1; "
			   "for i in $(seq 50); do pgrep -x redis-server >/dev/null || exit 0; "
			   "sleep 0.1; done; exit 1", run, ip, PORT));
	rs = rs_tx_bytes() - self->rs0;
	tcp = tcp_out_segs() - self->tcp0;
	TH_LOG("%ld bytes over rdmashare, %ld TCP segments", rs, tcp);
	/* 45000 requests and their answers, 20 bytes each at least. */
	EXPECT_LE(45000 * 20, rs);
	EXPECT_GT(32, tcp);
}

/*
 * The programs above, one end each time without rdmashare: the server not
 * preloaded, the client not preloaded, the client on a host without the
 * module.  Each runs as it would over TCP alone, its output checked, with
 * at least @segs TCP segments sent and hardly a byte over rdmashare.
 */
enum { APP_SOCAT, APP_IPERF3, APP_SOCKPERF, APP_REDIS, NR_APPS };

/*
 * A port for each run: over TCP, the end that closes first leaves its
 * port in TIME_WAIT, where a server without SO_REUSEADDR (sockperf's, and
 * the tests' after this one on PORT) could not bind it again.
 */
#define FB_PORT(app, side)	(PORT + 60 + 3 * (app) + (side))

static const char *const app_names[NR_APPS] = { "socat", "iperf3", "sockperf", "redis" };

/*
 * @app's server under @spre in the background until it listens on TCP
 * (and on rdmashare too if @rdma), its client under @cpre, the server
 * stopped (or ended by its timeout, should the client fail before it
 * connects): 0 if the client exited 0 and its output is right; the TCP
 * segments its work must have taken in *@segs.
 */
static int app_run(int app, int port, const char *spre, const char *cpre, bool rdma,
		   long *segs)
{
	char srv[1024], cli[1024], stop[256];
	double n;

	*segs = 0;
	switch (app) {
	case APP_SOCAT:
		snprintf(srv, sizeof(srv), "timeout 60 %s socat -u TCP-LISTEN:%d,bind=%s,reuseaddr "
			 "OPEN:" OUT ",creat,trunc", spre, port, ip);
		snprintf(cli, sizeof(cli), "%s socat -u OPEN:" IN " TCP:%s:%d", cpre, ip, port);
		if (copy_with(srv, cli, port, rdma))
			return -1;
		*segs = SIZE >> 16;
		return 0;
	case APP_IPERF3:
		snprintf(srv, sizeof(srv), "timeout 60 %s iperf3 -s -1 -B %s -p %d >/dev/null 2>&1",
			 spre, ip, port);
		snprintf(cli, sizeof(cli), "timeout 60 %s iperf3 -c %s -p %d -t 2 -J > " OUT,
			 cpre, ip, port);
		stop[0] = 0;
		break;
	case APP_SOCKPERF:
		snprintf(srv, sizeof(srv), "timeout 60 %s sockperf sr --tcp -i %s -p %d >/dev/null 2>&1",
			 spre, ip, port);
		snprintf(cli, sizeof(cli), "timeout 60 %s sockperf pp --tcp -i %s -p %d -t 2 -m 64 "
			 "> " OUT " 2>&1", cpre, ip, port);
		snprintf(stop, sizeof(stop), "kill $pid;");
		break;
	default:
		snprintf(srv, sizeof(srv), "timeout 120 %s redis-server --port %d --bind %s --save '' "
			 "--appendonly no --protected-mode no --daemonize no >/dev/null 2>&1",
			 spre, port, ip);
		snprintf(cli, sizeof(cli), "timeout 120 %s redis-benchmark -h %s -p %d -t set,get "
			 "-n 2000 -q > " OUT " 2>&1", cpre, ip, port);
		snprintf(stop, sizeof(stop), "redis-cli -h %s -p %d shutdown nosave >/dev/null 2>&1;",
			 ip, port);
		break;
	}
	if (rs_sh("(%s & pid=$!; for i in $(seq 100); do "
		  "ss -ltn | grep -q ':%d ' && { [ %d = 0 ] || grep -qw %d " LISTENERS "; } && "
		  "break; sleep 0.1; done; %s; c=$?; %s wait $pid; [ $c = 0 ])",
		  srv, port, rdma, port, cli, stop))
		return -1;
	switch (app) {
	case APP_IPERF3:
		/* The bytes it says it moved, a segment each 64 KiB at most. */
		n = iperf3_received();
		*segs = n / 65536;
		return n > 1 << 20 ? 0 : -1;
	case APP_SOCKPERF:
		/* A segment each way per round trip. */
		n = number_after(OUT, "ReceivedMessages=");
		*segs = 2 * n;
		return n > 20 ? 0 : -1;
	default:
		/* Every request and its answer, 50 clients in turn. */
		*segs = 2000;
		return rps("SET") > 0 && rps("GET") > 0 ? 0 : -1;
	}
}

TEST_F_TIMEOUT(pl, fallbacks, 600)
{
	static const char *const sides[] = { "plain server", "plain client", "client without the module" };
	char nomod[700];
	long rs, tcp, segs;
	int app, side;

	if (rs_sh("{ command -v iperf3 && command -v sockperf && command -v redis-server && "
		  "command -v redis-benchmark && command -v redis-cli; } >/dev/null"))
		SKIP(return, "no iperf3, sockperf or redis");
	/* Its own mount namespace, where /dev/rdmashare is /dev/null. */
	snprintf(nomod, sizeof(nomod), "unshare -m sh -c 'mount --bind /dev/null /dev/rdmashare && "
		 "exec \"$@\"' - %s", run);
	for (app = 0; app < NR_APPS; app++) {
		for (side = 0; side < 3; side++) {
			self->rs0 = rs_tx_bytes();
			self->tcp0 = tcp_out_segs();
			EXPECT_EQ(0, app_run(app, FB_PORT(app, side), side ? run : "",
					     side == 1 ? "" : side ? nomod : run, side != 0, &segs))
				TH_LOG("%s, %s: failed", app_names[app], sides[side]);
			rs = rs_tx_bytes() - self->rs0;
			tcp = tcp_out_segs() - self->tcp0;
			TH_LOG("%s, %s: %ld bytes over rdmashare, %ld TCP segments (%ld at least)",
			       app_names[app], sides[side], rs, tcp, segs);
			EXPECT_GT(64 << 10, rs);
			EXPECT_LE(segs, tcp);
			EXPECT_LT(0, segs);
		}
	}
}

/* Python's end of a test: c sends 1 MiB and closes, a counts it. */
#define PY_SEND_1M \
	"def send():\n" \
	"    c.sendall(bytes(1 << 20))\n" \
	"    c.close()\n" \
	"threading.Thread(target=send).start()\n" \
	"n = 0\n" \
	"while (b := a.recv(1 << 16)):\n" \
	"    n += len(b)\n" \
	"assert n == 1 << 20, n\n"

TEST_F_TIMEOUT(pl, v6only_listener, 60)
{
	const char *ip6 = getenv("RS_IP6");

	if (!ip6)
		SKIP(return, "no IPv6 address (RS_IP6)");
	/*
	 * 1 MiB from a client (a thread) to the IPv4 listener, which counts
	 * it, then from an IPv6 client to the IPv6 one.
	 */
	ASSERT_EQ(0, rs_sh("timeout 30 %s python3 -c '\n"
			   "import socket, threading\n"
			   "s6 = socket.socket(socket.AF_INET6)\n"
			   "s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)\n"
			   "s6.bind((\"::\", %d))\n"
			   "s6.listen()\n"
			   "s4 = socket.socket()\n"
			   "s4.bind((\"%s\", %d))\n"
			   "s4.listen()\n"
			   "c = socket.create_connection((\"%s\", %d))\n"
			   "s4.settimeout(10)\n"
			   "a = s4.accept()[0]\n"
			   PY_SEND_1M
			   "c = socket.create_connection((\"%s\", %d))\n"
			   "s6.settimeout(10)\n"
			   "a = s6.accept()[0]\n"
			   PY_SEND_1M "'", run, PORT, ip, PORT, ip, PORT, ip6, PORT));
	check_moved(_metadata, self->rs0, self->tcp0, true, 2 << 20);
}

TEST_F_TIMEOUT(pl, peer_closed_name, 60)
{
	/*
	 * Once the client closed its end and the server read to the end,
	 * the server's getpeername() still names the client, as TCP's does
	 * in CLOSE_WAIT (Open MPI asks then).
	 */
	ASSERT_EQ(0, rs_sh("timeout 30 %s python3 -c '\n"
			   "import socket, threading\n"
			   "l = socket.socket()\n"
			   "l.bind((\"%s\", %d))\n"
			   "l.listen()\n"
			   "c = socket.create_connection((\"%s\", %d))\n"
			   "l.settimeout(10)\n"
			   "a, peer = l.accept()\n"
			   PY_SEND_1M
			   "assert a.getpeername() == peer, (a.getpeername(), peer)\n'",
			   run, ip, PORT, ip, PORT));
	check_moved(_metadata, self->rs0, self->tcp0, true, 1 << 20);
}

TEST_F_TIMEOUT(pl, port_names, 60)
{
	/*
	 * A preloaded client's end has a port of its own, as TCP's has: its
	 * getsockname() is the server's getpeername() and accept()'s peer,
	 * one port per connection, the one it bound if it bound one.  A
	 * socket bound to an address alone (IP_BIND_ADDRESS_NO_PORT, as
	 * nginx's proxy_bind makes) has none to give, and connects all the
	 * same, non-blocking too.  All five over rdmashare, says the preload.
	 */
	ASSERT_EQ(0, rs_sh("timeout 30 env RDMASHARE_DEBUG=1 %s python3 -c '\n"
			   "import socket, threading\n"
			   "l = socket.socket()\n"
			   "l.bind((\"%s\", %d))\n"
			   "l.listen()\n"
			   "l.settimeout(10)\n"
			   "b = socket.socket()\n"
			   "b.bind((\"0.0.0.0\", 0))\n"
			   "want = b.getsockname()[1]\n"
			   "b.connect((\"%s\", %d))\n"
			   "cs = [b] + [socket.create_connection((\"%s\", %d)) for i in range(3)]\n"
			   "got = dict((peer, a) for a, peer in (l.accept() for c in cs))\n"
			   "names = [(c.getsockname(), c.getpeername()) for c in cs]\n"
			   "assert b.getsockname()[1] == want, (want, names)\n"
			   "assert sorted(got) == sorted(n[0] for n in names), (list(got), names)\n"
			   "assert all(n[0][1] for n in names), names\n"
			   "for c in cs:\n"
			   "    a = got[c.getsockname()]\n"
			   "    assert a.getpeername() == c.getsockname(), (a.getpeername(), names)\n"
			   "    assert a.getsockname() == c.getpeername(), (a.getsockname(), names)\n"
			   "n = socket.socket()\n"
			   "n.setsockopt(socket.IPPROTO_IP, 24, 1)\n"
			   "n.bind((\"%s\", 0))\n"
			   "n.setblocking(False)\n"
			   "assert n.connect_ex((\"%s\", %d)) == 115\n"
			   "n.settimeout(10)\n"
			   "n.sendall(b\"n\")\n"
			   "a = l.accept()[0]\n"
			   "assert a.recv(1) == b\"n\"\n"
			   "c = cs[-1]\n"
			   "a = got[c.getsockname()]\n"
			   PY_SEND_1M "' 2>/tmp/pl-names.log; r=$?; cat /tmp/pl-names.log >&2;"
			   " test $r -eq 0 &&"
			   " test $(grep -c \"port %d: rdmashare$\" /tmp/pl-names.log) -eq 4 &&"
			   " grep -q \"connect fd [0-9]*: rdmashare$\" /tmp/pl-names.log",
			   run, ip, PORT, ip, PORT, ip, PORT, ip, ip, PORT, PORT));
	check_moved(_metadata, self->rs0, self->tcp0, true, 1 << 20);
}

TEST_F_TIMEOUT(pl, fstat_passed, 60)
{
	/*
	 * fstat() says that a listener, a connection and an AC file passed
	 * to a new process (SCM_RIGHTS; its preload never saw it) are
	 * sockets, and that process uses it as one.
	 */
	ASSERT_EQ(0, rs_sh("timeout 30 %s python3 -c '\n"
			   "import os, socket, stat, subprocess, sys\n"
			   "CHILD = \"\"\"\n"
			   "import os, socket, stat, sys\n"
			   "q = socket.socket(fileno=int(sys.argv[1]))\n"
			   "fd = socket.recv_fds(q, 1, 1)[1][0]\n"
			   "assert stat.S_ISSOCK(os.fstat(fd).st_mode), os.fstat(fd)\n"
			   "s = socket.socket(fileno=fd)\n"
			   "assert s.type == socket.SOCK_STREAM and s.getpeername()[1], s\n"
			   "n = 0\n"
			   "while (b := s.recv(1 << 16)):\n"
			   "    n += len(b)\n"
			   "s.sendall(str(n).encode())\n"
			   "s.close()\n"
			   "\"\"\"\n"
			   "l = socket.socket()\n"
			   "l.bind((\"%s\", %d))\n"
			   "l.listen()\n"
			   "c = socket.create_connection((\"%s\", %d))\n"
			   "l.settimeout(10)\n"
			   "a = l.accept()[0]\n"
			   "for s in (l, c, a):\n"
			   "    assert stat.S_ISSOCK(os.fstat(s.fileno()).st_mode), s\n"
			   "p, q = socket.socketpair()\n"
			   "kid = subprocess.Popen([sys.executable, \"-c\", CHILD, str(q.fileno())],\n"
			   "                       pass_fds=[q.fileno()])\n"
			   "socket.send_fds(p, [b\"x\"], [a.fileno()])\n"
			   "a.close()\n"
			   "c.sendall(bytes(1 << 20))\n"
			   "c.shutdown(socket.SHUT_WR)\n"
			   "c.settimeout(10)\n"
			   "got = c.recv(64)\n"
			   "assert got == str(1 << 20).encode(), got\n"
			   "assert kid.wait(10) == 0\n'",
			   run, ip, PORT, ip, PORT));
	check_moved(_metadata, self->rs0, self->tcp0, true, 1 << 20);
}

TEST_F_TIMEOUT(pl, node_cluster, 90)
{
	/*
	 * Node.js's cluster: the primary accepts, passes each connection to
	 * a worker, which asks fstat() what it got (libuv refused an AC file
	 * before fstat() said it is a socket); 40 answers of 64 KiB, each on
	 * its own connection, every byte and the client's port checked.
	 */
	if (rs_sh("command -v node >/dev/null"))
		SKIP(return, "no node");
	ASSERT_EQ(0, rs_sh("timeout 60 %s node %s %s %d 40", run, cluster_js, ip, PORT));
	check_moved(_metadata, self->rs0, self->tcp0, true, 40 << 16);
}

TEST_F(pl, early_calls)
{
	/*
	 * rs_early's library makes every call the preload stands in for in
	 * its constructor, before the preload's has run.
	 */
	ASSERT_EQ(0, rs_sh("timeout 30 %s %s", run, early));
}

TEST_F_TIMEOUT(pl, listen_again, 60)
{
	/*
	 * listen() again on a listener sets a new backlog, as TCP's does
	 * (nginx calls it twice; ss shows it where it shows backlogs), and
	 * epoll registrations with EPOLLEXCLUSIVE (nginx's workers sharing
	 * one listener), made before listen() and after, are taken and
	 * report the connection; then 1 MiB over it.
	 */
	ASSERT_EQ(0, rs_sh("timeout 30 %s python3 -c '\n"
			   "import socket, select, subprocess, threading\n"
			   "def backlog():\n"
			   "    return subprocess.run([\"ss\", \"-ltnH\", \"sport = :%d\"],\n"
			   "                          capture_output=True, text=True).stdout.split()[2]\n"
			   "l = socket.socket()\n"
			   "l.bind((\"%s\", %d))\n"
			   "eps = [select.epoll(), select.epoll()]\n"
			   "eps[0].register(l.fileno(), select.EPOLLIN | select.EPOLLEXCLUSIVE)\n"
			   "l.listen(8)\n"
			   "b = backlog()\n"
			   "l.listen(64)\n"
			   "eps[1].register(l.fileno(), select.EPOLLIN | select.EPOLLEXCLUSIVE)\n"
			   "# Without inet_diag (the debug kernel) ss shows 0 for both.\n"
			   "assert b == \"0\" or (b, backlog()) == (\"8\", \"64\"), b\n"
			   "c = socket.create_connection((\"%s\", %d))\n"
			   "for ep in eps:\n"
			   "    ev = ep.poll(10)\n"
			   "    assert ev == [(l.fileno(), select.EPOLLIN)], ev\n"
			   "a = l.accept()[0]\n"
			   PY_SEND_1M "'", run, PORT, ip, PORT, ip, PORT));
	check_moved(_metadata, self->rs0, self->tcp0, true, 1 << 20);
}

/*
 * nginx with sendfile, @workers workers, its listen directive's options
 * @opts, under @spre, serving the test's file to curl under @cpre: 0 if
 * both ran and the copy is whole, and nginx logged no alert (a listen()
 * or epoll_ctl() that failed is one, and nginx goes on without it).
 */
#define NGINX_PORT	(PORT + 3)
#define NGINX_DIR	"/tmp/rs-preload.nginx"

static int nginx_with(const char *spre, const char *cpre, int workers, const char *opts)
{
	return rs_sh("rm -rf " NGINX_DIR " && mkdir -p " NGINX_DIR "/tmp && "
		     "ln -s " IN " " NGINX_DIR "/file && "
		     "printf '%%s\\n' 'daemon off;' 'worker_processes %d;' "
		     "'error_log " NGINX_DIR "/error.log warn;' 'pid " NGINX_DIR "/pid;' "
		     "'events { worker_connections 64; }' 'http { access_log off; "
		     "sendfile on; tcp_nopush on; client_body_temp_path " NGINX_DIR "/tmp; "
		     "proxy_temp_path " NGINX_DIR "/tmp; fastcgi_temp_path " NGINX_DIR "/tmp; "
		     "uwsgi_temp_path " NGINX_DIR "/tmp; scgi_temp_path " NGINX_DIR "/tmp; "
		     "server { listen %s:%d %s; root " NGINX_DIR "; } }' > " NGINX_DIR "/conf && "
		     "{ %s nginx -c " NGINX_DIR "/conf -e " NGINX_DIR "/error.log & pid=$!; "
		     "for i in $(seq 100); do ss -ltn | grep -q ':%d ' && grep -qw %d " LISTENERS " && "
		     "break; sleep 0.1; done; "
		     "%s curl -sSf --max-time 60 -o " OUT " http://%s:%d/file; c=$?; "
		     "kill $pid; wait $pid; cat " NGINX_DIR "/error.log; "
		     "[ $c = 0 ] && cmp -s " IN " " OUT " && "
		     "! grep -q '\\[alert\\]\\|\\[emerg\\]\\|\\[crit\\]' " NGINX_DIR "/error.log; }",
		     workers, ip, NGINX_PORT, opts, spre, NGINX_PORT, NGINX_PORT, cpre, ip, NGINX_PORT);
}

TEST_F_TIMEOUT(pl, dup_listener, 60)
{
	/*
	 * Copies of a listener by every call that makes one (dup, dup2,
	 * dup3, fcntl and fcntl64 with F_DUPFD and F_DUPFD_CLOEXEC, Python's
	 * socket.dup()), dup() taking the lowest free number as it must
	 * (the hidden halves go higher), the original closed: each number
	 * accepts 256 KiB over rdmashare, and keeps doing so after those
	 * before it are closed; once all are, the port is free (the hidden
	 * halves went).
	 */
	ASSERT_EQ(0, rs_sh("timeout 30 %s python3 -c '\n"
			   "import ctypes, errno, fcntl, os, socket\n"
			   "libc = ctypes.CDLL(None, use_errno=True)\n"
			   "l = socket.socket()\n"
			   "l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
			   "l.bind((\"%s\", %d))\n"
			   "l.listen()\n"
			   "fd = l.fileno()\n"
			   "low = os.open(\"/dev/null\", os.O_RDONLY)\n"
			   "os.close(low)\n"
			   "nrs = [libc.dup(fd), l.dup().detach(), libc.dup2(fd, 60),\n"
			   "       libc.dup3(fd, 61, os.O_CLOEXEC),\n"
			   "       libc.fcntl(fd, fcntl.F_DUPFD, 70),\n"
			   "       libc.fcntl64(fd, fcntl.F_DUPFD_CLOEXEC, 80)]\n"
			   "assert nrs[0] == low and nrs[2:] == [60, 61, 70, 80], (low, nrs)\n"
			   "assert nrs[1] >= 0, nrs\n"
			   "l.close()\n"
			   "for nr in nrs:\n"
			   "    s = socket.socket(fileno=nr)\n"
			   "    s.settimeout(10)\n"
			   "    c = socket.create_connection((\"%s\", %d))\n"
			   "    a = s.accept()[0]\n"
			   "    c.sendall(bytes(1 << 18))\n"
			   "    c.close()\n"
			   "    n = 0\n"
			   "    while (b := a.recv(1 << 16)):\n"
			   "        n += len(b)\n"
			   "    assert n == 1 << 18, (nr, n)\n"
			   "    a.close()\n"
			   "    s.close()\n"
			   "c = socket.socket()\n"
			   "assert c.connect_ex((\"%s\", %d)) == errno.ECONNREFUSED\n"
			   "'", run, ip, PORT, ip, PORT, ip, PORT));
	check_moved(_metadata, self->rs0, self->tcp0, true, 6 << 18);
}

TEST_F_TIMEOUT(pl, raised_limit, 60)
{
	/*
	 * A program that starts with a file limit of 1024 and raises it
	 * (redis-server does) listens and connects on numbers past 1024:
	 * the preload's table has them, and 1 MiB goes over rdmashare.
	 */
	ASSERT_EQ(0, rs_sh("ulimit -n 1024 && timeout 30 env RDMASHARE_DEBUG=1 %s python3 -c '\n"
			   "import os, resource, socket, threading\n"
			   "resource.setrlimit(resource.RLIMIT_NOFILE, (8192, 8192))\n"
			   "def high(s, nr):\n"
			   "    os.dup2(s.detach(), nr)\n"
			   "    return socket.socket(fileno=nr)\n"
			   "l = high(socket.socket(), 5000)\n"
			   "l.bind((\"%s\", %d))\n"
			   "l.listen()\n"
			   "c = high(socket.socket(), 6000)\n"
			   "c.connect((\"%s\", %d))\n"
			   "l.settimeout(10)\n"
			   "a = l.accept()[0]\n"
			   PY_SEND_1M "' 2>/tmp/pl-limit.log; r=$?; cat /tmp/pl-limit.log >&2;"
			   " test $r -eq 0 && grep -q \"listen fd 5000 port %d: rdmashare and TCP\" "
			   "/tmp/pl-limit.log", run, ip, PORT, ip, PORT, PORT));
	check_moved(_metadata, self->rs0, self->tcp0, true, 1 << 20);
}

TEST_F_TIMEOUT(pl, nginx, 180)
{
	long rs0, tcp0;

	if (rs_sh("command -v nginx >/dev/null && command -v curl >/dev/null"))
		SKIP(return, "no nginx or curl");
	/* Two workers on one listener, then each on its own (reuseport). */
	ASSERT_EQ(0, nginx_with(run, run, 2, ""));
	check_transport(_metadata, self->rs0, self->tcp0, true);
	rs0 = rs_tx_bytes();
	tcp0 = tcp_out_segs();
	ASSERT_EQ(0, nginx_with(run, run, 2, "reuseport"));
	check_transport(_metadata, rs0, tcp0, true);
	/* A plain client reaches the preloaded server over TCP. */
	rs0 = rs_tx_bytes();
	tcp0 = tcp_out_segs();
	ASSERT_EQ(0, nginx_with(run, "", 1, ""));
	check_transport(_metadata, rs0, tcp0, false);
}

/*
 * PostgreSQL on its own cluster, and pgbench: TPC-B-like transactions from
 * 4 clients for 2 s on kept connections, then with a new connection (a
 * forked backend) for every transaction.  One server for both runs of the
 * test: the debug kernel takes most of a minute to make a cluster.
 */
#define PG_PORT		(PORT + 4)
#define PG_DIR		"/tmp/rs-preload.pg"
#define PG_BIN		"/usr/lib/postgresql/15/bin"
/* As postgres, in this process group (su -c would start a session of its own). */
#define PG_AS		"setpriv --reuid=postgres --regid=postgres --init-groups "
#define PG_STOP		"{ ! test -e " PG_DIR "/data/postmaster.pid || " PG_AS PG_BIN \
			"/pg_ctl -D " PG_DIR "/data stop -m immediate >/dev/null 2>&1; }"

/* A new cluster, its server started under @spre: 0 once it takes connections. */
static int pg_start(const char *spre)
{
	return rs_sh("rm -rf " PG_DIR " && mkdir " PG_DIR " && chown postgres " PG_DIR " && "
		     "timeout 90 " PG_AS PG_BIN "/initdb -D " PG_DIR "/data -A trust >/dev/null && "
		     "echo 'host all all 0.0.0.0/0 trust' >> " PG_DIR "/data/pg_hba.conf && "
		     "{ " PG_AS "%s " PG_BIN "/postgres -D " PG_DIR "/data -k " PG_DIR " -h %s -p %d "
		     "> " PG_DIR "/log 2>&1 & } && "
		     "for i in $(seq 300); do grep -q 'ready to accept' " PG_DIR "/log && exit 0; "
		     "sleep 0.1; done; echo '# the server did not start:'; cat " PG_DIR "/log; false",
		     spre, ip, PG_PORT);
}

/*
 * pgbench and psql under @cpre (the tables made first if @init): 0 if
 * every transaction committed and the accounts are all there.
 */
static int pg_clients(const char *cpre, bool init)
{
	return rs_sh("b='timeout 60 %s pgbench -h %s -p %d -U postgres'; : > " OUT "; "
		     "{ [ %d = 0 ] || $b -i -s 1 postgres >> " OUT " 2>&1; } && "
		     "$b -c 4 -j 2 -T 2 postgres >> " OUT " 2>&1 && "
		     "$b -C -c 4 -j 2 -T 2 postgres >> " OUT " 2>&1 && "
		     "n=$(timeout 30 %s psql -h %s -p %d -U postgres -tAc "
		     "'select count(*) from pgbench_accounts' postgres) && [ \"$n\" = 100000 ] && "
		     "[ $(grep -c 'failed transactions: 0 ' " OUT ") = 2 ] || "
		     "{ echo '# failed; the server said:'; tail -n 20 " PG_DIR "/log; "
		     "echo '# pgbench said:'; cat " OUT "; false; }",
		     cpre, ip, PG_PORT, init, cpre, ip, PG_PORT);
}

TEST_F_TIMEOUT(pl, postgres, 240)
{
	long rs0, tcp0;
	int ret;

	if (rs_sh("test -x " PG_BIN "/postgres && command -v pgbench >/dev/null && id postgres "
		  ">/dev/null 2>&1"))
		SKIP(return, "no PostgreSQL 15");
	if (pg_start(run)) {
		rs_sh(PG_STOP);
		ASSERT_TRUE(false) TH_LOG("PostgreSQL did not start");
	}
	ret = pg_clients(run, true);
	if (!ret) {
		TH_LOG("pgbench, a connection per transaction: %.0f tps",
		       number_after(OUT, "tps = "));
		check_moved(_metadata, self->rs0, self->tcp0, true, 1 << 20);
		/* A plain pgbench and psql reach the preloaded server over TCP. */
		rs0 = rs_tx_bytes();
		tcp0 = tcp_out_segs();
		ret = pg_clients("", false);
		if (!ret)
			check_moved(_metadata, rs0, tcp0, false, 1 << 20);
	}
	rs_sh(PG_STOP);
	ASSERT_EQ(0, ret);
}

TEST_F_TIMEOUT(pl, v4mapped, 60)
{
	/* 1 MiB from an IPv6 socket to ::ffff:ip, and the names it sees. */
	ASSERT_EQ(0, rs_sh("timeout 30 %s python3 -c '\n"
			   "import socket, threading\n"
			   "m = \"::ffff:%s\"\n"
			   "l = socket.socket(socket.AF_INET6)\n"
			   "l.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)\n"
			   "l.bind((\"::\", %d))\n"
			   "l.listen()\n"
			   "c = socket.socket(socket.AF_INET6)\n"
			   "c.connect((m, %d))\n"
			   "l.settimeout(10)\n"
			   "a, peer = l.accept()\n"
			   "names = [peer, c.getpeername(), c.getsockname(), a.getsockname()]\n"
			   "assert all(n[0] == m and len(n) == 4 for n in names), names\n"
			   "assert c.getpeername()[1] == %d, names\n"
			   PY_SEND_1M "'", run, ip, PORT, PORT, PORT));
	check_moved(_metadata, self->rs0, self->tcp0, true, 1 << 20);
}

/* The name of the interface that has @addr (an IPv4 address); 0 or -1. */
static int if_of(const char *addr, char *name, size_t len)
{
	struct ifaddrs *ifa, *i;
	struct in_addr want;
	int ret = -1;

	if (inet_pton(AF_INET, addr, &want) != 1 || getifaddrs(&ifa))
		return -1;
	for (i = ifa; i; i = i->ifa_next) {
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == want.s_addr) {
			snprintf(name, len, "%s", i->ifa_name);
			ret = 0;
			break;
		}
	}
	freeifaddrs(ifa);
	return ret;
}

/*
 * Run Open MPI: "@pre mpirun ... @apps" with rs_mpi's results checked;
 * the bytes its ping-pong moved, or -1.  The TCP BTL and the out-of-band
 * channel on RS_IP's interface (127.0.0.1 has no RDMA device), over IPv4
 * alone (see Documentation/preload.rst).
 */
static long mpi_run(struct __test_metadata *_metadata, const char *pre, const char *apps)
{
	char ifname[IF_NAMESIZE], bytes[32];

	if (if_of(ip, ifname, sizeof(ifname))) {
		TH_LOG("no interface has %s", ip);
		return -1;
	}
	if (rs_sh("timeout 150 %s mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self "
		  "--mca btl_tcp_if_include %s --mca oob_tcp_if_include %s "
		  "--mca btl_tcp_disable_family 6 %s > " OUT " 2>&1 && "
		  "grep -q '^allreduce ok: 65536 ints, 4 ranks$' " OUT " && "
		  "sed -n 's/^pingpong ok: \\([0-9]*\\) bytes, 2 pairs$/\\1/p' " OUT " > " OUT ".n",
		  pre, ifname, ifname, apps) ||
	    rs_read_file(OUT ".n", bytes, sizeof(bytes)) || !atol(bytes)) {
		rs_sh("cat " OUT " >&2");
		return -1;
	}
	return atol(bytes);
}

/* rs_mpi, or why the test cannot run: it fails, it does not skip. */
static const char *mpi_prog(struct __test_metadata *_metadata)
{
	if (access(mpi, X_OK) || rs_sh("command -v mpirun >/dev/null")) {
		TH_LOG("no %s or no mpirun: Open MPI (openmpi-bin, libopenmpi-dev) was "
		       "missing when the selftests were built (make deps installs it)", mpi);
		return NULL;
	}
	return mpi;
}

TEST_F_TIMEOUT(pl, openmpi, 400)
{
	char pre[700], apps[700];
	const char *prog = mpi_prog(_metadata);
	long moved, rs, tcp, tcp_only;

	ASSERT_NE(NULL, prog);
	snprintf(apps, sizeof(apps), "-np 4 %s", prog);

	/* Without the module (/dev/rdmashare is /dev/null): all over TCP. */
	snprintf(pre, sizeof(pre), "unshare -m sh -c 'mount --bind /dev/null /dev/rdmashare && "
		 "exec \"$@\"' - %s", run);
	moved = mpi_run(_metadata, pre, apps);
	ASSERT_LT(0, moved);
	rs = rs_tx_bytes() - self->rs0;
	tcp_only = tcp_out_segs() - self->tcp0;
	TH_LOG("no module: %ld bytes moved, %ld over rdmashare, %ld TCP segments", moved, rs,
	       tcp_only);
	EXPECT_GT(moved / 16, rs);
	EXPECT_LE(moved >> 16, tcp_only);

	self->rs0 = rs_tx_bytes();
	self->tcp0 = tcp_out_segs();
	ASSERT_EQ(moved, mpi_run(_metadata, run, apps));
	rs = rs_tx_bytes() - self->rs0;
	tcp = tcp_out_segs() - self->tcp0;
	TH_LOG("preloaded: %ld bytes moved, %ld over rdmashare, %ld TCP segments", moved, rs, tcp);
	EXPECT_LE(moved, rs);
	/*
	 * mpirun and the ranks still talk over TCP on 127.0.0.1 (PMIx), but
	 * the payload is not there: at least a segment of 64 KiB fewer for
	 * each 64 KiB it moved.
	 */
	EXPECT_GE(tcp_only - (moved >> 16), tcp);
}

TEST_F_TIMEOUT(pl, openmpi_mixed, 300)
{
	const char *prog = mpi_prog(_metadata);
	char apps[1400];
	long moved, rs, tcp;

	ASSERT_NE(NULL, prog);
	snprintf(apps, sizeof(apps), "-np 2 %s %s : -np 2 %s", run, prog, prog);
	moved = mpi_run(_metadata, "", apps);
	ASSERT_LT(0, moved);
	rs = rs_tx_bytes() - self->rs0;
	tcp = tcp_out_segs() - self->tcp0;
	TH_LOG("%ld bytes moved, %ld over rdmashare, %ld TCP segments", moved, rs, tcp);
	/* Each pair moved half: 0-1 over rdmashare, 2-3 over TCP. */
	EXPECT_LE(moved / 2, rs);
	EXPECT_GT(moved, rs);
	EXPECT_LE(moved >> 17, tcp);
}

TEST_HARNESS_MAIN

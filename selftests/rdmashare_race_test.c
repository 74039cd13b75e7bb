// SPDX-License-Identifier: GPL-2.0
/*
 * Races the review found (Documentation/design.rst, "Security"), as stress:
 * each round is a race whose bad interleaving is rare, so the rounds repeat;
 * on the debug kernel a use-after-free, a list corruption or a leak shows
 * as a KASAN, DEBUG_LIST or kmemleak report, which fails the guest.  Each
 * test also checks what it can see: every AC gone from the device's gauge.
 *  - release_vs_peer_close: the application releases a message's slot (its
 *    RELEASE queues a CREDIT) while the peer's CLOSE of that AC is handled;
 *  - server_exit_while_connecting: a server's file is released while peers'
 *    CONNECTs for its listener are being accepted;
 *  - connect_gives_up_as_accepted: CONNECTs interrupted as the peer's ACCEPT
 *    comes (second review, finding 3): the peer's end is told, and what
 *    came for the AC is voided;
 *  - remove_while_connecting: the RDMA device goes away while CONNECTs set
 *    up QPs on it (a new QP must not land on a device being removed).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/time.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT		7600
/*
 * How long connect_gives_up_as_accepted waits for the banner and the echo
 * before it counts a message missing: its server accepts one AC per round
 * of its loop, so on the debug kernel a banner can come late, behind
 * hundreds of CONNECTs that gave up.
 */
#define RECV_WAIT_MS	10000
#define RACE_DEV	"rxe_race"
#define RACE_ADDR	"198.19.0.2"

static struct sockaddr_in sin_of(const char *ip, unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, ip, &sin.sin_addr);
	return sin;
}

static const char *rs_ip(void)
{
	return getenv("RS_IP") ?: "127.0.0.1";
}

/* Wait up to @secs for no AC on any device; the count then. */
static int wait_no_acs(double secs)
{
	double end = rs_now() + secs;
	int n;

	while ((n = rs_device_acs()) != 0 && rs_now() < end)
		usleep(100000);
	return n;
}

FIXTURE(race) {
	int unused;
};

FIXTURE_SETUP(race)
{
}

FIXTURE_TEARDOWN(race)
{
}

TEST_F_TIMEOUT(race, release_vs_peer_close, 300)
{
	struct sockaddr_in sin = sin_of(rs_ip(), PORT);
	struct rdmashare *c = rs_open_setup(1 << 20, 128);
	struct rdmashare *s = rs_open_setup(1 << 20, 128);
	double end = rs_now() + 40;
	int l, i, round, cac[16], sac[16];
	char buf[64];

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	l = rdmashare_listen(s, PORT, 64);
	ASSERT_LT(0, l);
	for (round = 0; round < 20 && rs_now() < end; round++) {
		for (i = 0; i < 16; i++) {
			cac[i] = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
			ASSERT_LT(0, cac[i]);
			sac[i] = rdmashare_accept(s, l, 20000);
			ASSERT_LT(0, sac[i]);
		}
		/* A message and the close right behind it, on every AC. */
		for (i = 0; i < 16; i++) {
			ASSERT_EQ(0, rdmashare_send(c, cac[i], "last words", 11));
			ASSERT_EQ(0, rdmashare_close_ac(c, cac[i]));
		}
		/* Receiving releases the slot as the CLOSE comes in. */
		for (i = 0; i < 16; i++) {
			ssize_t n = rdmashare_recv(s, sac[i], buf, sizeof(buf), 20000);

			EXPECT_TRUE(n == 11 || n == -EPIPE) TH_LOG("AC %d: %zd", i, n);
			rdmashare_close_ac(s, sac[i]);
		}
		ASSERT_EQ(0, rdmashare_flush(c, 20000));
		ASSERT_EQ(0, rdmashare_flush(s, 20000));
	}
	TH_LOG("%d rounds of 16 ACs", round);
	rdmashare_close(c);
	rdmashare_close(s);
	EXPECT_EQ(0, wait_no_acs(20));
}

/* A server that listens, says so, and exits after @ms without accepting. */
static void short_server(int ready, unsigned int ms)
{
	struct rdmashare *rs = rs_open_setup(1 << 20, 64);

	if (!rs || rdmashare_listen(rs, PORT + 1, 64) <= 0)
		_exit(1);
	if (write(ready, "x", 1) != 1)
		_exit(2);
	usleep(ms * 1000);
	_exit(0);		/* the file goes with the process */
}

/* CONNECTs to the short server, whatever their fate, for @secs. */
static void connector(double secs)
{
	struct sockaddr_in sin = sin_of(rs_ip(), PORT + 1);
	struct rdmashare *rs = rs_open_setup(1 << 20, 64);
	double end = rs_now() + secs;
	int ac;

	if (!rs)
		_exit(1);
	while (rs_now() < end) {
		ac = rdmashare_connect(rs, (struct sockaddr *)&sin, 2000);
		if (ac > 0)
			rdmashare_close_ac(rs, ac);
	}
	rdmashare_close(rs);
	_exit(0);
}

TEST_F_TIMEOUT(race, server_exit_while_connecting, 300)
{
	int round, i, p[2], st;
	pid_t server, conn[3];
	char c;

	srand(1);
	for (round = 0; round < 10; round++) {
		ASSERT_EQ(0, pipe(p));
		server = fork();
		ASSERT_LE(0, server);
		if (!server)
			short_server(p[1], 200 + rand() % 800);
		close(p[1]);
		ASSERT_EQ(1, read(p[0], &c, 1));
		close(p[0]);
		for (i = 0; i < 3; i++) {
			conn[i] = fork();
			ASSERT_LE(0, conn[i]);
			if (!conn[i])
				connector(1.5);
		}
		ASSERT_EQ(server, waitpid(server, &st, 0));
		EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st));
		for (i = 0; i < 3; i++) {
			ASSERT_EQ(conn[i], waitpid(conn[i], &st, 0));
			EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st));
		}
	}
	EXPECT_EQ(0, wait_no_acs(30));
}

/*
 * A server that greets every AC it accepts, echoes what comes, and closes
 * each AC once its peer did; when @stop is readable it finishes the ACs it
 * has (up to 15 s) and reports how many it accepted and saw end.
 */
static void banner_server(int ready, int stop, int report)
{
	struct rdmashare *rs = rs_open_setup(1 << 20, 256);
	int counts[2] = { 0, 0 }, l, ac;
	double stop_at = 0;
	char buf[64], c;
	ssize_t n;

	if (!rs)
		_exit(1);
	l = rdmashare_listen(rs, PORT + 4, 256);
	if (l <= 0 || write(ready, "x", 1) != 1)
		_exit(2);
	fcntl(stop, F_SETFL, O_NONBLOCK);
	for (;;) {
		ac = rdmashare_accept(rs, l, 5);
		if (ac > 0) {
			counts[0]++;
			rdmashare_send(rs, ac, "banner", 7);
		}
		n = rdmashare_recv_any(rs, &ac, buf, sizeof(buf), 5);
		if (n > 0)
			rdmashare_send(rs, ac, buf, n);
		else if (n < 0 && n != -ETIME) {
			counts[1]++;
			rdmashare_close_ac(rs, ac);
		}
		if (!stop_at && read(stop, &c, 1) == 1)
			stop_at = rs_now() + 15;
		if (stop_at && (counts[0] == counts[1] || rs_now() > stop_at))
			break;
	}
	_exit(write(report, counts, sizeof(counts)) == sizeof(counts) ? 0 : 3);
}

static void on_alarm(int sig)
{
}

/*
 * CONNECTs that give up (interrupted by a signal) just as the peer's
 * ACCEPT comes, over and over, to a server that writes at once (second
 * review, finding 3): every AC the server accepted ends (the CONNECT that
 * gave up told its peer), no QP is lost to a CLOSE left unanswered
 * (connect_timeout_ms is 2 s here), and an AC that gets a reused id
 * receives its own messages only (what came for the given-up one was
 * voided with a DISCARD CLOSED).  And none is lost: the server's ACs wait
 * in its backlog behind those that gave up while their clients send, and
 * rdmashare_recv_any() once returned such an AC's message before ACCEPT
 * gave the server its id (the echo to it failed, the client waited).
 */
TEST_F_TIMEOUT(race, connect_gives_up_as_accepted, 300)
{
	struct sockaddr_in sin = sin_of(rs_ip(), PORT + 4);
	struct rdmashare *c = rs_open_setup(1 << 20, 256);
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	int ready[2], stop[2], report[2], counts[2];
	int i, ac, opened = 0, gave_up = 0, missing = 0, st;
	double end = rs_now() + 60;
	char buf[64], want[32], ct[32];
	long lost0;
	pid_t server;
	ssize_t n;

	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/connect_timeout_ms", ct, sizeof(ct)));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/connect_timeout_ms", "2000"));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(stop));
	ASSERT_EQ(0, pipe(report));
	server = fork();
	ASSERT_LE(0, server);
	if (!server)
		banner_server(ready[1], stop[0], report[1]);
	ASSERT_EQ(1, read(ready[0], buf, 1));
	ac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
	ASSERT_LT(0, ac);
	rdmashare_close_ac(c, ac);
	lost0 = rs_peer_stat(rs_ip(), "qps_lost");
	ASSERT_LE(0, lost0);
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, &old));
	for (i = 0; i < 400 && rs_now() < end; i++) {
		/* Interrupted after 0.1 to 2 ms: about a round trip here. */
		struct itimerval it = { .it_value.tv_usec = 100 + (i * 397) % 1900 };

		if (i % 10 != 9)
			setitimer(ITIMER_REAL, &it, NULL);
		ac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
		it.it_value.tv_usec = 0;
		setitimer(ITIMER_REAL, &it, NULL);
		if (ac <= 0) {
			EXPECT_TRUE(ac == -ETIMEDOUT || ac == -EINTR) TH_LOG("connect: %d", ac);
			gave_up++;
			continue;
		}
		opened++;
		/* The banner, then the echo of this AC's own message, and nothing else. */
		snprintf(want, sizeof(want), "hello %d", i);
		ASSERT_EQ(0, rdmashare_send(c, ac, want, strlen(want) + 1));
		n = rdmashare_recv(c, ac, buf, sizeof(buf), RECV_WAIT_MS);
		if (n == -ETIME) {
			TH_LOG("round %d: no banner", i);
			missing++;
			rdmashare_close_ac(c, ac);
			continue;
		}
		EXPECT_EQ(7, n);
		EXPECT_STREQ("banner", n == 7 ? buf : "");
		n = rdmashare_recv(c, ac, buf, sizeof(buf), RECV_WAIT_MS);
		if (n == -ETIME) {
			TH_LOG("round %d: no echo", i);
			missing++;
		} else {
			EXPECT_STREQ(want, n > 0 ? buf : "") TH_LOG("round %d: %zd", i, n);
		}
		rdmashare_close_ac(c, ac);
	}
	sigaction(SIGALRM, &old, NULL);
	TH_LOG("%d CONNECTs opened, %d gave up, %d with a message missing", opened, gave_up,
	       missing);
	ASSERT_EQ(1, write(stop[1], "x", 1));
	ASSERT_EQ((ssize_t)sizeof(counts), read(report[0], counts, sizeof(counts)));
	ASSERT_EQ(server, waitpid(server, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st));
	TH_LOG("the server accepted %d ACs and saw %d end", counts[0], counts[1]);
	EXPECT_EQ(counts[0], counts[1]);
	EXPECT_LE(opened, counts[0]);
	EXPECT_EQ(0, missing);
	/* Past connect_timeout_ms and a keepalive: no CLOSE was left unanswered. */
	usleep(4500000);
	EXPECT_EQ(lost0, rs_peer_stat(rs_ip(), "qps_lost"));
	EXPECT_EQ(0, rs_write_file(RS_SYSFS "/connect_timeout_ms", ct));
	rdmashare_close(c);
	EXPECT_EQ(0, wait_no_acs(30));
}

FIXTURE(hotplug) {
	const char *netdev;
};

FIXTURE_SETUP(hotplug)
{
	char path[128];

	self->netdev = getenv("RS_TEST_NETDEV") ?: "veth1";
	snprintf(path, sizeof(path), "/sys/class/net/%s", self->netdev);
	if (!rs_path_exists(path))
		SKIP(return, "no spare netdev %s", self->netdev);
	rs_sh("rdma link delete " RACE_DEV " 2>/dev/null");
	rs_sh("ip addr del " RACE_ADDR "/24 dev %s 2>/dev/null", self->netdev);
	ASSERT_EQ(0, rs_sh("ip addr add " RACE_ADDR "/24 dev %s", self->netdev));
}

FIXTURE_TEARDOWN(hotplug)
{
	rs_sh("rdma link delete " RACE_DEV " 2>/dev/null");
	rs_sh("ip addr del " RACE_ADDR "/24 dev %s 2>/dev/null", self->netdev);
}

/* Connect to the device's address over and over (it listens too). */
static void hammer(void)
{
	struct sockaddr_in sin = sin_of(RACE_ADDR, PORT + 2);
	struct rdmashare *rs = rs_open_setup(1 << 20, 64);
	int l, ac, sac;

	if (!rs)
		_exit(1);
	l = rdmashare_listen(rs, PORT + 2, 64);
	if (l <= 0)
		_exit(2);
	for (;;) {
		ac = rdmashare_connect(rs, (struct sockaddr *)&sin, 1000);
		if (ac <= 0)
			continue;
		sac = rdmashare_accept(rs, l, 1000);
		rdmashare_close_ac(rs, ac);
		if (sac > 0)
			rdmashare_close_ac(rs, sac);
	}
}

TEST_F_TIMEOUT(hotplug, remove_while_connecting, 300)
{
	struct sockaddr_in sin = sin_of(RACE_ADDR, PORT + 3);
	int round, l, c, s;
	struct rdmashare *rs;
	char buf[16];
	pid_t pid;

	srand(2);
	for (round = 0; round < 6; round++) {
		ASSERT_EQ(0, rs_sh("rdma link add " RACE_DEV " type rxe netdev %s",
				   self->netdev));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			hammer();
		usleep(100000 + rand() % 900000);
		ASSERT_EQ(0, rs_sh("rdma link delete " RACE_DEV));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	EXPECT_EQ(0, wait_no_acs(30));

	/* The device back, rdmashare works on it. */
	ASSERT_EQ(0, rs_sh("rdma link add " RACE_DEV " type rxe netdev %s", self->netdev));
	rs = rs_open_setup(1 << 20, 64);
	ASSERT_NE(NULL, rs);
	l = rdmashare_listen(rs, PORT + 3, 4);
	ASSERT_LT(0, l);
	c = rdmashare_connect(rs, (struct sockaddr *)&sin, 30000);
	ASSERT_LT(0, c);
	s = rdmashare_accept(rs, l, 20000);
	ASSERT_LT(0, s);
	ASSERT_EQ(0, rdmashare_send(rs, c, "back", 5));
	EXPECT_EQ(5, rdmashare_recv(rs, s, buf, sizeof(buf), 20000));
	rdmashare_close(rs);
}

TEST_HARNESS_MAIN

// SPDX-License-Identifier: GPL-2.0
/*
 * Listening files (RDMASHARE_LISTEN_FD): a service port as a descriptor of
 * its own, with no set-up /dev/rdmashare file behind it.
 *
 *  - accept_and_stream: POLLIN only while a connection waits; the accepted
 *    AC file carries a stream both ways; the peer's address comes back.
 *  - accept4_flags: the AC file's flags are the accept's alone, never the
 *    listening file's; a non-blocking listening file's accept says EAGAIN.
 *  - accept_once_connected: a connection whose connect() returned is there
 *    for a non-blocking accept (the ACCEPT goes out after it is in the
 *    backlog), 64 times over.
 *  - epoll_edge_and_level: epoll sees waiting connections level and edge
 *    triggered, and select(2) sees them as readable.
 *  - close_ends_listening: closing it refuses what waits (its peer reads the
 *    end), frees the port at once, and leaves accepted AC files working.
 *  - fork_child_accepts: a child accepts on the listening file it inherited,
 *    after the parent closed its copy.
 *  - max_files: ACCEPT gets ENOSPC while max_files AC files exist, and goes
 *    on once one is freed.
 *  - addresses: listeners of one port on different addresses and families
 *    (rdmashare_listen_fd_at(), RDMASHARE_LISTEN_ADDR) coexist, each taking
 *    the connections to its own; overlapping ones are refused (EADDRINUSE),
 *    as for TCP.
 *  - reuseport: listening files with RDMASHARE_LISTEN_FD_REUSEPORT share a
 *    port, its connections dealt among them in turn, skipping one whose
 *    backlog is full, and all to the one left once the other closed; one
 *    without the flag, one on other addresses, and another user's are
 *    refused (EADDRINUSE).
 *  - bad_args: every bad argument with its errno.
 *  - memlock: its memory counts against RLIMIT_MEMLOCK.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/select.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT	8100

static struct sockaddr_in addr_of(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	return sin;
}

/* A handle with a file area, for the connecting side. */
static struct rdmashare *client(void)
{
	struct rdmashare_setup p = {
		.flags = RDMASHARE_SETUP_FILES, .files_size = 1 << 20,
		.data_size = 1 << 20, .rx_slots = 64,
	};

	return rs_open_with(&p);
}

static int connect_to(struct rdmashare *c, unsigned int port)
{
	struct sockaddr_in sin = addr_of(port);

	return rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 0, 0);
}

/* Whether @fd is readable within @ms. */
static bool readable(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, ms) == 1 && (pfd.revents & POLLIN);
}

/* @len bytes of @buf through @from to @to, checked. */
static bool carries(int from, int to, const char *buf, size_t len)
{
	char in[256];
	size_t got = 0;
	ssize_t n;

	if (len > sizeof(in) || write(from, buf, len) != (ssize_t)len)
		return false;
	while (got < len) {
		n = read(to, in + got, len - got);
		if (n <= 0)
			return false;
		got += n;
	}
	return !memcmp(in, buf, len);
}

static int raw_listen(int dev, struct rdmashare_listen *l)
{
	return ioctl(dev, RDMASHARE_IOC_LISTEN, l) ? -errno : 0;
}

TEST(accept_and_stream)
{
	struct rdmashare_query q = { .size = sizeof(q) };
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);
	struct sockaddr_in *in = (struct sockaddr_in *)&peer;
	struct sockaddr_in sin = addr_of(PORT);
	struct rdmashare *c;
	int lfd, cfd, sfd;

	c = client();
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, rdmashare_query(c, &q));
	ASSERT_TRUE(q.features & RDMASHARE_FEAT_LISTEN_FD);
	lfd = rdmashare_listen_fd(PORT, 4, 0, RDMASHARE_FILE_CLOEXEC);
	ASSERT_LE(0, lfd);
	EXPECT_FALSE(readable(lfd, 100));
	cfd = connect_to(c, PORT);
	ASSERT_LE(0, cfd);
	EXPECT_TRUE(readable(lfd, 20000));
	sfd = rdmashare_accept_fd(lfd, (struct sockaddr *)&peer, &len, 0);
	ASSERT_LE(0, sfd);
	EXPECT_EQ(sizeof(struct sockaddr_in), len);
	EXPECT_EQ(AF_INET, in->sin_family);
	EXPECT_EQ(0, memcmp(&in->sin_addr, &sin.sin_addr, 4));
	EXPECT_FALSE(readable(lfd, 0));
	EXPECT_TRUE(carries(cfd, sfd, "ping", 4));
	EXPECT_TRUE(carries(sfd, cfd, "pong pong", 9));
	close(cfd);
	EXPECT_TRUE(readable(sfd, 20000));
	EXPECT_EQ(0, read(sfd, &len, 1));
	close(sfd);
	close(lfd);
	rdmashare_close(c);
}

TEST(accept4_flags)
{
	struct rdmashare *c;
	int lfd, cfd, sfd, fl;

	c = client();
	ASSERT_NE(NULL, c);
	lfd = rdmashare_listen_fd(PORT + 1, 4, 0, RDMASHARE_FILE_NONBLOCK);
	ASSERT_LE(0, lfd);
	EXPECT_TRUE(fcntl(lfd, F_GETFL) & O_NONBLOCK);
	EXPECT_FALSE(fcntl(lfd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(-EAGAIN, rdmashare_accept_fd(lfd, NULL, NULL, 0));
	cfd = connect_to(c, PORT + 1);
	ASSERT_LE(0, cfd);
	ASSERT_TRUE(readable(lfd, 20000));
	/* Blocking and close-on-exec as asked, not as the listening file is. */
	sfd = rdmashare_accept_fd(lfd, NULL, NULL, RDMASHARE_FILE_CLOEXEC);
	ASSERT_LE(0, sfd);
	fl = fcntl(sfd, F_GETFL);
	EXPECT_FALSE(fl & O_NONBLOCK);
	EXPECT_TRUE(fcntl(sfd, F_GETFD) & FD_CLOEXEC);
	EXPECT_TRUE(carries(cfd, sfd, "x", 1));
	close(sfd);
	close(cfd);

	/* And the other way round. */
	ASSERT_EQ(0, fcntl(lfd, F_SETFL, 0));
	cfd = connect_to(c, PORT + 1);
	ASSERT_LE(0, cfd);
	sfd = rdmashare_accept_fd(lfd, NULL, NULL, RDMASHARE_FILE_NONBLOCK);
	ASSERT_LE(0, sfd);
	EXPECT_TRUE(fcntl(sfd, F_GETFL) & O_NONBLOCK);
	EXPECT_FALSE(fcntl(sfd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(-1, read(sfd, &fl, 1));
	EXPECT_EQ(EAGAIN, errno);
	close(sfd);
	close(cfd);
	close(lfd);
	rdmashare_close(c);
}

TEST(accept_once_connected)
{
	struct rdmashare *c;
	int lfd, cfd, sfd, i;

	c = client();
	ASSERT_NE(NULL, c);
	lfd = rdmashare_listen_fd(PORT + 10, 4, 0, RDMASHARE_FILE_NONBLOCK);
	ASSERT_LE(0, lfd);
	for (i = 0; i < 64; i++) {
		cfd = connect_to(c, PORT + 10);
		ASSERT_LE(0, cfd);
		sfd = rdmashare_accept_fd(lfd, NULL, NULL, 0);
		ASSERT_LE(0, sfd) TH_LOG("round %d: %s", i, strerror(-sfd));
		EXPECT_TRUE(carries(cfd, sfd, "x", 1));
		close(sfd);
		close(cfd);
	}
	close(lfd);
	rdmashare_close(c);
}

/* select(2) finds @fd readable within @ms. */
static bool selects(int fd, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = ms % 1000 * 1000 };
	fd_set r;

	FD_ZERO(&r);
	FD_SET(fd, &r);
	return select(fd + 1, &r, NULL, NULL, &tv) == 1 && FD_ISSET(fd, &r);
}

TEST(epoll_edge_and_level)
{
	struct epoll_event ev = { .events = EPOLLIN }, out[2];
	struct rdmashare *c;
	int lfd, ep_lt, ep_et, cfd[2], sfd, i;

	c = client();
	ASSERT_NE(NULL, c);
	lfd = rdmashare_listen_fd(PORT + 2, 4, 0, RDMASHARE_FILE_NONBLOCK);
	ASSERT_LE(0, lfd);
	ep_lt = epoll_create1(0);
	ep_et = epoll_create1(0);
	ASSERT_EQ(0, epoll_ctl(ep_lt, EPOLL_CTL_ADD, lfd, &ev));
	ev.events = EPOLLIN | EPOLLET;
	ASSERT_EQ(0, epoll_ctl(ep_et, EPOLL_CTL_ADD, lfd, &ev));
	EXPECT_EQ(0, epoll_wait(ep_lt, out, 2, 100));
	EXPECT_EQ(0, epoll_wait(ep_et, out, 2, 0));
	EXPECT_FALSE(selects(lfd, 0));

	for (i = 0; i < 2; i++) {
		cfd[i] = connect_to(c, PORT + 2);
		ASSERT_LE(0, cfd[i]);
	}
	/* Level: as long as one waits.  Edge: once per arrival seen. */
	ASSERT_EQ(1, epoll_wait(ep_lt, out, 2, 5000));
	EXPECT_EQ(EPOLLIN, out[0].events);
	EXPECT_TRUE(selects(lfd, 0));
	ASSERT_EQ(1, epoll_wait(ep_et, out, 2, 5000));
	EXPECT_EQ(0, epoll_wait(ep_et, out, 2, 0));
	EXPECT_EQ(1, epoll_wait(ep_lt, out, 2, 0));
	for (i = 0; i < 2; i++) {
		sfd = rdmashare_accept_fd(lfd, NULL, NULL, 0);
		ASSERT_LE(0, sfd);
		close(sfd);
	}
	EXPECT_EQ(0, epoll_wait(ep_lt, out, 2, 0));
	EXPECT_FALSE(selects(lfd, 0));
	EXPECT_EQ(-EAGAIN, rdmashare_accept_fd(lfd, NULL, NULL, 0));
	/* A new arrival is a new edge. */
	close(cfd[0]);
	cfd[0] = connect_to(c, PORT + 2);
	ASSERT_LE(0, cfd[0]);
	EXPECT_EQ(1, epoll_wait(ep_et, out, 2, 5000));
	for (i = 0; i < 2; i++)
		close(cfd[i]);
	close(ep_lt);
	close(ep_et);
	close(lfd);
	rdmashare_close(c);
}

TEST(close_ends_listening)
{
	struct rdmashare *c;
	int lfd, cfd, wfd, sfd;
	char b;

	c = client();
	ASSERT_NE(NULL, c);
	lfd = rdmashare_listen_fd(PORT + 3, 4, 0, 0);
	ASSERT_LE(0, lfd);
	cfd = connect_to(c, PORT + 3);
	ASSERT_LE(0, cfd);
	sfd = rdmashare_accept_fd(lfd, NULL, NULL, 0);
	ASSERT_LE(0, sfd);
	/* Waiting, never accepted, with data sent to it. */
	wfd = connect_to(c, PORT + 3);
	ASSERT_LE(0, wfd);
	ASSERT_EQ(1, write(wfd, "w", 1));
	close(lfd);

	/* What waited is refused: its peer reads the end. */
	EXPECT_TRUE(readable(wfd, 20000));
	EXPECT_EQ(0, read(wfd, &b, 1));
	close(wfd);
	/* The port is free at once... */
	lfd = rdmashare_listen_fd(PORT + 3, 4, 0, 0);
	EXPECT_LE(0, lfd);
	close(lfd);
	/* ...and the accepted AC file goes on without its listening file. */
	EXPECT_TRUE(carries(cfd, sfd, "after", 5));
	EXPECT_TRUE(carries(sfd, cfd, "close", 5));
	close(sfd);
	close(cfd);
	rdmashare_close(c);
	EXPECT_TRUE(rs_acs_gone(20));
}

static int child_accepts(int lfd)
{
	int sfd;
	char b;

	sfd = rdmashare_accept_fd(lfd, NULL, NULL, 0);
	if (sfd < 0)
		return 10;
	if (read(sfd, &b, 1) != 1 || write(sfd, &b, 1) != 1)
		return 11;
	close(sfd);
	return 0;
}

TEST(fork_child_accepts)
{
	struct rdmashare *c;
	int lfd, cfd;
	pid_t pid;
	char b = 'f';

	lfd = rdmashare_listen_fd(PORT + 4, 4, 0, 0);
	ASSERT_LE(0, lfd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(child_accepts(lfd));
	close(lfd);
	c = client();
	ASSERT_NE(NULL, c);
	cfd = connect_to(c, PORT + 4);
	ASSERT_LE(0, cfd);
	ASSERT_EQ(1, write(cfd, &b, 1));
	b = 0;
	ASSERT_EQ(1, read(cfd, &b, 1));
	EXPECT_EQ('f', b);
	EXPECT_EQ(0, rs_wait_child(pid));
	close(cfd);
	rdmashare_close(c);
}

TEST(max_files)
{
	struct rdmashare *c;
	int lfd, cfd[3], sfd[3], i;

	c = client();
	ASSERT_NE(NULL, c);
	lfd = rdmashare_listen_fd(PORT + 5, 4, 2, 0);
	ASSERT_LE(0, lfd);
	for (i = 0; i < 3; i++) {
		cfd[i] = connect_to(c, PORT + 5);
		ASSERT_LE(0, cfd[i]);
	}
	for (i = 0; i < 2; i++) {
		sfd[i] = rdmashare_accept_fd(lfd, NULL, NULL, 0);
		ASSERT_LE(0, sfd[i]);
	}
	EXPECT_EQ(-ENOSPC, rdmashare_accept_fd(lfd, NULL, NULL, 0));
	/* Still waiting, and taken once a send buffer is free. */
	EXPECT_TRUE(readable(lfd, 0));
	close(sfd[0]);
	close(cfd[0]);
	for (i = 0; i < 100; i++) {
		sfd[2] = rdmashare_accept_fd(lfd, NULL, NULL, 0);
		if (sfd[2] != -ENOSPC)
			break;
		usleep(50000);
	}
	ASSERT_LE(0, sfd[2]);
	EXPECT_TRUE(carries(cfd[2], sfd[2], "third", 5));
	for (i = 1; i < 3; i++) {
		close(sfd[i]);
		close(cfd[i]);
	}
	close(lfd);
	rdmashare_close(c);
}

/*
 * A listening file on @ip of @family ("": any address), through
 * rdmashare_listen_fd_at(); @v6only: RDMASHARE_LISTEN_FD_V6ONLY.
 */
static int listen_at(int family, const char *ip, unsigned int port, bool v6only)
{
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct sockaddr *sa = family == AF_INET ? (void *)&sin : (void *)&sin6;

	if (*ip && inet_pton(family, ip, family == AF_INET ? (void *)&sin.sin_addr :
			     (void *)&sin6.sin6_addr) != 1)
		return -EDOM;
	return rdmashare_listen_fd_at(sa, 4, 0, v6only ? RDMASHARE_LISTEN_FD_V6ONLY : 0);
}

/* A connection to @lfd from @cfd (connected or failed), accepted and checked. */
static void takes(struct __test_metadata *_metadata, int lfd, int cfd, const char *msg)
{
	int sfd;

	ASSERT_LE(0, cfd);
	ASSERT_TRUE(readable(lfd, 20000));
	sfd = rdmashare_accept_fd(lfd, NULL, NULL, 0);
	ASSERT_LE(0, sfd);
	EXPECT_TRUE(carries(cfd, sfd, msg, strlen(msg)));
	close(sfd);
	close(cfd);
}

TEST(addresses)
{
	const char *ip = getenv("RS_IP") ?: "127.0.0.1", *ip6 = getenv("RS_IP6");
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons(PORT + 8) };
	struct rdmashare_query q = { .size = sizeof(q) };
	struct sockaddr unix_addr = { .sa_family = AF_UNIX };
	struct rdmashare *c;
	int l4, l6, other;
	char mapped[64];

	c = client();
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, rdmashare_query(c, &q));
	ASSERT_TRUE(q.features & RDMASHARE_FEAT_LISTEN_ADDR);
	/* An IPv6-only wildcard and an IPv4 address on one port. */
	l6 = listen_at(AF_INET6, "", PORT + 8, true);
	ASSERT_LE(0, l6);
	l4 = listen_at(AF_INET, ip, PORT + 8, false);
	ASSERT_LE(0, l4);
	other = listen_at(AF_INET, "127.0.0.2", PORT + 8, false);
	ASSERT_LE(0, other);
	/* What would take a connection one of them takes: refused. */
	snprintf(mapped, sizeof(mapped), "::ffff:%s", ip);
	EXPECT_EQ(-EADDRINUSE, listen_at(AF_INET, ip, PORT + 8, false));
	EXPECT_EQ(-EADDRINUSE, listen_at(AF_INET6, mapped, PORT + 8, false));
	EXPECT_EQ(-EADDRINUSE, listen_at(AF_INET, "", PORT + 8, false));
	EXPECT_EQ(-EADDRINUSE, listen_at(AF_INET6, "", PORT + 8, false));
	EXPECT_EQ(-EADDRINUSE, listen_at(AF_INET6, "", PORT + 8, true));
	EXPECT_EQ(-EADDRINUSE, rdmashare_listen_fd(PORT + 8, 4, 0, 0));
	EXPECT_EQ(-EINVAL, rdmashare_listen_fd_at(NULL, 4, 0, 0));
	EXPECT_EQ(-EAFNOSUPPORT, rdmashare_listen_fd_at(&unix_addr, 4, 0, 0));

	/* IPv4 goes to the IPv4 listener alone. */
	takes(_metadata, l4, connect_to(c, PORT + 8), "four");
	EXPECT_FALSE(readable(l6, 0));
	EXPECT_FALSE(readable(other, 0));
	/* IPv6 to the IPv6 one. */
	if (!ip6)
		TH_LOG("no IPv6 address (RS_IP6): not tried over IPv6");
	if (ip6) {
		ASSERT_EQ(1, inet_pton(AF_INET6, ip6, &sin6.sin6_addr));
		takes(_metadata, l6,
		      rdmashare_connect_file(c, (struct sockaddr *)&sin6, 20000, 0, 0), "six");
		EXPECT_FALSE(readable(l4, 0));
	}
	/* Without the IPv4 listener, nothing takes IPv4 here. */
	close(l4);
	EXPECT_EQ(-ECONNREFUSED, connect_to(c, PORT + 8));
	/* A dual-stack wildcard in its place takes it, once it overlaps nothing. */
	close(l6);
	EXPECT_EQ(-EADDRINUSE, listen_at(AF_INET6, "", PORT + 8, false));
	close(other);
	l6 = listen_at(AF_INET6, "", PORT + 8, false);
	ASSERT_LE(0, l6);
	takes(_metadata, l6, connect_to(c, PORT + 8), "dual");
	close(l6);
	rdmashare_close(c);
}

/* Each accepted connection of @lfd (non-blocking) reads the byte its client sent. */
static int accept_all(struct __test_metadata *_metadata, int lfd, bool *seen, int nr)
{
	int sfd, n = 0;
	unsigned char b;

	while ((sfd = rdmashare_accept_fd(lfd, NULL, NULL, 0)) >= 0) {
		EXPECT_EQ(1, read(sfd, &b, 1));
		EXPECT_GT(nr, b);
		if (b < nr) {
			EXPECT_FALSE(seen[b]);
			seen[b] = true;
		}
		close(sfd);
		n++;
	}
	EXPECT_EQ(-EAGAIN, sfd);
	return n;
}

/* Connections @from to @to - 1 into @cfd, each sending its number. */
static bool connect_each(struct rdmashare *c, unsigned int port, int *cfd, int from, int to)
{
	unsigned char b;
	int i;

	for (i = from; i < to; i++) {
		cfd[i] = connect_to(c, port);
		b = i;
		if (cfd[i] < 0 || write(cfd[i], &b, 1) != 1)
			return false;
	}
	return true;
}

/* In a child: another user's listener on @port, sharing it; its errno. */
static int listen_shared_as_nobody(unsigned int port)
{
	pid_t pid = fork();
	int fd;

	if (pid < 0)
		return -1;
	if (!pid) {
		if (setgid(65534) || setuid(65534))
			_exit(100);
		fd = rdmashare_listen_fd(port, 4, 4, RDMASHARE_LISTEN_FD_REUSEPORT);
		_exit(fd >= 0 ? 0 : -fd);
	}
	return rs_wait_child(pid);
}

TEST(reuseport)
{
	const unsigned int share = RDMASHARE_LISTEN_FD_REUSEPORT | RDMASHARE_FILE_NONBLOCK;
	const char *ip = getenv("RS_IP") ?: "127.0.0.1";
	struct rdmashare_query q = { .size = sizeof(q) };
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(PORT + 9) };
	int l1, l2, cfd[10], i, n1, n2;
	struct rdmashare *c;
	bool seen[10] = { 0 };

	c = client();
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, rdmashare_query(c, &q));
	ASSERT_TRUE(q.features & RDMASHARE_FEAT_LISTEN_REUSEPORT);
	l1 = rdmashare_listen_fd(PORT + 9, 8, 16, share);
	ASSERT_LE(0, l1);
	l2 = rdmashare_listen_fd(PORT + 9, 8, 16, share);
	ASSERT_LE(0, l2);
	/* Not sharing, other addresses, another user: refused. */
	EXPECT_EQ(-EADDRINUSE, rdmashare_listen_fd(PORT + 9, 8, 16, 0));
	ASSERT_EQ(1, inet_pton(AF_INET, ip, &sin.sin_addr));
	EXPECT_EQ(-EADDRINUSE,
		  rdmashare_listen_fd_at((struct sockaddr *)&sin, 8, 16, share));
	EXPECT_EQ(EADDRINUSE, listen_shared_as_nobody(PORT + 9));

	/* Eight connections: four each, in turn. */
	ASSERT_TRUE(connect_each(c, PORT + 9, cfd, 0, 8));
	ASSERT_TRUE(readable(l1, 20000));
	ASSERT_TRUE(readable(l2, 20000));
	n1 = accept_all(_metadata, l1, seen, 10);
	n2 = accept_all(_metadata, l2, seen, 10);
	EXPECT_EQ(4, n1);
	EXPECT_EQ(4, n2);
	/* The one left takes them all. */
	close(l1);
	ASSERT_TRUE(connect_each(c, PORT + 9, cfd, 8, 10));
	ASSERT_TRUE(readable(l2, 20000));
	EXPECT_EQ(2, accept_all(_metadata, l2, seen, 10));
	for (i = 0; i < 10; i++) {
		EXPECT_TRUE(seen[i]);
		close(cfd[i]);
	}
	close(l2);

	/* A full backlog is skipped: backlog 1 and 8 take 1 and 3 of 4. */
	l1 = rdmashare_listen_fd(PORT + 9, 1, 16, share);
	ASSERT_LE(0, l1);
	l2 = rdmashare_listen_fd(PORT + 9, 8, 16, share);
	ASSERT_LE(0, l2);
	memset(seen, 0, sizeof(seen));
	ASSERT_TRUE(connect_each(c, PORT + 9, cfd, 0, 4));
	ASSERT_TRUE(readable(l1, 20000));
	ASSERT_TRUE(readable(l2, 20000));
	EXPECT_EQ(1, accept_all(_metadata, l1, seen, 4));
	EXPECT_EQ(3, accept_all(_metadata, l2, seen, 4));
	for (i = 0; i < 4; i++) {
		EXPECT_TRUE(seen[i]);
		close(cfd[i]);
	}
	close(l1);
	close(l2);
	rdmashare_close(c);
}

TEST(bad_args)
{
	struct rdmashare_listen l = {
		.size = sizeof(l), .flags = RDMASHARE_LISTEN_FD, .port = PORT + 6, .backlog = 4,
	};
	struct rdmashare_accept a = { .size = sizeof(a) };
	int dev, lfd, other;
	char b;

	dev = open(RDMASHARE_DEV_PATH, O_RDWR);
	ASSERT_LE(0, dev);
	/* The struct must hold the descriptor's field. */
	l.size = 24;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.size = sizeof(l);
	l.flags |= RDMASHARE_LISTEN_FILES;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.flags = RDMASHARE_LISTEN_FD | 1U << 5;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.flags = RDMASHARE_LISTEN_FD;
	l.file.flags = 1U << 5;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.file.flags = 0;
	l.file.fd = 3;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.file.fd = 0;
	l.file.resv = 1;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.file.resv = 0;
	l.resv = 1;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.resv = 0;
	/* More send buffers than a data area may hold. */
	l.max_files = 1U << 20;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.max_files = 1;
	l.file.sndbuf = 0xffffffffU;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.file.sndbuf = 0;
	l.max_files = 0;
	l.rx_slots = 1U << 30;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.rx_slots = 0;
	l.port = 0;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.port = PORT + 6;
	l.backlog = 0;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.backlog = 4;
	/* The new fields are the listening file's alone. */
	l.flags = RDMASHARE_LISTEN_FILES;
	l.max_files = 4;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.max_files = 0;
	l.flags = RDMASHARE_LISTEN_FD;
	/* An address: with RDMASHARE_LISTEN_ADDR only, as bind(2) takes it. */
	l.flags |= RDMASHARE_LISTEN_V6ONLY;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.flags = RDMASHARE_LISTEN_FD;
	l.local.family = AF_INET;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.flags |= RDMASHARE_LISTEN_ADDR | RDMASHARE_LISTEN_V6ONLY;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.flags &= ~RDMASHARE_LISTEN_V6ONLY;
	l.local.port = PORT + 5;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.local.port = 0;
	l.local.addr[0] = 224;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.local.addr[0] = 10;
	l.local.addr[4] = 1;
	EXPECT_EQ(-EINVAL, raw_listen(dev, &l));
	l.local.addr[4] = 0;
	l.local.family = AF_UNIX;
	EXPECT_EQ(-EAFNOSUPPORT, raw_listen(dev, &l));
	l.local.family = 0;
	EXPECT_EQ(-EAFNOSUPPORT, raw_listen(dev, &l));
	memset(&l.local, 0, sizeof(l.local));
	l.flags = RDMASHARE_LISTEN_FD;
	/* A caller that knows no addresses: the struct without them. */
	l.size = offsetof(struct rdmashare_listen, local);
	lfd = raw_listen(dev, &l) ?: l.file.fd;
	EXPECT_LE(0, lfd);
	close(lfd);
	l.size = sizeof(l);
	l.file.fd = 0;

	lfd = rdmashare_listen_fd(PORT + 6, 4, 0, 0);
	ASSERT_LE(0, lfd);
	EXPECT_EQ(-EADDRINUSE, raw_listen(dev, &l));
	other = rdmashare_listen_fd(PORT + 6, 4, 0, 0);
	EXPECT_EQ(-EADDRINUSE, other);
	/* ACCEPT on it: no listener id, no send buffer size, known flags. */
	a.listen_ac = 1;
	EXPECT_EQ(-1, ioctl(lfd, RDMASHARE_IOC_ACCEPT, &a));
	EXPECT_EQ(EINVAL, errno);
	a.listen_ac = 0;
	a.file.sndbuf = 4096;
	EXPECT_EQ(-1, ioctl(lfd, RDMASHARE_IOC_ACCEPT, &a));
	EXPECT_EQ(EINVAL, errno);
	a.file.sndbuf = 0;
	a.flags = 1U << 7;
	EXPECT_EQ(-1, ioctl(lfd, RDMASHARE_IOC_ACCEPT, &a));
	EXPECT_EQ(EINVAL, errno);
	a.flags = RDMASHARE_ACCEPT_NONBLOCK;
	a.timeout_ms = 10;
	EXPECT_EQ(-1, ioctl(lfd, RDMASHARE_IOC_ACCEPT, &a));
	EXPECT_EQ(EINVAL, errno);
	a.flags = 0;
	EXPECT_EQ(-1, ioctl(lfd, RDMASHARE_IOC_ACCEPT, &a));
	EXPECT_EQ(ETIME, errno);
	/* Too short to hold the descriptor. */
	a.size = offsetof(struct rdmashare_accept, file);
	EXPECT_EQ(-1, ioctl(lfd, RDMASHARE_IOC_ACCEPT, &a));
	EXPECT_EQ(EINVAL, errno);
	/* Nothing else: no rings, no other command, no data. */
	EXPECT_EQ(-1, ioctl(lfd, RDMASHARE_IOC_LISTEN, &l));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(lfd, FIONREAD, &other));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, read(lfd, &b, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, write(lfd, &b, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, lfd, 0));
	EXPECT_EQ(ENODEV, errno);
	/* On /dev/rdmashare, ACCEPT names a listener of that file: none. */
	EXPECT_EQ(-ENOENT, rdmashare_accept_fd(dev, NULL, NULL, 0));
	close(lfd);
	close(dev);
	EXPECT_EQ(-EBADF, rdmashare_accept_fd(lfd, NULL, NULL, 0));
}

/* In a child: nobody, with @limit bytes of RLIMIT_MEMLOCK. */
static int listen_as_nobody(rlim_t limit, unsigned int files)
{
	struct rlimit rl = { limit, limit };
	pid_t pid = fork();
	int fd;

	if (pid < 0)
		return -1;
	if (!pid) {
		if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgid(65534) || setuid(65534))
			_exit(100);
		fd = rdmashare_listen_fd(PORT + 7, 4, files, 0);
		_exit(fd >= 0 ? 0 : -fd);
	}
	return rs_wait_child(pid);
}

TEST(memlock)
{
	/* 4 MiB of send buffers and the slots fit in 16 MiB, not in 1 MiB. */
	EXPECT_EQ(0, listen_as_nobody(16 << 20, 64));
	EXPECT_EQ(ENOMEM, listen_as_nobody(1 << 20, 64));
}

TEST_HARNESS_MAIN

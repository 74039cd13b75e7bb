// SPDX-License-Identifier: GPL-2.0
/*
 * Non-blocking CONNECT of AC files (RDMASHARE_CONNECT_NONBLOCK) and
 * RDMASHARE_IOC_FILE_INFO.
 *
 *  - succeeds: the AC file at once, POLLOUT once the peer accepted, then a
 *    stream; FILE_INFO names both ends and counts what waits to be read.
 *  - refused: no listener: POLLERR and POLLHUP, ECONNREFUSED pending once
 *    (SO_ERROR), then cleared, POLLERR with it; reads and writes fail.
 *  - timed_out: towards nobody, with 1 s: ETIMEDOUT after about that.
 *  - thousand_in_flight: 1000 CONNECTs under way at once from one thread,
 *    waited for with epoll; each then carries a byte each way.
 *  - close_while_connecting: closed before it connected, nothing is left.
 *  - bad_args: every bad argument with its errno.
 *  - port_of_socket: RDMASHARE_CONNECT_PORT: the AC has a bound TCP
 *    socket's port at both ends (getsockname here, getpeername and accept
 *    there), the socket held until the AC is gone; every socket that
 *    cannot give one refused with its errno.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT	8200

static struct sockaddr_in addr_of(const char *ip, unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, ip ?: getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	return sin;
}

/* A handle with room for @files AC files of 4 KiB send buffers. */
static struct rdmashare *client(unsigned int files)
{
	struct rdmashare_setup p = {
		.flags = RDMASHARE_SETUP_FILES, .files_size = files * 4096ULL,
		.data_size = 1 << 20, .rx_slots = 64,
	};

	return rs_open_with(&p);
}

static int start(struct rdmashare *c, const char *ip, unsigned int port, unsigned int ms)
{
	struct sockaddr_in sin = addr_of(ip, port);

	return rdmashare_connect_start(c, (struct sockaddr *)&sin, ms, 4096, 0);
}

/* The events of @fd within @ms (0 if none came). */
static short events(int fd, short want, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = want };

	return poll(&pfd, 1, ms) == 1 ? pfd.revents : 0;
}

FIXTURE(nb) {
};

FIXTURE_SETUP(nb)
{
}

FIXTURE_TEARDOWN(nb)
{
}

TEST_F_TIMEOUT(nb, succeeds, 120)
{
	struct rdmashare_file_info fi;
	struct sockaddr_in sin = addr_of(NULL, PORT);
	struct rdmashare *c;
	int lfd, cfd, sfd;
	char buf[8];

	c = client(16);
	ASSERT_NE(NULL, c);
	lfd = rdmashare_listen_fd(PORT, 4, 0, 0);
	ASSERT_LE(0, lfd);
	cfd = start(c, NULL, PORT, 0);
	ASSERT_LE(0, cfd);
	ASSERT_EQ(0, rdmashare_file_info(cfd, &fi, 0));
	EXPECT_TRUE(fi.state == RDMASHARE_AC_STATE_CONNECTING ||
		    fi.state == RDMASHARE_AC_STATE_OPEN) TH_LOG("state %u", fi.state);
	EXPECT_EQ(AF_INET, fi.peer.family);
	EXPECT_EQ(PORT, fi.peer.port);
	EXPECT_EQ(0, memcmp(fi.peer.addr, &sin.sin_addr, 4));
	EXPECT_EQ(POLLOUT, events(cfd, POLLOUT | POLLIN, 20000));
	ASSERT_EQ(0, rdmashare_file_info(cfd, &fi, 0));
	EXPECT_EQ(RDMASHARE_AC_STATE_OPEN, fi.state);
	EXPECT_EQ(0, fi.error);
	EXPECT_EQ(AF_INET, fi.local.family);
	EXPECT_EQ(0, fi.local.port);
	EXPECT_EQ(0, rdmashare_file_error(cfd));

	sfd = rdmashare_accept_fd(lfd, NULL, NULL, 0);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(0, rdmashare_file_info(sfd, &fi, 0));
	EXPECT_EQ(PORT, fi.local.port);
	EXPECT_EQ(0, fi.peer.port);
	EXPECT_EQ(0, fi.rx_bytes);
	ASSERT_EQ(5, write(cfd, "hello", 5));
	ASSERT_TRUE(events(sfd, POLLIN, 20000) & POLLIN);
	ASSERT_EQ(0, rdmashare_file_info(sfd, &fi, 0));
	EXPECT_EQ(5, fi.rx_bytes);
	ASSERT_EQ(2, read(sfd, buf, 2));
	ASSERT_EQ(0, rdmashare_file_info(sfd, &fi, 0));
	EXPECT_EQ(3, fi.rx_bytes);
	ASSERT_EQ(3, read(sfd, buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, "llo", 3));
	close(sfd);
	close(cfd);
	close(lfd);
	rdmashare_close(c);
}

TEST_F_TIMEOUT(nb, refused, 120)
{
	struct rdmashare_file_info fi;
	struct rdmashare *c;
	char b = 0;
	short ev;
	int cfd;

	c = client(16);
	ASSERT_NE(NULL, c);
	cfd = start(c, NULL, PORT + 1, 0);
	ASSERT_LE(0, cfd);
	ev = events(cfd, POLLOUT, 20000);
	EXPECT_EQ(POLLOUT | POLLERR | POLLHUP, ev & (POLLOUT | POLLERR | POLLHUP));
	ASSERT_EQ(0, rdmashare_file_info(cfd, &fi, 0));
	EXPECT_EQ(RDMASHARE_AC_STATE_CLOSED, fi.state);
	EXPECT_EQ(-ECONNREFUSED, fi.error);
	/* Taken once, as SO_ERROR: then 0, and no POLLERR. */
	EXPECT_EQ(-ECONNREFUSED, rdmashare_file_error(cfd));
	EXPECT_EQ(0, rdmashare_file_error(cfd));
	EXPECT_FALSE(events(cfd, POLLOUT, 0) & POLLERR);
	EXPECT_EQ(-1, write(cfd, &b, 1));
	EXPECT_EQ(ECONNREFUSED, errno);
	EXPECT_EQ(-1, read(cfd, &b, 1));
	EXPECT_EQ(ECONNREFUSED, errno);
	close(cfd);
	rdmashare_close(c);
	EXPECT_TRUE(rs_acs_gone(20));
}

TEST_F_TIMEOUT(nb, timed_out, 120)
{
	struct rdmashare *c;
	double t0, t;
	char b;
	int cfd;

	c = client(16);
	ASSERT_NE(NULL, c);
	t0 = rs_now();
	/* On the guest's subnet, but nobody is there. */
	cfd = start(c, "198.18.0.99", PORT + 2, 1000);
	ASSERT_LE(0, cfd);
	t = rs_now() - t0;
	EXPECT_GT(0.5, t) TH_LOG("CONNECT took %.2f s", t);
	/* Nothing to write to yet: no room, no waiting. */
	ASSERT_EQ(0, fcntl(cfd, F_SETFL, O_NONBLOCK));
	EXPECT_EQ(-1, write(cfd, "x", 1));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(-1, read(cfd, &b, 1));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_TRUE(events(cfd, POLLOUT, 20000) & POLLERR);
	t = rs_now() - t0;
	EXPECT_EQ(-ETIMEDOUT, rdmashare_file_error(cfd));
	TH_LOG("timed out after %.2f s", t);
	EXPECT_LE(0.9, t);
	EXPECT_GE(4.0, t);
	close(cfd);
	rdmashare_close(c);
}

TEST_F_TIMEOUT(nb, thousand_in_flight, 300)
{
	struct rlimit rl = { 4096, 4096 };
	struct rdmashare_listen l = {
		.size = sizeof(l), .flags = RDMASHARE_LISTEN_FD, .port = PORT + 3,
		.backlog = 1024, .file = { .sndbuf = 4096 }, .max_files = 1024,
		.rx_slots = 1024,
	};
	struct epoll_event ev, out[64];
	static int cfd[1000];
	int lfd, dev, ep, n, i, opened = 0, sfd;
	struct rdmashare *c;
	char b;

	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	dev = open(RDMASHARE_DEV_PATH, O_RDWR);
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, ioctl(dev, RDMASHARE_IOC_LISTEN, &l));
	close(dev);
	lfd = l.file.fd;
	c = client(1000);
	ASSERT_NE(NULL, c);
	ep = epoll_create1(0);
	ASSERT_LE(0, ep);
	for (i = 0; i < 1000; i++) {
		cfd[i] = start(c, NULL, PORT + 3, 60000);
		ASSERT_LE(0, cfd[i]) TH_LOG("connect %d: %d", i, cfd[i]);
		ev.events = EPOLLOUT | EPOLLET;
		ev.data.u32 = i;
		ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, cfd[i], &ev));
	}
	/* All under way from this thread; each comes out once, connected. */
	while (opened < 1000) {
		n = epoll_wait(ep, out, 64, 60000);
		ASSERT_LT(0, n) TH_LOG("%d of 1000 connected", opened);
		for (i = 0; i < n; i++) {
			EXPECT_EQ(EPOLLOUT, out[i].events) TH_LOG("AC %u: %#x", out[i].data.u32,
								out[i].events);
			opened++;
		}
	}
	for (i = 0; i < 1000; i++) {
		sfd = rdmashare_accept_fd(lfd, NULL, NULL, 0);
		ASSERT_LE(0, sfd);
		b = (char)i;
		ASSERT_EQ(1, write(sfd, &b, 1));
		close(sfd);
	}
	for (i = 0; i < 1000; i++) {
		ASSERT_EQ(1, read(cfd[i], &b, 1));
		close(cfd[i]);
	}
	close(ep);
	close(lfd);
	rdmashare_close(c);
	EXPECT_TRUE(rs_acs_gone(60));
}

TEST_F_TIMEOUT(nb, close_while_connecting, 120)
{
	struct rdmashare *c;
	int cfd, i;

	c = client(16);
	ASSERT_NE(NULL, c);
	for (i = 0; i < 8; i++) {
		/* Nobody, and a listener that is not there: closed under way. */
		cfd = start(c, i % 2 ? "198.18.0.99" : NULL, PORT + 4, 5000);
		ASSERT_LE(0, cfd);
		if (i > 3)
			usleep(1000 * i);
		close(cfd);
	}
	rdmashare_close(c);
	EXPECT_TRUE(rs_acs_gone(20));
}

TEST_F_TIMEOUT(nb, bad_args, 120)
{
	struct rdmashare_connect cn = {
		.size = sizeof(cn), .flags = RDMASHARE_CONNECT_NONBLOCK,
		.peer = { .family = AF_INET, .port = PORT + 5, .addr = { 127, 0, 0, 1 } },
	};
	struct rdmashare_file_info fi = { .size = sizeof(fi) };
	struct rdmashare *c;
	int cfd;

	c = client(1);
	ASSERT_NE(NULL, c);
	/* Only an AC file can be had before it connects. */
	EXPECT_EQ(-1, ioctl(rdmashare_fd(c), RDMASHARE_IOC_CONNECT, &cn));
	EXPECT_EQ(EINVAL, errno);
	cn.flags |= RDMASHARE_CONNECT_FILE;
	cn.file.sndbuf = 8192;		/* the file area holds 4 KiB */
	EXPECT_EQ(-1, ioctl(rdmashare_fd(c), RDMASHARE_IOC_CONNECT, &cn));
	EXPECT_EQ(EINVAL, errno);
	cn.file.sndbuf = 0;
	cn.size = offsetof(struct rdmashare_connect, file);
	EXPECT_EQ(-1, ioctl(rdmashare_fd(c), RDMASHARE_IOC_CONNECT, &cn));
	EXPECT_EQ(EINVAL, errno);
	cfd = start(c, NULL, PORT + 5, 0);
	ASSERT_LE(0, cfd);
	EXPECT_EQ(-ENOSPC, start(c, NULL, PORT + 5, 0));

	/* FILE_INFO: known flags, reserved zero, the whole struct. */
	fi.flags = 2;
	EXPECT_EQ(-1, ioctl(cfd, RDMASHARE_IOC_FILE_INFO, &fi));
	EXPECT_EQ(EINVAL, errno);
	fi.flags = 0;
	fi.resv = 1;
	EXPECT_EQ(-1, ioctl(cfd, RDMASHARE_IOC_FILE_INFO, &fi));
	EXPECT_EQ(EINVAL, errno);
	fi.resv = 0;
	fi.size = 64;
	EXPECT_EQ(-1, ioctl(cfd, RDMASHARE_IOC_FILE_INFO, &fi));
	EXPECT_EQ(EINVAL, errno);
	fi.size = sizeof(fi);
	EXPECT_EQ(0, ioctl(cfd, RDMASHARE_IOC_FILE_INFO, &fi));
	EXPECT_EQ(-1, ioctl(rdmashare_fd(c), RDMASHARE_IOC_FILE_INFO, &fi));
	EXPECT_EQ(ENOTTY, errno);
	close(cfd);
	rdmashare_close(c);
}

/*
 * A socket of @family and @type bound to the wildcard address and a port
 * of the system's choosing; its port in *@port.
 */
static int bound_sock(int family, int type, unsigned int *port)
{
	struct sockaddr_in6 s6 = { .sin6_family = family };
	socklen_t len = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(s6);
	int fd = socket(family, type | SOCK_CLOEXEC, 0);

	/* The port is where both families have it. */
	if (fd < 0 || bind(fd, (struct sockaddr *)&s6, len) ||
	    getsockname(fd, (struct sockaddr *)&s6, &len)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(s6.sin6_port);
	return fd;
}

/* CONNECT an AC file to @port from the port of @sock; -errno if refused. */
static int connect_from(struct rdmashare *c, unsigned int port, int sock, __u32 flags)
{
	struct rdmashare_connect cn = {
		.size = sizeof(cn), .timeout_ms = 20000, .sock = sock,
		.flags = RDMASHARE_CONNECT_FILE | RDMASHARE_CONNECT_PORT | flags,
		.peer = { .family = AF_INET, .port = port },
	};
	struct sockaddr_in sin = addr_of(NULL, port);

	memcpy(cn.peer.addr, &sin.sin_addr, 4);
	cn.file.sndbuf = 4096;
	if (ioctl(rdmashare_fd(c), RDMASHARE_IOC_CONNECT, &cn))
		return -errno;
	return cn.file.fd;
}

/* The peer's port (FILE_INFO) of the next AC file @lfd accepts, or 0. */
static unsigned int accepted_port(int lfd)
{
	struct rdmashare_file_info fi = {};
	int fd = rdmashare_accept_fd(lfd, NULL, NULL, 0);

	if (fd < 0)
		return 0;
	if (rdmashare_file_info(fd, &fi, 0))
		fi.peer.port = 0;
	close(fd);
	return fi.peer.port;
}

/* Whether a new socket can bind @port, tried for up to @secs seconds. */
static bool port_free(unsigned int port, int secs)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int i, fd, ret;

	for (i = 0; i <= secs * 10; i++) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return false;
		ret = bind(fd, (struct sockaddr *)&sin, sizeof(sin));
		close(fd);
		if (!ret)
			return true;
		usleep(100 * 1000);
	}
	return false;
}

TEST_F_TIMEOUT(nb, port_of_socket, 120)
{
	struct rdmashare_connect cn = {
		.size = sizeof(cn), .timeout_ms = 20000, .flags = RDMASHARE_CONNECT_FILE,
		.peer = { .family = AF_INET, .port = PORT + 6 },
	};
	struct rdmashare_query q = { .size = sizeof(q) };
	struct rdmashare_file_info fi;
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	unsigned int port, uport;
	int lfd, cfd, sfd, sock, bad, pfd[2], one = 1;
	struct rdmashare *c;

	c = client(16);
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, ioctl(rdmashare_fd(c), RDMASHARE_IOC_QUERY, &q));
	EXPECT_TRUE(q.features & RDMASHARE_FEAT_CONNECT_PORT);
	lfd = rdmashare_listen_fd(PORT + 6, 4, 0, 0);
	ASSERT_LE(0, lfd);

	/* Blocking: both ends name the socket's port. */
	sock = bound_sock(AF_INET, SOCK_STREAM, &port);
	ASSERT_LE(0, sock);
	cfd = connect_from(c, PORT + 6, sock, 0);
	ASSERT_LE(0, cfd) TH_LOG("%s", strerror(-cfd));
	ASSERT_EQ(0, rdmashare_file_info(cfd, &fi, 0));
	EXPECT_EQ(port, fi.local.port);
	EXPECT_EQ(PORT + 6, fi.peer.port);
	sfd = rdmashare_accept_fd(lfd, (struct sockaddr *)&sin, &len, 0);
	ASSERT_LE(0, sfd);
	EXPECT_EQ(port, ntohs(sin.sin_port));
	ASSERT_EQ(0, rdmashare_file_info(sfd, &fi, 0));
	EXPECT_EQ(port, fi.peer.port);
	EXPECT_EQ(PORT + 6, fi.local.port);
	/* The AC holds the socket: its port stays taken until the AC is gone. */
	close(sock);
	EXPECT_FALSE(port_free(port, 0));
	ASSERT_EQ(2, write(cfd, "hi", 2));
	ASSERT_TRUE(events(sfd, POLLIN, 20000) & POLLIN);
	close(sfd);
	close(cfd);
	EXPECT_TRUE(port_free(port, 20));

	/* Non-blocking: the same, once connected. */
	sock = bound_sock(AF_INET, SOCK_STREAM, &port);
	ASSERT_LE(0, sock);
	cfd = connect_from(c, PORT + 6, sock, RDMASHARE_CONNECT_NONBLOCK);
	ASSERT_LE(0, cfd);
	close(sock);
	EXPECT_EQ(POLLOUT, events(cfd, POLLOUT | POLLIN, 20000));
	ASSERT_EQ(0, rdmashare_file_info(cfd, &fi, 0));
	EXPECT_EQ(port, fi.local.port);
	EXPECT_EQ(port, accepted_port(lfd));
	close(cfd);

	/* Refused: the socket is given back, its port free again. */
	sock = bound_sock(AF_INET, SOCK_STREAM, &port);
	ASSERT_LE(0, sock);
	EXPECT_EQ(-ECONNREFUSED, connect_from(c, PORT + 7, sock, 0));
	close(sock);
	EXPECT_TRUE(port_free(port, 20));
	/* An IPv6 socket's port is as good. */
	sock = bound_sock(AF_INET6, SOCK_STREAM, &port);
	ASSERT_LE(0, sock);
	cfd = connect_from(c, PORT + 6, sock, 0);
	ASSERT_LE(0, cfd);
	close(sock);
	EXPECT_EQ(port, accepted_port(lfd));
	close(cfd);

	/* No descriptor, not a socket, not TCP, not bound, listening. */
	EXPECT_EQ(-EBADF, connect_from(c, PORT + 6, -1, 0));
	ASSERT_EQ(0, pipe(pfd));
	EXPECT_EQ(-ENOTSOCK, connect_from(c, PORT + 6, pfd[0], 0));
	close(pfd[0]);
	close(pfd[1]);
	bad = bound_sock(AF_INET, SOCK_DGRAM, &uport);
	ASSERT_LE(0, bad);
	EXPECT_EQ(-EINVAL, connect_from(c, PORT + 6, bad, 0));
	close(bad);
	bad = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_LE(0, bad);
	EXPECT_EQ(-EINVAL, connect_from(c, PORT + 6, bad, 0));
	ASSERT_EQ(0, listen(bad, 1));		/* bound by listen() */
	EXPECT_EQ(-EINVAL, connect_from(c, PORT + 6, bad, 0));
	/* Connected (to that listener over TCP). */
	sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_LE(0, sock);
	len = sizeof(sin);
	ASSERT_EQ(0, getsockname(bad, (struct sockaddr *)&sin, &len));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ASSERT_EQ(0, connect(sock, (struct sockaddr *)&sin, len));
	EXPECT_EQ(-EINVAL, connect_from(c, PORT + 6, sock, 0));
	close(sock);
	close(bad);
	/* An address without a port (IP_BIND_ADDRESS_NO_PORT). */
	bad = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_LE(0, bad);
	ASSERT_EQ(0, setsockopt(bad, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one)));
	sin = addr_of("127.0.0.1", 0);
	ASSERT_EQ(0, bind(bad, (struct sockaddr *)&sin, sizeof(sin)));
	EXPECT_EQ(-EINVAL, connect_from(c, PORT + 6, bad, 0));
	close(bad);
	bad = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_LE(0, bad);
	EXPECT_EQ(-EINVAL, connect_from(c, PORT + 6, bad, 0));
	close(bad);
	/* A socket without the flag, or reserved bits. */
	sock = bound_sock(AF_INET, SOCK_STREAM, &port);
	ASSERT_LE(0, sock);
	cn.sock = sock;
	sin = addr_of(NULL, PORT + 6);
	memcpy(cn.peer.addr, &sin.sin_addr, 4);
	EXPECT_EQ(-1, ioctl(rdmashare_fd(c), RDMASHARE_IOC_CONNECT, &cn));
	EXPECT_EQ(EINVAL, errno);
	cn.flags |= RDMASHARE_CONNECT_PORT;
	cn.resv = 1;
	EXPECT_EQ(-1, ioctl(rdmashare_fd(c), RDMASHARE_IOC_CONNECT, &cn));
	EXPECT_EQ(EINVAL, errno);
	close(sock);
	/* None of these reached the listener; nothing is left. */
	EXPECT_EQ(0, events(lfd, POLLIN, 500));
	close(lfd);
	rdmashare_close(c);
	EXPECT_TRUE(rs_acs_gone(20));
}

TEST_HARNESS_MAIN

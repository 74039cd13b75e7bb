// SPDX-License-Identifier: GPL-2.0
/*
 * RDMASHARE_IOC_RECVMSG and RDMASHARE_IOC_SENDMSG on AC files (a socket's
 * recvmsg(2) and sendmsg(2) flags), and RDMASHARE_IOC_SHUTDOWN's SHUT_RD:
 * MSG_PEEK across message and chunk boundaries, MSG_WAITALL (with and
 * without MSG_PEEK), MSG_DONTWAIT beside a reader that waits, MSG_NOSIGNAL,
 * MSG_MORE holding writes back until the next write, a SHUTDOWN, the close
 * or its timer, small writes appended to the message before them, SHUT_RD
 * waking a reader and dropping what comes, readiness through epoll level
 * and edge triggered, and every bad argument with its errno (issue #33).
 */
#include <arpa/inet.h>
#include <linux/sockios.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT		8500
#define FILES_SIZE	(1 << 20)

static unsigned char pat(size_t i)
{
	return (unsigned char)(i * 151 + (i >> 11) * 5 + 1);
}

/*
 * A connected pair: *@cfd from a handle's CONNECT (its send buffer
 * @sndbuf, 0 for the default), *@sfd from a listening file's accept.  The
 * handle, which the caller closes, is returned.
 */
static struct rdmashare *pair(struct __test_metadata *_metadata, unsigned int port,
			      unsigned int sndbuf, unsigned int flags, int *cfd, int *sfd)
{
	struct rdmashare_setup p = { .flags = RDMASHARE_SETUP_FILES, .files_size = FILES_SIZE,
				     .data_size = 1 << 20 };
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct rdmashare *c = rs_open_with(&p);
	int lfd;

	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	*cfd = -1;
	*sfd = -1;
	EXPECT_NE(NULL, c);
	if (!c)
		return NULL;
	lfd = rdmashare_listen_fd(port, 4, 0, 0);
	EXPECT_LE(0, lfd);
	if (lfd < 0)
		return c;
	*cfd = rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, sndbuf, flags);
	EXPECT_LE(0, *cfd);
	*sfd = rdmashare_accept_fd(lfd, NULL, NULL, flags);
	EXPECT_LE(0, *sfd);
	close(lfd);
	return c;
}

/* One RECVMSG or SENDMSG of @len bytes at @buf: the bytes, or -errno. */
static long msg(int fd, unsigned long cmd, void *buf, size_t len, unsigned int flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct rdmashare_msg m = { .size = sizeof(m), .iov = (uintptr_t)&iov, .iovcnt = 1,
				   .msg_flags = flags };
	long r = ioctl(fd, cmd, &m);

	return r < 0 ? -errno : r;
}

static long rmsg(int fd, void *buf, size_t len, unsigned int flags)
{
	return msg(fd, RDMASHARE_IOC_RECVMSG, buf, len, flags);
}

static long smsg(int fd, const void *buf, size_t len, unsigned int flags)
{
	return msg(fd, RDMASHARE_IOC_SENDMSG, (void *)buf, len, flags);
}

static int inq(int fd)
{
	int n = -1;

	return ioctl(fd, FIONREAD, &n) ? -errno : n;
}

/* Up to 10 s for FIONREAD to reach @want; the last value. */
static int wait_inq(int fd, int want)
{
	int i, v = inq(fd);

	for (i = 0; i < 1000 && v < want; i++) {
		usleep(10000);
		v = inq(fd);
	}
	return v;
}

static __u64 tx_msgs(int fd)
{
	struct rdmashare_ac_stats st = { .size = sizeof(st) };

	return ioctl(fd, RDMASHARE_IOC_AC_STATS, &st) ? ~0ULL : st.tx_msgs;
}

/* @len pattern bytes from stream offset @off, malloc()ed; NULL if none. */
static unsigned char *pat_buf(size_t off, size_t len)
{
	unsigned char *buf = malloc(len);
	size_t i;

	for (i = 0; buf && i < len; i++)
		buf[i] = pat(off + i);
	return buf;
}

/* Writes all of @len pattern bytes from stream offset @off. */
static int write_pat(int fd, size_t off, size_t len)
{
	unsigned char *buf = pat_buf(off, len);
	size_t i;
	ssize_t r;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < len; i += r) {
		r = write(fd, buf + i, len - i);
		if (r <= 0)
			break;
	}
	free(buf);
	return i == len ? 0 : -EIO;
}

/* Whether @buf holds the pattern from stream offset @off. */
static bool is_pat(const unsigned char *buf, size_t off, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != pat(off + i))
			return false;
	return true;
}

/*
 * Three writes (5000 bytes, 10, and 150000: more than one chunk) read with
 * MSG_PEEK and plain reads: a peek takes nothing, sees across message and
 * chunk boundaries, and starts where a partial read left off.
 */
TEST(peek_across_boundaries)
{
	static const size_t sizes[] = { 5000, 10, 150000 };
	size_t total = 155010, off = 0, i;
	unsigned char *buf = malloc(total + 100);
	struct rdmashare *c;
	int cfd, sfd;

	ASSERT_NE(NULL, buf);
	c = pair(_metadata, PORT, 0, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	for (i = 0; i < 3; off += sizes[i++])
		ASSERT_EQ(0, write_pat(cfd, off, sizes[i]));
	ASSERT_EQ((int)total, wait_inq(sfd, total));

	EXPECT_EQ(7, rmsg(sfd, buf, 7, MSG_PEEK));
	EXPECT_TRUE(is_pat(buf, 0, 7));
	EXPECT_EQ((int)total, inq(sfd));
	/* All of it, past both boundaries, still taking nothing. */
	EXPECT_EQ((long)total, rmsg(sfd, buf, total + 100, MSG_PEEK));
	EXPECT_TRUE(is_pat(buf, 0, total));
	EXPECT_EQ((int)total, inq(sfd));

	/* A partial read, then a peek across the first boundary. */
	EXPECT_EQ(4999, read(sfd, buf, 4999));
	EXPECT_TRUE(is_pat(buf, 0, 4999));
	EXPECT_EQ(3, rmsg(sfd, buf, 3, MSG_PEEK | MSG_DONTWAIT));
	EXPECT_TRUE(is_pat(buf, 4999, 3));
	EXPECT_EQ(11, rmsg(sfd, buf, 11, 0));
	EXPECT_TRUE(is_pat(buf, 4999, 11));
	/* Into the big message, then a peek across its chunks. */
	EXPECT_EQ(70000, rmsg(sfd, buf, 70000, MSG_WAITALL));
	EXPECT_TRUE(is_pat(buf, 5010, 70000));
	EXPECT_EQ(80000, rmsg(sfd, buf, 100000, MSG_PEEK));
	EXPECT_TRUE(is_pat(buf, 75010, 80000));
	EXPECT_EQ(80000, rmsg(sfd, buf, 100000, MSG_WAITALL | MSG_DONTWAIT));
	EXPECT_TRUE(is_pat(buf, 75010, 80000));
	EXPECT_EQ(0, inq(sfd));
	/* Nothing waits: a peek that may not wait says so. */
	EXPECT_EQ(-EAGAIN, rmsg(sfd, buf, 10, MSG_PEEK | MSG_DONTWAIT));
	/* At the end, a peek is the end too. */
	close(cfd);
	EXPECT_EQ(0, rmsg(sfd, buf, 10, MSG_PEEK));
	EXPECT_EQ(0, rmsg(sfd, buf, 10, MSG_PEEK | MSG_WAITALL));
	close(sfd);
	rdmashare_close(c);
	free(buf);
}

struct dribble {
	int fd;
	size_t len;
	int pieces;
	bool shut;
};

/* Writes @len pattern bytes in @pieces, 20 ms apart; shuts down if asked. */
static void *dribble_fn(void *arg)
{
	struct dribble *d = arg;
	size_t off = 0, n;
	int i;

	for (i = 0; i < d->pieces; i++) {
		usleep(20000);
		n = i == d->pieces - 1 ? d->len - off : d->len / d->pieces;
		if (write_pat(d->fd, off, n))
			break;
		off += n;
	}
	if (d->shut)
		rdmashare_shutdown_file(d->fd);
	return NULL;
}

/*
 * MSG_WAITALL waits for all it asks for across many writes, or returns
 * what came when the stream ends; with MSG_PEEK it waits for all of it
 * too, and takes nothing.
 */
TEST(waitall)
{
	unsigned char *buf = malloc(300000);
	struct dribble d;
	struct rdmashare *c;
	pthread_t t;
	int cfd, sfd;

	ASSERT_NE(NULL, buf);
	c = pair(_metadata, PORT + 1, 0, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);

	d = (struct dribble){ .fd = cfd, .len = 200000, .pieces = 8 };
	ASSERT_EQ(0, pthread_create(&t, NULL, dribble_fn, &d));
	EXPECT_EQ(200000, rmsg(sfd, buf, 200000, MSG_WAITALL));
	EXPECT_TRUE(is_pat(buf, 0, 200000));
	pthread_join(t, NULL);

	d = (struct dribble){ .fd = cfd, .len = 3000, .pieces = 3 };
	ASSERT_EQ(0, pthread_create(&t, NULL, dribble_fn, &d));
	EXPECT_EQ(3000, rmsg(sfd, buf, 3000, MSG_PEEK | MSG_WAITALL));
	EXPECT_TRUE(is_pat(buf, 0, 3000));
	EXPECT_EQ(3000, inq(sfd));
	EXPECT_EQ(3000, read(sfd, buf, 3000));
	pthread_join(t, NULL);

	/* The end comes first: what came. */
	d = (struct dribble){ .fd = cfd, .len = 1000, .pieces = 2, .shut = true };
	ASSERT_EQ(0, pthread_create(&t, NULL, dribble_fn, &d));
	EXPECT_EQ(1000, rmsg(sfd, buf, 300000, MSG_WAITALL));
	EXPECT_TRUE(is_pat(buf, 0, 1000));
	EXPECT_EQ(0, rmsg(sfd, buf, 300000, MSG_WAITALL));
	pthread_join(t, NULL);
	close(cfd);
	close(sfd);
	rdmashare_close(c);
	free(buf);
}

struct blocked {
	int fd;
	ssize_t got;
	char buf[64];
};

static void *blocked_read_fn(void *arg)
{
	struct blocked *b = arg;

	b->got = read(b->fd, b->buf, sizeof(b->buf));
	if (b->got < 0)
		b->got = -errno;
	return NULL;
}

/*
 * On a blocking AC file, MSG_DONTWAIT does not wait, not for data, not for
 * room, and not behind another reader that waits; the file stays blocking.
 */
TEST(dontwait)
{
	struct blocked b = { .got = 1 };
	unsigned char *buf = malloc(1 << 20);
	struct rdmashare *c;
	long n, sent = 0;
	pthread_t t;
	double t0;
	int cfd, sfd;

	ASSERT_NE(NULL, buf);
	memset(buf, 7, 1 << 20);
	c = pair(_metadata, PORT + 2, 65536, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	EXPECT_EQ(-EAGAIN, rmsg(sfd, buf, 10, MSG_DONTWAIT));

	b.fd = sfd;
	ASSERT_EQ(0, pthread_create(&t, NULL, blocked_read_fn, &b));
	usleep(200000);
	t0 = rs_now();
	EXPECT_EQ(-EAGAIN, rmsg(sfd, buf, 10, MSG_DONTWAIT));
	EXPECT_GT(2.0, rs_now() - t0);
	EXPECT_EQ(1, b.got);		/* still waiting */
	EXPECT_EQ(5, smsg(cfd, "hello", 5, MSG_DONTWAIT));
	pthread_join(t, NULL);
	EXPECT_EQ(5, b.got);

	/* The reader stops reading: the 64 KiB send buffer fills. */
	for (;;) {
		n = smsg(cfd, buf, 1 << 20, MSG_DONTWAIT);
		if (n < 0)
			break;
		sent += n;
		ASSERT_GT(64L << 20, sent);
	}
	EXPECT_EQ(-EAGAIN, n);
	EXPECT_LE(65536, sent);
	EXPECT_EQ(0, fcntl(cfd, F_GETFL) & O_NONBLOCK);
	close(cfd);
	close(sfd);
	rdmashare_close(c);
	free(buf);
}

static volatile sig_atomic_t pipes;

static void on_sigpipe(int sig)
{
	pipes++;
}

/* MSG_NOSIGNAL: EPIPE, and no SIGPIPE, which a plain write still raises. */
TEST(nosignal)
{
	struct sigaction sa = { .sa_handler = on_sigpipe }, old;
	struct rdmashare *c;
	int cfd, sfd, i;
	char b;

	ASSERT_EQ(0, sigaction(SIGPIPE, &sa, &old));
	c = pair(_metadata, PORT + 3, 0, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	close(sfd);
	EXPECT_EQ(0, read(cfd, &b, 1));
	pipes = 0;
	for (i = 0; i < 3; i++)
		EXPECT_EQ(-EPIPE, smsg(cfd, "x", 1, MSG_NOSIGNAL));
	EXPECT_EQ(0, pipes);
	EXPECT_EQ(-EPIPE, smsg(cfd, "x", 1, 0));
	EXPECT_EQ(1, pipes);
	EXPECT_EQ(-1, write(cfd, "x", 1));
	EXPECT_EQ(EPIPE, errno);
	EXPECT_EQ(2, pipes);
	close(cfd);
	rdmashare_close(c);
	sigaction(SIGPIPE, &old, NULL);
}

/*
 * MSG_MORE: sixteen 100-byte writes with it and one without are one
 * message; a write with it alone goes once its timer ends, and before a
 * SHUTDOWN or the close.
 */
TEST(more_coalesces)
{
	unsigned char buf[4096];
	struct rdmashare *c;
	int cfd, sfd, i;
	__u64 m0;
	double t0;

	c = pair(_metadata, PORT + 4, 0, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	for (i = 0; i < (int)sizeof(buf); i++)
		buf[i] = pat(i);

	m0 = tx_msgs(cfd);
	for (i = 0; i < 16; i++)
		EXPECT_EQ(100, smsg(cfd, buf + i * 100, 100, MSG_MORE));
	EXPECT_EQ(m0, tx_msgs(cfd));
	EXPECT_EQ(100, smsg(cfd, buf + 1600, 100, 0));
	EXPECT_EQ(1700, wait_inq(sfd, 1700));
	EXPECT_EQ(m0 + 1, tx_msgs(cfd));
	memset(buf + 2048, 0, 2048);
	EXPECT_EQ(1700, rmsg(sfd, buf + 2048, 1700, MSG_WAITALL));
	EXPECT_TRUE(is_pat(buf + 2048, 0, 1700));

	/* Alone, it waits for its timer (200 ms), then goes. */
	t0 = rs_now();
	EXPECT_EQ(10, smsg(cfd, buf, 10, MSG_MORE));
	EXPECT_EQ(m0 + 1, tx_msgs(cfd));
	EXPECT_EQ(10, wait_inq(sfd, 10));
	EXPECT_LT(0.15, rs_now() - t0);
	EXPECT_EQ(m0 + 2, tx_msgs(cfd));
	EXPECT_EQ(10, read(sfd, buf + 2048, 10));

	/* A SHUTDOWN sends it first; so does the close. */
	EXPECT_EQ(20, smsg(cfd, buf, 20, MSG_MORE));
	EXPECT_EQ(0, rdmashare_shutdown_file(cfd));
	EXPECT_EQ(20, rmsg(sfd, buf + 2048, 100, MSG_WAITALL));
	EXPECT_TRUE(is_pat(buf + 2048, 0, 20));
	EXPECT_EQ(30, smsg(sfd, buf, 30, MSG_MORE));
	close(sfd);
	EXPECT_EQ(30, rmsg(cfd, buf + 2048, 100, MSG_WAITALL));
	EXPECT_TRUE(is_pat(buf + 2048, 0, 30));
	close(cfd);
	rdmashare_close(c);
}

struct reader {
	int fd;
	unsigned char *buf;
	size_t len;
	long got;
};

static void *waitall_fn(void *arg)
{
	struct reader *r = arg;

	r->got = rmsg(r->fd, r->buf, r->len, MSG_WAITALL);
	return NULL;
}

/*
 * A write with MSG_MORE bigger than the send buffer goes, all of it, but
 * what it holds back at its end.
 */
TEST(more_beyond_sndbuf)
{
	size_t len = 300000;
	unsigned char *buf = pat_buf(0, len);
	struct reader r = { .len = len };
	struct rdmashare *c;
	pthread_t t;
	int cfd, sfd;

	r.buf = malloc(len);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, r.buf);
	c = pair(_metadata, PORT + 5, 65536, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	r.fd = sfd;
	ASSERT_EQ(0, pthread_create(&t, NULL, waitall_fn, &r));
	EXPECT_EQ((long)len, smsg(cfd, buf, len, MSG_MORE));
	pthread_join(t, NULL);
	EXPECT_EQ((long)len, r.got);
	EXPECT_TRUE(is_pat(r.buf, 0, len));
	close(cfd);
	close(sfd);
	rdmashare_close(c);
	free(buf);
	free(r.buf);
}

/*
 * Small writes that come while a SEND waits are appended to the message
 * before them (an AC file is a byte stream): each write is a message of
 * its own or appended (the AC's tx_msgs and the device's tx_appended add
 * up to the writes, none of which the send buffer's end splits), some
 * are appended, and the stream arrives whole.
 */
TEST(small_writes_append)
{
	enum { N = 4000, LEN = 16 };
	size_t len = N * LEN, i;
	unsigned char *buf = pat_buf(0, len);
	struct reader r = { .len = len };
	struct rdmashare *c;
	long a0, appended;
	pthread_t t;
	int cfd, sfd;
	__u64 m0;

	r.buf = malloc(len);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, r.buf);
	c = pair(_metadata, PORT + 10, 65536, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	m0 = tx_msgs(cfd);
	a0 = rs_device_stat("tx_appended");
	ASSERT_LE(0, a0);
	r.fd = sfd;
	ASSERT_EQ(0, pthread_create(&t, NULL, waitall_fn, &r));
	for (i = 0; i < N; i++)
		ASSERT_EQ(LEN, write(cfd, buf + i * LEN, LEN));
	pthread_join(t, NULL);
	EXPECT_EQ((long)len, r.got);
	EXPECT_TRUE(is_pat(r.buf, 0, len));
	appended = rs_device_stat("tx_appended") - a0;
	TH_LOG("%d writes of %d bytes: %llu messages, %ld appended", N, LEN,
	       tx_msgs(cfd) - m0, appended);
	EXPECT_LT(0, appended);
	EXPECT_EQ(N, tx_msgs(cfd) - m0 + appended);
	close(cfd);
	close(sfd);
	rdmashare_close(c);
	free(buf);
	free(r.buf);
}

/*
 * SHUT_RD: a reader waiting wakes to the end, later reads end at once,
 * what comes is dropped, poll says so; writing goes on.  SHUT_RDWR hangs
 * up.
 */
TEST(shut_rd)
{
	struct rdmashare_shutdown rd = { .size = sizeof(rd), .flags = RDMASHARE_SHUTDOWN_RD };
	struct rdmashare_shutdown rdwr = { .size = sizeof(rd),
					   .flags = RDMASHARE_SHUTDOWN_RD | RDMASHARE_SHUTDOWN_WR };
	struct blocked b = { .got = 1 };
	struct pollfd pfd;
	struct rdmashare *c;
	unsigned char buf[64];
	pthread_t t;
	int cfd, sfd;

	c = pair(_metadata, PORT + 6, 0, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(3, write(cfd, "old", 3));
	ASSERT_EQ(3, wait_inq(sfd, 3));
	ASSERT_EQ(3, read(sfd, buf, 3));
	b.fd = sfd;
	ASSERT_EQ(0, pthread_create(&t, NULL, blocked_read_fn, &b));
	usleep(200000);
	EXPECT_EQ(1, b.got);
	EXPECT_EQ(0, ioctl(sfd, RDMASHARE_IOC_SHUTDOWN, &rd));
	pthread_join(t, NULL);
	EXPECT_EQ(0, b.got);
	EXPECT_EQ(0, read(sfd, buf, sizeof(buf)));
	EXPECT_EQ(0, rmsg(sfd, buf, sizeof(buf), MSG_PEEK));
	pfd = (struct pollfd){ .fd = sfd, .events = POLLIN | POLLOUT | POLLRDHUP };
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(POLLIN | POLLOUT | POLLRDHUP, pfd.revents);

	/* Dropped: never readable, and no slot kept for it. */
	EXPECT_EQ(5, write(cfd, "later", 5));
	usleep(300000);
	EXPECT_EQ(0, inq(sfd));
	EXPECT_EQ(0, read(sfd, buf, sizeof(buf)));
	/* Its writes still go. */
	EXPECT_EQ(4, write(sfd, "back", 4));
	EXPECT_EQ(4, rmsg(cfd, buf, 4, MSG_WAITALL));
	EXPECT_EQ(0, memcmp(buf, "back", 4));
	/* Again, and then both ways: the peer's reads end, this end hangs up. */
	EXPECT_EQ(0, ioctl(sfd, RDMASHARE_IOC_SHUTDOWN, &rd));
	EXPECT_EQ(0, ioctl(sfd, RDMASHARE_IOC_SHUTDOWN, &rdwr));
	EXPECT_EQ(0, read(cfd, buf, sizeof(buf)));
	pfd = (struct pollfd){ .fd = sfd, .events = POLLIN };
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_TRUE(pfd.revents & POLLHUP);
	signal(SIGPIPE, SIG_IGN);
	EXPECT_EQ(-EPIPE, smsg(sfd, "x", 1, 0));
	signal(SIGPIPE, SIG_DFL);
	close(cfd);
	close(sfd);
	rdmashare_close(c);
}

/* The events epoll @ep reports within @ms, 0 if none. */
static unsigned int events(int ep, int ms)
{
	struct epoll_event ev = { 0 };

	return epoll_wait(ep, &ev, 1, ms) == 1 ? ev.events : 0;
}

/*
 * epoll, level triggered: readable while bytes wait, writable while the
 * send buffer has room.  Edge triggered: an event per arrival and per
 * room that comes back, none in between; the peer's SHUTDOWN as
 * EPOLLRDHUP.
 */
TEST(epoll_level_and_edge)
{
	struct rdmashare_file_set fs = { .size = sizeof(fs), .flags = RDMASHARE_FILE_SET_SNDBUF,
					 .sndbuf = 65536 };
	struct epoll_event ev = { 0 };
	unsigned char *buf = malloc(1 << 20);
	int cfd, sfd, lt, et, i, n_out;
	struct rdmashare *c;
	long n;

	ASSERT_NE(NULL, buf);
	memset(buf, 1, 1 << 20);
	c = pair(_metadata, PORT + 9, 65536, RDMASHARE_FILE_NONBLOCK, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	/* A send buffer that does not grow while it is filled below. */
	ASSERT_EQ(0, ioctl(cfd, RDMASHARE_IOC_FILE_SET, &fs));
	lt = epoll_create1(0);
	et = epoll_create1(0);
	ASSERT_LE(0, lt);
	ASSERT_LE(0, et);
	ev.events = EPOLLIN | EPOLLRDHUP;
	ASSERT_EQ(0, epoll_ctl(lt, EPOLL_CTL_ADD, sfd, &ev));
	ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
	ASSERT_EQ(0, epoll_ctl(et, EPOLL_CTL_ADD, sfd, &ev));

	EXPECT_EQ(0, events(lt, 0));
	EXPECT_EQ(0, events(et, 0));
	ASSERT_EQ(100, write(cfd, buf, 100));
	EXPECT_EQ(EPOLLIN, events(lt, 5000));
	EXPECT_EQ(EPOLLIN, events(et, 5000));
	/* Level: again, and after a partial read; edge: not again. */
	EXPECT_EQ(EPOLLIN, events(lt, 0));
	EXPECT_EQ(0, events(et, 0));
	EXPECT_EQ(50, read(sfd, buf, 50));
	EXPECT_EQ(EPOLLIN, events(lt, 0));
	EXPECT_EQ(0, events(et, 100));
	/* A new arrival is a new edge. */
	ASSERT_EQ(10, write(cfd, buf, 10));
	EXPECT_EQ(EPOLLIN, events(et, 5000));
	EXPECT_EQ(60, read(sfd, buf, 100));
	EXPECT_EQ(-1, read(sfd, buf, 100));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(0, events(lt, 0));
	EXPECT_EQ(0, events(et, 0));

	/* Writable: at once; edge triggered, again only when room comes back. */
	ev.events = EPOLLOUT | EPOLLET;
	ASSERT_EQ(0, epoll_ctl(et, EPOLL_CTL_MOD, sfd, &ev));
	ev.events = EPOLLOUT | EPOLLET;
	ASSERT_EQ(0, epoll_ctl(et, EPOLL_CTL_ADD, cfd, &ev));
	for (i = 0; i < 2; i++)
		EXPECT_EQ(EPOLLOUT, events(et, 1000));
	EXPECT_EQ(0, events(et, 0));
	/*
	 * Fill it: room comes back while the peer's window takes what was
	 * sent (each such return an edge), then no more while it does not
	 * read.  Reading makes room again: an edge.
	 */
	for (i = 0; i < 100; i++) {
		do
			n = write(cfd, buf, 1 << 20);
		while (n > 0);
		ASSERT_EQ(EAGAIN, errno);
		if (!events(et, 500))
			break;
	}
	EXPECT_GT(100, i);
	EXPECT_EQ(0, events(et, 0));
	for (i = 0; i < 1000 && !(n = events(et, 0)); i++)
		if (read(sfd, buf, 1 << 20) < 0)
			usleep(1000);
	EXPECT_EQ(EPOLLOUT, n);
	EXPECT_EQ(0, events(et, 0));
	/* The peer's SHUTDOWN: readable (the end) and EPOLLRDHUP, level and edge. */
	ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
	ASSERT_EQ(0, epoll_ctl(et, EPOLL_CTL_DEL, cfd, NULL));
	ASSERT_EQ(0, epoll_ctl(et, EPOLL_CTL_MOD, sfd, &ev));
	/* All of it read first: what is still on its way would be an edge. */
	for (i = 0; i < 1000; i++) {
		if (read(sfd, buf, 1 << 20) > 0)
			continue;
		if (!ioctl(cfd, SIOCOUTQ, &n_out) && !n_out && inq(sfd) == 0)
			break;
		usleep(10000);
	}
	events(et, 0);
	EXPECT_EQ(0, rdmashare_shutdown_file(cfd));
	EXPECT_EQ(EPOLLIN | EPOLLRDHUP, events(et, 5000));
	EXPECT_EQ(EPOLLIN | EPOLLRDHUP, events(lt, 5000));
	EXPECT_EQ(0, events(et, 0));
	close(lt);
	close(et);
	close(cfd);
	close(sfd);
	rdmashare_close(c);
	free(buf);
}

/* Every bad argument, with its errno; nothing sent or taken for it. */
TEST(bad_args)
{
	struct rdmashare_shutdown sh = { .size = sizeof(sh) };
	struct iovec iov = { .iov_base = (void *)1, .iov_len = 10 }, *many;
	struct rdmashare_msg m = { .size = sizeof(m) };
	struct rdmashare *c;
	int cfd, sfd, lfd;
	char buf[16];

	c = pair(_metadata, PORT + 7, 0, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(6, write(cfd, "abcdef", 6));
	ASSERT_EQ(6, wait_inq(sfd, 6));

	EXPECT_EQ(-EOPNOTSUPP, rmsg(sfd, buf, 1, MSG_OOB));
	EXPECT_EQ(-EOPNOTSUPP, rmsg(sfd, buf, 1, MSG_TRUNC));
	EXPECT_EQ(-EOPNOTSUPP, rmsg(sfd, buf, 1, MSG_ERRQUEUE | MSG_PEEK));
	EXPECT_EQ(-EOPNOTSUPP, smsg(cfd, buf, 1, MSG_OOB));
	EXPECT_EQ(-EOPNOTSUPP, smsg(cfd, buf, 1, MSG_FASTOPEN));
	/* Flags with no use here are ignored, as TCP's (sockperf passes some). */
	EXPECT_EQ(1, rmsg(sfd, buf, 1, MSG_PEEK | MSG_NOSIGNAL | MSG_MORE | MSG_CONFIRM));
	EXPECT_EQ('a', buf[0]);
	EXPECT_EQ(0, smsg(cfd, buf, 0, MSG_PEEK | MSG_WAITALL | MSG_CONFIRM | MSG_ZEROCOPY));

	m.iov = (uintptr_t)&iov;
	m.iovcnt = 1;
	m.flags = 1;
	EXPECT_EQ(-1, ioctl(sfd, RDMASHARE_IOC_RECVMSG, &m));
	EXPECT_EQ(EINVAL, errno);
	m.flags = 0;
	m.resv = 1;
	EXPECT_EQ(-1, ioctl(sfd, RDMASHARE_IOC_RECVMSG, &m));
	EXPECT_EQ(EINVAL, errno);
	m.resv = 0;
	m.size = offsetof(struct rdmashare_msg, resv);
	EXPECT_EQ(-1, ioctl(sfd, RDMASHARE_IOC_RECVMSG, &m));
	EXPECT_EQ(EINVAL, errno);
	m.size = sizeof(m);
	/* A bad buffer, a bad iovec array, too many entries. */
	EXPECT_EQ(-1, ioctl(sfd, RDMASHARE_IOC_RECVMSG, &m));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(cfd, RDMASHARE_IOC_SENDMSG, &m));
	EXPECT_EQ(EFAULT, errno);
	m.iov = 8;
	EXPECT_EQ(-1, ioctl(sfd, RDMASHARE_IOC_RECVMSG, &m));
	EXPECT_EQ(EFAULT, errno);
	many = calloc(1025, sizeof(*many));
	ASSERT_NE(NULL, many);
	m.iov = (uintptr_t)many;
	m.iovcnt = 1025;
	EXPECT_EQ(-1, ioctl(sfd, RDMASHARE_IOC_RECVMSG, &m));
	EXPECT_EQ(EINVAL, errno);
	m.iovcnt = 1024;
	many[1023] = (struct iovec){ .iov_base = buf, .iov_len = 2 };
	EXPECT_EQ(2, ioctl(sfd, RDMASHARE_IOC_RECVMSG, &m));
	EXPECT_EQ(0, memcmp(buf, "ab", 2));
	free(many);
	/* Nothing lost to the errors above. */
	EXPECT_EQ(4, inq(sfd));
	EXPECT_EQ(4, rmsg(sfd, buf, sizeof(buf), 0));
	EXPECT_EQ(0, memcmp(buf, "cdef", 4));
	EXPECT_EQ(0, rmsg(sfd, buf, 0, 0));
	EXPECT_EQ(0, smsg(cfd, buf, 0, MSG_MORE));

	sh.flags = 4;
	EXPECT_EQ(-1, ioctl(cfd, RDMASHARE_IOC_SHUTDOWN, &sh));
	EXPECT_EQ(EINVAL, errno);
	/* Not on a handle, nor on a listening file. */
	EXPECT_EQ(-ENOTTY, rmsg(rdmashare_fd(c), buf, 1, 0));
	EXPECT_EQ(-ENOTTY, smsg(rdmashare_fd(c), buf, 1, 0));
	lfd = rdmashare_listen_fd(PORT + 8, 1, 0, 0);
	ASSERT_LE(0, lfd);
	EXPECT_EQ(-ENOTTY, rmsg(lfd, buf, 1, 0));
	close(lfd);
	close(cfd);
	close(sfd);
	rdmashare_close(c);
}

TEST_HARNESS_MAIN

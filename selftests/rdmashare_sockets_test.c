// SPDX-License-Identifier: GPL-2.0
/*
 * AC files as a program uses a socket's descriptor: what the kernel does
 * for any file must hold for them too.
 *
 *  - dup2_close_one: a copy made with dup2 goes on after the original is
 *    closed; the peer sees the end only once the last copy is closed.
 *  - scm_rights: passed to another process over a UNIX socket, the AC file
 *    works there after its sender closed it.
 *  - cloexec_across_exec: a close-on-exec AC file is gone in the exec'd
 *    program; one without the flag is still there and writes from it
 *    reach the peer.
 *  - select_readiness: select(2) reports it writable, and readable only
 *    once something came.
 *  - lib_peek_waitall, lib_dontwait_beside_reader, lib_nosignal_sendv_more,
 *    lib_shutdown_how, lib_bad_arguments: librdmashare's socket calls of AC
 *    files (rdmashare_file_send(3)): a peek across two writes then a read
 *    that waits for all of it into two pieces; MSG_DONTWAIT at once while
 *    another thread waits in read(2), which then gets its byte, and the
 *    file still blocking; MSG_MORE, and EPIPE without SIGPIPE once the
 *    peer closed; SHUT_RD ending a waiting read, dropping what comes while
 *    writes go on, SHUT_RDWR; the errnos of bad flags, buffers, counts and
 *    descriptors.
 *  - lib_sndbuf_cork: rdmashare_file_set_sndbuf() in pages, larger, smaller,
 *    beyond the file area (the size stays); rdmashare_file_set_cork()
 *    holding writes until taken off; FILE_INFO reads both back.
 *  - lib_timeouts: rdmashare_file_set_timeout(): a read (read(2), a peek,
 *    MSG_WAITALL with part of it there, one into the reader's own pages)
 *    returns what it has or EAGAIN once SO_RCVTIMEO ran out, and the
 *    stream after the taken-back offer is whole; a write with no room
 *    fails with EAGAIN after SO_SNDTIMEO; FILE_INFO reads them back; bad
 *    arguments.
 *  - stream_1gib: 1 GiB through a pair of AC files, every byte checked
 *    against the pattern at its offset (64 MiB on a kernel with kmemleak,
 *    the debug kernel, where 1 GiB would take minutes).
 *  - preloaded.*.run: this program run again under librdmashare-preload.so, as
 *    an unmodified program: its socket(), listen(), connect() and accept()
 *    give AC files, on which recv(MSG_PEEK) and recv(MSG_WAITALL) across two
 *    sends and recvmsg() into two pieces; recv(MSG_DONTWAIT) on a blocking
 *    socket while another thread waits in recv() (at once, the socket
 *    still blocking, the other thread still waiting); send(MSG_NOSIGNAL)
 *    after the peer closed (EPIPE, no SIGPIPE in a process with another
 *    thread); shutdown(SHUT_RD) ending a waiting recv() and later ones,
 *    then SHUT_RDWR; MSG_OOB refused with EOPNOTSUPP; setsockopt()'s
 *    SO_SNDBUF doubled as Linux's and read back by getsockopt(), TCP_CORK
 *    holding sends until taken off; SO_RCVTIMEO ending a recv() with
 *    EAGAIN, read back, a bad one refused, and SO_RCVTIMEO of a listener
 *    and SO_SNDTIMEO set before connect() carried over to the AC files;
 *    non-blocking connect(): 64 from one thread, each an AC file at once
 *    (EINPROGRESS) and registered in epoll before connect(), all writable
 *    with SO_ERROR 0, EISCONN when asked again, a blocking socket's and a
 *    listener's epoll registrations (made before connect() and listen())
 *    carried to the files that take their numbers; to a plain TCP server,
 *    epoll_wait(), epoll_pwait2(), poll() and select() report the TCP
 *    socket connected in its place (writable, no error), as do SO_ERROR, a
 *    second connect() and write() without a wait, with its options and
 *    epoll registration, and ECONNREFUSED with no server at all; two listeners of one port with
 *    SO_REUSEPORT, both over rdmashare, taking four connections each.
 */
#include <arpa/inet.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT	8400

FIXTURE(sk) {
	struct rdmashare *c;
	int lfd, cfd, sfd;
};

/* A connected pair of AC files: the client's from a handle, the server's from a listening file. */
FIXTURE_SETUP(sk)
{
	struct rdmashare_setup p = {
		.flags = RDMASHARE_SETUP_FILES, .files_size = 1 << 20,
		.data_size = 1 << 20, .rx_slots = 64,
	};
	struct sockaddr_in sin = { .sin_family = AF_INET };
	static unsigned int port = PORT;

	sin.sin_port = htons(++port);
	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	self->c = rs_open_with(&p);
	ASSERT_NE(NULL, self->c);
	self->lfd = rdmashare_listen_fd(port, 4, 0, RDMASHARE_FILE_CLOEXEC);
	ASSERT_LE(0, self->lfd);
	self->cfd = rdmashare_connect_file(self->c, (struct sockaddr *)&sin, 20000, 0,
					   RDMASHARE_FILE_CLOEXEC);
	ASSERT_LE(0, self->cfd);
	self->sfd = rdmashare_accept_fd(self->lfd, NULL, NULL, RDMASHARE_FILE_CLOEXEC);
	ASSERT_LE(0, self->sfd);
}

FIXTURE_TEARDOWN(sk)
{
	close(self->sfd);
	close(self->cfd);
	close(self->lfd);
	rdmashare_close(self->c);
}

/* @len bytes from @fd, or fewer at the end of the stream. */
static ssize_t read_n(int fd, void *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = read(fd, (char *)buf + got, len - got);
		if (n < 0)
			return -1;
		if (!n)
			break;
		got += n;
	}
	return got;
}

TEST_F_TIMEOUT(sk, dup2_close_one, 60)
{
	int copy = 100;
	char b[8];

	ASSERT_EQ(copy, dup2(self->cfd, copy));
	close(self->cfd);
	self->cfd = -1;
	ASSERT_EQ(4, write(copy, "copy", 4));
	ASSERT_EQ(4, read_n(self->sfd, b, 4));
	EXPECT_EQ(0, memcmp(b, "copy", 4));
	ASSERT_EQ(4, write(self->sfd, "back", 4));
	ASSERT_EQ(4, read_n(copy, b, 4));
	EXPECT_EQ(0, memcmp(b, "back", 4));
	/* The last copy's close is the end the peer reads. */
	close(copy);
	EXPECT_EQ(0, read_n(self->sfd, b, 1));
}

static int send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = "f", .iov_len = 1 };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
		.msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))], c;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
		.msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &m, 0) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&m);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

TEST_F_TIMEOUT(sk, scm_rights, 60)
{
	int sv[2], fd, status;
	char b[8];
	pid_t pid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* Another process: only what comes over the UNIX socket. */
		close(sv[0]);
		close(self->cfd);
		close(self->sfd);
		fd = recv_fd(sv[1]);
		if (fd < 0 || read_n(fd, b, 4) != 4 || memcmp(b, "ping", 4) ||
		    write(fd, "pong", 4) != 4)
			_exit(1);
		_exit(0);
	}
	close(sv[1]);
	ASSERT_EQ(0, send_fd(sv[0], self->sfd));
	/* The sender's copy goes: the receiver's keeps the AC. */
	close(self->sfd);
	self->sfd = -1;
	ASSERT_EQ(4, write(self->cfd, "ping", 4));
	ASSERT_EQ(4, read_n(self->cfd, b, 4));
	EXPECT_EQ(0, memcmp(b, "pong", 4));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	/* The child's exit closed the last copy. */
	EXPECT_EQ(0, read_n(self->cfd, b, 1));
	close(sv[0]);
}

TEST_F_TIMEOUT(sk, cloexec_across_exec, 60)
{
	int keep;
	char b[8];

	/* cfd is close-on-exec; a copy of it is not (9: sh takes one digit). */
	keep = dup2(self->cfd, 9);
	ASSERT_EQ(9, keep);
	EXPECT_FALSE(fcntl(keep, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(1, rs_sh("exec sh -c 'test -e /proc/self/fd/%d'", self->cfd));
	EXPECT_EQ(0, rs_sh("exec sh -c 'test -e /proc/self/fd/%d && printf exec >&%d'",
			   keep, keep));
	ASSERT_EQ(4, read_n(self->sfd, b, 4));
	EXPECT_EQ(0, memcmp(b, "exec", 4));
	close(keep);
}

TEST_F_TIMEOUT(sk, select_readiness, 60)
{
	struct timeval tv = { 0, 100000 };
	fd_set rd, wr;
	char b;

	FD_ZERO(&rd);
	FD_ZERO(&wr);
	FD_SET(self->sfd, &rd);
	FD_SET(self->sfd, &wr);
	ASSERT_EQ(1, select(self->sfd + 1, &rd, &wr, NULL, &tv));
	EXPECT_FALSE(FD_ISSET(self->sfd, &rd));
	EXPECT_TRUE(FD_ISSET(self->sfd, &wr));
	ASSERT_EQ(1, write(self->cfd, "s", 1));
	FD_ZERO(&rd);
	FD_SET(self->sfd, &rd);
	tv.tv_sec = 20;
	ASSERT_EQ(1, select(self->sfd + 1, &rd, NULL, NULL, &tv));
	EXPECT_TRUE(FD_ISSET(self->sfd, &rd));
	ASSERT_EQ(1, read(self->sfd, &b, 1));
	EXPECT_EQ('s', b);
}

/* Writes @a, then @b after 100 ms, to @fd: a message that comes in two. */
struct two_writes {
	int fd;
	const char *a, *b;
};

static void *write_two(void *arg)
{
	struct two_writes *w = arg;

	usleep(100000);
	if (write(w->fd, w->a, strlen(w->a)) < 0)
		return NULL;
	usleep(100000);
	if (write(w->fd, w->b, strlen(w->b)) < 0)
		return NULL;
	return NULL;
}

TEST_F_TIMEOUT(sk, lib_peek_waitall, 60)
{
	struct two_writes w = { .fd = self->cfd, .a = "abcd", .b = "efgh" };
	char x[3], y[5], b[8];
	struct iovec iov[2] = { { x, sizeof(x) }, { y, sizeof(y) } };
	pthread_t th;

	ASSERT_EQ(0, pthread_create(&th, NULL, write_two, &w));
	/* Peeked across the two writes, and left there. */
	EXPECT_EQ(8, rdmashare_file_recv(self->sfd, b, 8, MSG_PEEK | MSG_WAITALL));
	EXPECT_EQ(0, memcmp(b, "abcdefgh", 8));
	EXPECT_EQ(3, rdmashare_file_recv(self->sfd, b, 3, MSG_PEEK));
	EXPECT_EQ(8, rdmashare_file_recvv(self->sfd, iov, 2, MSG_WAITALL));
	EXPECT_EQ(0, memcmp(x, "abc", 3));
	EXPECT_EQ(0, memcmp(y, "defgh", 5));
	pthread_join(th, NULL);
	EXPECT_EQ(-EAGAIN, rdmashare_file_recv(self->sfd, b, 1, MSG_DONTWAIT));
}

/* Reads one byte from a blocking AC file: what it got, or -errno. */
struct reader {
	int fd;
	int got;
	char c;
};

static void *read_one(void *arg)
{
	struct reader *r = arg;
	ssize_t n = read(r->fd, &r->c, 1);

	__atomic_store_n(&r->got, n < 0 ? -errno : (int)n, __ATOMIC_RELEASE);
	return NULL;
}

TEST_F_TIMEOUT(sk, lib_dontwait_beside_reader, 60)
{
	struct reader r = { .fd = self->sfd, .got = -1000 };
	pthread_t th;
	double t;
	char b;

	ASSERT_EQ(0, pthread_create(&th, NULL, read_one, &r));
	usleep(200000);
	t = rs_now();
	EXPECT_EQ(-EAGAIN, rdmashare_file_recv(self->sfd, &b, 1, MSG_DONTWAIT));
	EXPECT_GT(1.0, rs_now() - t);
	EXPECT_FALSE(fcntl(self->sfd, F_GETFL) & O_NONBLOCK);
	/* The waiting reader waits on, and gets the byte. */
	EXPECT_EQ(-1000, __atomic_load_n(&r.got, __ATOMIC_ACQUIRE));
	ASSERT_EQ(1, rdmashare_file_send(self->cfd, "r", 1, MSG_DONTWAIT));
	pthread_join(th, NULL);
	EXPECT_EQ(1, r.got);
	EXPECT_EQ('r', r.c);
}

/* Sends bytes with @flags until the send fails: its error, 0 if none in 5 s. */
static int send_until_error(int fd, int flags)
{
	int i;
	ssize_t n;

	for (i = 0; i < 500; i++) {
		n = rdmashare_file_send(fd, "x", 1, flags);
		if (n < 0)
			return n;
		usleep(10000);
	}
	return 0;
}

TEST_F_TIMEOUT(sk, lib_nosignal_sendv_more, 60)
{
	struct iovec iov[2] = { { "mo", 2 }, { "re", 2 } };
	char b[8];

	/* MSG_MORE holds the pieces back for the next send's bytes. */
	EXPECT_EQ(4, rdmashare_file_sendv(self->cfd, iov, 2, MSG_MORE));
	EXPECT_EQ(1, rdmashare_file_send(self->cfd, "!", 1, MSG_EOR));
	ASSERT_EQ(5, rdmashare_file_recv(self->sfd, b, 5, MSG_WAITALL));
	EXPECT_EQ(0, memcmp(b, "more!", 5));
	/* SIGPIPE's default would end this process. */
	close(self->sfd);
	self->sfd = -1;
	EXPECT_EQ(-EPIPE, send_until_error(self->cfd, MSG_NOSIGNAL));
}

TEST_F_TIMEOUT(sk, lib_shutdown_how, 60)
{
	struct reader r = { .fd = self->sfd, .got = -1000 };
	pthread_t th;
	char b[4];

	EXPECT_EQ(-EINVAL, rdmashare_file_shutdown(self->sfd, 3));
	/* SHUT_RD ends the read that waits, and every later one. */
	ASSERT_EQ(0, pthread_create(&th, NULL, read_one, &r));
	usleep(200000);
	ASSERT_EQ(0, rdmashare_file_shutdown(self->sfd, SHUT_RD));
	pthread_join(th, NULL);
	EXPECT_EQ(0, r.got);
	ASSERT_EQ(2, rdmashare_file_send(self->cfd, "ab", 2, 0));
	EXPECT_EQ(0, rdmashare_file_recv(self->sfd, b, 2, 0));
	EXPECT_EQ(0, rdmashare_file_shutdown(self->sfd, SHUT_RD));
	/* Writing goes on: the client reads it. */
	ASSERT_EQ(2, rdmashare_file_send(self->sfd, "cd", 2, 0));
	ASSERT_EQ(2, rdmashare_file_recv(self->cfd, b, 2, MSG_WAITALL));
	EXPECT_EQ(0, memcmp(b, "cd", 2));
	/* SHUT_RDWR: the server reads the end, the client neither reads nor sends. */
	ASSERT_EQ(0, rdmashare_file_shutdown(self->cfd, SHUT_RDWR));
	EXPECT_EQ(0, rdmashare_file_recv(self->cfd, b, 1, 0));
	EXPECT_EQ(-EPIPE, rdmashare_file_send(self->cfd, "e", 1, MSG_NOSIGNAL));
	EXPECT_EQ(0, rdmashare_file_recv(self->sfd, b, 1, 0));
}

TEST_F_TIMEOUT(sk, lib_bad_arguments, 60)
{
	struct iovec iov = { "x", 1 };
	int p[2];
	char b;

	EXPECT_EQ(-EOPNOTSUPP, rdmashare_file_recv(self->sfd, &b, 1, MSG_OOB));
	EXPECT_EQ(-EOPNOTSUPP, rdmashare_file_recv(self->sfd, &b, 1, MSG_TRUNC));
	EXPECT_EQ(-EOPNOTSUPP, rdmashare_file_send(self->cfd, "x", 1, MSG_OOB));
	EXPECT_EQ(-EOPNOTSUPP, rdmashare_file_send(self->cfd, "x", 1, MSG_FASTOPEN));
	EXPECT_EQ(-EINVAL, rdmashare_file_sendv(self->cfd, &iov, -1, 0));
	EXPECT_EQ(-EINVAL, rdmashare_file_recvv(self->sfd, &iov, IOV_MAX + 1, 0));
	EXPECT_EQ(-EFAULT, rdmashare_file_send(self->cfd, (void *)8, 1, 0));
	EXPECT_EQ(-EFAULT, rdmashare_file_recvv(self->sfd, (void *)8, 1, 0));
	/* Not AC files: a listening file, a pipe. */
	EXPECT_EQ(-ENOTTY, rdmashare_file_recv(self->lfd, &b, 1, 0));
	EXPECT_EQ(-ENOTTY, rdmashare_file_shutdown(self->lfd, SHUT_RD));
	ASSERT_EQ(0, pipe(p));
	EXPECT_EQ(-ENOTTY, rdmashare_file_send(p[1], "x", 1, 0));
	close(p[0]);
	close(p[1]);
	/* Nothing of it reached the stream. */
	ASSERT_EQ(1, rdmashare_file_send(self->cfd, "y", 1, 0));
	ASSERT_EQ(1, rdmashare_file_recv(self->sfd, &b, 1, 0));
	EXPECT_EQ('y', b);
}

TEST_F_TIMEOUT(sk, lib_sndbuf_cork, 60)
{
	struct rdmashare_file_info fi;
	int pg = getpagesize(), p[2];
	char b[4];

	ASSERT_EQ(0, rdmashare_file_info(self->cfd, &fi, 0));
	EXPECT_EQ(64 << 10, fi.sndbuf);
	EXPECT_EQ(0, fi.cork);
	/* Rounded up to pages, moved, shrunk in place, not beyond the area. */
	EXPECT_EQ((200000 + pg - 1) / pg * pg, rdmashare_file_set_sndbuf(self->cfd, 200000));
	ASSERT_EQ(0, rdmashare_file_info(self->cfd, &fi, 0));
	EXPECT_EQ((200000 + pg - 1) / pg * pg, fi.sndbuf);
	EXPECT_EQ(pg, rdmashare_file_set_sndbuf(self->cfd, 1));
	EXPECT_EQ(pg, rdmashare_file_set_sndbuf(self->cfd, 8 << 20));
	/* Corked, the writes wait; uncorked, they go as one. */
	ASSERT_EQ(0, rdmashare_file_set_cork(self->cfd, 1));
	ASSERT_EQ(0, rdmashare_file_info(self->cfd, &fi, 0));
	EXPECT_EQ(1, fi.cork);
	ASSERT_EQ(2, rdmashare_file_send(self->cfd, "ab", 2, 0));
	EXPECT_EQ(-EAGAIN, rdmashare_file_recv(self->sfd, b, 1, MSG_DONTWAIT));
	ASSERT_EQ(2, rdmashare_file_send(self->cfd, "cd", 2, 0));
	ASSERT_EQ(0, rdmashare_file_set_cork(self->cfd, 0));
	ASSERT_EQ(4, rdmashare_file_recv(self->sfd, b, 4, MSG_WAITALL));
	EXPECT_EQ(0, memcmp(b, "abcd", 4));
	ASSERT_EQ(0, rdmashare_file_info(self->cfd, &fi, 0));
	EXPECT_EQ(0, fi.cork);
	EXPECT_EQ(pg, fi.sndbuf);
	EXPECT_EQ(-EINVAL, rdmashare_file_set_sndbuf(self->cfd, 0));
	EXPECT_EQ(-ENOTTY, rdmashare_file_set_sndbuf(self->lfd, 4096));
	ASSERT_EQ(0, pipe(p));
	EXPECT_EQ(-ENOTTY, rdmashare_file_set_cork(p[0], 1));
	close(p[0]);
	close(p[1]);
}

/* The byte at stream offset @i: a position-dependent pattern. */
static unsigned char pat(unsigned long long i)
{
	return (unsigned char)((i * 2654435761ULL) >> 13) ^ (unsigned char)(i >> 20);
}

struct gib_writer {
	int fd;
	int err;
	unsigned long long total;
};

static void *gib_write(void *arg)
{
	struct gib_writer *w = arg;
	static unsigned char buf[1 << 18];
	unsigned long long off = 0;
	size_t i, n;
	ssize_t k;

	while (off < w->total) {
		n = sizeof(buf) < w->total - off ? sizeof(buf) : w->total - off;
		for (i = 0; i < n; i++)
			buf[i] = pat(off + i);
		for (i = 0; i < n; i += k) {
			k = write(w->fd, buf + i, n - i);
			if (k <= 0) {
				w->err = errno ?: EIO;
				return NULL;
			}
		}
		off += n;
	}
	return NULL;
}

TEST_F_TIMEOUT(sk, stream_1gib, 600)
{
	static unsigned char buf[1 << 18];
	struct gib_writer w = { .fd = self->cfd, .total = 1ULL << 30 };
	unsigned long long off = 0, bad = 0;
	double t;
	pthread_t th;
	ssize_t n, i;

	if (!access("/sys/kernel/debug/kmemleak", F_OK))
		w.total = 64ULL << 20;
	t = rs_now();
	ASSERT_EQ(0, pthread_create(&th, NULL, gib_write, &w));
	while (off < w.total) {
		n = read(self->sfd, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (i = 0; i < n; i++)
			bad += buf[i] != pat(off + i);
		off += n;
	}
	pthread_join(th, NULL);
	TH_LOG("%llu MiB in %.1f s", w.total >> 20, rs_now() - t);
	EXPECT_EQ(0, w.err);
	EXPECT_EQ(w.total, off);
	EXPECT_EQ(0, bad);
}

#define TIMEO_US	300000

/* Seconds the call @expr took; its result in @ret. */
#define TIMED(ret, expr) ({ double __t = rs_now(); ret = (expr); rs_now() - __t; })

/*
 * The receive and send timeouts (SO_RCVTIMEO, SO_SNDTIMEO): a read with
 * nothing, a peek, one that waits for all and gets part, one into the
 * reader's own pages (whose offer is taken back: the stream after it is
 * whole), a write that finds no room; FILE_INFO reads them back; bad ones.
 */
TEST_F_TIMEOUT(sk, lib_timeouts, 120)
{
	struct gib_writer w = { .fd = self->cfd, .total = 512 << 10 };
	struct rdmashare_file_set fs = { .size = sizeof(fs), .flags = 1U << 4 };
	static unsigned char big[512 << 10];
	struct rdmashare_file_info fi;
	unsigned long long i, sent;
	pthread_t th;
	ssize_t n;
	double t;
	char b[8];

	ASSERT_EQ(0, rdmashare_file_info(self->sfd, &fi, 0));
	EXPECT_EQ(0, fi.rcvtimeo_us);
	EXPECT_EQ(0, fi.sndtimeo_us);
	ASSERT_EQ(0, rdmashare_file_set_timeout(self->sfd, SO_RCVTIMEO, TIMEO_US));
	ASSERT_EQ(0, rdmashare_file_info(self->sfd, &fi, 0));
	EXPECT_EQ(TIMEO_US, fi.rcvtimeo_us);
	EXPECT_EQ(0, fi.sndtimeo_us);
	/* Nothing comes: EAGAIN once the time ran out, not before. */
	t = TIMED(n, rdmashare_file_recv(self->sfd, b, 1, 0));
	EXPECT_EQ(-EAGAIN, n);
	EXPECT_LE(0.25, t);
	EXPECT_GT(5.0, t);
	t = TIMED(n, read(self->sfd, b, 1));
	EXPECT_EQ(-1, n);
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_LE(0.25, t);
	t = TIMED(n, rdmashare_file_recv(self->sfd, b, 1, MSG_PEEK));
	EXPECT_EQ(-EAGAIN, n);
	EXPECT_LE(0.25, t);
	/* Part of what MSG_WAITALL asked for: that part. */
	ASSERT_EQ(2, rdmashare_file_send(self->cfd, "ab", 2, 0));
	t = TIMED(n, rdmashare_file_recv(self->sfd, b, 4, MSG_WAITALL));
	EXPECT_EQ(2, n);
	EXPECT_LE(0.25, t);
	EXPECT_EQ(0, memcmp(b, "ab", 2));
	/* A read of zcopy_min bytes or more offers its pages, then takes them back. */
	t = TIMED(n, read(self->sfd, big, sizeof(big)));
	EXPECT_EQ(-1, n);
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_LE(0.25, t);
	ASSERT_EQ(0, rdmashare_file_set_timeout(self->sfd, SO_RCVTIMEO, 0));
	ASSERT_EQ(0, pthread_create(&th, NULL, gib_write, &w));
	ASSERT_EQ(sizeof(big), read_n(self->sfd, big, sizeof(big)));
	pthread_join(th, NULL);
	ASSERT_EQ(0, w.err);
	for (i = 0; i < sizeof(big); i++)
		if (big[i] != pat(i))
			break;
	EXPECT_EQ(sizeof(big), i);

	/* Writes while nobody reads: the peer's slots, the send buffer, then EAGAIN. */
	ASSERT_EQ(0, rdmashare_file_set_timeout(self->cfd, SO_SNDTIMEO, TIMEO_US));
	ASSERT_EQ(0, rdmashare_file_info(self->cfd, &fi, 0));
	EXPECT_EQ(TIMEO_US, fi.sndtimeo_us);
	for (sent = 0, n = 0, t = 0; sent < (256ULL << 20); sent += n) {
		t = TIMED(n, write(self->cfd, big, 64 << 10));
		if (n < (64 << 10))
			break;
	}
	TH_LOG("%llu KiB written before the write that waited %.2f s", sent >> 10, t);
	EXPECT_EQ(-1, n);
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_LE(0.25, t);

	EXPECT_EQ(-EINVAL, rdmashare_file_set_timeout(self->cfd, SO_KEEPALIVE, 1));
	EXPECT_EQ(-ENOTTY, rdmashare_file_set_timeout(self->lfd, SO_RCVTIMEO, 1));
	EXPECT_EQ(-1, ioctl(self->cfd, RDMASHARE_IOC_FILE_SET, &fs));
	EXPECT_EQ(EINVAL, errno);
	/* Longer than can be waited: none, read back as given. */
	ASSERT_EQ(0, rdmashare_file_set_timeout(self->cfd, SO_RCVTIMEO, UINT64_MAX));
	ASSERT_EQ(0, rdmashare_file_info(self->cfd, &fi, 0));
	EXPECT_EQ(UINT64_MAX, fi.rcvtimeo_us);
}

/*
 * Preloaded: this program again, with librdmashare-preload.so and
 * RS_PRELOADED naming a case, which the constructor below runs in place of
 * the tests: a socket() that listens, one that connects to it and the
 * accepted one, as a program would have them, checked to be AC files
 * (over rdmashare); then the case's socket calls on them.  The exit
 * status is 0, or the line that failed.
 */
#define PRE_PORT	8450

#define PRE_CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "preloaded: line %d: %s (errno %d)\n",	\
			__LINE__, #cond, errno);			\
		return __LINE__ & 0xff ?: 1;				\
	}								\
} while (0)

static bool is_ac_file(int fd)
{
	struct rdmashare_file_info fi;

	return !rdmashare_file_info(fd, &fi, 0);
}

/* What a preloaded program makes of a listen, a connect and an accept. */
static int pre_pair(unsigned int port, int *c, int *s)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int l, on = 1;

	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	l = socket(AF_INET, SOCK_STREAM, 0);
	PRE_CHECK(l >= 0);
	PRE_CHECK(!setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)));
	PRE_CHECK(!bind(l, (struct sockaddr *)&sin, sizeof(sin)));
	PRE_CHECK(!listen(l, 4));
	*c = socket(AF_INET, SOCK_STREAM, 0);
	PRE_CHECK(*c >= 0);
	PRE_CHECK(!connect(*c, (struct sockaddr *)&sin, sizeof(sin)));
	*s = accept(l, NULL, NULL);
	PRE_CHECK(*s >= 0);
	close(l);
	PRE_CHECK(is_ac_file(*c));
	PRE_CHECK(is_ac_file(*s));
	return 0;
}

/* recv(MSG_PEEK) across two sends, then recv(MSG_WAITALL) of both. */
static int pre_peek_waitall(int c, int s)
{
	struct two_writes w = { .fd = c, .a = "hello ", .b = "world" };
	struct iovec iov[2];
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
	char b[16], d[16];
	pthread_t th;

	PRE_CHECK(!pthread_create(&th, NULL, write_two, &w));
	PRE_CHECK(recv(s, b, 11, MSG_PEEK | MSG_WAITALL) == 11);
	PRE_CHECK(!memcmp(b, "hello world", 11));
	PRE_CHECK(recv(s, b, 5, MSG_PEEK) == 5);
	PRE_CHECK(!memcmp(b, "hello", 5));
	iov[0] = (struct iovec){ b, 4 };
	iov[1] = (struct iovec){ d, 7 };
	PRE_CHECK(recvmsg(s, &m, MSG_WAITALL) == 11);
	PRE_CHECK(!memcmp(b, "hell", 4) && !memcmp(d, "o world", 7));
	pthread_join(th, NULL);
	PRE_CHECK(recv(s, b, 1, MSG_DONTWAIT) == -1 && errno == EAGAIN);
	return 0;
}

/*
 * recv(MSG_DONTWAIT) on a blocking socket while another thread waits in
 * recv(): EAGAIN at once, the socket still blocking, the other thread
 * still waiting.
 */
static int pre_dontwait(int c, int s)
{
	struct reader r = { .fd = s, .got = -1000 };
	pthread_t th;
	double t;
	char b;

	PRE_CHECK(!pthread_create(&th, NULL, read_one, &r));
	usleep(200000);
	t = rs_now();
	PRE_CHECK(recv(s, &b, 1, MSG_DONTWAIT) == -1 && errno == EAGAIN);
	PRE_CHECK(rs_now() - t < 1.0);
	PRE_CHECK(!(fcntl(s, F_GETFL) & O_NONBLOCK));
	PRE_CHECK(__atomic_load_n(&r.got, __ATOMIC_ACQUIRE) == -1000);
	PRE_CHECK(send(c, "d", 1, MSG_DONTWAIT) == 1);
	pthread_join(th, NULL);
	PRE_CHECK(r.got == 1 && r.c == 'd');
	PRE_CHECK(!(fcntl(s, F_GETFL) & O_NONBLOCK));
	return 0;
}

/*
 * send(MSG_NOSIGNAL) once the peer closed: EPIPE, and no SIGPIPE, whose
 * default would end the process, also from a second thread that does not
 * block it.
 */
static void *pause_thread(void *arg)
{
	pause();
	return NULL;
}

static int pre_nosignal(int c, int s)
{
	pthread_t th;
	ssize_t n = 0;
	int i;

	signal(SIGPIPE, SIG_DFL);
	PRE_CHECK(!pthread_create(&th, NULL, pause_thread, NULL));
	close(s);
	for (i = 0; i < 500 && n >= 0; i++) {
		n = send(c, "x", 1, MSG_NOSIGNAL);
		usleep(10000);
	}
	PRE_CHECK(n == -1 && errno == EPIPE);
	return 0;
}

/*
 * shutdown(SHUT_RD) ends a recv() that waits and every later one, while
 * sending goes on; SHUT_RDWR the peer's reads too.
 */
static int pre_shut_rd(int c, int s)
{
	struct reader r = { .fd = s, .got = -1000 };
	pthread_t th;
	char b[4];

	PRE_CHECK(!pthread_create(&th, NULL, read_one, &r));
	usleep(200000);
	PRE_CHECK(!shutdown(s, SHUT_RD));
	pthread_join(th, NULL);
	PRE_CHECK(r.got == 0);
	PRE_CHECK(send(c, "ab", 2, 0) == 2);
	PRE_CHECK(recv(s, b, 2, 0) == 0);
	PRE_CHECK(send(s, "cd", 2, 0) == 2);
	PRE_CHECK(recv(c, b, 2, MSG_WAITALL) == 2 && !memcmp(b, "cd", 2));
	PRE_CHECK(!shutdown(s, SHUT_RDWR));
	PRE_CHECK(recv(c, b, 1, 0) == 0);
	PRE_CHECK(send(s, "e", 1, MSG_NOSIGNAL) == -1 && errno == EPIPE);
	return 0;
}

/* Flags an AC file does not take: a clean error, the stream untouched. */
static int pre_bad_flags(int c, int s)
{
	char b;

	PRE_CHECK(recv(s, &b, 1, MSG_OOB) == -1 && errno == EOPNOTSUPP);
	PRE_CHECK(send(c, "x", 1, MSG_OOB) == -1 && errno == EOPNOTSUPP);
	PRE_CHECK(shutdown(s, 7) == -1 && errno == EINVAL);
	PRE_CHECK(send(c, "y", 1, 0) == 1);
	PRE_CHECK(recv(s, &b, 1, 0) == 1 && b == 'y');
	return 0;
}

/*
 * setsockopt() SO_SNDBUF as Linux's TCP: getsockopt() gives twice the
 * value (here in whole pages); TCP_CORK holds sends back until taken off.
 */
static int pre_sndbuf_cork(int c, int s)
{
	int pg = getpagesize(), v = 100000, got;
	socklen_t len = sizeof(got);
	char b[4];

	PRE_CHECK(!setsockopt(c, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)));
	PRE_CHECK(!getsockopt(c, SOL_SOCKET, SO_SNDBUF, &got, &len));
	PRE_CHECK(got == (2 * v + pg - 1) / pg * pg);
	v = 1;
	PRE_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_CORK, &v, sizeof(v)));
	PRE_CHECK(!getsockopt(c, IPPROTO_TCP, TCP_CORK, &got, &len) && got == 1);
	PRE_CHECK(send(c, "ab", 2, 0) == 2);
	PRE_CHECK(recv(s, b, 1, MSG_DONTWAIT) == -1 && errno == EAGAIN);
	PRE_CHECK(send(c, "cd", 2, 0) == 2);
	v = 0;
	PRE_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_CORK, &v, sizeof(v)));
	PRE_CHECK(!getsockopt(c, IPPROTO_TCP, TCP_CORK, &got, &len) && got == 0);
	PRE_CHECK(recv(s, b, 4, MSG_WAITALL) == 4 && !memcmp(b, "abcd", 4));
	PRE_CHECK(setsockopt(c, SOL_SOCKET, SO_SNDBUF, &v, 2) == -1 && errno == EINVAL);
	return 0;
}

/*
 * SO_SNDBUF and TCP_CORK given before connect() carry over to the AC file
 * that takes the socket's place, and a listener's SO_SNDBUF to the
 * connections it accepts, as TCP's.  (The pair made for the case is not
 * used.)
 */
static int pre_opts_before_connect(int c0, int s0)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(PRE_PORT + 40) };
	int pg = getpagesize(), lv = 30000, cv = 100000, on = 1, l, c, s, got;
	socklen_t len = sizeof(got);
	char b[4];

	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	l = socket(AF_INET, SOCK_STREAM, 0);
	PRE_CHECK(l >= 0);
	PRE_CHECK(!setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)));
	PRE_CHECK(!setsockopt(l, SOL_SOCKET, SO_SNDBUF, &lv, sizeof(lv)));
	PRE_CHECK(!bind(l, (struct sockaddr *)&sin, sizeof(sin)));
	PRE_CHECK(!listen(l, 4));
	c = socket(AF_INET, SOCK_STREAM, 0);
	PRE_CHECK(c >= 0);
	PRE_CHECK(!setsockopt(c, SOL_SOCKET, SO_SNDBUF, &cv, sizeof(cv)));
	PRE_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)));
	PRE_CHECK(!connect(c, (struct sockaddr *)&sin, sizeof(sin)));
	s = accept(l, NULL, NULL);
	PRE_CHECK(s >= 0);
	PRE_CHECK(is_ac_file(c) && is_ac_file(s));
	PRE_CHECK(!getsockopt(c, SOL_SOCKET, SO_SNDBUF, &got, &len));
	PRE_CHECK(got == (2 * cv + pg - 1) / pg * pg);
	PRE_CHECK(!getsockopt(s, SOL_SOCKET, SO_SNDBUF, &got, &len));
	PRE_CHECK(got == (2 * lv + pg - 1) / pg * pg);
	PRE_CHECK(!getsockopt(c, IPPROTO_TCP, TCP_CORK, &got, &len) && got == 1);
	PRE_CHECK(send(c, "ab", 2, 0) == 2);
	PRE_CHECK(recv(s, b, 2, MSG_DONTWAIT) == -1 && errno == EAGAIN);
	on = 0;
	PRE_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)));
	PRE_CHECK(recv(s, b, 2, MSG_WAITALL) == 2 && !memcmp(b, "ab", 2));
	/* A new socket on a recycled number starts with none of it. */
	close(c);
	c = socket(AF_INET, SOCK_STREAM, 0);
	PRE_CHECK(c >= 0);
	PRE_CHECK(!connect(c, (struct sockaddr *)&sin, sizeof(sin)));
	PRE_CHECK(is_ac_file(c));
	PRE_CHECK(!getsockopt(c, IPPROTO_TCP, TCP_CORK, &got, &len) && got == 0);
	return 0;
}

/*
 * SO_RCVTIMEO on an AC file: recv() fails with EAGAIN once it ran out, and
 * getsockopt() reads it back; a bad tv_usec fails with EDOM.  Given to a
 * listener, SO_RCVTIMEO, and to a socket before connect(), SO_SNDTIMEO,
 * carry over to the AC files, as TCP's.
 */
static int pre_timeouts(int c0, int s)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(PRE_PORT + 41) };
	struct timeval tv = { .tv_usec = TIMEO_US }, got;
	socklen_t len = sizeof(got);
	int on = 1, l, c, a;
	double t;
	ssize_t n;
	char b;

	PRE_CHECK(!setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	PRE_CHECK(!getsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &got, &len));
	PRE_CHECK(len == sizeof(got) && !got.tv_sec && got.tv_usec == TIMEO_US);
	t = TIMED(n, recv(s, &b, 1, 0));
	PRE_CHECK(n == -1 && errno == EAGAIN && t >= 0.25);
	tv.tv_usec = 1000000;
	PRE_CHECK(setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1 && errno == EDOM);
	PRE_CHECK(setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, 4) == -1 && errno == EINVAL);

	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	/* Whole seconds: TCP's socket keeps them in jiffies. */
	tv = (struct timeval){ .tv_sec = 2 };
	l = socket(AF_INET, SOCK_STREAM, 0);
	PRE_CHECK(l >= 0);
	PRE_CHECK(!setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)));
	PRE_CHECK(!setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	PRE_CHECK(!bind(l, (struct sockaddr *)&sin, sizeof(sin)));
	PRE_CHECK(!listen(l, 4));
	c = socket(AF_INET, SOCK_STREAM, 0);
	PRE_CHECK(c >= 0);
	PRE_CHECK(!setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)));
	PRE_CHECK(!connect(c, (struct sockaddr *)&sin, sizeof(sin)));
	a = accept(l, NULL, NULL);
	PRE_CHECK(a >= 0);
	PRE_CHECK(is_ac_file(c) && is_ac_file(a));
	PRE_CHECK(!getsockopt(a, SOL_SOCKET, SO_RCVTIMEO, &got, &len));
	PRE_CHECK(got.tv_sec == 2 && !got.tv_usec);
	PRE_CHECK(!getsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &got, &len));
	PRE_CHECK(got.tv_sec == 2 && !got.tv_usec);
	PRE_CHECK(!getsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &got, &len));
	PRE_CHECK(!got.tv_sec && !got.tv_usec);
	return 0;
}


/* The address preloaded cases listen and connect on. */
static struct sockaddr_in pre_addr(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	return sin;
}

/*
 * A listener on @port: the preload's (TCP and rdmashare), or TCP's alone;
 * registered in the epoll set @ep (if not -1) before it listens.
 */
#define PRE_LISTENER	2000	/* its epoll_event.data.u32 */

static int pre_listener(unsigned int port, bool tcp_only, int ep)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = PRE_LISTENER };
	struct sockaddr_in sin = pre_addr(port);
	int l, on = 1;

	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) ||
	    bind(l, (struct sockaddr *)&sin, sizeof(sin)))
		return -1;
	if (ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev))
		return -1;
	/* listen(2) past the preload: a plain TCP server in this process. */
	if (tcp_only ? syscall(SYS_listen, l, 128) : listen(l, 128))
		return -1;
	return l;
}

/* A non-blocking socket's connect(): -1 with EINPROGRESS, as TCP's. */
static int pre_connect_nb(unsigned int port, int *fd)
{
	struct sockaddr_in sin = pre_addr(port);

	*fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (*fd < 0)
		return -1;
	return connect(*fd, (struct sockaddr *)&sin, sizeof(sin));
}

static int so_error(int fd)
{
	socklen_t len = sizeof(int);
	int err = -1;

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return -1;
	return err;
}

/*
 * Non-blocking connect() over rdmashare: 64 from one thread, each an AC
 * file at once (EINPROGRESS), registered in an epoll set before connect()
 * as nginx does (edge triggered); each reports EPOLLOUT and SO_ERROR 0,
 * asked again is EISCONN, and carries its number to the accepted end.  The
 * listener, registered before listen(), reports them.  A blocking socket
 * registered before its connect() reports EPOLLIN on the AC file that took
 * its place.
 */
#define PRE_NB	64

static int pre_nb_connect(unsigned int port)
{
	struct sockaddr_in sin = pre_addr(port);
	struct epoll_event ev, evs[PRE_NB];
	bool seen[PRE_NB] = { 0 };
	int l, ep, c[PRE_NB], s, b, i, n, got = 0;
	uint32_t v;
	double t;

	ep = epoll_create1(0);
	PRE_CHECK(ep >= 0);
	l = pre_listener(port, false, ep);
	PRE_CHECK(l >= 0);
	for (i = 0; i < PRE_NB; i++) {
		c[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		PRE_CHECK(c[i] >= 0);
		ev.events = EPOLLOUT | EPOLLET;
		ev.data.u32 = i;
		PRE_CHECK(!epoll_ctl(ep, EPOLL_CTL_ADD, c[i], &ev));
		PRE_CHECK(connect(c[i], (struct sockaddr *)&sin, sizeof(sin)) == -1 &&
			  errno == EINPROGRESS);
		PRE_CHECK(is_ac_file(c[i]));
	}
	t = rs_now();
	while (got < PRE_NB && rs_now() - t < 15) {
		n = epoll_wait(ep, evs, PRE_NB, 1000);
		PRE_CHECK(n >= 0);
		for (i = 0; i < n; i++) {
			v = evs[i].data.u32;
			if (v == PRE_LISTENER)
				continue;
			PRE_CHECK(v < PRE_NB && (evs[i].events & EPOLLOUT));
			if (seen[v])
				continue;
			PRE_CHECK(so_error(c[v]) == 0);
			seen[v] = true;
			got++;
		}
	}
	PRE_CHECK(got == PRE_NB);
	PRE_CHECK(connect(c[0], (struct sockaddr *)&sin, sizeof(sin)) == -1 && errno == EISCONN);
	/* The listener's registration, made before listen(), sees them. */
	PRE_CHECK(epoll_wait(ep, evs, 1, 1000) == 1 && evs[0].data.u32 == PRE_LISTENER);
	for (i = 0; i < PRE_NB; i++) {
		v = i;
		PRE_CHECK(write(c[i], &v, sizeof(v)) == sizeof(v));
	}
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < PRE_NB; i++) {
		s = accept(l, NULL, NULL);
		PRE_CHECK(s >= 0 && is_ac_file(s));
		PRE_CHECK(recv(s, &v, sizeof(v), MSG_WAITALL) == sizeof(v));
		PRE_CHECK(v < PRE_NB && !seen[v]);
		seen[v] = true;
		close(s);
	}
	for (i = 0; i < PRE_NB; i++)
		close(c[i]);

	/* Blocking, registered first: the AC file takes the registration. */
	b = socket(AF_INET, SOCK_STREAM, 0);
	PRE_CHECK(b >= 0);
	ev.events = EPOLLIN;
	ev.data.u32 = 1000;
	PRE_CHECK(!epoll_ctl(ep, EPOLL_CTL_ADD, b, &ev));
	PRE_CHECK(!connect(b, (struct sockaddr *)&sin, sizeof(sin)));
	PRE_CHECK(is_ac_file(b));
	s = accept(l, NULL, NULL);
	PRE_CHECK(s >= 0);
	close(l);
	PRE_CHECK(epoll_wait(ep, evs, 1, 200) == 0);
	PRE_CHECK(write(s, "z", 1) == 1);
	PRE_CHECK(epoll_wait(ep, evs, 1, 10000) == 1 && evs[0].data.u32 == 1000);
	return 0;
}

/* Until the connecting AC file @fd has its answer (FILE_INFO, past the preload). */
static bool answered(int fd)
{
	struct rdmashare_file_info fi;
	double t = rs_now();

	while (rs_now() - t < 10) {
		if (rdmashare_file_info(fd, &fi, 0) || fi.state != RDMASHARE_AC_STATE_CONNECTING)
			return true;
		usleep(10000);
	}
	return false;
}

/* Accepted from @l: the byte @c sent over TCP. */
static bool tcp_carries(int l, int c, char x)
{
	char b = 0;
	int s;

	if (write(c, &x, 1) != 1)
		return false;
	s = accept(l, NULL, NULL);
	if (s < 0 || is_ac_file(s) || read(s, &b, 1) != 1)
		return false;
	close(s);
	return b == x;
}

/*
 * Non-blocking connect() to a plain TCP server: EINPROGRESS with an AC file
 * in place; rdmashare refuses, and what the program learns of it is TCP's:
 * epoll_wait() (registered before connect()), epoll_pwait2(), poll() and
 * select() report
 * the TCP socket connected (writable, no error) in its place, with the
 * option given before and the epoll registration; a program that does not
 * wait finds it the same by SO_ERROR, a second connect() (as hiredis asks)
 * or write().  No server at all: ECONNREFUSED, as TCP's.
 */
static int pre_nb_fallback(unsigned int port)
{
	struct sockaddr_in sin = pre_addr(port);
	struct pollfd p = { .events = POLLOUT };
	struct epoll_event ev = { .events = EPOLLOUT };
	struct timeval tv = { 10, 0 };
	socklen_t len = sizeof(int);
	int l, ep, c, s, on = 1, v = 0;
	fd_set w, x;
	char b[4];

	l = pre_listener(port, true, -1);
	PRE_CHECK(l >= 0);
	ep = epoll_create1(0);
	PRE_CHECK(ep >= 0);

	/* epoll_wait(), registered before connect(). */
	c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	PRE_CHECK(c >= 0);
	PRE_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)));
	PRE_CHECK(!epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev));
	PRE_CHECK(connect(c, (struct sockaddr *)&sin, sizeof(sin)) == -1 && errno == EINPROGRESS);
	PRE_CHECK(is_ac_file(c));
	PRE_CHECK(epoll_wait(ep, &ev, 1, 10000) == 1);
	PRE_CHECK(ev.events == EPOLLOUT);
	PRE_CHECK(!is_ac_file(c));
	PRE_CHECK(so_error(c) == 0);
	PRE_CHECK(!getsockopt(c, IPPROTO_TCP, TCP_NODELAY, &v, &len) && v == 1);
	s = accept(l, NULL, NULL);
	PRE_CHECK(s >= 0 && !is_ac_file(s));
	PRE_CHECK(write(s, "hi", 2) == 2);
	/* Still registered, now the TCP socket. */
	ev.events = EPOLLIN;
	PRE_CHECK(!epoll_ctl(ep, EPOLL_CTL_MOD, c, &ev));
	PRE_CHECK(epoll_wait(ep, &ev, 1, 10000) == 1 && (ev.events & EPOLLIN));
	PRE_CHECK(read(c, b, sizeof(b)) == 2 && !memcmp(b, "hi", 2));
	close(s);
	close(c);

	/* epoll_pwait2(), registered after connect(). */
	PRE_CHECK(pre_connect_nb(port, &c) == -1 && errno == EINPROGRESS);
	ev.events = EPOLLOUT;
	ev.data.fd = c;
	PRE_CHECK(!epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev));
	PRE_CHECK(epoll_pwait2(ep, &ev, 1, &(struct timespec){ 10, 0 }, NULL) == 1);
	PRE_CHECK(ev.events == EPOLLOUT && ev.data.fd == c);
	PRE_CHECK(tcp_carries(l, c, '2'));
	close(c);

	/* poll(). */
	PRE_CHECK(pre_connect_nb(port, &c) == -1 && errno == EINPROGRESS);
	p.fd = c;
	PRE_CHECK(poll(&p, 1, 10000) == 1 && p.revents == POLLOUT);
	PRE_CHECK(tcp_carries(l, c, 'p'));
	close(c);

	/* select(). */
	PRE_CHECK(pre_connect_nb(port, &c) == -1 && errno == EINPROGRESS);
	FD_ZERO(&w);
	FD_ZERO(&x);
	FD_SET(c, &w);
	FD_SET(c, &x);
	PRE_CHECK(select(c + 1, NULL, &w, &x, &tv) == 1);
	PRE_CHECK(FD_ISSET(c, &w) && !FD_ISSET(c, &x));
	PRE_CHECK(tcp_carries(l, c, 's'));
	close(c);

	/* No wait: SO_ERROR, a second connect(), write(). */
	PRE_CHECK(pre_connect_nb(port, &c) == -1 && errno == EINPROGRESS);
	PRE_CHECK(answered(c));
	PRE_CHECK(so_error(c) == 0);
	PRE_CHECK(tcp_carries(l, c, 'e'));
	close(c);
	PRE_CHECK(pre_connect_nb(port, &c) == -1 && errno == EINPROGRESS);
	PRE_CHECK(answered(c));
	errno = 0;
	v = connect(c, (struct sockaddr *)&sin, sizeof(sin));
	PRE_CHECK(!v || errno == EISCONN);
	PRE_CHECK(tcp_carries(l, c, 'c'));
	close(c);
	PRE_CHECK(pre_connect_nb(port, &c) == -1 && errno == EINPROGRESS);
	PRE_CHECK(answered(c));
	PRE_CHECK(tcp_carries(l, c, 'w'));
	close(c);
	close(l);

	/* Nobody on the port. */
	PRE_CHECK(pre_connect_nb(port, &c) == -1 && errno == EINPROGRESS);
	p.fd = c;
	PRE_CHECK(poll(&p, 1, 10000) == 1 && (p.revents & POLLERR));
	PRE_CHECK(so_error(c) == ECONNREFUSED);
	close(c);
	return 0;
}

/*
 * Two listeners of one process on one port with SO_REUSEPORT (as a server's
 * workers have), both over rdmashare: eight connections, each an AC file,
 * dealt between them.
 */
static int pre_reuseport(unsigned int port)
{
	struct sockaddr_in sin = pre_addr(port);
	int l[2], c[8], s, i, on = 1, got[2] = { 0 };

	for (i = 0; i < 2; i++) {
		l[i] = socket(AF_INET, SOCK_STREAM, 0);
		PRE_CHECK(l[i] >= 0);
		PRE_CHECK(!setsockopt(l[i], SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)));
		PRE_CHECK(!bind(l[i], (struct sockaddr *)&sin, sizeof(sin)));
		PRE_CHECK(!listen(l[i], 8));
		PRE_CHECK(!fcntl(l[i], F_SETFL, O_NONBLOCK));
	}
	for (i = 0; i < 8; i++) {
		c[i] = socket(AF_INET, SOCK_STREAM, 0);
		PRE_CHECK(c[i] >= 0);
		PRE_CHECK(!connect(c[i], (struct sockaddr *)&sin, sizeof(sin)));
		PRE_CHECK(is_ac_file(c[i]));
	}
	for (i = 0; i < 2; i++) {
		while ((s = accept(l[i], NULL, NULL)) >= 0) {
			PRE_CHECK(is_ac_file(s));
			got[i]++;
			close(s);
		}
		PRE_CHECK(errno == EAGAIN);
	}
	PRE_CHECK(got[0] == 4 && got[1] == 4);
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(int c, int s);
	int (*solo)(unsigned int port);	/* its own sockets, on this port */
} pre_cases[] = {
	{ "peek_waitall", .fn = pre_peek_waitall },
	{ "dontwait", .fn = pre_dontwait },
	{ "nosignal", .fn = pre_nosignal },
	{ "shut_rd", .fn = pre_shut_rd },
	{ "bad_flags", .fn = pre_bad_flags },
	{ "sndbuf_cork", .fn = pre_sndbuf_cork },
	{ "opts_before_connect", .fn = pre_opts_before_connect },
	{ "timeouts", .fn = pre_timeouts },
	{ "nb_connect", .solo = pre_nb_connect },
	{ "nb_fallback", .solo = pre_nb_fallback },
	{ "reuseport", .solo = pre_reuseport },
};

__attribute__((constructor)) static void pre_main(void)
{
	const char *name = getenv("RS_PRELOADED");
	unsigned int i;
	int c, s, ret;

	if (!name)
		return;
	/* A call that waits for good fails the case. */
	alarm(20);
	for (i = 0; i < ARRAY_SIZE(pre_cases); i++) {
		if (strcmp(name, pre_cases[i].name))
			continue;
		if (pre_cases[i].solo)
			_exit(pre_cases[i].solo(PRE_PORT + i));
		ret = pre_pair(PRE_PORT + i, &c, &s);
		_exit(ret ? ret : pre_cases[i].fn(c, s));
	}
	_exit(2);
}

/* Run case @name preloaded: its exit status, 100 + a signal that ended it. */
static int run_preloaded(const char *name)
{
	char exe[512], lib[600];
	ssize_t n;
	pid_t pid;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = 0;
	snprintf(lib, sizeof(lib), "%s/../../userlib/build/librdmashare-preload.so",
		 dirname(strdupa(exe)));
	if (access(lib, R_OK))
		return -2;
	pid = fork();
	if (!pid) {
		setenv("LD_PRELOAD", lib, 1);
		setenv("RS_PRELOADED", name, 1);
		execl(exe, exe, (char *)NULL);
		_exit(127);
	}
	return pid < 0 ? -1 : rs_wait_child(pid);
}

/* One test a case: preloaded.<case>.run. */
FIXTURE(preloaded) {
};

FIXTURE_VARIANT(preloaded) {
	const char *name;
};

FIXTURE_VARIANT_ADD(preloaded, peek_waitall) { .name = "peek_waitall" };
FIXTURE_VARIANT_ADD(preloaded, dontwait) { .name = "dontwait" };
FIXTURE_VARIANT_ADD(preloaded, nosignal) { .name = "nosignal" };
FIXTURE_VARIANT_ADD(preloaded, shut_rd) { .name = "shut_rd" };
FIXTURE_VARIANT_ADD(preloaded, bad_flags) { .name = "bad_flags" };
FIXTURE_VARIANT_ADD(preloaded, sndbuf_cork) { .name = "sndbuf_cork" };
FIXTURE_VARIANT_ADD(preloaded, opts_before_connect) { .name = "opts_before_connect" };
FIXTURE_VARIANT_ADD(preloaded, timeouts) { .name = "timeouts" };
FIXTURE_VARIANT_ADD(preloaded, nb_connect) { .name = "nb_connect" };
FIXTURE_VARIANT_ADD(preloaded, nb_fallback) { .name = "nb_fallback" };
FIXTURE_VARIANT_ADD(preloaded, reuseport) { .name = "reuseport" };

FIXTURE_SETUP(preloaded)
{
}

FIXTURE_TEARDOWN(preloaded)
{
}

TEST_F(preloaded, run)
{
	EXPECT_EQ(0, run_preloaded(variant->name));
}

TEST_HARNESS_MAIN

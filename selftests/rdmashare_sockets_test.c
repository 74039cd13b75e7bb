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
 *  - stream_1gib: 1 GiB through a pair of AC files, every byte checked
 *    against the pattern at its offset (64 MiB on a kernel with kmemleak,
 *    the debug kernel, where 1 GiB would take minutes).
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <sys/select.h>
#include <sys/socket.h>
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

TEST_HARNESS_MAIN

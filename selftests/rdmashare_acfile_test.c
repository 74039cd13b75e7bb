// SPDX-License-Identifier: GPL-2.0
/*
 * AC files (RDMASHARE_CONNECT_FILE, RDMASHARE_LISTEN_FILES): an AC as a
 * byte-stream descriptor, both ends in this process (or a child).  A
 * checked stream both ways, poll(2) and nonblocking I/O, the end of the
 * stream and EPIPE/SIGPIPE, data that comes before ACCEPT, slots and send
 * buffers given back when AC files close unread, a descriptor that
 * outlives its handle and crosses fork(2), and the errors of bad
 * parameters, including that the rings cannot reach an AC file's AC; a
 * child forked after accept that reads the accepted AC file and answers.
 * From the second review: SHUTDOWN beside a writer blocked for room, an AC
 * file closed with data unsent by a process that exits (its listener goes,
 * the data lingers linger_ms), and RELEASE of a slot whose id was reused.
 * From issue #33: readv(2) and writev(2) with odd iovecs, sendfile(2) of a
 * file and splice(2) from a pipe into an AC file, FIONREAD and SIOCOUTQ,
 * RWF_NOWAIT, and a readv(2) that faults half way.
 */
#include <arpa/inet.h>
#include <linux/sockios.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/uio.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT		8300
#define FILES_SIZE	(1 << 20)

static struct sockaddr_in peer_addr(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	const char *ip = getenv("RS_IP") ?: "127.0.0.1";

	inet_pton(AF_INET, ip, &sin.sin_addr);
	return sin;
}

/* A handle with a file area of @files bytes (0: none) and @slots slots. */
static struct rdmashare *open_files(size_t files, unsigned int slots)
{
	struct rdmashare_setup p = {
		.flags = files ? RDMASHARE_SETUP_FILES : 0,
		.files_size = files, .data_size = 1 << 20, .rx_slots = slots,
	};

	return rs_open_with(&p);
}

/* A connected pair of AC files: *@cfd the client's, *@sfd the server's. */
static int file_pair(struct __test_metadata *_metadata, struct rdmashare *c,
		     struct rdmashare *s, unsigned int port, unsigned int flags,
		     int *cfd, int *sfd)
{
	struct sockaddr_in sin = peer_addr(port);
	int l;

	l = rdmashare_listen_files(s, port, 8);
	EXPECT_LE(1, l);
	*cfd = rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 0, flags);
	EXPECT_LE(0, *cfd);
	*sfd = rdmashare_accept_file(s, l, 20000, 0, flags);
	EXPECT_LE(0, *sfd);
	return l;
}

/* The byte at stream offset @i of the test pattern. */
static unsigned char pat(size_t i)
{
	return (unsigned char)(i * 131 + (i >> 12) * 7 + 3);
}

struct writer {
	int fd;
	size_t total;
	ssize_t err;
};

/* Writes the pattern in pieces of varying sizes, then closes. */
static void *writer_fn(void *arg)
{
	struct writer *w = arg;
	static const size_t sizes[] = { 1, 7, 64, 1000, 4096, 5000, 65536, 100000 };
	unsigned char *buf = malloc(100000);
	size_t off = 0, n, i, k = 0;
	ssize_t r;

	while (buf && off < w->total) {
		n = sizes[k++ % (sizeof(sizes) / sizeof(sizes[0]))];
		if (n > w->total - off)
			n = w->total - off;
		for (i = 0; i < n; i++)
			buf[i] = pat(off + i);
		for (i = 0; i < n; i += r) {
			r = write(w->fd, buf + i, n - i);
			if (r <= 0) {
				w->err = r < 0 ? -errno : -EIO;
				goto out;
			}
		}
		off += n;
	}
out:
	free(buf);
	close(w->fd);
	return NULL;
}

/* Reads to the end of the stream; the bytes read, checked, or -errno. */
static ssize_t read_checked(int fd, size_t start)
{
	unsigned char buf[70000];
	size_t off = start, i;
	ssize_t r;

	for (;;) {
		r = read(fd, buf, sizeof(buf) - (off % 3) * 1000);
		if (r < 0)
			return -errno;
		if (!r)
			return off - start;
		for (i = 0; i < (size_t)r; i++)
			if (buf[i] != pat(off + i))
				return -EBADMSG;
		off += r;
	}
}

/* @total bytes from @cfd, written by a thread, to @sfd: all, in order. */
static void stream_through(struct __test_metadata *_metadata, int cfd, int sfd, size_t total)
{
	struct writer w = { .fd = cfd, .total = total };
	pthread_t t;

	ASSERT_EQ(0, pthread_create(&t, NULL, writer_fn, &w));
	EXPECT_EQ((ssize_t)total, read_checked(sfd, 0));
	pthread_join(t, NULL);
	EXPECT_EQ(0, w.err);
	close(sfd);
}

/* 4 MiB one way, in writes of 1 byte to 100000: every byte in order. */
TEST(stream_checked)
{
	struct rdmashare *c = open_files(FILES_SIZE, 0), *s = open_files(FILES_SIZE, 64);
	size_t total = 4 << 20;
	int cfd, sfd;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	file_pair(_metadata, c, s, PORT, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	stream_through(_metadata, cfd, sfd, total);
	rdmashare_close(c);
	rdmashare_close(s);
}

/* Both ways at once, nonblocking, driven by poll(2). */
TEST(poll_both_ways)
{
	struct rdmashare *c = open_files(FILES_SIZE, 0), *s = open_files(FILES_SIZE, 64);
	size_t total = 1 << 20, sent[2] = { 0 }, got[2] = { 0 };
	unsigned char buf[20000];
	struct pollfd pfd[2];
	int cfd, sfd, i, n;
	ssize_t r;
	size_t j;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	file_pair(_metadata, c, s, PORT + 1, RDMASHARE_FILE_NONBLOCK, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	EXPECT_TRUE(fcntl(cfd, F_GETFL) & O_NONBLOCK);
	/* Nothing came yet. */
	EXPECT_EQ(-1, read(sfd, buf, 1));
	EXPECT_EQ(EAGAIN, errno);
	pfd[0].fd = cfd;
	pfd[1].fd = sfd;
	pfd[0].events = pfd[1].events = POLLIN | POLLOUT;
	n = poll(pfd, 2, 0);
	EXPECT_EQ(2, n);
	EXPECT_EQ(POLLOUT, pfd[0].revents);
	EXPECT_EQ(POLLOUT, pfd[1].revents);

	while (got[0] < total || got[1] < total) {
		for (i = 0; i < 2; i++)
			pfd[i].events = (sent[i] < total ? POLLOUT : 0) | POLLIN;
		n = poll(pfd, 2, 10000);
		ASSERT_LT(0, n);
		for (i = 0; i < 2; i++) {
			ASSERT_EQ(0, pfd[i].revents & (POLLERR | POLLHUP));
			if ((pfd[i].revents & POLLOUT) && sent[i] < total) {
				size_t len = total - sent[i] < sizeof(buf) ? total - sent[i] : sizeof(buf);

				for (j = 0; j < len; j++)
					buf[j] = pat(sent[i] + j + i);
				r = write(pfd[i].fd, buf, len);
				if (r < 0) {
					ASSERT_EQ(EAGAIN, errno);
				} else {
					sent[i] += r;
				}
			}
			if (pfd[i].revents & POLLIN) {
				/* What the other end wrote. */
				r = read(pfd[i].fd, buf, sizeof(buf));
				ASSERT_LT(0, r);
				for (j = 0; j < (size_t)r; j++)
					ASSERT_EQ(pat(got[i] + j + !i), buf[j]);
				got[i] += r;
			}
		}
	}
	EXPECT_EQ(total, got[0]);
	EXPECT_EQ(total, got[1]);
	close(cfd);
	close(sfd);
	rdmashare_close(c);
	rdmashare_close(s);
}

static volatile sig_atomic_t pipes;

static void on_sigpipe(int sig)
{
	pipes++;
}

/* The peer closes: its data, then the end; writing gets EPIPE and SIGPIPE. */
TEST(end_and_epipe)
{
	struct rdmashare *c = open_files(FILES_SIZE, 0), *s = open_files(FILES_SIZE, 64);
	struct sigaction sa = { .sa_handler = on_sigpipe }, old;
	struct pollfd pfd;
	char buf[64];
	int cfd, sfd, i;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	file_pair(_metadata, c, s, PORT + 2, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(5, write(sfd, "hello", 5));
	close(sfd);
	/* The data first, then the end, as many times as asked. */
	EXPECT_EQ(5, read(cfd, buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, "hello", 5));
	EXPECT_EQ(0, read(cfd, buf, sizeof(buf)));
	EXPECT_EQ(0, read(cfd, buf, sizeof(buf)));
	pfd.fd = cfd;
	pfd.events = POLLIN | POLLOUT | POLLRDHUP;
	EXPECT_EQ(1, poll(&pfd, 1, 1000));
	EXPECT_EQ(POLLIN | POLLRDHUP, pfd.revents & (POLLIN | POLLRDHUP));
	/* The AC closes once the peer's CLOSE came: HUP, and no error. */
	for (i = 0; i < 100 && !(pfd.revents & POLLHUP); i++) {
		usleep(10000);
		poll(&pfd, 1, 0);
	}
	EXPECT_TRUE(pfd.revents & POLLHUP);
	EXPECT_FALSE(pfd.revents & POLLERR);

	ASSERT_EQ(0, sigaction(SIGPIPE, &sa, &old));
	EXPECT_EQ(-1, write(cfd, "x", 1));
	EXPECT_EQ(EPIPE, errno);
	EXPECT_EQ(1, pipes);
	sigaction(SIGPIPE, &old, NULL);
	close(cfd);
	rdmashare_close(c);
	rdmashare_close(s);
}

/* What a client sends before the server accepts waits for the AC file. */
TEST(data_before_accept)
{
	struct rdmashare *c = open_files(FILES_SIZE, 0), *s = open_files(FILES_SIZE, 64);
	struct sockaddr_in sin = peer_addr(PORT + 3);
	struct writer w = { .total = 65536 };
	int l, cfd, sfd;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	l = rdmashare_listen_files(s, PORT + 3, 4);
	ASSERT_LE(1, l);
	cfd = rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 0, 0);
	ASSERT_LE(0, cfd);
	/* What fits the send buffer: the writes return, and the close. */
	w.fd = cfd;
	writer_fn(&w);
	EXPECT_EQ(0, w.err);
	usleep(200000);
	sfd = rdmashare_accept_file(s, l, 20000, 0, 0);
	ASSERT_LE(0, sfd);
	EXPECT_EQ((ssize_t)w.total, read_checked(sfd, 0));
	close(sfd);
	rdmashare_close(c);
	rdmashare_close(s);
}

/*
 * An AC file from @l; while the file area is full, again: a closed AC
 * file's send buffer comes back once its AC is gone, which takes the
 * peer's answer to its CLOSE.
 */
static int accept_retry(struct rdmashare *s, int l)
{
	int fd, i;

	for (i = 0; i < 500; i++) {
		fd = rdmashare_accept_file(s, l, 20000, 0, 0);
		if (fd != -ENOSPC)
			return fd;
		usleep(10000);
	}
	return fd;
}

/*
 * AC files closed with data unread, again and again, on a server with 16
 * slots and a file area for two send buffers: every slot and every send
 * buffer comes back, and a last stream is whole.
 */
TEST(unread_given_back)
{
	struct rdmashare *c = open_files(FILES_SIZE, 0), *s = open_files(2 * 65536, 16);
	size_t total = 1 << 20;
	char buf[4096];
	int cfd, sfd, l, i;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	l = file_pair(_metadata, c, s, PORT + 4, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	close(cfd);
	close(sfd);
	for (i = 0; i < 20; i++) {
		struct sockaddr_in sin = peer_addr(PORT + 4);

		cfd = rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 0, 0);
		ASSERT_LE(0, cfd);
		sfd = accept_retry(s, l);
		ASSERT_LE(0, sfd);
		memset(buf, i, sizeof(buf));
		ASSERT_EQ((ssize_t)sizeof(buf), write(cfd, buf, sizeof(buf)));
		ASSERT_EQ((ssize_t)sizeof(buf), write(cfd, buf, sizeof(buf)));
		/* The first byte came: the rest is on its way, or in. */
		ASSERT_EQ(1, read(sfd, buf, 1));
		close(sfd);
		close(cfd);
	}
	{
		struct sockaddr_in sin = peer_addr(PORT + 4);

		cfd = rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 0, 0);
		ASSERT_LE(0, cfd);
		sfd = accept_retry(s, l);
		ASSERT_LE(0, sfd);
	}
	stream_through(_metadata, cfd, sfd, total);
	rdmashare_close(c);
	rdmashare_close(s);
}

/* The AC file outlives its handle, and works across fork(2). */
TEST(outlives_handle_and_fork)
{
	struct rdmashare *c = open_files(FILES_SIZE, 0), *s = open_files(FILES_SIZE, 64);
	struct writer w = { .total = 300000 };
	int cfd, sfd, status;
	pid_t pid;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	file_pair(_metadata, c, s, PORT + 5, RDMASHARE_FILE_CLOEXEC, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	EXPECT_TRUE(fcntl(cfd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(-1, lseek(cfd, 0, SEEK_SET));
	EXPECT_EQ(ESPIPE, errno);
	/* Both handles go; their AC files keep them. */
	rdmashare_close(c);
	rdmashare_close(s);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(sfd);
		w.fd = cfd;
		writer_fn(&w);
		_exit(w.err ? 1 : 0);
	}
	close(cfd);
	EXPECT_EQ((ssize_t)w.total, read_checked(sfd, 0));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	close(sfd);
}

/*
 * fork(2) after accept: the child reads the accepted AC file to its end,
 * every byte checked, and writes back what it counted; the parent writes
 * on the connecting one, its own copy of the accepted one closed.
 */
TEST(fork_after_accept)
{
	struct rdmashare *c = open_files(FILES_SIZE, 0), *s = open_files(FILES_SIZE, 64);
	struct writer w = { .total = 500000 };
	int cfd, sfd, status;
	ssize_t got = 0;
	pid_t pid;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	file_pair(_metadata, c, s, PORT + 26, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(cfd);
		got = read_checked(sfd, 0);
		_exit(write(sfd, &got, sizeof(got)) == sizeof(got) ? 0 : 1);
	}
	close(sfd);
	/*
	 * Written from a copy, which writer_fn() closes; the end of the
	 * stream is a SHUT_WR, so that the child's answer comes back on cfd.
	 */
	w.fd = dup(cfd);
	ASSERT_LE(0, w.fd);
	writer_fn(&w);
	EXPECT_EQ(0, w.err);
	EXPECT_EQ(0, rdmashare_shutdown_file(cfd));
	EXPECT_EQ(sizeof(got), read(cfd, &got, sizeof(got)));
	EXPECT_EQ((ssize_t)w.total, got);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	close(cfd);
	rdmashare_close(c);
	rdmashare_close(s);
}

/* CONNECT with a struct of @size bytes and @f's file parameters. */
static int raw_connect_at(struct rdmashare *rs, unsigned int port, __u32 flags, __u32 size,
			  struct rdmashare_file_params *f, __u32 *ac)
{
	struct rdmashare_connect cn = { .size = size, .flags = flags, .timeout_ms = 20000 };
	struct sockaddr_in sin = peer_addr(port);
	int ret;

	cn.peer.family = AF_INET;
	cn.peer.port = port;
	memcpy(cn.peer.addr, &sin.sin_addr, 4);
	if (f)
		cn.file = *f;
	ret = ioctl(rdmashare_fd(rs), RDMASHARE_IOC_CONNECT, &cn);
	if (ret)
		return -errno;
	if (f)
		*f = cn.file;
	if (ac)
		*ac = cn.ac;
	return 0;
}

static int raw_connect(struct rdmashare *rs, unsigned int port, __u32 flags,
		       struct rdmashare_file_params *f, __u32 *ac)
{
	return raw_connect_at(rs, port, flags, sizeof(struct rdmashare_connect), f, ac);
}

static int raw_connect_size(struct rdmashare *rs, unsigned int port, __u32 flags, __u32 size)
{
	return raw_connect_at(rs, port, flags, size, NULL, NULL);
}

static int raw_listen(struct rdmashare *rs, unsigned int port, __u32 flags)
{
	struct rdmashare_listen l = { .size = sizeof(l), .flags = flags, .port = port,
				      .backlog = 4 };

	return ioctl(rdmashare_fd(rs), RDMASHARE_IOC_LISTEN, &l) ? -errno : (int)l.ac;
}

/* Each bad parameter gets its errno; nothing is left behind. */
TEST(bad_params)
{
	struct rdmashare *plain = open_files(0, 16), *c = open_files(3 * 65536, 0);
	struct rdmashare *s = open_files(FILES_SIZE, 64);
	struct rdmashare_setup p = { .files_size = 65536 };
	struct rdmashare_file_params f = { 0 };
	struct sockaddr_in sin = peer_addr(PORT + 6);
	struct rdmashare_accept a = { .size = sizeof(a) };
	struct rdmashare *raw;
	int l, pl, fd, fds[3], i;
	size_t map_size;
	void *m;

	ASSERT_NE(NULL, plain);
	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	/* SETUP: a file area needs its flag, and the flag a size. */
	ASSERT_EQ(0, rdmashare_open(&raw, 0));
	EXPECT_EQ(-EINVAL, rdmashare_setup(raw, &p));
	p.flags = RDMASHARE_SETUP_FILES;
	p.files_size = 0;
	EXPECT_EQ(-EINVAL, rdmashare_setup(raw, &p));
	p.files_size = 1ULL << 40;
	EXPECT_EQ(-EINVAL, rdmashare_setup(raw, &p));
	rdmashare_close(raw);

	/* No file area: no AC files.  Unknown LISTEN flags. */
	EXPECT_EQ(-EINVAL, rdmashare_listen_files(plain, PORT + 6, 4));
	EXPECT_EQ(-EINVAL, raw_listen(s, PORT + 6, 1U << 3));
	l = rdmashare_listen_files(s, PORT + 6, 4);
	ASSERT_LE(1, l);
	EXPECT_EQ(-EINVAL, rdmashare_connect_file(plain, (struct sockaddr *)&sin, 20000, 0, 0));
	/* A send buffer larger than the file area, unknown flags, fd, resv. */
	EXPECT_EQ(-EINVAL, rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000,
						  4 * 65536, 0));
	EXPECT_EQ(-EINVAL, rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 0, 1U << 7));
	f.fd = 3;
	EXPECT_EQ(-EINVAL, raw_connect(c, PORT + 6, RDMASHARE_CONNECT_FILE, &f, NULL));
	f.fd = 0;
	f.resv = 1;
	EXPECT_EQ(-EINVAL, raw_connect(c, PORT + 6, RDMASHARE_CONNECT_FILE, &f, NULL));
	/* File parameters without the flag. */
	f.resv = 0;
	f.sndbuf = 4096;
	EXPECT_EQ(-EINVAL, raw_connect(c, PORT + 6, 0, &f, NULL));
	EXPECT_EQ(-EINVAL, raw_connect(c, PORT + 6, 1U << 5, NULL, NULL));
	/* A caller of the struct before AC files cannot ask for one. */
	EXPECT_EQ(-EINVAL, raw_connect_size(c, PORT + 6, RDMASHARE_CONNECT_FILE,
					    offsetof(struct rdmashare_connect, file)));
	/* None of these reached the peer. */
	a.listen_ac = l;
	a.flags = RDMASHARE_ACCEPT_NONBLOCK | RDMASHARE_ACCEPT_FILE;
	EXPECT_EQ(-1, ioctl(rdmashare_fd(s), RDMASHARE_IOC_ACCEPT, &a));
	EXPECT_EQ(EAGAIN, errno);

	/* Three send buffers of 64 KiB fill the file area: the fourth finds none. */
	for (i = 0; i < 3; i++) {
		fds[i] = rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 65536, 0);
		EXPECT_LE(0, fds[i]);
	}
	EXPECT_EQ(-ENOSPC, rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 0, 0));

	/* A listener of AC files gives no plain AC, and a plain one no file. */
	a.flags = RDMASHARE_ACCEPT_NONBLOCK;
	EXPECT_EQ(-1, ioctl(rdmashare_fd(s), RDMASHARE_IOC_ACCEPT, &a));
	EXPECT_EQ(EINVAL, errno);
	pl = rdmashare_listen(s, PORT + 7, 4);
	ASSERT_LE(1, pl);
	EXPECT_EQ(-EINVAL, rdmashare_accept_file(s, pl, 0, 0, 0));
	a.listen_ac = pl;
	a.file.sndbuf = 4096;
	EXPECT_EQ(-1, ioctl(rdmashare_fd(s), RDMASHARE_IOC_ACCEPT, &a));
	EXPECT_EQ(EINVAL, errno);
	for (i = 0; i < 3; i++) {
		fd = rdmashare_accept_file(s, l, 20000, 0, 0);
		EXPECT_LE(0, fd);
		close(fd);
	}
	for (i = 0; i < 3; i++)
		close(fds[i]);

	/* The file area, past the receive slots, is not mapped. */
	rdmashare_data(c, &map_size);
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, rdmashare_fd(c),
		 RDMASHARE_OFF_DATA + map_size);
	EXPECT_EQ(MAP_FAILED, m);
	EXPECT_EQ(EINVAL, errno);
	m = mmap(NULL, map_size + 4096, PROT_READ, MAP_SHARED, rdmashare_fd(c),
		 RDMASHARE_OFF_DATA);
	EXPECT_EQ(MAP_FAILED, m);
	rdmashare_close(plain);
	rdmashare_close(c);
	rdmashare_close(s);
}

/* A request and its answer over a half-closed AC file (SHUT_WR). */
TEST(shutdown_half_close)
{
	struct rdmashare *c = open_files(FILES_SIZE, 0), *s = open_files(FILES_SIZE, 64);
	struct sigaction sa = { .sa_handler = SIG_IGN }, old;
	struct pollfd pfd;
	char buf[64];
	int cfd, sfd;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	file_pair(_metadata, c, s, PORT + 10, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(7, write(cfd, "request", 7));
	EXPECT_EQ(0, rdmashare_shutdown_file(cfd));
	EXPECT_EQ(0, rdmashare_shutdown_file(cfd));
	ASSERT_EQ(0, sigaction(SIGPIPE, &sa, &old));
	EXPECT_EQ(-1, write(cfd, "x", 1));
	EXPECT_EQ(EPIPE, errno);
	sigaction(SIGPIPE, &old, NULL);
	/* The server reads the request to its end, then answers. */
	EXPECT_EQ(7, read(sfd, buf, sizeof(buf)));
	EXPECT_EQ(0, read(sfd, buf, sizeof(buf)));
	pfd.fd = sfd;
	pfd.events = POLLIN | POLLOUT | POLLRDHUP;
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(POLLIN | POLLOUT | POLLRDHUP, pfd.revents);
	ASSERT_EQ(5, write(sfd, "reply", 5));
	close(sfd);
	EXPECT_EQ(5, read(cfd, buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, "reply", 5));
	EXPECT_EQ(0, read(cfd, buf, sizeof(buf)));
	close(cfd);
	rdmashare_close(c);
	rdmashare_close(s);
}

static int file_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

/* The AC file's ioctls: its own AC's statistics and scheduling, and nothing else. */
TEST(file_ioctls)
{
	struct rdmashare *c = open_files(FILES_SIZE, 0), *s = open_files(FILES_SIZE, 64);
	struct rdmashare_ac_set set = { .size = sizeof(set), .flags = RDMASHARE_AC_SET_WEIGHT,
					.weight = 10 };
	struct rdmashare_ac_stats st = { .size = sizeof(st) };
	struct rdmashare_shutdown sh = { .size = sizeof(sh), .flags = 4 };
	struct rdmashare_query q = { .size = sizeof(q) };
	char buf[8];
	int cfd, sfd;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	file_pair(_metadata, c, s, PORT + 11, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(4, write(cfd, "abcd", 4));
	ASSERT_EQ(4, read(sfd, buf, sizeof(buf)));
	EXPECT_EQ(0, file_ioctl(cfd, RDMASHARE_IOC_AC_SET, &set));
	EXPECT_EQ(0, file_ioctl(cfd, RDMASHARE_IOC_AC_STATS, &st));
	EXPECT_EQ(RDMASHARE_AC_STATE_OPEN, st.state);
	EXPECT_LE(1, st.ac);
	EXPECT_EQ(10, st.weight);
	EXPECT_EQ(4, st.tx_bytes);
	EXPECT_EQ(0, st.rx_bytes);
	st.ac = 0;
	EXPECT_EQ(0, file_ioctl(sfd, RDMASHARE_IOC_AC_STATS, &st));
	EXPECT_EQ(4, st.rx_bytes);
	/* Only its own AC, and not the application's weight. */
	st.ac = 1;
	EXPECT_EQ(-EINVAL, file_ioctl(sfd, RDMASHARE_IOC_AC_STATS, &st));
	set.ac = RDMASHARE_AC_FILE;
	EXPECT_EQ(-EINVAL, file_ioctl(cfd, RDMASHARE_IOC_AC_SET, &set));
	set.ac = 0;
	set.weight = 0;
	EXPECT_EQ(-EINVAL, file_ioctl(cfd, RDMASHARE_IOC_AC_SET, &set));
	EXPECT_EQ(-EINVAL, file_ioctl(cfd, RDMASHARE_IOC_SHUTDOWN, &sh));
	EXPECT_EQ(-ENOTTY, file_ioctl(cfd, RDMASHARE_IOC_QUERY, &q));
	EXPECT_EQ(-ENOTTY, file_ioctl(cfd, RDMASHARE_IOC_CONNECT, &q));
	/* The handle has no SHUTDOWN: its ACs shut down through the SQ. */
	sh.flags = 0;
	EXPECT_EQ(-ENOTTY, file_ioctl(rdmashare_fd(c), RDMASHARE_IOC_SHUTDOWN, &sh));
	EXPECT_EQ(-ENOTTY, rdmashare_shutdown_file(rdmashare_fd(c)));
	close(cfd);
	close(sfd);
	rdmashare_close(c);
	rdmashare_close(s);
}

/* A bad buffer gets EFAULT, and nothing is lost or sent for it. */
TEST(efault_loses_nothing)
{
	struct rdmashare *c = open_files(FILES_SIZE, 0), *s = open_files(FILES_SIZE, 64);
	void *bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct pollfd pfd;
	char buf[16];
	int cfd, sfd;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	ASSERT_NE(MAP_FAILED, bad);
	file_pair(_metadata, c, s, PORT + 9, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	EXPECT_EQ(-1, write(cfd, bad, 10));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ(3, write(cfd, "abc", 3));
	pfd.fd = sfd;
	pfd.events = POLLIN;
	ASSERT_EQ(1, poll(&pfd, 1, 10000));
	EXPECT_EQ(-1, read(sfd, bad, sizeof(buf)));
	EXPECT_EQ(EFAULT, errno);
	/* What the failed read could not copy is still there, and only that. */
	EXPECT_EQ(3, read(sfd, buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, "abc", 3));
	close(cfd);
	EXPECT_EQ(0, read(sfd, buf, sizeof(buf)));
	close(sfd);
	munmap(bad, 4096);
	rdmashare_close(c);
	rdmashare_close(s);
}

/* An AC file's AC has an id in its handle, but the rings cannot name it. */
TEST(rings_cannot_name_it)
{
	struct rdmashare *c = open_files(FILES_SIZE, 0), *s = open_files(FILES_SIZE, 64);
	struct rdmashare_file_params f = { 0 };
	struct rdmashare_ac_stats st = { .size = sizeof(st) };
	struct rdmashare_sqe *sqe;
	int l, sfd;
	__u32 ac;
	char b;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	l = rdmashare_listen_files(s, PORT + 8, 4);
	ASSERT_LE(1, l);
	ASSERT_EQ(0, raw_connect(c, PORT + 8, RDMASHARE_CONNECT_FILE, &f, &ac));
	ASSERT_LE(0, f.fd);
	EXPECT_EQ(65536, f.sndbuf);
	EXPECT_LE(1, ac);
	sfd = rdmashare_accept_file(s, l, 20000, 0, 0);
	ASSERT_LE(0, sfd);
	st.ac = ac;
	EXPECT_EQ(-1, ioctl(rdmashare_fd(c), RDMASHARE_IOC_AC_STATS, &st));
	EXPECT_EQ(ENOENT, errno);
	sqe = rdmashare_get_sqe(c);
	ASSERT_NE(NULL, sqe);
	sqe->opcode = RDMASHARE_OP_SEND;
	sqe->ac = ac;
	sqe->len = 1;
	sqe->user_data = 77;
	EXPECT_EQ(1, rdmashare_submit(c));
	EXPECT_EQ(-ENOENT, rs_op_result(c, 77));
	/* Nothing of it came to the AC file either. */
	ASSERT_EQ(1, write(f.fd, "z", 1));
	ASSERT_EQ(1, read(sfd, &b, 1));
	EXPECT_EQ('z', b);
	close(f.fd);
	close(sfd);
	rdmashare_close(c);
	rdmashare_close(s);
}

/*
 * A writer blocked for room does not hold SHUTDOWN up: another process that
 * shares the AC file shuts it down at once, and the writer ends with what
 * it wrote (it used to hold the write lock while it waited, and SHUTDOWN
 * slept uninterruptibly behind it until the writer was killed).
 */
TEST(shutdown_beside_blocked_writer)
{
	struct rdmashare *c = open_files(FILES_SIZE, 0), *s = open_files(FILES_SIZE, 16);
	int cfd, sfd, status, wpipe[2], i;
	pid_t writer, shut;
	ssize_t wrote = 0;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	file_pair(_metadata, c, s, PORT + 12, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(0, pipe(wpipe));
	writer = fork();
	ASSERT_LE(0, writer);
	if (!writer) {
		static char big[8 << 20];
		ssize_t r;

		signal(SIGPIPE, SIG_IGN);
		/* More than the window and the send buffer: it blocks. */
		r = write(cfd, big, sizeof(big));
		_exit(write(wpipe[1], &r, sizeof(r)) == sizeof(r) ? 0 : 1);
	}
	close(wpipe[1]);
	/* Blocked once nothing moves any more; the server never reads. */
	usleep(1500000);
	shut = fork();
	ASSERT_LE(0, shut);
	if (!shut)
		_exit(rdmashare_shutdown_file(cfd) ? 1 : 0);
	for (i = 0; i < 100 && waitpid(shut, &status, WNOHANG) != shut; i++)
		usleep(50000);
	EXPECT_GT(100, i) TH_LOG("SHUTDOWN still waits after 5 s");
	if (i == 100) {
		/* Unblock it the old way, so that the test ends. */
		kill(writer, SIGKILL);
		waitpid(shut, &status, 0);
	}
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	/*
	 * The writer ended too: the shutdown ends its wait, short (copied,
	 * or sent from its pages before) or EPIPE (sent from its pages, none
	 * of which went before: rdmashare_zcopy_test).
	 */
	EXPECT_EQ((ssize_t)sizeof(wrote), read(wpipe[0], &wrote, sizeof(wrote)));
	EXPECT_TRUE(wrote == -1 || (wrote > 0 && wrote < 8 << 20)) TH_LOG("wrote %zd", wrote);
	waitpid(writer, &status, 0);
	close(wpipe[0]);
	close(cfd);
	close(sfd);
	rdmashare_close(c);
	rdmashare_close(s);
}

/*
 * A process writes into an AC file whose peer does not read, closes it with
 * data unsent, and exits.  Its listener goes at once (the port can be
 * listened on again); the data waits linger_ms for credits, then the AC
 * ends: the peer reads what had come, in order, then the end of the
 * stream, and the module holds no AC of the process any more.
 */
TEST(closed_unsent_lingers_then_ends)
{
	struct rdmashare *s = open_files(FILES_SIZE, 16), *again;
	struct sockaddr_in sin = peer_addr(PORT + 13);
	char linger[32];
	int ready[2], l, sfd, acs0, status;
	size_t written = 0;
	ssize_t got;
	pid_t pid;

	ASSERT_NE(NULL, s);
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/linger_ms", linger, sizeof(linger)));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/linger_ms", "3000"));
	l = rdmashare_listen_files(s, PORT + 13, 4);
	ASSERT_LE(1, l);
	acs0 = rs_device_acs();
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct rdmashare *c = open_files(FILES_SIZE, 0);
		unsigned char buf[4096];
		size_t i;
		ssize_t r;
		int fd;

		if (!c || rdmashare_listen(c, PORT + 14, 4) < 1)
			_exit(1);
		fd = rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 0,
					    RDMASHARE_FILE_NONBLOCK);
		if (fd < 0)
			_exit(2);
		/* Until no room came for half a second: the window is full. */
		for (;;) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };

			for (i = 0; i < sizeof(buf); i++)
				buf[i] = pat(written + i);
			r = write(fd, buf, sizeof(buf));
			if (r > 0) {
				written += r;
				continue;
			}
			if (r < 0 && errno != EAGAIN)
				_exit(3);
			if (poll(&pfd, 1, 500) != 1)
				break;
		}
		close(fd);
		/* Exits with its handle open: the kernel closes it. */
		_exit(write(ready[1], &written, sizeof(written)) == sizeof(written) ? 0 : 4);
	}
	close(ready[1]);
	sfd = rdmashare_accept_file(s, l, 20000, 0, 0);
	ASSERT_LE(0, sfd);
	ASSERT_EQ((ssize_t)sizeof(written), read(ready[0], &written, sizeof(written)));
	close(ready[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	TH_LOG("%zu bytes written until the window was full", written);

	/* The dead process's listener is gone, though its AC file lingers. */
	again = open_files(0, 16);
	ASSERT_NE(NULL, again);
	EXPECT_LE(1, rdmashare_listen(again, PORT + 14, 4));
	rdmashare_close(again);

	/* Past linger_ms nothing of it waits; what had come is whole. */
	usleep(4500000);
	got = read_checked(sfd, 0);
	EXPECT_LT(0, got);
	EXPECT_GT((ssize_t)written, got) TH_LOG("the unsent data still went");
	close(sfd);
	usleep(500000);
	EXPECT_EQ(acs0, rs_device_acs()) TH_LOG("ACs left: %d, before %d",
							rs_device_acs(), acs0);
	EXPECT_EQ(0, rs_write_file(RS_SYSFS "/linger_ms", linger));
	rdmashare_close(s);
}

/*
 * The slot of a chunk a discarded backlog AC received is given back with
 * RELEASE even when its id names an AC file's AC by then (that RELEASE used
 * to fail, and the slot was lost to the file).
 */
TEST(release_under_reused_id)
{
	struct rdmashare *c = open_files(0, 16), *s = open_files(FILES_SIZE, 16);
	struct sockaddr_in to_ring = peer_addr(PORT + 15), to_files = peer_addr(PORT + 16);
	struct rdmashare_cqe *cqe;
	struct rdmashare_sqe *sqe;
	__u32 fid = 0, discarded = 0;
	__u64 slot = 0;
	int lf, lr, l3, a, b, i;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	lf = rdmashare_listen_files(s, PORT + 16, 4);
	ASSERT_LE(1, lf);
	lr = rdmashare_listen(s, PORT + 15, 4);
	ASSERT_LT(lf, lr);
	a = rdmashare_connect(c, (struct sockaddr *)&to_ring, 20000);
	ASSERT_LE(1, a);
	ASSERT_EQ(0, rdmashare_send(c, a, "never accepted", 15));
	/* The backlog AC's chunk, under an id the application never had. */
	ASSERT_EQ(0, rdmashare_wait_cqe(s, &cqe, 10000));
	ASSERT_EQ(RDMASHARE_CQE_RECV, cqe->type);
	fid = cqe->ac;
	slot = cqe->addr;
	rdmashare_cqe_seen(s, cqe);
	EXPECT_LT((__u32)lr, fid);
	/* The listener closes: a DISCARD CLOSED frees the id. */
	sqe = rdmashare_get_sqe(s);
	ASSERT_NE(NULL, sqe);
	*sqe = (struct rdmashare_sqe){ .opcode = RDMASHARE_OP_CLOSE, .ac = lr, .user_data = 1 };
	ASSERT_EQ(1, rdmashare_submit(s));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, rdmashare_wait_cqe(s, &cqe, 10000));
		if (cqe->type == RDMASHARE_CQE_CLOSED && (cqe->flags & RDMASHARE_CQE_F_DISCARD))
			discarded = cqe->ac;
		rdmashare_cqe_seen(s, cqe);
	}
	EXPECT_EQ(fid, discarded);
	/* The listener's id goes to a new one, the discarded id to an AC file's AC. */
	l3 = rdmashare_listen(s, PORT + 17, 4);
	EXPECT_EQ(lr, l3);
	b = rdmashare_connect(c, (struct sockaddr *)&to_files, 20000);
	ASSERT_LE(1, b);
	/* The slot goes back, once only. */
	EXPECT_EQ(0, rs_raw_op(s, RDMASHARE_OP_RELEASE, fid, slot, 0, 2));
	EXPECT_EQ(-EINVAL, rs_raw_op(s, RDMASHARE_OP_RELEASE, fid, slot, 0, 3));
	rdmashare_close(c);
	rdmashare_close(s);
}

/* Reads @fd to the end of the stream into @buf; the length, or -errno. */
static ssize_t read_all(int fd, unsigned char *buf, size_t len)
{
	size_t off = 0;
	ssize_t r;

	while (off < len) {
		r = read(fd, buf + off, len - off);
		if (r < 0)
			return -errno;
		if (!r)
			break;
		off += r;
	}
	return off;
}

/* Odd iovec sizes, 0 among them, that cross chunks, messages and the ring. */
static const size_t odd_sizes[] = { 1, 3, 0, 4095, 7, 16385, 65537, 13, 2, 30001, 511, 99999 };
#define N_ODD	(sizeof(odd_sizes) / sizeof(odd_sizes[0]))

/* Up to @max iovecs over @buf's @len bytes, sized from odd_sizes at @k. */
static int odd_iov(struct iovec *iov, int max, unsigned char *buf, size_t len, size_t k)
{
	size_t off = 0, n;
	int i;

	for (i = 0; i < max && off < len; i++, k++) {
		n = odd_sizes[k % N_ODD];
		/* Never all empty: that would read as the end of the stream. */
		if (!n && !off && i == max - 1)
			n = 1;
		if (n > len - off)
			n = len - off;
		iov[i].iov_base = buf + off;
		iov[i].iov_len = n;
		off += n;
	}
	return i;
}

struct vwriter {
	int fd;
	unsigned char *buf;
	size_t total;
	ssize_t err;
};

/* writev(2) of the whole buffer, 1 to 8 odd iovecs at a time, then close. */
static void *vwriter_fn(void *arg)
{
	struct vwriter *w = arg;
	struct iovec iov[8];
	size_t off = 0, k = 0;
	ssize_t r;
	int n;

	while (off < w->total) {
		n = odd_iov(iov, 1 + k % 8, w->buf + off, w->total - off, k);
		k += 5;
		r = writev(w->fd, iov, n);
		if (r <= 0) {
			w->err = r < 0 ? -errno : -EIO;
			break;
		}
		off += r;
	}
	close(w->fd);
	return NULL;
}

/* 2 MiB of writev(2) read with readv(2), both with odd iovecs: every byte. */
TEST(readv_writev_odd_iovecs)
{
	struct rdmashare *c = open_files(FILES_SIZE, 0), *s = open_files(FILES_SIZE, 16);
	size_t total = (2 << 20) + 4321, off = 0, k = 3, i;
	struct vwriter w = { .total = total };
	unsigned char *got = calloc(1, total);
	unsigned long reads = 0;
	struct iovec iov[8];
	int cfd, sfd, n;
	pthread_t t;
	ssize_t r;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	ASSERT_NE(NULL, got);
	w.buf = malloc(total);
	ASSERT_NE(NULL, w.buf);
	for (i = 0; i < total; i++)
		w.buf[i] = pat(i);
	file_pair(_metadata, c, s, PORT + 20, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	w.fd = cfd;
	ASSERT_EQ(0, pthread_create(&t, NULL, vwriter_fn, &w));
	for (;;) {
		/* Room for one byte more than is left: the end is seen. */
		n = odd_iov(iov, 1 + k % 8, got + off, total - off, k);
		if (!n) {
			iov[0].iov_base = &i;
			iov[0].iov_len = 1;
			n = 1;
		}
		k += 7;
		r = readv(sfd, iov, n);
		ASSERT_LE(0, r) TH_LOG("readv: %s", strerror(errno));
		if (!r)
			break;
		ASSERT_GE(total - off, (size_t)r) TH_LOG("more than was written");
		off += r;
		reads++;
	}
	pthread_join(t, NULL);
	EXPECT_EQ(0, w.err);
	EXPECT_EQ(total, off);
	for (i = 0; i < total; i++)
		if (got[i] != w.buf[i])
			break;
	EXPECT_EQ(total, i) TH_LOG("byte %zu differs", i);
	TH_LOG("%lu readv calls", reads);
	close(sfd);
	free(got);
	free(w.buf);
	rdmashare_close(c);
	rdmashare_close(s);
}

#define FNV_OFFSET	0xcbf29ce484222325ULL
#define FNV_PRIME	0x100000001b3ULL

static uint64_t fnv1a(uint64_t h, const unsigned char *p, size_t n)
{
	while (n--) {
		h ^= *p++;
		h *= FNV_PRIME;
	}
	return h;
}

struct hasher {
	int fd;
	uint64_t hash;
	size_t got;
	int err;
};

/* Reads to the end of the stream, hashing. */
static void *hasher_fn(void *arg)
{
	struct hasher *h = arg;
	static unsigned char buf[1 << 16];
	ssize_t r;

	h->hash = FNV_OFFSET;
	while ((r = read(h->fd, buf, sizeof(buf))) > 0) {
		h->hash = fnv1a(h->hash, buf, r);
		h->got += r;
	}
	if (r < 0)
		h->err = -errno;
	return NULL;
}

#define SENDFILE_SIZE	(100 << 20)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * sendfile(2) of a 100 MiB file (a PRNG's bytes, in /tmp) into the client's
 * AC file; the server's reads hash to the file's hash.  Longer than the
 * harness's default 30 s on the debug kernel: a fixture for the timeout.
 */
FIXTURE(big) {
};

FIXTURE_SETUP(big)
{
}

FIXTURE_TEARDOWN(big)
{
}

TEST_F_TIMEOUT(big, sendfile_file, 300)
{
	struct rdmashare *c = open_files(FILES_SIZE, 0), *s = open_files(FILES_SIZE, 64);
	char path[] = "/tmp/rdmashare_sendfile.XXXXXX";
	uint64_t x = 0x9e3779b97f4a7c15ULL, want = FNV_OFFSET;
	struct hasher h = { 0 };
	static uint64_t blk[(1 << 20) / 8];
	size_t left = SENDFILE_SIZE;
	int ffd, cfd, sfd, i;
	double t0, t1;
	off_t pos = 0;
	pthread_t t;
	ssize_t r;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	ffd = mkstemp(path);
	ASSERT_LE(0, ffd);
	unlink(path);
	while (left) {
		for (i = 0; i < (int)(sizeof(blk) / 8); i++) {
			/* xorshift64 */
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			blk[i] = x;
		}
		want = fnv1a(want, (unsigned char *)blk, sizeof(blk));
		ASSERT_EQ((ssize_t)sizeof(blk), write(ffd, blk, sizeof(blk)));
		left -= sizeof(blk);
	}
	file_pair(_metadata, c, s, PORT + 21, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	h.fd = sfd;
	t0 = now_s();
	ASSERT_EQ(0, pthread_create(&t, NULL, hasher_fn, &h));
	while (pos < SENDFILE_SIZE) {
		r = sendfile(cfd, ffd, &pos, SENDFILE_SIZE - pos);
		ASSERT_LT(0, r) TH_LOG("sendfile at %jd: %s", (intmax_t)pos, strerror(errno));
	}
	close(cfd);
	pthread_join(t, NULL);
	t1 = now_s();
	EXPECT_EQ(0, h.err);
	EXPECT_EQ((size_t)SENDFILE_SIZE, h.got);
	EXPECT_EQ(want, h.hash);
	TH_LOG("%d MiB in %.2f s, %.0f MiB/s", SENDFILE_SIZE >> 20, t1 - t0,
	       (SENDFILE_SIZE >> 20) / (t1 - t0));
	close(sfd);
	close(ffd);
	rdmashare_close(c);
	rdmashare_close(s);
}

struct pipe_writer {
	int fd;
	size_t total;
};

/* The pattern into a pipe, in odd pieces, then close. */
static void *pipe_writer_fn(void *arg)
{
	struct pipe_writer *w = arg;
	unsigned char buf[70000];
	size_t off = 0, n, i, k = 0;
	ssize_t r;

	while (off < w->total) {
		n = odd_sizes[k++ % N_ODD] ?: 1;
		if (n > w->total - off)
			n = w->total - off;
		for (i = 0; i < n && i < sizeof(buf); i++)
			buf[i] = pat(off + i);
		r = write(w->fd, buf, i);
		if (r <= 0)
			break;
		off += r;
	}
	close(w->fd);
	return NULL;
}

struct checker {
	int fd;
	ssize_t got;
};

static void *checker_fn(void *arg)
{
	struct checker *ck = arg;

	ck->got = read_checked(ck->fd, 0);
	return NULL;
}

/*
 * splice(2) from a pipe into an AC file: 3 MiB, in order.  Not out of one:
 * there is no splice_read.
 */
TEST(splice_from_pipe)
{
	struct rdmashare *c = open_files(FILES_SIZE, 0), *s = open_files(FILES_SIZE, 64);
	struct pipe_writer w = { .total = (3 << 20) + 17 };
	struct checker ck = { 0 };
	pthread_t tw, tc;
	int cfd, sfd, p[2];
	size_t moved = 0;
	ssize_t r;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	file_pair(_metadata, c, s, PORT + 22, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(0, pipe(p));
	w.fd = p[1];
	ck.fd = sfd;
	ASSERT_EQ(0, pthread_create(&tw, NULL, pipe_writer_fn, &w));
	ASSERT_EQ(0, pthread_create(&tc, NULL, checker_fn, &ck));
	for (;;) {
		r = splice(p[0], NULL, cfd, NULL, 1 << 20, SPLICE_F_MOVE);
		ASSERT_LE(0, r) TH_LOG("splice: %s", strerror(errno));
		if (!r)
			break;
		moved += r;
	}
	close(cfd);
	pthread_join(tw, NULL);
	pthread_join(tc, NULL);
	EXPECT_EQ(w.total, moved);
	EXPECT_EQ((ssize_t)w.total, ck.got);
	close(p[0]);
	ASSERT_EQ(0, pipe(p));
	EXPECT_EQ(-1, splice(sfd, NULL, p[1], NULL, 1, SPLICE_F_NONBLOCK));
	EXPECT_EQ(EINVAL, errno);
	close(p[0]);
	close(p[1]);
	close(sfd);
	rdmashare_close(c);
	rdmashare_close(s);
}

static int inq(int fd)
{
	int n = -1;

	return ioctl(fd, FIONREAD, &n) ? -errno : n;
}

static int outq(int fd)
{
	int n = -1;

	return ioctl(fd, SIOCOUTQ, &n) ? -errno : n;
}

/* Polls @fn(@fd) up to 5 s for @want; the last value. */
static int wait_for(int (*fn)(int), int fd, int want)
{
	int i, v = fn(fd);

	for (i = 0; i < 500 && v != want; i++) {
		usleep(10000);
		v = fn(fd);
	}
	return v;
}

/*
 * FIONREAD is what a read returns, 0 when empty; SIOCOUTQ what was written
 * and not acknowledged: 0 once it all came, the send buffer's worth while
 * the peer's window is full.  SIOCOUTQ counts whole messages, and the last
 * one may have come in part: FIONREAD + SIOCOUTQ is what was written, plus
 * less than a message.
 */
TEST(fionread_siocoutq)
{
	struct rdmashare *c = open_files(FILES_SIZE, 0), *s = open_files(FILES_SIZE, 8);
	struct rdmashare_file_info fi = { .size = sizeof(fi) };
	unsigned char buf[65536];
	size_t written = 0, got = 0, i;
	struct pollfd pfd;
	int cfd, sfd, n, q;
	ssize_t r;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	file_pair(_metadata, c, s, PORT + 23, RDMASHARE_FILE_NONBLOCK, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	EXPECT_EQ(0, inq(sfd));
	EXPECT_EQ(0, inq(cfd));
	EXPECT_EQ(0, outq(cfd));
	EXPECT_EQ(0, outq(sfd));

	/* Two writes, read across their boundary. */
	for (i = 0; i < 5003; i++)
		buf[i] = pat(i);
	ASSERT_EQ(3, write(cfd, buf, 3));
	ASSERT_EQ(5000, write(cfd, buf + 3, 5000));
	EXPECT_EQ(5003, wait_for(inq, sfd, 5003));
	EXPECT_EQ(0, wait_for(outq, cfd, 0));
	EXPECT_EQ(100, read(sfd, buf, 100));
	EXPECT_EQ(4903, inq(sfd));
	EXPECT_EQ(4903, read(sfd, buf, sizeof(buf)));
	for (i = 0; i < 4903; i++)
		ASSERT_EQ(pat(100 + i), buf[i]);
	EXPECT_EQ(0, inq(sfd));
	EXPECT_EQ(-1, read(sfd, buf, 1));
	EXPECT_EQ(EAGAIN, errno);

	/* The server does not read: its window, then the send buffer, fill. */
	pfd.fd = cfd;
	pfd.events = POLLOUT;
	for (;;) {
		for (i = 0; i < sizeof(buf); i++)
			buf[i] = pat(written + i);
		r = write(cfd, buf, sizeof(buf));
		if (r > 0) {
			written += r;
			continue;
		}
		ASSERT_EQ(EAGAIN, errno);
		if (poll(&pfd, 1, 500) != 1)
			break;
	}
	q = outq(cfd);
	n = inq(sfd);
	TH_LOG("%zu written: %d queued, %d readable", written, q, n);
	/* The send buffer's worth: it may have grown while the window had room. */
	ASSERT_EQ(0, ioctl(cfd, RDMASHARE_IOC_FILE_INFO, &fi));
	EXPECT_LE(65536, fi.sndbuf);
	EXPECT_EQ(fi.sndbuf, (__u32)q);
	EXPECT_LT(0, n);
	EXPECT_LE(written, (size_t)n + q);
	EXPECT_GT(written + 65536, (size_t)n + q);
	EXPECT_EQ((__u32)q, fi.tx_bytes);
	ASSERT_EQ(0, ioctl(sfd, RDMASHARE_IOC_FILE_INFO, &fi));
	EXPECT_EQ((__u32)n, fi.rx_bytes);

	/* It all comes once read: then nothing is queued either way. */
	pfd.fd = sfd;
	pfd.events = POLLIN;
	while (got < written) {
		ASSERT_EQ(1, poll(&pfd, 1, 5000));
		r = read(sfd, buf, sizeof(buf));
		ASSERT_LT(0, r);
		for (i = 0; i < (size_t)r; i++)
			ASSERT_EQ(pat(got + i), buf[i]);
		got += r;
	}
	EXPECT_EQ(written, got);
	EXPECT_EQ(0, inq(sfd));
	EXPECT_EQ(0, wait_for(outq, cfd, 0));
	close(cfd);
	close(sfd);
	rdmashare_close(c);
	rdmashare_close(s);
}

/* RWF_NOWAIT on a blocking AC file: EAGAIN instead of a wait. */
TEST(rwf_nowait)
{
	struct rdmashare *c = open_files(FILES_SIZE, 0), *s = open_files(FILES_SIZE, 64);
	char buf[16];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	int cfd, sfd;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	file_pair(_metadata, c, s, PORT + 24, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	EXPECT_EQ(-1, preadv2(sfd, &iov, 1, -1, RWF_NOWAIT));
	EXPECT_EQ(EAGAIN, errno);
	ASSERT_EQ(4, write(cfd, "wxyz", 4));
	EXPECT_EQ(4, wait_for(inq, sfd, 4));
	EXPECT_EQ(4, preadv2(sfd, &iov, 1, -1, RWF_NOWAIT));
	EXPECT_EQ(0, memcmp(buf, "wxyz", 4));
	iov.iov_base = "ab";
	iov.iov_len = 2;
	EXPECT_EQ(2, pwritev2(cfd, &iov, 1, -1, RWF_NOWAIT));
	iov.iov_base = buf;
	iov.iov_len = sizeof(buf);
	EXPECT_EQ(2, readv(sfd, &iov, 1));
	close(cfd);
	close(sfd);
	rdmashare_close(c);
	rdmashare_close(s);
}

/*
 * A readv(2) whose second iovec faults returns the bytes before it; one that
 * faults at once gets EFAULT and takes nothing.  A writev(2) that faults
 * sends what came before the fault, and nothing else.
 */
TEST(readv_efault_loses_nothing)
{
	struct rdmashare *c = open_files(FILES_SIZE, 0), *s = open_files(FILES_SIZE, 64);
	void *bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char src[100], buf[128];
	struct iovec iov[3];
	int cfd, sfd, i;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	ASSERT_NE(MAP_FAILED, bad);
	file_pair(_metadata, c, s, PORT + 25, 0, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	for (i = 0; i < 100; i++)
		src[i] = pat(i);
	ASSERT_EQ(100, write(cfd, src, 100));
	ASSERT_EQ(100, wait_for(inq, sfd, 100));
	/* Faults at once: nothing taken. */
	iov[0] = (struct iovec){ .iov_base = bad, .iov_len = 50 };
	iov[1] = (struct iovec){ .iov_base = buf, .iov_len = 50 };
	EXPECT_EQ(-1, readv(sfd, iov, 2));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(100, inq(sfd));
	/* Faults after 10 bytes: those 10. */
	iov[0] = (struct iovec){ .iov_base = buf, .iov_len = 10 };
	iov[1] = (struct iovec){ .iov_base = bad, .iov_len = 50 };
	iov[2] = (struct iovec){ .iov_base = buf + 10, .iov_len = 40 };
	EXPECT_EQ(10, readv(sfd, iov, 3));
	EXPECT_EQ(0, memcmp(buf, src, 10));
	EXPECT_EQ(90, inq(sfd));
	EXPECT_EQ(90, read(sfd, buf + 10, sizeof(buf) - 10));
	EXPECT_EQ(0, memcmp(buf, src, 100));

	/* writev: 10 good bytes, then a fault; then a marker. */
	iov[0] = (struct iovec){ .iov_base = src, .iov_len = 10 };
	iov[1] = (struct iovec){ .iov_base = bad, .iov_len = 10 };
	EXPECT_EQ(10, writev(cfd, iov, 2));
	iov[0] = (struct iovec){ .iov_base = bad, .iov_len = 10 };
	iov[1] = (struct iovec){ .iov_base = src, .iov_len = 10 };
	EXPECT_EQ(-1, writev(cfd, iov, 2));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ(1, write(cfd, "Z", 1));
	close(cfd);
	memset(buf, 0, sizeof(buf));
	EXPECT_EQ(11, read_all(sfd, buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, src, 10));
	EXPECT_EQ('Z', buf[10]);
	close(sfd);
	munmap(bad, 4096);
	rdmashare_close(c);
	rdmashare_close(s);
}

TEST_HARNESS_MAIN

// SPDX-License-Identifier: GPL-2.0
/*
 * AC files' send buffers (issue #33): a closed AC file's buffer comes back
 * as soon as no SEND can point at it (at the close, once what was written
 * is acknowledged), not when its AC is freed after its CLOSE and the
 * peer's, so that connects and accepts do not fail with ENOSPC under
 * churn.  The buffer grows with a stream up to sndbuf_max, as TCP's;
 * RDMASHARE_IOC_FILE_SET sets its size (SO_SNDBUF), which then stays, also
 * while writes are in flight, and holds writes back (TCP_CORK); every bad
 * argument gets its errno.
 */
#include <arpa/inet.h>
#include <linux/sockios.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT		8600

static struct sockaddr_in addr_of(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	return sin;
}

/* A handle whose file area holds @n send buffers of 64 KiB. */
static struct rdmashare *open_area(unsigned int n)
{
	struct rdmashare_setup p = { .flags = RDMASHARE_SETUP_FILES, .files_size = n << 16,
				     .data_size = 1 << 20 };

	return rs_open_with(&p);
}

/* Up to 5 s for what @fd wrote to be acknowledged: 0, or what is left. */
static int acked(int fd)
{
	int i, n = -1;

	for (i = 0; i < 500; i++) {
		if (ioctl(fd, SIOCOUTQ, &n) || !n)
			break;
		usleep(10000);
	}
	return n;
}

/*
 * Room for two AC files, one of them kept open; eight connect, write,
 * wait for the peer's acknowledgement and close, each followed at once by
 * the next connect, while the server keeps every accepted AC file open:
 * each finds room.
 */
TEST(closed_returns_buffer)
{
	struct sockaddr_in sin = addr_of(PORT);
	struct rdmashare *c = open_area(2);
	int lfd, hold, cfd, sfd[8], i;
	char buf[16];

	ASSERT_NE(NULL, c);
	lfd = rdmashare_listen_fd(PORT, 16, 16, 0);
	ASSERT_LE(0, lfd);
	hold = rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 65536, 0);
	ASSERT_LE(0, hold);
	for (i = 0; i < 8; i++) {
		cfd = rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 65536, 0);
		ASSERT_LE(0, cfd) TH_LOG("connect %d: %s", i, strerror(-cfd));
		ASSERT_EQ(5, write(cfd, "hello", 5));
		ASSERT_EQ(0, acked(cfd));
		close(cfd);
	}
	for (i = 0; i < 9; i++) {
		sfd[i % 8] = rdmashare_accept_fd(lfd, NULL, NULL, 0);
		ASSERT_LE(0, sfd[i % 8]);
		if (!i) {
			close(sfd[0]);
			continue;
		}
		EXPECT_EQ(5, read(sfd[i % 8], buf, sizeof(buf)));
		EXPECT_EQ(0, read(sfd[i % 8], buf, sizeof(buf)));
		close(sfd[i % 8]);
	}
	close(hold);
	close(lfd);
	rdmashare_close(c);
}

/*
 * The same on the server's side: a listening file with room for one AC
 * file accepts eight, each written to, acknowledged and closed by the
 * server, and the next accepted at once, while every client keeps its end
 * open.
 */
TEST(closed_accepted_returns_buffer)
{
	struct sockaddr_in sin = addr_of(PORT + 1);
	struct rdmashare *c = open_area(16);
	int lfd, cfd[8], sfd, i;
	char buf[16];

	ASSERT_NE(NULL, c);
	lfd = rdmashare_listen_fd(PORT + 1, 8, 1, 0);
	ASSERT_LE(0, lfd);
	for (i = 0; i < 8; i++) {
		cfd[i] = rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 65536, 0);
		ASSERT_LE(0, cfd[i]);
	}
	for (i = 0; i < 8; i++) {
		sfd = rdmashare_accept_fd(lfd, NULL, NULL, 0);
		ASSERT_LE(0, sfd) TH_LOG("accept %d: %s", i, strerror(-sfd));
		ASSERT_EQ(5, write(sfd, "hello", 5));
		ASSERT_EQ(0, acked(sfd));
		close(sfd);
	}
	for (i = 0; i < 8; i++) {
		EXPECT_EQ(5, read(cfd[i], buf, sizeof(buf)));
		EXPECT_EQ(0, read(cfd[i], buf, sizeof(buf)));
		close(cfd[i]);
	}
	close(lfd);
	rdmashare_close(c);
}

/* A connected pair; the client's handle (with @area bytes of file area) is returned. */
static struct rdmashare *pair(struct __test_metadata *_metadata, unsigned int port,
			      size_t area, int *cfd, int *sfd)
{
	struct rdmashare_setup p = { .flags = RDMASHARE_SETUP_FILES, .files_size = area,
				     .data_size = 1 << 20 };
	struct sockaddr_in sin = addr_of(port);
	struct rdmashare *c = rs_open_with(&p);
	int lfd;

	*cfd = *sfd = -1;
	EXPECT_NE(NULL, c);
	lfd = rdmashare_listen_fd(port, 4, 0, 0);
	EXPECT_LE(0, lfd);
	if (!c || lfd < 0)
		return c;
	*cfd = rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 65536, 0);
	EXPECT_LE(0, *cfd);
	*sfd = rdmashare_accept_fd(lfd, NULL, NULL, 0);
	EXPECT_LE(0, *sfd);
	close(lfd);
	return c;
}

static int file_set(int fd, __u32 flags, __u32 *sndbuf, __u32 cork)
{
	struct rdmashare_file_set fs = { .size = sizeof(fs), .flags = flags,
					 .sndbuf = sndbuf ? *sndbuf : 0, .cork = cork };

	if (ioctl(fd, RDMASHARE_IOC_FILE_SET, &fs))
		return -errno;
	if (sndbuf)
		*sndbuf = fs.sndbuf;
	return 0;
}

static struct rdmashare_file_info info(int fd)
{
	struct rdmashare_file_info fi = { .size = sizeof(fi) };

	if (ioctl(fd, RDMASHARE_IOC_FILE_INFO, &fi))
		fi.sndbuf = 0;
	return fi;
}

static unsigned char pat(size_t i)
{
	return (unsigned char)(i * 167 + (i >> 13) * 3 + 11);
}

struct stream {
	int fd;
	size_t total;
	size_t piece;
	ssize_t got;
	volatile int done;
};

/* Writes @total pattern bytes in pieces of @piece. */
static void *writer_fn(void *arg)
{
	struct stream *w = arg;
	unsigned char *buf = malloc(w->piece);
	size_t off = 0, n, i;
	ssize_t r;

	while (buf && off < w->total) {
		n = w->total - off < w->piece ? w->total - off : w->piece;
		for (i = 0; i < n; i++)
			buf[i] = pat(off + i);
		r = write(w->fd, buf, n);
		if (r <= 0)
			break;
		off += r;
	}
	w->got = off;
	w->done = 1;
	free(buf);
	return NULL;
}

/* Reads @total bytes, checked: how many came right, or -1 at a wrong one. */
static void *reader_fn(void *arg)
{
	struct stream *r = arg;
	unsigned char *buf = malloc(1 << 20);
	size_t off = 0, i;
	ssize_t n;

	while (buf && off < r->total) {
		n = read(r->fd, buf, 1 << 20);
		if (n <= 0)
			break;
		for (i = 0; i < (size_t)n; i++)
			if (buf[i] != pat(off + i)) {
				r->got = -1;
				goto out;
			}
		off += n;
	}
	r->got = off;
out:
	r->done = 1;
	free(buf);
	return NULL;
}

/* @total bytes from @cfd to @sfd, checked, while @during(@cfd) runs. */
static void stream_through(struct __test_metadata *_metadata, int cfd, int sfd, size_t total,
			   size_t piece, void (*during)(int, struct stream *))
{
	struct stream w = { .fd = cfd, .total = total, .piece = piece };
	struct stream r = { .fd = sfd, .total = total };
	pthread_t tw, tr;

	ASSERT_EQ(0, pthread_create(&tr, NULL, reader_fn, &r));
	ASSERT_EQ(0, pthread_create(&tw, NULL, writer_fn, &w));
	if (during)
		during(cfd, &w);
	pthread_join(tw, NULL);
	pthread_join(tr, NULL);
	EXPECT_EQ((ssize_t)total, w.got);
	EXPECT_EQ((ssize_t)total, r.got);
}

/*
 * sndbuf_max, put back whatever happens to a test; zcopy_min 0: these
 * writes go through the send buffer (rdmashare_zcopy_test has the others).
 */
FIXTURE(tun)
{
	char max[32];
	char zcopy_min[32];
};

FIXTURE_SETUP(tun)
{
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/sndbuf_max", self->max, sizeof(self->max)));
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/zcopy_min", self->zcopy_min,
				  sizeof(self->zcopy_min)));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/zcopy_min", "0"));
}

FIXTURE_TEARDOWN(tun)
{
	rs_write_file(RS_SYSFS "/sndbuf_max", self->max);
	rs_write_file(RS_SYSFS "/zcopy_min", self->zcopy_min);
}

/*
 * A stream that fills its 64 KiB buffer while the peer reads grows it, in
 * doublings, up to sndbuf_max and no further; at sndbuf_max 64 KiB it
 * stays.  Every byte comes, in order.
 */
TEST_F_TIMEOUT(tun, grows_with_stream, 240)
{
	struct rdmashare *c;
	int cfd, sfd;
	__u32 got;

	EXPECT_STREQ("4194304", self->max);
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/sndbuf_max", "65536"));
	c = pair(_metadata, PORT + 2, 8 << 20, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	EXPECT_EQ(65536, info(cfd).sndbuf);
	stream_through(_metadata, cfd, sfd, 8 << 20, 256 << 10, NULL);
	EXPECT_EQ(65536, info(cfd).sndbuf);

	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/sndbuf_max", "524288"));
	stream_through(_metadata, cfd, sfd, 16 << 20, 256 << 10, NULL);
	got = info(cfd).sndbuf;
	EXPECT_LT(65536, got);
	EXPECT_GE(524288, got);
	EXPECT_EQ(0, got & (got - 1)) TH_LOG("%u: not a doubling of 64 KiB", got);
	printf("# grew to %u\n", got);
	/* The server's side, which only read, did not grow. */
	EXPECT_EQ(65536, info(sfd).sndbuf);
	close(cfd);
	close(sfd);
	rdmashare_close(c);
}

/* Sizes changed back and forth while a writer streams. */
static void resize_during(int fd, struct stream *w)
{
	static const __u32 sizes[] = { 16384, 200000, 4096, 1 << 20, 65536 };
	unsigned int i = 0;
	__u32 want;
	int ret;

	while (!w->done) {
		want = sizes[i++ % 5];
		ret = file_set(fd, RDMASHARE_FILE_SET_SNDBUF, &want, 0);
		if (ret && ret != -EBUSY) {
			printf("# FILE_SET: %d\n", ret);
			w->got = -2;
		}
		usleep(2000);
	}
}

/*
 * SO_SNDBUF: rounded up to pages, at most sndbuf_max, the old size when
 * the file area has no room; it stays through a stream; and changes while
 * writes are in flight lose and reorder nothing.
 */
TEST_F_TIMEOUT(tun, so_sndbuf, 240)
{
	struct rdmashare *c;
	int cfd, sfd;
	__u32 v;

	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/sndbuf_max", "1048576"));
	c = pair(_metadata, PORT + 3, 4 << 20, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	v = 20000;
	EXPECT_EQ(0, file_set(cfd, RDMASHARE_FILE_SET_SNDBUF, &v, 0));
	EXPECT_EQ(20480, v);
	EXPECT_EQ(20480, info(cfd).sndbuf);
	stream_through(_metadata, cfd, sfd, 4 << 20, 256 << 10, NULL);
	EXPECT_EQ(20480, info(cfd).sndbuf);
	/* The writes of the old size went out: no change is under way. */
	EXPECT_EQ(0, acked(cfd));
	v = 1 << 30;
	EXPECT_EQ(0, file_set(cfd, RDMASHARE_FILE_SET_SNDBUF, &v, 0));
	EXPECT_EQ(1 << 20, v);
	v = 1;
	EXPECT_EQ(0, file_set(cfd, RDMASHARE_FILE_SET_SNDBUF, &v, 0));
	EXPECT_EQ(4096, v);

	stream_through(_metadata, cfd, sfd, 16 << 20, 100000, resize_during);

	close(cfd);
	close(sfd);
	rdmashare_close(c);
}

/*
 * A buffer made smaller while nothing is in flight gives its tail back at
 * once, even from a full area: 128 KiB holding two 64 KiB buffers, one
 * shrunk to 4 KiB, has room for a third of 60 KiB.
 */
TEST(shrunk_buffer_returns)
{
	struct sockaddr_in sin = addr_of(PORT + 14);
	int cfd, sfd, full, more, lfd;
	struct rdmashare *c;
	__u32 v = 4096;

	c = pair(_metadata, PORT + 4, 128 << 10, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	lfd = rdmashare_listen_fd(PORT + 14, 8, 8, 0);
	ASSERT_LE(0, lfd);
	full = rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 65536, 0);
	ASSERT_LE(0, full);
	EXPECT_EQ(-ENOSPC, rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 4096, 0));
	ASSERT_EQ(5, write(cfd, "hello", 5));
	ASSERT_EQ(0, acked(cfd));
	/* Larger: no room, the old size, no error (as setsockopt(2)). */
	v = 128 << 10;
	EXPECT_EQ(0, file_set(cfd, RDMASHARE_FILE_SET_SNDBUF, &v, 0));
	EXPECT_EQ(65536, v);
	v = 4096;
	EXPECT_EQ(0, file_set(cfd, RDMASHARE_FILE_SET_SNDBUF, &v, 0));
	EXPECT_EQ(4096, v);
	more = rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 61440, 0);
	EXPECT_LE(0, more);
	/* The stream goes on in what is left. */
	ASSERT_EQ(5, write(cfd, "again", 5));
	close(more);
	close(full);
	close(lfd);
	close(cfd);
	close(sfd);
	rdmashare_close(c);
}

static __u64 tx_msgs(int fd)
{
	struct rdmashare_ac_stats st = { .size = sizeof(st) };

	return ioctl(fd, RDMASHARE_IOC_AC_STATS, &st) ? ~0ULL : st.tx_msgs;
}

/* TCP_CORK: writes are held back until it is taken off, as one message. */
TEST(cork)
{
	struct rdmashare *c;
	int cfd, sfd, i, n;
	char buf[1024];
	__u64 m0;

	c = pair(_metadata, PORT + 5, 1 << 20, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	EXPECT_EQ(0, info(cfd).cork);
	EXPECT_EQ(0, file_set(cfd, RDMASHARE_FILE_SET_CORK, NULL, 1));
	EXPECT_EQ(1, info(cfd).cork);
	m0 = tx_msgs(cfd);
	for (i = 0; i < 10; i++)
		ASSERT_EQ(100, write(cfd, buf, 100));
	EXPECT_EQ(m0, tx_msgs(cfd));
	EXPECT_EQ(0, file_set(cfd, RDMASHARE_FILE_SET_CORK, NULL, 0));
	EXPECT_EQ(0, info(cfd).cork);
	EXPECT_EQ(0, acked(cfd));
	EXPECT_EQ(m0 + 1, tx_msgs(cfd));
	for (i = 0; i < 1000; i += n) {
		n = read(sfd, buf, sizeof(buf));
		ASSERT_LT(0, n);
	}
	EXPECT_EQ(1000, i);
	close(cfd);
	close(sfd);
	rdmashare_close(c);
}

/* Every bad argument, with its errno. */
TEST(bad_args)
{
	struct rdmashare_file_set fs = { .size = sizeof(fs), .flags = RDMASHARE_FILE_SET_CORK };
	struct rdmashare *c;
	int cfd, sfd, lfd;
	__u32 v = 0;

	c = pair(_metadata, PORT + 6, 1 << 20, &cfd, &sfd);
	ASSERT_LE(0, cfd);
	ASSERT_LE(0, sfd);
	EXPECT_EQ(-EINVAL, file_set(cfd, 0, NULL, 0));
	/* The flags after RDMASHARE_FILE_SET_SNDTIMEO are unknown. */
	EXPECT_EQ(-EINVAL, file_set(cfd, 1U << 4, NULL, 0));
	EXPECT_EQ(-EINVAL, file_set(cfd, RDMASHARE_FILE_SET_CORK, NULL, 2));
	EXPECT_EQ(-EINVAL, file_set(cfd, RDMASHARE_FILE_SET_SNDBUF, &v, 0));
	fs.resv = 1;
	EXPECT_EQ(-1, ioctl(cfd, RDMASHARE_IOC_FILE_SET, &fs));
	EXPECT_EQ(EINVAL, errno);
	fs.resv = 0;
	fs.size = offsetof(struct rdmashare_file_set, resv);
	EXPECT_EQ(-1, ioctl(cfd, RDMASHARE_IOC_FILE_SET, &fs));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(65536, info(cfd).sndbuf);
	EXPECT_EQ(0, info(cfd).cork);
	EXPECT_EQ(-ENOTTY, file_set(rdmashare_fd(c), RDMASHARE_FILE_SET_CORK, NULL, 1));
	lfd = rdmashare_listen_fd(PORT + 7, 1, 0, 0);
	ASSERT_LE(0, lfd);
	EXPECT_EQ(-ENOTTY, file_set(lfd, RDMASHARE_FILE_SET_CORK, NULL, 1));
	close(lfd);
	/* The tunable: pages to the data area's limit. */
	EXPECT_EQ(-EINVAL, rs_write_file(RS_SYSFS "/sndbuf_max", "4095"));
	EXPECT_EQ(-EINVAL, rs_write_file(RS_SYSFS "/sndbuf_max", "268435457"));
	close(cfd);
	close(sfd);
	rdmashare_close(c);
}

TEST_HARNESS_MAIN

// SPDX-License-Identifier: GPL-2.0
/*
 * Zero copy from the writer's own pages and into the reader's (issue #33):
 * an AC file write of
 * at least zcopy_min bytes of user memory is sent from the writer's pages,
 * pinned and charged to its pinned_vm (VmPin) for as long as the write
 * takes, and returns once its SENDs completed, so that the buffer may be
 * reused at once.  The counters show it: tx_zcopy grows by the bytes,
 * write_copied (the copy into the send buffer) and tx_copied do not.
 * Below the threshold, non-blocking, past RLIMIT_MEMLOCK (for a user
 * without CAP_IPC_LOCK) or from pages that cannot be pinned, a write is
 * copied, and every byte still comes, in order.  The pins go back when the
 * peer closes in the middle of a write.  A signal ends the write's wait,
 * what was not sent yet then copied.  A blocking read of at least
 * zcopy_min bytes that waits for data offers its own pages to the peer
 * (protocol version 6): a large write into it is copied by neither
 * kernel (rx_zcopy counts the bytes), the pages pinned while the read
 * waits and unpinned once it returned, a signal or the peer's end
 * ending the wait with exactly the bytes that came, a kill leaving the
 * stream whole.  Nothing of it stays charged: in a memory cgroup of its
 * own, many such transfers leave memory.current where one left it, and
 * closing the pair gives back what the pair took.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT	8700
#define MIB	(1 << 20)

static unsigned char pat(size_t i, unsigned int seed)
{
	return (unsigned char)(i * 131 + (i >> 12) * 7 + seed);
}

static void fill(unsigned char *buf, size_t len, size_t from, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pat(from + i, seed);
}

/* This process's pinned memory, kB (VmPin); -1 if unknown. */
static long vm_pin(void)
{
	char line[256];
	long kb = -1;
	FILE *f;

	f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Up to 5 s for VmPin to come back to @kb: what it is then. */
static long vm_pin_back(long kb)
{
	long now = vm_pin();
	int i;

	for (i = 0; i < 500 && now != kb; i++) {
		usleep(10000);
		now = vm_pin();
	}
	return now;
}

struct counts {
	long zcopy, write_copied, tx_copied, read_copied, rx_copied, rx_zcopy;
};

static struct counts counts(void)
{
	return (struct counts) {
		.zcopy = rs_devices_sum("stats/tx_zcopy"),
		.write_copied = rs_devices_sum("stats/write_copied"),
		.tx_copied = rs_devices_sum("stats/tx_copied"),
		.read_copied = rs_devices_sum("stats/read_copied"),
		.rx_copied = rs_devices_sum("stats/rx_copied"),
		.rx_zcopy = rs_devices_sum("stats/rx_zcopy"),
	};
}

static struct counts since(struct counts a)
{
	struct counts b = counts();

	return (struct counts) {
		.zcopy = b.zcopy - a.zcopy, .write_copied = b.write_copied - a.write_copied,
		.tx_copied = b.tx_copied - a.tx_copied, .read_copied = b.read_copied - a.read_copied,
		.rx_copied = b.rx_copied - a.rx_copied, .rx_zcopy = b.rx_zcopy - a.rx_zcopy,
	};
}

/*
 * The reader of a test: @total bytes of pat(@seed), after @delay_ms, in
 * reads of @rlen bytes (1 MiB if 0).
 */
struct reader {
	int fd;
	size_t total;
	unsigned int seed;
	unsigned int delay_ms;
	size_t close_after;
	size_t rlen;
	ssize_t got;		/* bytes that came right, -1 at a wrong one */
	pthread_t thread;
};

static void *reader_fn(void *arg)
{
	struct reader *r = arg;
	size_t off = 0, i, rlen = r->rlen ?: MIB;
	unsigned char *buf = malloc(rlen);
	ssize_t n;

	usleep(r->delay_ms * 1000);
	while (buf && off < r->total) {
		n = read(r->fd, buf, rlen);
		if (n <= 0)
			break;
		for (i = 0; i < (size_t)n; i++)
			if (buf[i] != pat(off + i, r->seed)) {
				r->got = -1;
				goto out;
			}
		off += n;
		if (r->close_after && off >= r->close_after) {
			close(r->fd);
			break;
		}
	}
	r->got = off;
out:
	free(buf);
	return NULL;
}

static int reader_start(struct reader *r)
{
	return pthread_create(&r->thread, NULL, reader_fn, r);
}

static ssize_t reader_end(struct reader *r)
{
	pthread_join(r->thread, NULL);
	return r->got;
}

static struct sockaddr_in addr_of(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	return sin;
}

/*
 * An AC file pair on @port; the client's handle is returned.  The
 * listening file stays open in *@lfd, and with it the server's areas,
 * which count in VmPin as the client's do.
 */
static struct rdmashare *pair(struct __test_metadata *_metadata, unsigned int port,
			      int *cfd, int *sfd, int *lfd)
{
	struct rdmashare_setup p = { .flags = RDMASHARE_SETUP_FILES, .files_size = 8 << 20,
				     .data_size = 1 << 20 };
	struct sockaddr_in sin = addr_of(port);
	struct rdmashare *c = rs_open_with(&p);

	*cfd = *sfd = -1;
	EXPECT_NE(NULL, c);
	*lfd = rdmashare_listen_fd(port, 4, 0, 0);
	EXPECT_LE(0, *lfd);
	if (!c || *lfd < 0)
		return c;
	*cfd = rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 65536, 0);
	EXPECT_LE(0, *cfd);
	*sfd = rdmashare_accept_fd(*lfd, NULL, NULL, 0);
	EXPECT_LE(0, *sfd);
	return c;
}

/* zcopy_min at 256 KiB for the test, put back whatever happens to it. */
FIXTURE(zc)
{
	char min[32];
	struct rdmashare *c;
	int cfd, sfd, lfd;
};

FIXTURE_SETUP(zc)
{
	self->c = NULL;
	self->cfd = self->sfd = self->lfd = -1;
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/zcopy_min", self->min, sizeof(self->min)));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/zcopy_min", "262144"));
}

FIXTURE_TEARDOWN(zc)
{
	rs_write_file(RS_SYSFS "/zcopy_min", self->min);
	if (self->cfd >= 0)
		close(self->cfd);
	if (self->sfd >= 0)
		close(self->sfd);
	if (self->lfd >= 0)
		close(self->lfd);
	if (self->c)
		rdmashare_close(self->c);
}

#define PAIR(port)	do {							\
	self->c = pair(_metadata, (port), &self->cfd, &self->sfd, &self->lfd);	\
	ASSERT_LE(0, self->cfd);						\
	ASSERT_LE(0, self->sfd);						\
} while (0)

/*
 * One 4 MiB write while the peer reads: every byte goes from the writer's
 * pages (tx_zcopy), none is copied by the sending kernel (write_copied,
 * tx_copied); the reader's read(2) copies them out of its slots
 * (read_copied), or has them written into its own pages (rx_zcopy).
 * VmPin is where it was once the write returned.
 */
TEST_F_TIMEOUT(zc, sends_from_own_pages, 120)
{
	struct reader r = { .total = 4 * MIB, .seed = 1 };
	unsigned char *buf = malloc(4 * MIB);
	struct counts d, c0;
	long pin0;

	PAIR(PORT);
	/* The pair's data and file areas count in VmPin too. */
	pin0 = vm_pin();
	r.fd = self->sfd;
	ASSERT_NE(NULL, buf);
	ASSERT_LE(0, pin0);
	fill(buf, 4 * MIB, 0, 1);
	c0 = counts();
	ASSERT_EQ(0, reader_start(&r));
	EXPECT_EQ(4 * MIB, write(self->cfd, buf, 4 * MIB));
	EXPECT_EQ(4 * MIB, reader_end(&r));
	d = since(c0);
	TH_LOG("zcopy %ld, write_copied %ld, tx_copied %ld, read_copied %ld, rx_zcopy %ld",
	       d.zcopy, d.write_copied, d.tx_copied, d.read_copied, d.rx_zcopy);
	EXPECT_EQ(4 * MIB, d.zcopy);
	EXPECT_EQ(0, d.write_copied);
	EXPECT_EQ(0, d.tx_copied);
	EXPECT_EQ(4 * MIB, d.read_copied + d.rx_zcopy);
	EXPECT_EQ(pin0, vm_pin_back(pin0));
	free(buf);
}

struct writer {
	int fd;
	const void *buf;
	size_t len;
	ssize_t ret;
	int err;
	pthread_t thread;
};

static void *writer_fn(void *arg)
{
	struct writer *w = arg;

	w->ret = write(w->fd, w->buf, w->len);
	w->err = errno;
	return NULL;
}

/*
 * The write returns only once its SENDs completed: the reader starts
 * 400 ms late, so the write waits, with what the receiver's slots cannot
 * take pinned (VmPin up by 2 MiB at least of the 8); once it returned,
 * the buffer is overwritten at once, and the reader still gets what was
 * written.
 */
TEST_F_TIMEOUT(zc, returns_when_sent, 120)
{
	struct reader r = { .total = 8 * MIB, .seed = 2, .delay_ms = 400 };
	unsigned char *buf = malloc(8 * MIB);
	struct writer w = { .buf = buf, .len = 8 * MIB };
	long pin0, pin_mid;

	PAIR(PORT + 1);
	pin0 = vm_pin();
	r.fd = self->sfd;
	w.fd = self->cfd;
	ASSERT_NE(NULL, buf);
	fill(buf, 8 * MIB, 0, 2);
	ASSERT_EQ(0, reader_start(&r));
	ASSERT_EQ(0, pthread_create(&w.thread, NULL, writer_fn, &w));
	usleep(200000);
	pin_mid = vm_pin();
	pthread_join(w.thread, NULL);
	memset(buf, 0xee, 8 * MIB);
	EXPECT_EQ(8 * MIB, w.ret);
	EXPECT_EQ(8 * MIB, reader_end(&r));
	TH_LOG("VmPin %ld kB, %ld kB during the write", pin0, pin_mid);
	EXPECT_LE(pin0 + 2048, pin_mid);
	EXPECT_EQ(pin0, vm_pin_back(pin0));
	free(buf);
}

static void on_usr1(int sig)
{
	(void)sig;
}

/*
 * A signal ends a write that waits for its pages to be sent, as it ends
 * a TCP writer's wait: what was not sent yet is copied (write_copied), the
 * write returns every byte at once, long before the reader (1.5 s late)
 * takes any, with nothing pinned any more; the buffer is overwritten at
 * once, and the reader still gets what was written.
 */
TEST_F_TIMEOUT(zc, signal_copies_rest, 120)
{
	struct reader r = { .total = 8 * MIB, .seed = 8, .delay_ms = 1500 };
	struct sigaction sa = { .sa_handler = on_usr1 };
	unsigned char *buf = malloc(8 * MIB);
	struct writer w = { .buf = buf, .len = 8 * MIB };
	struct counts d, c0;
	long pin0, pin_after;
	double t0, took;

	PAIR(PORT + 8);
	pin0 = vm_pin();
	r.fd = self->sfd;
	w.fd = self->cfd;
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	fill(buf, 8 * MIB, 0, 8);
	c0 = counts();
	t0 = rs_now();
	ASSERT_EQ(0, reader_start(&r));
	ASSERT_EQ(0, pthread_create(&w.thread, NULL, writer_fn, &w));
	usleep(300000);
	ASSERT_EQ(0, pthread_kill(w.thread, SIGUSR1));
	pthread_join(w.thread, NULL);
	took = rs_now() - t0;
	pin_after = vm_pin();
	memset(buf, 0xee, 8 * MIB);
	EXPECT_EQ(8 * MIB, w.ret) TH_LOG("%s", w.ret < 0 ? strerror(w.err) : "");
	EXPECT_GT(1.4, took) TH_LOG("the write took %.2f s", took);
	EXPECT_EQ(pin0, pin_after);
	EXPECT_EQ(8 * MIB, reader_end(&r));
	d = since(c0);
	TH_LOG("write returned after %.2f s; zcopy %ld, write_copied %ld", took, d.zcopy,
	       d.write_copied);
	EXPECT_LT(0, d.write_copied);
	free(buf);
}

/*
 * Run @fn as user nobody (no CAP_IPC_LOCK) with RLIMIT_MEMLOCK at @limit
 * bytes, in a child: its exit status.
 */
static int as_nobody(size_t limit, int (*fn)(int cfd, int sfd), int cfd, int sfd)
{
	struct rlimit rl = { .rlim_cur = limit, .rlim_max = limit };
	pid_t pid = fork();

	if (!pid) {
		if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgid(65534) || setuid(65534))
			_exit(90);
		_exit(fn(cfd, sfd));
	}
	return pid < 0 ? -1 : rs_wait_child(pid);
}

/* Write @len bytes in one write(2) while a thread reads them: 0 if all came right. */
static int write_read(int cfd, int sfd, size_t len)
{
	/* Reads under zcopy_min: only the writer pins. */
	struct reader r = { .fd = sfd, .total = len, .seed = 3, .rlen = 64 << 10 };
	unsigned char *buf = malloc(len);
	long pin0 = vm_pin();
	ssize_t n;

	if (!buf || reader_start(&r))
		return 91;
	fill(buf, len, 0, 3);
	n = write(cfd, buf, len);
	if (reader_end(&r) != (ssize_t)len)
		return 92;
	if (n != (ssize_t)len)
		return 93;
	return vm_pin_back(pin0) != pin0 ? 94 : 0;
}

static int write_read_1m(int cfd, int sfd)
{
	return write_read(cfd, sfd, MIB);
}

static int write_read_4m(int cfd, int sfd)
{
	return write_read(cfd, sfd, 4 * MIB);
}

/*
 * Past RLIMIT_MEMLOCK (64 KiB, for a user without CAP_IPC_LOCK) a write
 * is copied: every byte comes, nothing is pinned.
 */
TEST_F_TIMEOUT(zc, memlock_limit_copies, 120)
{
	struct counts d, c0;

	PAIR(PORT + 2);
	c0 = counts();
	EXPECT_EQ(0, as_nobody(64 << 10, write_read_1m, self->cfd, self->sfd));
	d = since(c0);
	EXPECT_EQ(0, d.zcopy);
	EXPECT_LE(MIB, d.write_copied);
}

/*
 * With room for one write's SEND (1 MiB) but not two under the limit, a
 * 4 MiB write waits for its own pages to go back, and goes on from the
 * writer's pages: nothing copied.
 */
TEST_F_TIMEOUT(zc, memlock_limit_waits, 120)
{
	struct counts d, c0;

	PAIR(PORT + 3);
	c0 = counts();
	EXPECT_EQ(0, as_nobody(MIB + (512 << 10), write_read_4m, self->cfd, self->sfd));
	d = since(c0);
	EXPECT_EQ(4 * MIB, d.zcopy);
	EXPECT_EQ(0, d.write_copied);
}

/* zcopy_min 0, a write under zcopy_min and a non-blocking write copy. */
TEST_F_TIMEOUT(zc, copies_otherwise, 120)
{
	struct counts d, c0;

	PAIR(PORT + 4);
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/zcopy_min", "0"));
	c0 = counts();
	EXPECT_EQ(0, write_read(self->cfd, self->sfd, MIB));
	d = since(c0);
	EXPECT_EQ(0, d.zcopy);
	EXPECT_LE(MIB, d.write_copied);

	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/zcopy_min", "2097152"));
	c0 = counts();
	EXPECT_EQ(0, write_read(self->cfd, self->sfd, MIB));
	d = since(c0);
	EXPECT_EQ(0, d.zcopy);

	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/zcopy_min", "262144"));
	ASSERT_EQ(0, fcntl(self->cfd, F_SETFL, O_NONBLOCK));
	c0 = counts();
	{
		unsigned char *buf = calloc(1, MIB);
		ssize_t n;

		ASSERT_NE(NULL, buf);
		n = write(self->cfd, buf, MIB);
		EXPECT_LT(0, n);
		free(buf);
	}
	d = since(c0);
	EXPECT_EQ(0, d.zcopy);
}

/*
 * Pages that cannot all be pinned (the second half of the buffer is not
 * mapped): the write is copied up to the hole and returns those bytes, as
 * TCP's would; nothing stays pinned.  A read-only buffer is sent from its
 * pages (the device only reads them).
 */
TEST_F_TIMEOUT(zc, hole_and_readonly, 120)
{
	struct reader r = { .total = MIB / 2, .seed = 4 };
	struct counts d, c0;
	unsigned char *buf;
	long pin0;

	PAIR(PORT + 5);
	pin0 = vm_pin();
	r.fd = self->sfd;
	buf = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	fill(buf, MIB / 2, 0, 4);
	ASSERT_EQ(0, munmap(buf + MIB / 2, MIB / 2));
	ASSERT_EQ(0, reader_start(&r));
	EXPECT_EQ(MIB / 2, write(self->cfd, buf, MIB));
	EXPECT_EQ(MIB / 2, reader_end(&r));
	EXPECT_EQ(pin0, vm_pin_back(pin0));

	r.seed = 5;
	fill(buf, MIB / 2, 0, 5);
	ASSERT_EQ(0, mprotect(buf, MIB / 2, PROT_READ));
	c0 = counts();
	ASSERT_EQ(0, reader_start(&r));
	EXPECT_EQ(MIB / 2, write(self->cfd, buf, MIB / 2));
	EXPECT_EQ(MIB / 2, reader_end(&r));
	d = since(c0);
	EXPECT_EQ(MIB / 2, d.zcopy);
	EXPECT_EQ(pin0, vm_pin_back(pin0));
	munmap(buf, MIB / 2);
}

/*
 * writev(2) of pieces above and below zcopy_min: the large ones go from
 * their pages, the rest is copied, every byte in order.
 */
TEST_F_TIMEOUT(zc, writev_mixed, 120)
{
	size_t lens[4] = { 300 << 10, 10, 600 << 10, 5000 }, total = 0, i;
	struct reader r = { .seed = 6 };
	unsigned char *buf = malloc(2 * MIB);
	struct iovec iov[4];
	struct counts d, c0;

	PAIR(PORT + 6);
	ASSERT_NE(NULL, buf);
	for (i = 0; i < 4; i++) {
		iov[i].iov_base = buf + total + i * 4096;
		iov[i].iov_len = lens[i];
		fill(iov[i].iov_base, lens[i], total, 6);
		total += lens[i];
	}
	r.fd = self->sfd;
	r.total = total;
	c0 = counts();
	ASSERT_EQ(0, reader_start(&r));
	EXPECT_EQ((ssize_t)total, writev(self->cfd, iov, 4));
	EXPECT_EQ((ssize_t)total, reader_end(&r));
	d = since(c0);
	TH_LOG("zcopy %ld, write_copied %ld", d.zcopy, d.write_copied);
	EXPECT_LE(300 << 10, d.zcopy);
	EXPECT_EQ((long)total, d.zcopy + d.write_copied);
	free(buf);
}

/*
 * The peer closes its end in the middle of an 8 MiB write: the write
 * ends (with the bytes before, or EPIPE/ECONNRESET), and the pages are
 * unpinned and uncharged.
 */
TEST_F_TIMEOUT(zc, peer_closes_mid_write, 120)
{
	struct reader r = { .total = 8 * MIB, .seed = 7, .close_after = MIB };
	unsigned char *buf = malloc(8 * MIB);
	struct writer w = { .buf = buf, .len = 8 * MIB };
	long pin0;

	PAIR(PORT + 7);
	pin0 = vm_pin();
	r.fd = self->sfd;
	w.fd = self->cfd;
	ASSERT_NE(NULL, buf);
	fill(buf, 8 * MIB, 0, 7);
	signal(SIGPIPE, SIG_IGN);
	ASSERT_EQ(0, reader_start(&r));
	ASSERT_EQ(0, pthread_create(&w.thread, NULL, writer_fn, &w));
	pthread_join(w.thread, NULL);
	reader_end(&r);
	self->sfd = -1;		/* the reader closed it */
	TH_LOG("write: %zd (%s)", w.ret, w.ret < 0 ? strerror(w.err) : "bytes");
	EXPECT_TRUE(w.ret < 0 ? w.err == EPIPE || w.err == ECONNRESET : w.ret < 8 * MIB);
	EXPECT_EQ(pin0, vm_pin_back(pin0));
	free(buf);
}

/* A page-aligned buffer of @len bytes, or NULL. */
static unsigned char *pages(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* One read(2) of @len bytes into @buf, in a thread. */
struct one_read {
	int fd;
	unsigned char *buf;
	size_t len;
	ssize_t ret;
	int err;
	pthread_t thread;
};

static void *one_read_fn(void *arg)
{
	struct one_read *o = arg;

	o->ret = read(o->fd, o->buf, o->len);
	o->err = errno;
	return NULL;
}

/* Did @buf get @n bytes of pat(@seed) from @from on? */
static bool got_pat(const unsigned char *buf, size_t n, size_t from, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (buf[i] != pat(from + i, seed))
			return false;
	return true;
}

/*
 * A 2 MiB write into a read of 2 MiB that waits for it: the reader's pages
 * are pinned while it waits (VmPin up by 2 MiB), the writer's pages go
 * straight into them, and no payload byte is copied by either kernel
 * (write_copied, tx_copied, rx_copied, read_copied stay; tx_zcopy and
 * rx_zcopy count every byte).  The read returns all of it at once, and
 * VmPin comes back to where it was.
 */
TEST_F_TIMEOUT(zc, read_into_own_pages, 120)
{
	struct one_read o = { .len = 2 * MIB };
	unsigned char *buf = pages(2 * MIB);
	long pin0, pin_mid;
	struct counts d, c0;

	PAIR(PORT + 9);
	o.fd = self->sfd;
	o.buf = pages(2 * MIB);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, o.buf);
	fill(buf, 2 * MIB, 0, 9);
	pin0 = vm_pin();
	c0 = counts();
	ASSERT_EQ(0, pthread_create(&o.thread, NULL, one_read_fn, &o));
	usleep(300000);
	pin_mid = vm_pin();
	EXPECT_EQ(2 * MIB, write(self->cfd, buf, 2 * MIB));
	pthread_join(o.thread, NULL);
	d = since(c0);
	TH_LOG("VmPin %ld kB, %ld kB while the read waits; read %zd; tx_zcopy %ld, rx_zcopy %ld, copied: write %ld tx %ld rx %ld read %ld",
	       pin0, pin_mid, o.ret, d.zcopy, d.rx_zcopy, d.write_copied, d.tx_copied,
	       d.rx_copied, d.read_copied);
	EXPECT_LE(pin0 + 2048, pin_mid);
	EXPECT_EQ(2 * MIB, o.ret);
	EXPECT_TRUE(got_pat(o.buf, 2 * MIB, 0, 9));
	EXPECT_EQ(2 * MIB, d.zcopy);
	EXPECT_EQ(2 * MIB, d.rx_zcopy);
	EXPECT_EQ(0, d.write_copied);
	EXPECT_EQ(0, d.tx_copied);
	EXPECT_EQ(0, d.rx_copied);
	EXPECT_EQ(0, d.read_copied);
	EXPECT_EQ(pin0, vm_pin_back(pin0));

	/* The stream goes on: small writes are copied, into a small read. */
	fill(buf, 1000, 2 * MIB, 9);
	EXPECT_EQ(1000, write(self->cfd, buf, 1000));
	EXPECT_EQ(1000, read(self->sfd, o.buf, 4096));
	EXPECT_TRUE(got_pat(o.buf, 1000, 2 * MIB, 9));
	munmap(buf, 2 * MIB);
	munmap(o.buf, 2 * MIB);
}

/* A reader of zc_round(): reads until @len bytes came, or the end. */
struct zc_reader {
	int fd;
	unsigned char *buf;
	size_t len, got;
	pid_t tid;
	pthread_t thread;
};

static void *zc_reader_fn(void *arg)
{
	struct zc_reader *r = arg;
	ssize_t n;

	__atomic_store_n(&r->tid, gettid(), __ATOMIC_RELEASE);
	while (r->got < r->len) {
		n = read(r->fd, r->buf + r->got, r->len - r->got);
		if (n <= 0)
			break;
		r->got += n;
	}
	return NULL;
}

/* Up to 5 s for thread @tid of this process to sleep: true if it does. */
static bool sleeping(pid_t tid)
{
	char path[64], buf[256], *p;
	int i;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	for (i = 0; i < 5000; i++) {
		if (!rs_read_file(path, buf, sizeof(buf))) {
			p = strrchr(buf, ')');
			if (p && p[1] == ' ' && p[2] == 'S')
				return true;
		}
		usleep(1000);
	}
	return false;
}

/*
 * One 2 MiB write of pat(@seed) into a 2 MiB read that waits for it (its
 * thread asleep in read(2) before the write).
 */
static bool zc_round(int cfd, int sfd, unsigned char *wbuf, unsigned char *rbuf,
		     unsigned int seed)
{
	struct zc_reader r = { .fd = sfd, .buf = rbuf, .len = 2 * MIB };
	bool ok;
	int i;

	fill(wbuf, 2 * MIB, 0, seed);
	if (pthread_create(&r.thread, NULL, zc_reader_fn, &r))
		return false;
	for (i = 0; i < 5000 && !__atomic_load_n(&r.tid, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	/* Asleep, and a while more: its pages are offered by then. */
	ok = r.tid && sleeping(r.tid) && !usleep(50000) &&
	     write(cfd, wbuf, 2 * MIB) == 2 * MIB;
	/* The end of the stream ends the reader, wherever it is. */
	if (!ok)
		rdmashare_shutdown_file(cfd);
	pthread_join(r.thread, NULL);
	return ok && r.got == 2 * MIB && got_pat(rbuf, 2 * MIB, 0, seed);
}

#define ZC_CG	"rdmashare-zcopy"

/* Up to 5 s for cgroup ZC_CG's memory.current to come down to @bytes. */
static long cg_back(long bytes)
{
	long now = rs_cg_current(ZC_CG);
	int i;

	for (i = 0; i < 500 && now > bytes; i++) {
		usleep(10000);
		now = rs_cg_current(ZC_CG);
	}
	return now;
}

/*
 * Zero copy leaves nothing charged behind.  In a memory cgroup of its own,
 * 32 rounds of a 2 MiB write into a 2 MiB read that waits (no byte copied
 * by either kernel) leave the cgroup's memory.current and slab where one
 * round left them (within memcg's charge batches, 64 pages a CPU), and
 * VmPin where it was; once the pair is closed and the buffers unmapped, memory.current
 * is back to what it was before the pair.
 */
TEST_F_TIMEOUT(zc, memcg_back, 300)
{
	/* memcg's charge batches: 64 pages a CPU. */
	long batches = 256 * 1024 * sysconf(_SC_NPROCESSORS_ONLN);
	long cur_start, cur0, cur1, slab0, slab1, pin0, end;
	unsigned char *wbuf, *rbuf;
	struct counts d, c0;
	int i;

	ASSERT_LT(0, batches);
	ASSERT_EQ(0, rs_cg_make(ZC_CG));
	ASSERT_EQ(0, rs_cg_move(ZC_CG, getpid()));
	cur_start = rs_cg_current(ZC_CG);
	PAIR(PORT + 12);
	wbuf = pages(2 * MIB);
	rbuf = pages(2 * MIB);
	ASSERT_NE(NULL, wbuf);
	ASSERT_NE(NULL, rbuf);
	memset(rbuf, 0, 2 * MIB);
	ASSERT_TRUE(zc_round(self->cfd, self->sfd, wbuf, rbuf, 12));
	cur0 = rs_cg_current(ZC_CG);
	slab0 = rs_cg_stat(ZC_CG, "slab");
	pin0 = vm_pin();
	c0 = counts();
	for (i = 0; i < 32; i++)
		ASSERT_TRUE(zc_round(self->cfd, self->sfd, wbuf, rbuf, 13 + i)) TH_LOG("round %d", i);
	d = since(c0);
	EXPECT_EQ(pin0, vm_pin_back(pin0));
	cur1 = rs_cg_current(ZC_CG);
	slab1 = rs_cg_stat(ZC_CG, "slab");
	TH_LOG("memory.current %ld before the pair, %ld after a round, %ld after 32 more; slab %ld, %ld; tx_zcopy %ld, rx_zcopy %ld",
	       cur_start, cur0, cur1, slab0, slab1, d.zcopy, d.rx_zcopy);
	EXPECT_EQ(64L * MIB, d.zcopy);
	EXPECT_EQ(64L * MIB, d.rx_zcopy);
	EXPECT_EQ(0, d.write_copied + d.tx_copied + d.rx_copied + d.read_copied);
	EXPECT_GE(cur0 + batches, cur1);
	EXPECT_GE(slab0 + 256 * 1024, slab1);

	munmap(wbuf, 2 * MIB);
	munmap(rbuf, 2 * MIB);
	close(self->cfd);
	close(self->sfd);
	close(self->lfd);
	rdmashare_close(self->c);
	self->cfd = self->sfd = self->lfd = -1;
	self->c = NULL;
	end = cg_back(cur_start + batches);
	TH_LOG("memory.current %ld once the pair is closed", end);
	EXPECT_GE(cur_start + batches, end);
	EXPECT_EQ(0, rs_cg_move("", getpid()));
	rmdir(RS_CG "/" ZC_CG);
}

/*
 * A signal ends a read that waits with its pages offered: no byte came,
 * so it fails with EINTR (no SA_RESTART), and the pages go back once the
 * peer gave the buffer back.  Then a write of less than the buffer ends
 * the next such read with what it wrote, and the peer's shutdown one
 * with 0; nothing stays pinned.
 */
TEST_F_TIMEOUT(zc, read_signal_and_end, 120)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct one_read o = { .len = 2 * MIB };
	unsigned char *buf = pages(MIB);
	long pin0;

	PAIR(PORT + 10);
	o.fd = self->sfd;
	o.buf = pages(2 * MIB);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, o.buf);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	pin0 = vm_pin();
	ASSERT_EQ(0, pthread_create(&o.thread, NULL, one_read_fn, &o));
	usleep(300000);
	ASSERT_EQ(0, pthread_kill(o.thread, SIGUSR1));
	pthread_join(o.thread, NULL);
	EXPECT_EQ(-1, o.ret);
	EXPECT_EQ(EINTR, o.err);
	EXPECT_EQ(pin0, vm_pin_back(pin0));

	/* Less than the buffer: the read returns it, not waiting for more. */
	fill(buf, 300 << 10, 0, 10);
	ASSERT_EQ(0, pthread_create(&o.thread, NULL, one_read_fn, &o));
	usleep(300000);
	EXPECT_EQ(300 << 10, write(self->cfd, buf, 300 << 10));
	pthread_join(o.thread, NULL);
	EXPECT_EQ(300 << 10, o.ret);
	EXPECT_TRUE(got_pat(o.buf, 300 << 10, 0, 10));

	/* The peer's end of the stream ends the wait. */
	ASSERT_EQ(0, pthread_create(&o.thread, NULL, one_read_fn, &o));
	usleep(300000);
	EXPECT_EQ(0, rdmashare_shutdown_file(self->cfd));
	pthread_join(o.thread, NULL);
	EXPECT_EQ(0, o.ret);
	EXPECT_EQ(pin0, vm_pin_back(pin0));
	munmap(buf, MIB);
	munmap(o.buf, 2 * MIB);
}

/*
 * A reader killed while it waits with its pages offered: its buffer is
 * asked back, the kill does not wait for the answer, and the AC file,
 * shared with the parent, goes on: the parent's next write comes whole
 * into the parent's read.
 */
TEST_F_TIMEOUT(zc, read_killed, 120)
{
	unsigned char *buf = pages(2 * MIB), *in = pages(2 * MIB);
	struct reader r = { .total = MIB, .seed = 11, .rlen = 64 << 10 };
	int status;
	pid_t pid;

	PAIR(PORT + 11);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, in);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(read(self->sfd, in, 2 * MIB) < 0 ? 1 : 2);
	usleep(300000);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	r.fd = self->sfd;
	fill(buf, MIB, 0, 11);
	ASSERT_EQ(0, reader_start(&r));
	EXPECT_EQ(MIB, write(self->cfd, buf, MIB));
	EXPECT_EQ(MIB, reader_end(&r));
	munmap(buf, 2 * MIB);
	munmap(in, 2 * MIB);
}

TEST_HARNESS_MAIN

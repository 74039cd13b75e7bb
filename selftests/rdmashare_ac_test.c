// SPDX-License-Identifier: GPL-2.0
/*
 * Abstract connections on one host (Soft-RoCE loopback to the guest's own
 * address, RS_IP): listen, connect, accept, messages of every size around
 * the chunk size echoed and verified, a stream that fills the sender's data
 * area many times over verified, a handle that only sends, close seen by
 * the peer, and the errors of LISTEN, CONNECT, ACCEPT and of operations on
 * wrong ACs.  A listener closed with ACs in its backlog that already
 * received data: the data is dropped with them, their receive slots come
 * back, and a new AC that gets one of their ids gets only its own data.
 * Two ends whose SENDs both wait for credits can still RELEASE.
 * rdmashare_recv_any() takes the messages of several ACs in the order they
 * came, whole (multi-chunk ones too) and each AC's in order, reports an
 * AC's end once, times out, refuses a NULL id, and leaves an AC in the
 * backlog alone until it is accepted.  The slots a closed AC
 * lent its peer come back once the peer answered its CLOSE.  A file set up
 * with small receive slots gets chunks that fit them.  librdmashare's
 * faults, fixed: a recv that gives up inside a message keeps its chunks,
 * send, shutdown and close return the real errno (not -EIO), a send error
 * is not inherited by a new AC with the same id, slots read while no SQE
 * could be had still come back, and accept can give the peer's address.
 */
#include <arpa/inet.h>
#include <signal.h>
#include <sys/time.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT 7000

static struct sockaddr_in peer_addr(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	const char *ip = getenv("RS_PEER_TEST_IP") ?: getenv("RS_IP") ?: "127.0.0.1";

	inet_pton(AF_INET, ip, &sin.sin_addr);
	return sin;
}

static struct rdmashare *open_setup(void)
{
	return rs_open_setup(4 << 20, 256);
}

static void fill(unsigned char *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 8));
}

/* Echo server: every message straight back, until the client closes. */
static int echo_server(int ready_fd, unsigned int port)
{
	static unsigned char buf[2 << 20];
	struct rdmashare *rs = open_setup();
	int l, ac;
	ssize_t n;

	if (!rs)
		return 10;
	l = rdmashare_listen(rs, port, 16);
	if (l < 0)
		return 11;
	if (write(ready_fd, "r", 1) != 1)
		return 12;
	ac = rdmashare_accept(rs, l, 60000);
	if (ac < 0)
		return 13;
	for (;;) {
		n = rdmashare_recv(rs, ac, buf, sizeof(buf), 60000);
		if (n == -EPIPE)
			break;		/* the client closed */
		if (n < 0)
			return 14;
		if (rdmashare_send(rs, ac, buf, n))
			return 15;
	}
	if (rdmashare_flush(rs, 10000) || rdmashare_close_ac(rs, ac))
		return 16;
	rdmashare_close(rs);
	return 0;
}

/* Soft-RoCE under emulation is slow: the data tests get minutes. */
FIXTURE(data) {
	int unused;
};

FIXTURE_SETUP(data)
{
}

FIXTURE_TEARDOWN(data)
{
}

TEST_F_TIMEOUT(data, echo_sizes, 240)
{
	static const size_t sizes[] = {
		1, 2, 63, 64, 1000, 16383, 16384, 16385, 32768, 100000, 1 << 20, 0, 7,
	};
	static unsigned char out[1 << 20], in[1 << 20];
	struct sockaddr_in sin = peer_addr(PORT);
	struct rdmashare *rs;
	unsigned int i;
	pid_t pid;
	int ac;

	pid = rs_fork_ready(echo_server, PORT);
	ASSERT_LT(0, pid);
	rs = open_setup();
	ASSERT_NE(NULL, rs);
	ac = rdmashare_connect(rs, (struct sockaddr *)&sin, 20000);
	ASSERT_LT(0, ac) TH_LOG("connect: %s", strerror(-ac));

	/* SENDs reaching outside the data area, or longer than 1 GiB: EINVAL. */
	{
		const struct { __u64 addr; __u32 len; } bad[] = {
			{ 1ull << 40, 1 }, { 0, 0xffffffffu }, { ~0ull, 2 }, { 0, (1u << 30) + 1 },
		};
		struct rdmashare_cqe *cqe;
		unsigned int k;

		for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			struct rdmashare_sqe *sqe = rdmashare_get_sqe(rs);

			sqe->opcode = RDMASHARE_OP_SEND;
			sqe->ac = ac;
			sqe->addr = bad[k].addr;
			sqe->len = bad[k].len;
			sqe->user_data = k;
		}
		ASSERT_EQ(k, rdmashare_submit_and_wait(rs, k, 5000));
		for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			ASSERT_EQ(0, rdmashare_peek_cqe(rs, &cqe));
			EXPECT_EQ(-EINVAL, cqe->res) TH_LOG("bad SEND %u", k);
			rdmashare_cqe_seen(rs, cqe);
		}
	}

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		ssize_t n;

		fill(out, sizes[i], i);
		ASSERT_EQ(0, rdmashare_send(rs, ac, out, sizes[i]));
		n = rdmashare_recv(rs, ac, in, sizeof(in), 30000);
		if (getenv("RS_TEST_VERBOSE"))
			TH_LOG("size %zu: %zd", sizes[i], n);
		ASSERT_EQ((ssize_t)sizes[i], n) TH_LOG("size %zu", sizes[i]);
		if (sizes[i] == 0)
			continue;
		ASSERT_EQ(0, memcmp(out, in, sizes[i])) TH_LOG("size %zu", sizes[i]);
	}
	/* Pipelined: many in flight, back in order. */
	for (i = 0; i < 200; i++) {
		fill(out, 512, 1000 + i);
		ASSERT_EQ(0, rdmashare_send(rs, ac, out, 512));
	}
	for (i = 0; i < 200; i++) {
		fill(out, 512, 1000 + i);
		ASSERT_EQ(512, rdmashare_recv(rs, ac, in, sizeof(in), 30000));
		ASSERT_EQ(0, memcmp(out, in, 512)) TH_LOG("message %u", i);
	}
	ASSERT_EQ(0, rdmashare_close_ac(rs, ac));
	EXPECT_EQ(0, rs_wait_child(pid));
	rdmashare_close(rs);
}

/*
 * A stream of messages that fill the sender's data area exactly, many times
 * over, each checked at the receiver: the library's buffer manager must not
 * hand out space whose message the kernel has not taken yet (it once did,
 * when the area was exactly full).
 */
TEST_F_TIMEOUT(data, stream_fills_data_area, 240)
{
	static const size_t sizes[] = { 65536, 16384, 4096 };
	static unsigned char out[65536], in[65536];
	struct sockaddr_in sin = peer_addr(PORT + 5);
	unsigned int i, k, n, bad = 0;
	struct rdmashare *rs, *rcv;
	int l, ac, rac, status;
	pid_t pid;

	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		/* 1 MiB area: 16, 64 or 256 messages fill it; send it 3 times. */
		n = 3 * (1 << 20) / sizes[k];
		rcv = rs_open_setup(4 << 20, 256);
		ASSERT_NE(NULL, rcv);
		l = rdmashare_listen(rcv, PORT + 5, 4);
		ASSERT_LE(0, l);
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			rs = rs_open_setup(1 << 20, 64);
			if (!rs)
				_exit(10);
			ac = rdmashare_connect(rs, (struct sockaddr *)&sin, 20000);
			if (ac < 0)
				_exit(11);
			for (i = 0; i < n; i++) {
				fill(out, sizes[k], i);
				if (rdmashare_send(rs, ac, out, sizes[k]))
					_exit(12);
			}
			if (rdmashare_flush(rs, 30000))
				_exit(13);
			rdmashare_close(rs);
			_exit(0);
		}
		rac = rdmashare_accept(rcv, l, 20000);
		ASSERT_LE(0, rac);
		for (i = 0; i < n; i++) {
			ASSERT_EQ((ssize_t)sizes[k], rdmashare_recv(rcv, rac, in, sizeof(in), 30000));
			fill(out, sizes[k], i);
			if (memcmp(in, out, sizes[k]) && bad++ < 3)
				TH_LOG("%zu-byte message %u corrupted", sizes[k], i);
		}
		EXPECT_EQ(0, bad);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		rdmashare_close(rcv);
	}
}

TEST(connect_refused)
{
	struct sockaddr_in sin = peer_addr(PORT + 1);
	struct rdmashare *rs = open_setup();

	ASSERT_NE(NULL, rs);
	EXPECT_EQ(-ECONNREFUSED, rdmashare_connect(rs, (struct sockaddr *)&sin, 20000));
	rdmashare_close(rs);
}

TEST(connect_unreachable)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	struct rdmashare *rs = open_setup();
	int ret;

	ASSERT_NE(NULL, rs);
	/* On the guest's subnet, but nobody is there. */
	inet_pton(AF_INET, "198.18.0.99", &sin.sin_addr);
	ret = rdmashare_connect(rs, (struct sockaddr *)&sin, 15000);
	EXPECT_TRUE(ret == -EHOSTUNREACH || ret == -ETIMEDOUT) TH_LOG("got %d", ret);
	rdmashare_close(rs);
}

TEST(listen_errors)
{
	struct rdmashare *rs = open_setup(), *rs2 = open_setup();
	struct rdmashare_listen l = { .size = sizeof(l), .port = PORT + 2, .backlog = 4 };
	int fd, fd_raw;

	ASSERT_NE(NULL, rs);
	ASSERT_NE(NULL, rs2);
	fd = rdmashare_fd(rs);
	ASSERT_LT(0, rdmashare_listen(rs, PORT + 2, 4));
	/* Port taken, by this file or another. */
	EXPECT_EQ(-EADDRINUSE, rdmashare_listen(rs, PORT + 2, 4));
	EXPECT_EQ(-EADDRINUSE, rdmashare_listen(rs2, PORT + 2, 4));
	EXPECT_EQ(-EINVAL, rdmashare_listen(rs, 0, 4));
	EXPECT_EQ(-EINVAL, rdmashare_listen(rs, 65536, 4));
	EXPECT_EQ(-EINVAL, rdmashare_listen(rs, PORT + 3, 0));
	EXPECT_EQ(-EINVAL, rdmashare_listen(rs, PORT + 3, 1u << 30));
	l.flags = 1;
	EXPECT_EQ(-1, ioctl(fd, RDMASHARE_IOC_LISTEN, &l));
	EXPECT_EQ(EINVAL, errno);
	l.flags = 0;
	l.resv = 1;
	EXPECT_EQ(-1, ioctl(fd, RDMASHARE_IOC_LISTEN, &l));
	EXPECT_EQ(EINVAL, errno);
	/* Before SETUP. */
	fd_raw = open("/dev/rdmashare", O_RDWR);
	l.resv = 0;
	l.port = PORT + 4;
	EXPECT_EQ(-1, ioctl(fd_raw, RDMASHARE_IOC_LISTEN, &l));
	EXPECT_EQ(EINVAL, errno);
	close(fd_raw);
	rdmashare_close(rs);
	/* Closing the file frees the port. */
	EXPECT_LT(0, rdmashare_listen(rs2, PORT + 2, 4));
	rdmashare_close(rs2);
}

TEST(connect_and_accept_errors)
{
	struct rdmashare_connect c = { .size = sizeof(c) };
	struct rdmashare_accept a = { .size = sizeof(a) };
	struct rdmashare *rs = open_setup();
	int fd, l;

	ASSERT_NE(NULL, rs);
	fd = rdmashare_fd(rs);
	c.peer.family = AF_INET;
	c.peer.port = 0;
	EXPECT_EQ(-1, ioctl(fd, RDMASHARE_IOC_CONNECT, &c));
	EXPECT_EQ(EINVAL, errno);
	c.peer.port = 70000;
	EXPECT_EQ(-1, ioctl(fd, RDMASHARE_IOC_CONNECT, &c));
	EXPECT_EQ(EINVAL, errno);
	c.peer.port = PORT;
	c.peer.family = 12345;
	EXPECT_EQ(-1, ioctl(fd, RDMASHARE_IOC_CONNECT, &c));
	EXPECT_EQ(EAFNOSUPPORT, errno);
	c.peer.family = AF_INET;	/* 0.0.0.0 */
	EXPECT_EQ(-1, ioctl(fd, RDMASHARE_IOC_CONNECT, &c));
	EXPECT_EQ(EINVAL, errno);
	c.peer.addr[0] = 198;
	c.peer.addr[12] = 1;		/* junk after an IPv4 address */
	EXPECT_EQ(-1, ioctl(fd, RDMASHARE_IOC_CONNECT, &c));
	EXPECT_EQ(EINVAL, errno);
	c.peer.addr[12] = 0;
	c.flags = 1;
	EXPECT_EQ(-1, ioctl(fd, RDMASHARE_IOC_CONNECT, &c));
	EXPECT_EQ(EINVAL, errno);

	/* ACCEPT on nothing, on a non-listener, with bad flags. */
	a.listen_ac = 12345;
	EXPECT_EQ(-1, ioctl(fd, RDMASHARE_IOC_ACCEPT, &a));
	EXPECT_EQ(ENOENT, errno);
	l = rdmashare_listen(rs, PORT + 5, 4);
	ASSERT_LT(0, l);
	a.listen_ac = l;
	a.flags = RDMASHARE_ACCEPT_NONBLOCK;
	EXPECT_EQ(-1, ioctl(fd, RDMASHARE_IOC_ACCEPT, &a));
	EXPECT_EQ(EAGAIN, errno);
	a.flags = 0;
	a.timeout_ms = 50;
	EXPECT_EQ(-1, ioctl(fd, RDMASHARE_IOC_ACCEPT, &a));
	EXPECT_EQ(ETIME, errno);
	a.flags = 2;
	EXPECT_EQ(-1, ioctl(fd, RDMASHARE_IOC_ACCEPT, &a));
	EXPECT_EQ(EINVAL, errno);
	rdmashare_close(rs);
}

/* Operations naming ACs that are not this file's. */
TEST(ops_on_wrong_acs)
{
	struct rdmashare *a = open_setup(), *b = open_setup();
	struct rdmashare_cqe *cqe;
	struct rdmashare_sqe *sqe;
	int l, i;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	l = rdmashare_listen(a, PORT + 6, 4);
	ASSERT_LT(0, l);

	/* SEND on another file's AC id, on a listener, unknown ids; RELEASE of
	 * slots never delivered or outside the receive area; CLOSE with data.
	 */
	struct { __u8 op; __u32 ac; __u64 addr; __u32 len; int res; } cases[] = {
		{ RDMASHARE_OP_SEND, l, 0, 10, -ENOENT },	/* in file b */
		{ RDMASHARE_OP_SEND, 0, 0, 10, -ENOENT },
		{ RDMASHARE_OP_SEND, 999999, 0, 10, -ENOENT },
		{ RDMASHARE_OP_RELEASE, 0, 0, 0, -EINVAL },
		{ RDMASHARE_OP_RELEASE, 1, 1ull << 40, 0, -EINVAL },
		{ RDMASHARE_OP_CLOSE, 999999, 0, 0, -ENOENT },
	};
	for (i = 0; i < (int)(sizeof(cases) / sizeof(cases[0])); i++) {
		sqe = rdmashare_get_sqe(b);
		sqe->opcode = cases[i].op;
		sqe->ac = cases[i].ac;
		sqe->addr = cases[i].addr;
		sqe->len = cases[i].len;
		sqe->user_data = i;
	}
	ASSERT_EQ(i, rdmashare_submit_and_wait(b, i, 5000));
	for (i = 0; i < (int)(sizeof(cases) / sizeof(cases[0])); i++) {
		ASSERT_EQ(0, rdmashare_peek_cqe(b, &cqe));
		EXPECT_EQ(cases[i].res, cqe->res) TH_LOG("case %d", i);
		rdmashare_cqe_seen(b, cqe);
	}
	/* In file a: SEND on a listener, out of the data area, CLOSE with len. */
	sqe = rdmashare_get_sqe(a);
	sqe->opcode = RDMASHARE_OP_SEND;
	sqe->ac = l;
	sqe->len = 1;
	sqe = rdmashare_get_sqe(a);
	sqe->opcode = RDMASHARE_OP_CLOSE;
	sqe->ac = l;
	sqe->len = 1;
	ASSERT_EQ(2, rdmashare_submit_and_wait(a, 2, 5000));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, rdmashare_peek_cqe(a, &cqe));
		EXPECT_EQ(-EINVAL, cqe->res);
		rdmashare_cqe_seen(a, cqe);
	}
	rdmashare_close(a);
	rdmashare_close(b);
}

/*
 * A handle that only sends, one message at a time, each received on
 * another handle before the next goes: the sender's CQ fills with SEND
 * completions that nobody waits for.  The library must reap them when the
 * kernel leaves an SQE unconsumed, or that message never leaves (it did,
 * after a few hundred messages).
 */
TEST_F_TIMEOUT(data, send_only_handle, 180)
{
	struct rdmashare *c = open_setup(), *s = open_setup();
	struct sockaddr_in sin = peer_addr(PORT + 9);
	char buf[64];
	int l, cac, sac, i;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	l = rdmashare_listen(s, PORT + 9, 4);
	ASSERT_LE(0, l);
	cac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
	ASSERT_LE(0, cac);
	sac = rdmashare_accept(s, l, 20000);
	ASSERT_LE(0, sac);
	for (i = 0; i < 3000; i++) {
		memset(buf, i, sizeof(buf));
		ASSERT_EQ(0, rdmashare_send(c, cac, buf, sizeof(buf)));
		ASSERT_EQ(64, rdmashare_recv(s, sac, buf, sizeof(buf), 10000)) TH_LOG("message %d", i);
		ASSERT_EQ((char)i, buf[63]);
	}
	rdmashare_close(c);
	rdmashare_close(s);
}

/*
 * RDMASHARE_SETUP_SLOT_SIZE: a file with 1 KiB receive slots gets every
 * message in chunks of at most 1 KiB from a peer whose chunk_size is
 * 16 KiB (the device counts them), every byte intact, and sends its own in
 * chunks of the peer's 16 KiB slots.
 */
TEST_F_TIMEOUT(data, small_slots, 180)
{
	static const size_t sizes[] = { 1, 1023, 1024, 1025, 5000, 65536 };
	static unsigned char out[65536], in[65536];
	struct rdmashare_setup p = {
		.flags = RDMASHARE_SETUP_SLOT_SIZE, .data_size = 1 << 20, .rx_slots = 64,
		.rx_slot_size = 1000,
	};
	struct sockaddr_in sin = peer_addr(PORT + 50);
	long chunks, want = 0;
	struct rdmashare *c, *s;
	int l, cac, sac, dir;
	unsigned int i;

	s = rs_open_with(&p);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(1024, p.rx_slot_size);	/* rounded up to a multiple of 64 */
	EXPECT_EQ(p.data_size + 64 * 1024, p.map_size);
	c = open_setup();
	ASSERT_NE(NULL, c);
	l = rdmashare_listen(s, PORT + 50, 4);
	ASSERT_LE(0, l);
	cac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
	ASSERT_LE(0, cac);
	sac = rdmashare_accept(s, l, 20000);
	ASSERT_LE(0, sac);
	chunks = rs_device_stat("rx_chunks");
	ASSERT_LE(0, chunks);
	for (dir = 0; dir < 2; dir++) {
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			size_t slot = dir ? 16384 : 1024;

			fill(out, sizes[i], i + 10 * dir);
			ASSERT_EQ(0, rdmashare_send(dir ? s : c, dir ? sac : cac, out, sizes[i]));
			ASSERT_EQ((ssize_t)sizes[i], rdmashare_recv(dir ? c : s, dir ? cac : sac,
								   in, sizeof(in), 20000));
			ASSERT_EQ(0, memcmp(out, in, sizes[i])) TH_LOG("%zu bytes", sizes[i]);
			want += (sizes[i] + slot - 1) / slot;
		}
	}
	EXPECT_EQ(want, rs_device_stat("rx_chunks") - chunks);
	rdmashare_close(c);
	rdmashare_close(s);
}

/*
 * Receive slots on demand (protocol version 3): two files of 4 slots each
 * (credits_per_ac is 4) carry 16 ACs, four times as many as either has
 * slots, and echo messages on all of them at once, every byte checked.  The
 * client sends on every AC before the server reads any, the server reads
 * them in another order, and a message spans two chunks, so that slots
 * are lent, wanted, withheld and given back all the time.  With version
 * 2's fixed 4 slots per AC, the second CONNECT got ENOBUFS.
 */
TEST_F_TIMEOUT(data, slots_on_demand, 180)
{
	struct sockaddr_in sin = peer_addr(PORT + 7);
	struct rdmashare *srv = rs_open_setup(1 << 20, 4);
	struct rdmashare *cli = rs_open_setup(1 << 20, 4);
	static unsigned char out[20000], in[20000], want[20000];
	const int nr = 16, rounds = 3;
	int l, c[16], s[16], i, r, k;
	ssize_t n;

	ASSERT_NE(NULL, srv);
	ASSERT_NE(NULL, cli);
	l = rdmashare_listen(srv, PORT + 7, nr);
	ASSERT_LT(0, l);
	for (i = 0; i < nr; i++) {
		c[i] = rdmashare_connect(cli, (struct sockaddr *)&sin, 20000);
		ASSERT_LT(0, c[i]) TH_LOG("AC %d", i);
		s[i] = rdmashare_accept(srv, l, 20000);
		ASSERT_LT(0, s[i]) TH_LOG("AC %d", i);
	}
	for (r = 0; r < rounds; r++) {
		/* Odd rounds: 17 KiB messages, two chunks each. */
		size_t len = r % 2 ? 17 * 1024 : 64 + r;

		for (i = 0; i < nr; i++) {
			fill(out, len, r * 100 + i);
			ASSERT_EQ(0, rdmashare_send(cli, c[i], out, len)) TH_LOG("round %d AC %d", r, i);
		}
		for (k = 0; k < nr; k++) {
			i = (k * 5 + r) % nr;	/* not the order they were sent in */
			n = rdmashare_recv(srv, s[i], in, sizeof(in), 20000);
			ASSERT_EQ((ssize_t)len, n) TH_LOG("round %d AC %d", r, i);
			fill(want, len, r * 100 + i);
			ASSERT_EQ(0, memcmp(want, in, len)) TH_LOG("round %d AC %d", r, i);
			ASSERT_EQ(0, rdmashare_send(srv, s[i], in, len));
		}
		for (k = 0; k < nr; k++) {
			i = nr - 1 - k;
			n = rdmashare_recv(cli, c[i], in, sizeof(in), 20000);
			ASSERT_EQ((ssize_t)len, n) TH_LOG("echo: round %d AC %d", r, i);
			fill(want, len, r * 100 + i);
			ASSERT_EQ(0, memcmp(want, in, len)) TH_LOG("echo: round %d AC %d", r, i);
		}
	}
	rdmashare_close(cli);
	rdmashare_close(srv);
}

/*
 * The server has 8 receive slots: a slot lost per round would leave it
 * none by the ninth round (and before slots on demand, 4 for each AC, made a
 * CONNECT fail with ENOBUFS by the fourth).  Each round, a
 * listener and its backlog AC take the smallest free ids, as the next
 * round's do.  In odd rounds the dead AC's peer shut down too: the new AC
 * must not see that as its own end of data.
 */
TEST(listener_closed_with_early_data)
{
	struct rdmashare *c = rs_open_setup(1 << 20, 64);
	struct rdmashare *s = rs_open_setup(1 << 20, 8);
	struct rdmashare_ac_stats st;
	struct sockaddr_in sin;
	int i, l, cac, sac;
	double end;
	char buf[64];
	ssize_t n;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	for (i = 0; i < 6; i++) {
		sin = peer_addr(PORT + 20 + i);
		l = rdmashare_listen(s, PORT + 20 + i, 4);
		ASSERT_LT(0, l);
		cac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
		ASSERT_LT(0, cac) TH_LOG("round %d", i);
		ASSERT_EQ(0, rdmashare_send(c, cac, "stale", 6));
		/* Every other round the peer also shuts down (a HALF CLOSED). */
		if (i % 2)
			ASSERT_EQ(0, rdmashare_shutdown(c, cac));
		ASSERT_EQ(0, rdmashare_flush(c, 10000));
		usleep(300000);		/* in the server's CQ by now */
		ASSERT_EQ(0, rdmashare_close_ac(s, l));
		n = rdmashare_recv(c, cac, buf, sizeof(buf), 10000);
		EXPECT_GT(0, n) TH_LOG("round %d: %zd", i, n);
		ASSERT_EQ(0, rdmashare_close_ac(c, cac));

		l = rdmashare_listen(s, PORT + 20 + i, 4);
		ASSERT_LT(0, l);
		cac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
		ASSERT_LT(0, cac) TH_LOG("round %d", i);
		sac = rdmashare_accept(s, l, 20000);
		ASSERT_LT(0, sac);
		ASSERT_EQ(0, rdmashare_send(c, cac, "fresh", 6));
		n = rdmashare_recv(s, sac, buf, sizeof(buf), 10000);
		EXPECT_EQ(6, n) TH_LOG("round %d", i);
		EXPECT_STREQ("fresh", buf) TH_LOG("round %d", i);
		ASSERT_EQ(0, rdmashare_close_ac(c, cac));
		ASSERT_EQ(-EPIPE, rdmashare_recv(s, sac, buf, sizeof(buf), 10000));
		ASSERT_EQ(0, rdmashare_close_ac(s, sac));
		ASSERT_EQ(0, rdmashare_close_ac(s, l));
	}
	/* Every slot came back: 8 messages unread fill all 8. */
	sin = peer_addr(PORT + 20);
	l = rdmashare_listen(s, PORT + 20, 4);
	ASSERT_LT(0, l);
	cac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
	ASSERT_LT(0, cac);
	sac = rdmashare_accept(s, l, 20000);
	ASSERT_LT(0, sac);
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, rdmashare_send(c, cac, "slot", 5));
	}
	ASSERT_EQ(0, rdmashare_flush(c, 20000));
	end = rs_now() + 20;
	do {
		usleep(50000);
		ASSERT_EQ(0, rdmashare_ac_stats(s, sac, &st));
	} while (st.rx_msgs < 8 && rs_now() < end);
	EXPECT_EQ(8, st.rx_msgs);
	rdmashare_close(c);
	rdmashare_close(s);
}

/*
 * The same on the raw rings: the backlog AC's RECV, then its CLOSED flagged
 * RDMASHARE_CQE_F_DISCARD (res -ECONNABORTED); once a new AC has its id,
 * releasing the old slot works and gives the new AC nothing.
 */
TEST(listener_discard_raw)
{
	struct rdmashare *c = rs_open_setup(1 << 20, 64);
	struct rdmashare *s = rs_open_setup(1 << 20, 16);
	struct rdmashare_listen li = { .size = sizeof(li), .port = PORT + 30, .backlog = 4 };
	struct rdmashare_accept a = { .size = sizeof(a), .timeout_ms = 20000 };
	struct rdmashare_ac_stats before, after;
	struct sockaddr_in sin = peer_addr(PORT + 30);
	__u32 stale_ac = 0, listener;
	struct rdmashare_cqe *cqe;
	struct rdmashare_sqe *sqe;
	__u64 stale_addr = 0;
	bool discard = false;
	int cac, fd;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	fd = rdmashare_fd(s);
	ASSERT_EQ(0, ioctl(fd, RDMASHARE_IOC_LISTEN, &li));
	listener = li.ac;
	cac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
	ASSERT_LT(0, cac);
	ASSERT_EQ(0, rdmashare_send(c, cac, "stale", 6));
	ASSERT_EQ(0, rdmashare_flush(c, 10000));
	usleep(300000);

	sqe = rdmashare_get_sqe(s);
	ASSERT_NE(NULL, sqe);
	sqe->opcode = RDMASHARE_OP_CLOSE;
	sqe->ac = listener;
	sqe->user_data = 77;
	ASSERT_LE(0, rdmashare_submit(s));
	while (!discard) {
		ASSERT_EQ(0, rdmashare_wait_cqe(s, &cqe, 10000));
		if (cqe->type == RDMASHARE_CQE_RECV) {
			EXPECT_EQ(0, stale_ac);
			stale_ac = cqe->ac;
			stale_addr = cqe->addr;
		} else if (cqe->type == RDMASHARE_CQE_CLOSED) {
			EXPECT_EQ(stale_ac, cqe->ac);
			EXPECT_EQ(RDMASHARE_CQE_F_DISCARD, cqe->flags);
			EXPECT_EQ(-ECONNABORTED, cqe->res);
			discard = true;
		}
		rdmashare_cqe_seen(s, cqe);
	}
	ASSERT_NE(0, stale_ac);
	ASSERT_EQ(0, rs_op_result(s, 77));
	ASSERT_EQ(0, rdmashare_close_ac(c, cac));

	/* The smallest free ids again: the listener's, then the stale AC's. */
	li.ac = 0;
	li.port = PORT + 31;
	ASSERT_EQ(0, ioctl(fd, RDMASHARE_IOC_LISTEN, &li));
	EXPECT_EQ(listener, li.ac);
	sin = peer_addr(PORT + 31);
	cac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
	ASSERT_LT(0, cac);
	a.listen_ac = li.ac;
	ASSERT_EQ(0, ioctl(fd, RDMASHARE_IOC_ACCEPT, &a));
	ASSERT_EQ(stale_ac, a.ac);
	ASSERT_EQ(0, rdmashare_ac_stats(s, a.ac, &before));

	sqe = rdmashare_get_sqe(s);
	ASSERT_NE(NULL, sqe);
	sqe->opcode = RDMASHARE_OP_RELEASE;
	sqe->ac = stale_ac;
	sqe->addr = stale_addr;
	sqe->user_data = 78;
	ASSERT_LE(0, rdmashare_submit(s));
	EXPECT_EQ(0, rs_op_result(s, 78));
	ASSERT_EQ(0, rdmashare_ac_stats(s, a.ac, &after));
	EXPECT_EQ(before.rx_slots, after.rx_slots);
	rdmashare_close(c);
	rdmashare_close(s);
}

/*
 * Both ends of an AC send and neither releases: the SENDs beyond the
 * peer's credits wait.  Each end keeps no more SENDs outstanding than
 * SETUP's max_waiting, as the ABI asks; then each can still RELEASE what it
 * received (the review's liveness finding: before, waiting SENDs held every
 * CQ reservation and a RELEASE never got in), and everything arrives, in
 * order.
 */
struct stall_end {
	struct rdmashare *rs;
	struct rdmashare_setup p;
	__u32 ac;
	unsigned int seed, sent, done, got, to_release;
	__u64 slots[16];
};

/* Reap: SENDs done, RECVs checked and their slots kept; 1 if none came. */
static int stall_reap(struct __test_metadata *_metadata, struct stall_end *e,
		      unsigned int wait_ms)
{
	unsigned char want[64];
	struct rdmashare_cqe *cqe;
	int n = 0;

	if (wait_ms && rdmashare_wait_cqe(e->rs, &cqe, wait_ms))
		return 1;
	while (!rdmashare_peek_cqe(e->rs, &cqe)) {
		if (cqe->type == RDMASHARE_CQE_OP) {
			if (cqe->opcode == RDMASHARE_OP_SEND) {
				EXPECT_EQ(e->done, cqe->user_data);
				EXPECT_EQ(64, cqe->res);
				e->done++;
			} else {
				EXPECT_EQ(RDMASHARE_OP_RELEASE, cqe->opcode);
				EXPECT_EQ(0, cqe->res);
			}
		} else {
			ASSERT_EQ(RDMASHARE_CQE_RECV, cqe->type);
			ASSERT_EQ(64, cqe->res);
			fill(want, 64, (e->seed ^ 1) * 100 + e->got++);
			EXPECT_EQ(0, memcmp(want, (char *)rdmashare_data(e->rs, NULL) +
					    cqe->addr, 64)) TH_LOG("message %u", e->got - 1);
			ASSERT_GT(16, e->to_release);
			e->slots[e->to_release++] = cqe->addr;
		}
		rdmashare_cqe_seen(e->rs, cqe);
		n++;
	}
	return !n;
}

static void stall_send(struct __test_metadata *_metadata, struct stall_end *e)
{
	struct rdmashare_sqe *sqe = rdmashare_get_sqe(e->rs);
	double deadline;
	int ret;
	__u64 off = (e->sent % 64) * 64;

	ASSERT_NE(NULL, sqe);
	fill((unsigned char *)rdmashare_data(e->rs, NULL) + off, 64, e->seed * 100 + e->sent);
	sqe->opcode = RDMASHARE_OP_SEND;
	sqe->ac = e->ac;
	sqe->addr = off;
	sqe->len = 64;
	sqe->user_data = e->sent++;
	/*
	 * No CQ room while the RECVs in it hold what is kept for RECVs
	 * (rx_slots entries): reap them (their slots stay held) and submit
	 * again.
	 */
	for (deadline = rs_now() + 10; !(ret = rdmashare_submit(e->rs)); ) {
		ASSERT_GT(deadline, rs_now()) TH_LOG("SEND %u stays in the SQ", e->sent - 1);
		stall_reap(_metadata, e, 10);
	}
	ASSERT_EQ(1, ret);
}

static void stall_release(struct __test_metadata *_metadata, struct stall_end *e)
{
	unsigned int i, n = e->to_release, done;
	struct rdmashare_sqe *sqe;
	double deadline;
	int ret;

	for (i = 0; i < n; i++) {
		sqe = rdmashare_get_sqe(e->rs);
		ASSERT_NE(NULL, sqe);
		sqe->opcode = RDMASHARE_OP_RELEASE;
		sqe->ac = e->ac;
		sqe->addr = e->slots[i];
		sqe->user_data = 1000;
	}
	e->to_release = 0;
	/*
	 * A RELEASE completes at once, in CQ room that neither the RECVs
	 * (8 entries) nor the waiting SENDs (7) hold: 16 - 8 - 7 = 1 entry,
	 * so a second waits at the SQ head until the first one's CQE is
	 * reaped.  All must go through while the SENDs stay stalled (on
	 * 16cb06c none did).
	 */
	for (done = 0, deadline = rs_now() + 20; done < n; ) {
		ret = rdmashare_submit(e->rs);
		ASSERT_LE(0, ret);
		done += ret;
		if (done < n) {
			ASSERT_GT(deadline, rs_now()) TH_LOG("RELEASEs stay in the SQ");
			stall_reap(_metadata, e, 10);
		}
	}
}

TEST_F_TIMEOUT(data, release_behind_stalled_sends, 120)
{
	struct rdmashare_setup p = { .sq_entries = 8, .rx_slots = 8, .cq_entries = 16,
				     .data_size = 1 << 16 };
	struct sockaddr_in sin = peer_addr(PORT + 40);
	struct stall_end e[2] = { { .seed = 0 }, { .seed = 1 } };
	unsigned int i, total;
	double deadline;
	int l;

	for (i = 0; i < 2; i++) {
		e[i].p = p;
		ASSERT_EQ(0, rdmashare_open(&e[i].rs, 0));
		ASSERT_EQ(0, rdmashare_setup(e[i].rs, &e[i].p));
		/* 8 entries beyond the slots: 7 for waiting operations. */
		EXPECT_EQ(7, e[i].p.max_waiting);
	}
	l = rdmashare_listen(e[1].rs, PORT + 40, 4);
	ASSERT_LT(0, l);
	e[0].ac = rdmashare_connect(e[0].rs, (struct sockaddr *)&sin, 20000);
	ASSERT_LT(0, (int)e[0].ac);
	e[1].ac = rdmashare_accept(e[1].rs, l, 20000);
	ASSERT_LT(0, (int)e[1].ac);

	/* Send until max_waiting SENDs wait for credits that do not come. */
	for (i = 0; i < 2; i++) {
		for (;;) {
			while (e[i].sent - e[i].done >= (e[i].p.max_waiting ?: 12))
				if (stall_reap(_metadata, &e[i], 2000))
					break;
			if (e[i].sent - e[i].done >= (e[i].p.max_waiting ?: 12))
				break;
			stall_send(_metadata, &e[i]);
		}
		EXPECT_LT(0, e[i].done);	/* those that had credits */
	}
	/* Both stalled: each can still give back what it received. */
	for (i = 0; i < 2; i++) {
		stall_reap(_metadata, &e[i], 0);
		ASSERT_LT(0, e[i].to_release);
		stall_release(_metadata, &e[i]);
	}
	/* The credits flow again, and every message arrives. */
	total = e[0].sent;
	deadline = rs_now() + 60;
	while (e[0].got < e[1].sent || e[1].got < total ||
	       e[0].done < e[0].sent || e[1].done < e[1].sent) {
		ASSERT_GT(deadline, rs_now());
		for (i = 0; i < 2; i++) {
			stall_reap(_metadata, &e[i], 10);
			stall_release(_metadata, &e[i]);
		}
	}
	for (i = 0; i < 2; i++)
		rdmashare_close(e[i].rs);
}

TEST_F_TIMEOUT(data, recv_any, 120)
{
	static const size_t sizes[] = { 10, 40000, 1, 16384, 0, 100 };
	struct sockaddr_in sin = peer_addr(PORT + 41);
	struct rdmashare *c = open_setup(), *s = open_setup();
	static unsigned char in[65536], out[65536];
	int cac[3], sac[3], l, a, ac, got[3] = { 0 };
	unsigned int i, k, n;
	ssize_t r;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(-EINVAL, rdmashare_recv_any(s, NULL, in, sizeof(in), 100));
	l = rdmashare_listen(s, PORT + 41, 4);
	ASSERT_LE(0, l);
	for (a = 0; a < 3; a++) {
		cac[a] = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
		ASSERT_LE(0, cac[a]);
		sac[a] = rdmashare_accept(s, l, 20000);
		ASSERT_LE(0, sac[a]);
	}
	ac = -1;
	EXPECT_EQ(-ETIME, rdmashare_recv_any(s, &ac, in, sizeof(in), 100));
	EXPECT_EQ(-1, ac);

	/* Interleaved: AC 0, 1, 2, 0, 1, 2...; AC 2 sends only half. */
	n = sizeof(sizes) / sizeof(sizes[0]);
	for (i = 0; i < n; i++) {
		for (a = 0; a < 3; a++) {
			if (a == 2 && i >= n / 2)
				continue;
			fill(out, sizes[i], a * 100 + i);
			ASSERT_EQ(0, rdmashare_send(c, cac[a], out, sizes[i]));
		}
	}
	ASSERT_EQ(0, rdmashare_flush(c, 20000));
	ASSERT_EQ(0, rdmashare_close_ac(c, cac[2]));
	for (k = 0; k < 2 * n + n / 2 + 1; k++) {
		r = rdmashare_recv_any(s, &ac, in, sizeof(in), 20000);
		for (a = 0; a < 3 && sac[a] != ac; a++)
			;
		ASSERT_GT(3, a) TH_LOG("recv_any: AC %d, %zd", ac, r);
		if (r == -EPIPE) {
			/* AC 2's end, after all of its messages. */
			EXPECT_EQ(2, a);
			EXPECT_EQ((int)n / 2, got[a]);
			continue;
		}
		ASSERT_LE(0, r) TH_LOG("AC %d: %s", ac, strerror(-r));
		ASSERT_GT((int)n, got[a]);
		ASSERT_EQ((ssize_t)sizes[got[a]], r) TH_LOG("AC %d message %d", a, got[a]);
		fill(out, r, a * 100 + got[a]);
		ASSERT_EQ(0, memcmp(in, out, r)) TH_LOG("AC %d message %d", a, got[a]);
		got[a]++;
	}
	EXPECT_EQ((int)n, got[0]);
	EXPECT_EQ((int)n, got[1]);
	/* Each end is reported once: nothing more now. */
	EXPECT_EQ(-ETIME, rdmashare_recv_any(s, &ac, in, sizeof(in), 200));
	rdmashare_close(c);
	rdmashare_close(s);
}

/*
 * A message that comes for an AC still in the listener's backlog (the
 * peer's CONNECT is answered by the kernel, so the peer may send at once)
 * is not rdmashare_recv_any()'s to return before ACCEPT hands the AC out:
 * it once was, under an id the application did not know yet, and a server
 * that answered it lost the answer.
 */
TEST_F_TIMEOUT(data, recv_any_backlog, 60)
{
	struct sockaddr_in sin = peer_addr(PORT + 44);
	struct rdmashare *c = open_setup(), *s = open_setup();
	int l, open_c, open_s, early_c, early_s, ac;
	char in[64];

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	l = rdmashare_listen(s, PORT + 44, 4);
	ASSERT_LE(0, l);
	open_c = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
	ASSERT_LE(0, open_c);
	open_s = rdmashare_accept(s, l, 20000);
	ASSERT_LE(0, open_s);
	early_c = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
	ASSERT_LE(0, early_c);
	ASSERT_EQ(0, rdmashare_send(c, early_c, "early", 6));
	ASSERT_EQ(0, rdmashare_flush(c, 20000));
	ASSERT_EQ(0, rdmashare_send(c, open_c, "open", 5));
	ASSERT_EQ(0, rdmashare_flush(c, 20000));

	/* The accepted AC's message only, though the other one came first. */
	ac = -1;
	EXPECT_EQ(5, rdmashare_recv_any(s, &ac, in, sizeof(in), 20000));
	EXPECT_EQ(open_s, ac);
	EXPECT_STREQ("open", in);
	ac = -1;
	EXPECT_EQ(-ETIME, rdmashare_recv_any(s, &ac, in, sizeof(in), 500));
	EXPECT_EQ(-1, ac);

	/* Accepted: its message is there, under the id ACCEPT gave. */
	early_s = rdmashare_accept(s, l, 20000);
	ASSERT_LE(0, early_s);
	EXPECT_EQ(6, rdmashare_recv_any(s, &ac, in, sizeof(in), 20000));
	EXPECT_EQ(early_s, ac);
	EXPECT_STREQ("early", in);
	EXPECT_EQ(-ETIME, rdmashare_recv_any(s, &ac, in, sizeof(in), 200));
	rdmashare_close(c);
	rdmashare_close(s);
}

/*
 * The slots an AC lent its peer stay out of the pool after it closes until
 * the peer's CLOSE (version 4 answers every CLOSE), so that a chunk the
 * peer had on its way cannot land in an AC they go to next.  A client of 4
 * slots opens, receives on and closes 12 ACs in turn, closing first or
 * second, sometimes with the peer's messages unread: were a closed AC's
 * slots never given back, the second AC would wait for credits for ever.
 * Afterwards no AC is left in quarantine.
 */
TEST_F_TIMEOUT(data, closed_slots_come_back, 180)
{
	struct sockaddr_in sin = peer_addr(PORT + 11);
	struct rdmashare *srv = open_setup(), *cli = rs_open_setup(1 << 20, 4);
	unsigned char out[64], in[64];
	int l, c, s, r, i, left = -1;

	ASSERT_NE(NULL, srv);
	ASSERT_NE(NULL, cli);
	l = rdmashare_listen(srv, PORT + 11, 4);
	ASSERT_LT(0, l);
	for (r = 0; r < 12; r++) {
		c = rdmashare_connect(cli, (struct sockaddr *)&sin, 20000);
		ASSERT_LT(0, c) TH_LOG("round %d", r);
		s = rdmashare_accept(srv, l, 20000);
		ASSERT_LT(0, s) TH_LOG("round %d", r);
		for (i = 0; i < 3; i++) {
			fill(out, sizeof(out), r * 10 + i);
			ASSERT_EQ(0, rdmashare_send(srv, s, out, sizeof(out)));
			ASSERT_EQ((ssize_t)sizeof(in), rdmashare_recv(cli, c, in, sizeof(in), 20000))
				TH_LOG("round %d message %d", r, i);
			ASSERT_EQ(0, memcmp(out, in, sizeof(in))) TH_LOG("round %d message %d", r, i);
		}
		/* Every third round, two more messages that nobody reads. */
		for (i = 0; r % 3 == 2 && i < 2; i++)
			ASSERT_EQ(0, rdmashare_send(srv, s, out, sizeof(out)));
		ASSERT_EQ(0, rdmashare_flush(srv, 20000));
		if (r % 2) {
			ASSERT_EQ(0, rdmashare_close_ac(cli, c));
			while (rdmashare_recv(srv, s, in, sizeof(in), 20000) > 0)
				;
			ASSERT_EQ(0, rdmashare_close_ac(srv, s));
		} else {
			ASSERT_EQ(0, rdmashare_close_ac(srv, s));
			while (rdmashare_recv(cli, c, in, sizeof(in), 20000) > 0)
				;
			ASSERT_EQ(0, rdmashare_close_ac(cli, c));
		}
	}
	for (i = 0; i < 100 && left; i++) {
		left = rs_quarantined();
		if (left)
			usleep(100000);
	}
	EXPECT_EQ(0, left);
	rdmashare_close(cli);
	rdmashare_close(srv);
}

static void rs_tick(int sig)
{
	(void)sig;
}

/* A SIGALRM every @us microseconds (0: none), to interrupt waits. */
static int rs_ticks(unsigned int us)
{
	struct itimerval it = {
		.it_interval = { .tv_usec = us }, .it_value = { .tv_usec = us },
	};
	struct sigaction sa = { .sa_handler = rs_tick };

	if (sigaction(SIGALRM, &sa, NULL))
		return -errno;
	return setitimer(ITIMER_REAL, &it, NULL) ? -errno : 0;
}

/*
 * A recv that gives up in the middle of a message (a timeout, or a signal)
 * keeps what it read: the next call returns the whole message.  The
 * receiver has four 64-byte slots, so a 16 KiB message comes in 256 chunks,
 * four per credit round trip.  Each recv starts once the first chunk is
 * there, so every error it returns is one in the middle of the message;
 * waits are 1 ms, and a SIGALRM every 300 us cuts longer ones short.  Until
 * the test saw three, it sends another message.
 */
TEST_F_TIMEOUT(data, recv_timeout_keeps_chunks, 120)
{
	struct rdmashare_setup p = {
		.flags = RDMASHARE_SETUP_SLOT_SIZE, .data_size = 1 << 16, .rx_slots = 4,
		.rx_slot_size = 64,
	};
	static unsigned char out[16384], in[16384 + 1];
	struct sockaddr_in sin = peer_addr(PORT + 60);
	const __u64 chunks = sizeof(out) / 64;
	int l, cac, sac, r, mid = 0, intr = 0;
	struct rdmashare_ac_stats st;
	struct rdmashare *c, *s;
	double deadline;
	ssize_t n;

	s = rs_open_with(&p);
	ASSERT_NE(NULL, s);
	c = open_setup();
	ASSERT_NE(NULL, c);
	l = rdmashare_listen(s, PORT + 60, 4);
	ASSERT_LE(0, l);
	cac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
	ASSERT_LE(0, cac);
	sac = rdmashare_accept(s, l, 20000);
	ASSERT_LE(0, sac);
	deadline = rs_now() + 60;
	for (r = 0; mid < 3; r++) {
		ASSERT_GT(deadline, rs_now()) TH_LOG("%d errors inside a message", mid);
		fill(out, sizeof(out), r);
		ASSERT_EQ(0, rdmashare_send(c, cac, out, sizeof(out)));
		do {
			/* The last message's RELEASEs go: the credits for this one. */
			ASSERT_LE(0, rdmashare_submit(s));
			ASSERT_EQ(0, rdmashare_ac_stats(s, sac, &st));
			ASSERT_GT(deadline, rs_now()) TH_LOG("message %d does not come", r);
		} while (st.rx_chunks == r * chunks && !usleep(200));
		ASSERT_EQ(0, rs_ticks(300));
		while ((n = rdmashare_recv(s, sac, in, sizeof(in), 1)) == -ETIME ||
		       n == -EINTR) {
			intr += n == -EINTR;
			mid++;
		}
		ASSERT_EQ(0, rs_ticks(0));
		ASSERT_EQ((ssize_t)sizeof(out), n) TH_LOG("message %d: %zd", r, n);
		ASSERT_EQ(0, memcmp(out, in, sizeof(out))) TH_LOG("message %d", r);
	}
	TH_LOG("%d messages, %d errors inside one (%d signals)", r, mid, intr);
	/* One that does not fit is dropped whole, also across a timeout. */
	fill(out, sizeof(out), r);
	ASSERT_EQ(0, rdmashare_send(c, cac, out, sizeof(out)));
	while ((n = rdmashare_recv(s, sac, in, 100, 1)) == -ETIME)
		;
	EXPECT_EQ(-EMSGSIZE, n);
	ASSERT_EQ(0, rdmashare_send(c, cac, out, 10));
	EXPECT_EQ(10, rdmashare_recv(s, sac, in, sizeof(in), 20000));
	EXPECT_EQ(0, memcmp(out, in, 10));
	rdmashare_close(c);
	rdmashare_close(s);
}

/* Take the handle's descriptor away (its system calls get EBADF); a copy. */
static int hide_fd(struct rdmashare *rs)
{
	int saved = dup(rdmashare_fd(rs));

	close(rdmashare_fd(rs));
	return saved;
}

static void restore_fd(struct rdmashare *rs, int saved)
{
	dup2(saved, rdmashare_fd(rs));
	close(saved);
}

/*
 * rdmashare_send(), rdmashare_shutdown() and rdmashare_close_ac() return
 * the error that stopped them, not -EIO: here EBADF, from submitting (a
 * SHUTDOWN and a CLOSE that stay queued, and go with the next submission)
 * and from the wait for room while max_waiting operations are outstanding
 * (then nothing is queued and the AC is as it was).
 */
TEST_F_TIMEOUT(data, errors_not_eio, 120)
{
	struct rdmashare_setup p = { .sq_entries = 8, .rx_slots = 8, .cq_entries = 16,
				     .data_size = 1 << 16 };
	struct sockaddr_in sin = peer_addr(PORT + 61);
	int l, cac[3], sac[3], i, n, fd;
	struct rdmashare_ac_stats st;
	struct rdmashare *c, *s;
	char buf[64];

	c = rs_open_with(&p);
	ASSERT_NE(NULL, c);
	ASSERT_EQ(7, p.max_waiting);
	s = rs_open_setup(1 << 20, 4);
	ASSERT_NE(NULL, s);
	l = rdmashare_listen(s, PORT + 61, 4);
	ASSERT_LE(0, l);
	for (i = 0; i < 3; i++) {
		cac[i] = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
		ASSERT_LE(0, cac[i]);
		sac[i] = rdmashare_accept(s, l, 20000);
		ASSERT_LE(0, sac[i]);
	}
	/*
	 * max_waiting SENDs wait for credits that do not come (the reader has
	 * four slots, and does not read), all the others completed and were
	 * reaped: the next operation waits.
	 */
	for (n = 0;; n++) {
		rdmashare_flush(c, 300);
		ASSERT_EQ(0, rdmashare_ac_stats(c, cac[2], &st));
		if (st.queued_ops == 7)
			break;
		ASSERT_GT(30, n);
		memset(buf, n, sizeof(buf));
		ASSERT_EQ(0, rdmashare_send(c, cac[2], buf, sizeof(buf)));
	}
	fd = hide_fd(c);
	EXPECT_EQ(-EBADF, rdmashare_send(c, cac[2], buf, sizeof(buf)));
	EXPECT_EQ(-EBADF, rdmashare_shutdown(c, cac[2]));
	EXPECT_EQ(-EBADF, rdmashare_close_ac(c, cac[2]));
	restore_fd(c, fd);
	/* Nothing of those was queued: the messages, then the close. */
	for (i = 0; i < n; i++) {
		ASSERT_EQ((ssize_t)sizeof(buf), rdmashare_recv(s, sac[2], buf, sizeof(buf), 20000));
		EXPECT_EQ(i, buf[0]);
	}
	EXPECT_EQ(0, rdmashare_send(c, cac[2], buf, 1));
	EXPECT_EQ(0, rdmashare_close_ac(c, cac[2]));
	EXPECT_EQ(1, rdmashare_recv(s, sac[2], buf, sizeof(buf), 20000));
	EXPECT_EQ(-EPIPE, rdmashare_recv(s, sac[2], buf, sizeof(buf), 20000));

	/* Room to wait for: the SHUTDOWN and the CLOSE are queued. */
	fd = hide_fd(c);
	EXPECT_EQ(-EBADF, rdmashare_shutdown(c, cac[0]));
	EXPECT_EQ(-EBADF, rdmashare_close_ac(c, cac[1]));
	restore_fd(c, fd);
	ASSERT_LE(0, rdmashare_submit(c));
	EXPECT_EQ(-EPIPE, rdmashare_recv(s, sac[0], buf, sizeof(buf), 20000));
	EXPECT_EQ(-EPIPE, rdmashare_recv(s, sac[1], buf, sizeof(buf), 20000));
	EXPECT_EQ(-EPIPE, rdmashare_shutdown(c, cac[0]));
	rdmashare_close(c);
	rdmashare_close(s);
}

/*
 * A SEND that fails because its id names no AC (-ENOENT) is this id's
 * error only until the kernel hands the id out again: the new AC that
 * CONNECT or ACCEPT returns with it sends.
 */
TEST_F_TIMEOUT(data, send_error_not_inherited, 120)
{
	struct sockaddr_in sin = peer_addr(PORT + 62);
	struct rdmashare *c = open_setup(), *s = open_setup();
	int l, cac, sac, id;
	char buf[8] = "abcdefg";

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	l = rdmashare_listen(s, PORT + 62, 4);
	ASSERT_LE(0, l);
	for (id = 1; id <= 4; id++) {
		ASSERT_EQ(0, rdmashare_send(c, id, buf, sizeof(buf)));
		if (id != l)
			ASSERT_EQ(0, rdmashare_send(s, id, buf, sizeof(buf)));
	}
	EXPECT_EQ(0, rdmashare_flush(c, 20000));
	EXPECT_EQ(0, rdmashare_flush(s, 20000));
	EXPECT_EQ(-ENOENT, rdmashare_send(c, 1, buf, sizeof(buf)));
	EXPECT_EQ(-ENOENT, rdmashare_send(s, l == 1 ? 2 : 1, buf, sizeof(buf)));

	cac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
	ASSERT_LE(1, cac);
	ASSERT_GE(4, cac);
	sac = rdmashare_accept(s, l, 20000);
	ASSERT_LE(1, sac);
	ASSERT_GE(4, sac);
	EXPECT_EQ(0, rdmashare_send(c, cac, buf, sizeof(buf)));
	EXPECT_EQ((ssize_t)sizeof(buf), rdmashare_recv(s, sac, buf, sizeof(buf), 20000));
	EXPECT_EQ(0, rdmashare_send(s, sac, buf, sizeof(buf)));
	EXPECT_EQ((ssize_t)sizeof(buf), rdmashare_recv(c, cac, buf, sizeof(buf), 20000));
	EXPECT_EQ(0, strcmp(buf, "abcdefg"));
	rdmashare_close(c);
	rdmashare_close(s);
}

/*
 * Every slot the library read comes back, even when it could not give it
 * back at once: with the descriptor gone (EBADF) and its 8-entry SQ full of
 * RELEASEs, a reader goes on taking 12 messages kept on 4 ACs, and once
 * the descriptor is back the slots the ACs hold return to what they were.
 */
TEST_F_TIMEOUT(data, read_slots_come_back, 120)
{
	struct rdmashare_setup p = { .sq_entries = 8, .rx_slots = 16, .data_size = 1 << 16 };
	struct sockaddr_in sin = peer_addr(PORT + 63);
	int l, cac[4], sac[4], a, i, fd, held, got;
	struct rdmashare_ac_stats st;
	struct rdmashare *c, *s;
	double deadline;
	char buf[64];

	held = rs_rx_held();
	ASSERT_LE(0, held);
	s = rs_open_with(&p);
	ASSERT_NE(NULL, s);
	c = open_setup();
	ASSERT_NE(NULL, c);
	l = rdmashare_listen(s, PORT + 63, 4);
	ASSERT_LE(0, l);
	for (a = 0; a < 4; a++) {
		cac[a] = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
		ASSERT_LE(0, cac[a]);
		sac[a] = rdmashare_accept(s, l, 20000);
		ASSERT_LE(0, sac[a]);
		for (i = 0; i < 3; i++) {
			memset(buf, a * 10 + i, sizeof(buf));
			ASSERT_EQ(0, rdmashare_send(c, cac[a], buf, sizeof(buf)));
		}
	}
	/* All of them arrived (they fit the ACs' first windows). */
	deadline = rs_now() + 20;
	do {
		ASSERT_GT(deadline, rs_now());
		for (a = 0, got = 0; a < 4; a++) {
			ASSERT_EQ(0, rdmashare_ac_stats(s, sac[a], &st));
			got += st.rx_msgs;
		}
	} while (got < 12 && !usleep(10000));
	for (i = 0; i < 100 && rs_rx_held() != held + 12; i++)
		usleep(10000);
	ASSERT_EQ(held + 12, rs_rx_held());
	/* Nothing came on the last AC before it: the first read files them all. */
	ASSERT_EQ((ssize_t)sizeof(buf), rdmashare_recv(s, sac[3], buf, sizeof(buf), 20000));
	EXPECT_EQ(30, buf[0]);
	fd = hide_fd(s);
	for (a = 0; a < 4; a++) {
		for (i = a == 3; i < 3; i++) {
			ASSERT_EQ((ssize_t)sizeof(buf),
				  rdmashare_recv(s, sac[a], buf, sizeof(buf), 20000))
				TH_LOG("AC %d message %d", a, i);
			EXPECT_EQ(a * 10 + i, buf[0]);
		}
	}
	restore_fd(s, fd);
	EXPECT_EQ(-ETIME, rdmashare_recv(s, sac[0], buf, sizeof(buf), 100));
	for (i = 0; i < 50 && rs_rx_held() != held; i++)
		usleep(100000);
	EXPECT_EQ(held, rs_rx_held());
	rdmashare_close(c);
	rdmashare_close(s);
}

/*
 * rdmashare_accept_peer() gives the connecting peer's address (port 0), cut
 * to the room given, with its whole length.
 */
TEST_F_TIMEOUT(data, accept_peer, 60)
{
	struct sockaddr_in sin = peer_addr(PORT + 64), got;
	struct rdmashare *c = open_setup(), *s = open_setup();
	struct sockaddr_storage ss;
	socklen_t len;
	int l, cac, sac;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	l = rdmashare_listen(s, PORT + 64, 4);
	ASSERT_LE(0, l);
	cac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
	ASSERT_LE(0, cac);
	memset(&ss, 0xff, sizeof(ss));
	len = sizeof(ss);
	sac = rdmashare_accept_peer(s, l, 20000, (struct sockaddr *)&ss, &len);
	ASSERT_LE(0, sac);
	ASSERT_EQ(sizeof(struct sockaddr_in), len);
	memcpy(&got, &ss, sizeof(got));
	EXPECT_EQ(AF_INET, got.sin_family);
	EXPECT_EQ(0, got.sin_port);
	EXPECT_EQ(sin.sin_addr.s_addr, got.sin_addr.s_addr);

	/* Cut to 4 bytes; and no address wanted. */
	cac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
	ASSERT_LE(0, cac);
	memset(&ss, 0xff, sizeof(ss));
	len = 4;
	sac = rdmashare_accept_peer(s, l, 20000, (struct sockaddr *)&ss, &len);
	ASSERT_LE(0, sac);
	EXPECT_EQ(sizeof(struct sockaddr_in), len);
	EXPECT_EQ(AF_INET, ((struct sockaddr *)&ss)->sa_family);
	EXPECT_EQ(0xff, ((unsigned char *)&ss)[4]);
	cac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
	ASSERT_LE(0, cac);
	EXPECT_LE(0, rdmashare_accept_peer(s, l, 20000, NULL, NULL));
	rdmashare_close(c);
	rdmashare_close(s);
}

TEST_HARNESS_MAIN

// SPDX-License-Identifier: GPL-2.0
/*
 * libps, the parameter server (userlib/ps/), over its sockets transport
 * (plain TCP, and under rdmashare-run, where its connections are AC
 * files), its rdmashare transport and its verbs transport.
 *
 *  - wire_roundtrip: every op's header, the roster and both address
 *    families decode to what was encoded, and only canonical bytes decode.
 *  - wire_malformed: truncated, bad magic, version, op, flags, sender,
 *    status, a length over the limit or not the op's, a key out of range,
 *    an offset past the key, rosters out of range: each refused with its
 *    errno; then 20000 random mutations of valid headers, none accepted
 *    unless it is canonical.
 *  - wire_server_drops: a live server closes connections that send a bad
 *    magic, a bad op, a length over its limit, a truncated header, a key
 *    out of range or a push before any HELLO, and still serves a whole
 *    job after them; a worker
 *    that sends a key outside the server's range is dropped and the server
 *    fails with -EPROTO.
 *  - wire_worker_rejects: a fake server 0 answering a worker's HELLO with
 *    a roster of no servers, or a bad magic: ps_worker_create() fails with
 *    -EPROTO; with a roster cut short by the end of the connection, with
 *    -ECONNRESET.
 *  - ring_unalloc: the rdmashare transport's send ring: the newest
 *    allocation taken back after older ones were freed leaves the ring
 *    whole (no stale copy of it restored).
 *  - shard_covers: for S 1..7 and many key_max, big_bound, sizes: the key
 *    ranges partition the keys, every key's server is in its range, a
 *    key's parts cover each of its elements exactly once, and each server
 *    finds its own part (ps_shard_find) as the worker cuts it.
 *  - sgd_rank_order: the sync aggregator gives the bits of the sequential
 *    rank-order computation for all 120 arrival orders of 5 workers, with
 *    values for which an arrival-order sum differs.
 *  - native_fini: over the rdmashare transport, a node's file closed with a
 *    SEND and a CLOSE outstanding (and one with a connection and its
 *    listener closed) waits for their completions, not its 5 s limit; the
 *    peer gets the message whole, then the end.
 *  - native_shared_ready: over the rdmashare transport, two connections of
 *    one file (one descriptor): bytes for the first that arrive after its
 *    ready() said nothing and are reaped by the second's ready() make that
 *    one say true, so that a node asks again and does not sleep with them
 *    filed (as ps-train's epoch between two guests hung).
 *  - verbs_wakeup: 300 ping-pongs over the verbs transport, each end
 *    sleeping in poll() on its descriptor once ready() says nothing is
 *    there, as a node does: every message must wake it (no poll() of 3 s
 *    times out).
 *  - job_pull_waits: a pull for version 0 answers at once; one for
 *    version 1 (and the push of iteration 0) stays pending while the other
 *    worker has not pushed, then, polled with a timeout of 0, gets version
 *    1's values.
 *  - kill.{tcp,native,verbs}.{worker,server}: SIGKILL a worker (1 server,
 *    3 workers) or server 1 (2 servers, 2 workers) while the others wait,
 *    over each of libps's transports: every other worker's wait fails with
 *    an error (not -ETIMEDOUT) well within its timeout, and the servers'
 *    runs fail.
 *  - job.{sync,async}_{tcp,rdmashare}_*.run: 1 server + 2 workers and 2
 *    servers + 4 workers as processes, over TCP and under rdmashare-run
 *    (this program again, a role named by RS_PS_ROLE): sync SGD
 *    (pushpull of 6 keys, two of them split across the servers, iterations
 *    with random delays so that pushes arrive in any order) whose values
 *    every worker checks bit for bit against its own sequential
 *    computation; async SGD with exact arithmetic, every push applied
 *    once.  Under rdmashare-run, rdmashare's devices must have sent at
 *    least the job's payload, and TCP next to nothing.  No node's
 *    teardown (destroy) takes TEARDOWN_MAX or more.
 *  - job.{sync,async}_{native,verbs}_*.run: the same jobs over libps's
 *    rdmashare transport (its rings, an AC per connection; rdmashare's
 *    devices must have sent the payload, TCP next to nothing) and its
 *    verbs transport (an RC QP per connection).
 *  - train.transports: ps-train as train.tiny over sockets, rdmashare and
 *    verbs: the same final hash and losses, bit for bit.
 *  - train.bench_smoke: ps-bench, 2 servers and 2 workers, briefly over
 *    each transport: it runs and reports a goodput.
 *  - train.tiny: ps-train, an MLP (784-16-10) on 1200 Fashion-MNIST
 *    samples for one epoch, 2 servers (the first layer split) and 2
 *    workers, each node a process of its own (--server, --worker): the
 *    test loss falls, accuracy passes 0.4, and the final
 *    weights' FNV-1a hash is the same over TCP and under rdmashare-run,
 *    where rdmashare carried worker 0's traffic at least.
 */
#include <arpa/inet.h>
#include <libgen.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include "common.h"
#include "ps/ps.h"
#include "ps/ps_int.h"

#include "kselftest_harness.h"

#define PORT		8800
#define WAIT_MS		20000
/*
 * A node's teardown (its SHUTDOWN, closing its connections, letting what
 * it sent go out) takes a few round trips: seconds only when it waits for
 * something that never comes.  Below the rdmashare transport's 5 s limit
 * on that wait, well above a teardown in an emulated guest.
 */
#define TEARDOWN_MAX	4.0

static const char *test_ip(void)
{
	return getenv("RS_IP") ?: "127.0.0.1";
}

/* ---- wire format ---- */

static const struct ps_limits lim = {
	.max_msg = 1 << 20, .key_max = 1000, .num_servers = 4, .num_workers = 8,
};

static void valid_msg(struct ps_msg *m, uint8_t op, bool resp)
{
	memset(m, 0, sizeof(*m));
	m->magic = PS_MAGIC;
	m->version = PS_WIRE_VERSION;
	m->op = op;
	m->flags = resp ? PS_F_RESP : PS_F_WORKER;
	m->sender = resp ? 3 : 7;
	m->req_id = 0xdeadbeef;
	if (op >= PS_OP_INIT && op <= PS_OP_PUSHPULL) {
		m->key = 999;
		m->iter = 0x123456789abcull;
		m->total = 100;
		m->offset = 60;
		if (resp ? op == PS_OP_PULL || op == PS_OP_PUSHPULL : op != PS_OP_PULL)
			m->length = 40 * sizeof(float);
	}
}

TEST(wire_roundtrip)
{
	uint8_t buf[PS_HDR_LEN], buf2[PS_HDR_LEN], rb[PS_ROSTER_LEN + 3 * PS_ADDR_LEN];
	struct sockaddr_storage addrs[3], got[PS_MAX_NODES];
	struct ps_roster r = {
		.num_servers = 3, .num_workers = 5, .mode = PS_ASYNC, .rank = 4, .lr = 0.125f,
		.big_bound = 77, .key_max = 1ull << 40, .addrs = addrs,
	}, r2 = { .addrs = got };
	struct sockaddr_in *s4 = (void *)&addrs[1];
	struct sockaddr_in6 *s6 = (void *)&addrs[2];
	struct ps_msg m, d;
	int op, resp;

	for (op = PS_OP_HELLO; op <= PS_OP_MAX; op++) {
		for (resp = 0; resp < 2; resp++) {
			valid_msg(&m, op, resp);
			if (resp && op == PS_OP_PUSH)
				m.status = -ESTALE;
			ps_msg_encode(&m, buf);
			ASSERT_EQ(0, ps_msg_decode(buf, sizeof(buf), &lim, &d)) {
				TH_LOG("op %d resp %d", op, resp);
			}
			EXPECT_EQ(0, memcmp(&m, &d, sizeof(m)));
			ps_msg_encode(&d, buf2);
			EXPECT_EQ(0, memcmp(buf, buf2, sizeof(buf)));
		}
	}
	/* Little-endian, field by field, whatever the host. */
	valid_msg(&m, PS_OP_PUSH, false);
	ps_msg_encode(&m, buf);
	EXPECT_EQ(0, memcmp(buf, "PSW1", 4));
	EXPECT_EQ(PS_OP_PUSH, buf[5]);
	EXPECT_EQ(0xef, buf[12]);
	EXPECT_EQ(0xde, buf[15]);
	EXPECT_EQ(0xe7, buf[16]);	/* key 999 */
	EXPECT_EQ(160, buf[40]);	/* 40 floats */

	memset(addrs, 0, sizeof(addrs));
	s4->sin_family = AF_INET;
	s4->sin_port = htons(4242);
	inet_pton(AF_INET, "10.1.2.3", &s4->sin_addr);
	s6->sin6_family = AF_INET6;
	s6->sin6_port = htons(65535);
	inet_pton(AF_INET6, "fd00::1:2", &s6->sin6_addr);
	ASSERT_EQ(sizeof(rb), ps_roster_len(3));
	ps_roster_encode(&r, rb);
	ASSERT_EQ(0, ps_roster_decode(rb, sizeof(rb), true, &r2));
	EXPECT_EQ(3, r2.num_servers);
	EXPECT_EQ(5, r2.num_workers);
	EXPECT_EQ(PS_ASYNC, r2.mode);
	EXPECT_EQ(4, r2.rank);
	EXPECT_EQ(0.125f, r2.lr);
	EXPECT_EQ(77, r2.big_bound);
	EXPECT_EQ(1ull << 40, r2.key_max);
	EXPECT_EQ(0, memcmp(&addrs[1], &got[1], sizeof(struct sockaddr_in)));
	EXPECT_EQ(0, memcmp(&addrs[2], &got[2], sizeof(struct sockaddr_in6)));
	/* The same roster is no server's: rank 4 of 3 servers. */
	EXPECT_EQ(-EPROTO, ps_roster_decode(rb, sizeof(rb), false, &r2));
}

/* Decode @m after @mutate changed it: the errno. */
static int decode_with(const struct ps_msg *m, size_t len)
{
	uint8_t buf[PS_HDR_LEN];
	struct ps_msg d;

	ps_msg_encode(m, buf);
	return ps_msg_decode(buf, len, &lim, &d);
}

TEST(wire_malformed)
{
	uint8_t buf[PS_HDR_LEN], rb[PS_ROSTER_LEN + 2 * PS_ADDR_LEN];
	struct sockaddr_storage addrs[2] = { 0 }, got[PS_MAX_NODES];
	struct ps_roster r = {
		.num_servers = 2, .num_workers = 2, .rank = 1, .lr = 1, .big_bound = 1,
		.key_max = 2, .addrs = addrs,
	}, r2 = { .addrs = got };
	struct sockaddr_in *s4 = (void *)&addrs[1];
	struct ps_msg m, d;
	unsigned int i, accepted = 0;

	valid_msg(&m, PS_OP_PUSH, false);
	ASSERT_EQ(0, decode_with(&m, PS_HDR_LEN));
	EXPECT_EQ(-EINVAL, decode_with(&m, PS_HDR_LEN - 1));
	EXPECT_EQ(-EINVAL, decode_with(&m, 0));

#define BAD(field, value, err) do {			\
		valid_msg(&m, PS_OP_PUSH, false);	\
		m.field = value;			\
		EXPECT_EQ(err, decode_with(&m, PS_HDR_LEN)) {	\
			TH_LOG(#field " = " #value);	\
		}					\
	} while (0)
	/* ps_msg_encode() writes magic and version itself: patch the bytes. */
	valid_msg(&m, PS_OP_PUSH, false);
	ps_msg_encode(&m, buf);
	buf[0] ^= 1;
	EXPECT_EQ(-EPROTO, ps_msg_decode(buf, sizeof(buf), &lim, &d));
	buf[0] ^= 1;
	buf[4] = PS_WIRE_VERSION + 1;
	EXPECT_EQ(-EPROTO, ps_msg_decode(buf, sizeof(buf), &lim, &d));
	BAD(op, 0, -EPROTO);
	BAD(op, PS_OP_MAX + 1, -EPROTO);
	BAD(op, 255, -EPROTO);
	BAD(flags, PS_F_WORKER | 0x4, -EPROTO);
	BAD(flags, 0x8000, -EPROTO);
	BAD(sender, 8, -EPROTO);			/* 8 workers */
	BAD(sender, UINT32_MAX, -EPROTO);		/* "any" outside a HELLO */
	BAD(status, -5, -EPROTO);			/* a request's status */
	BAD(length, (1 << 20) + 4, -EMSGSIZE);		/* over the limit */
	BAD(length, UINT32_MAX, -EMSGSIZE);
	BAD(length, 41 * sizeof(float), -EPROTO);	/* past the key's end */
	BAD(length, 39 * sizeof(float) + 1, -EPROTO);	/* not whole floats */
	BAD(length, 0, -EPROTO);			/* a push without values */
	BAD(key, 1000, -EPROTO);			/* key_max 1000 */
	BAD(key, UINT64_MAX, -EPROTO);
	BAD(offset, 100, -EPROTO);
	BAD(total, 0, -EPROTO);
	BAD(total, 99, -EPROTO);			/* 60 + 40 > 99 */
#undef BAD
	valid_msg(&m, PS_OP_PULL, false);
	m.length = 4;
	EXPECT_EQ(-EPROTO, decode_with(&m, PS_HDR_LEN));	/* a pull with a payload */
	valid_msg(&m, PS_OP_PULL, true);
	m.status = -ENOENT;
	EXPECT_EQ(-EPROTO, decode_with(&m, PS_HDR_LEN));	/* an error with values */
	m.length = 0;
	m.status = 1;
	EXPECT_EQ(-EPROTO, decode_with(&m, PS_HDR_LEN));
	m.status = -5000;
	EXPECT_EQ(-EPROTO, decode_with(&m, PS_HDR_LEN));
	valid_msg(&m, PS_OP_BARRIER, false);
	m.key = 1;
	EXPECT_EQ(-EPROTO, decode_with(&m, PS_HDR_LEN));	/* a key on a barrier */
	valid_msg(&m, PS_OP_SHUTDOWN, false);
	m.length = 4;
	EXPECT_EQ(-EPROTO, decode_with(&m, PS_HDR_LEN));

	/* Rosters: valid, then each field out of range. */
	s4->sin_family = AF_INET;
	s4->sin_port = htons(1);
	ps_roster_encode(&r, rb);
	ASSERT_EQ(0, ps_roster_decode(rb, sizeof(rb), false, &r2));
	EXPECT_EQ(-EPROTO, ps_roster_decode(rb, sizeof(rb) - 1, false, &r2));
	EXPECT_EQ(-EPROTO, ps_roster_decode(rb, 8, false, &r2));
	rb[PS_ROSTER_LEN + PS_ADDR_LEN] = 5;			/* family 5 */
	EXPECT_EQ(-EPROTO, ps_roster_decode(rb, sizeof(rb), false, &r2));
	s4->sin_port = 0;
	ps_roster_encode(&r, rb);
	EXPECT_EQ(-EPROTO, ps_roster_decode(rb, sizeof(rb), false, &r2));
	s4->sin_port = htons(1);
	r.num_servers = 0;
	ps_roster_encode(&r, rb);
	EXPECT_EQ(-EPROTO, ps_roster_decode(rb, sizeof(rb), false, &r2));
	r.num_servers = 2;
	ps_roster_encode(&r, rb);
	rb[0] = 3;						/* the length says 2 */
	EXPECT_EQ(-EPROTO, ps_roster_decode(rb, sizeof(rb), false, &r2));
	r.key_max = 1;						/* fewer keys than servers */
	ps_roster_encode(&r, rb);
	EXPECT_EQ(-EPROTO, ps_roster_decode(rb, sizeof(rb), false, &r2));
	r.key_max = 2;
	r.lr = NAN;
	ps_roster_encode(&r, rb);
	EXPECT_EQ(-EPROTO, ps_roster_decode(rb, sizeof(rb), false, &r2));
	r.lr = 1;
	r.rank = 0;						/* a server's rank 0 */
	ps_roster_encode(&r, rb);
	EXPECT_EQ(-EPROTO, ps_roster_decode(rb, sizeof(rb), false, &r2));

	/* Mutations: what decodes must be canonical (encodes to the same bytes). */
	srandom(20261206);
	for (i = 0; i < 20000; i++) {
		uint8_t again[PS_HDR_LEN];
		int k;

		valid_msg(&m, 1 + random() % PS_OP_MAX, random() & 1);
		ps_msg_encode(&m, buf);
		for (k = 1 + random() % 3; k; k--)
			buf[random() % PS_HDR_LEN] ^= 1 << (random() % 8);
		if (ps_msg_decode(buf, random() % 8 ? PS_HDR_LEN : random() % PS_HDR_LEN,
				  &lim, &d))
			continue;
		accepted++;
		ps_msg_encode(&d, again);
		ASSERT_EQ(0, memcmp(buf, again, PS_HDR_LEN));
		ASSERT_GE(lim.max_msg, d.length);
		if (d.op >= PS_OP_INIT && d.op <= PS_OP_PUSHPULL) {
			ASSERT_GT(lim.key_max, d.key);
			ASSERT_GT(d.total, d.offset);
			ASSERT_GE((uint64_t)d.total - d.offset, d.length / sizeof(float));
		}
	}
	TH_LOG("%u of 20000 mutations decode", accepted);
}

/* ---- sharding ---- */

/*
 * Key @key of @total elements: its parts cover every element once, in
 * order, none empty, and each server finds exactly its own.
 */
static void check_parts(struct __test_metadata *_metadata, uint64_t km, uint32_t S,
			uint32_t bound, uint64_t key, uint32_t total)
{
	struct ps_part parts[8], mine;
	uint32_t s, next = 0;
	int n, j;

	n = ps_shard(km, S, bound, key, total, parts);
	ASSERT_LE(1, n);
	ASSERT_GE((int)S, n);
	for (j = 0; j < n; j++) {
		ASSERT_EQ(next, parts[j].offset);
		ASSERT_LT(0, parts[j].len);
		ASSERT_LT(parts[j].server, S);
		if (j)
			ASSERT_LT(parts[j - 1].server, parts[j].server);
		next += parts[j].len;
	}
	ASSERT_EQ(total, next);
	if (total <= bound || S == 1) {
		ASSERT_EQ(1, n);
		ASSERT_EQ(ps_key_server(km, S, key), parts[0].server);
	} else {
		/* Split: on every server it can be. */
		ASSERT_EQ(total < S ? (int)total : (int)S, n);
	}
	for (s = 0, j = 0; s < S; s++) {
		bool has = ps_shard_find(km, S, bound, key, total, s, &mine);

		if (j < n && parts[j].server == s) {
			ASSERT_TRUE(has);
			ASSERT_EQ(parts[j].offset, mine.offset);
			ASSERT_EQ(parts[j].len, mine.len);
			j++;
		} else {
			ASSERT_FALSE(has);
		}
	}
}

/* The S ranges of @km partition it, none empty, and keys map into their own. */
static void check_ranges(struct __test_metadata *_metadata, uint64_t km, uint32_t S,
			 const uint64_t *keys, int nkeys)
{
	uint64_t lo, hi, prev = 0;
	uint32_t s;
	int i;

	for (s = 0; s < S; s++) {
		ps_key_range(km, S, s, &lo, &hi);
		ASSERT_EQ(prev, lo);
		ASSERT_LT(lo, hi);
		prev = hi;
	}
	ASSERT_EQ(km, prev);
	for (i = 0; i < nkeys; i++) {
		ps_key_range(km, S, ps_key_server(km, S, keys[i]), &lo, &hi);
		ASSERT_TRUE(keys[i] >= lo && keys[i] < hi);
	}
}

/*
 * The send ring's allocations: oldest freed first, the newest taken back
 * (a SEND that found no SQE) after older ones were freed meanwhile; the
 * ring must then be whole again, not kept full by a stale copy of it.
 */
TEST(ring_unalloc)
{
	struct ps_ring r = { .size = 4096 };
	long long a, b, c;
	uint32_t tail;

	a = ps_ring_alloc(&r, 1024);
	b = ps_ring_alloc(&r, 1024);
	ASSERT_EQ(0, a);
	ASSERT_EQ(1024, b);
	tail = r.tail;
	c = ps_ring_alloc(&r, 2048);
	ASSERT_EQ(2048, c);
	ASSERT_EQ(-1, ps_ring_alloc(&r, 64));
	/* While c waits for an SQE, the reap frees a and b; c goes back. */
	ps_ring_free(&r, a, 1024);
	ps_ring_free(&r, b, 1024);
	ps_ring_unalloc(&r, tail);
	EXPECT_EQ(0u, r.live);
	/* Nothing outstanding: the whole ring is there. */
	EXPECT_EQ(0, ps_ring_alloc(&r, 4096));
	/* Wrapped: the newest at 0, taken back, then what its tail was. */
	r = (struct ps_ring){ .size = 4096 };
	a = ps_ring_alloc(&r, 3072);
	b = ps_ring_alloc(&r, 512);
	ps_ring_free(&r, a, 3072);
	tail = r.tail;
	c = ps_ring_alloc(&r, 1024);
	ASSERT_EQ(0, c);
	ps_ring_unalloc(&r, tail);
	EXPECT_EQ(1u, r.live);
	EXPECT_EQ(3584, ps_ring_alloc(&r, 512));
	ps_ring_free(&r, b, 512);
	ps_ring_free(&r, 3584, 512);
	EXPECT_EQ(0u, r.live);
}

TEST(shard_covers)
{
	static const uint64_t key_maxes[] = { 1, 2, 3, 10, 64, 1000, 1ull << 33, UINT64_MAX };
	static const uint32_t bounds[] = { 1, 5, 100, UINT32_MAX };
	static const uint32_t totals[] = { 1, 2, 3, 5, 7, 99, 100, 101, 1000, 4097 };
	unsigned int ki, bi, ti, checked = 0;
	uint64_t km, keys[6];
	uint32_t S;
	int i;

	for (S = 1; S <= 7; S++) {
		for (ki = 0; ki < ARRAY_SIZE(key_maxes); ki++) {
			km = key_maxes[ki];
			if (km < S)
				continue;
			/* Both ends, the middle, and around the first range's end. */
			keys[0] = 0;
			keys[1] = km - 1;
			keys[2] = km / 2;
			keys[3] = km / S % km;
			keys[4] = (km / S ? km / S - 1 : 0) % km;
			keys[5] = km / 7 * 3 % km;
			check_ranges(_metadata, km, S, keys, 6);
			for (i = 0; i < 6; i++)
				for (bi = 0; bi < ARRAY_SIZE(bounds); bi++)
					for (ti = 0; ti < ARRAY_SIZE(totals); ti++, checked++)
						check_parts(_metadata, km, S, bounds[bi], keys[i],
							    totals[ti]);
		}
	}
	TH_LOG("%u key/size/server combinations", checked);
}

/* ---- sync SGD aggregation ---- */

#define AGG_W	5
#define AGG_LEN	64

/* Gradients whose sum depends on its order: magnitudes 1e-3 to 1e8. */
static float agg_grad(int rank, int i)
{
	static const float mag[AGG_W] = { 1e8f, 1.0f, -1e8f, 3e-3f, 7.5f };

	return mag[rank] * (1.0f + (float)((rank * 7 + i * 3) % 11) / 13.0f);
}

static bool next_perm(int *a, int n)
{
	int i = n - 2, j = n - 1, t;

	while (i >= 0 && a[i] >= a[i + 1])
		i--;
	if (i < 0)
		return false;
	while (a[j] <= a[i])
		j--;
	t = a[i], a[i] = a[j], a[j] = t;
	for (i++, j = n - 1; i < j; i++, j--)
		t = a[i], a[i] = a[j], a[j] = t;
	return true;
}

TEST(sgd_rank_order)
{
	float ref[AGG_LEN], w[AGG_LEN], arrival[AGG_LEN], sum, scale = 0.1f / AGG_W;
	int perm[AGG_W] = { 0, 1, 2, 3, 4 }, perms = 0, order_matters = 0, r, i, k;
	struct ps_agg agg;

	/* The sequential computation: rank-order sum, one update. */
	for (i = 0; i < AGG_LEN; i++) {
		sum = agg_grad(0, i);
		for (r = 1; r < AGG_W; r++)
			sum += agg_grad(r, i);
		ref[i] = (float)i / 3.0f - scale * sum;
	}
	ASSERT_EQ(0, ps_agg_init(&agg, AGG_W, AGG_LEN));
	do {
		for (i = 0; i < AGG_LEN; i++)
			w[i] = (float)i / 3.0f;
		for (k = 0; k < AGG_W; k++) {
			float *slot = ps_agg_slot(&agg, perm[k]);

			ASSERT_NE(NULL, slot);
			for (i = 0; i < AGG_LEN; i++)
				slot[i] = agg_grad(perm[k], i);
			ASSERT_EQ(k == AGG_W - 1, ps_agg_mark(&agg, perm[k]));
			/* A second push of the iteration has no slot. */
			ASSERT_EQ(NULL, ps_agg_slot(&agg, perm[k]));
		}
		ps_agg_apply(&agg, w, scale);
		ASSERT_EQ(0, memcmp(ref, w, sizeof(w))) {
			TH_LOG("arrival order %d %d %d %d %d", perm[0], perm[1], perm[2],
			       perm[3], perm[4]);
		}
		/* Would summing as they came give other bits? */
		for (i = 0; i < AGG_LEN; i++) {
			sum = agg_grad(perm[0], i);
			for (k = 1; k < AGG_W; k++)
				sum += agg_grad(perm[k], i);
			arrival[i] = (float)i / 3.0f - scale * sum;
		}
		order_matters += !!memcmp(ref, arrival, sizeof(w));
		perms++;
	} while (next_perm(perm, AGG_W));
	ps_agg_free(&agg);
	EXPECT_EQ(120, perms);
	/* The test could fail: most orders give other bits when summed as they come. */
	EXPECT_LT(60, order_matters);
}

/* ---- jobs: servers and workers as processes ---- */

/* A job's keys: sizes around big_bound, so that some are split. */
#define JOB_KEYS	6
#define JOB_KEY_MAX	64
#define JOB_BIG		600
static const uint64_t job_key[JOB_KEYS] = { 0, 9, 20, 33, 47, 63 };
static const uint32_t job_len[JOB_KEYS] = { 1, 7, 100, 601, 1000, 3001 };

struct job {
	unsigned int S, W;
	unsigned int port;
	enum ps_mode mode;
	unsigned int iters;
	float lr;
	const char *transport;	/* libps's; NULL: sockets */
};

static void job_config(const struct job *j, struct ps_config *cfg, int rank)
{
	*cfg = (struct ps_config){
		.transport = j->transport, .root_host = test_ip(), .root_port = j->port, .rank = rank,
		.num_servers = j->S, .num_workers = j->W, .mode = j->mode, .lr = j->lr,
		.key_max = JOB_KEY_MAX, .big_bound = JOB_BIG, .pipeline = 4,
		.timeout_ms = WAIT_MS,
	};
}

static float job_init(int k, uint32_t i)
{
	return (float)((job_key[k] * 31 + i) % 17) * 0.25f;
}

/*
 * Worker @r's gradient of iteration @t.  In sync jobs ranks 0 and 2 cancel
 * and rank 1's is lost beside them, so that a sum in another order than
 * the ranks' gives other bits; in async ones small integers, so that any
 * order of updates gives exact results.
 */
static float job_grad(const struct job *j, int r, unsigned int t, int k, uint32_t i)
{
	static const float mag[4] = { 1e8f, 1.0f, -1e8f, 3e-3f };
	int v = (int)(((r & 1) * 7 + t * 13 + job_key[k] * 3 + i * 5) % 23) - 11;

	return j->mode == PS_SYNC ? v * mag[r % 4] : (float)v;
}

static void fill_grads(const struct job *j, int r, unsigned int t, float **g)
{
	uint32_t i;
	int k;

	for (k = 0; k < JOB_KEYS; k++)
		for (i = 0; i < job_len[k]; i++)
			g[k][i] = job_grad(j, r, t, k, i);
}

/* The model after iteration @t, as one process computes it: rank order. */
static void job_step(const struct job *j, unsigned int t, float **ref)
{
	float scale = j->lr / j->W, sum;
	uint32_t i;
	unsigned int r;
	int k;

	for (k = 0; k < JOB_KEYS; k++) {
		for (i = 0; i < job_len[k]; i++) {
			sum = job_grad(j, 0, t, k, i);
			for (r = 1; r < j->W; r++)
				sum += job_grad(j, r, t, k, i);
			ref[k][i] -= scale * sum;
		}
	}
}

static float **vecs_new(void)
{
	float **v = calloc(JOB_KEYS, sizeof(*v));
	int k;

	for (k = 0; k < JOB_KEYS; k++)
		v[k] = calloc(job_len[k], sizeof(float));
	return v;
}

static uint64_t job_payload_bytes(const struct job *j)
{
	uint64_t n = 0;
	int k;

	for (k = 0; k < JOB_KEYS; k++)
		n += job_len[k] * sizeof(float);
	/* The init, then a push and a pull of every key per worker and iteration. */
	return n + n * 2 * j->W * j->iters;
}

/* A server of the job: exits 0, or with the errno that ended it. */
static int run_server(const struct job *j, int rank)
{
	struct ps_server *s;
	struct ps_config cfg;
	double t0;
	int ret;

	job_config(j, &cfg, rank);
	ret = ps_server_create(&cfg, &s);
	if (ret) {
		fprintf(stderr, "server %d: create: %s\n", rank, strerror(-ret));
		return -ret;
	}
	ret = ps_server_run(s);
	t0 = rs_now();
	ps_server_destroy(s);
	if (ret) {
		fprintf(stderr, "server %d: run: %s\n", rank, strerror(-ret));
		return -ret;
	}
	if (rs_now() - t0 > TEARDOWN_MAX) {
		fprintf(stderr, "server %d: destroy took %.2f s\n", rank, rs_now() - t0);
		return 150;
	}
	return 0;
}

/* Wait for @ids[0..n), all must succeed. */
static int wait_all(struct ps_worker *w, const int *ids, int n)
{
	int i, ret, first = 0;

	for (i = 0; i < n; i++) {
		ret = ids[i] < 0 ? ids[i] : ps_wait(w, ids[i], WAIT_MS);
		if (ret && !first)
			first = ret;
	}
	return first;
}

/*
 * A worker of the job: worker 0 creates the keys; each iteration every
 * worker pushes its gradients and pulls the update, after a random delay
 * so that the servers see the pushes in any order; sync values are
 * checked bit for bit, async ones at the end.
 */
static int run_worker(const struct job *j, int rank)
{
	float **ref = vecs_new(), **g = vecs_new(), **out = vecs_new();
	int ids[JOB_KEYS], k, ret, code = 0;
	uint64_t ver[JOB_KEYS];
	struct ps_worker *w;
	struct ps_config cfg;
	unsigned int t, r;
	double t0;
	uint32_t i;

	job_config(j, &cfg, rank);
	ret = ps_worker_create(&cfg, &w);
	if (ret) {
		fprintf(stderr, "worker %d: create: %s\n", rank, strerror(-ret));
		return 2;
	}
	for (k = 0; k < JOB_KEYS; k++)
		for (i = 0; i < job_len[k]; i++)
			ref[k][i] = job_init(k, i);
	if (!rank) {
		for (k = 0; k < JOB_KEYS; k++)
			ids[k] = ps_init(w, job_key[k], ref[k], job_len[k]);
		ret = wait_all(w, ids, JOB_KEYS);
		if (ret)
			goto fail;
	}
	ret = ps_barrier(w, WAIT_MS);
	if (ret)
		goto fail;
	srandom(rank * 1000 + j->S);
	for (t = 0; t < j->iters; t++) {
		fill_grads(j, rank, t, g);
		usleep(random() % 3000);
		for (k = 0; k < JOB_KEYS; k++)
			ids[k] = ps_pushpull(w, job_key[k], g[k], out[k], job_len[k], t, &ver[k]);
		ret = wait_all(w, ids, JOB_KEYS);
		if (ret)
			goto fail;
		if (j->mode != PS_SYNC)
			continue;
		job_step(j, t, ref);
		for (k = 0; k < JOB_KEYS; k++) {
			if (ver[k] != t + 1 || memcmp(ref[k], out[k], job_len[k] * sizeof(float))) {
				fprintf(stderr, "worker %d: key %d iteration %u: version %llu, "
					"values differ\n", rank, k, t, (unsigned long long)ver[k]);
				code = 5;
				goto out;
			}
		}
	}
	ret = ps_barrier(w, WAIT_MS);
	if (ret)
		goto fail;
	if (j->mode == PS_ASYNC) {
		/* Every push applied once, exactly: integers times a power of two. */
		for (t = 0; t < j->iters; t++)
			for (r = 0; r < j->W; r++)
				for (k = 0; k < JOB_KEYS; k++)
					for (i = 0; i < job_len[k]; i++)
						ref[k][i] -= j->lr / j->W * job_grad(j, r, t, k, i);
		for (k = 0; k < JOB_KEYS; k++)
			ids[k] = ps_pull(w, job_key[k], out[k], job_len[k], 0, &ver[k]);
		ret = wait_all(w, ids, JOB_KEYS);
		if (ret)
			goto fail;
		for (k = 0; k < JOB_KEYS; k++) {
			if (ver[k] != j->W * j->iters ||
			    memcmp(ref[k], out[k], job_len[k] * sizeof(float))) {
				fprintf(stderr, "worker %d: async key %d: version %llu, values differ\n",
					rank, k, (unsigned long long)ver[k]);
				code = 5;
				goto out;
			}
		}
	}
	/* Everybody checked before anybody leaves (a shutdown ends sync iterations). */
	ret = ps_barrier(w, WAIT_MS);
	if (ret)
		goto fail;
out:
	t0 = rs_now();
	ret = ps_worker_destroy(w);
	if (ret && !code) {
		fprintf(stderr, "worker %d: shutdown: %s\n", rank, strerror(-ret));
		code = 6;
	}
	if (!code && rs_now() - t0 > TEARDOWN_MAX) {
		fprintf(stderr, "worker %d: destroy took %.2f s\n", rank, rs_now() - t0);
		code = 7;
	}
	return code;
fail:
	fprintf(stderr, "worker %d: %s\n", rank, strerror(-ret));
	ps_worker_destroy(w);
	return 3;
}

/* A role, as the environment names it: "s|w rank S W port mode iters transport". */
#define ROLE_ENV	"RS_PS_ROLE"

static int run_role(const char *spec)
{
	struct job j = { .lr = 0.5f };
	char kind, tr[16];
	unsigned int mode;
	int rank;

	if (sscanf(spec, "%c %d %u %u %u %u %u %15s", &kind, &rank, &j.S, &j.W, &j.port, &mode,
		   &j.iters, tr) != 8)
		return 100;
	j.mode = mode;
	j.transport = tr;
	return kind == 's' ? run_server(&j, rank) : run_worker(&j, rank);
}

__attribute__((constructor)) static void role_main(void)
{
	const char *spec = getenv(ROLE_ENV);

	if (spec)
		_exit(run_role(spec));
}

static char self_exe[512], run_path[700];

static void find_paths(void)
{
	ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	char dir[512];

	if (n <= 0)
		return;
	self_exe[n] = 0;
	snprintf(dir, sizeof(dir), "%s", self_exe);
	snprintf(run_path, sizeof(run_path), "%s/../../userlib/build/rdmashare-run",
		 dirname(dir));
}

/* Start a role: in a child as it is, or this program again under rdmashare-run. */
static pid_t start_role(const struct job *j, char kind, int rank, bool preload)
{
	char spec[128];
	pid_t pid;

	snprintf(spec, sizeof(spec), "%c %d %u %u %u %u %u %s", kind, rank, j->S, j->W, j->port,
		 j->mode, j->iters, j->transport ?: "sockets");
	pid = fork();
	if (pid)
		return pid;
	if (!preload)
		_exit(run_role(spec));
	setenv(ROLE_ENV, spec, 1);
	execl(run_path, run_path, self_exe, (char *)NULL);
	_exit(127);
}

/*
 * Wait for @n children at most @secs; the ones left are killed.  Their
 * exit statuses in @st, 200 + the signal that ended one.
 */
static void reap_all(pid_t *pids, int *st, int n, double secs)
{
	double end = rs_now() + secs;
	int i, left = n, status;

	for (i = 0; i < n; i++)
		st[i] = -1;
	while (left && rs_now() < end) {
		for (i = 0; i < n; i++) {
			if (st[i] != -1 || waitpid(pids[i], &status, WNOHANG) != pids[i])
				continue;
			st[i] = WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
			left--;
		}
		usleep(10000);
	}
	for (i = 0; i < n; i++) {
		if (st[i] == -1) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
	}
}

/*
 * Field @name of /proc/net/snmp's @proto (a line of names, then one of
 * values); -1 if there is none.
 */
static long snmp_get(const char *proto, const char *name)
{
	char names[2048], vals[2048], *np, *vp, *n, *v;
	size_t plen = strlen(proto);
	FILE *f = fopen("/proc/net/snmp", "r");
	long ret = -1;

	if (!f)
		return -1;
	while (ret < 0 && fgets(names, sizeof(names), f) && fgets(vals, sizeof(vals), f)) {
		if (strncmp(names, proto, plen) || names[plen] != ':')
			continue;
		n = strtok_r(names, " \n", &np);
		v = strtok_r(vals, " \n", &vp);
		while (n && v && strcmp(n, name)) {
			n = strtok_r(NULL, " \n", &np);
			v = strtok_r(NULL, " \n", &vp);
		}
		ret = n && v ? atol(v) : -2;
	}
	fclose(f);
	return ret < 0 ? -1 : ret;
}

static long tcp_out_segs(void)
{
	return snmp_get("Tcp", "OutSegs");
}

/*
 * Wait up to 20 s until rdmashare listens on @port.  A preloaded listen()
 * opens the TCP listener before rdmashare's, and a client that connects
 * in between goes over TCP (rdmashare refused it): under rdmashare-run the
 * nodes that connect to server 0 start only once both listen.
 */
static bool rs_listening(unsigned int port)
{
	return !rs_sh("for i in $(seq 200); do grep -qw %u "
		      "/sys/kernel/debug/rdmashare/listeners 2>/dev/null && exit 0; "
		      "sleep 0.1; done; exit 1", port);
}

/* An RDMA device for the verbs transport (Soft-RoCE in the guests). */
static bool has_rdma_device(void)
{
	return !rs_sh("ls /sys/class/infiniband | grep -q .");
}

FIXTURE(job) {
};

FIXTURE_VARIANT(job) {
	unsigned int S, W;
	enum ps_mode mode;
	bool preload;
	unsigned int port;
	const char *transport;
};

FIXTURE_VARIANT_ADD(job, sync_tcp_1s2w) { 1, 2, PS_SYNC, false, PORT + 10, NULL };
FIXTURE_VARIANT_ADD(job, sync_tcp_2s4w) { 2, 4, PS_SYNC, false, PORT + 11, NULL };
FIXTURE_VARIANT_ADD(job, async_tcp_2s4w) { 2, 4, PS_ASYNC, false, PORT + 12, NULL };
FIXTURE_VARIANT_ADD(job, sync_rdmashare_1s2w) { 1, 2, PS_SYNC, true, PORT + 13, NULL };
FIXTURE_VARIANT_ADD(job, sync_rdmashare_2s4w) { 2, 4, PS_SYNC, true, PORT + 14, NULL };
FIXTURE_VARIANT_ADD(job, async_rdmashare_2s4w) { 2, 4, PS_ASYNC, true, PORT + 15, NULL };
FIXTURE_VARIANT_ADD(job, sync_native_1s2w) { 1, 2, PS_SYNC, false, PORT + 40, "rdmashare" };
FIXTURE_VARIANT_ADD(job, sync_native_2s4w) { 2, 4, PS_SYNC, false, PORT + 41, "rdmashare" };
FIXTURE_VARIANT_ADD(job, async_native_2s4w) { 2, 4, PS_ASYNC, false, PORT + 42, "rdmashare" };
FIXTURE_VARIANT_ADD(job, sync_verbs_1s2w) { 1, 2, PS_SYNC, false, PORT + 43, "verbs" };
FIXTURE_VARIANT_ADD(job, sync_verbs_2s4w) { 2, 4, PS_SYNC, false, PORT + 44, "verbs" };
FIXTURE_VARIANT_ADD(job, async_verbs_2s4w) { 2, 4, PS_ASYNC, false, PORT + 45, "verbs" };

FIXTURE_SETUP(job)
{
	find_paths();
}

FIXTURE_TEARDOWN(job)
{
}

TEST_F_TIMEOUT(job, run, 180)
{
	struct job j = {
		.S = variant->S, .W = variant->W, .port = variant->port, .mode = variant->mode,
		.iters = 6, .lr = 0.5f, .transport = variant->transport,
	};
	pid_t pids[16];
	int st[16], n = 0, i;
	long rs0 = 0, tcp0, rs, tcp;
	bool module = rs_path_exists("/dev/rdmashare"), ok = true;
	bool native = j.transport && !strcmp(j.transport, "rdmashare");
	double t0;

	if (native && !module)
		SKIP(return, "no /dev/rdmashare");
	if (j.transport && !strcmp(j.transport, "verbs") && !has_rdma_device())
		SKIP(return, "no RDMA device");
	if (variant->preload)
		ASSERT_EQ(0, access(run_path, X_OK));
	if ((variant->preload || native) && module)
		rs0 = rs_devices_sum("stats/tx_bytes");
	tcp0 = tcp_out_segs();
	t0 = rs_now();
	pids[n++] = start_role(&j, 's', 0, variant->preload);
	if (variant->preload && module)
		EXPECT_TRUE(rs_listening(j.port));
	for (i = 1; i < (int)j.S; i++)
		pids[n++] = start_role(&j, 's', i, variant->preload);
	for (i = 0; i < (int)j.W; i++)
		pids[n++] = start_role(&j, 'w', i, variant->preload);
	reap_all(pids, st, n, 150);
	for (i = 0; i < n; i++) {
		if (st[i])
			TH_LOG("%s %d exited %d", i < (int)j.S ? "server" : "worker",
			       i < (int)j.S ? i : i - (int)j.S, st[i]);
		ok &= !st[i];
	}
	ASSERT_TRUE(ok);
	TH_LOG("%.2f s, %llu payload bytes", rs_now() - t0,
	       (unsigned long long)job_payload_bytes(&j));
	if (!variant->preload && !native)
		return;
	if (!module)
		SKIP(return, "no /dev/rdmashare: the preloaded job ran over TCP");
	rs = rs_devices_sum("stats/tx_bytes") - rs0;
	tcp = tcp_out_segs() - tcp0;
	TH_LOG("%ld bytes over rdmashare, %ld TCP segments", rs, tcp);
	EXPECT_LE((long)job_payload_bytes(&j), rs);
	/* Over TCP each request and answer would be a segment at least. */
	EXPECT_GT(32, tcp);
}

/* ---- one key, parties run by hand ---- */

#define K_KEY	47
#define K_LEN	1000	/* over JOB_BIG: split between two servers */

static float k_grad(int rank, uint32_t i)
{
	return (float)((int)((rank * 5 + i * 3) % 19) - 9) * (rank ? 1e-3f : 3.0f);
}

/* A child running @fn(@j, @arg), without exec. */
static pid_t fork_fn(int (*fn)(const struct job *j, int arg), const struct job *j, int arg)
{
	pid_t pid = fork();

	if (!pid)
		_exit(fn(j, arg));
	return pid;
}

/* A worker of @j with @rank, past the first barrier; NULL on failure. */
static struct ps_worker *k_worker(const struct job *j, int rank, bool init)
{
	float vals[K_LEN];
	struct ps_worker *w;
	struct ps_config cfg;
	uint32_t i;

	job_config(j, &cfg, rank);
	if (ps_worker_create(&cfg, &w))
		return NULL;
	for (i = 0; i < K_LEN; i++)
		vals[i] = (float)i / 8;
	if ((init && ps_wait(w, ps_init(w, K_KEY, vals, K_LEN), WAIT_MS)) ||
	    ps_barrier(w, WAIT_MS)) {
		ps_worker_destroy(w);
		return NULL;
	}
	return w;
}

/* Worker 1 of pull_waits: pushes iteration 0 once the parent writes to @fd. */
static int gated_pusher(const struct job *j, int fd)
{
	struct ps_worker *w = k_worker(j, 1, false);
	float g[K_LEN];
	uint32_t i;
	char c;

	if (!w)
		return 2;
	for (i = 0; i < K_LEN; i++)
		g[i] = k_grad(1, i);
	if (read(fd, &c, 1) != 1 || ps_wait(w, ps_push(w, K_KEY, g, K_LEN, 0), WAIT_MS) ||
	    ps_barrier(w, WAIT_MS))
		return 3;
	return ps_worker_destroy(w) ? 4 : 0;
}

TEST(job_pull_waits)
{
	struct job j = { .S = 1, .W = 2, .port = PORT + 20, .mode = PS_SYNC, .lr = 0.5f };
	float g[K_LEN], out[K_LEN], ref[K_LEN], v0[K_LEN];
	int gate[2], st[2], push, pull, now, ret;
	struct ps_worker *w;
	double t0;
	uint64_t ver = 99;
	pid_t pids[2];
	uint32_t i;

	ASSERT_EQ(0, pipe(gate));
	pids[0] = start_role(&j, 's', 0, false);
	pids[1] = fork_fn(gated_pusher, &j, gate[0]);
	w = k_worker(&j, 0, true);
	ASSERT_NE(NULL, w);
	/* Version 0 is there: a pull for it answers at once. */
	now = ps_pull(w, K_KEY, v0, K_LEN, 0, &ver);
	ASSERT_EQ(0, ps_wait(w, now, WAIT_MS));
	EXPECT_EQ(0, ver);
	for (i = 0; i < K_LEN; i++) {
		g[i] = k_grad(0, i);
		ref[i] = v0[i] - j.lr / j.W * (g[i] + k_grad(1, i));
	}
	push = ps_push(w, K_KEY, g, K_LEN, 0);
	pull = ps_pull(w, K_KEY, out, K_LEN, 1, &ver);
	ASSERT_LT(0, push);
	ASSERT_LT(0, pull);
	/* Worker 1 has not pushed: neither the pull of version 1 nor the push answers. */
	EXPECT_EQ(-ETIMEDOUT, ps_wait(w, pull, 500));
	EXPECT_EQ(-ETIMEDOUT, ps_wait(w, push, 100));
	ASSERT_EQ(1, write(gate[1], "g", 1));
	/* A timeout of 0 polls: the answer comes in one of these. */
	for (t0 = rs_now(); (ret = ps_wait(w, pull, 0)) == -ETIMEDOUT && rs_now() - t0 < 20;)
		usleep(1000);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(1, ver);
	EXPECT_EQ(0, memcmp(ref, out, sizeof(out)));
	EXPECT_EQ(0, ps_wait(w, push, WAIT_MS));
	/* Gone once waited for. */
	EXPECT_EQ(-ENOENT, ps_wait(w, push, 0));
	EXPECT_EQ(0, ps_barrier(w, WAIT_MS));
	EXPECT_EQ(0, ps_worker_destroy(w));
	reap_all(pids, st, 2, 30);
	EXPECT_EQ(0, st[0]);
	EXPECT_EQ(0, st[1]);
}

/* Worker 1 of kill_worker: tells @fd it is in, then waits to be killed. */
static int victim(const struct job *j, int fd)
{
	struct ps_worker *w = k_worker(j, 1, false);

	if (!w || write(fd, "r", 1) != 1)
		return 2;
	for (;;)
		pause();
}

/*
 * Wait for @id with a 5 s timeout: 0 if it failed with an error other
 * than -ETIMEDOUT within 4 s, as a lost node must make it.
 */
static int fails_fast(struct ps_worker *w, int id, int *err)
{
	double t0 = rs_now();
	int ret = ps_wait(w, id, 5000);

	if (err)
		*err = ret;
	if (!ret)
		return 10;
	if (ret == -ETIMEDOUT)
		return 11;
	return rs_now() - t0 < 4 ? 0 : 12;
}

/* A worker whose push of iteration 0 must fail once another node is lost. */
static int failing_pusher(const struct job *j, int rank)
{
	struct ps_worker *w = k_worker(j, rank, false);
	float g[K_LEN] = { 0 };
	int ret;

	if (!w)
		return 2;
	ret = fails_fast(w, ps_push(w, K_KEY, g, K_LEN, 0), NULL);
	ps_worker_destroy(w);
	return ret;
}

/* A worker whose pull of version 1 must fail once another node is lost. */
static int failing_puller(const struct job *j, int rank)
{
	struct ps_worker *w = k_worker(j, rank, false);
	float out[K_LEN];
	int ret;

	if (!w)
		return 2;
	ret = fails_fast(w, ps_pull(w, K_KEY, out, K_LEN, 1, NULL), NULL);
	ps_worker_destroy(w);
	return ret;
}

/* Make progress on @tc's transport until it is ready, at most @ms. */
static bool tr_wait_ready(const struct ps_transport *tr, struct ps_tr_conn *tc, int ms)
{
	struct pollfd p = { .fd = tr->poll_fd(tc), .events = POLLIN };
	double end = rs_now() + ms / 1000.0;

	while (!tr->ready(tc)) {
		if (rs_now() > end)
			return false;
		poll(&p, 1, 10);
	}
	return true;
}

/* Read @len bytes from @tc into @buf; the last recv()'s result. */
static ssize_t tr_read_all(const struct ps_transport *tr, struct ps_tr_conn *tc, char *buf,
			   size_t len)
{
	size_t got = 0;
	ssize_t r = 0;

	while (got < len) {
		if (!tr_wait_ready(tr, tc, WAIT_MS))
			return -ETIMEDOUT;
		r = tr->recv(tc, buf + got, len - got);
		if (r == -EAGAIN)
			continue;
		if (r <= 0)
			return r;
		got += r;
	}
	return r;
}

/* @x's fini, timed: its seconds. */
static double tr_fini_secs(const struct ps_transport *tr, struct ps_tr_ctx *x)
{
	double t0 = rs_now();

	tr->fini(x, WAIT_MS);
	return rs_now() - t0;
}

#define FINI_MSG	3000

/*
 * The rdmashare transport's end of a node: a file closed (fini) with a
 * SEND and a CLOSE still outstanding waits for their completions, and no
 * longer than they take (not its 5 s limit); the peer gets the message,
 * then the end.
 */
TEST(native_fini)
{
	const struct ps_transport *tr = ps_transport_find("rdmashare");
	char msg[FINI_MSG], got[FINI_MSG];
	struct iovec iov = { msg, sizeof(msg) };
	struct ps_tr_conn *l, *a, *b;
	struct ps_tr_ctx *xa, *xb;
	struct sockaddr_storage ss;
	socklen_t len;
	double t;
	int i;

	if (!rs_path_exists("/dev/rdmashare"))
		SKIP(return, "no /dev/rdmashare");
	ASSERT_NE(NULL, tr);
	ASSERT_EQ(0, ps_resolve(test_ip(), PORT + 54, AF_INET, &ss, &len));
	ASSERT_EQ(0, tr->open(1 << 20, &xa));
	ASSERT_EQ(0, tr->open(1 << 20, &xb));
	ASSERT_EQ(0, tr->listen(xa, (struct sockaddr *)&ss, len, &l));
	ASSERT_EQ(0, tr->connect(xb, (struct sockaddr *)&ss, len, WAIT_MS, &b));
	for (i = 0; i < FINI_MSG; i++)
		msg[i] = i * 7 + 1;
	/* Sent, closed and the file gone at once: the SEND and the CLOSE outstanding. */
	ASSERT_EQ(FINI_MSG, tr->sendv(b, &iov, 1));
	tr->close(b);
	t = tr_fini_secs(tr, xb);
	TH_LOG("the sender's fini: %.3f s", t);
	EXPECT_GT(TEARDOWN_MAX, t);
	/* Its peer: the message, whole, then the end. */
	ASSERT_TRUE(tr_wait_ready(tr, l, WAIT_MS));
	ASSERT_EQ(0, tr->accept(l, &a));
	ASSERT_LT(0, tr_read_all(tr, a, got, FINI_MSG));
	EXPECT_EQ(0, memcmp(msg, got, FINI_MSG));
	EXPECT_EQ(0, tr_read_all(tr, a, got, 1));
	/* A connection and a listener closed: the same. */
	tr->close(a);
	tr->close(l);
	t = tr_fini_secs(tr, xa);
	TH_LOG("the receiver's fini: %.3f s", t);
	EXPECT_GT(TEARDOWN_MAX, t);
}

#define SHARED_MSG	100

/*
 * The rdmashare transport's connections share their file's descriptor, and
 * ready() on any of them reaps the CQ for all: b1's bytes, come after
 * b1's ready() said nothing, are taken off the descriptor by b2's.  A node
 * that asked b1, then b2, then slept in poll() would sleep with them filed,
 * unless b2's ready() says so.
 */
TEST(native_shared_ready)
{
	const struct ps_transport *tr = ps_transport_find("rdmashare");
	struct ps_tr_conn *l, *a1, *a2, *b1, *b2;
	char msg[SHARED_MSG], got[SHARED_MSG];
	struct iovec iov = { msg, 1 };
	struct ps_tr_ctx *xa, *xb;
	struct sockaddr_storage ss;
	struct pollfd p;
	socklen_t len;
	bool r2;

	if (!rs_path_exists("/dev/rdmashare"))
		SKIP(return, "no /dev/rdmashare");
	ASSERT_NE(NULL, tr);
	ASSERT_EQ(0, ps_resolve(test_ip(), PORT + 56, AF_INET, &ss, &len));
	ASSERT_EQ(0, tr->open(1 << 20, &xa));
	ASSERT_EQ(0, tr->open(1 << 20, &xb));
	ASSERT_EQ(0, tr->listen(xa, (struct sockaddr *)&ss, len, &l));
	/* Two connections of xb's file; a byte each, so that xa accepts them. */
	memset(msg, 0x5a, sizeof(msg));
	ASSERT_EQ(0, tr->connect(xb, (struct sockaddr *)&ss, len, WAIT_MS, &b1));
	ASSERT_EQ(1, tr->sendv(b1, &iov, 1));
	ASSERT_TRUE(tr_wait_ready(tr, l, WAIT_MS));
	ASSERT_EQ(0, tr->accept(l, &a1));
	ASSERT_EQ(1, tr_read_all(tr, a1, got, 1));
	ASSERT_EQ(0, tr->connect(xb, (struct sockaddr *)&ss, len, WAIT_MS, &b2));
	ASSERT_EQ(1, tr->sendv(b2, &iov, 1));
	ASSERT_TRUE(tr_wait_ready(tr, l, WAIT_MS));
	ASSERT_EQ(0, tr->accept(l, &a2));
	ASSERT_EQ(1, tr_read_all(tr, a2, got, 1));
	/* xb's SENDs completed and reaped, 100 ms with nothing: none for b1 or b2. */
	p = (struct pollfd){ .fd = tr->poll_fd(b1), .events = POLLIN };
	do {
		while (tr->ready(b1) || tr->ready(b2))
			;
	} while (poll(&p, 1, 100) == 1);
	ASSERT_FALSE(tr->ready(b1));
	iov.iov_len = SHARED_MSG;
	ASSERT_EQ(SHARED_MSG, tr->sendv(a1, &iov, 1));
	/* In xb's CQ, not reaped: the descriptor says so. */
	ASSERT_EQ(1, poll(&p, 1, WAIT_MS));
	r2 = tr->ready(b2);
	p.revents = 0;
	EXPECT_TRUE(r2 || poll(&p, 1, 0) == 1) {
		TH_LOG("b2's ready() took b1's bytes off the descriptor and said nothing");
	}
	ASSERT_TRUE(tr->ready(b1));
	EXPECT_EQ(SHARED_MSG, tr_read_all(tr, b1, got, SHARED_MSG));
	EXPECT_EQ(0, memcmp(msg, got, SHARED_MSG));
	tr->close(a1);
	tr->close(a2);
	tr->close(l);
	tr->close(b1);
	tr->close(b2);
	tr->fini(xa, WAIT_MS);
	tr->fini(xb, WAIT_MS);
}

#define WAKE_ROUNDS	300
#define WAKE_MS		3000

/*
 * Wait as ps_node_progress() does: ready(), else sleep in poll() on the
 * descriptor.  False when the wait took WAKE_MS (a message crosses one
 * host in milliseconds), with the poll()'s result and ready()'s after it.
 */
static bool tr_woken(struct __test_metadata *_metadata, const struct ps_transport *tr,
		     struct ps_tr_conn *tc)
{
	struct pollfd p = { .fd = tr->poll_fd(tc), .events = POLLIN };
	int ret;

	while (!tr->ready(tc)) {
		ret = poll(&p, 1, WAKE_MS);
		if (ret <= 0) {
			TH_LOG("poll() gave %d after %d ms; ready() now says %d", ret, WAKE_MS,
			       tr->ready(tc));
			return false;
		}
	}
	return true;
}

/*
 * Send (@out) or receive @len bytes on @tc, waiting as above for room or
 * for bytes.
 */
static bool tr_xfer_woken(struct __test_metadata *_metadata, const struct ps_transport *tr,
			  struct ps_tr_conn *tc, char *buf, size_t len, bool out)
{
	struct iovec iov;
	ssize_t r;

	while (len) {
		iov = (struct iovec){ buf, len };
		r = out ? tr->sendv(tc, &iov, 1) : tr->recv(tc, buf, len);
		if (r == -EAGAIN) {
			if (!tr_woken(_metadata, tr, tc))
				return false;
			continue;
		}
		if (r <= 0)
			return false;
		buf += r;
		len -= r;
	}
	return true;
}

/*
 * The echoing end of verbs_wakeup, a process of its own (rdma_cm's connect
 * waits for the accept): listen on @ss, say so on @ready, echo WAKE_ROUNDS
 * messages.  Its exit status: 0, or 1 + the round it failed in.
 */
static int wakeup_echo(struct __test_metadata *_metadata, const struct ps_transport *tr,
		       const struct sockaddr_storage *ss, socklen_t len, int ready)
{
	struct ps_tr_conn *l, *a;
	struct pollfd p;
	struct ps_tr_ctx *x;
	char buf[64];
	int i, ret;

	if (tr->open(1 << 20, &x) || tr->listen(x, (const struct sockaddr *)ss, len, &l) ||
	    write(ready, "", 1) != 1)
		return 1;
	/* A listener is ready when its descriptor is. */
	p = (struct pollfd){ .fd = tr->poll_fd(l), .events = POLLIN };
	while ((ret = tr->accept(l, &a)) == -EAGAIN)
		if (poll(&p, 1, WAIT_MS) <= 0)
			return 1;
	if (ret)
		return 1;
	for (i = 0; i < WAKE_ROUNDS; i++)
		if (!tr_xfer_woken(_metadata, tr, a, buf, sizeof(buf), false) ||
		    !tr_xfer_woken(_metadata, tr, a, buf, sizeof(buf), true))
			return 2 + i;
	/* Until the other end closes. */
	tr_xfer_woken(_metadata, tr, a, buf, 1, false);
	tr->close(a);
	tr->close(l);
	tr->fini(x, WAIT_MS);
	return 0;
}

/*
 * The verbs transport's wake-ups: WAKE_ROUNDS ping-pongs with another
 * process, each end waiting in poll() on its descriptor once ready() says
 * nothing is there, as a node does.  A completion that comes while
 * ready() arms the CQ must still wake the next poll() (the lost wake-up
 * behind the verbs jobs' start-up timeouts: the event taken after the
 * arming left the CQ disarmed).
 */
TEST(verbs_wakeup)
{
	const struct ps_transport *tr = ps_transport_find("verbs");
	char msg[64], got[64], c;
	struct sockaddr_storage ss;
	struct ps_tr_conn *b;
	struct ps_tr_ctx *x;
	int i, p[2], st;
	socklen_t len;
	pid_t pid;

	if (!has_rdma_device())
		SKIP(return, "no RDMA device");
	ASSERT_NE(NULL, tr);
	ASSERT_EQ(0, ps_resolve(test_ip(), PORT + 55, AF_INET, &ss, &len));
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(p[0]);
		_exit(wakeup_echo(_metadata, tr, &ss, len, p[1]));
	}
	close(p[1]);
	ASSERT_EQ(1, read(p[0], &c, 1));
	close(p[0]);
	ASSERT_EQ(0, tr->open(1 << 20, &x));
	ASSERT_EQ(0, tr->connect(x, (struct sockaddr *)&ss, len, WAIT_MS, &b));
	for (i = 0; i < WAKE_ROUNDS; i++) {
		memset(msg, i, sizeof(msg));
		ASSERT_TRUE(tr_xfer_woken(_metadata, tr, b, msg, sizeof(msg), true))
			TH_LOG("round %d", i);
		ASSERT_TRUE(tr_xfer_woken(_metadata, tr, b, got, sizeof(got), false))
			TH_LOG("round %d", i);
		ASSERT_EQ(0, memcmp(msg, got, sizeof(msg)));
	}
	tr->close(b);
	tr->fini(x, WAIT_MS);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));
}

/*
 * The kill tests, over each transport: a lost node reaches the others as
 * the end of a TCP connection, of an AC (its file closed by the exit) or
 * of an RC QP (rdma_cm's disconnect).  @port is kill.worker's, the next
 * one kill.server's.
 */
FIXTURE(kill) {
};

FIXTURE_VARIANT(kill) {
	const char *transport;
	unsigned int port;
};

FIXTURE_VARIANT_ADD(kill, tcp) { NULL, PORT + 21 };
FIXTURE_VARIANT_ADD(kill, native) { "rdmashare", PORT + 50 };
FIXTURE_VARIANT_ADD(kill, verbs) { "verbs", PORT + 52 };

FIXTURE_SETUP(kill)
{
	if (variant->transport && !strcmp(variant->transport, "rdmashare") &&
	    !rs_path_exists("/dev/rdmashare"))
		SKIP(return, "no /dev/rdmashare");
	if (variant->transport && !strcmp(variant->transport, "verbs") && !has_rdma_device())
		SKIP(return, "no RDMA device");
}

FIXTURE_TEARDOWN(kill)
{
}

TEST_F_TIMEOUT(kill, worker, 90)
{
	struct job j = { .S = 1, .W = 3, .port = variant->port, .mode = PS_SYNC, .lr = 0.5f,
			 .transport = variant->transport };
	int ready[2], st[3], err = 0;
	float g[K_LEN] = { 0 };
	struct ps_worker *w;
	pid_t pids[3];
	char c;

	ASSERT_EQ(0, pipe(ready));
	pids[0] = start_role(&j, 's', 0, false);
	pids[1] = fork_fn(victim, &j, ready[1]);
	pids[2] = fork_fn(failing_pusher, &j, 2);
	w = k_worker(&j, 0, true);
	ASSERT_NE(NULL, w);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	usleep(100000);
	ASSERT_EQ(0, kill(pids[1], SIGKILL));
	/* The iteration waits for worker 1, which is gone. */
	EXPECT_EQ(0, fails_fast(w, ps_push(w, K_KEY, g, K_LEN, 0), &err));
	TH_LOG("worker 0's push: %s", strerror(-err));
	/* Everything after fails at once with the same error. */
	EXPECT_EQ(err, ps_barrier(w, 1000));
	EXPECT_EQ(err, ps_worker_destroy(w));
	reap_all(pids, st, 3, 30);
	EXPECT_EQ(ECONNRESET, st[0]);
	EXPECT_EQ(200 + SIGKILL, st[1]);
	EXPECT_EQ(0, st[2]);
}

TEST_F_TIMEOUT(kill, server, 90)
{
	struct job j = { .S = 2, .W = 2, .port = variant->port + 1, .mode = PS_SYNC, .lr = 0.5f,
			 .transport = variant->transport };
	struct ps_worker *w;
	float out[K_LEN];
	int st[3], err = 0, id;
	pid_t pids[3];

	pids[0] = start_role(&j, 's', 0, false);
	pids[1] = start_role(&j, 's', 1, false);
	pids[2] = fork_fn(failing_puller, &j, 1);
	w = k_worker(&j, 0, true);
	ASSERT_NE(NULL, w);
	/* A pull of the split key that waits on both servers. */
	id = ps_pull(w, K_KEY, out, K_LEN, 1, NULL);
	ASSERT_LT(0, id);
	usleep(100000);
	ASSERT_EQ(0, kill(pids[1], SIGKILL));
	EXPECT_EQ(0, fails_fast(w, id, &err));
	TH_LOG("worker 0's pull: %s", strerror(-err));
	EXPECT_EQ(err, ps_worker_destroy(w));
	reap_all(pids, st, 3, 30);
	EXPECT_EQ(ECONNRESET, st[0]);
	EXPECT_EQ(200 + SIGKILL, st[1]);
	EXPECT_EQ(0, st[2]);
}

/* ---- malformed messages to live nodes ---- */

/* A TCP connection to the test address's @port, retried while nobody listens. */
static int raw_connect(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	double end = rs_now() + 10;
	int fd;

	inet_pton(AF_INET, test_ip(), &sin.sin_addr);
	do {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || !connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
			return fd;
		close(fd);
		usleep(20000);
	} while (rs_now() < end);
	return -1;
}

/* Whether the peer closes @fd within 5 s (what it sends before is read and dropped). */
static bool peer_closes(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char buf[256];
	ssize_t n;

	while (poll(&p, 1, 5000) == 1) {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			return true;
	}
	return false;
}

static int send_hdr(int fd, const struct ps_msg *m, size_t len, int patch_at, uint8_t patch)
{
	uint8_t buf[PS_HDR_LEN];

	ps_msg_encode(m, buf);
	if (patch_at >= 0)
		buf[patch_at] = patch;
	return send(fd, buf, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

/* A request header of @op from worker @rank, as a worker would send it. */
static void req_hdr(struct ps_msg *m, uint8_t op, uint32_t rank, uint64_t key)
{
	memset(m, 0, sizeof(*m));
	m->op = op;
	m->flags = PS_F_WORKER;
	m->sender = rank;
	m->req_id = 1;
	if (op >= PS_OP_INIT && op <= PS_OP_PUSHPULL) {
		m->key = key;
		m->total = 4;
		m->length = op == PS_OP_PULL ? 0 : 16;
	}
}

TEST(wire_server_drops)
{
	struct job j = { .S = 1, .W = 1, .port = PORT + 23, .mode = PS_SYNC, .lr = 0.5f,
			 .iters = 2 };
	uint8_t roster[PS_HDR_LEN + PS_ROSTER_LEN + PS_ADDR_LEN];
	struct ps_msg m;
	int fd, st[2], c;
	pid_t pids[2];

	pids[0] = start_role(&j, 's', 0, false);
	for (c = 0; c < 6; c++) {
		fd = raw_connect(j.port);
		ASSERT_LE(0, fd);
		req_hdr(&m, PS_OP_PUSH, 0, 3);
		switch (c) {
		case 0:		/* bad magic */
			ASSERT_EQ(0, send_hdr(fd, &m, PS_HDR_LEN, 0, 'X'));
			break;
		case 1:		/* bad op */
			ASSERT_EQ(0, send_hdr(fd, &m, PS_HDR_LEN, 5, 99));
			break;
		case 2:		/* a length over the limit (64 MiB) */
			m.op = PS_OP_HELLO;
			m.key = m.total = 0;
			m.length = (64 << 20) + 4;
			ASSERT_EQ(0, send_hdr(fd, &m, PS_HDR_LEN, -1, 0));
			break;
		case 3:		/* a truncated header, then the end */
			ASSERT_EQ(0, send_hdr(fd, &m, 20, -1, 0));
			shutdown(fd, SHUT_WR);
			break;
		case 4:		/* a key out of range (key_max 64) */
			m.key = JOB_KEY_MAX;
			ASSERT_EQ(0, send_hdr(fd, &m, PS_HDR_LEN, -1, 0));
			break;
		case 5:		/* a valid push from nobody registered */
			ASSERT_EQ(0, send_hdr(fd, &m, PS_HDR_LEN, -1, 0));
			ASSERT_EQ(16, send(fd, "0123456789abcdef", 16, MSG_NOSIGNAL));
			break;
		}
		EXPECT_TRUE(peer_closes(fd)) {
			TH_LOG("case %d: the server kept the connection", c);
		}
		close(fd);
	}
	/* The server still serves a whole job. */
	pids[1] = start_role(&j, 'w', 0, false);
	reap_all(pids, st, 2, 60);
	EXPECT_EQ(0, st[0]);
	EXPECT_EQ(0, st[1]);

	/* A registered worker that sends a key out of range fails the job. */
	j.port++;
	pids[0] = start_role(&j, 's', 0, false);
	fd = raw_connect(j.port);
	ASSERT_LE(0, fd);
	req_hdr(&m, PS_OP_HELLO, 0, 0);
	ASSERT_EQ(0, send_hdr(fd, &m, PS_HDR_LEN, -1, 0));
	ASSERT_EQ(sizeof(roster), recv(fd, roster, sizeof(roster), MSG_WAITALL));
	req_hdr(&m, PS_OP_PULL, 0, UINT64_MAX);
	ASSERT_EQ(0, send_hdr(fd, &m, PS_HDR_LEN, -1, 0));
	EXPECT_TRUE(peer_closes(fd));
	close(fd);
	reap_all(pids, st, 1, 30);
	EXPECT_EQ(EPROTO, st[0]);
}

/* A worker of @j: the errno ps_worker_create() fails with, or 0. */
static int create_errno(const struct job *j, int rank)
{
	struct ps_worker *w;
	struct ps_config cfg;
	int ret;

	job_config(j, &cfg, rank);
	ret = ps_worker_create(&cfg, &w);
	if (!ret)
		ps_worker_destroy(w);
	return -ret;
}

TEST(wire_worker_rejects)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(PORT + 25) };
	struct job j = { .S = 1, .W = 1, .port = PORT + 25, .lr = 0.5f };
	uint8_t in[PS_HDR_LEN], out[PS_HDR_LEN + PS_ROSTER_LEN + PS_ADDR_LEN] = { 0 };
	struct ps_msg m, hello;
	int l, fd, c, on = 1;
	pid_t pid;

	inet_pton(AF_INET, test_ip(), &sin.sin_addr);
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_LE(0, l);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	ASSERT_EQ(0, bind(l, (struct sockaddr *)&sin, sizeof(sin)));
	ASSERT_EQ(0, listen(l, 4));
	for (c = 0; c < 3; c++) {
		pid = fork_fn(create_errno, &j, 0);
		fd = accept(l, NULL, NULL);
		ASSERT_LE(0, fd);
		ASSERT_EQ(PS_HDR_LEN, recv(fd, in, PS_HDR_LEN, MSG_WAITALL));
		ASSERT_EQ(0, ps_msg_decode(in, PS_HDR_LEN, &lim, &hello));
		memset(&m, 0, sizeof(m));
		m.op = PS_OP_HELLO;
		m.flags = PS_F_RESP;
		m.req_id = hello.req_id;
		m.length = PS_ROSTER_LEN + PS_ADDR_LEN * (c == 2 ? 2 : 1);
		ps_msg_encode(&m, out);
		/*
		 * 0: a roster of no servers; 1: a bad magic; 2: short of its
		 * length, then the end: a lost connection.
		 */
		if (c == 1)
			out[1] ^= 0x40;
		ASSERT_EQ(sizeof(out), send(fd, out, sizeof(out), MSG_NOSIGNAL));
		if (c == 2)
			shutdown(fd, SHUT_WR);
		EXPECT_EQ(c == 2 ? ECONNRESET : EPROTO, rs_wait_child(pid)) {
			TH_LOG("case %d", c);
		}
		close(fd);
	}
	close(l);
}

/* ---- ps-train: Fashion-MNIST, data-parallel ---- */

#define FMNIST	"/usr/share/datasets/fashion-mnist"
/* Every node's model and data options: an MLP-16, its first layer split. */
#define TRAIN_ARGS	"--model mlp --hidden 16 --train 1200 --test 500 --epochs 1 " \
			"--batch 20 --lr 0.1 --seed 7 --big-bound 4096 --timeout 60000"

struct train_out {
	double loss0, loss1, acc1;
	unsigned long long bytes;
	char hash[32];
};

/*
 * Start ps-train as @role (--server 0, ...), preloaded if @preload, over
 * libps's transport @tr; its output to /dev/null.
 */
static pid_t train_node(const char *exe, unsigned int port, bool preload, const char *tr,
			const char *role)
{
	char cmd[2048];
	pid_t pid;

	snprintf(cmd, sizeof(cmd), "exec %s %s %s -H %s -p %u %s --transport %s >/dev/null",
		 preload ? run_path : "", exe, role, test_ip(), port, TRAIN_ARGS, tr);
	pid = fork();
	if (!pid) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/*
 * ps-train's nodes as processes of their own, preloaded if @preload:
 * servers 0 and 1 and worker 1 in the background, worker 0 read.  0 if
 * every node exited 0 and worker 0 reported it all.
 */
static int run_train_on(unsigned int port, bool preload, bool module, const char *tr,
			struct train_out *o)
{
	char cmd[2048], line[512], exe[600];
	int got = 0, st[3], ret;
	pid_t pids[3];
	FILE *f;

	snprintf(exe, sizeof(exe), "%s/../../userlib/build/ps-train", dirname(strdupa(self_exe)));
	pids[0] = train_node(exe, port, preload, tr, "--server 0 -S 2 -W 2");
	if (preload && module && !rs_listening(port)) {
		reap_all(pids, st, 1, 0);
		return -1;
	}
	pids[1] = train_node(exe, port, preload, tr, "--server 1");
	pids[2] = train_node(exe, port, preload, tr, "--worker 1");
	snprintf(cmd, sizeof(cmd), "%s %s --worker 0 -H %s -p %u %s --transport %s",
		 preload ? run_path : "", exe, test_ip(), port, TRAIN_ARGS, tr);
	f = popen(cmd, "r");
	memset(o, 0, sizeof(*o));
	while (f && fgets(line, sizeof(line), f)) {
		fputs(line, stderr);
		if (sscanf(line, "epoch 0: test_loss %lf", &o->loss0) == 1)
			got |= 1;
		else if (sscanf(line, "epoch 1: train_loss %*f test_loss %lf test_acc %lf "
				"compute %*f s comm %*f s bytes %llu", &o->loss1, &o->acc1,
				&o->bytes) == 3)
			got |= 2;
		else if (sscanf(line, "weights fnv1a64 %31s", o->hash) == 1)
			got |= 4;
	}
	ret = f ? pclose(f) : -1;
	reap_all(pids, st, 3, 120);
	return ret || st[0] || st[1] || st[2] || got != 7 ? -1 : 0;
}

static int run_train(unsigned int port, bool preload, bool module, struct train_out *o)
{
	return run_train_on(port, preload, module, "sockets", o);
}

FIXTURE(train) {
};

FIXTURE_SETUP(train)
{
	find_paths();
}

FIXTURE_TEARDOWN(train)
{
}

/*
 * An MLP on 1200 samples for an epoch, 2 servers (its first layer split
 * between them) and 2 workers: the test loss falls, and the final
 * weights' hash is the same over TCP and under rdmashare-run.
 */
TEST_F_TIMEOUT(train, tiny, 300)
{
	bool module = rs_path_exists("/dev/rdmashare");
	struct train_out tcp, rs;
	long rs0 = 0, moved;

	if (access(FMNIST "/train-images-idx3-ubyte.gz", R_OK))
		SKIP(return, "no Fashion-MNIST (dataset-fashion-mnist)");
	ASSERT_EQ(0, run_train(PORT + 30, false, module, &tcp));
	ASSERT_GT(tcp.loss0, tcp.loss1);
	ASSERT_LT(0.4, tcp.acc1);
	if (module)
		rs0 = rs_devices_sum("stats/tx_bytes");
	ASSERT_EQ(0, run_train(PORT + 31, true, module, &rs));
	ASSERT_STREQ(tcp.hash, rs.hash);
	ASSERT_EQ(tcp.loss1, rs.loss1);
	if (!module)
		SKIP(return, "no /dev/rdmashare: the preloaded run was over TCP");
	moved = rs_devices_sum("stats/tx_bytes") - rs0;
	TH_LOG("%ld bytes over rdmashare, worker 0 moved %llu", moved, rs.bytes);
	/* Worker 0's own traffic alone is that much. */
	EXPECT_LE((long)rs.bytes, moved);
}

/*
 * ps-bench, once over each transport, briefly: it runs, and worker 0
 * reports a goodput and latencies.
 */
TEST_F_TIMEOUT(train, bench_smoke, 120)
{
	static const char *const trs[] = { "sockets", "rdmashare", "verbs" };
	char cmd[1024], line[512], exe[600];
	double gp;
	unsigned int i;
	FILE *f;

	if (!rs_path_exists("/dev/rdmashare") || !has_rdma_device())
		SKIP(return, "no /dev/rdmashare or no RDMA device");
	snprintf(exe, sizeof(exe), "%s/../../userlib/build/ps-bench", dirname(strdupa(self_exe)));
	for (i = 0; i < 3; i++) {
		snprintf(cmd, sizeof(cmd), "%s --local -S 2 -W 2 -H %s -p %u --transport %s "
			 "--keys 2 --size 64K --mode pushpull --rounds 5 --timeout 20000", exe,
			 test_ip(), PORT + 46 + i, trs[i]);
		f = popen(cmd, "r");
		ASSERT_NE(NULL, f);
		gp = 0;
		while (fgets(line, sizeof(line), f)) {
			fputs(line, stderr);
			sscanf(line, "ps-bench: goodput %lf MB/s", &gp);
		}
		EXPECT_EQ(0, pclose(f)) {
			TH_LOG("%s", trs[i]);
		}
		EXPECT_LT(0, gp) {
			TH_LOG("%s: no goodput", trs[i]);
		}
	}
}

/*
 * The same training over libps's three transports: sockets (TCP), rdmashare
 * (its rings, an AC per connection) and verbs (a QP per connection) end
 * with the same weights, bit for bit, and the same losses.
 */
TEST_F_TIMEOUT(train, transports, 300)
{
	struct train_out tcp, rs, vb;

	if (access(FMNIST "/train-images-idx3-ubyte.gz", R_OK))
		SKIP(return, "no Fashion-MNIST (dataset-fashion-mnist)");
	if (!rs_path_exists("/dev/rdmashare") || !has_rdma_device())
		SKIP(return, "no /dev/rdmashare or no RDMA device");
	ASSERT_EQ(0, run_train_on(PORT + 32, false, true, "sockets", &tcp));
	ASSERT_EQ(0, run_train_on(PORT + 33, false, true, "rdmashare", &rs));
	ASSERT_EQ(0, run_train_on(PORT + 34, false, true, "verbs", &vb));
	TH_LOG("hash %s over sockets, %s over rdmashare, %s over verbs", tcp.hash, rs.hash,
	       vb.hash);
	ASSERT_GT(tcp.loss0, tcp.loss1);
	ASSERT_STREQ(tcp.hash, rs.hash);
	ASSERT_STREQ(tcp.hash, vb.hash);
	ASSERT_EQ(tcp.loss1, rs.loss1);
	ASSERT_EQ(tcp.loss1, vb.loss1);
}

TEST_HARNESS_MAIN

/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libps internals: the wire format, sharding, the sync-SGD aggregator, the
 * transport interface and the connection layer shared by servers and
 * workers.  Declared here, not in ps.h, so that the tests can reach them.
 */
#ifndef LIBPS_INT_H
#define LIBPS_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "ps.h"

/* ---- wire format (ps_wire.c) ---- */

#define PS_MAGIC	0x31575350u	/* "PSW1" in memory order */
#define PS_WIRE_VERSION	1
#define PS_HDR_LEN	48
#define PS_ADDR_LEN	20
#define PS_ROSTER_LEN	32
/* Servers and workers each; keeps every count and array small. */
#define PS_MAX_NODES	4096

enum ps_op {
	PS_OP_HELLO = 1,	/* register; its answer carries the roster */
	PS_OP_INIT,		/* create a key's part */
	PS_OP_PUSH,
	PS_OP_PULL,
	PS_OP_PUSHPULL,
	PS_OP_BARRIER,
	PS_OP_SHUTDOWN,
	PS_OP_MAX = PS_OP_SHUTDOWN,
};

#define PS_F_RESP	0x1	/* an answer to the request of the same id */
#define PS_F_WORKER	0x2	/* the sender is a worker, else a server */
#define PS_F_ALL	(PS_F_RESP | PS_F_WORKER)

/* A header as decoded; on the wire little-endian, packed, in this order. */
struct ps_msg {
	uint32_t magic;
	uint8_t version;
	uint8_t op;
	uint16_t flags;
	uint32_t sender;	/* rank among servers or workers */
	uint32_t req_id;
	uint64_t key;
	uint64_t iter;		/* iteration asked, or the version answered */
	uint32_t total;		/* the key's elements */
	uint32_t offset;	/* the first element of this part */
	uint32_t length;	/* payload bytes after the header */
	int32_t status;		/* answers: 0 or -errno */
};

/* What a receiver knows when it decodes a header; 0 for unknown. */
struct ps_limits {
	uint32_t max_msg;
	uint64_t key_max;
	uint32_t num_servers;
	uint32_t num_workers;
};

void ps_msg_encode(const struct ps_msg *m, uint8_t *buf);
int ps_msg_decode(const uint8_t *buf, size_t len, const struct ps_limits *lim,
		  struct ps_msg *m);

/* The roster: server 0's answer to a HELLO. */
struct ps_roster {
	uint32_t num_servers;
	uint32_t num_workers;
	uint32_t mode;
	uint32_t rank;		/* the receiver's */
	float lr;
	uint32_t big_bound;
	uint64_t key_max;
	/* num_servers addresses; server 0's is left empty */
	struct sockaddr_storage *addrs;
};

size_t ps_roster_len(uint32_t num_servers);
void ps_roster_encode(const struct ps_roster *r, uint8_t *buf);
int ps_roster_decode(const uint8_t *buf, size_t len, bool worker, struct ps_roster *r);
void ps_addr_encode(const struct sockaddr_storage *ss, uint8_t *buf);
int ps_addr_decode(const uint8_t *buf, struct sockaddr_storage *ss);

/* ---- sharding (ps_shard.c) ---- */

struct ps_part {
	uint32_t server;
	uint32_t offset;
	uint32_t len;
};

void ps_key_range(uint64_t key_max, uint32_t num_servers, uint32_t s, uint64_t *lo,
		  uint64_t *hi);
uint32_t ps_key_server(uint64_t key_max, uint32_t num_servers, uint64_t key);
int ps_shard(uint64_t key_max, uint32_t num_servers, uint32_t big_bound, uint64_t key,
	     uint32_t total, struct ps_part *parts);
bool ps_shard_find(uint64_t key_max, uint32_t num_servers, uint32_t big_bound, uint64_t key,
		   uint32_t total, uint32_t server, struct ps_part *part);

/* ---- sync SGD aggregation (ps_shard.c) ---- */

/* The gradients of one iteration of one key part, a row per worker rank. */
struct ps_agg {
	uint32_t num_workers;
	uint32_t len;
	uint32_t count;
	float *grads;
	uint8_t *have;
};

int ps_agg_init(struct ps_agg *a, uint32_t num_workers, uint32_t len);
float *ps_agg_slot(struct ps_agg *a, uint32_t rank);
bool ps_agg_mark(struct ps_agg *a, uint32_t rank);
void ps_agg_apply(struct ps_agg *a, float *w, float scale);
void ps_agg_free(struct ps_agg *a);

/* ---- registered buffers (ps_pool.c) ---- */

/*
 * A pool of buffers carved from one region (a transport's registered
 * memory), in power-of-two multiples of PS_POOL_PAGE, each with a count of
 * references: its owner's, and one per send that reads from it, so that
 * an owner may let go of a buffer whose send is still on the wire.
 */
#define PS_POOL_PAGE	4096

struct ps_pool {
	char *base;
	size_t size;
	size_t brk;		/* pages below it were handed out once */
	uint32_t *start;	/* per page: the first page of its block */
	uint32_t *refs;		/* per block's first page */
	uint32_t *next;		/* per free block's first page: the next + 1 */
	uint8_t *cls;		/* per block's first page: its size's class */
	uint32_t free[32];	/* per class: the first free block's page + 1 */
};

/*
 * A ring of bytes whose allocations are freed in the order they were
 * made (what a transport copies into registered memory to send it).
 */
struct ps_ring {
	uint32_t size, head, tail;
	uint32_t live;		/* allocations not freed */
};

long long ps_ring_alloc(struct ps_ring *r, uint32_t len);
void ps_ring_unalloc(struct ps_ring *r, uint32_t tail);
void ps_ring_free(struct ps_ring *r, uint32_t off, uint32_t len);

int ps_pool_init(struct ps_pool *p, void *base, size_t size);
void ps_pool_fini(struct ps_pool *p);
void *ps_pool_alloc(struct ps_pool *p, size_t len);
bool ps_pool_has(const struct ps_pool *p, const void *addr);
void ps_pool_get(struct ps_pool *p, const void *addr);
void ps_pool_put(struct ps_pool *p, const void *addr);
bool ps_pool_put_own(struct ps_pool *p, const void *addr);

/* ---- transports (ps_sock.c, ps_rdmashare.c, ps_verbs.c) ---- */

struct ps_tr_ctx;
struct ps_tr_conn;

/*
 * A transport moves bytes of one connection, non-blocking, and gives a
 * descriptor to poll for it.  The connection layer frames messages over
 * it.  A transport with receive buffers of its own (rdmashare's rings,
 * verbs) copies out of them in recv(), straight into the payload's
 * destination that ps_node.c picked.  One that sends from registered
 * memory lends it through buf_alloc(): what is sent from such a buffer
 * goes without a copy.
 */
struct ps_transport {
	const char *name;
	/*
	 * Optional: the node's context (an rdmashare file, a verbs protection
	 * domain), with @pool_size bytes of registered buffers (0: none).
	 */
	int (*open)(size_t pool_size, struct ps_tr_ctx **out);
	/* Let what was sent go out (at most @timeout_ms), then free it. */
	void (*fini)(struct ps_tr_ctx *x, int timeout_ms);
	/* Listen on @sa (port 0: any); @out is the listener. */
	int (*listen)(struct ps_tr_ctx *x, const struct sockaddr *sa, socklen_t len,
		      struct ps_tr_conn **out);
	/* Connect, waiting at most @timeout_ms; the connection is non-blocking. */
	int (*connect)(struct ps_tr_ctx *x, const struct sockaddr *sa, socklen_t len,
		       int timeout_ms, struct ps_tr_conn **out);
	/* A connection waiting on listener @l, or -EAGAIN. */
	int (*accept)(struct ps_tr_conn *l, struct ps_tr_conn **out);
	/* Bytes sent (some or all), -EAGAIN, or -errno (-EPIPE, -ECONNRESET). */
	ssize_t (*sendv)(struct ps_tr_conn *c, const struct iovec *iov, int cnt);
	/* Bytes received, 0 at the end of the stream, -EAGAIN, or -errno. */
	ssize_t (*recv)(struct ps_tr_conn *c, void *buf, size_t len);
	/* The descriptor whose POLLIN/POLLOUT tell when to call recv/sendv. */
	int (*poll_fd)(struct ps_tr_conn *c);
	/*
	 * Optional: the events to wait for on poll_fd() (@sending: the
	 * connection has bytes to send); without it POLLIN, and POLLOUT
	 * while sending.  Any event then means: try both.
	 */
	short (*poll_events)(struct ps_tr_conn *c, bool sending);
	/*
	 * Optional, called before every wait: submit what the transport
	 * queued in user space, and say whether @c (a listener too) can make
	 * progress without waiting: bytes or its end taken off the wire
	 * already, room to send again that came meanwhile, a connection to
	 * accept.  A poll(2) would not tell, the descriptor being shared or
	 * its events taken.  A transport whose descriptor several
	 * connections share says true too when it took events off it for
	 * any of them, so that the caller asks every connection again.
	 */
	bool (*ready)(struct ps_tr_conn *c);
	int (*local_addr)(struct ps_tr_conn *c, struct sockaddr_storage *ss);
	void (*close)(struct ps_tr_conn *c);
	/* Optional: a buffer of registered memory, or NULL (none left). */
	void *(*buf_alloc)(struct ps_tr_ctx *x, size_t len);
	/* Optional: let go of @p, if it is one of @x's (else false). */
	bool (*buf_put)(struct ps_tr_ctx *x, void *p);
};

extern const struct ps_transport ps_sockets, ps_rdmashare, ps_verbs;

const struct ps_transport *ps_transport_find(const char *name);
int ps_resolve(const char *host, uint16_t port, int family, struct sockaddr_storage *ss,
	       socklen_t *len);
socklen_t ps_addr_len(const struct sockaddr_storage *ss);

/* ---- connections (ps_node.c) ---- */

/* A message to send: header, then a payload that is borrowed or owned. */
struct ps_out {
	struct ps_out *next;
	uint8_t hdr[PS_HDR_LEN];
	const void *payload;
	size_t plen;
	size_t done;
	void *owned;		/* freed once sent */
};

enum ps_peer { PS_PEER_NONE, PS_PEER_WORKER, PS_PEER_SERVER };

struct ps_conn {
	struct ps_tr_conn *tc;
	enum ps_peer peer;
	uint32_t rank;
	bool dead;
	bool shut;		/* the peer shut down cleanly: its end is no loss */
	uint32_t hello_id;	/* server 0: the HELLO the roster will answer */
	/* receiving */
	uint8_t hbuf[PS_HDR_LEN];
	size_t hgot;
	bool in_payload;
	struct ps_msg msg;
	void *dest;
	size_t pgot;
	int status;		/* what the handler will answer the message with */
	void *scratch;
	size_t scratch_len;
	/* sending: oq is being written, waitq waits for the pipeline */
	struct ps_out *oq, *oq_tail;
	struct ps_out *waitq, *waitq_tail;
	unsigned int inflight;
};

struct ps_node;

struct ps_node_ops {
	/* A header was valid: set *dest for its payload, or fail (-EPROTO). */
	int (*on_hdr)(struct ps_node *n, struct ps_conn *c, const struct ps_msg *m, void **dest);
	/* The whole message is there. */
	int (*on_msg)(struct ps_node *n, struct ps_conn *c, const struct ps_msg *m, void *payload);
	/* @c is gone (@err: -ECONNRESET, -EPROTO...); it is freed after. */
	void (*on_lost)(struct ps_node *n, struct ps_conn *c, int err);
};

struct ps_node {
	const struct ps_transport *tr;
	struct ps_tr_ctx *trx;
	const struct ps_node_ops *ops;
	struct ps_tr_conn *listener;
	bool accepting;
	struct ps_conn **conns;
	unsigned int nconns, cap;
	struct ps_limits lim;
	unsigned int pipeline;
	int timeout_ms;
	/* the servers' addresses, from the roster (PS_MAX_NODES of them) */
	struct sockaddr_storage *addrs;
	uint64_t tx_bytes, rx_bytes;
	bool is_worker;
	uint32_t rank;
};

int ps_node_init(struct ps_node *n, const struct ps_config *cfg, const struct ps_node_ops *ops,
		 bool is_worker);
void ps_node_fini(struct ps_node *n);
struct ps_conn *ps_node_add(struct ps_node *n, struct ps_tr_conn *tc);
int ps_node_connect(struct ps_node *n, const struct sockaddr_storage *ss, int64_t deadline,
		    struct ps_conn **out);
int ps_node_progress(struct ps_node *n, int timeout_ms);
int ps_node_flush(struct ps_node *n, int64_t deadline);
int ps_conn_send(struct ps_node *n, struct ps_conn *c, struct ps_msg *m, const void *payload,
		 size_t plen, void *owned);
void ps_conn_drop(struct ps_node *n, struct ps_conn *c, int err);
void *ps_conn_scratch(struct ps_conn *c, size_t len);
void *ps_node_buf(struct ps_node *n, size_t len);
void ps_node_buf_free(struct ps_node *n, void *p);

int64_t ps_now_ms(void);
int ps_left_ms(int64_t deadline);

#endif

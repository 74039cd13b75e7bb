// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * A libps server: holds its parts of the keys, applies pushes (sync: the
 * W gradients of an iteration summed in rank order, then one update;
 * async: each at once), answers pulls, and, as server 0, registers every
 * node, sends the roster and runs the workers' barrier.
 *
 * A node lost without a SHUTDOWN fails the server: it closes every
 * connection, so that the loss reaches every other node as the end of
 * its connections, and no wait anywhere is left to hang.
 */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "ps_int.h"

#define PS_SLICE_BUCKETS 1024

/* A request answered later: a sync push, a pull ahead of the version, a barrier. */
struct ps_waiter {
	struct ps_waiter *next;
	struct ps_conn *c;
	struct ps_msg req;
};

/* This server's part of a key. */
struct ps_slice {
	struct ps_slice *next;
	uint64_t key;
	uint32_t total, off, len;
	uint64_t version;
	float *val;
	struct ps_agg agg;
	struct ps_waiter *waiters;
};

struct ps_server {
	struct ps_node node;
	bool root;
	uint32_t num_servers, num_workers;
	enum ps_mode mode;
	float scale;
	float lr;
	uint32_t big_bound;
	int failed;
	bool started;
	/* server 0: who registered; the others: the connection to server 0 */
	struct ps_conn **workers;
	struct ps_conn **servers;
	uint32_t nworkers_reg, nservers_reg;
	struct ps_conn *root_conn;
	bool roster_in, root_acked;
	/* the barrier (server 0) */
	struct ps_waiter *barrier;
	uint32_t nbarrier;
	uint32_t nshut_workers, nshut_servers;
	struct ps_slice *slices[PS_SLICE_BUCKETS];
};

static struct ps_server *node_srv(struct ps_node *n)
{
	return (struct ps_server *)n;
}

static struct ps_slice **slice_bucket(struct ps_server *s, uint64_t key)
{
	return &s->slices[(key * 0x9e3779b97f4a7c15ull) >> 54];
}

static struct ps_slice *slice_find(struct ps_server *s, uint64_t key)
{
	struct ps_slice *sl;

	for (sl = *slice_bucket(s, key); sl; sl = sl->next)
		if (sl->key == key)
			return sl;
	return NULL;
}

static void waiters_free(struct ps_waiter *w)
{
	while (w) {
		struct ps_waiter *next = w->next;

		free(w);
		w = next;
	}
}

/* Fail the server: close everything, forget the waiters (their connections go). */
static void srv_fail(struct ps_server *s, int err)
{
	unsigned int i, b;
	struct ps_slice *sl;

	if (s->failed)
		return;
	s->failed = err;
	for (i = 0; i < s->node.nconns; i++)
		ps_conn_drop(&s->node, s->node.conns[i], err);
	for (b = 0; b < PS_SLICE_BUCKETS; b++) {
		for (sl = s->slices[b]; sl; sl = sl->next) {
			waiters_free(sl->waiters);
			sl->waiters = NULL;
		}
	}
	waiters_free(s->barrier);
	s->barrier = NULL;
}

/* Answer request @req on @c: @status, and the slice's values if it asks for them. */
static int srv_answer(struct ps_server *s, struct ps_conn *c, const struct ps_msg *req,
		      struct ps_slice *sl, int status)
{
	struct ps_msg m = {
		.op = req->op, .flags = PS_F_RESP, .req_id = req->req_id, .key = req->key,
		.total = req->total, .offset = req->offset, .status = status,
	};
	size_t len = 0;
	void *vals = NULL;

	if (sl)
		m.iter = sl->version;
	if (!status && sl && (req->op == PS_OP_PULL || req->op == PS_OP_PUSHPULL)) {
		/*
		 * A copy: the values may change before the answer is written.
		 * Into the transport's registered memory, so that it is the
		 * only one.
		 */
		len = (size_t)sl->len * sizeof(float);
		vals = ps_node_buf(&s->node, len);
		if (!vals)
			return -ENOMEM;
		memcpy(vals, sl->val, len);
	}
	return ps_conn_send(&s->node, c, &m, vals, len, vals);
}

static int waiter_add(struct ps_waiter **list, struct ps_conn *c, const struct ps_msg *m)
{
	struct ps_waiter *w = malloc(sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->c = c;
	w->req = *m;
	w->next = *list;
	*list = w;
	return 0;
}

/*
 * The slice's version moved (or can no longer move: @status): answer the
 * pushes of the iteration and the pulls the version now satisfies.
 */
static int slice_wake(struct ps_server *s, struct ps_slice *sl, int status)
{
	struct ps_waiter **pw = &sl->waiters, *w;
	int ret = 0;

	while ((w = *pw)) {
		if (!status && w->req.op == PS_OP_PULL && w->req.iter > sl->version) {
			pw = &w->next;
			continue;
		}
		*pw = w->next;
		if (!ret)
			ret = srv_answer(s, w->c, &w->req, sl, status);
		free(w);
	}
	return ret;
}

/*
 * A worker shut down: the iterations it took no part in can never be
 * complete, so the pushes, pulls and barrier waiting for them fail.
 */
static int srv_worker_gone(struct ps_server *s)
{
	struct ps_slice *sl;
	unsigned int b;
	int ret = 0;

	for (b = 0; b < PS_SLICE_BUCKETS && !ret; b++) {
		for (sl = s->slices[b]; sl && !ret; sl = sl->next) {
			if (sl->agg.have) {
				sl->agg.count = 0;
				memset(sl->agg.have, 0, s->num_workers);
			}
			ret = slice_wake(s, sl, -ESHUTDOWN);
		}
	}
	while (s->barrier && !ret) {
		struct ps_waiter *w = s->barrier;

		s->barrier = w->next;
		ret = srv_answer(s, w->c, &w->req, NULL, -ESHUTDOWN);
		free(w);
	}
	s->nbarrier = 0;
	return ret;
}

static int slice_create(struct ps_server *s, const struct ps_msg *m, const float *vals,
			const struct ps_part *part)
{
	struct ps_slice *sl = calloc(1, sizeof(*sl));
	struct ps_slice **b;

	if (!sl)
		return -ENOMEM;
	sl->key = m->key;
	sl->total = m->total;
	sl->off = part->offset;
	sl->len = part->len;
	sl->val = malloc((size_t)sl->len * sizeof(float));
	if (!sl->val)
		goto out_free;
	memcpy(sl->val, vals, (size_t)sl->len * sizeof(float));
	if (s->mode == PS_SYNC && ps_agg_init(&sl->agg, s->num_workers, sl->len))
		goto out_free;
	b = slice_bucket(s, m->key);
	sl->next = *b;
	*b = sl;
	return 0;

out_free:
	free(sl->val);
	free(sl);
	return -ENOMEM;
}

/* A data request's header: is the part ours, and where does its payload go? */
static int data_hdr(struct ps_server *s, struct ps_conn *c, const struct ps_msg *m, void **dest)
{
	struct ps_slice *sl = slice_find(s, m->key);
	struct ps_part part;
	float *slot;

	if (!ps_shard_find(s->node.lim.key_max, s->num_servers, s->big_bound, m->key, m->total,
			   s->node.rank, &part) || m->offset != part.offset)
		return -EPROTO;
	if (m->length && m->length != (size_t)part.len * sizeof(float))
		return -EPROTO;
	if (sl && sl->total != m->total)
		return -EPROTO;
	if (m->length) {
		*dest = ps_conn_scratch(c, m->length);
		if (!*dest)
			return -ENOMEM;
	}
	if (m->op == PS_OP_INIT) {
		c->status = sl ? -EEXIST : 0;
		return 0;
	}
	if (!sl) {
		c->status = -ENOENT;
		return 0;
	}
	if (m->op == PS_OP_PULL || s->mode == PS_ASYNC)
		return 0;
	/* A sync push: straight into the worker's row of the iteration. */
	slot = ps_agg_slot(&sl->agg, c->rank);
	if (s->nshut_workers)
		c->status = -ESHUTDOWN;
	else if (m->iter != sl->version)
		c->status = -ESTALE;
	else if (!slot)
		c->status = -EALREADY;
	else
		*dest = slot;
	return 0;
}

static int data_msg(struct ps_server *s, struct ps_conn *c, const struct ps_msg *m, void *payload)
{
	struct ps_slice *sl = slice_find(s, m->key);
	struct ps_part part;
	const float *g = payload;
	uint32_t i;
	int ret;

	if (c->status)
		return srv_answer(s, c, m, NULL, c->status);
	if (m->op == PS_OP_INIT) {
		part.offset = m->offset;
		part.len = m->length / sizeof(float);
		ret = slice_create(s, m, payload, &part);
		return ret ? ret : srv_answer(s, c, m, NULL, 0);
	}
	if (m->op == PS_OP_PULL) {
		if (s->mode == PS_SYNC && m->iter > sl->version)
			return s->nshut_workers ? srv_answer(s, c, m, NULL, -ESHUTDOWN) :
						  waiter_add(&sl->waiters, c, m);
		return srv_answer(s, c, m, sl, 0);
	}
	if (s->mode == PS_ASYNC) {
		for (i = 0; i < sl->len; i++)
			sl->val[i] -= s->scale * g[i];
		sl->version++;
		return srv_answer(s, c, m, sl, 0);
	}
	ret = waiter_add(&sl->waiters, c, m);
	if (ret || !ps_agg_mark(&sl->agg, c->rank))
		return ret;
	ps_agg_apply(&sl->agg, sl->val, s->scale);
	sl->version++;
	return slice_wake(s, sl, 0);
}

static int roster_send(struct ps_server *s, struct ps_conn *c, uint32_t rank)
{
	struct ps_msg m = { .op = PS_OP_HELLO, .flags = PS_F_RESP, .req_id = c->hello_id };
	struct ps_roster r = {
		.num_servers = s->num_servers, .num_workers = s->num_workers,
		.mode = s->mode, .rank = rank, .lr = s->lr, .big_bound = s->big_bound,
		.key_max = s->node.lim.key_max, .addrs = s->node.addrs,
	};
	size_t len = ps_roster_len(s->num_servers);
	uint8_t *buf = malloc(len);

	if (!buf)
		return -ENOMEM;
	ps_roster_encode(&r, buf);
	return ps_conn_send(&s->node, c, &m, buf, len, buf);
}

/* A HELLO: server 0 registers anyone; the others their workers. */
static int hello_msg(struct ps_server *s, struct ps_conn *c, const struct ps_msg *m, void *payload)
{
	bool worker = m->flags & PS_F_WORKER;
	uint32_t r = m->sender, i, n = worker ? s->num_workers : s->num_servers;
	struct ps_conn **tab = worker ? s->workers : s->servers;
	struct ps_msg ans = { .op = PS_OP_HELLO, .flags = PS_F_RESP, .req_id = m->req_id };
	int ret;

	if (c->peer != PS_PEER_NONE)
		return -EPROTO;
	/* Servers register with server 0 alone, and a server's address with it. */
	if (m->length != (worker ? 0 : PS_ADDR_LEN) || (!worker && !s->root))
		return -EPROTO;
	/* Only server 0 hands out ranks: the next free one. */
	if (r == UINT32_MAX && !s->root)
		return -EPROTO;
	if (r == UINT32_MAX && !s->started) {
		for (r = worker ? 0 : 1; r < n && tab[r]; r++)
			;
	}
	ans.status = s->root && s->started ? -EBUSY :
		     r >= n || tab[r] || (!worker && !r) ? -EADDRINUSE : 0;
	if (ans.status)
		return ps_conn_send(&s->node, c, &ans, NULL, 0, NULL);
	if (!worker) {
		ret = ps_addr_decode(payload, &s->node.addrs[r]);
		if (ret)
			return ret;
	}
	tab[r] = c;
	c->peer = worker ? PS_PEER_WORKER : PS_PEER_SERVER;
	c->rank = r;
	c->hello_id = m->req_id;
	if (!s->root)
		return ps_conn_send(&s->node, c, &ans, NULL, 0, NULL);
	if (worker)
		s->nworkers_reg++;
	else
		s->nservers_reg++;
	if (s->nworkers_reg < s->num_workers || s->nservers_reg + 1 < s->num_servers)
		return 0;
	/* Everyone is there: the roster to each, with its own rank. */
	s->started = true;
	for (i = 1; i < s->num_servers; i++) {
		ret = roster_send(s, s->servers[i], i);
		if (ret)
			return ret;
	}
	for (i = 0; i < s->num_workers; i++) {
		ret = roster_send(s, s->workers[i], i);
		if (ret)
			return ret;
	}
	return 0;
}

static int srv_on_hdr(struct ps_node *n, struct ps_conn *c, const struct ps_msg *m, void **dest)
{
	struct ps_server *s = node_srv(n);

	if (m->flags & PS_F_RESP) {
		/* Only server 0 answers a server: the roster, and its SHUTDOWN. */
		if (c != s->root_conn || c->shut)
			return -EPROTO;
		if (m->op != (s->roster_in ? PS_OP_SHUTDOWN : PS_OP_HELLO))
			return -EPROTO;
		if (m->length) {
			*dest = ps_conn_scratch(c, m->length);
			return *dest ? 0 : -ENOMEM;
		}
		return 0;
	}
	if (m->op == PS_OP_HELLO) {
		if (m->length) {
			*dest = ps_conn_scratch(c, m->length);
			return *dest ? 0 : -ENOMEM;
		}
		return 0;
	}
	/* Anything else comes from a registered node in its own name. */
	if (c->peer == PS_PEER_NONE || c->shut || !s->started || m->sender != c->rank ||
	    !(m->flags & PS_F_WORKER) != (c->peer == PS_PEER_SERVER))
		return -EPROTO;
	if (m->op == PS_OP_SHUTDOWN)
		return 0;
	if (c->peer != PS_PEER_WORKER || (m->op == PS_OP_BARRIER && !s->root))
		return -EPROTO;
	if (m->op == PS_OP_BARRIER)
		return 0;
	return data_hdr(s, c, m, dest);
}

/* Server 0's answer to this server's HELLO: the roster. */
static int roster_msg(struct ps_server *s, const struct ps_msg *m, void *payload)
{
	struct ps_roster r = { .addrs = s->node.addrs };
	int ret;

	if (m->status)
		return m->status;
	ret = ps_roster_decode(payload, m->length, false, &r);
	if (ret)
		return ret;
	s->num_servers = r.num_servers;
	s->num_workers = r.num_workers;
	s->mode = r.mode;
	s->lr = r.lr;
	s->scale = r.lr / r.num_workers;
	s->big_bound = r.big_bound;
	s->node.rank = r.rank;
	s->node.lim.key_max = r.key_max;
	s->node.lim.num_servers = r.num_servers;
	s->node.lim.num_workers = r.num_workers;
	s->workers = calloc(r.num_workers, sizeof(*s->workers));
	if (!s->workers)
		return -ENOMEM;
	s->roster_in = true;
	s->started = true;
	s->node.accepting = true;
	return 0;
}

static int srv_on_msg(struct ps_node *n, struct ps_conn *c, const struct ps_msg *m, void *payload)
{
	struct ps_server *s = node_srv(n);
	struct ps_waiter *w;
	int ret;

	if (m->flags & PS_F_RESP) {
		if (m->op == PS_OP_HELLO)
			return roster_msg(s, m, payload);
		s->root_acked = true;
		c->shut = true;
		return 0;
	}
	switch (m->op) {
	case PS_OP_HELLO:
		return hello_msg(s, c, m, payload);
	case PS_OP_SHUTDOWN:
		c->shut = true;
		if (c->peer == PS_PEER_SERVER) {
			s->nshut_servers++;
		} else {
			s->nshut_workers++;
			ret = srv_worker_gone(s);
			if (ret)
				return ret;
		}
		return srv_answer(s, c, m, NULL, 0);
	case PS_OP_BARRIER:
		for (w = s->barrier; w; w = w->next)
			if (w->c == c)
				return srv_answer(s, c, m, NULL, -EALREADY);
		if (s->nshut_workers)
			return srv_answer(s, c, m, NULL, -ESHUTDOWN);
		ret = waiter_add(&s->barrier, c, m);
		if (ret || ++s->nbarrier < s->num_workers)
			return ret;
		s->nbarrier = 0;
		while ((w = s->barrier) && !ret) {
			s->barrier = w->next;
			ret = srv_answer(s, w->c, &w->req, NULL, 0);
			free(w);
		}
		return ret;
	default:
		return data_msg(s, c, m, payload);
	}
}

static void srv_on_lost(struct ps_node *n, struct ps_conn *c, int err)
{
	struct ps_server *s = node_srv(n);

	/* Gone after its SHUTDOWN, or never registered: no loss to the job. */
	if (!err || (c->peer == PS_PEER_NONE && c != s->root_conn))
		return;
	srv_fail(s, err);
}

static const struct ps_node_ops srv_ops = {
	.on_hdr = srv_on_hdr,
	.on_msg = srv_on_msg,
	.on_lost = srv_on_lost,
};

static bool srv_done(struct ps_server *s)
{
	return s->nshut_workers == s->num_workers &&
	       (!s->root || s->nshut_servers + 1 == s->num_servers);
}

/* Progress until @cond holds, the server fails or @deadline passes. */
static int srv_until(struct ps_server *s, bool (*cond)(struct ps_server *s), int64_t deadline)
{
	int ret;

	while (!s->failed && !cond(s)) {
		if (deadline >= 0 && !ps_left_ms(deadline))
			return -ETIMEDOUT;
		ret = ps_node_progress(&s->node, ps_left_ms(deadline));
		if (ret)
			return ret;
	}
	return s->failed;
}

static bool srv_started(struct ps_server *s)
{
	return s->started;
}

static bool srv_root_acked(struct ps_server *s)
{
	return s->root_acked;
}

static int root_create(struct ps_server *s, const struct ps_config *cfg)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int ret;

	if (!cfg->num_servers || cfg->num_servers > PS_MAX_NODES || !cfg->num_workers ||
	    cfg->num_workers > PS_MAX_NODES || (unsigned int)cfg->mode > PS_ASYNC ||
	    !isfinite(cfg->lr) || (cfg->key_max && cfg->key_max < cfg->num_servers))
		return -EINVAL;
	s->root = true;
	s->num_servers = cfg->num_servers;
	s->num_workers = cfg->num_workers;
	s->mode = cfg->mode;
	s->lr = cfg->lr;
	s->scale = cfg->lr / cfg->num_workers;
	s->big_bound = cfg->big_bound ? cfg->big_bound : 65536;
	s->node.lim.key_max = cfg->key_max ? cfg->key_max : 65536;
	s->node.lim.num_servers = s->num_servers;
	s->node.lim.num_workers = s->num_workers;
	s->workers = calloc(s->num_workers, sizeof(*s->workers));
	s->servers = calloc(s->num_servers, sizeof(*s->servers));
	if (!s->workers || !s->servers)
		return -ENOMEM;
	ret = ps_resolve(cfg->root_host, cfg->root_port, AF_UNSPEC, &ss, &len);
	if (ret)
		return ret;
	ret = s->node.tr->listen(s->node.trx, (struct sockaddr *)&ss, len, &s->node.listener);
	if (ret)
		return ret;
	s->node.accepting = true;
	return srv_until(s, srv_started, ps_now_ms() + s->node.timeout_ms);
}

/* Listen, register with server 0 and wait for the roster. */
static int other_create(struct ps_server *s, const struct ps_config *cfg, int64_t deadline)
{
	struct ps_msg m = { .op = PS_OP_HELLO };
	struct sockaddr_storage root, me, lss;
	uint8_t *addr;
	socklen_t len;
	int ret;

	ret = ps_resolve(cfg->root_host, cfg->root_port, AF_UNSPEC, &root, &len);
	if (ret)
		return ret;
	ret = ps_resolve(cfg->bind_host, 0, root.ss_family, &me, &len);
	if (ret)
		return ret;
	ret = s->node.tr->listen(s->node.trx, (struct sockaddr *)&me, len, &s->node.listener);
	if (ret)
		return ret;
	ret = s->node.tr->local_addr(s->node.listener, &lss);
	if (ret)
		return ret;
	ret = ps_node_connect(&s->node, &root, deadline, &s->root_conn);
	if (ret)
		return ret;
	/* Without a bind address: the one server 0 sees this host at. */
	if (!cfg->bind_host) {
		ret = s->node.tr->local_addr(s->root_conn->tc, &me);
		if (ret)
			return ret;
	}
	if (me.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&me)->sin6_port = ((struct sockaddr_in6 *)&lss)->sin6_port;
	else
		((struct sockaddr_in *)&me)->sin_port = ((struct sockaddr_in *)&lss)->sin_port;
	s->root_conn->peer = PS_PEER_NONE;
	addr = malloc(PS_ADDR_LEN);
	if (!addr)
		return -ENOMEM;
	ps_addr_encode(&me, addr);
	ret = ps_conn_send(&s->node, s->root_conn, &m, addr, PS_ADDR_LEN, addr);
	if (ret)
		return ret;
	return srv_until(s, srv_started, deadline);
}

int ps_server_create(const struct ps_config *cfg, struct ps_server **out)
{
	struct ps_server *s;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	ret = ps_node_init(&s->node, cfg, &srv_ops, false);
	if (ret)
		goto out_free;
	if (cfg->rank == 0)
		ret = root_create(s, cfg);
	else
		ret = other_create(s, cfg, ps_now_ms() + s->node.timeout_ms);
	if (ret)
		goto out_free;
	*out = s;
	return 0;

out_free:
	ps_server_destroy(s);
	return ret;
}

int ps_server_run(struct ps_server *s)
{
	struct ps_msg m = { .op = PS_OP_SHUTDOWN };
	int64_t deadline;
	int ret;

	ret = srv_until(s, srv_done, -1);
	if (ret)
		return ret;
	deadline = ps_now_ms() + s->node.timeout_ms;
	/* Server 0 goes last: it must not take this server's end for a loss. */
	if (!s->root) {
		ret = ps_conn_send(&s->node, s->root_conn, &m, NULL, 0, NULL);
		if (!ret)
			ret = srv_until(s, srv_root_acked, deadline);
		if (ret)
			return ret;
	}
	return ps_node_flush(&s->node, deadline);
}

void ps_server_destroy(struct ps_server *s)
{
	struct ps_slice *sl;
	unsigned int b;

	for (b = 0; b < PS_SLICE_BUCKETS; b++) {
		while ((sl = s->slices[b])) {
			s->slices[b] = sl->next;
			waiters_free(sl->waiters);
			ps_agg_free(&sl->agg);
			free(sl->val);
			free(sl);
		}
	}
	waiters_free(s->barrier);
	ps_node_fini(&s->node);
	free(s->workers);
	free(s->servers);
	free(s);
}

int ps_serve(const struct ps_config *cfg)
{
	struct ps_server *s;
	int ret;

	ret = ps_server_create(cfg, &s);
	if (ret)
		return ret;
	ret = ps_server_run(s);
	ps_server_destroy(s);
	return ret;
}

// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * A libps worker: asynchronous requests, each cut into a part per server
 * that holds some of the key, with ids to wait on.  Progress is made in
 * ps_wait() (and as far as the transport takes it when a request is
 * made), so a worker needs no thread.
 *
 * Any lost connection or bad answer fails the worker: every connection is
 * closed (no late answer can then write into a caller's buffer), and every
 * request, pending or new, ends with that error.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ps_int.h"

#define PS_REQ_BUCKETS 1024

struct ps_wpart {
	uint32_t server;
	uint32_t offset;
	uint32_t len;
	bool done;
};

struct ps_req {
	struct ps_req *next;
	int id;
	uint8_t op;
	bool done;
	uint64_t key;
	uint32_t total;
	float *out;
	uint64_t *version;
	uint64_t minver;
	int nparts, left;
	int status;
	struct ps_wpart parts[];
};

struct ps_worker {
	struct ps_node node;
	uint32_t num_servers, num_workers, big_bound;
	struct ps_conn **servers;
	int failed;
	int next_id;
	bool roster_in;
	struct ps_req *reqs[PS_REQ_BUCKETS];
};

static struct ps_worker *node_wrk(struct ps_node *n)
{
	return (struct ps_worker *)n;
}

static struct ps_req *req_find(struct ps_worker *w, uint32_t id)
{
	struct ps_req *r;

	for (r = w->reqs[id % PS_REQ_BUCKETS]; r; r = r->next)
		if ((uint32_t)r->id == id)
			return r;
	return NULL;
}

static void req_remove(struct ps_worker *w, struct ps_req *r)
{
	struct ps_req **p = &w->reqs[r->id % PS_REQ_BUCKETS];

	while (*p != r)
		p = &(*p)->next;
	*p = r->next;
	free(r);
}

/* A new request with @nparts parts; NULL without memory. */
static struct ps_req *req_new(struct ps_worker *w, uint8_t op, int nparts)
{
	struct ps_req *r = calloc(1, sizeof(*r) + nparts * sizeof(r->parts[0]));

	if (!r)
		return NULL;
	/* Ids are positive; one still pending is skipped. */
	do {
		w->next_id = w->next_id == 0x7fffffff ? 1 : w->next_id + 1;
	} while (req_find(w, w->next_id));
	r->id = w->next_id;
	r->op = op;
	r->nparts = r->left = nparts;
	r->minver = UINT64_MAX;
	r->next = w->reqs[r->id % PS_REQ_BUCKETS];
	w->reqs[r->id % PS_REQ_BUCKETS] = r;
	return r;
}

static void wrk_fail(struct ps_worker *w, int err)
{
	struct ps_req *r;
	unsigned int i;

	if (w->failed)
		return;
	w->failed = err;
	for (i = 0; i < w->node.nconns; i++)
		ps_conn_drop(&w->node, w->node.conns[i], err);
	for (i = 0; i < PS_REQ_BUCKETS; i++) {
		for (r = w->reqs[i]; r; r = r->next) {
			if (!r->done) {
				r->done = true;
				r->status = err;
			}
		}
	}
}

/* Send request @r's part @i: header @m, its values from @in if any. */
static void req_send(struct ps_worker *w, struct ps_req *r, int i, struct ps_msg *m,
		     const float *in)
{
	struct ps_wpart *p = &r->parts[i];
	int ret;

	m->req_id = r->id;
	m->offset = m->total ? p->offset : 0;
	ret = ps_conn_send(&w->node, w->servers[p->server], m, in ? in + p->offset : NULL,
			   in ? (size_t)p->len * sizeof(float) : 0, NULL);
	if (ret)
		wrk_fail(w, ret);
}

/* A request to every server (from @first on) that carries no key. */
static int req_all(struct ps_worker *w, uint8_t op, uint32_t first)
{
	struct ps_msg m = { .op = op };
	struct ps_req *r;
	uint32_t s;

	if (w->failed)
		return w->failed;
	r = req_new(w, op, w->num_servers - first);
	if (!r)
		return -ENOMEM;
	for (s = first; s < w->num_servers; s++) {
		r->parts[s - first].server = s;
		req_send(w, r, s - first, &m, NULL);
	}
	return r->id;
}

static int req_data(struct ps_worker *w, uint8_t op, uint64_t key, const float *in, float *out,
		    uint32_t n, uint64_t iter, uint64_t *version)
{
	struct ps_msg m = { .op = op, .key = key, .iter = iter, .total = n };
	struct ps_part parts[w->num_servers ? w->num_servers : 1];
	struct ps_req *r;
	int i, cnt;

	if (w->failed)
		return w->failed;
	if (key >= w->node.lim.key_max || !n || (op != PS_OP_PULL && !in) ||
	    ((op == PS_OP_PULL || op == PS_OP_PUSHPULL) && !out))
		return -EINVAL;
	cnt = ps_shard(w->node.lim.key_max, w->num_servers, w->big_bound, key, n, parts);
	for (i = 0; i < cnt; i++)
		if ((uint64_t)parts[i].len * sizeof(float) > w->node.lim.max_msg)
			return -EMSGSIZE;
	r = req_new(w, op, cnt);
	if (!r)
		return -ENOMEM;
	r->key = key;
	r->total = n;
	r->out = out;
	r->version = version;
	for (i = 0; i < cnt; i++) {
		r->parts[i].server = parts[i].server;
		r->parts[i].offset = parts[i].offset;
		r->parts[i].len = parts[i].len;
		req_send(w, r, i, &m, op == PS_OP_PULL ? NULL : in);
	}
	return r->id;
}

int ps_init(struct ps_worker *w, uint64_t key, const float *vals, uint32_t n)
{
	return req_data(w, PS_OP_INIT, key, vals, NULL, n, 0, NULL);
}

int ps_push(struct ps_worker *w, uint64_t key, const float *grad, uint32_t n, uint64_t iter)
{
	return req_data(w, PS_OP_PUSH, key, grad, NULL, n, iter, NULL);
}

int ps_pull(struct ps_worker *w, uint64_t key, float *out, uint32_t n, uint64_t iter,
	    uint64_t *version)
{
	return req_data(w, PS_OP_PULL, key, NULL, out, n, iter, version);
}

int ps_pushpull(struct ps_worker *w, uint64_t key, const float *grad, float *out, uint32_t n,
		uint64_t iter, uint64_t *version)
{
	return req_data(w, PS_OP_PUSHPULL, key, grad, out, n, iter, version);
}

/* The part of @r that server @server answers with @m, or NULL. */
static struct ps_wpart *part_of(struct ps_req *r, uint32_t server, const struct ps_msg *m)
{
	int i;

	if (r->done || r->op != m->op || r->key != m->key || (r->total && r->total != m->total))
		return NULL;
	for (i = 0; i < r->nparts; i++) {
		if (r->parts[i].server == server && !r->parts[i].done) {
			if (r->total && r->parts[i].offset != m->offset)
				return NULL;
			return &r->parts[i];
		}
	}
	return NULL;
}

static int wrk_on_hdr(struct ps_node *n, struct ps_conn *c, const struct ps_msg *m, void **dest)
{
	struct ps_worker *w = node_wrk(n);
	struct ps_req *r = req_find(w, m->req_id);
	struct ps_wpart *p;

	/* Servers only answer, each in its own name. */
	if (!(m->flags & PS_F_RESP) || (m->flags & PS_F_WORKER) || m->sender != c->rank)
		return -EPROTO;
	p = r ? part_of(r, c->rank, m) : NULL;
	if (!p)
		return -EPROTO;
	if (!m->length)
		return 0;
	if (m->op == PS_OP_HELLO && !c->rank && !w->roster_in) {
		*dest = ps_conn_scratch(c, m->length);
		return *dest ? 0 : -ENOMEM;
	}
	/* Values straight into the caller's buffer, if they are the part's. */
	if (m->length != (size_t)p->len * sizeof(float) || !r->out)
		return -EPROTO;
	*dest = r->out + p->offset;
	return 0;
}

static int roster_in(struct ps_worker *w, const struct ps_msg *m, void *payload)
{
	struct ps_roster ro = { .addrs = w->node.addrs };
	struct ps_conn **servers;
	int ret;

	ret = ps_roster_decode(payload, m->length, true, &ro);
	if (ret)
		return ret;
	servers = calloc(ro.num_servers, sizeof(*servers));
	if (!servers)
		return -ENOMEM;
	servers[0] = w->servers[0];
	free(w->servers);
	w->servers = servers;
	w->num_servers = ro.num_servers;
	w->num_workers = ro.num_workers;
	w->big_bound = ro.big_bound;
	w->node.rank = ro.rank;
	w->node.lim.key_max = ro.key_max;
	w->node.lim.num_servers = ro.num_servers;
	w->node.lim.num_workers = ro.num_workers;
	w->roster_in = true;
	return 0;
}

static int wrk_on_msg(struct ps_node *n, struct ps_conn *c, const struct ps_msg *m, void *payload)
{
	struct ps_worker *w = node_wrk(n);
	struct ps_req *r = req_find(w, m->req_id);
	struct ps_wpart *p = r ? part_of(r, c->rank, m) : NULL;
	int ret;

	if (!p)
		return -EPROTO;

	if (m->op == PS_OP_HELLO && !c->rank && !w->roster_in && !m->status) {
		ret = roster_in(w, m, payload);
		if (ret)
			return ret;
	}
	if (m->op == PS_OP_SHUTDOWN)
		c->shut = true;
	p->done = true;
	if (m->status && !r->status)
		r->status = m->status;
	if (m->iter < r->minver)
		r->minver = m->iter;
	if (!--r->left)
		r->done = true;
	return 0;
}

static void wrk_on_lost(struct ps_node *n, struct ps_conn *c __attribute__((unused)), int err)
{
	/* Any server lost fails it: its parts of every key are gone. */
	if (err)
		wrk_fail(node_wrk(n), err);
}

static const struct ps_node_ops wrk_ops = {
	.on_hdr = wrk_on_hdr,
	.on_msg = wrk_on_msg,
	.on_lost = wrk_on_lost,
};

void *ps_buf_alloc(struct ps_worker *w, size_t len)
{
	return ps_node_buf(&w->node, len);
}

void ps_buf_free(struct ps_worker *w, void *p)
{
	ps_node_buf_free(&w->node, p);
}

int ps_wait(struct ps_worker *w, int id, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : ps_now_ms() + timeout_ms;
	struct ps_req *r = id > 0 ? req_find(w, id) : NULL;
	int ret;

	if (!r)
		return -ENOENT;
	/* One round at least, so that a timeout of 0 polls. */
	while (!r->done) {
		ret = ps_node_progress(&w->node, ps_left_ms(deadline));
		if (ret)
			wrk_fail(w, ret);
		if (!r->done && deadline >= 0 && !ps_left_ms(deadline))
			return -ETIMEDOUT;
	}
	ret = r->status;
	if (!ret && r->version)
		*r->version = r->minver;
	req_remove(w, r);
	return ret;
}

int ps_barrier(struct ps_worker *w, int timeout_ms)
{
	struct ps_msg m = { .op = PS_OP_BARRIER };
	struct ps_req *r;

	if (w->failed)
		return w->failed;
	r = req_new(w, PS_OP_BARRIER, 1);
	if (!r)
		return -ENOMEM;
	r->parts[0].server = 0;
	req_send(w, r, 0, &m, NULL);
	return ps_wait(w, r->id, timeout_ms);
}

int ps_worker_rank(const struct ps_worker *w)
{
	return w->node.rank;
}

int ps_num_workers(const struct ps_worker *w)
{
	return w->num_workers;
}

int ps_num_servers(const struct ps_worker *w)
{
	return w->num_servers;
}

void ps_worker_bytes(const struct ps_worker *w, uint64_t *sent, uint64_t *received)
{
	*sent = w->node.tx_bytes;
	*received = w->node.rx_bytes;
}

/* Register with server 0, take the roster, say HELLO to every other server. */
static int wrk_start(struct ps_worker *w, const struct ps_config *cfg, int64_t deadline)
{
	struct sockaddr_storage root;
	socklen_t len;
	uint32_t s;
	int ret, id;

	ret = ps_resolve(cfg->root_host, cfg->root_port, AF_UNSPEC, &root, &len);
	if (ret)
		return ret;
	w->servers = calloc(1, sizeof(*w->servers));
	if (!w->servers)
		return -ENOMEM;
	ret = ps_node_connect(&w->node, &root, deadline, &w->servers[0]);
	if (ret)
		return ret;
	w->servers[0]->peer = PS_PEER_SERVER;
	w->num_servers = 1;
	id = req_all(w, PS_OP_HELLO, 0);
	if (id < 0)
		return id;
	ret = ps_wait(w, id, ps_left_ms(deadline));
	if (ret)
		return ret;
	for (s = 1; s < w->num_servers; s++) {
		ret = ps_node_connect(&w->node, &w->node.addrs[s], deadline, &w->servers[s]);
		if (ret)
			return ret;
		w->servers[s]->peer = PS_PEER_SERVER;
		w->servers[s]->rank = s;
	}
	if (w->num_servers == 1)
		return 0;
	id = req_all(w, PS_OP_HELLO, 1);
	if (id < 0)
		return id;
	return ps_wait(w, id, ps_left_ms(deadline));
}

int ps_worker_create(const struct ps_config *cfg, struct ps_worker **out)
{
	struct ps_worker *w;
	int ret;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	ret = ps_node_init(&w->node, cfg, &wrk_ops, true);
	if (ret)
		goto out_free;
	ret = wrk_start(w, cfg, ps_now_ms() + w->node.timeout_ms);
	if (ret)
		goto out_free;
	*out = w;
	return 0;

out_free:
	w->failed = ret;
	ps_worker_destroy(w);
	return ret;
}

int ps_worker_destroy(struct ps_worker *w)
{
	struct ps_req *r;
	unsigned int i;
	int ret = w->failed, id;

	if (!ret) {
		id = req_all(w, PS_OP_SHUTDOWN, 0);
		ret = id < 0 ? id : ps_wait(w, id, w->node.timeout_ms);
	}
	ps_node_fini(&w->node);
	for (i = 0; i < PS_REQ_BUCKETS; i++) {
		while ((r = w->reqs[i])) {
			w->reqs[i] = r->next;
			free(r);
		}
	}
	free(w->servers);
	free(w);
	return ret;
}

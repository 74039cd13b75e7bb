/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libps: a parameter server in C (ps-lite's model): S servers hold
 * range-sharded keys, W workers push gradients and pull values.
 *
 * Functions return 0 (or a non-negative value) on success and a negative
 * errno on failure; errno itself is left alone.  No object is thread safe;
 * separate objects (a server and workers in threads of one process) are.
 * See Documentation/parameter-server.rst.
 */
#ifndef LIBPS_H
#define LIBPS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** enum ps_mode - how servers apply pushes. */
enum ps_mode {
	/* Sum the W pushes of an iteration in rank order, apply once, answer. */
	PS_SYNC = 0,
	/* Apply every push as it comes; pulls never wait. */
	PS_ASYNC = 1,
};

/**
 * struct ps_config - one node's configuration
 * @transport: "sockets" (TCP, also under rsocket's or rdmashare's preload),
 *	"rdmashare" (rdmashare's rings: one file per node, an AC per
 *	connection) or "verbs" (an RC queue pair per connection); NULL is
 *	"sockets"
 * @root_host: server 0's address (a name or a numeric IPv4/IPv6 address)
 * @root_port: server 0's port
 * @rank: a server's or worker's rank, or -1 for the next free one; a server
 *	with rank 0 is server 0 (it listens on @root_host:@root_port and acts
 *	as scheduler)
 * @num_servers: S (server 0 only; the others learn it at start-up)
 * @num_workers: W (server 0 only)
 * @mode: PS_SYNC or PS_ASYNC (server 0 only)
 * @lr: learning rate (server 0 only): an update is w -= (lr / W) * g, g the
 *	rank-order sum of the iteration's W gradients (sync) or one push (async)
 * @key_max: keys are below it, split into S equal ranges (server 0 only;
 *	0 means 65536)
 * @big_bound: a key with more elements is split across all servers
 *	(server 0 only; 0 means 65536)
 * @bind_host: address a server other than 0 listens on (NULL: every
 *	address, advertising the one its connection to server 0 comes from)
 * @pipeline: requests in flight per connection (0 means 16)
 * @timeout_ms: how long start-up and shutdown may take (0 means 30000)
 * @max_msg: largest payload in bytes a node accepts (0 means 64 MiB)
 * @buf_size: bytes of registered memory that the rdmashare and verbs
 *	transports send from without a copy: ps_buf_alloc()'s, and a
 *	server's answers (0 means 32 MiB)
 */
struct ps_config {
	const char *transport;
	const char *root_host;
	uint16_t root_port;
	int rank;
	unsigned int num_servers;
	unsigned int num_workers;
	enum ps_mode mode;
	float lr;
	uint64_t key_max;
	uint32_t big_bound;
	const char *bind_host;
	unsigned int pipeline;
	int timeout_ms;
	uint32_t max_msg;
	size_t buf_size;
};

struct ps_server;
struct ps_worker;

/** ps_transport_ok() - 1 if @name is a transport of this libps, else 0 */
int ps_transport_ok(const char *name);

/**
 * ps_server_create() - start a server
 *
 * Server 0 listens and waits (at most @cfg->timeout_ms) until every server
 * and worker registered, then sends them the roster.  Another server
 * listens, registers with server 0 and waits for the roster.
 *
 * Return: 0, -EINVAL for a bad configuration, -ETIMEDOUT, -ECONNRESET if a
 * node went away during start-up, -EPROTO for a bad message, or the errno
 * of a system call.
 */
int ps_server_create(const struct ps_config *cfg, struct ps_server **out);

/**
 * ps_server_run() - serve until every worker (and, on server 0, every
 * other server) shut down
 *
 * Return: 0 after a clean shutdown; -ECONNRESET when a worker or server
 * went away without one (every connection is then closed, so that every
 * other node's waits fail too), -EPROTO for a malformed message.
 */
int ps_server_run(struct ps_server *s);

/** ps_server_destroy() - close every connection and free @s. */
void ps_server_destroy(struct ps_server *s);

/**
 * ps_serve() - a server's whole life: create, run, destroy
 *
 * Return: the first error of ps_server_create() or ps_server_run(), or 0.
 */
int ps_serve(const struct ps_config *cfg);

/**
 * ps_worker_create() - start a worker: register with server 0, wait for
 * the roster (at most @cfg->timeout_ms), connect to every other server.
 *
 * Return: as ps_server_create().
 */
int ps_worker_create(const struct ps_config *cfg, struct ps_worker **out);

/** ps_worker_rank(), ps_num_workers(), ps_num_servers(): from the roster. */
int ps_worker_rank(const struct ps_worker *w);
int ps_num_workers(const struct ps_worker *w);
int ps_num_servers(const struct ps_worker *w);

/**
 * ps_init() - create key @key with @n elements, values @vals, version 0
 *
 * Return: a request id (> 0) for ps_wait(), or -errno.  ps_wait() gives
 * -EEXIST if the key exists already.
 */
int ps_init(struct ps_worker *w, uint64_t key, const float *vals, uint32_t n);

/**
 * ps_push() - push gradient @grad (@n elements, the key's size) of
 * iteration @iter
 *
 * In sync mode @iter must be the key's version (the one pulled);
 * ps_wait() gives -ESTALE for another and -EALREADY for a second push of
 * the iteration.  The request completes once the update is applied.
 *
 * Return: a request id, or -errno.  @grad must stay unchanged until
 * ps_wait() returned for the id.
 */
int ps_push(struct ps_worker *w, uint64_t key, const float *grad, uint32_t n, uint64_t iter);

/**
 * ps_pull() - pull the values of version @iter or later into @out
 *
 * In sync mode the answer waits until version @iter exists.  The version
 * got is stored in *@version if not NULL (the lowest of a split key's
 * parts) when ps_wait() returns 0.  ps_wait() gives -ENOENT for a key not
 * created.
 *
 * Return: a request id, or -errno.  @out and @version must stay valid until
 * ps_wait() returned for the id.
 */
int ps_pull(struct ps_worker *w, uint64_t key, float *out, uint32_t n, uint64_t iter,
	    uint64_t *version);

/**
 * ps_pushpull() - push @grad of iteration @iter and pull the values the
 * update makes (version @iter + 1 in sync mode) into @out
 */
int ps_pushpull(struct ps_worker *w, uint64_t key, const float *grad, float *out, uint32_t n,
		uint64_t iter, uint64_t *version);

/**
 * ps_wait() - wait for request @id, making progress on every connection
 * @timeout_ms: -1 waits for good; 0 takes what is there and returns
 *
 * Return: 0 once the request completed, the error a server answered with,
 * -ETIMEDOUT (the request stays pending: wait again), -ENOENT for an id not
 * pending, or the worker's failure (-ECONNRESET when a server or, through
 * it, another worker went away; -EPROTO) for every request from then on.
 * An id is gone once ps_wait() returned anything but -ETIMEDOUT.
 */
int ps_wait(struct ps_worker *w, int id, int timeout_ms);

/**
 * ps_barrier() - wait until every worker reached its barrier
 *
 * Return: 0, -ETIMEDOUT, or the worker's failure.
 */
int ps_barrier(struct ps_worker *w, int timeout_ms);

/**
 * ps_worker_bytes() - payload and header bytes this worker sent and
 * received so far
 */
void ps_worker_bytes(const struct ps_worker *w, uint64_t *sent, uint64_t *received);

/**
 * ps_buf_alloc() - memory for values to push, which the transport sends
 * without copying them (rdmashare's data area, verbs' registered memory)
 *
 * Return: @len bytes, from the transport's registered memory while it has
 * room, else from malloc(3) (sent with a copy); NULL without memory.
 */
void *ps_buf_alloc(struct ps_worker *w, size_t len);

/**
 * ps_buf_free() - free a ps_buf_alloc() buffer; NULL is ignored
 *
 * A push sent from it and still on the wire keeps it until it is sent.
 * Every buffer is freed before ps_worker_destroy().
 */
void ps_buf_free(struct ps_worker *w, void *p);

/**
 * ps_worker_destroy() - tell every server this worker is done (waiting at
 * most the configured timeout for them to take it), close, free
 *
 * Return: 0, or the error that made the shutdown unclean.
 */
int ps_worker_destroy(struct ps_worker *w);

#ifdef __cplusplus
}
#endif

#endif

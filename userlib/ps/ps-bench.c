// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * ps-bench: libps's benchmark, shaped like ps-lite's (test_kv_app_benchmark):
 * S servers hold K keys each, of V bytes of values; W workers each, every
 * round, push, pull or push-then-pull (pushpull) every key of every server,
 * all requests in flight at once (up to the pipeline depth per connection),
 * then wait for them.  Async servers: each push is applied as it comes.
 *
 *   ps-bench --local -S 2 -W 4 [options]    every node, forked on this host
 *   ps-bench --server RANK -H HOST -p PORT [-S 2 -W 4] [options]
 *   ps-bench --worker RANK -H HOST -p PORT [options]
 *
 * Worker 0 prints the goodput (value bytes moved by all W workers, both
 * ways for pushpull, over the time between two barriers around the
 * measured rounds) and its requests' latency percentiles (issue to the
 * return of their ps_wait(), waited for in issue order); every worker, the
 * time its own measured rounds took (the goodput is the slowest's, so an
 * unfair transport shows there).  Values to push
 * come from ps_buf_alloc(), so the rdmashare and verbs transports send
 * them without a copy.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ps.h"
#include "ps_cli.h"

enum mode { M_PUSH, M_PULL, M_PUSHPULL };
static const char *const mode_name[] = { "push", "pull", "pushpull" };

struct opts {
	struct ps_job job;
	unsigned int keys, rounds, warmup;
	size_t size;
	enum mode mode;
	int timeout_ms;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static struct ps_config node_config(const struct opts *o, int rank)
{
	uint32_t n = o->size / sizeof(float);

	return (struct ps_config){
		.transport = o->job.transport, .root_host = o->job.host, .root_port = o->job.port,
		.rank = rank, .num_servers = o->job.S, .num_workers = o->job.W, .mode = PS_ASYNC,
		.lr = 1.0f, .key_max = (uint64_t)o->job.S * o->keys,
		/* Keys whole on their server, as ps-lite's benchmark keeps them. */
		.big_bound = n, .pipeline = o->job.pipeline, .timeout_ms = o->job.timeout_ms,
		/* Every key's values to push, and the answers on their way. */
		.buf_size = (size_t)o->job.S * o->keys * o->size + (8 << 20),
	};
}

static int run_server(const struct opts *o, int rank)
{
	struct ps_config cfg = node_config(o, rank);
	int ret = ps_serve(&cfg);

	if (ret)
		fprintf(stderr, "ps-bench: server %d: %s\n", rank, strerror(-ret));
	return ret ? 1 : 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One round: a request per key, all issued, then waited for in order. */
static int round_trip(const struct opts *o, struct ps_worker *w, float **val, float **out,
		      int *ids, double *lat)
{
	unsigned int k, nk = o->job.S * o->keys;
	uint32_t n = o->size / sizeof(float);
	double t0 = now_us();
	int ret = 0, r;

	for (k = 0; k < nk; k++) {
		if (o->mode == M_PUSH)
			ids[k] = ps_push(w, k, val[k], n, 0);
		else if (o->mode == M_PULL)
			ids[k] = ps_pull(w, k, out[k], n, 0, NULL);
		else
			ids[k] = ps_pushpull(w, k, val[k], out[k], n, 0, NULL);
	}
	for (k = 0; k < nk; k++) {
		r = ids[k] < 0 ? ids[k] : ps_wait(w, ids[k], o->job.timeout_ms);
		if (lat)
			lat[k] = now_us() - t0;
		if (r && !ret)
			ret = r;
	}
	return ret;
}

static void report(const struct opts *o, double secs, double *lat, size_t nlat)
{
	double bytes = (double)o->job.W * o->rounds * o->job.S * o->keys * o->size;

	if (o->mode == M_PUSHPULL)
		bytes *= 2;
	qsort(lat, nlat, sizeof(*lat), cmp_double);
	printf("ps-bench: transport %s S %u W %u keys/server %u size %zu mode %s rounds %u\n",
	       o->job.transport, o->job.S, o->job.W, o->keys, o->size, mode_name[o->mode], o->rounds);
	printf("ps-bench: goodput %.1f MB/s in %.3f s; latency us p50 %.0f p90 %.0f p99 %.0f "
	       "max %.0f (%zu requests)\n", bytes / secs / 1e6, secs, lat[nlat / 2],
	       lat[nlat * 9 / 10], lat[nlat * 99 / 100], lat[nlat - 1], nlat);
}

static int run_worker(const struct opts *o, int rank)
{
	struct ps_config cfg = node_config(o, rank);
	unsigned int k, i, nk = o->job.S * o->keys;
	float **val = calloc(nk, sizeof(*val)), **out = calloc(nk, sizeof(*out));
	double *lat = calloc((size_t)nk * o->rounds, sizeof(*lat)), t0 = 0;
	int *ids = calloc(nk, sizeof(*ids)), ret;
	struct ps_worker *w = NULL;

	ret = val && out && lat && ids ? 0 : -ENOMEM;
	if (!ret)
		ret = ps_worker_create(&cfg, &w);
	for (k = 0; k < nk && !ret; k++) {
		val[k] = ps_buf_alloc(w, o->size);
		out[k] = ps_buf_alloc(w, o->size);
		if (!val[k] || !out[k])
			ret = -ENOMEM;
		else
			memset(val[k], 0, o->size);
	}
	if (!ret && !ps_worker_rank(w)) {
		for (k = 0; k < nk && !ret; k++)
			ids[k] = ps_init(w, k, val[k], o->size / sizeof(float));
		for (k = 0; k < nk; k++) {
			int r = ids[k] < 0 ? ids[k] : ps_wait(w, ids[k], o->job.timeout_ms);

			ret = ret ? ret : r;
		}
	}
	/* The keys exist before anybody uses them. */
	if (!ret)
		ret = ps_barrier(w, o->job.timeout_ms);
	for (i = 0; i < o->warmup + 1 + o->rounds && !ret; i++) {
		if (i == o->warmup) {
			/* Everybody starts the measured rounds together. */
			ret = ps_barrier(w, o->job.timeout_ms);
			t0 = now_us();
			continue;
		}
		ret = round_trip(o, w, val, out, ids,
				 i > o->warmup ? lat + (size_t)(i - o->warmup - 1) * nk : NULL);
	}
	/* Each worker's own time: the goodput is the slowest one's. */
	if (!ret)
		printf("ps-bench: worker %d took %.3f s for the measured rounds\n", ps_worker_rank(w),
		       (now_us() - t0) / 1e6);
	if (!ret)
		ret = ps_barrier(w, o->job.timeout_ms);
	if (!ret && !ps_worker_rank(w))
		report(o, (now_us() - t0) / 1e6, lat, (size_t)nk * o->rounds);
	for (k = 0; w && k < nk; k++) {
		ps_buf_free(w, val[k]);
		ps_buf_free(w, out[k]);
	}
	if (w) {
		int r = ps_worker_destroy(w);

		ret = ret ? ret : r;
	}
	if (ret)
		fprintf(stderr, "ps-bench: worker %d: %s\n", rank, strerror(-ret));
	free(val);
	free(out);
	free(lat);
	free(ids);
	return ret ? 1 : 0;
}

/* Node @i of the job: the servers, then the workers. */
static int run_node(const void *ctx, unsigned int i)
{
	const struct opts *o = ctx;

	return i < o->job.S ? run_server(o, i) : run_worker(o, i - o->job.S);
}

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr,
		"usage: ps-bench (--local | --server RANK | --worker RANK) [-H HOST] [-p PORT]\n"
		"       [-S SERVERS] [-W WORKERS] [--transport sockets|rdmashare|verbs]\n"
		"       [--keys K] [--size BYTES] [--mode push|pull|pushpull] [--rounds N]\n"
		"       [--warmup N] [--pipeline N] [--timeout MS]\n");
	exit(2);
}

/* @s as a whole number from @min to @max, with a K or M suffix; or the usage. */
static unsigned long num(const char *s, unsigned long min, unsigned long max)
{
	unsigned long v;

	if (!ps_cli_num(s, min, max, &v))
		usage();
	return v;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		PS_JOB_LONGOPTS,
		{ "keys", required_argument, NULL, 'k' }, { "size", required_argument, NULL, 'v' },
		{ "mode", required_argument, NULL, 'm' }, { "rounds", required_argument, NULL, 'r' },
		{ "warmup", required_argument, NULL, 'u' }, { NULL, 0, NULL, 0 },
	};
	struct opts o = {
		.job = {
			.host = "127.0.0.1", .transport = "sockets", .port = 9500, .server = -1,
			.worker = -1, .S = 1, .W = 2, .pipeline = 16, .timeout_ms = 60000,
		},
		.keys = 4, .rounds = 20, .warmup = 2, .size = 4096, .mode = M_PUSHPULL,
	};
	int c;

	while ((c = ps_cli_getopt(argc, argv, lo, &o.job)) != -1) {
		switch (c) {
		case 'k':
			o.keys = num(optarg, 1, 1 << 16);
			break;
		case 'v':
			/* Whole floats, at most what one message takes by default. */
			o.size = num(optarg, 4, 32 << 20) & ~(size_t)3;
			break;
		case 'm':
			for (o.mode = M_PUSH; o.mode <= M_PUSHPULL; o.mode++)
				if (!strcmp(optarg, mode_name[o.mode]))
					break;
			if (o.mode > M_PUSHPULL)
				usage();
			break;
		case 'r':
			o.rounds = num(optarg, 1, 1 << 24);
			break;
		case 'u':
			o.warmup = num(optarg, 0, 1 << 24);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !ps_cli_job_ok(&o.job) || (uint64_t)o.job.S * o.keys > UINT32_MAX)
		usage();
	if (o.job.local)
		return ps_cli_run_local(&o.job, run_node, &o, "ps-bench");
	return o.job.server >= 0 ? run_server(&o, o.job.server) : run_worker(&o, o.job.worker);
}

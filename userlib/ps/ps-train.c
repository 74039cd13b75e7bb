// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * ps-train: data-parallel SGD on Fashion-MNIST over libps.
 *
 * A softmax model (784-10) or an MLP (784-H-10, ReLU), its layers' weights
 * and biases as keys.  Worker r trains on the samples i with i % W == r,
 * shuffled each epoch from the seed; each step it pushes the gradient of
 * its batch (mean over the batch) and pulls the update.  With sync SGD the
 * servers sum the W gradients in rank order, so the final weights, and
 * their hash, are the same bits over any transport and in any run with
 * the same seed.
 *
 *   ps-train --local -S 2 -W 2 [options]    every node, forked on this host
 *   ps-train --server RANK -H HOST -p PORT [-S 2 -W 2] [options]
 *   ps-train --worker RANK -H HOST -p PORT [options]
 *
 * --transport picks libps's: sockets (TCP), rdmashare or verbs.
 *
 * Worker 0 prints, per epoch: the training loss of its batches, the test
 * loss and accuracy, its seconds of compute and of communication and the
 * bytes it moved; then the FNV-1a hash of the final weights.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ps.h"
#include "ps_cli.h"

#define NPIX	784
#define NCLASS	10
#define MAXKEYS	4

struct opts {
	struct ps_job job;
	const char *data;
	bool mlp;
	unsigned int hidden, epochs, batch, ntrain, ntest, big_bound;
	float lr;
	unsigned long long seed;
	int timeout_ms;
};

struct dataset {
	unsigned int n;
	float *x;		/* n * NPIX, in [0, 1] */
	unsigned char *y;
};

/* The model: its keys' sizes, and the values as one worker holds them. */
struct model {
	unsigned int nkeys;
	uint32_t len[MAXKEYS];
	float *w[MAXKEYS], *g[MAXKEYS];
	unsigned int hidden;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [-a, a), from the top 24 bits: exact in a float. */
static float uniform(uint64_t *s, float a)
{
	return a * ((float)(splitmix64(s) >> 40) / (float)(1 << 23) - 1.0f);
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

/*
 * The first @want items of the gzipped IDX file @path (magic @magic, item
 * size @item bytes after @dims dimensions) into @buf; the count read, or
 * -errno.  gzip stops once we stop reading.
 */
static int idx_read(const char *path, uint32_t magic, unsigned int dims, size_t item,
		    unsigned int want, unsigned char **buf)
{
	unsigned char hdr[16];
	char cmd[1200];
	unsigned int i, n;
	size_t sz;
	FILE *f;
	int ret;

	if (access(path, R_OK))
		return -errno;
	snprintf(cmd, sizeof(cmd), "gzip -dc '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	ret = -EPROTO;
	if (fread(hdr, 4, 1 + dims, f) != 1 + dims || be32(hdr) != magic)
		goto out;
	n = be32(hdr + 4);
	/* Images are 28 x 28. */
	for (i = 1; i < dims; i++)
		if (be32(hdr + 4 + 4 * i) != 28)
			goto out;
	if (want && want < n)
		n = want;
	sz = (size_t)n * item;
	*buf = malloc(sz ? sz : 1);
	ret = -ENOMEM;
	if (!*buf)
		goto out;
	ret = n;
	if (fread(*buf, 1, sz, f) != sz) {
		free(*buf);
		ret = -EPROTO;
	}
out:
	/* gzip dies of the pipe we close early: we have what we read. */
	pclose(f);
	return ret;
}

static int load(const char *dir, const char *set, unsigned int want, struct dataset *d)
{
	char ip[1024], lp[1024];
	unsigned char *img, *lab;
	int n, m;
	size_t i;

	snprintf(ip, sizeof(ip), "%s/%s-images-idx3-ubyte.gz", dir, set);
	snprintf(lp, sizeof(lp), "%s/%s-labels-idx1-ubyte.gz", dir, set);
	n = idx_read(ip, 0x803, 3, NPIX, want, &img);
	if (n < 0) {
		fprintf(stderr, "ps-train: %s: %s\n", ip, strerror(-n));
		return n;
	}
	m = idx_read(lp, 0x801, 1, 1, want, &lab);
	if (m < 0 || m != n) {
		fprintf(stderr, "ps-train: %s: %s\n", lp, m < 0 ? strerror(-m) : "count differs");
		free(img);
		if (m >= 0)
			free(lab);
		return m < 0 ? m : -EPROTO;
	}
	d->n = n;
	d->y = lab;
	d->x = malloc((size_t)n * NPIX * sizeof(float));
	if (!d->x) {
		free(img);
		free(lab);
		return -ENOMEM;
	}
	for (i = 0; i < (size_t)n * NPIX; i++)
		d->x[i] = img[i] / 255.0f;
	free(img);
	for (i = 0; i < (size_t)n; i++)
		if (d->y[i] >= NCLASS)
			return -EPROTO;
	return 0;
}

/* Softmax: keys W (10 x 784), b; MLP: W1 (H x 784), b1, W2 (10 x H), b2. */
static int model_init(struct model *m, const struct opts *o)
{
	unsigned int k;

	m->hidden = o->hidden;
	if (o->mlp) {
		m->nkeys = 4;
		m->len[0] = o->hidden * NPIX;
		m->len[1] = o->hidden;
		m->len[2] = NCLASS * o->hidden;
		m->len[3] = NCLASS;
	} else {
		m->nkeys = 2;
		m->len[0] = NCLASS * NPIX;
		m->len[1] = NCLASS;
	}
	for (k = 0; k < m->nkeys; k++) {
		m->w[k] = calloc(m->len[k], sizeof(float));
		m->g[k] = calloc(m->len[k], sizeof(float));
		if (!m->w[k] || !m->g[k])
			return -ENOMEM;
	}
	return 0;
}

/* Weights uniform in +-sqrt(6 / (fan_in + fan_out)) from the seed, biases 0. */
static void model_random(struct model *m, uint64_t seed)
{
	unsigned int k, i, fan_in, fan_out;
	uint64_t s = seed;
	float a;

	for (k = 0; k < m->nkeys; k += 2) {
		fan_in = k ? m->hidden : NPIX;
		fan_out = m->len[k] / fan_in;
		a = sqrtf(6.0f / (fan_in + fan_out));
		for (i = 0; i < m->len[k]; i++)
			m->w[k][i] = uniform(&s, a);
	}
}

/*
 * One sample: class probabilities into @p, and if @grad, its gradient
 * added to m->g; the sample's loss.  @h holds the hidden layer.
 */
static float sample(struct model *m, const float *x, int y, float *p, float *h, bool grad)
{
	const float *in = x;
	unsigned int nin = NPIX, c, j, i;
	float *W = m->w[0], *b = m->w[1], zmax, sum, dz[NCLASS], dh;

	if (m->nkeys == 4) {
		for (j = 0; j < m->hidden; j++) {
			float a = m->w[1][j];

			for (i = 0; i < NPIX; i++)
				a += m->w[0][j * NPIX + i] * x[i];
			h[j] = a > 0 ? a : 0;
		}
		in = h;
		nin = m->hidden;
		W = m->w[2];
		b = m->w[3];
	}
	for (c = 0; c < NCLASS; c++) {
		float a = b[c];

		for (i = 0; i < nin; i++)
			a += W[c * nin + i] * in[i];
		p[c] = a;
	}
	zmax = p[0];
	for (c = 1; c < NCLASS; c++)
		zmax = p[c] > zmax ? p[c] : zmax;
	sum = 0;
	for (c = 0; c < NCLASS; c++) {
		p[c] = expf(p[c] - zmax);
		sum += p[c];
	}
	for (c = 0; c < NCLASS; c++)
		p[c] /= sum;
	if (!grad)
		return -logf(p[y] > 1e-30f ? p[y] : 1e-30f);

	for (c = 0; c < NCLASS; c++)
		dz[c] = p[c] - (c == (unsigned int)y);
	{
		float *gW = m->g[m->nkeys - 2], *gb = m->g[m->nkeys - 1];

		for (c = 0; c < NCLASS; c++) {
			gb[c] += dz[c];
			for (i = 0; i < nin; i++)
				gW[c * nin + i] += dz[c] * in[i];
		}
	}
	if (m->nkeys == 4) {
		for (j = 0; j < m->hidden; j++) {
			if (h[j] <= 0)
				continue;
			dh = 0;
			for (c = 0; c < NCLASS; c++)
				dh += m->w[2][c * m->hidden + j] * dz[c];
			m->g[1][j] += dh;
			for (i = 0; i < NPIX; i++)
				m->g[0][j * NPIX + i] += dh * x[i];
		}
	}
	return -logf(p[y] > 1e-30f ? p[y] : 1e-30f);
}

/* Mean loss and accuracy of @m on @d. */
static void evaluate(struct model *m, const struct dataset *d, float *h, double *loss,
		     double *acc)
{
	unsigned int i, c, best, right = 0;
	float p[NCLASS];
	double sum = 0;

	for (i = 0; i < d->n; i++) {
		sum += sample(m, d->x + (size_t)i * NPIX, d->y[i], p, h, false);
		for (best = 0, c = 1; c < NCLASS; c++)
			if (p[c] > p[best])
				best = c;
		right += best == d->y[i];
	}
	*loss = d->n ? sum / d->n : 0;
	*acc = d->n ? (double)right / d->n : 0;
}

/* FNV-1a, 64 bits, over the bytes of every key's values in key order. */
static uint64_t weights_hash(const struct model *m)
{
	uint64_t hsh = 0xcbf29ce484222325ull;
	unsigned int k;
	size_t i;

	for (k = 0; k < m->nkeys; k++) {
		const unsigned char *p = (const unsigned char *)m->w[k];

		for (i = 0; i < m->len[k] * sizeof(float); i++) {
			hsh ^= p[i];
			hsh *= 0x100000001b3ull;
		}
	}
	return hsh;
}

static struct ps_config node_config(const struct opts *o, int rank)
{
	return (struct ps_config){
		.transport = o->job.transport, .root_host = o->job.host, .root_port = o->job.port, .rank = rank,
		.num_servers = o->job.S, .num_workers = o->job.W, .mode = PS_SYNC, .lr = o->lr,
		.key_max = MAXKEYS, .big_bound = o->big_bound, .pipeline = o->job.pipeline,
		.timeout_ms = o->job.timeout_ms,
	};
}

static int run_server(const struct opts *o, int rank)
{
	struct ps_config cfg = node_config(o, rank);
	int ret = ps_serve(&cfg);

	if (ret)
		fprintf(stderr, "ps-train: server %d: %s\n", rank, strerror(-ret));
	return ret ? 1 : 0;
}

/*
 * Issue a request per key (@push: the gradients) and wait for them all, each
 * at most @timeout_ms: a step that stops coming is an error, not a hang.
 */
static int exchange(struct ps_worker *w, struct model *m, bool push, uint64_t iter,
		    int timeout_ms)
{
	uint64_t ver[MAXKEYS];
	int ids[MAXKEYS], ret = 0, r;
	unsigned int k;

	for (k = 0; k < m->nkeys; k++)
		ids[k] = push ? ps_pushpull(w, k, m->g[k], m->w[k], m->len[k], iter, &ver[k]) :
				ps_pull(w, k, m->w[k], m->len[k], iter, &ver[k]);
	for (k = 0; k < m->nkeys; k++) {
		r = ids[k] < 0 ? ids[k] : ps_wait(w, ids[k], timeout_ms);
		if (r && !ret)
			ret = r;
		if (!r && ver[k] != iter + push && !ret)
			ret = -ESTALE;
	}
	return ret;
}

static int train(const struct opts *o, struct ps_worker *w, struct model *m,
		 const struct dataset *tr, const struct dataset *te)
{
	unsigned int rank = ps_worker_rank(w), W = ps_num_workers(w);
	unsigned int nshard = (tr->n - rank + W - 1) / W, minshard = tr->n / W;
	unsigned int steps = minshard / o->batch, e, s, b, k, i, t;
	unsigned int *order = malloc(sizeof(*order) * (nshard ? nshard : 1));
	float *h = malloc(sizeof(float) * (o->hidden ? o->hidden : 1)), p[NCLASS];
	uint64_t iter = 0, tx0, rx0, tx, rx, seed;
	double t0, comp, comm, loss, tl, ta;
	int ret = -ENOMEM;

	if (!order || !h)
		goto out;
	ret = -EINVAL;
	if (!steps) {
		fprintf(stderr, "ps-train: a worker has fewer samples than a batch\n");
		goto out;
	}
	if (!rank) {
		printf("ps-train: %s, %u servers, %u workers, sync SGD, batch %u per worker, "
		       "lr %g, %u steps per epoch, %u training and %u test samples\n",
		       o->mlp ? "mlp" : "softmax", ps_num_servers(w), W, o->batch, o->lr, steps,
		       tr->n, te->n);
		evaluate(m, te, h, &tl, &ta);
		printf("epoch 0: test_loss %.4f test_acc %.4f\n", tl, ta);
		fflush(stdout);
	}
	for (e = 1; e <= o->epochs; e++) {
		/* This worker's shard in an order of the seed, epoch and rank. */
		seed = o->seed * 1000003u + e * 7919u + rank;
		for (i = 0; i < nshard; i++)
			order[i] = rank + i * W;
		for (i = nshard; i > 1; i--) {
			t = splitmix64(&seed) % i;
			k = order[i - 1];
			order[i - 1] = order[t];
			order[t] = k;
		}
		comp = comm = loss = 0;
		ps_worker_bytes(w, &tx0, &rx0);
		for (s = 0; s < steps; s++) {
			t0 = now_s();
			for (k = 0; k < m->nkeys; k++)
				memset(m->g[k], 0, m->len[k] * sizeof(float));
			for (b = 0; b < o->batch; b++) {
				i = order[s * o->batch + b];
				loss += sample(m, tr->x + (size_t)i * NPIX, tr->y[i], p, h, true);
			}
			for (k = 0; k < m->nkeys; k++)
				for (i = 0; i < m->len[k]; i++)
					m->g[k][i] /= o->batch;
			comp += now_s() - t0;
			t0 = now_s();
			ret = exchange(w, m, true, iter++, o->job.timeout_ms);
			comm += now_s() - t0;
			if (ret)
				goto out;
		}
		ps_worker_bytes(w, &tx, &rx);
		if (!rank) {
			evaluate(m, te, h, &tl, &ta);
			printf("epoch %u: train_loss %.4f test_loss %.4f test_acc %.4f "
			       "compute %.3f s comm %.3f s bytes %llu\n", e,
			       loss / (steps * o->batch), tl, ta, comp, comm,
			       (unsigned long long)(tx - tx0 + rx - rx0));
			fflush(stdout);
		}
	}
	if (!rank)
		printf("weights fnv1a64 %016llx\n", (unsigned long long)weights_hash(m));
	ret = 0;
out:
	free(order);
	free(h);
	return ret;
}

static int run_worker(const struct opts *o, int rank)
{
	struct ps_config cfg = node_config(o, rank);
	struct dataset tr = { 0 }, te = { 0 };
	struct ps_worker *w = NULL;
	struct model m = { 0 };
	int ret, id, k;

	ret = load(o->data, "train", o->ntrain, &tr);
	if (!ret)
		ret = load(o->data, "t10k", o->ntest, &te);
	if (!ret)
		ret = model_init(&m, o);
	if (!ret)
		ret = ps_worker_create(&cfg, &w);
	if (ret)
		goto out;
	if (!ps_worker_rank(w)) {
		model_random(&m, o->seed);
		for (k = 0; k < (int)m.nkeys && !ret; k++) {
			id = ps_init(w, k, m.w[k], m.len[k]);
			ret = id < 0 ? id : ps_wait(w, id, o->job.timeout_ms);
		}
	}
	if (!ret)
		ret = ps_barrier(w, o->job.timeout_ms);
	/* Version 0 for everyone, then the training. */
	if (!ret)
		ret = exchange(w, &m, false, 0, o->job.timeout_ms);
	if (!ret)
		ret = train(o, w, &m, &tr, &te);
	if (!ret)
		ret = ps_barrier(w, o->job.timeout_ms);
out:
	if (w) {
		k = ps_worker_destroy(w);
		ret = ret ? ret : k;
	}
	if (ret)
		fprintf(stderr, "ps-train: worker %d: %s\n", rank, strerror(-ret));
	for (k = 0; k < MAXKEYS; k++) {
		free(m.w[k]);
		free(m.g[k]);
	}
	free(tr.x);
	free(tr.y);
	free(te.x);
	free(te.y);
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
		"usage: ps-train (--local | --server RANK | --worker RANK) [-H HOST] [-p PORT]\n"
		"       [-S SERVERS] [-W WORKERS] [--model softmax|mlp] [--hidden H]\n"
		"       [--epochs E] [--batch B] [--lr LR] [--seed N] [--train N] [--test N]\n"
		"       [--data DIR] [--big-bound N] [--pipeline N] [--timeout MS]\n"
		"       [--transport sockets|rdmashare|verbs]\n");
	exit(2);
}

/* @s as a whole number from @min to @max, or the usage. */
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
		{ "model", required_argument, NULL, 'm' }, { "hidden", required_argument, NULL, 'h' },
		{ "epochs", required_argument, NULL, 'e' }, { "batch", required_argument, NULL, 'b' },
		{ "lr", required_argument, NULL, 'r' }, { "seed", required_argument, NULL, 'x' },
		{ "train", required_argument, NULL, 't' }, { "test", required_argument, NULL, 'T' },
		{ "data", required_argument, NULL, 'd' },
		{ "big-bound", required_argument, NULL, 'B' }, { NULL, 0, NULL, 0 },
	};
	struct opts o = {
		.job = {
			.host = "127.0.0.1", .transport = "sockets", .port = 9400, .server = -1,
			.worker = -1, .S = 1, .W = 2, .timeout_ms = 60000,
		},
		.mlp = true, .hidden = 32, .epochs = 1, .batch = 32, .lr = 0.1f, .seed = 1,
		.data = "/usr/share/datasets/fashion-mnist",
	};
	char *end;
	int c;

	while ((c = ps_cli_getopt(argc, argv, lo, &o.job)) != -1) {
		switch (c) {
		case 'm':
			if (strcmp(optarg, "mlp") && strcmp(optarg, "softmax"))
				usage();
			o.mlp = !strcmp(optarg, "mlp");
			break;
		case 'h':
			o.hidden = num(optarg, 0, 1 << 16);
			break;
		case 'e':
			o.epochs = num(optarg, 0, 1 << 20);
			break;
		case 'b':
			o.batch = num(optarg, 1, 1 << 20);
			break;
		case 'r':
			o.lr = strtof(optarg, &end);
			if (end == optarg || *end)
				usage();
			break;
		case 'x':
			o.seed = num(optarg, 0, ULONG_MAX);
			break;
		case 't':
			o.ntrain = num(optarg, 0, 1 << 30);
			break;
		case 'T':
			o.ntest = num(optarg, 0, 1 << 30);
			break;
		case 'd':
			o.data = optarg;
			break;
		case 'B':
			o.big_bound = num(optarg, 0, UINT32_MAX);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !ps_cli_job_ok(&o.job) || (o.mlp && !o.hidden) || !isfinite(o.lr))
		usage();
	if (!o.mlp)
		o.hidden = 0;
	if (o.job.local)
		return ps_cli_run_local(&o.job, run_node, &o, "ps-train");
	return o.job.server >= 0 ? run_server(&o, o.job.server) : run_worker(&o, o.job.worker);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * rs-pingpong: round-trip latency over one rdmashare abstract connection.
 *
 *   rs-pingpong -s [-p PORT] [-n ITERS]            server: echo messages
 *   rs-pingpong -c HOST [-p PORT] [-n ITERS] [-l BYTES] [-v]
 *
 * The client sends a message, waits for it to come back, checks every byte
 * and prints the round-trip times (min, p50, p99, max, mean) in microseconds.
 * The server echoes one client's messages and prints how many; with -n it
 * serves client after client until one had ITERS messages echoed (a client
 * that gave up before, say on a connect timeout, does not end it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdmashare.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int resolve(const char *host, unsigned int port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char svc[16];
	int ret;

	snprintf(svc, sizeof(svc), "%u", port);
	ret = getaddrinfo(host, svc, &hints, &ai);
	if (ret) {
		fprintf(stderr, "rs-pingpong: %s: %s\n", host, gai_strerror(ret));
		return -1;
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

static int server(struct rdmashare *rs, unsigned int port, size_t max, unsigned int want)
{
	char *buf = malloc(max);
	unsigned int echoed;
	ssize_t n;
	int l, ac;

	l = rdmashare_listen(rs, port, 16);
	if (l < 0 || !buf) {
		fprintf(stderr, "rs-pingpong: listen: %s\n", strerror(-l));
		free(buf);
		return 1;
	}
	printf("rs-pingpong: listening on port %u\n", port);
	fflush(stdout);
	do {
		ac = rdmashare_accept(rs, l, 0);
		if (ac < 0) {
			fprintf(stderr, "rs-pingpong: accept: %s\n", strerror(-ac));
			free(buf);
			return 1;
		}
		echoed = 0;
		while ((n = rdmashare_recv(rs, ac, buf, max, 0)) >= 0) {
			if (rdmashare_send(rs, ac, buf, n))
				break;
			echoed++;
		}
		rdmashare_flush(rs, 10000);
		rdmashare_close_ac(rs, ac);
		printf("rs-pingpong: echoed %u messages\n", echoed);
		fflush(stdout);
	} while (want && echoed < want && n == -EPIPE);
	free(buf);
	return n == -EPIPE ? 0 : 1;
}

static int client(struct rdmashare *rs, const char *host, unsigned int port,
		  unsigned int iters, size_t len, int verbose)
{
	char *out = malloc(len + 1), *in = malloc(len + 1);
	struct sockaddr_storage ss;
	double *rtt = calloc(iters, sizeof(*rtt)), t0, sum = 0;
	unsigned int i;
	size_t j;
	ssize_t n;
	int ac;

	if (!out || !in || !rtt || resolve(host, port, &ss))
		return 1;
	ac = rdmashare_connect(rs, (struct sockaddr *)&ss, 0);
	if (ac < 0) {
		fprintf(stderr, "rs-pingpong: connect %s:%u: %s\n", host, port, strerror(-ac));
		return 1;
	}
	for (i = 0; i < iters; i++) {
		for (j = 0; j < len; j++)
			out[j] = (char)(i * 31 + j);
		t0 = now_us();
		if (rdmashare_send(rs, ac, out, len)) {
			fprintf(stderr, "rs-pingpong: send failed\n");
			return 1;
		}
		n = rdmashare_recv(rs, ac, in, len + 1, 30000);
		rtt[i] = now_us() - t0;
		if (n != (ssize_t)len || memcmp(in, out, len)) {
			fprintf(stderr, "rs-pingpong: iteration %u: got %zd bytes%s\n", i, n,
				n == (ssize_t)len ? ", wrong data" : "");
			return 1;
		}
		sum += rtt[i];
		if (verbose)
			printf("%u %.1f\n", i, rtt[i]);
	}
	rdmashare_close_ac(rs, ac);
	qsort(rtt, iters, sizeof(*rtt), cmp_double);
	printf("rs-pingpong: %u x %zu bytes to %s: rtt us min %.1f p50 %.1f p99 %.1f max %.1f mean %.1f, data verified\n",
	       iters, len, host, rtt[0], rtt[iters / 2], rtt[(iters * 99) / 100],
	       rtt[iters - 1], sum / iters);
	free(out);
	free(in);
	free(rtt);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int port = 7100, iters = 0;
	const char *host = NULL;
	int srv = 0, verbose = 0, opt, ret;
	struct rdmashare *rs;
	size_t len = 64;

	while ((opt = getopt(argc, argv, "sc:p:n:l:v")) != -1) {
		switch (opt) {
		case 's': srv = 1; break;
		case 'c': host = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'n':
			iters = atoi(optarg);
			if (!iters)
				goto usage;
			break;
		case 'l': len = strtoul(optarg, NULL, 0); break;
		case 'v': verbose = 1; break;
		default:
			goto usage;
		}
	}
	if (!srv == !host)
		goto usage;
	ret = rdmashare_open(&rs, 0);
	if (!ret)
		ret = rdmashare_setup(rs, &(struct rdmashare_setup){
			.flags = RDMASHARE_SETUP_SQ_WAKEUP, .data_size = 8 << 20 });
	if (ret) {
		fprintf(stderr, "rs-pingpong: %s: %s\n", RDMASHARE_DEV_PATH, strerror(-ret));
		return 1;
	}
	ret = srv ? server(rs, port, 4 << 20, iters) :
		    client(rs, host, port, iters ?: 1000, len, verbose);
	rdmashare_close(rs);
	return ret;

usage:
	fprintf(stderr, "usage: rs-pingpong -s [-p PORT] [-n ITERS] | -c HOST [-p PORT] [-n ITERS] [-l BYTES] [-v]\n");
	return 2;
}

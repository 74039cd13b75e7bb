// SPDX-License-Identifier: GPL-2.0
/*
 * rs-stream: throughput over many rdmashare abstract connections.
 *
 *   rs-stream -s [-p PORT] -a ACS [-r SLOTS] [-S SLOT_SIZE]
 *       accept ACS connections, receive on all of them (whichever has a
 *       message, rdmashare_recv_any()) until each is closed, report
 *       bytes, messages and rate; SLOTS receive slots (the default: at
 *       least 64, or credits_per_ac per AC) of SLOT_SIZE bytes each (the
 *       default: the module's max_chunk_size)
 *   rs-stream -c HOST [-p PORT] [-a ACS] [-P PROCS] [-l BYTES] [-n MSGS]
 *       PROCS processes open ACS/PROCS ACs each and, once all of them have
 *       connected all of theirs, send MSGS messages of BYTES per AC, round
 *       robin; report the aggregate rate
 *   -F on both sides: AC files (read(2), write(2), poll(2)) instead of the
 *       rings; a message is a write of BYTES, and the server reads the
 *       streams as they come
 *   -I with -F or -T, on both sides: iperf3's calls, a poll(2) before each
 *       write and each read, and reads of BYTES (iperf3's -l), so that
 *       iperf3 under rdmashare-run can be set against the same calls
 *       without the preload
 *   -T on both sides: as -F, but plain sockets (socket(2), connect(2),
 *       accept(2)) instead of librdmashare's AC files: TCP, or under
 *       rdmashare-run the preload's AC files, so that the preload's own
 *       cost is what sets it apart from -F
 *
 * Every message carries its AC's sequence number; the server checks order.
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rdmashare.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * AC files' send buffers: the client's, room for four messages (at least
 * the module's default, 64 KiB), so that writes go on while messages are
 * on the wire; the server's, which only reads, a page.
 */
#define CLIENT_SNDBUF(len)	((len) < 16384 ? 65536 : 4 * (len))
#define SERVER_SNDBUF		4096

static int files;		/* -F, or -T */
static int sockets;		/* -T */
static int iperf_calls;		/* -I */

/* -T: a listening socket on @port, any address; -errno. */
static int sock_listen(unsigned int port, int backlog)
{
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				     .sin6_addr = IN6ADDR_ANY_INIT };
	int l, on = 1;

	l = socket(AF_INET6, SOCK_STREAM, 0);
	if (l < 0)
		return -errno;
	if (setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) ||
	    bind(l, (struct sockaddr *)&sin6, sizeof(sin6)) || listen(l, backlog)) {
		close(l);
		return -errno;
	}
	return l;
}

/* -T: a socket connected to @sa, its send buffer @sndbuf bytes; -errno. */
static int sock_connect(const struct sockaddr *sa, int sndbuf)
{
	socklen_t len = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
						    sizeof(struct sockaddr_in);
	int fd, err;

	fd = socket(sa->sa_family, SOCK_STREAM, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) ||
	    connect(fd, sa, len)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static struct rdmashare *open_rs(size_t data, unsigned int slots, unsigned int slot_size,
				 size_t files_size)
{
	/* Submissions ride on completions while the stream flows. */
	struct rdmashare_setup p = {
		.flags = RDMASHARE_SETUP_SQ_WAKEUP, .data_size = data, .rx_slots = slots,
		.rx_slot_size = slot_size, .files_size = files_size,
	};
	struct rdmashare *rs;
	int ret;

	if (slot_size)
		p.flags |= RDMASHARE_SETUP_SLOT_SIZE;
	if (files_size)
		p.flags |= RDMASHARE_SETUP_FILES;
	ret = rdmashare_open(&rs, 0);
	if (!ret)
		ret = rdmashare_setup(rs, &p);
	if (ret) {
		fprintf(stderr, "rs-stream: %s: %s\n", RDMASHARE_DEV_PATH, strerror(-ret));
		exit(1);
	}
	return rs;
}

/*
 * Receive slots: with a peer of protocol version 3 the file's slots are
 * lent to its ACs as they receive, each AC's window growing to its share, so
 * the module's default (64) serves any number of ACs; a peer of version 1 or
 * 2 sets credits_per_ac slots aside per AC, so there are at least that many.
 */
static unsigned int ac_slots(unsigned int nacs)
{
	FILE *f = fopen("/sys/class/misc/rdmashare/credits_per_ac", "r");
	unsigned long long n;
	unsigned int per_ac = 4;

	if (f) {
		if (fscanf(f, "%u", &per_ac) != 1 || !per_ac)
			per_ac = 4;
		fclose(f);
	}
	n = (unsigned long long)nacs * per_ac;
	if (n < 64)
		n = 64;
	return n > 4096 ? 4096 : n;
}

static int server(unsigned int port, unsigned int nacs, unsigned int slots,
		  unsigned int slot_size, size_t max)
{
	struct rdmashare *rs = open_rs(1 << 20, slots ?: ac_slots(nacs), slot_size, 0);
	unsigned int i, open_acs = nacs, bad = 0, *seq;
	unsigned long long bytes = 0, msgs = 0;
	int *acs = calloc(nacs, sizeof(*acs));
	char *buf = malloc(max);
	int l, ac, max_id = 0;
	double t0 = 0;
	ssize_t n;

	l = rdmashare_listen(rs, port, nacs > 1024 ? 1024 : nacs);
	if (l < 0 || !acs || !buf) {
		fprintf(stderr, "rs-stream: listen: %s\n", strerror(-l));
		return 1;
	}
	printf("rs-stream: listening on port %u for %u ACs\n", port, nacs);
	fflush(stdout);
	for (i = 0; i < nacs; i++) {
		acs[i] = rdmashare_accept(rs, l, 0);
		if (acs[i] < 0) {
			fprintf(stderr, "rs-stream: accept: %s\n", strerror(-acs[i]));
			return 1;
		}
		if (acs[i] > max_id)
			max_id = acs[i];
	}
	/* Each AC's next sequence number, by AC id. */
	seq = calloc(max_id + 1, sizeof(*seq));
	if (!seq)
		return 1;
	while (open_acs) {
		ac = -1;
		n = rdmashare_recv_any(rs, &ac, buf, max, 0);
		if (n < 0 && (ac < 0 || ac > max_id)) {
			fprintf(stderr, "rs-stream: %s\n", strerror(-n));
			return 1;
		}
		if (n < 0) {
			if (n != -EPIPE) {
				fprintf(stderr, "rs-stream: AC %d: %s\n", ac, strerror(-n));
				bad++;
			}
			rdmashare_close_ac(rs, ac);
			open_acs--;
			continue;
		}
		if (!t0)
			t0 = now();
		if (n >= 4 && memcmp(buf, &seq[ac], 4))
			bad++;
		seq[ac]++;
		bytes += n;
		msgs++;
	}
	t0 = now() - t0;
	printf("rs-stream: received %llu messages, %llu bytes on %u ACs in %.2f s: %.1f MB/s, %.0f msg/s%s\n",
	       msgs, bytes, nacs, t0, bytes / t0 / 1e6, msgs / t0, bad ? ", ERRORS" : "");
	rdmashare_close(rs);
	return bad ? 1 : 0;
}

/*
 * AC files' streams: are the first 4 bytes of every message in @buf (@n
 * bytes at offset @off of a stream of @len-byte messages) its number?
 */
static int check_stream(const unsigned char *buf, size_t n, unsigned long long off, size_t len)
{
	unsigned long long rec, at;
	unsigned int b;
	uint32_t v;

	for (rec = off / len; (at = rec * len) < off + n; rec++) {
		v = rec;
		for (b = 0; b < 4; b++)
			if (at + b >= off && at + b < off + n &&
			    buf[at + b - off] != ((unsigned char *)&v)[b])
				return -1;
	}
	return 0;
}

/* The server with AC files: reads whichever has bytes, to every end. */
static int server_files(unsigned int port, unsigned int nacs, unsigned int slots,
			unsigned int slot_size, size_t len)
{
	struct rdmashare *rs = sockets ? NULL :
			       open_rs(1 << 20, slots ?: ac_slots(nacs), slot_size,
				       (size_t)nacs * SERVER_SNDBUF);
	unsigned long long *off = calloc(nacs, sizeof(*off)), bytes = 0;
	struct pollfd *pfd = calloc(nacs, sizeof(*pfd));
	unsigned int i, open_fds = nacs, bad = 0;
	unsigned char *buf = malloc(1 << 20);
	size_t rd = iperf_calls && len < (1 << 20) ? len : 1 << 20;
	double t0 = 0;
	ssize_t n;
	int l;

	if (sockets)
		l = sock_listen(port, nacs > 1024 ? 1024 : nacs);
	else
		l = rdmashare_listen_files(rs, port, nacs > 1024 ? 1024 : nacs);
	if (l < 0 || !off || !pfd || !buf) {
		fprintf(stderr, "rs-stream: listen: %s\n", strerror(-l));
		return 1;
	}
	printf("rs-stream: listening on port %u for %u ACs (%s)\n", port, nacs,
	       sockets ? "sockets" : "files");
	fflush(stdout);
	for (i = 0; i < nacs; i++) {
		if (sockets) {
			pfd[i].fd = accept(l, NULL, NULL);
			if (pfd[i].fd < 0)
				pfd[i].fd = -errno;
		} else {
			pfd[i].fd = rdmashare_accept_file(rs, l, 0, SERVER_SNDBUF, 0);
		}
		pfd[i].events = POLLIN;
		if (pfd[i].fd < 0) {
			fprintf(stderr, "rs-stream: accept: %s\n", strerror(-pfd[i].fd));
			return 1;
		}
	}
	while (open_fds) {
		if (poll(pfd, nacs, -1) < 0) {
			perror("rs-stream: poll");
			return 1;
		}
		for (i = 0; i < nacs; i++) {
			if (!pfd[i].revents)
				continue;
			n = read(pfd[i].fd, buf, rd);
			if (n <= 0) {
				if (n < 0) {
					fprintf(stderr, "rs-stream: AC file %u: %s\n", i, strerror(errno));
					bad++;
				}
				close(pfd[i].fd);
				pfd[i].fd = -1;
				open_fds--;
				continue;
			}
			if (!t0)
				t0 = now();
			if (check_stream(buf, n, off[i], len))
				bad++;
			off[i] += n;
			bytes += n;
		}
	}
	t0 = now() - t0;
	for (i = 0; i < nacs; i++)
		if (off[i] % len)
			bad++;
	printf("rs-stream: received %llu messages, %llu bytes on %u ACs (%s) in %.2f s: %.1f MB/s, %.0f msg/s%s\n",
	       bytes / len, bytes, nacs, sockets ? "sockets" : "files", t0, bytes / t0 / 1e6,
	       bytes / len / t0, bad ? ", ERRORS" : "");
	if (sockets)
		close(l);
	else
		rdmashare_close(rs);
	return bad ? 1 : 0;
}

/* Connected, then as client_proc() says; -1 and a message on failure. */
static int start(int ready, int go)
{
	int ret;
	char c;

	/* Closed at once: the parent's reads end if a process never says. */
	ret = write(ready, "", 1) == 1 ? 0 : -errno;
	close(ready);
	if (!ret && read(go, &c, 1) != 0)
		ret = -EIO;
	if (ret)
		fprintf(stderr, "rs-stream: start: %s\n", strerror(-ret));
	return ret ? -1 : 0;
}

/* One client process with AC files: a write per message, round robin. */
static int client_proc_files(const struct sockaddr *sa, unsigned int nacs, size_t len,
			     unsigned int nmsgs, int ready, int go)
{
	struct rdmashare *rs = sockets ? NULL :
			       open_rs(1 << 20, 0, 0, (size_t)nacs * CLIENT_SNDBUF(len));
	char *buf = calloc(1, len);
	int *fds = calloc(nacs, sizeof(*fds));
	struct pollfd p = { .events = POLLOUT };
	unsigned int i, m;
	size_t done;
	ssize_t n;

	if (!buf || !fds)
		return 1;
	for (i = 0; i < nacs; i++) {
		if (sockets)
			fds[i] = sock_connect(sa, CLIENT_SNDBUF(len));
		else
			fds[i] = rdmashare_connect_file(rs, sa, 0, CLIENT_SNDBUF(len), 0);
		if (fds[i] < 0) {
			fprintf(stderr, "rs-stream: connect: %s\n", strerror(-fds[i]));
			return 1;
		}
	}
	if (start(ready, go))
		return 1;
	for (m = 0; m < nmsgs; m++) {
		memcpy(buf, &m, 4);
		for (i = 0; i < nacs; i++) {
			for (done = 0; done < len; done += n) {
				p.fd = fds[i];
				if (iperf_calls && poll(&p, 1, -1) < 0) {
					perror("rs-stream: poll");
					return 1;
				}
				n = write(fds[i], buf + done, len - done);
				if (n <= 0) {
					perror("rs-stream: write");
					return 1;
				}
			}
		}
	}
	/* Each AC closes once what was written went out. */
	for (i = 0; i < nacs; i++)
		close(fds[i]);
	if (rs)
		rdmashare_close(rs);
	return 0;
}

/*
 * One client process.  It says on @ready that its ACs are connected and
 * waits for @go to close: the processes stream together, so that the rate
 * the server counts from its first message is the streams' alone, and not
 * also that of the connects of 1024 ACs in a process still setting up.
 */
static int client_proc(const struct sockaddr *sa, unsigned int nacs, size_t len,
		       unsigned int nmsgs, int ready, int go)
{
	struct rdmashare *rs = open_rs(len * 64 > (8 << 20) ? len * 64 : 8 << 20,
				       ac_slots(nacs), 0, 0);
	char *buf = calloc(1, len > 4 ? len : 4);
	int *acs = calloc(nacs, sizeof(*acs));
	unsigned int i, m;
	int ret;

	for (i = 0; i < nacs; i++) {
		acs[i] = rdmashare_connect(rs, sa, 0);
		if (acs[i] < 0) {
			fprintf(stderr, "rs-stream: connect: %s\n", strerror(-acs[i]));
			return 1;
		}
	}
	if (start(ready, go))
		return 1;
	for (m = 0; m < nmsgs; m++) {
		memcpy(buf, &m, 4);
		for (i = 0; i < nacs; i++) {
			ret = rdmashare_send(rs, acs[i], buf, len);
			if (ret) {
				fprintf(stderr, "rs-stream: send: %s\n", strerror(-ret));
				return 1;
			}
		}
	}
	ret = rdmashare_flush(rs, 0);
	if (ret) {
		fprintf(stderr, "rs-stream: %s\n", strerror(-ret));
		return 1;
	}
	for (i = 0; i < nacs; i++)
		rdmashare_close_ac(rs, acs[i]);
	rdmashare_flush(rs, 0);
	/* The CLOSEs are queued; closing the file sends what is left of them. */
	rdmashare_close(rs);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int port = 7200, nacs = 1, procs = 1, nmsgs = 1000, slots = 0, slot_size = 0, i;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	const char *host = NULL;
	int srv = 0, opt, status, bad = 0, ready[2], go[2];
	size_t len = 65536;
	char c;
	char svc[16];
	double t0;

	while ((opt = getopt(argc, argv, "sc:p:a:P:l:n:r:S:FTI")) != -1) {
		switch (opt) {
		case 's': srv = 1; break;
		case 'c': host = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'a': nacs = atoi(optarg); break;
		case 'P': procs = atoi(optarg); break;
		case 'l': len = strtoul(optarg, NULL, 0); break;
		case 'n': nmsgs = atoi(optarg); break;
		case 'r': slots = atoi(optarg); break;
		case 'S': slot_size = atoi(optarg); break;
		case 'F': files = 1; break;
		case 'T': files = sockets = 1; break;
		case 'I': iperf_calls = 1; break;
		default:
			goto usage;
		}
	}
	if (!srv == !host || !nacs || !procs || nacs % procs || len < 4 || (iperf_calls && !files))
		goto usage;
	if (srv && files)
		return server_files(port, nacs, slots, slot_size, len);
	if (srv)
		return server(port, nacs, slots, slot_size, len > (4 << 20) ? len : 4 << 20);

	snprintf(svc, sizeof(svc), "%u", port);
	if (getaddrinfo(host, svc, &hints, &ai)) {
		fprintf(stderr, "rs-stream: cannot resolve %s\n", host);
		return 1;
	}
	if (pipe(ready) || pipe(go)) {
		perror("rs-stream: pipe");
		return 1;
	}
	t0 = now();
	for (i = 0; i < procs; i++) {
		if (!fork()) {
			close(ready[0]);
			close(go[1]);
			_exit((files ? client_proc_files : client_proc)(ai->ai_addr, nacs / procs,
									len, nmsgs, ready[1],
									go[0]));
		}
	}
	close(ready[1]);
	close(go[0]);
	/* Every process connected (or one died: EOF once the others wait). */
	for (i = 0; i < procs && read(ready[0], &c, 1) == 1; i++)
		;
	close(go[1]);
	for (i = 0; i < procs; i++)
		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			bad++;
	t0 = now() - t0;
	if (bad)
		printf("rs-stream: FAILED after %.2f s (%u of %u processes)\n", t0, bad, procs);
	else
		printf("rs-stream: %u processes x %u ACs x %u messages x %zu bytes in %.2f s: %.1f MB/s\n",
		       procs, nacs / procs, nmsgs, len, t0,
		       (double)nacs * nmsgs * len / t0 / 1e6);
	freeaddrinfo(ai);
	return bad ? 1 : 0;
usage:
	fprintf(stderr, "usage: rs-stream -s [-p PORT] -a ACS [-r SLOTS] [-S SLOT_SIZE] [-F|-T [-I]]\n"
		"       rs-stream -c HOST [-p PORT] [-a ACS] [-P PROCS] [-l BYTES] [-n MSGS] [-F|-T [-I]]\n");
	return 2;
}

// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The sockets transport: TCP, non-blocking, one descriptor a connection.
 * It uses only calls that rsocket's preload and rdmashare's
 * (rdmashare-run) take over, so that the same code runs over TCP, rsocket
 * and rdmashare AC files: nothing it does needs the descriptor to be a
 * socket once connected, except the options, whose failure is ignored.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ps_int.h"

struct ps_tr_conn {
	int fd;
};

int64_t ps_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds until @deadline (0 if past), for poll(); -1 for none (< 0). */
int ps_left_ms(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - ps_now_ms();
	if (left < 0)
		return 0;
	return left > 1 << 30 ? 1 << 30 : (int)left;
}

socklen_t ps_addr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/*
 * @host (NULL: every address of @family, AF_UNSPEC meaning IPv4) and
 * @port to an address; -EINVAL if it does not resolve.
 */
int ps_resolve(const char *host, uint16_t port, int family, struct sockaddr_storage *ss,
	       socklen_t *len)
{
	struct addrinfo hints = { .ai_family = family, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char serv[8];

	if (!host) {
		memset(ss, 0, sizeof(*ss));
		if (family == AF_INET6) {
			struct sockaddr_in6 *s6 = (void *)ss;

			s6->sin6_family = AF_INET6;
			s6->sin6_port = htons(port);
		} else {
			struct sockaddr_in *s4 = (void *)ss;

			s4->sin_family = AF_INET;
			s4->sin_port = htons(port);
		}
		*len = ps_addr_len(ss);
		return 0;
	}
	snprintf(serv, sizeof(serv), "%u", port);
	if (getaddrinfo(host, serv, &hints, &res) || !res)
		return -EINVAL;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* O_NONBLOCK and FD_CLOEXEC on @fd. */
static int sock_flags(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK))
		return -1;
	/* rsocket's preload keeps no descriptor flags: the kernel's are moot. */
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	return 0;
}

/*
 * A stream socket made non-blocking and close-on-exec with fcntl() rather
 * than socket()'s type flags: rsocket's preload (rdma-core 44) takes a bare
 * SOCK_STREAM only, and leaves any other to the kernel's TCP.
 */
static int sock_socket(int family)
{
	int fd = socket(family, SOCK_STREAM, 0), err;

	if (fd < 0)
		return -errno;
	if (sock_flags(fd)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int sock_new(int fd, struct ps_tr_conn **out)
{
	struct ps_tr_conn *c = malloc(sizeof(*c));

	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	*out = c;
	return 0;
}

static int sock_listen(struct ps_tr_ctx *x __attribute__((unused)), const struct sockaddr *sa,
		       socklen_t len, struct ps_tr_conn **out)
{
	int fd, on = 1, err;

	fd = sock_socket(sa->sa_family);
	if (fd < 0)
		return fd;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (bind(fd, sa, len) || listen(fd, 256)) {
		err = -errno;
		close(fd);
		return err;
	}
	return sock_new(fd, out);
}

static int sock_connect(struct ps_tr_ctx *x __attribute__((unused)), const struct sockaddr *sa,
			socklen_t len, int timeout_ms, struct ps_tr_conn **out)
{
	struct pollfd p = { .events = POLLOUT };
	socklen_t elen = sizeof(int);
	int fd, on = 1, err = 0;

	fd = sock_socket(sa->sa_family);
	if (fd < 0)
		return fd;
	/* Small requests go at once; under a preload this is accepted and moot. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	if (connect(fd, sa, len)) {
		if (errno != EINPROGRESS) {
			err = -errno;
			goto out_close;
		}
		p.fd = fd;
		err = poll(&p, 1, timeout_ms);
		if (err <= 0) {
			err = err ? -errno : -ETIMEDOUT;
			goto out_close;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen)) {
			err = -errno;
			goto out_close;
		}
		if (err) {
			err = -err;
			goto out_close;
		}
	}
	return sock_new(fd, out);

out_close:
	close(fd);
	return err;
}

static int sock_accept(struct ps_tr_conn *l, struct ps_tr_conn **out)
{
	int fd, on = 1;

	/* accept(), not accept4(): rsocket's preload has no accept4(). */
	fd = accept(l->fd, NULL, NULL);
	if (fd < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	if (sock_flags(fd)) {
		close(fd);
		return -EIO;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	return sock_new(fd, out);
}

static ssize_t sock_sendv(struct ps_tr_conn *c, const struct iovec *iov, int cnt)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = cnt };
	ssize_t n;

	/* A peer that went away is an error to report, never a SIGPIPE. */
	n = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return n;
}

static ssize_t sock_recv(struct ps_tr_conn *c, void *buf, size_t len)
{
	ssize_t n = recv(c->fd, buf, len, MSG_DONTWAIT);

	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return n;
}

static int sock_poll_fd(struct ps_tr_conn *c)
{
	return c->fd;
}

static int sock_local_addr(struct ps_tr_conn *c, struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);

	return getsockname(c->fd, (struct sockaddr *)ss, &len) ? -errno : 0;
}

static void sock_close(struct ps_tr_conn *c)
{
	close(c->fd);
	free(c);
}

const struct ps_transport ps_sockets = {
	.name = "sockets",
	.listen = sock_listen,
	.connect = sock_connect,
	.accept = sock_accept,
	.sendv = sock_sendv,
	.recv = sock_recv,
	.poll_fd = sock_poll_fd,
	.local_addr = sock_local_addr,
	.close = sock_close,
};

/* The transport called @name (NULL: sockets), or NULL. */
const struct ps_transport *ps_transport_find(const char *name)
{
	static const struct ps_transport *const all[] = { &ps_sockets, &ps_rdmashare, &ps_verbs };
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(*all); i++)
		if (!name || !strcmp(name, all[i]->name))
			return all[i];
	return NULL;
}

int ps_transport_ok(const char *name)
{
	return name && ps_transport_find(name);
}

// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * librdmashare-preload.so: listen() and accept() over a TCP listener and a
 * listening file.
 */
#include "preload.h"

/* ---- listen and accept ---- */

/* Whether the IPv6 socket @fd takes IPv6 alone. */
static bool v6only(int fd)
{
	socklen_t len = sizeof(int);
	int on = 0;

	return !real.getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, &len) && on;
}

/* LISTEN on the address @ss names, as the socket @fd is bound. */
static void listen_addr(int fd, const struct sockaddr_storage *ss, struct rdmashare_listen *l)
{
	l->flags |= RDMASHARE_LISTEN_ADDR;
	l->local.family = ss->ss_family;
	if (ss->ss_family == AF_INET) {
		memcpy(l->local.addr, &((const struct sockaddr_in *)ss)->sin_addr, 4);
		return;
	}
	memcpy(l->local.addr, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	if (v6only(fd))
		l->flags |= RDMASHARE_LISTEN_V6ONLY;
}

/* Whether the socket @fd shares its port (SO_REUSEPORT). */
static bool reuseport(int fd)
{
	socklen_t len = sizeof(int);
	int on = 0;

	return !real.getsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, &len) && on;
}

/* LISTEN, with fewer send buffers if RLIMIT_MEMLOCK is small. */
static int listen_ioctl(int dev, struct rdmashare_listen *l)
{
	l->max_files = LISTEN_FILES;
	if (!ioctl(dev, RDMASHARE_IOC_LISTEN, l))
		return 0;
	l->max_files = 64;
	return ioctl(dev, RDMASHARE_IOC_LISTEN, l);
}

/*
 * rdmashare's listening file for the socket @fd, bound to @ss (@l filled
 * in): its descriptor, or -1 (TCP only, and why said).  It takes the
 * connections to the address the socket is bound to, as the socket does
 * (RDMASHARE_LISTEN_ADDR).
 */
static int rdma_listen(int fd, const struct sockaddr_storage *ss, int backlog,
		       struct rdmashare_listen *l)
{
	int dev, ret;

	l->port = port_of((const struct sockaddr *)ss);
	l->backlog = backlog > 0 && backlog < 1024 ? backlog : 1024;
	l->file.flags = RDMASHARE_FILE_CLOEXEC | RDMASHARE_FILE_NONBLOCK;
	l->file.sndbuf = SNDBUF;
	listen_addr(fd, ss, l);
	if (reuseport(fd))
		l->flags |= RDMASHARE_LISTEN_REUSEPORT;
	dev = open(DEV_PATH, O_RDWR | O_CLOEXEC);
	ret = dev < 0 ? -1 : listen_ioctl(dev, l);
	if (ret < 0 && errno == EINVAL && (l->flags & RDMASHARE_LISTEN_REUSEPORT)) {
		/* A module that shares no port: the first listener has it. */
		l->flags &= ~RDMASHARE_LISTEN_REUSEPORT;
		ret = listen_ioctl(dev, l);
	}
	if (ret < 0 && (errno == EINVAL || errno == E2BIG)) {
		/*
		 * A module without addresses in LISTEN (which finds a tail
		 * of the struct it does not know): its port is one per
		 * number, for both families, so an IPv6 listener that takes
		 * no IPv4 would get IPv4 connections meant for an IPv4
		 * listener of the same number (another process's, as Open
		 * MPI's ranks choose their ports).  That one stays on TCP.
		 */
		if (l->flags & RDMASHARE_LISTEN_V6ONLY) {
			say("listen fd %d port %u: TCP only (IPV6_V6ONLY)", fd, l->port);
			real.close(dev);
			return -1;
		}
		l->flags &= ~(RDMASHARE_LISTEN_ADDR | RDMASHARE_LISTEN_REUSEPORT);
		memset(&l->local, 0, sizeof(l->local));
		ret = listen_ioctl(dev, l);
	}
	if (ret < 0) {
		say("listen port %u: TCP only (%s)", l->port, strerror(errno));
		if (dev >= 0)
			real.close(dev);
		return -1;
	}
	real.close(dev);
	return l->file.fd;
}

RSP_EXPORT int listen(int fd, int backlog)
{
	struct rdmashare_listen l = { .size = sizeof(l), .flags = RDMASHARE_LISTEN_FD };
	struct epoll_event ev = { .events = EPOLLIN };
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int tcp = -1, ep = -1, fl, fdfl, lfd = -1, err;
	struct rsp_fd *e = rsp(fd);

	ready();
	/*
	 * Listening already: a new backlog for its TCP half, as listen(2)
	 * gives a listening socket (nginx sets its backlog again that way);
	 * rdmashare's half keeps its own.
	 */
	if (live(fd) == RSP_LISTEN)
		return real.listen(e->tcp, backlog);
	if (kind(fd) != RSP_CAND || !e)
		return real.listen(fd, backlog);
	/*
	 * Bound to a port: rdmashare's listener first, so that no client
	 * finds the TCP one alone and takes TCP (a preloaded client falls
	 * back to TCP when rdmashare refuses).  An unbound socket gets its
	 * port from listen(2): rdmashare's follows.
	 */
	if (!real.getsockname(fd, (struct sockaddr *)&ss, &len) &&
	    port_of((struct sockaddr *)&ss) && selected((struct sockaddr *)&ss, true)) {
		lfd = rdma_listen(fd, &ss, backlog, &l);
		if (lfd < 0) {
			set_kind(fd, RSP_NONE);
			return real.listen(fd, backlog);
		}
	}
	if (real.listen(fd, backlog) < 0) {
		err = errno;
		if (lfd >= 0)
			real.close(lfd);
		errno = err;
		return -1;
	}
	set_kind(fd, RSP_NONE);
	if (lfd < 0) {
		len = sizeof(ss);
		if (real.getsockname(fd, (struct sockaddr *)&ss, &len) < 0 ||
		    !selected((struct sockaddr *)&ss, true))
			return 0;
		lfd = rdma_listen(fd, &ss, backlog, &l);
		if (lfd < 0)
			return 0;
	}

	/* The TCP listener moves; the program's number becomes the epoll. */
	fl = fcntl(fd, F_GETFL);
	fdfl = fcntl(fd, F_GETFD);
	tcp = hide_fd(fd);
	/* The halves where the program does not look (a dup2() to 3). */
	lfd = hide_fd(l.file.fd);
	if (lfd >= 0) {
		real.close(l.file.fd);
		l.file.fd = lfd;
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (tcp < 0 || ep < 0 || rsp(tcp) == NULL || rsp(l.file.fd) == NULL)
		goto out_tcp_only;
	fcntl(tcp, F_SETFL, fl | O_NONBLOCK);
	ev.data.fd = tcp;
	if (real.epoll_ctl(ep, EPOLL_CTL_ADD, tcp, &ev))
		goto out_tcp_only;
	ev.data.fd = l.file.fd;
	if (real.epoll_ctl(ep, EPOLL_CTL_ADD, l.file.fd, &ev))
		goto out_tcp_only;
	e->tcp = tcp;
	e->lfile = l.file.fd;
	e->turn = 0;
	if (swap_file(fd, ep, fdfl & FD_CLOEXEC ? O_CLOEXEC : 0))
		goto out_tcp_only;
	real.close(ep);
	more_drop(fd);
	fcntl(fd, F_SETFL, fl & O_NONBLOCK);
	set_kind(fd, RSP_LISTEN);
	say("listen fd %d port %u: rdmashare and TCP", fd, l.port);
	return 0;

out_tcp_only:
	say("listen port %u: TCP only (%s)", l.port, strerror(errno));
	if (ep >= 0)
		real.close(ep);
	if (tcp >= 0)
		real.close(tcp);
	real.close(l.file.fd);
	return 0;
}

static unsigned int file_flags(int flags)
{
	return (flags & SOCK_NONBLOCK ? RDMASHARE_FILE_NONBLOCK : 0) |
	       (flags & SOCK_CLOEXEC ? RDMASHARE_FILE_CLOEXEC : 0);
}

/* A connection of the listener @fd, rdmashare's or TCP's. */
static int accept_either(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
	struct rdmashare_accept a = { .size = sizeof(a) };
	struct rsp_fd *e = rsp(fd);
	struct epoll_event ev;
	int i, n, which;

	for (;;) {
		for (i = 0; i < 2; i++) {
			which = (e->turn + i) & 1;
			if (which == 0) {
				a.flags = RDMASHARE_ACCEPT_NONBLOCK;
				a.file.flags = file_flags(flags);
				if (!ioctl(e->lfile, RDMASHARE_IOC_ACCEPT, &a)) {
					e->turn ^= 1;
					n = a.file.fd;
					set_kind(n, RSP_ACFILE);
					if (rsp(n))
						rsp(n)->v6 = e->v6;
					opts_apply(n, e);
					timeo_copy(e->tcp, n);
					if (sa && len)
						put_addr(&a.peer, sa, len, e->v6);
					return n;
				}
				/* ENOSPC: it waits; TCP's turn. */
				if (errno != EAGAIN && errno != ENOSPC)
					return -1;
			} else {
				n = real.accept4(e->tcp, sa, len, flags);
				if (n >= 0) {
					e->turn ^= 1;
					set_kind(n, RSP_NONE);
					return n;
				}
				if (errno != EAGAIN && errno != EWOULDBLOCK)
					return -1;
			}
		}
		if (fcntl(fd, F_GETFL) & O_NONBLOCK) {
			errno = EAGAIN;
			return -1;
		}
		n = real.epoll_wait(fd, &ev, 1, -1);
		if (n < 0)
			return -1;
	}
}

RSP_EXPORT int accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
	ready();
	if (kind(fd) == RSP_LISTEN)
		return accept_either(fd, sa, len, flags);
	return real.accept4(fd, sa, len, flags);
}

RSP_EXPORT int accept(int fd, struct sockaddr *sa, socklen_t *len)
{
	ready();
	if (kind(fd) == RSP_LISTEN)
		return accept_either(fd, sa, len, 0);
	return real.accept(fd, sa, len);
}

// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * librdmashare-preload.so: a socket's number changing file, with its epoll
 * registrations, and poll(), select() and epoll_wait() while a connect is
 * under way.
 */
#include "preload.h"

static int nr_odd;		/* kept registrations whose data is not their number */

/* ---- a socket's number changing file ---- */

/* @fd's rsp_more, made if it has none; NULL without memory.  Under lock. */
struct rsp_more *more_get(struct rsp_fd *e, int room)
{
	struct rsp_more *m = e->more;
	int max = m ? m->max_ep : 0;

	if (m && m->nr_ep + room <= max)
		return m;
	max = max ? 2 * max : 4;
	m = realloc(m, sizeof(*m) + max * sizeof(m->ep[0]));
	if (!m)
		return NULL;
	if (!e->more)
		memset(m, 0, sizeof(*m));
	m->max_ep = max;
	e->more = m;
	return m;
}

/* @fd is what it will stay: what was kept for a change goes. */
void more_drop(int fd)
{
	struct rsp_fd *e = rsp(fd);
	struct rsp_more *m;
	int i;

	if (!e || !e->more)
		return;
	pthread_mutex_lock(&lock);
	m = e->more;
	e->more = NULL;
	for (i = 0; m && i < m->nr_ep; i++)
		nr_odd -= m->ep[i].ev.data.fd != fd;
	pthread_mutex_unlock(&lock);
	free(m);
}

/*
 * The program's epoll_ctl() on a socket whose file may still change (a
 * candidate, a connecting AC file), kept to be made again on the new file:
 * nginx registers its sockets before it connects them.
 */
static void ep_note(int fd, int epfd, int op, const struct epoll_event *ev)
{
	struct rsp_fd *e = rsp(fd);
	struct rsp_more *m;
	int i;

	if (!e)
		return;
	pthread_mutex_lock(&lock);
	m = op == EPOLL_CTL_ADD ? more_get(e, 1) : e->more;
	for (i = 0; m && i < m->nr_ep && m->ep[i].epfd != epfd; i++)
		;
	if (!m) {
		if (op == EPOLL_CTL_ADD)
			say("fd %d: no memory to keep its epoll registration", fd);
	} else if (op == EPOLL_CTL_DEL) {
		if (i < m->nr_ep) {
			nr_odd -= m->ep[i].ev.data.fd != fd;
			m->ep[i] = m->ep[--m->nr_ep];
		}
	} else if (ev) {
		if (i == m->nr_ep && op == EPOLL_CTL_ADD)
			m->ep[m->nr_ep++].ev.data.fd = fd;
		if (i < m->nr_ep) {
			nr_odd += (ev->data.fd != fd) - (m->ep[i].ev.data.fd != fd);
			m->ep[i] = (struct rsp_ep){ .epfd = epfd, .ev = *ev };
		}
	}
	pthread_mutex_unlock(&lock);
}

/*
 * The file @nfd takes @fd's number (dup3()), with @fd's epoll registrations:
 * taken off the old file, which may live on (a connecting socket's TCP half
 * does), and made on the new one, where they were still in place.  0, or
 * -errno with nothing changed.
 */
int swap_file(int fd, int nfd, int flags)
{
	struct rsp_fd *e = rsp(fd);
	struct epoll_event *ev;
	struct rsp_more *m;
	int i, ret, err = 0;

	pthread_mutex_lock(&lock);
	m = e ? e->more : NULL;
	for (i = 0; m && i < m->nr_ep; i++)
		m->ep[i].del = !real.epoll_ctl(m->ep[i].epfd, EPOLL_CTL_DEL, fd, NULL);
	if (real.dup3(nfd, fd, flags) < 0)
		err = -errno;
	for (i = 0; m && i < m->nr_ep; i++) {
		ev = &m->ep[i].ev;
		if (!m->ep[i].del)
			continue;
		ret = real.epoll_ctl(m->ep[i].epfd, EPOLL_CTL_ADD, fd, ev);
		/* A listener's epoll instance takes no EPOLLEXCLUSIVE (epoll_ctl()). */
		if (ret && errno == EINVAL && (ev->events & EPOLLEXCLUSIVE)) {
			ev->events &= ~EPOLLEXCLUSIVE;
			ret = real.epoll_ctl(m->ep[i].epfd, EPOLL_CTL_ADD, fd, ev);
		}
		if (ret)
			say("fd %d: epoll %d not made again: %s", fd, m->ep[i].epfd,
			    strerror(errno));
	}
	pthread_mutex_unlock(&lock);
	return err;
}

RSP_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct epoll_event shared;
	int k, ret;

	ready();
	k = kind(fd);
	/*
	 * A listener is an epoll instance, which takes no EPOLLEXCLUSIVE
	 * (EINVAL): it is registered without, so every waiter wakes for a
	 * connection and all but one find accept() says EAGAIN (nginx's
	 * workers share a listener that way).
	 */
	if (op == EPOLL_CTL_ADD && ev && (ev->events & EPOLLEXCLUSIVE) && k == RSP_LISTEN) {
		shared = *ev;
		shared.events &= ~EPOLLEXCLUSIVE;
		ev = &shared;
	}
	ret = real.epoll_ctl(epfd, op, fd, ev);
	if (!ret && (k == RSP_CAND || k == RSP_CONNECTING))
		ep_note(fd, epfd, op, ev);
	return ret;
}

/*
 * ---- readiness ----
 *
 * A connecting AC file that failed reports EPOLLERR, EPOLLHUP and EPOLLOUT,
 * as a TCP socket whose connect failed does, and some programs take that
 * for the answer without asking SO_ERROR (curl does).  So while any
 * descriptor is connecting, what poll(), select() and epoll_wait() report
 * on one is found out first (settle()): one that went to TCP is reported as
 * the TCP socket is (its connect waited for), or not at all if that is
 * still under way, and the call waits again if nothing else is left.
 */

/* What @fd, now the TCP socket, reports for @events at once. */
static short tcp_revents(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };

	return real.poll(&p, 1, 0) == 1 ? p.revents : 0;
}

/* @p's entries of connecting descriptors found out; the new count of ready ones. */
static int poll_fix(struct pollfd *p, nfds_t n, int ready)
{
	nfds_t i;

	for (i = 0; i < n; i++) {
		if (!p[i].revents || kind(p[i].fd) != RSP_CONNECTING ||
		    settle(p[i].fd) != RSP_NONE)
			continue;
		p[i].revents = tcp_revents(p[i].fd, p[i].events);
		if (!p[i].revents)
			ready--;
	}
	return ready;
}

RSP_EXPORT int ppoll(struct pollfd *p, nfds_t n, const struct timespec *ts,
		     const sigset_t *mask)
{
	int ret;

	ready();
	do {
		ret = real.ppoll(p, n, ts, mask);
		if (ret <= 0 || !__atomic_load_n(&nr_connecting, __ATOMIC_RELAXED))
			return ret;
		ret = poll_fix(p, n, ret);
	} while (!ret);
	return ret;
}

RSP_EXPORT int poll(struct pollfd *p, nfds_t n, int timeout)
{
	struct timespec ts = { timeout / 1000, timeout % 1000 * 1000000L };

	ready();
	if (!__atomic_load_n(&nr_connecting, __ATOMIC_RELAXED))
		return real.poll(p, n, timeout);
	return ppoll(p, n, timeout < 0 ? NULL : &ts, NULL);
}

/*
 * The sets select() gave back, for the connecting descriptors among @nfds,
 * found out (@in: what was asked); the new count of ready bits.
 */
static int select_fix(int nfds, fd_set *r, fd_set *w, fd_set *x, const fd_set *in, int ready)
{
	fd_set *sets[3] = { r, w, x };
	short ev, got;
	int fd, i;

	for (fd = 0; fd < nfds && fd < FD_SETSIZE; fd++) {
		if (kind(fd) != RSP_CONNECTING)
			continue;
		for (ev = 0, i = 0; i < 3; i++)
			ev |= sets[i] && FD_ISSET(fd, sets[i]) ? 1 << i : 0;
		if (!ev || settle(fd) != RSP_NONE)
			continue;
		got = tcp_revents(fd, (FD_ISSET(fd, &in[0]) ? POLLIN : 0) |
				      (FD_ISSET(fd, &in[1]) ? POLLOUT : 0) |
				      (FD_ISSET(fd, &in[2]) ? POLLPRI : 0));
		for (i = 0; i < 3; i++) {
			if (!(ev & 1 << i))
				continue;
			/* As the kernel's select() maps poll's bits. */
			if ((i == 0 && (got & (POLLIN | POLLHUP | POLLERR))) ||
			    (i == 1 && (got & (POLLOUT | POLLERR))) || (i == 2 && (got & POLLPRI)))
				continue;
			FD_CLR(fd, sets[i]);
			ready--;
		}
	}
	return ready;
}

/* What select() is asked, kept to ask again. */
static void sets_keep(int nfds, fd_set *r, fd_set *w, fd_set *x, fd_set *in)
{
	FD_ZERO(&in[0]);
	FD_ZERO(&in[1]);
	FD_ZERO(&in[2]);
	if (nfds <= 0)
		return;
	if (r)
		in[0] = *r;
	if (w)
		in[1] = *w;
	if (x)
		in[2] = *x;
}

static void sets_back(fd_set *r, fd_set *w, fd_set *x, const fd_set *in)
{
	if (r)
		*r = in[0];
	if (w)
		*w = in[1];
	if (x)
		*x = in[2];
}

/* select() (@ts and @mask unused) or, with @p, pselect(). */
static int select_either(bool p, int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv,
			 const struct timespec *ts, const sigset_t *mask)
{
	/* Sets larger than fd_set (allowed, past FD_SETSIZE) are left alone. */
	bool fix = __atomic_load_n(&nr_connecting, __ATOMIC_RELAXED) && nfds <= FD_SETSIZE;
	fd_set in[3];
	int ret;

	if (fix)
		sets_keep(nfds, r, w, x, in);
	for (;;) {
		ret = p ? real.pselect(nfds, r, w, x, ts, mask) : real.select(nfds, r, w, x, tv);
		if (ret <= 0 || !fix)
			return ret;
		ret = select_fix(nfds, r, w, x, in, ret);
		if (ret)
			return ret;
		sets_back(r, w, x, in);
	}
}

RSP_EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv)
{
	ready();
	return select_either(false, nfds, r, w, x, tv, NULL, NULL);
}

RSP_EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *x, const struct timespec *ts,
		       const sigset_t *mask)
{
	ready();
	return select_either(true, nfds, r, w, x, NULL, ts, mask);
}

/* Whether the connecting @fd is registered in @epfd with @data.  Under lock. */
static bool ep_has(int fd, int epfd, epoll_data_t data)
{
	struct rsp_more *m;
	int i;

	if (fd < 0 || fd >= nr_fds || kind(fd) != RSP_CONNECTING)
		return false;
	m = fds[fd].more;
	for (i = 0; m && i < m->nr_ep; i++)
		if (m->ep[i].epfd == epfd && m->ep[i].ev.data.u64 == data.u64)
			return true;
	return false;
}

/*
 * The connecting descriptor registered in @epfd with @data, or -1: the one
 * @data names, as most programs register a descriptor with its number; the
 * others are looked through only if some registration has other data.
 */
static int ep_owner(int epfd, epoll_data_t data)
{
	int fd, found = -1, left;

	pthread_mutex_lock(&lock);
	if (ep_has(data.fd, epfd, data))
		found = data.fd;
	left = nr_odd ? __atomic_load_n(&nr_connecting, __ATOMIC_RELAXED) : 0;
	for (fd = 0; found < 0 && left > 0 && fd < nr_fds; fd++) {
		if (kind(fd) != RSP_CONNECTING)
			continue;
		left--;
		if (ep_has(fd, epfd, data))
			found = fd;
	}
	pthread_mutex_unlock(&lock);
	return found;
}

/*
 * @ev's events of connecting descriptors found out: those of one that went
 * to TCP are dropped (its registration, made again on the TCP socket,
 * reports it anew); the new count.
 */
static int epoll_fix(int epfd, struct epoll_event *ev, int n)
{
	int i, fd;

	for (i = 0; i < n; i++) {
		fd = ep_owner(epfd, ev[i].data);
		if (fd < 0 || settle(fd) != RSP_NONE)
			continue;
		memmove(&ev[i], &ev[i + 1], (n - i - 1) * sizeof(*ev));
		n--;
		i--;
	}
	return n;
}

/* epoll_pwait() (@ts unused) or, with @p2, epoll_pwait2() (@timeout unused). */
static int epoll_either(bool p2, int epfd, struct epoll_event *ev, int max, int timeout,
			const struct timespec *ts, const sigset_t *mask)
{
	int ret;

	do {
		ret = p2 ? real.epoll_pwait2(epfd, ev, max, ts, mask) :
			   real.epoll_pwait(epfd, ev, max, timeout, mask);
		if (ret <= 0 || !__atomic_load_n(&nr_connecting, __ATOMIC_RELAXED))
			return ret;
		ret = epoll_fix(epfd, ev, ret);
	} while (!ret);
	return ret;
}

RSP_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
			   const sigset_t *mask)
{
	ready();
	return epoll_either(false, epfd, ev, max, timeout, NULL, mask);
}

RSP_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max,
			    const struct timespec *ts, const sigset_t *mask)
{
	ready();
	if (!real.epoll_pwait2) {
		errno = ENOSYS;
		return -1;
	}
	return epoll_either(true, epfd, ev, max, 0, ts, mask);
}

RSP_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	ready();
	if (!__atomic_load_n(&nr_connecting, __ATOMIC_RELAXED))
		return real.epoll_wait(epfd, ev, max, timeout);
	return epoll_pwait(epfd, ev, max, timeout, NULL);
}

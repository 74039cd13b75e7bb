// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * librdmashare-preload.so: connect(), blocking and not, and what a
 * connecting socket became (settle()).
 */
#include "preload.h"

static int dev_fd = -1;		/* connects come from here; -1 not yet, -2 none */
static unsigned long long dev_feats;	/* its module's RDMASHARE_FEAT_* */
static pthread_mutex_t settle_lock = PTHREAD_MUTEX_INITIALIZER;
static bool nb_old;		/* the module has no non-blocking CONNECT */

/* ---- the process's /dev/rdmashare file, for CONNECTs ---- */

/* A file set up with only what AC files need; -1 if it cannot be had. */
static int dev_open(void)
{
	struct rdmashare_query q = { .size = sizeof(q) };
	struct rdmashare_setup p;
	unsigned long long files;
	int fd;

	fd = open(DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (!ioctl(fd, RDMASHARE_IOC_QUERY, &q))
		__atomic_store_n(&dev_feats, q.features, __ATOMIC_RELAXED);
	/* As many send buffers as RLIMIT_MEMLOCK allows, 256 at most. */
	for (files = 256ULL * SNDBUF; files >= SNDBUF; files /= 2) {
		memset(&p, 0, sizeof(p));
		p.size = sizeof(p);
		p.flags = RDMASHARE_SETUP_FILES;
		p.sq_entries = 1;
		p.data_size = 4096;
		p.files_size = files;
		if (!ioctl(fd, RDMASHARE_IOC_SETUP, &p))
			return fd;
		if (errno != ENOMEM)
			break;
	}
	say("no rdmashare file: %s", strerror(errno));
	real.close(fd);
	return -1;
}

/* The file, opened once; a full one is replaced (its AC files keep it). */
static int dev_get(bool full)
{
	int fd, old = -1;

	pthread_mutex_lock(&lock);
	if (dev_fd == -1 || (full && dev_fd >= 0)) {
		old = dev_fd;
		dev_fd = dev_open();
		if (dev_fd < 0)
			dev_fd = full ? -1 : -2;
	}
	fd = dev_fd;
	pthread_mutex_unlock(&lock);
	if (old >= 0)
		real.close(old);
	return fd;
}

/* ---- connect ---- */

/*
 * @sa, or if it is an IPv4-mapped IPv6 address (::ffff:a.b.c.d, an IPv6
 * socket's way to an IPv4 host) the IPv4 address in @v4: Linux connects
 * such a socket over IPv4, and rdma_cm routes the IPv4 address alone.
 */
static const struct sockaddr *unmapped(const struct sockaddr *sa, socklen_t len,
				       struct sockaddr_in *v4)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

	if (sa->sa_family != AF_INET6 || len < sizeof(*s6) ||
	    !IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
		return sa;
	memset(v4, 0, sizeof(*v4));
	v4->sin_family = AF_INET;
	v4->sin_port = s6->sin6_port;
	memcpy(&v4->sin_addr, &s6->sin6_addr.s6_addr[12], 4);
	return (const struct sockaddr *)v4;
}

/* @fd's name (getsockname()) in @ss: 0, or -1. */
static int name_of(int fd, struct sockaddr_storage *ss, socklen_t *len)
{
	*len = sizeof(*ss);
	if (real.getsockname(fd, (struct sockaddr *)ss, len) < 0)
		return -1;
	return ss->ss_family == AF_INET || ss->ss_family == AF_INET6 ? 0 : -1;
}

/*
 * The port the socket @fd is bound to, for the AC to have as TCP's end
 * would (RDMASHARE_CONNECT_PORT): the program's bind(), or else, if it is
 * not bound at all, a port the system chooses for bind() to port 0; the
 * module keeps the socket while the AC lives, and the peer's getpeername()
 * gives the port.  Without one (an older module, RDMASHARE_CLIENT_PORTS=0,
 * an address bound without a port: IP_BIND_ADDRESS_NO_PORT, no port left),
 * the AC has port 0 and connects all the same.
 */
static void port_from(int fd, struct rdmashare_connect *c)
{
	static const unsigned char any[16];
	struct sockaddr_storage ss;
	const struct sockaddr *sa = (const struct sockaddr *)&ss;
	socklen_t len;

	if (!(__atomic_load_n(&dev_feats, __ATOMIC_RELAXED) & RDMASHARE_FEAT_CONNECT_PORT) ||
	    !client_ports || name_of(fd, &ss, &len))
		return;
	if (!port_of(sa)) {
		/* Unbound: the wildcard address and port 0. */
		if (memcmp(addr_of(sa), any, ss.ss_family == AF_INET ? 4 : 16))
			return;
		if (bind(fd, sa, len) < 0) {
			say("connect fd %d: no port (%s)", fd, strerror(errno));
			return;
		}
		if (name_of(fd, &ss, &len) || !port_of(sa))
			return;
	}
	c->flags |= RDMASHARE_CONNECT_PORT;
	c->sock = fd;
}

/*
 * CONNECT @c to @sa, from the port of the socket @fd, on the process's
 * file (a new file when the file area is full): 0, the AC file in
 * @c->file.fd; or -errno.
 */
static int connect_ioctl(int fd, struct rdmashare_connect *c, const struct sockaddr *sa)
{
	int dev, tries, err = 0;

	c->peer.family = sa->sa_family;
	c->peer.port = port_of(sa);
	memcpy(c->peer.addr, addr_of(sa), sa->sa_family == AF_INET ? 4 : 16);
	c->timeout_ms = CONNECT_MS;
	c->file.sndbuf = SNDBUF;
	for (tries = 0; tries < 2; tries++) {
		dev = dev_get(tries);
		if (dev < 0)
			return -ENODEV;
		if (!(c->flags & RDMASHARE_CONNECT_PORT))
			port_from(fd, c);
		if (!ioctl(dev, RDMASHARE_IOC_CONNECT, c))
			return 0;
		err = -errno;
		/* A full file area: a new file for the next ones. */
		if (err != -ENOSPC)
			return err;
	}
	return err;
}

/*
 * An AC file to @sa, in place of the socket @fd, waited for: 0, or -errno
 * (the socket untouched).
 */
static int rdma_connect(int fd, const struct sockaddr *sa)
{
	struct rdmashare_connect c = { .size = sizeof(c), .flags = RDMASHARE_CONNECT_FILE };
	int fl, fdfl, err;

	fl = fcntl(fd, F_GETFL);
	fdfl = fcntl(fd, F_GETFD);
	c.file.flags = RDMASHARE_FILE_CLOEXEC | (fl & O_NONBLOCK ? RDMASHARE_FILE_NONBLOCK : 0);
	err = connect_ioctl(fd, &c, sa);
	if (err)
		return err;
	timeo_copy(fd, c.file.fd);
	err = swap_file(fd, c.file.fd, fdfl & FD_CLOEXEC ? O_CLOEXEC : 0);
	real.close(c.file.fd);
	if (err)
		return err;
	set_kind(fd, RSP_ACFILE);
	opts_apply(fd, rsp(fd));
	more_drop(fd);
	return 0;
}

/*
 * A non-blocking connect(): the AC file takes @fd's number at once, its
 * CONNECT under way (RDMASHARE_CONNECT_NONBLOCK), and the TCP socket waits
 * aside (from half the descriptor limit up, or 4096, out of the program's
 * way) for a TCP connect if rdmashare's fails: settle().  0; 1 if it cannot
 * be had (an older module, no descriptor to spare), for the blocking way;
 * or -errno (the socket untouched).
 */
static int rdma_connect_nb(int fd, const struct sockaddr *to, const struct sockaddr *sa,
			   socklen_t len)
{
	struct rdmashare_connect c = {
		.size = sizeof(c), .flags = RDMASHARE_CONNECT_FILE | RDMASHARE_CONNECT_NONBLOCK,
	};
	struct rsp_fd *e = rsp(fd);
	struct rsp_more *m;
	int tcp, fdfl, err;

	if (__atomic_load_n(&nb_old, __ATOMIC_RELAXED) || !e)
		return 1;
	tcp = hide_fd(fd);
	if (tcp < 0)
		return 1;
	fdfl = fcntl(fd, F_GETFD);
	c.file.flags = RDMASHARE_FILE_CLOEXEC | RDMASHARE_FILE_NONBLOCK;
	err = connect_ioctl(fd, &c, to);
	if (err == -EINVAL &&
	    !(__atomic_load_n(&dev_feats, __ATOMIC_RELAXED) & RDMASHARE_FEAT_CONNECT_NONBLOCK)) {
		/* A module without it: the blocking way from now on. */
		__atomic_store_n(&nb_old, true, __ATOMIC_RELAXED);
		err = 1;
	}
	if (err)
		goto out_tcp;
	pthread_mutex_lock(&lock);
	m = more_get(e, 0);
	if (m) {
		memcpy(&m->peer, sa, len);
		m->len = len;
	}
	pthread_mutex_unlock(&lock);
	err = m ? 0 : 1;
	if (!err) {
		timeo_copy(fd, c.file.fd);
		opts_apply(c.file.fd, e);
		err = swap_file(fd, c.file.fd, fdfl & FD_CLOEXEC ? O_CLOEXEC : 0);
	}
	real.close(c.file.fd);
	if (err)
		goto out_tcp;
	e->tcp = tcp;
	set_kind(fd, RSP_CONNECTING);
	return 0;

out_tcp:
	real.close(tcp);
	return err;
}

/*
 * The connecting AC file @fd failed with @err: the socket it replaced takes
 * its number back and connects over TCP, as it would have without us.  The
 * connect is waited for (CONNECT_MS at most), so that the call that found
 * the failure (getsockopt(SO_ERROR), a second connect(), a read) gets TCP's
 * answer; one still under way is left to the program as TCP's would be.
 * Under settle_lock, but for the wait: a peer that does not answer holds
 * up only the calls on its own socket.
 */
static void fall_back(int fd, int err)
{
	struct rsp_fd *e = rsp(fd);
	struct rsp_more *m = e->more;
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int tcp = e->tcp, fl, fdfl;
	bool wait;

	if (err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH || err == ENODEV)
		neg_add((const struct sockaddr *)&m->peer, m->len);
	fl = fcntl(fd, F_GETFL);
	fdfl = fcntl(fd, F_GETFD);
	e->tcp = -1;
	set_kind(fd, RSP_NONE);
	if (swap_file(fd, tcp, fdfl & FD_CLOEXEC ? O_CLOEXEC : 0)) {
		/* The AC file's error stays the answer. */
		real.close(tcp);
		more_drop(fd);
		set_kind(fd, RSP_ACFILE);
		return;
	}
	real.close(tcp);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	wait = real.connect(fd, (const struct sockaddr *)&m->peer, m->len) < 0 &&
	       errno == EINPROGRESS;
	say("connect fd %d: %s, TCP", fd, strerror(err));
	more_drop(fd);
	/* A TCP socket now: the calls of other threads on it go straight to it. */
	pthread_mutex_unlock(&settle_lock);
	if (wait)
		real.poll(&p, 1, CONNECT_MS);
	fcntl(fd, F_SETFL, fl);
	pthread_mutex_lock(&settle_lock);
}

/*
 * What the connecting AC file @fd has become, found by the first call on
 * it that needs to know: still connecting or connected, the AC file
 * (RSP_ACFILE; the TCP socket is closed once it is connected); failed,
 * the TCP socket connected in its place (RSP_NONE).
 */
int settle(int fd)
{
	struct rdmashare_file_info fi;
	struct rsp_fd *e = rsp(fd);
	int k;

	pthread_mutex_lock(&settle_lock);
	k = kind(fd);
	if (k != RSP_CONNECTING)
		goto out;
	k = RSP_ACFILE;
	if (file_info(fd, &fi, 0) || fi.state == RDMASHARE_AC_STATE_CONNECTING)
		goto out;
	if (!fi.error) {
		real.close(e->tcp);
		e->tcp = -1;
		more_drop(fd);
		set_kind(fd, RSP_ACFILE);
		say("connect fd %d: rdmashare", fd);
		goto out;
	}
	fall_back(fd, -fi.error);
	k = kind(fd);
out:
	pthread_mutex_unlock(&settle_lock);
	return k;
}

/* @fd's kind for a call on it: a connecting one's found out first. */
int live(int fd)
{
	int k = kind(fd);

	return k == RSP_CONNECTING ? settle(fd) : k;
}

RSP_EXPORT int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	const struct sockaddr *to;
	struct sockaddr_in v4;
	int err;

	ready();
	switch (live(fd)) {
	case RSP_CAND:
		break;
	case RSP_ACFILE:
		/* Asked again, as hiredis asks whether it is done. */
		errno = kind(fd) == RSP_CONNECTING ? EALREADY : EISCONN;
		return -1;
	default:
		return real.connect(fd, sa, len);
	}
	if (!sa || len < sizeof(struct sockaddr_in) || len > sizeof(struct sockaddr_storage))
		return real.connect(fd, sa, len);
	to = unmapped(sa, len, &v4);
	if (!selected(to, false) || neg_cached(to)) {
		set_kind(fd, RSP_NONE);
		more_drop(fd);
		return real.connect(fd, sa, len);
	}
	set_kind(fd, RSP_NONE);
	err = 1;
	if (fcntl(fd, F_GETFL) & O_NONBLOCK) {
		err = rdma_connect_nb(fd, to, sa, len);
		if (!err) {
			say("connect fd %d port %u: under way", fd, port_of(to));
			errno = EINPROGRESS;
			return -1;
		}
	}
	if (err > 0)
		err = rdma_connect(fd, to);
	say("connect fd %d port %u: %s", fd, port_of(to), err ? strerror(-err) : "rdmashare");
	if (!err)
		return 0;
	if (err == -EINTR) {
		set_kind(fd, RSP_CAND);
		errno = EINTR;
		return -1;
	}
	more_drop(fd);
	/* No RDMA path to the host (no device has its route): TCP for a while. */
	if (err == -ETIMEDOUT || err == -EHOSTUNREACH || err == -ENETUNREACH ||
	    (err == -ENODEV && dev_fd >= 0))
		neg_add(to, to == sa ? len : sizeof(v4));
	return real.connect(fd, sa, len);
}

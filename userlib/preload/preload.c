// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * librdmashare-preload.so: unmodified programs' TCP over rdmashare.
 *
 * Loaded with LD_PRELOAD (rdmashare-run(8) does that), it takes the
 * AF_INET and AF_INET6 SOCK_STREAM sockets that the policy selects over
 * to rdmashare, and leaves every other descriptor alone.  The descriptor
 * the program holds is the kernel's own file throughout, so that poll,
 * select, epoll, fork, dup and exec need nothing from here:
 *
 * - socket() makes the real TCP socket.  Until connect() or listen() it is
 *   nothing but that: bind, setsockopt and fcntl go to it.
 * - connect() to a selected address first tries an AC file (a CONNECT on
 *   the process's /dev/rdmashare file).  On a blocking socket it waits for
 *   the peer's answer; connected, the AC file takes the socket's number
 *   (dup3()).  On a non-blocking one the AC file takes the number at once
 *   (EINPROGRESS), the TCP socket waiting aside until the first call that
 *   needs the outcome (settle()).  Refused (no rdmashare listener on the
 *   port, or no rdmashare on the host), the socket connects over TCP as it
 *   would have; unreachable or timed out, the host is remembered for a
 *   minute and later connects go straight to TCP.  The epoll
 *   registrations made on the number follow it to the new file, and
 *   while a connect is under way poll(), select() and epoll_wait() report
 *   a failed AC file as the TCP socket that took its place.
 * - listen() on a selected port listens on TCP as asked and on a listening
 *   file of rdmashare's on the same port; the socket's number becomes an
 *   epoll instance that watches both (readable when either has a
 *   connection), and accept() takes from whichever has one, rdmashare
 *   first every other time.  So a plain TCP client reaches a preloaded
 *   server, and a preloaded client a plain TCP server.
 * - On an AC file, the socket calls the kernel refuses on a non-socket are
 *   answered here: send, recv and their kin as RDMASHARE_IOC_SENDMSG and
 *   RECVMSG, which take their flags (write and read on an older module,
 *   which cannot peek), getsockopt (SO_ERROR from RDMASHARE_IOC_FILE_INFO,
 *   SO_SNDBUF, TCP_CORK, SO_RCVTIMEO and SO_SNDTIMEO from it too,
 *   TCP_NODELAY and the like as TCP would answer), setsockopt (SO_SNDBUF,
 *   TCP_CORK and the timeouts through RDMASHARE_IOC_FILE_SET, others
 *   accepted where harmless, ENOPROTOOPT otherwise), getsockname,
 *   getpeername and shutdown.  The timeouts set on a socket before it
 *   became an AC file, or on its listener, pass on to it.
 *
 * Policy, from the environment (or /etc/rdmashare/preload.conf, KEY=VALUE
 * lines, which the environment overrides): RDMASHARE_PORTS (ports and
 * ranges, "5201,6379,7000-7100"), RDMASHARE_NETS (CIDRs, "10.0.0.0/8"),
 * RDMASHARE_PROGRAMS (program names); each unset means all.
 * RDMASHARE_DEBUG=1 tells on stderr what was decided.
 *
 * What cannot work: statically linked programs, system calls made without
 * libc (raw syscall(), io_uring), setuid programs (the loader drops
 * LD_PRELOAD), and a listening socket inherited across exec(2) (its
 * rdmashare half is gone with the preload's state).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <linux/rdmashare.h>

#include "internal.h"

#define RSP_EXPORT __attribute__((visibility("default")))

#define DEV_PATH		"/dev/rdmashare"
#define CONF_PATH		"/etc/rdmashare/preload.conf"
#define CONNECT_MS		3000	/* an RDMA attempt, before TCP */
#define LISTEN_FILES		1024	/* AC files a listener may give */
#define SNDBUF			(64 << 10)
#define NEG_TTL			60	/* s a host without an RDMA path is skipped */
#define NEG_SLOTS		64
#define MAX_RULES		32

enum rsp_kind {
	RSP_NONE,	/* not ours (or not known to be) */
	RSP_CAND,	/* a TCP socket that may still go over rdmashare */
	RSP_ACFILE,	/* an AC file */
	RSP_LISTEN,	/* an epoll instance over a TCP listener and a listening file */
	RSP_CONNECTING,	/* an AC file whose non-blocking CONNECT is under way */
};

/* Options a socket was given before it became an AC file (rsp_fd.opts). */
#define RSP_OPT_SNDBUF		0x1	/* SO_SNDBUF: rsp_fd.sndbuf */
#define RSP_OPT_CORK		0x2	/* TCP_CORK was set, ... */
#define RSP_OPT_CORK_ON		0x4	/* ... to this */

struct rsp_fd {
	unsigned char kind;
	unsigned char turn;	/* RSP_LISTEN: which to try first */
	unsigned char opts;	/* RSP_CAND, RSP_LISTEN: RSP_OPT_* */
	unsigned char v6;	/* an AF_INET6 socket's: IPv4 names v4-mapped */
	int sndbuf;		/* the SO_SNDBUF value given */
	int tcp;		/* RSP_LISTEN: the TCP listener; RSP_CONNECTING: the socket */
	int lfile;		/* RSP_LISTEN: the listening file */
	struct rsp_more *more;	/* RSP_CAND, RSP_CONNECTING: see there */
};

/* A registration of the program's in an epoll instance (epoll_ctl()). */
struct rsp_ep {
	int epfd;
	bool del;		/* taken off for a change of file, to be put back */
	struct epoll_event ev;
};

/*
 * What a socket needs when the file behind its number changes: connect()'s
 * address, for a TCP connect after rdmashare's failed, and the epoll
 * registrations made on the number, which go with the old file and are made
 * again on the new one.
 */
struct rsp_more {
	struct sockaddr_storage peer;
	socklen_t len;
	int nr_ep, max_ep;
	struct rsp_ep ep[];
};

struct rsp_rule {
	unsigned int lo, hi;		/* ports */
	int family;			/* nets */
	unsigned char addr[16];
	unsigned int bits;
};

struct rsp_neg {
	struct sockaddr_storage addr;
	time_t until;
};

static struct {
	int (*socket)(int, int, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*accept)(int, struct sockaddr *, socklen_t *);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*close)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*shutdown)(int, int);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*getpeername)(int, struct sockaddr *, socklen_t *);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*writev)(int, const struct iovec *, int);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
		       const sigset_t *);
	int (*epoll_wait)(int, struct epoll_event *, int, int);
	int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
	int (*epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *,
			    const sigset_t *);
} real;

#define RESOLVE(name) (real.name = dlsym(RTLD_NEXT, #name))
/* For calls that other libraries' constructors may make before ours. */
#define NEED(name) do { if (!real.name) RESOLVE(name); } while (0)

static struct rsp_fd *fds;
static int nr_fds;
static bool enabled, debug;
static struct rsp_rule ports[MAX_RULES], nets[MAX_RULES];
static int nr_ports, nr_nets;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int dev_fd = -1;		/* connects come from here; -1 not yet, -2 none */
static pthread_mutex_t settle_lock = PTHREAD_MUTEX_INITIALIZER;
static int nr_odd;		/* kept registrations whose data is not their number */
static bool nb_old;		/* the module has no non-blocking CONNECT */
static struct rsp_neg neg[NEG_SLOTS];

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	if (!debug)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "rdmashare-preload[%d]: ", getpid());
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void opts_apply(int fd, const struct rsp_fd *from);
static int file_info(int fd, struct rdmashare_file_info *fi, unsigned int flags);
static void timeo_copy(int tcp, int fd);

static struct rsp_fd *rsp(int fd)
{
	return fd >= 0 && fd < nr_fds ? &fds[fd] : NULL;
}

static int kind(int fd)
{
	struct rsp_fd *e = rsp(fd);

	return e ? __atomic_load_n(&e->kind, __ATOMIC_ACQUIRE) : RSP_NONE;
}

/* Descriptors in RSP_CONNECTING: poll() and its kin look at them. */
static int nr_connecting;

static void set_kind(int fd, int k)
{
	struct rsp_fd *e = rsp(fd);
	int old;

	if (!e)
		return;
	old = __atomic_exchange_n(&e->kind, k, __ATOMIC_ACQ_REL);
	if (old == RSP_CONNECTING && k != RSP_CONNECTING)
		__atomic_fetch_sub(&nr_connecting, 1, __ATOMIC_RELAXED);
	else if (old != RSP_CONNECTING && k == RSP_CONNECTING)
		__atomic_fetch_add(&nr_connecting, 1, __ATOMIC_RELAXED);
}

/* ---- a socket's number changing file ---- */

/* @fd's rsp_more, made if it has none; NULL without memory.  Under lock. */
static struct rsp_more *more_get(struct rsp_fd *e, int room)
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
static void more_drop(int fd)
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
static int swap_file(int fd, int nfd, int flags)
{
	struct rsp_fd *e = rsp(fd);
	struct rsp_more *m;
	int i, err = 0;

	pthread_mutex_lock(&lock);
	m = e ? e->more : NULL;
	for (i = 0; m && i < m->nr_ep; i++)
		m->ep[i].del = !real.epoll_ctl(m->ep[i].epfd, EPOLL_CTL_DEL, fd, NULL);
	if (real.dup3(nfd, fd, flags) < 0)
		err = -errno;
	for (i = 0; m && i < m->nr_ep; i++)
		if (m->ep[i].del &&
		    real.epoll_ctl(m->ep[i].epfd, EPOLL_CTL_ADD, fd, &m->ep[i].ev))
			say("fd %d: epoll %d not made again: %s", fd, m->ep[i].epfd,
			    strerror(errno));
	pthread_mutex_unlock(&lock);
	return err;
}

RSP_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	int k = kind(fd), ret;

	NEED(epoll_ctl);
	ret = real.epoll_ctl(epfd, op, fd, ev);
	if (!ret && (k == RSP_CAND || k == RSP_CONNECTING))
		ep_note(fd, epfd, op, ev);
	return ret;
}

/* ---- policy ---- */

static const char *conf(const char *key)
{
	static char buf[4096];
	char line[512], *v;
	const char *env = getenv(key);
	size_t n = strlen(key);
	FILE *f;

	if (env)
		return env;
	f = fopen(CONF_PATH, "re");
	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, n) || line[n] != '=')
			continue;
		v = line + n + 1;
		v[strcspn(v, "\r\n")] = 0;
		snprintf(buf, sizeof(buf), "%s", v);
		fclose(f);
		return buf;
	}
	fclose(f);
	return NULL;
}

static void parse_ports(const char *s)
{
	char *end;

	while (s && *s && nr_ports < MAX_RULES) {
		struct rsp_rule *r = &ports[nr_ports];

		r->lo = strtoul(s, &end, 10);
		r->hi = *end == '-' ? strtoul(end + 1, &end, 10) : r->lo;
		if (end != s)
			nr_ports++;
		s = strchr(end, ',');
		s = s ? s + 1 : NULL;
	}
}

static void parse_nets(const char *s)
{
	char one[64], *slash;
	size_t n;

	while (s && *s && nr_nets < MAX_RULES) {
		struct rsp_rule *r = &nets[nr_nets];

		n = strcspn(s, ",");
		snprintf(one, sizeof(one), "%.*s", (int)n, s);
		slash = strchr(one, '/');
		if (slash)
			*slash = 0;
		r->family = strchr(one, ':') ? AF_INET6 : AF_INET;
		if (inet_pton(r->family, one, r->addr) == 1) {
			r->bits = slash ? strtoul(slash + 1, NULL, 10) :
					  (r->family == AF_INET ? 32 : 128);
			nr_nets++;
		}
		s = s[n] ? s + n + 1 : NULL;
	}
}

static bool prefix_match(const unsigned char *a, const unsigned char *b, unsigned int bits)
{
	unsigned int full = bits / 8, rest = bits % 8;

	if (memcmp(a, b, full))
		return false;
	return !rest || !((a[full] ^ b[full]) & (0xff << (8 - rest)));
}

static unsigned int port_of(const struct sockaddr *sa)
{
	return ntohs(sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_port :
						((const struct sockaddr_in6 *)sa)->sin6_port);
}

static const unsigned char *addr_of(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET ?
	       (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr :
	       (const unsigned char *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
}

static bool port_selected(unsigned int port)
{
	int i;

	for (i = 0; i < nr_ports; i++)
		if (port >= ports[i].lo && port <= ports[i].hi)
			return true;
	return !nr_ports;
}

/* Whether the policy sends @sa (a peer, or the address a listener binds) over rdmashare. */
static bool selected(const struct sockaddr *sa, bool any_addr)
{
	int i;

	if (!enabled || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return false;
	if (!port_selected(port_of(sa)))
		return false;
	if (any_addr || !nr_nets)
		return true;
	for (i = 0; i < nr_nets; i++)
		if (nets[i].family == sa->sa_family &&
		    prefix_match(addr_of(sa), nets[i].addr, nets[i].bits))
			return true;
	return false;
}

static bool program_selected(const char *list)
{
	const char *me = program_invocation_short_name;
	size_t n = strlen(me);
	const char *p = list;

	while (p && *p) {
		if (!strncmp(p, me, n) && (p[n] == ',' || !p[n]))
			return true;
		p = strchr(p, ',');
		p = p ? p + 1 : NULL;
	}
	return false;
}

/* ---- hosts without an RDMA path ---- */

static bool same_host(const struct sockaddr *a, const struct sockaddr_storage *b)
{
	return a->sa_family == b->ss_family &&
	       !memcmp(addr_of(a), addr_of((const struct sockaddr *)b),
		       a->sa_family == AF_INET ? 4 : 16);
}

static bool neg_cached(const struct sockaddr *sa)
{
	time_t now = time(NULL);
	bool hit = false;
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < NEG_SLOTS && !hit; i++)
		hit = neg[i].until > now && same_host(sa, &neg[i].addr);
	pthread_mutex_unlock(&lock);
	return hit;
}

static void neg_add(const struct sockaddr *sa, socklen_t len)
{
	time_t now = time(NULL);
	int i, old = 0;

	pthread_mutex_lock(&lock);
	for (i = 0; i < NEG_SLOTS; i++) {
		if (neg[i].until <= now) {
			old = i;
			break;
		}
		if (neg[i].until < neg[old].until)
			old = i;
	}
	memset(&neg[old].addr, 0, sizeof(neg[old].addr));
	memcpy(&neg[old].addr, sa, len < sizeof(neg[old].addr) ? len : sizeof(neg[old].addr));
	neg[old].until = now + NEG_TTL;
	pthread_mutex_unlock(&lock);
}

/* ---- the process's /dev/rdmashare file, for CONNECTs ---- */

/* A file set up with only what AC files need; -1 if it cannot be had. */
static int dev_open(void)
{
	struct rdmashare_setup p;
	unsigned long long files;
	int fd;

	fd = open(DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
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

/*
 * An AC file to @sa, in place of the socket @fd: 0, or -errno (the socket
 * untouched).
 */
static int rdma_connect(int fd, const struct sockaddr *sa)
{
	struct rdmashare_connect c = { .size = sizeof(c), .flags = RDMASHARE_CONNECT_FILE };
	int dev, fl, fdfl, tries, err = 0;

	c.peer.family = sa->sa_family;
	c.peer.port = port_of(sa);
	memcpy(c.peer.addr, addr_of(sa), sa->sa_family == AF_INET ? 4 : 16);
	c.timeout_ms = CONNECT_MS;
	fl = fcntl(fd, F_GETFL);
	fdfl = fcntl(fd, F_GETFD);
	c.file.flags = RDMASHARE_FILE_CLOEXEC | (fl & O_NONBLOCK ? RDMASHARE_FILE_NONBLOCK : 0);
	c.file.sndbuf = SNDBUF;
	for (tries = 0; tries < 2; tries++) {
		dev = dev_get(tries);
		if (dev < 0)
			return -ENODEV;
		if (!ioctl(dev, RDMASHARE_IOC_CONNECT, &c))
			break;
		err = -errno;
		/* A full file area: a new file for the next ones. */
		if (err != -ENOSPC)
			return err;
	}
	if (tries == 2)
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
	struct rlimit rl;
	int dev, tcp, fdfl, tries, err = 0;
	long low;

	if (__atomic_load_n(&nb_old, __ATOMIC_RELAXED) || !e || getrlimit(RLIMIT_NOFILE, &rl))
		return 1;
	/* Not below half the limit, nor so high that the table grows for it. */
	low = rl.rlim_cur / 2 < 64 ? 64 : rl.rlim_cur / 2 > 4096 ? 4096 : (long)rl.rlim_cur / 2;
	tcp = fcntl(fd, F_DUPFD_CLOEXEC, low);
	if (tcp < 0 || !rsp(tcp)) {
		if (tcp >= 0)
			real.close(tcp);
		return 1;
	}
	c.peer.family = to->sa_family;
	c.peer.port = port_of(to);
	memcpy(c.peer.addr, addr_of(to), to->sa_family == AF_INET ? 4 : 16);
	c.timeout_ms = CONNECT_MS;
	fdfl = fcntl(fd, F_GETFD);
	c.file.flags = RDMASHARE_FILE_CLOEXEC | RDMASHARE_FILE_NONBLOCK;
	c.file.sndbuf = SNDBUF;
	for (tries = 0; tries < 2; tries++) {
		dev = dev_get(tries);
		if (dev < 0) {
			err = -ENODEV;
			goto out_tcp;
		}
		if (!ioctl(dev, RDMASHARE_IOC_CONNECT, &c))
			break;
		err = -errno;
		if (err == -EINVAL) {
			/* A module without it: the blocking way from now on. */
			__atomic_store_n(&nb_old, true, __ATOMIC_RELAXED);
			err = 1;
		}
		if (err != -ENOSPC)
			goto out_tcp;
	}
	if (tries == 2)
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
 * Under settle_lock.
 */
static void fall_back(int fd, int err)
{
	struct rsp_fd *e = rsp(fd);
	struct rsp_more *m = e->more;
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int tcp = e->tcp, fl, fdfl;

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
	if (real.connect(fd, (const struct sockaddr *)&m->peer, m->len) < 0 &&
	    errno == EINPROGRESS) {
		NEED(poll);
		real.poll(&p, 1, CONNECT_MS);
	}
	fcntl(fd, F_SETFL, fl);
	say("connect fd %d: %s, TCP", fd, strerror(err));
	more_drop(fd);
}

/*
 * What the connecting AC file @fd has become, found by the first call on
 * it that needs to know: still connecting or connected, the AC file
 * (RSP_ACFILE; the TCP socket is closed once it is connected); failed,
 * the TCP socket connected in its place (RSP_NONE).
 */
static int settle(int fd)
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
static int live(int fd)
{
	int k = kind(fd);

	return k == RSP_CONNECTING ? settle(fd) : k;
}

RSP_EXPORT int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	const struct sockaddr *to;
	struct sockaddr_in v4;
	int err;

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
	tcp = fcntl(fd, F_DUPFD_CLOEXEC, 0);
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

static int put_addr(const struct rdmashare_addr *a, struct sockaddr *sa, socklen_t *len,
		    bool v6);

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
		NEED(epoll_wait);
		n = real.epoll_wait(fd, &ev, 1, -1);
		if (n < 0)
			return -1;
	}
}

RSP_EXPORT int accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
	if (kind(fd) == RSP_LISTEN)
		return accept_either(fd, sa, len, flags);
	return real.accept4(fd, sa, len, flags);
}

RSP_EXPORT int accept(int fd, struct sockaddr *sa, socklen_t *len)
{
	if (kind(fd) == RSP_LISTEN)
		return accept_either(fd, sa, len, 0);
	return real.accept(fd, sa, len);
}

/* ---- descriptors ---- */

RSP_EXPORT int socket(int domain, int type, int protocol)
{
	int fd = real.socket(domain, type, protocol);

	if (fd >= 0 && rsp(fd)) {
		rsp(fd)->opts = 0;
		rsp(fd)->v6 = domain == AF_INET6;
		/* Left by a number closed without close() (close_range()). */
		more_drop(fd);
	}
	if (fd >= 0 && enabled && (domain == AF_INET || domain == AF_INET6) &&
	    (type & 0xf) == SOCK_STREAM && (!protocol || protocol == IPPROTO_TCP))
		set_kind(fd, RSP_CAND);
	else if (fd >= 0)
		set_kind(fd, RSP_NONE);
	return fd;
}

/* @fd is no longer what the table says: a listener's hidden halves go. */
static void forget(int fd)
{
	struct rsp_fd *e = rsp(fd);

	if (!e)
		return;
	if (kind(fd) == RSP_LISTEN) {
		real.close(e->tcp);
		real.close(e->lfile);
	} else if (kind(fd) == RSP_CONNECTING) {
		real.close(e->tcp);
	}
	e->v6 = 0;
	set_kind(fd, RSP_NONE);
	more_drop(fd);
}

RSP_EXPORT int close(int fd)
{
	forget(fd);
	return real.close(fd);
}

RSP_EXPORT int dup2(int old, int new)
{
	int ret;

	if (old == new || kind(old) == RSP_LISTEN)
		return real.dup2(old, new);
	ret = real.dup2(old, new);
	if (ret >= 0) {
		forget(new);
		if (rsp(old) && rsp(new))
			rsp(new)->v6 = rsp(old)->v6;
		/* A copy of a connecting one does not go back to TCP. */
		set_kind(new, kind(old) == RSP_CONNECTING ? RSP_ACFILE : kind(old));
	}
	return ret;
}

RSP_EXPORT int dup3(int old, int new, int flags)
{
	int ret;

	if (kind(old) == RSP_LISTEN)
		return real.dup3(old, new, flags);
	ret = real.dup3(old, new, flags);
	if (ret >= 0) {
		forget(new);
		if (rsp(old) && rsp(new))
			rsp(new)->v6 = rsp(old)->v6;
		/* A copy of a connecting one does not go back to TCP. */
		set_kind(new, kind(old) == RSP_CONNECTING ? RSP_ACFILE : kind(old));
	}
	return ret;
}

/*
 * Whether @fd is an AC file: known, or found so when the kernel refused a
 * socket call on it (one inherited across exec, or dup'ed elsewhere).
 */
static bool is_acfile(int fd, int err)
{
	struct rdmashare_file_info fi = { .size = sizeof(fi) };

	if (kind(fd) == RSP_ACFILE || kind(fd) == RSP_CONNECTING)
		return true;
	if (err != ENOTSOCK || ioctl(fd, RDMASHARE_IOC_FILE_INFO, &fi))
		return false;
	set_kind(fd, RSP_ACFILE);
	return true;
}

/* ---- data ---- */

/* Set once an AC file took FILE_INFO and refused SENDMSG: an older module. */
static bool msg_old;

/*
 * An older module's acfile_io(): readv() and writev(), with the flags
 * faked around them.  MSG_DONTWAIT is the file's O_NONBLOCK for the call
 * (seen by other threads meanwhile), MSG_NOSIGNAL a SIGPIPE blocked in
 * this thread (taken if the call raised it), MSG_WAITALL a loop, and
 * MSG_PEEK cannot be done.
 */
static ssize_t acfile_io_old(int fd, const struct iovec *iov, int iovcnt, int flags, bool out)
{
	sigset_t pipe_set, old_set, pending;
	bool nonblock = false, sigpipe_pending = false, masked = false;
	size_t want = 0, done = 0;
	ssize_t n = 0;
	int fl = 0, i, err;

	if (!out && (flags & MSG_PEEK)) {
		errno = EOPNOTSUPP;
		return -1;
	}
	for (i = 0; i < iovcnt; i++)
		want += iov[i].iov_len;
	if (flags & MSG_DONTWAIT) {
		fl = fcntl(fd, F_GETFL);
		nonblock = fl >= 0 && !(fl & O_NONBLOCK);
		if (nonblock)
			fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	}
	if (out && (flags & MSG_NOSIGNAL)) {
		sigemptyset(&pipe_set);
		sigaddset(&pipe_set, SIGPIPE);
		pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
		sigpending(&pending);
		sigpipe_pending = sigismember(&pending, SIGPIPE);
		masked = true;
	}
	do {
		struct iovec rest[64];
		size_t skip = done;
		int cnt = 0;

		for (i = 0; i < iovcnt && cnt < 64; i++) {
			if (skip >= iov[i].iov_len) {
				skip -= iov[i].iov_len;
				continue;
			}
			rest[cnt].iov_base = (char *)iov[i].iov_base + skip;
			rest[cnt++].iov_len = iov[i].iov_len - skip;
			skip = 0;
		}
		if (!cnt)
			break;
		n = out ? real.writev(fd, rest, cnt) : real.readv(fd, rest, cnt);
		if (n > 0)
			done += n;
	} while (n > 0 && done < want && !out && (flags & MSG_WAITALL));
	err = errno;
	if (masked) {
		struct timespec zero = { 0 };

		/* Ours, not one that was there before: taken. */
		if (n < 0 && err == EPIPE && !sigpipe_pending)
			sigtimedwait(&pipe_set, NULL, &zero);
		pthread_sigmask(SIG_SETMASK, &old_set, NULL);
	}
	if (nonblock)
		fcntl(fd, F_SETFL, fl);
	if (done)
		return done;
	errno = err;
	return n;
}

/*
 * A read or a write of @iov on the AC file @fd with a socket call's @flags:
 * RDMASHARE_IOC_RECVMSG or SENDMSG, which take them as a socket does
 * (MSG_PEEK, MSG_WAITALL, MSG_DONTWAIT for this call alone, MSG_NOSIGNAL,
 * MSG_MORE; EOPNOTSUPP for MSG_OOB and the like, the rest ignored as TCP
 * ignores them).  A module without them (ENOTTY on
 * an AC file) gets acfile_io_old().
 */
static ssize_t acfile_io(int fd, const struct iovec *iov, size_t iovcnt, int flags, bool out)
{
	struct rdmashare_msg m = {
		.size = sizeof(m), .iov = (uintptr_t)iov, .iovcnt = iovcnt, .msg_flags = flags,
	};
	struct rdmashare_file_info fi = { .size = sizeof(fi) };
	int n;

	/* As sendmsg(2) and recvmsg(2) say it. */
	if (iovcnt > IOV_MAX) {
		errno = EMSGSIZE;
		return -1;
	}
	if (!__atomic_load_n(&msg_old, __ATOMIC_RELAXED)) {
		n = ioctl(fd, out ? RDMASHARE_IOC_SENDMSG : RDMASHARE_IOC_RECVMSG, &m);
		if (n >= 0 || errno != ENOTTY)
			return n;
		/*
		 * Not an AC file after all (its number closed behind the
		 * table's back, by fclose() say, and taken again): the
		 * socket's own call.
		 */
		if (ioctl(fd, RDMASHARE_IOC_FILE_INFO, &fi)) {
			struct msghdr mh = { .msg_iov = (struct iovec *)iov, .msg_iovlen = iovcnt };

			set_kind(fd, RSP_NONE);
			return out ? real.sendmsg(fd, &mh, flags) : real.recvmsg(fd, &mh, flags);
		}
		__atomic_store_n(&msg_old, true, __ATOMIC_RELAXED);
	}
	return acfile_io_old(fd, iov, iovcnt, flags, out);
}

static ssize_t acfile_one(int fd, void *buf, size_t len, int flags, bool out)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return acfile_io(fd, &iov, 1, flags, out);
}

RSP_EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	ssize_t n;

	if (live(fd) == RSP_ACFILE)
		return acfile_one(fd, (void *)buf, len, flags, true);
	n = real.send(fd, buf, len, flags);
	if (n < 0 && is_acfile(fd, errno))
		return acfile_one(fd, (void *)buf, len, flags, true);
	return n;
}

RSP_EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	ssize_t n;

	if (live(fd) == RSP_ACFILE)
		return acfile_one(fd, buf, len, flags, false);
	n = real.recv(fd, buf, len, flags);
	if (n < 0 && is_acfile(fd, errno))
		return acfile_one(fd, buf, len, flags, false);
	return n;
}

RSP_EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags,
			  const struct sockaddr *sa, socklen_t alen)
{
	ssize_t n;

	if (live(fd) == RSP_ACFILE)
		return acfile_one(fd, (void *)buf, len, flags, true);
	n = real.sendto(fd, buf, len, flags, sa, alen);
	if (n < 0 && is_acfile(fd, errno))
		return acfile_one(fd, (void *)buf, len, flags, true);
	return n;
}

RSP_EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags,
			    struct sockaddr *sa, socklen_t *alen)
{
	ssize_t n;

	if (live(fd) != RSP_ACFILE) {
		n = real.recvfrom(fd, buf, len, flags, sa, alen);
		if (n >= 0 || !is_acfile(fd, errno))
			return n;
	}
	/* A connected stream names no sender, as TCP's does not. */
	if (alen)
		*alen = 0;
	return acfile_one(fd, buf, len, flags, false);
}

RSP_EXPORT ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
	ssize_t n;

	if (live(fd) == RSP_ACFILE)
		return acfile_io(fd, m->msg_iov, m->msg_iovlen, flags, true);
	n = real.sendmsg(fd, m, flags);
	if (n < 0 && is_acfile(fd, errno))
		return acfile_io(fd, m->msg_iov, m->msg_iovlen, flags, true);
	return n;
}

RSP_EXPORT ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
	ssize_t n;

	if (live(fd) != RSP_ACFILE) {
		n = real.recvmsg(fd, m, flags);
		if (n >= 0 || !is_acfile(fd, errno))
			return n;
	}
	m->msg_namelen = 0;
	m->msg_controllen = 0;
	m->msg_flags = 0;
	return acfile_io(fd, m->msg_iov, m->msg_iovlen, flags, false);
}

/*
 * glibc's fortified calls (_FORTIFY_SOURCE, with a buffer of known size)
 * reach recv() and read() inside glibc, past the ones above.
 */
extern void __chk_fail(void) __attribute__((noreturn));
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
		       struct sockaddr *sa, socklen_t *alen);
ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);

RSP_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	if (len > buflen)
		__chk_fail();
	return recv(fd, buf, len, flags);
}

RSP_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
				  struct sockaddr *sa, socklen_t *alen)
{
	if (len > buflen)
		__chk_fail();
	return recvfrom(fd, buf, len, flags, sa, alen);
}

/*
 * read(2) and write(2) and their vector forms go to the kernel as they are;
 * on a connecting AC file they first find out what it became, so that one
 * that failed is the TCP socket by then.
 */
RSP_EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	if (kind(fd) == RSP_CONNECTING)
		settle(fd);
	NEED(read);
	return real.read(fd, buf, len);
}

RSP_EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		__chk_fail();
	return read(fd, buf, len);
}

RSP_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	if (kind(fd) == RSP_CONNECTING)
		settle(fd);
	NEED(write);
	return real.write(fd, buf, len);
}

RSP_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	if (kind(fd) == RSP_CONNECTING)
		settle(fd);
	NEED(readv);
	return real.readv(fd, iov, iovcnt);
}

RSP_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	if (kind(fd) == RSP_CONNECTING)
		settle(fd);
	NEED(writev);
	return real.writev(fd, iov, iovcnt);
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

	NEED(poll);
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

	NEED(ppoll);
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

	NEED(poll);
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
	NEED(select);
	return select_either(false, nfds, r, w, x, tv, NULL, NULL);
}

RSP_EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *x, const struct timespec *ts,
		       const sigset_t *mask)
{
	NEED(pselect);
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
	NEED(epoll_pwait);
	return epoll_either(false, epfd, ev, max, timeout, NULL, mask);
}

RSP_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max,
			    const struct timespec *ts, const sigset_t *mask)
{
	NEED(epoll_pwait2);
	if (!real.epoll_pwait2) {
		errno = ENOSYS;
		return -1;
	}
	return epoll_either(true, epfd, ev, max, 0, ts, mask);
}

RSP_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	NEED(epoll_wait);
	if (!__atomic_load_n(&nr_connecting, __ATOMIC_RELAXED))
		return real.epoll_wait(epfd, ev, max, timeout);
	return epoll_pwait(epfd, ev, max, timeout, NULL);
}

/* ---- socket options and names ---- */

static int file_info(int fd, struct rdmashare_file_info *fi, unsigned int flags)
{
	memset(fi, 0, sizeof(*fi));
	fi->size = sizeof(*fi);
	fi->flags = flags;
	return ioctl(fd, RDMASHARE_IOC_FILE_INFO, fi);
}

static int put_int(void *val, socklen_t *len, int v)
{
	if (!val || !len || *len < sizeof(int)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(val, &v, sizeof(v));
	*len = sizeof(v);
	return 0;
}

/* Microseconds as SO_RCVTIMEO's struct timeval. */
static int put_timeval(void *val, socklen_t *len, uint64_t us)
{
	struct timeval tv = { .tv_sec = us / 1000000, .tv_usec = us % 1000000 };

	if (!val || !len || *len < sizeof(tv)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(val, &tv, sizeof(tv));
	*len = sizeof(tv);
	return 0;
}

static int acfile_getsockopt(int fd, int level, int opt, void *val, socklen_t *len)
{
	struct rdmashare_file_info fi;

	if (level == SOL_SOCKET) {
		switch (opt) {
		case SO_ERROR:
			if (file_info(fd, &fi, RDMASHARE_INFO_TAKE_ERROR))
				return -1;
			return put_int(val, len, -fi.error);
		case SO_TYPE:
			return put_int(val, len, SOCK_STREAM);
		case SO_PROTOCOL:
			return put_int(val, len, IPPROTO_TCP);
		case SO_DOMAIN:
			if (file_info(fd, &fi, 0))
				return -1;
			return put_int(val, len, fi.peer.family);
		case SO_ACCEPTCONN:
		case SO_KEEPALIVE:
		case SO_REUSEADDR:
		case SO_REUSEPORT:
		case SO_OOBINLINE:
			return put_int(val, len, opt == SO_OOBINLINE);
		case SO_SNDBUF:
			/* 0 from a module without FILE_SET: what it has. */
			if (file_info(fd, &fi, 0))
				return -1;
			return put_int(val, len, fi.sndbuf ?: 2 * SNDBUF);
		case SO_RCVBUF:
			return put_int(val, len, 2 * SNDBUF);
		case SO_RCVLOWAT:
		case SO_SNDLOWAT:
			return put_int(val, len, 1);
		case SO_RCVTIMEO:
		case SO_SNDTIMEO:
			if (file_info(fd, &fi, 0))
				return -1;
			return put_timeval(val, len, opt == SO_RCVTIMEO ? fi.rcvtimeo_us :
									  fi.sndtimeo_us);
		case SO_LINGER:
			if (!val || !len) {
				errno = EFAULT;
				return -1;
			}
			memset(val, 0, *len);
			return 0;
		}
	} else if (level == IPPROTO_TCP) {
		switch (opt) {
		case TCP_NODELAY:
			return put_int(val, len, 1);
		case TCP_CORK:
			if (file_info(fd, &fi, 0))
				return -1;
			return put_int(val, len, fi.cork);
		case TCP_QUICKACK:
			return put_int(val, len, 0);
		case TCP_MAXSEG:
			return put_int(val, len, 16384);
		case TCP_INFO:
			if (!val || !len) {
				errno = EFAULT;
				return -1;
			}
			/* Nothing TCP's to tell: established, no losses. */
			memset(val, 0, *len);
			if (*len >= 1)
				((unsigned char *)val)[0] = TCP_ESTABLISHED;
			return 0;
		}
	}
	errno = ENOPROTOOPT;
	return -1;
}

RSP_EXPORT int getsockopt(int fd, int level, int opt, void *val, socklen_t *len)
{
	int k = live(fd), ret;

	if (k == RSP_LISTEN)
		return real.getsockopt(rsp(fd)->tcp, level, opt, val, len);
	if (k == RSP_ACFILE)
		return acfile_getsockopt(fd, level, opt, val, len);
	ret = real.getsockopt(fd, level, opt, val, len);
	if (ret < 0 && is_acfile(fd, errno))
		return acfile_getsockopt(fd, level, opt, val, len);
	return ret;
}

/*
 * A struct timeval of SO_RCVTIMEO's or SO_SNDTIMEO's in microseconds, as
 * sock_set_timeout() reads it: 0 is none; a negative one is the shortest
 * there is (TCP's then fails at once).
 */
static int timeval_us(const void *val, socklen_t len, uint64_t *us)
{
	struct timeval tv;

	if (len < sizeof(tv)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(&tv, val, sizeof(tv));
	if (tv.tv_usec < 0 || tv.tv_usec >= 1000000) {
		errno = EDOM;
		return -1;
	}
	if (tv.tv_sec < 0)
		*us = 1;
	else if ((uint64_t)tv.tv_sec > UINT64_MAX / 1000000 - 1)
		*us = UINT64_MAX;	/* for good */
	else
		*us = (uint64_t)tv.tv_sec * 1000000 + tv.tv_usec;
	return 0;
}

/*
 * SO_SNDBUF, TCP_CORK, SO_RCVTIMEO and SO_SNDTIMEO: RDMASHARE_IOC_FILE_SET.
 * SO_SNDBUF as Linux's TCP takes it: twice the value, for its bookkeeping
 * (0 is the least there is, a negative value the most), which getsockopt()
 * reports back; a buffer being changed already (EBUSY) keeps its size,
 * since setsockopt(2) does not fail for a size it cannot have.  A module
 * without FILE_SET (ENOTTY), or without its timeouts (EINVAL), accepts
 * them and changes nothing.
 */
static int acfile_set(int fd, int level, int opt, const void *val, socklen_t len)
{
	struct rdmashare_file_set fs = { .size = sizeof(fs) };
	bool timeo = level == SOL_SOCKET && (opt == SO_RCVTIMEO || opt == SO_SNDTIMEO);
	uint64_t us;
	int v;

	if (!val) {
		errno = EFAULT;
		return -1;
	}
	if (timeo) {
		if (timeval_us(val, len, &us))
			return -1;
		fs.flags = opt == SO_RCVTIMEO ? RDMASHARE_FILE_SET_RCVTIMEO :
						RDMASHARE_FILE_SET_SNDTIMEO;
		fs.rcvtimeo_us = us;
		fs.sndtimeo_us = us;
	} else {
		if (len < sizeof(int)) {
			errno = EINVAL;
			return -1;
		}
		memcpy(&v, val, sizeof(v));
		if (level == SOL_SOCKET) {
			fs.flags = RDMASHARE_FILE_SET_SNDBUF;
			fs.sndbuf = v < 0 || v > INT_MAX / 2 ? UINT_MAX : v ? 2U * v : 1U;
		} else {
			fs.flags = RDMASHARE_FILE_SET_CORK;
			fs.cork = !!v;
		}
	}
	if (ioctl(fd, RDMASHARE_IOC_FILE_SET, &fs) && errno != ENOTTY &&
	    (errno != EBUSY || level != SOL_SOCKET || timeo) && (errno != EINVAL || !timeo))
		return -1;
	return 0;
}

/*
 * The AC file @fd takes the SO_RCVTIMEO and SO_SNDTIMEO of the TCP socket
 * @tcp: the socket it replaces, or the listener that accepted it (whose
 * connections inherit them, as TCP's do).
 */
static void timeo_copy(int tcp, int fd)
{
	static const int opts[] = { SO_RCVTIMEO, SO_SNDTIMEO };
	struct timeval tv;
	socklen_t len;
	unsigned int i;

	for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		len = sizeof(tv);
		if (!real.getsockopt(tcp, SOL_SOCKET, opts[i], &tv, &len) &&
		    (tv.tv_sec || tv.tv_usec))
			acfile_set(fd, SOL_SOCKET, opts[i], &tv, len);
	}
}

/*
 * Options an AC file takes: SO_SNDBUF and TCP_CORK applied (acfile_set()),
 * the others it has no use for accepted, as TCP's would be set.
 */
static int acfile_setsockopt(int fd, int level, int opt, const void *val, socklen_t len)
{
	if ((level == SOL_SOCKET && (opt == SO_SNDBUF || opt == SO_RCVTIMEO ||
				     opt == SO_SNDTIMEO)) ||
	    (level == IPPROTO_TCP && opt == TCP_CORK))
		return acfile_set(fd, level, opt, val, len);
	if ((level == SOL_SOCKET &&
	     (opt == SO_KEEPALIVE || opt == SO_LINGER || opt == SO_RCVBUF ||
	      opt == SO_REUSEADDR || opt == SO_REUSEPORT || opt == SO_RCVLOWAT ||
	      opt == SO_SNDLOWAT || opt == SO_PRIORITY || opt == SO_OOBINLINE)) ||
	    (level == IPPROTO_TCP &&
	     (opt == TCP_NODELAY || opt == TCP_QUICKACK ||
	      opt == TCP_KEEPIDLE || opt == TCP_KEEPINTVL || opt == TCP_KEEPCNT ||
	      opt == TCP_USER_TIMEOUT)) ||
	    (level == IPPROTO_IP && opt == IP_TOS) ||
	    (level == IPPROTO_IPV6 && opt == IPV6_TCLASS))
		return 0;
	errno = ENOPROTOOPT;
	return -1;
}

/*
 * SO_SNDBUF and TCP_CORK given to a socket that may become an AC file (or
 * to a listener, whose accepted connections inherit them, as TCP's do):
 * kept for opts_apply().
 */
static void opts_note(int fd, int level, int opt, const void *val, socklen_t len)
{
	struct rsp_fd *e = rsp(fd);
	int v;

	if (!e || !val || len < sizeof(int))
		return;
	memcpy(&v, val, sizeof(v));
	if (level == SOL_SOCKET && opt == SO_SNDBUF) {
		e->sndbuf = v;
		e->opts |= RSP_OPT_SNDBUF;
	} else if (level == IPPROTO_TCP && opt == TCP_CORK) {
		e->opts = (e->opts & ~RSP_OPT_CORK_ON) | RSP_OPT_CORK | (v ? RSP_OPT_CORK_ON : 0);
	}
}

/* The AC file @fd takes what was given to the socket or listener @from. */
static void opts_apply(int fd, const struct rsp_fd *from)
{
	int on = !!(from->opts & RSP_OPT_CORK_ON);

	if (from->opts & RSP_OPT_SNDBUF)
		acfile_set(fd, SOL_SOCKET, SO_SNDBUF, &from->sndbuf, sizeof(int));
	if (from->opts & RSP_OPT_CORK)
		acfile_set(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof(int));
}

RSP_EXPORT int setsockopt(int fd, int level, int opt, const void *val, socklen_t len)
{
	int k = live(fd), ret;

	if (k == RSP_LISTEN) {
		ret = real.setsockopt(rsp(fd)->tcp, level, opt, val, len);
		if (!ret)
			opts_note(fd, level, opt, val, len);
		return ret;
	}
	if (k == RSP_ACFILE) {
		/* Still connecting: the socket that may take over gets it too. */
		if (kind(fd) == RSP_CONNECTING)
			real.setsockopt(rsp(fd)->tcp, level, opt, val, len);
		return acfile_setsockopt(fd, level, opt, val, len);
	}
	ret = real.setsockopt(fd, level, opt, val, len);
	if (!ret && k == RSP_CAND)
		opts_note(fd, level, opt, val, len);
	if (ret < 0 && is_acfile(fd, errno))
		return acfile_setsockopt(fd, level, opt, val, len);
	return ret;
}

/* @a as a sockaddr; an IPv4 one v4-mapped if @v6 (for an AF_INET6 socket). */
static int put_addr(const struct rdmashare_addr *a, struct sockaddr *sa, socklen_t *len,
		    bool v6)
{
	struct sockaddr_in6 *s6;
	struct sockaddr_storage ss;
	socklen_t n;

	memset(&ss, 0, sizeof(ss));
	ss.ss_family = a->family;
	if (a->family == AF_INET && v6) {
		s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(a->port);
		s6->sin6_addr.s6_addr[10] = 0xff;
		s6->sin6_addr.s6_addr[11] = 0xff;
		memcpy(&s6->sin6_addr.s6_addr[12], a->addr, 4);
		n = sizeof(struct sockaddr_in6);
	} else if (a->family == AF_INET) {
		((struct sockaddr_in *)&ss)->sin_port = htons(a->port);
		memcpy(&((struct sockaddr_in *)&ss)->sin_addr, a->addr, 4);
		n = sizeof(struct sockaddr_in);
	} else {
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(a->port);
		memcpy(&((struct sockaddr_in6 *)&ss)->sin6_addr, a->addr, 16);
		n = sizeof(struct sockaddr_in6);
	}
	memcpy(sa, &ss, n < *len ? n : *len);
	*len = n;
	return 0;
}

static int acfile_name(int fd, struct sockaddr *sa, socklen_t *len, bool peer)
{
	struct rdmashare_file_info fi;

	if (file_info(fd, &fi, 0))
		return -1;
	/*
	 * The peer's name as TCP gives it: while connected, and still once
	 * the peer closed its end (CLOSE_WAIT); not while connecting, nor
	 * after a reset or a failed connect (an error).
	 */
	if (peer && fi.state != RDMASHARE_AC_STATE_OPEN &&
	    (fi.state != RDMASHARE_AC_STATE_CLOSED || fi.error)) {
		errno = ENOTCONN;
		return -1;
	}
	return put_addr(peer ? &fi.peer : &fi.local, sa, len, rsp(fd) && rsp(fd)->v6);
}

RSP_EXPORT int getsockname(int fd, struct sockaddr *sa, socklen_t *len)
{
	int k = live(fd), ret;

	if (k == RSP_LISTEN)
		return real.getsockname(rsp(fd)->tcp, sa, len);
	if (k == RSP_ACFILE)
		return acfile_name(fd, sa, len, false);
	ret = real.getsockname(fd, sa, len);
	if (ret < 0 && is_acfile(fd, errno))
		return acfile_name(fd, sa, len, false);
	return ret;
}

RSP_EXPORT int getpeername(int fd, struct sockaddr *sa, socklen_t *len)
{
	int k = live(fd), ret;

	if (k == RSP_LISTEN)
		return real.getpeername(rsp(fd)->tcp, sa, len);
	if (k == RSP_ACFILE)
		return acfile_name(fd, sa, len, true);
	ret = real.getpeername(fd, sa, len);
	if (ret < 0 && is_acfile(fd, errno))
		return acfile_name(fd, sa, len, true);
	return ret;
}

/*
 * SHUT_RD and SHUT_RDWR shut reading too (RDMASHARE_SHUTDOWN_RD): what came
 * and comes is dropped, reads return 0.  An older module takes SHUT_WR
 * alone (EINVAL for the flags): reading is then not shut, and what comes
 * is read or dropped at close.
 */
static int acfile_shutdown(int fd, int how)
{
	struct rdmashare_shutdown sh = { .size = sizeof(sh) };
	int flags = rs_shut_flags(how), ret;

	if (flags < 0) {
		errno = -flags;
		return -1;
	}
	sh.flags = flags;
	ret = ioctl(fd, RDMASHARE_IOC_SHUTDOWN, &sh);
	if (!ret || !sh.flags || errno != EINVAL)
		return ret;
	if (how == SHUT_RD)
		return 0;
	sh.flags = 0;
	return ioctl(fd, RDMASHARE_IOC_SHUTDOWN, &sh);
}

RSP_EXPORT int shutdown(int fd, int how)
{
	int k = live(fd), ret;

	if (k == RSP_LISTEN)
		return real.shutdown(rsp(fd)->tcp, how);
	if (k == RSP_ACFILE)
		return acfile_shutdown(fd, how);
	ret = real.shutdown(fd, how);
	if (ret < 0 && is_acfile(fd, errno))
		return acfile_shutdown(fd, how);
	return ret;
}

/* ---- start ---- */

__attribute__((constructor)) static void rsp_init(void)
{
	struct rlimit rl;
	const char *progs;

	RESOLVE(socket);
	RESOLVE(connect);
	RESOLVE(listen);
	RESOLVE(accept);
	RESOLVE(accept4);
	RESOLVE(close);
	RESOLVE(dup2);
	RESOLVE(dup3);
	RESOLVE(shutdown);
	RESOLVE(getsockopt);
	RESOLVE(setsockopt);
	RESOLVE(getsockname);
	RESOLVE(getpeername);
	RESOLVE(send);
	RESOLVE(recv);
	RESOLVE(sendto);
	RESOLVE(recvfrom);
	RESOLVE(sendmsg);
	RESOLVE(recvmsg);
	RESOLVE(read);
	RESOLVE(write);
	RESOLVE(readv);
	RESOLVE(writev);
	RESOLVE(epoll_ctl);
	RESOLVE(poll);
	RESOLVE(ppoll);
	RESOLVE(select);
	RESOLVE(pselect);
	RESOLVE(epoll_wait);
	RESOLVE(epoll_pwait);
	RESOLVE(epoll_pwait2);

	debug = getenv("RDMASHARE_DEBUG") && *getenv("RDMASHARE_DEBUG") == '1';
	nr_fds = getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_max > (1 << 20) ? 1 << 16 :
		 (int)rl.rlim_max;
	fds = calloc(nr_fds, sizeof(*fds));
	if (!fds) {
		nr_fds = 0;
		return;
	}
	parse_ports(conf("RDMASHARE_PORTS"));
	parse_nets(conf("RDMASHARE_NETS"));
	progs = conf("RDMASHARE_PROGRAMS");
	enabled = !progs || program_selected(progs);
	say("%s for %s", enabled ? "on" : "off", program_invocation_short_name);
}

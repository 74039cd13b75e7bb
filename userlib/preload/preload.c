// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * librdmashare-preload.so: unmodified programs' TCP over rdmashare.
 *
 * Loaded with LD_PRELOAD (rdmashare-run(8) does that), it takes the
 * AF_INET and AF_INET6 SOCK_STREAM sockets that the policy selects over
 * to rdmashare, and leaves every other descriptor alone.  The descriptor
 * the program holds is the kernel's own file throughout, so that poll,
 * select, epoll, fork, dup and exec need nothing from here but the table of
 * what each number is (a listener's copy gets hidden halves of its own):
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
 *   became an AC file, or on its listener, pass on to it.  fstat() says
 *   that an AC file, also one that came from another process
 *   (SCM_RIGHTS), and a listener are sockets, as libuv (Node.js's
 *   cluster) and systemd's sd_is_socket() ask.
 *
 * Policy, from the environment (or /etc/rdmashare/preload.conf, KEY=VALUE
 * lines, which the environment overrides): RDMASHARE_PORTS (ports and
 * ranges, "5201,6379,7000-7100"), RDMASHARE_NETS (CIDRs, "10.0.0.0/8"),
 * RDMASHARE_PROGRAMS (program names); each unset means all.
 * RDMASHARE_CLIENT_PORTS=0 gives connections no port of their own.
 * RDMASHARE_DEBUG=1 tells on stderr what was decided.
 *
 * What cannot work: statically linked programs, system calls made without
 * libc (raw syscall(), io_uring), setuid programs (the loader drops
 * LD_PRELOAD), and a listening socket inherited across exec(2) (its
 * rdmashare half is gone with the preload's state).
 */

#include "preload.h"

struct rsp_real real;
struct rsp_fd *fds;
int nr_fds;
static bool enabled, debug;
bool client_ports = true;
static struct rsp_rule ports[MAX_RULES], nets[MAX_RULES];
static int nr_ports, nr_nets;
pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct rsp_neg neg[NEG_SLOTS];

void say(const char *fmt, ...)
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

/* Descriptors in RSP_CONNECTING: poll() and its kin look at them. */
int nr_connecting;

void set_kind(int fd, int k)
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

unsigned int port_of(const struct sockaddr *sa)
{
	return ntohs(sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_port :
						((const struct sockaddr_in6 *)sa)->sin6_port);
}

const unsigned char *addr_of(const struct sockaddr *sa)
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
bool selected(const struct sockaddr *sa, bool any_addr)
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

bool neg_cached(const struct sockaddr *sa)
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

void neg_add(const struct sockaddr *sa, socklen_t len)
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

/* ---- descriptors ---- */

RSP_EXPORT int socket(int domain, int type, int protocol)
{
	int fd;

	ready();
	fd = real.socket(domain, type, protocol);
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
	ready();
	forget(fd);
	return real.close(fd);
}

/*
 * A copy of @fd, close-on-exec, for the preload's own use: at a number a
 * program is not likely to ask for (half the file limit, 64 to 4096), but
 * one the table has an entry for (a program may have raised its limit past
 * the table's size, as redis-server does), the lowest free one if none
 * there is.  -1 and errno.
 */
int hide_fd(int fd)
{
	long low = 64, max = __atomic_load_n(&nr_fds, __ATOMIC_ACQUIRE);
	struct rlimit rl;
	int n;

	if (!getrlimit(RLIMIT_NOFILE, &rl))
		low = rl.rlim_cur / 2 < 64 ? 64 : rl.rlim_cur / 2 > 4096 ? 4096 :
		      (long)rl.rlim_cur / 2;
	if (low > max / 2)
		low = max / 2;
	n = real.fcntl(fd, F_DUPFD_CLOEXEC, low);
	if (n >= 0 && !rsp(n)) {
		real.close(n);
		n = real.fcntl(fd, F_DUPFD_CLOEXEC, 0);
	}
	if (n >= 0 && !rsp(n)) {
		real.close(n);
		errno = EMFILE;
		return -1;
	}
	return n;
}

/*
 * Copies of a descriptor (dup(), dup2(), dup3(), F_DUPFD): the table says
 * what the copy is.  A listener's copy gets hidden halves of its own, so
 * that each number accepts, and closes, on its own: the epoll instance
 * that both numbers are watches the halves' files, which either number's
 * halves keep open.  Made before the copy where the copy replaces a
 * number (dup2(), dup3()), after it where it takes a free one; if they
 * cannot be, the call fails with EMFILE and the program's numbers are as
 * they were.
 */
static int halves_dup(int old, int *tcp, int *lfile)
{
	struct rsp_fd *e = rsp(old);
	int err;

	*lfile = -1;
	*tcp = hide_fd(e->tcp);
	if (*tcp >= 0)
		*lfile = hide_fd(e->lfile);
	if (*lfile >= 0)
		return 0;
	err = errno;
	if (*tcp >= 0)
		real.close(*tcp);
	errno = err;
	return -1;
}

/*
 * @new is @old's copy now, with the halves @tcp and @lfile if a listener's
 * (-1 if not).  What @new was goes from the table, and with it a
 * listener's halves if @new was open: a number that was free may have an
 * entry left by a raw close(), whose halves' numbers are not its own now.
 */
static void copied(int old, int new, bool was_open, int tcp, int lfile)
{
	struct rsp_fd *o = rsp(old), *n = rsp(new);

	if (was_open) {
		forget(new);
	} else {
		set_kind(new, RSP_NONE);
		more_drop(new);
	}
	if (!n)
		return;
	if (o) {
		n->v6 = o->v6;
		n->opts = o->opts;
		n->sndbuf = o->sndbuf;
	}
	if (tcp >= 0) {
		n->tcp = tcp;
		n->lfile = lfile;
		n->turn = o->turn;
		set_kind(new, RSP_LISTEN);
	} else {
		/* A copy of a connecting one does not go back to TCP. */
		set_kind(new, kind(old) == RSP_CONNECTING ? RSP_ACFILE : kind(old));
	}
}

/* @new, a free number that @old's copy took (or -1): its table entry. */
static int copied_free(int old, int new)
{
	int tcp = -1, lfile = -1;

	if (new >= 0 && kind(old) == RSP_LISTEN &&
	    (!rsp(new) || halves_dup(old, &tcp, &lfile))) {
		real.close(new);
		errno = EMFILE;
		return -1;
	}
	if (new >= 0)
		copied(old, new, false, tcp, lfile);
	return new;
}

RSP_EXPORT int dup(int old)
{
	ready();
	return copied_free(old, real.dup(old));
}

/* dup2() with @flags -1, dup3() with others. */
static int dup_to(int old, int new, int flags)
{
	int tcp = -1, lfile = -1, ret;
	bool was_open;

	if (kind(old) == RSP_LISTEN) {
		if (!rsp(new)) {
			errno = EMFILE;
			return -1;
		}
		if (halves_dup(old, &tcp, &lfile))
			return -1;
	}
	was_open = real.fcntl(new, F_GETFD) >= 0;
	ret = flags < 0 ? real.dup2(old, new) : real.dup3(old, new, flags);
	if (ret < 0 && tcp >= 0) {
		flags = errno;
		real.close(tcp);
		real.close(lfile);
		errno = flags;
	}
	if (ret >= 0)
		copied(old, new, was_open, tcp, lfile);
	return ret;
}

RSP_EXPORT int dup2(int old, int new)
{
	ready();
	if (old == new)
		return real.dup2(old, new);
	return dup_to(old, new, -1);
}

RSP_EXPORT int dup3(int old, int new, int flags)
{
	ready();
	if (old == new || flags < 0)
		return real.dup3(old, new, flags);
	return dup_to(old, new, flags);
}

/* fcntl() and fcntl64(), by @fn: F_DUPFD and F_DUPFD_CLOEXEC make copies. */
static int fcntl_with(int (*fn)(int, int, ...), int fd, int cmd, void *arg)
{
	if (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC)
		return fn(fd, cmd, arg);
	return copied_free(fd, fn(fd, cmd, arg));
}

/* The argument is an int or a pointer, by @cmd: glibc takes it as a pointer too. */
RSP_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	ready();
	return fcntl_with(real.fcntl, fd, cmd, arg);
}

RSP_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	ready();
	return fcntl_with(real.fcntl64 ?: real.fcntl, fd, cmd, arg);
}

/*
 * Whether @fd is an AC file: known, or found so when the kernel refused a
 * socket call on it (one inherited across exec, or dup'ed elsewhere).
 */
bool is_acfile(int fd, int err)
{
	struct rdmashare_file_info fi = { .size = sizeof(fi) };

	if (kind(fd) == RSP_ACFILE || kind(fd) == RSP_CONNECTING)
		return true;
	if (err != ENOTSOCK || ioctl(fd, RDMASHARE_IOC_FILE_INFO, &fi))
		return false;
	set_kind(fd, RSP_ACFILE);
	return true;
}

/* ---- start ---- */

bool rsp_resolved;
static __thread bool resolving;

/* Threads that race here store the same pointers. */
#define RESOLVE(name) \
	__atomic_store_n(&real.name, (__typeof__(real.name))dlsym(RTLD_NEXT, #name), \
			 __ATOMIC_RELAXED)

static void resolve_all(void)
{
	RESOLVE(socket);
	RESOLVE(connect);
	RESOLVE(listen);
	RESOLVE(accept);
	RESOLVE(accept4);
	RESOLVE(close);
	RESOLVE(dup);
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
	RESOLVE(fstat);
	RESOLVE(fstat64);
	RESOLVE(fcntl);
	RESOLVE(fcntl64);
	__atomic_store_n(&rsp_resolved, true, __ATOMIC_RELEASE);
}

/*
 * The real functions (ready()).  Not under a lock or pthread_once(): a call
 * that dlsym() made back into the preload on this thread would wait for
 * itself; it finds what is resolved so far instead.
 */
void rsp_resolve(void)
{
	if (resolving)
		return;
	resolving = true;
	resolve_all();
	resolving = false;
}

__attribute__((constructor)) static void rsp_init(void)
{
	struct rsp_fd *table;
	struct rlimit rl;
	const char *progs;
	int n;

	ready();

	debug = getenv("RDMASHARE_DEBUG") && *getenv("RDMASHARE_DEBUG") == '1';
	/*
	 * An entry for every number the program may have: root may raise its
	 * limit past the one it started with (redis-server does), so never
	 * fewer than 65536.  Pages nobody touched cost nothing.
	 */
	n = getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_max < (1 << 16) ? 1 << 16 :
	    rl.rlim_max > (1 << 20) ? 1 << 20 : (int)rl.rlim_max;
	table = calloc(n, sizeof(*table));
	if (!table)
		return;
	/* The table first: a call in between (another thread) finds none. */
	fds = table;
	__atomic_store_n(&nr_fds, n, __ATOMIC_RELEASE);
	parse_ports(conf("RDMASHARE_PORTS"));
	parse_nets(conf("RDMASHARE_NETS"));
	progs = conf("RDMASHARE_CLIENT_PORTS");
	client_ports = !progs || strcmp(progs, "0");
	progs = conf("RDMASHARE_PROGRAMS");
	enabled = !progs || program_selected(progs);
	say("%s for %s", enabled ? "on" : "off", program_invocation_short_name);
}

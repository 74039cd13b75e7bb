// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * librdmashare-preload.so: socket options, names and shutdown of AC files.
 */
#include "preload.h"

/* ---- socket options and names ---- */

int file_info(int fd, struct rdmashare_file_info *fi, unsigned int flags)
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
	int k, ret;

	ready();
	k = live(fd);
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
void timeo_copy(int tcp, int fd)
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
void opts_apply(int fd, const struct rsp_fd *from)
{
	int on = !!(from->opts & RSP_OPT_CORK_ON);

	if (from->opts & RSP_OPT_SNDBUF)
		acfile_set(fd, SOL_SOCKET, SO_SNDBUF, &from->sndbuf, sizeof(int));
	if (from->opts & RSP_OPT_CORK)
		acfile_set(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof(int));
}

RSP_EXPORT int setsockopt(int fd, int level, int opt, const void *val, socklen_t len)
{
	int k, ret;

	ready();
	k = live(fd);
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
int put_addr(const struct rdmashare_addr *a, struct sockaddr *sa, socklen_t *len, bool v6)
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

/* getsockname() (@peer false) or getpeername() of @fd. */
static int sock_name(int fd, struct sockaddr *sa, socklen_t *len, bool peer)
{
	int (*name)(int, struct sockaddr *, socklen_t *) =
		peer ? real.getpeername : real.getsockname;
	int k = live(fd), ret;

	if (k == RSP_LISTEN)
		return name(rsp(fd)->tcp, sa, len);
	if (k == RSP_ACFILE)
		return acfile_name(fd, sa, len, peer);
	ret = name(fd, sa, len);
	if (ret < 0 && is_acfile(fd, errno))
		return acfile_name(fd, sa, len, peer);
	return ret;
}

RSP_EXPORT int getsockname(int fd, struct sockaddr *sa, socklen_t *len)
{
	ready();
	return sock_name(fd, sa, len, false);
}

RSP_EXPORT int getpeername(int fd, struct sockaddr *sa, socklen_t *len)
{
	ready();
	return sock_name(fd, sa, len, true);
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
	int k, ret;

	ready();
	k = live(fd);
	if (k == RSP_LISTEN)
		return real.shutdown(rsp(fd)->tcp, how);
	if (k == RSP_ACFILE)
		return acfile_shutdown(fd, how);
	ret = real.shutdown(fd, how);
	if (ret < 0 && is_acfile(fd, errno))
		return acfile_shutdown(fd, how);
	return ret;
}

/*
 * fstat(): an AC file, and the epoll instance that a listener is, are
 * anonymous inodes (no file type); a program asking whether a descriptor
 * is a socket (libuv's uv_guess_handle() for a connection that Node.js's
 * cluster passed to a worker, systemd's sd_is_socket()) learns that they
 * are.  Only descriptors without a type are looked at: an AC file that
 * came from elsewhere (SCM_RIGHTS, exec) is found by its FILE_INFO.
 */
static void as_socket(int fd, int ret, mode_t *mode)
{
	struct rdmashare_file_info fi = { .size = sizeof(fi) };
	int err = errno;

	if (ret || (*mode & S_IFMT))
		return;
	/*
	 * Asked each time: a number closed behind the preload's back (a raw
	 * close system call) may be an eventfd now.
	 */
	if (kind(fd) == RSP_LISTEN || !ioctl(fd, RDMASHARE_IOC_FILE_INFO, &fi))
		*mode = S_IFSOCK | 0777;
	errno = err;
}

RSP_EXPORT int fstat(int fd, struct stat *st)
{
	int ret;

	ready();
	/* glibc before 2.33 has none to find: the system call itself. */
	ret = real.fstat ? real.fstat(fd, st) : syscall(SYS_fstat, fd, st);
	as_socket(fd, ret, &st->st_mode);
	return ret;
}

RSP_EXPORT int fstat64(int fd, struct stat64 *st)
{
	int ret;

	ready();
	ret = real.fstat64 ? real.fstat64(fd, st) : syscall(SYS_fstat, fd, st);
	as_socket(fd, ret, &st->st_mode);
	return ret;
}

#if defined(__x86_64__)
/*
 * What binaries built against glibc before 2.33 call for fstat() (Node.js
 * from NodeSource does); on x86-64 their version 1 (_STAT_VER_LINUX) and
 * 0 are struct stat itself.
 */
RSP_EXPORT int __fxstat(int ver, int fd, struct stat *st);
RSP_EXPORT int __fxstat64(int ver, int fd, struct stat64 *st);

static int fxstat_ver(int ver)
{
	if (ver == 0 || ver == 1)
		return 0;
	errno = EINVAL;
	return -1;
}

RSP_EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
	return fxstat_ver(ver) ?: fstat(fd, st);
}

RSP_EXPORT int __fxstat64(int ver, int fd, struct stat64 *st)
{
	return fxstat_ver(ver) ?: fstat64(fd, st);
}
#endif

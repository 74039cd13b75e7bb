/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * librdmashare-preload.so: what its files share (preload.c has the overview).
 *
 * preload.c: the table of descriptors, the policy, socket(), close(), dup*(),
 *   the start.
 * connect.c: connect(), blocking and not; settle() of a connecting one.
 * listen.c: listen() and accept() over a TCP listener and a listening file.
 * epoll.c: a number changing file with its epoll registrations; poll(),
 *   select() and epoll_wait() while a connect is under way.
 * data.c: send, recv and their kin on AC files; read and write.
 * sockopt.c: getsockopt, setsockopt, getsockname, getpeername, shutdown,
 *   fstat.
 */
#ifndef RSP_PRELOAD_H
#define RSP_PRELOAD_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

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
#include <sys/stat.h>
#include <sys/syscall.h>
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

struct rsp_real {
	int (*socket)(int, int, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*accept)(int, struct sockaddr *, socklen_t *);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*close)(int);
	int (*dup)(int);
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
	int (*fstat)(int, struct stat *);
	int (*fstat64)(int, struct stat64 *);
	int (*fcntl)(int, int, ...);
	int (*fcntl64)(int, int, ...);
};

extern struct rsp_real real;

extern bool rsp_resolved;
void rsp_resolve(void);

/*
 * The first thing every function the preload exports does: libc's calls it
 * stands in for may be made before rsp_init() runs, by the constructor of
 * a library the program links (libraries are initialized before those
 * preloaded; PostgreSQL's libcap-ng closes a file in its own), and must
 * find the real ones.  Until rsp_init() has run, no descriptor is the
 * preload's, and every call passes straight on.
 */
static inline void ready(void)
{
	if (__builtin_expect(!__atomic_load_n(&rsp_resolved, __ATOMIC_ACQUIRE), 0))
		rsp_resolve();
}

/* preload.c's */
extern struct rsp_fd *fds;
extern int nr_fds;
extern pthread_mutex_t lock;
/* Descriptors in RSP_CONNECTING: poll() and its kin look at them. */
extern int nr_connecting;

static inline struct rsp_fd *rsp(int fd)
{
	return fd >= 0 && fd < __atomic_load_n(&nr_fds, __ATOMIC_ACQUIRE) ? &fds[fd] : NULL;
}

static inline int kind(int fd)
{
	struct rsp_fd *e = rsp(fd);

	return e ? __atomic_load_n(&e->kind, __ATOMIC_ACQUIRE) : RSP_NONE;
}

/* connect.c */
int live(int fd);
int settle(int fd);

/* epoll.c */
void more_drop(int fd);
struct rsp_more *more_get(struct rsp_fd *e, int room);
int swap_file(int fd, int nfd, int flags);

/* preload.c */
extern bool client_ports;
const unsigned char *addr_of(const struct sockaddr *sa);
bool is_acfile(int fd, int err);
int hide_fd(int fd);
void neg_add(const struct sockaddr *sa, socklen_t len);
bool neg_cached(const struct sockaddr *sa);
unsigned int port_of(const struct sockaddr *sa);
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool selected(const struct sockaddr *sa, bool any_addr);
void set_kind(int fd, int k);

/* sockopt.c */
int file_info(int fd, struct rdmashare_file_info *fi, unsigned int flags);
void opts_apply(int fd, const struct rsp_fd *from);
int put_addr(const struct rdmashare_addr *a, struct sockaddr *sa, socklen_t *len, bool v6);
void timeo_copy(int tcp, int fd);

#endif

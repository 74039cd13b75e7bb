// SPDX-License-Identifier: GPL-2.0
/*
 * A library's constructor that makes the socket and file calls the preload
 * stands in for, before the preload's own constructor has run (a linked
 * library is initialized before a preloaded one; PostgreSQL's libcap-ng
 * closes a file in its constructor).  Built twice: with RS_EARLY_LIB as
 * librs_early.so, and without as rs_early, which links it and reports
 * what the constructor found.  rdmashare_preload_test runs rs_early under
 * rdmashare-run: it must exit 0, not crash; without the preload it says
 * so and fails.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* Whether @fn resolves into rdmashare's preload (the calls go through it). */
static int preloaded(const char *fn)
{
	Dl_info info;

	return dladdr(dlsym(RTLD_DEFAULT, fn), &info) && info.dli_fname &&
	       strstr(info.dli_fname, "rdmashare-preload");
}

#ifdef RS_EARLY_LIB

/* glibc's, which its headers declare only with _FORTIFY_SOURCE. */
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
		       struct sockaddr *sa, socklen_t *alen);
ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);

const char *rs_early_failed = "constructor did not run";
int rs_early_errno;

#define CHECK(call) do {				\
	if ((call) < 0) {				\
		rs_early_errno = errno;			\
		rs_early_failed = #call;		\
		return;					\
	}						\
} while (0)

/* A TCP pair over loopback, then every call on it and on a pipe. */
__attribute__((constructor)) static void early(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct epoll_event ev = { .events = EPOLLIN };
	socklen_t len = sizeof(sin);
	struct timespec ts = { 0, 0 };
	struct timeval tv = { 0, 0 };
	struct msghdr m = {};
	char buf[8] = "early";
	struct iovec iov = { buf, sizeof(buf) };
	int l, c, a, ep, p[2], on = 1, fd;
	struct stat64 st64;
	struct pollfd pfd;
	struct stat st;
	fd_set set;

	if (!preloaded("socket")) {
		rs_early_failed = "the preload (not loaded)";
		return;
	}
	CHECK(l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
	CHECK(setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)));
	CHECK(bind(l, (struct sockaddr *)&sin, sizeof(sin)));
	CHECK(listen(l, 4));
	CHECK(getsockname(l, (struct sockaddr *)&sin, &len));
	CHECK(c = socket(AF_INET, SOCK_STREAM, 0));
	CHECK(connect(c, (struct sockaddr *)&sin, sizeof(sin)));
	/*
	 * The listener may take the handshake's last ACK after connect()
	 * returned (a softirq deferred to ksoftirqd): wait for it.
	 */
	pfd = (struct pollfd){ .fd = l, .events = POLLIN };
	CHECK(poll(&pfd, 1, 10000) == 1 ? 0 : -1);
	CHECK(a = accept4(l, NULL, NULL, SOCK_CLOEXEC));
	CHECK(getpeername(a, (struct sockaddr *)&sin, &len));
	CHECK(fstat(a, &st));
	CHECK(fstat64(l, &st64));
	len = sizeof(on);
	CHECK(getsockopt(a, SOL_SOCKET, SO_ERROR, &on, &len));
	CHECK(send(c, buf, sizeof(buf), 0));
	CHECK(recv(a, buf, sizeof(buf), 0));
	CHECK(send(c, buf, sizeof(buf), 0));
	CHECK(__recv_chk(a, buf, sizeof(buf), sizeof(buf), 0));
	CHECK(sendto(c, buf, sizeof(buf), 0, NULL, 0));
	CHECK(recvfrom(a, buf, sizeof(buf), 0, NULL, NULL));
	CHECK(sendto(c, buf, sizeof(buf), 0, NULL, 0));
	CHECK(__recvfrom_chk(a, buf, sizeof(buf), sizeof(buf), 0, NULL, NULL));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	CHECK(sendmsg(c, &m, 0));
	CHECK(recvmsg(a, &m, 0));
	CHECK(write(c, buf, sizeof(buf)));
	CHECK(writev(c, &iov, 1));
	pfd = (struct pollfd){ .fd = a, .events = POLLIN };
	CHECK(poll(&pfd, 1, 1000));
	CHECK(ppoll(&pfd, 1, &ts, NULL));
	FD_ZERO(&set);
	FD_SET(a, &set);
	CHECK(select(a + 1, &set, NULL, NULL, &tv));
	CHECK(pselect(a + 1, &set, NULL, NULL, &ts, NULL));
	CHECK(ep = epoll_create1(0));
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev));
	CHECK(epoll_wait(ep, &ev, 1, 1000));
	CHECK(epoll_pwait(ep, &ev, 1, 0, NULL));
	CHECK(epoll_pwait2(ep, &ev, 1, &ts, NULL));
	CHECK(read(a, buf, sizeof(buf)));
	CHECK(readv(a, &iov, 1));
	CHECK(write(c, buf, sizeof(buf)));
	CHECK(__read_chk(a, buf, sizeof(buf), sizeof(buf)));
	CHECK(pipe(p));
	CHECK(fd = dup(p[0]));
	CHECK(dup2(p[1], fd));
	CHECK(dup3(p[0], fd, O_CLOEXEC));
	CHECK(close(fd));
	CHECK(fd = fcntl(p[0], F_DUPFD_CLOEXEC, 0));
	CHECK(close(fd));
	CHECK(fd = fcntl64(p[1], F_DUPFD, 0));
	CHECK(shutdown(c, SHUT_RDWR));
	/* Nothing waits now: EAGAIN. */
	CHECK(accept(l, NULL, NULL) < 0 && errno == EAGAIN ? 0 : -1);
	CHECK(close(fd));
	CHECK(close(p[0]));
	CHECK(close(p[1]));
	CHECK(close(ep));
	CHECK(close(a));
	CHECK(close(c));
	CHECK(close(l));
	rs_early_failed = NULL;
}

#else

extern const char *rs_early_failed;
extern int rs_early_errno;

int main(void)
{
	if (!preloaded("close")) {
		fprintf(stderr, "rs_early: not under rdmashare's preload\n");
		return 1;
	}
	if (rs_early_failed) {
		fprintf(stderr, "rs_early: %s failed: %s\n", rs_early_failed,
			strerror(rs_early_errno));
		return 1;
	}
	return 0;
}

#endif

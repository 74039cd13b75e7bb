// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * librdmashare-preload.so: send, recv and their kin on AC files; read and write.
 */
#include "preload.h"

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

	ready();
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

	ready();
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

	ready();
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

	ready();
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

	ready();
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

	ready();
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
	ready();
	if (len > buflen)
		__chk_fail();
	return recv(fd, buf, len, flags);
}

RSP_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
				  struct sockaddr *sa, socklen_t *alen)
{
	ready();
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
	ready();
	if (kind(fd) == RSP_CONNECTING)
		settle(fd);
	return real.read(fd, buf, len);
}

RSP_EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	ready();
	if (len > buflen)
		__chk_fail();
	return read(fd, buf, len);
}

RSP_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	ready();
	if (kind(fd) == RSP_CONNECTING)
		settle(fd);
	return real.write(fd, buf, len);
}

RSP_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	ready();
	if (kind(fd) == RSP_CONNECTING)
		settle(fd);
	return real.readv(fd, iov, iovcnt);
}

RSP_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	ready();
	if (kind(fd) == RSP_CONNECTING)
		settle(fd);
	return real.writev(fd, iov, iovcnt);
}

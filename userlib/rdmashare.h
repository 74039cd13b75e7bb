/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * librdmashare: user-space library for /dev/rdmashare.
 *
 * Functions return 0 (or a non-negative value) on success and a negative
 * errno on failure, like liburing; errno itself is left alone.
 */
#ifndef LIBRDMASHARE_H
#define LIBRDMASHARE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <linux/rdmashare.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Path of the rdmashare character device. */
#define RDMASHARE_DEV_PATH "/dev/rdmashare"

/** struct rdmashare - an open /dev/rdmashare file (opaque). */
struct rdmashare;

/**
 * rdmashare_open() - open /dev/rdmashare
 * @out: receives the new handle on success
 * @flags: must be 0
 *
 * The file is opened close-on-exec.
 *
 * Return: 0, or -EINVAL for unknown flags, -ENOMEM, or the errno of open(2)
 * (-ENOENT when the module is not loaded).
 */
int rdmashare_open(struct rdmashare **out, unsigned int flags);

/**
 * rdmashare_close() - close the file and free the handle
 * @rs: handle from rdmashare_open(); NULL is ignored
 */
void rdmashare_close(struct rdmashare *rs);

/**
 * rdmashare_fd() - the file descriptor behind a handle
 * @rs: handle from rdmashare_open()
 *
 * Return: the descriptor, for poll(2) and friends; still owned by @rs.
 */
int rdmashare_fd(const struct rdmashare *rs);

/**
 * rdmashare_query() - ask the module for its ABI version and devices
 * @rs: handle from rdmashare_open()
 * @q: filled in on success
 *
 * Return: 0, or the negative errno of RDMASHARE_IOC_QUERY.
 */
int rdmashare_query(struct rdmashare *rs, struct rdmashare_query *q);

/**
 * rdmashare_setup() - create and map the rings and the data area
 * @rs: handle from rdmashare_open()
 * @p: in: sizes wanted (zeroed struct for the defaults), may be NULL;
 *     out: what the kernel set up.  @p->size is filled in by the library.
 *
 * A handle's rings are for one thread at a time, like liburing's; threads
 * that want to submit concurrently each open their own handle.
 *
 * Return: 0, or the negative errno of RDMASHARE_IOC_SETUP or mmap(2).
 */
int rdmashare_setup(struct rdmashare *rs, struct rdmashare_setup *p);

/**
 * rdmashare_data() - the data area
 * @rs: a set-up handle
 * @size: receives the area's size; may be NULL
 *
 * Return: the start of the mapping (offset 0 of every SQE's addr).
 */
void *rdmashare_data(struct rdmashare *rs, size_t *size);

/**
 * rdmashare_get_sqe() - the next free submission entry, zeroed
 * @rs: a set-up handle
 *
 * Return: the entry to fill in, or NULL when the SQ is full (submit first).
 */
struct rdmashare_sqe *rdmashare_get_sqe(struct rdmashare *rs);

/**
 * rdmashare_submit() - hand the entries filled in so far to the kernel
 * @rs: a set-up handle
 *
 * Return: how many entries the kernel took (fewer than filled in when the
 * CQ has no room for their completions: reap and submit again), or a
 * negative errno.
 */
int rdmashare_submit(struct rdmashare *rs);

/**
 * rdmashare_submit_and_wait() - submit, then wait for completions
 * @rs: a set-up handle
 * @wait_nr: completions to wait for
 * @timeout_ms: give up after this long (0: no limit)
 *
 * Return: as rdmashare_submit(); -ETIME or -EINTR when the wait ended
 * early and nothing was submitted.
 */
int rdmashare_submit_and_wait(struct rdmashare *rs, unsigned int wait_nr,
			      unsigned int timeout_ms);

/**
 * rdmashare_peek_cqe() - the oldest unreaped completion, without waiting
 * @rs: a set-up handle
 * @cqe: receives a pointer into the CQ, valid until rdmashare_cqe_seen()
 *
 * Return: 0, or -EAGAIN when the CQ is empty.
 */
int rdmashare_peek_cqe(struct rdmashare *rs, struct rdmashare_cqe **cqe);

/**
 * rdmashare_wait_cqe() - the oldest unreaped completion, waiting for one
 * @rs: a set-up handle
 * @cqe: as for rdmashare_peek_cqe()
 * @timeout_ms: give up after this long (0: no limit)
 *
 * Return: 0, -ETIME, -EINTR, or another negative errno.
 */
int rdmashare_wait_cqe(struct rdmashare *rs, struct rdmashare_cqe **cqe,
		       unsigned int timeout_ms);

/**
 * rdmashare_cqe_seen() - give a completion's slot back to the kernel
 * @rs: a set-up handle
 * @cqe: the entry from rdmashare_peek_cqe() or rdmashare_wait_cqe()
 */
void rdmashare_cqe_seen(struct rdmashare *rs, struct rdmashare_cqe *cqe);

/**
 * rdmashare_cq_ready() - completions waiting to be reaped
 * @rs: a set-up handle
 *
 * Return: the number of entries in the CQ.
 */
unsigned int rdmashare_cq_ready(struct rdmashare *rs);

/*
 * Abstract connections, socket style.  These calls reap completions
 * themselves and file them by AC; a program that uses them should not reap
 * the CQ directly.  AC ids are >= 1; calls return a negative errno.
 */

/**
 * rdmashare_listen() - listen on a service port
 * @rs: a set-up handle
 * @port: 1 to 65535, unique on the host
 * @backlog: connections that may wait for rdmashare_accept()
 *
 * Return: the listening AC, or -EADDRINUSE, -EINVAL, ...
 */
int rdmashare_listen(struct rdmashare *rs, unsigned int port, unsigned int backlog);

/**
 * rdmashare_accept() - the next connection on a listening AC
 * @rs: a set-up handle
 * @listen_ac: from rdmashare_listen()
 * @timeout_ms: 0 waits without limit
 *
 * Return: the new AC, or -ETIME, -EINTR, ...
 */
int rdmashare_accept(struct rdmashare *rs, int listen_ac, unsigned int timeout_ms);

/**
 * rdmashare_accept_peer() - rdmashare_accept(), with the peer's address
 * @rs: a set-up handle
 * @listen_ac: from rdmashare_listen()
 * @timeout_ms: 0 waits without limit
 * @peer: if not NULL, gets the peer's address (struct sockaddr_in or
 *	sockaddr_in6, port 0), cut to *@peer_len bytes
 * @peer_len: in: @peer's size; out: the address's
 *
 * Return: as rdmashare_accept().
 */
int rdmashare_accept_peer(struct rdmashare *rs, int listen_ac, unsigned int timeout_ms,
			  struct sockaddr *peer, socklen_t *peer_len);

/**
 * rdmashare_connect() - open an AC to a peer's service port
 * @rs: a set-up handle
 * @addr: sockaddr_in or sockaddr_in6 with the peer's address and port
 * @timeout_ms: 0 for the module's default
 *
 * Return: the new AC, or -ECONNREFUSED, -ETIMEDOUT, -EHOSTUNREACH, ...
 */
int rdmashare_connect(struct rdmashare *rs, const struct sockaddr *addr,
		      unsigned int timeout_ms);

/**
 * rdmashare_send() - send one message
 * @rs: a set-up handle
 * @ac: an open AC
 * @buf: the message
 * @len: its length; at most the data area's application part
 *
 * The message is copied into the data area and queued; the call returns
 * before it is delivered.  Messages arrive whole, once, in order.  It waits
 * while the data area is full, or while the kernel's max_waiting SENDs,
 * CLOSEs and SHUTDOWNs of this handle have not completed (they wait for
 * the peers' credits).
 *
 * Return: 0, or -EMSGSIZE, -ENOMEM, -EINTR, ...  A failed delivery shows
 * as a CLOSED AC (rdmashare_recv() returns the error).
 */
int rdmashare_send(struct rdmashare *rs, int ac, const void *buf, size_t len);

/**
 * rdmashare_recv() - receive one message
 * @rs: a set-up handle
 * @ac: an open AC
 * @buf: where to copy it
 * @len: room at @buf
 * @timeout_ms: 0 waits without limit
 *
 * A call that ends early (-ETIME, -EINTR) in the middle of a message keeps
 * what it read: the next call returns the whole message.
 *
 * Return: the message's length (0 for an empty message); -EPIPE once the
 * peer closed the AC or shut it down (rdmashare_shutdown()) and every
 * message before was received; -EMSGSIZE (the message was longer than @len
 * of the call that began to read it, and is dropped); -ETIME; or the AC's
 * error (-ECONNRESET when the peer was lost).
 */
ssize_t rdmashare_recv(struct rdmashare *rs, int ac, void *buf, size_t len,
		       unsigned int timeout_ms);

/**
 * rdmashare_recv_any() - receive one message on whichever AC has one
 * @rs: a set-up handle
 * @ac: out: the AC the message (or the end) is of
 * @buf: where to copy it
 * @len: room at @buf
 * @timeout_ms: 0 waits without limit
 *
 * ACs take turns in the order their first unread chunk (or end) came.
 *
 * Return: as rdmashare_recv(), for *@ac; an AC's end (-EPIPE, or its error)
 * is returned once; -EINVAL without @ac; -ETIME with *@ac unchanged.
 */
ssize_t rdmashare_recv_any(struct rdmashare *rs, int *ac, void *buf, size_t len,
			   unsigned int timeout_ms);

/**
 * rdmashare_close_ac() - close an AC after its queued messages
 * @rs: a set-up handle
 * @ac: the AC
 *
 * Does not wait: the messages sent before go first, then the peer learns of
 * the close.  Unread messages are dropped.  The id may come back from a
 * later connect or accept once the close completed.
 *
 * Return: 0, or a negative errno (-EINTR: not queued, the AC stays open).
 */
int rdmashare_close_ac(struct rdmashare *rs, int ac);

/**
 * rdmashare_shutdown() - send no more on an AC, but go on receiving
 * @rs: a set-up handle
 * @ac: an open AC
 *
 * Does not wait: the messages sent before go first, then the peer's
 * rdmashare_recv() returns -EPIPE, while it can still send to this end.
 * Like shutdown(fd, SHUT_WR).  Later rdmashare_send() calls fail with
 * -EPIPE; rdmashare_close_ac() ends the AC as before.
 *
 * Return: 0, or -EPIPE (shut down or closed already), a negative errno.
 */
int rdmashare_shutdown(struct rdmashare *rs, int ac);

/**
 * rdmashare_ac_stats() - an AC's state and counters
 * @rs: a handle
 * @ac: an AC of this handle
 * @st: filled in (RDMASHARE_IOC_AC_STATS)
 *
 * Return: 0, or -ENOENT, a negative errno.
 */
int rdmashare_ac_stats(struct rdmashare *rs, int ac, struct rdmashare_ac_stats *st);

/**
 * rdmashare_flush() - wait until every rdmashare_send() completed
 * @rs: a set-up handle
 * @timeout_ms: per wait; 0 without limit
 *
 * Return: 0, or a negative errno.
 */
int rdmashare_flush(struct rdmashare *rs, unsigned int timeout_ms);

/**
 * rdmashare_set_weight() - an AC's scheduling weight
 * @rs: a set-up handle
 * @ac: an AC of @rs (a listener passes it on to the ACs it accepts)
 * @weight: RDMASHARE_WEIGHT_MIN to RDMASHARE_WEIGHT_MAX; 1 by default
 *
 * Among the ACs of one application on a shared QP, each gets a share of the
 * bytes sent proportional to its weight while they all have data.
 *
 * Return: 0, or -EINVAL, -ENOENT.
 */
int rdmashare_set_weight(struct rdmashare *rs, int ac, unsigned int weight);

/**
 * rdmashare_set_band() - an AC's scheduling band
 * @rs: a set-up handle
 * @ac: an AC of @rs (a listener passes it on to the ACs it accepts)
 * @band: RDMASHARE_BAND_LATENCY (needs CAP_NET_ADMIN), _NORMAL (default)
 *	or _BULK
 *
 * Return: 0, or -EINVAL, -ENOENT, -EPERM.
 */
int rdmashare_set_band(struct rdmashare *rs, int ac, unsigned int band);

/**
 * rdmashare_set_app_weight() - the application's scheduling weight
 * @rs: a set-up handle
 * @weight: RDMASHARE_WEIGHT_MIN to RDMASHARE_WEIGHT_MAX; 1 by default
 *
 * Applications (open files) sharing a QP get shares proportional to their
 * weights, however many ACs each has (unless the module runs in flat mode).
 *
 * Return: 0, or -EINVAL.
 */
int rdmashare_set_app_weight(struct rdmashare *rs, unsigned int weight);

/*
 * AC files (RDMASHARE_FEAT_AC_FILES): an AC as a descriptor of its own, a
 * byte stream with read(2), write(2), poll(2) and close(2), like a
 * connected stream socket.  The handle needs a file area for their send
 * buffers (struct rdmashare_setup's files_size, RDMASHARE_SETUP_FILES).
 * @flags: RDMASHARE_FILE_NONBLOCK, RDMASHARE_FILE_CLOEXEC; @sndbuf: bytes
 * of the AC file's send buffer, 0 for the default.
 */

/**
 * rdmashare_listen_files() - listen on a service port for AC files
 * @rs: a set-up handle with a file area
 * @port: 1 to 65535, unique on the host
 * @backlog: connections that may wait for rdmashare_accept_file()
 *
 * Return: the listening AC (closed with rdmashare_close_ac()), or -EINVAL
 * (no file area), -EADDRINUSE, ...
 */
int rdmashare_listen_files(struct rdmashare *rs, unsigned int port, unsigned int backlog);

/**
 * rdmashare_accept_file() - the next connection, as an AC file
 * @rs: a set-up handle
 * @listen_ac: from rdmashare_listen_files()
 * @timeout_ms: 0 waits without limit
 * @sndbuf: its send buffer's size, 0 for the default
 * @flags: RDMASHARE_FILE_*
 *
 * Return: the AC file's descriptor, or -ETIME, -ENOSPC (the file area is
 * full), -EMFILE, ...
 */
int rdmashare_accept_file(struct rdmashare *rs, int listen_ac, unsigned int timeout_ms,
			  unsigned int sndbuf, unsigned int flags);

/**
 * rdmashare_connect_file() - open an AC to a peer's service port, as a file
 * @rs: a set-up handle with a file area
 * @addr: sockaddr_in or sockaddr_in6 with the peer's address and port
 * @timeout_ms: 0 for the module's default
 * @sndbuf: its send buffer's size, 0 for the default
 * @flags: RDMASHARE_FILE_*
 *
 * Return: the AC file's descriptor, or the errors of rdmashare_connect()
 * and -ENOSPC (the file area is full), -EMFILE.
 */
int rdmashare_connect_file(struct rdmashare *rs, const struct sockaddr *addr,
			   unsigned int timeout_ms, unsigned int sndbuf, unsigned int flags);

/**
 * rdmashare_connect_start() - start connecting an AC file, without waiting
 * @rs: a set-up handle with a file area
 * @addr: sockaddr_in or sockaddr_in6 with the peer's address and port
 * @timeout_ms: the connection fails with ETIMEDOUT after this long, 0 for
 *	the module's default
 * @sndbuf: its send buffer's size, 0 for the default
 * @flags: RDMASHARE_FILE_*
 *
 * The AC file comes back at once, as connect(2) on a non-blocking socket
 * returns EINPROGRESS (RDMASHARE_FEAT_CONNECT_NONBLOCK): poll(2) reports
 * POLLOUT once the peer accepted, POLLERR and POLLHUP once the connection
 * failed, and rdmashare_file_error() then tells why.  Until then reads and
 * writes wait (or fail with EAGAIN).  Many may be under way at once.
 *
 * Return: the AC file's descriptor, or the errors of
 * rdmashare_connect_file() that come before any connecting (-EINVAL,
 * -ENOSPC, -EMFILE, ...).
 */
int rdmashare_connect_start(struct rdmashare *rs, const struct sockaddr *addr,
			    unsigned int timeout_ms, unsigned int sndbuf, unsigned int flags);

/**
 * rdmashare_file_info() - what an AC file's socket calls would tell
 * @fd: an AC file
 * @fi: gets the state, the pending error, both ends' addresses and the
 *	bytes queued each way (struct rdmashare_file_info)
 * @flags: RDMASHARE_INFO_TAKE_ERROR clears the pending error
 *
 * Return: 0, or -ENOTTY (not an AC file), -EINVAL (unknown flags).
 */
int rdmashare_file_info(int fd, struct rdmashare_file_info *fi, unsigned int flags);

/**
 * rdmashare_file_error() - an AC file's pending error, taken (SO_ERROR)
 * @fd: an AC file
 *
 * Return: the negative errno the AC closed with (-ECONNREFUSED,
 * -ETIMEDOUT, -ECONNRESET, ...), then 0 until another; or -ENOTTY.
 */
int rdmashare_file_error(int fd);

/**
 * rdmashare_listen_fd() - a listening file on a service port
 * @port: 1 to 65535, unique on the host
 * @backlog: connections that may wait for rdmashare_accept_fd()
 * @max_files: AC files it gives that may exist at once, 0 for 64
 * @flags: the listening file's RDMASHARE_FILE_* (O_NONBLOCK: accepts do
 *	not wait), and RDMASHARE_LISTEN_FD_REUSEPORT to share the port
 *	(RDMASHARE_FEAT_LISTEN_REUSEPORT)
 *
 * A descriptor like a listening stream socket's: poll(2) reports POLLIN
 * while a connection waits; close(2) stops listening.  It needs no handle
 * (RDMASHARE_FEAT_LISTEN_FD); its memory (receive slots and max_files send
 * buffers of 64 KiB) counts against RLIMIT_MEMLOCK.
 *
 * Return: its descriptor, or -EADDRINUSE, -EACCES (a port below 1024
 * without CAP_NET_BIND_SERVICE), -ENOMEM (beyond RLIMIT_MEMLOCK), -EINVAL,
 * -EMFILE, -ENOENT (no module), ...
 */
int rdmashare_listen_fd(unsigned int port, unsigned int backlog, unsigned int max_files,
			unsigned int flags);

/* rdmashare_listen_fd_at(): an IPv6 wildcard that takes no IPv4 (IPV6_V6ONLY). */
#define RDMASHARE_LISTEN_FD_V6ONLY	(1U << 16)
/*
 * rdmashare_listen_fd(), rdmashare_listen_fd_at(): share the port with this
 * user's other listeners on the same addresses that have it (SO_REUSEPORT).
 */
#define RDMASHARE_LISTEN_FD_REUSEPORT	(1U << 17)

/**
 * rdmashare_listen_fd_at() - a listening file on one address
 * @addr: a struct sockaddr_in or sockaddr_in6: the service port, and the
 *	address to listen on (INADDR_ANY, in6addr_any: any of the family), as
 *	bind(2) takes it
 * @backlog: as for rdmashare_listen_fd()
 * @max_files: as for rdmashare_listen_fd()
 * @flags: the listening file's RDMASHARE_FILE_*,
 *	RDMASHARE_LISTEN_FD_V6ONLY for an IPv6 wildcard, and
 *	RDMASHARE_LISTEN_FD_REUSEPORT
 *
 * rdmashare_listen_fd() for the connections to @addr alone: listeners of
 * one port on addresses that do not overlap coexist, as bound sockets do
 * (RDMASHARE_FEAT_LISTEN_ADDR).
 *
 * Return: its descriptor, or rdmashare_listen_fd()'s errors; -EADDRINUSE
 * if a listener of the port overlaps it, -EAFNOSUPPORT, -EINVAL (a
 * module without addresses in LISTEN, a bad address).
 */
int rdmashare_listen_fd_at(const struct sockaddr *addr, unsigned int backlog,
			   unsigned int max_files, unsigned int flags);

/**
 * rdmashare_accept_fd() - a listening file's next connection, as an AC file
 * @lfd: from rdmashare_listen_fd()
 * @peer: if not NULL, gets the peer's address (struct sockaddr_in or
 *	sockaddr_in6, port 0), cut to *@peer_len bytes
 * @peer_len: in: @peer's size; out: the address's
 * @flags: the AC file's RDMASHARE_FILE_*, never the listening file's (as
 *	accept4(2)'s)
 *
 * Waits for one unless @lfd is O_NONBLOCK.
 *
 * Return: the AC file's descriptor, or -EAGAIN (none waits, @lfd
 * non-blocking), -EINTR, -ENOSPC (max_files of its AC files exist),
 * -EMFILE, -ENOTTY (not a listening file), ...
 */
int rdmashare_accept_fd(int lfd, struct sockaddr *peer, socklen_t *peer_len,
			unsigned int flags);

/**
 * rdmashare_shutdown_file() - an AC file sends no more
 * @fd: an AC file
 *
 * What was written goes out, then the peer's reads end; reading goes on
 * (shutdown(2) with SHUT_WR).  A second call does nothing.
 *
 * Return: 0, or -EPIPE (the AC closed), -ENOTTY (not an AC file), ...
 */
int rdmashare_shutdown_file(int fd);

/*
 * The socket calls of an AC file (RDMASHARE_FEAT_MSG), which send(2),
 * recv(2) and shutdown(2) refuse on it (it is not a socket): the same
 * flags, and the bytes moved or a negative errno.
 */

/**
 * rdmashare_file_send() - send(2) on an AC file
 * @fd: an AC file
 * @buf: the bytes
 * @len: how many
 * @flags: MSG_DONTWAIT (for this call alone, even while another thread
 *	waits on @fd), MSG_NOSIGNAL (-EPIPE without SIGPIPE), MSG_MORE (the
 *	bytes wait for the next send's, 200 ms at most), MSG_EOR (ignored)
 *
 * Return: the bytes copied into the send buffer, or -EAGAIN, -EPIPE,
 * -EOPNOTSUPP (another flag), -ENOTTY (not an AC file, or a module without
 * RDMASHARE_FEAT_MSG), the error the AC closed with, ...
 */
ssize_t rdmashare_file_send(int fd, const void *buf, size_t len, int flags);

/**
 * rdmashare_file_recv() - recv(2) on an AC file
 * @fd: an AC file
 * @buf: where to
 * @len: at most this many bytes
 * @flags: MSG_DONTWAIT (for this call alone), MSG_PEEK (the bytes stay),
 *	MSG_WAITALL (until @len came, the stream ended, an error or a
 *	signal), MSG_CMSG_CLOEXEC (ignored)
 *
 * Return: the bytes read, 0 at the end of the stream, or -EAGAIN, -EINTR,
 * -EOPNOTSUPP (another flag), -ENOTTY, the error the AC closed with, ...
 */
ssize_t rdmashare_file_recv(int fd, void *buf, size_t len, int flags);

/**
 * rdmashare_file_sendv() - rdmashare_file_send() from an iovec array
 * @fd: an AC file
 * @iov: the pieces, as writev(2)'s
 * @iovcnt: their number, at most IOV_MAX
 * @flags: as rdmashare_file_send()'s
 *
 * Return: as rdmashare_file_send(), or -EINVAL (@iovcnt).
 */
ssize_t rdmashare_file_sendv(int fd, const struct iovec *iov, int iovcnt, int flags);

/**
 * rdmashare_file_recvv() - rdmashare_file_recv() into an iovec array
 * @fd: an AC file
 * @iov: the pieces, as readv(2)'s
 * @iovcnt: their number, at most IOV_MAX
 * @flags: as rdmashare_file_recv()'s
 *
 * Return: as rdmashare_file_recv(), or -EINVAL (@iovcnt).
 */
ssize_t rdmashare_file_recvv(int fd, const struct iovec *iov, int iovcnt, int flags);

/**
 * rdmashare_file_shutdown() - shutdown(2) on an AC file
 * @fd: an AC file
 * @how: SHUT_WR (as rdmashare_shutdown_file()), SHUT_RD (reads return 0
 *	from now on, what came and comes is dropped) or SHUT_RDWR
 *
 * Return: 0, or -EINVAL (@how, or SHUT_RD on a module without
 * RDMASHARE_FEAT_MSG), -EPIPE (the AC closed), -ENOTTY, ...
 */
int rdmashare_file_shutdown(int fd, int how);

/**
 * rdmashare_file_set_sndbuf() - an AC file's send buffer (SO_SNDBUF)
 * @fd: an AC file
 * @bytes: the size wanted: rounded up to pages, at most the module's
 *	sndbuf_max, and as large as the file area that gave the AC file has
 *	room for (not doubled, unlike setsockopt(2)'s SO_SNDBUF)
 *
 * The buffer keeps this size from then on, instead of growing with the
 * stream (RDMASHARE_FEAT_FILE_SET); writes already queued finish in the old
 * one.  rdmashare_file_info()'s sndbuf tells the size.
 *
 * Return: the size it has now (the old one if the file area had no room),
 * or -EINVAL (@bytes 0), -EBUSY (a change is still under way: the old
 * buffer has writes in flight), -ENOTTY (not an AC file, or a module
 * without RDMASHARE_FEAT_FILE_SET), ...
 */
int rdmashare_file_set_sndbuf(int fd, unsigned int bytes);

/**
 * rdmashare_file_set_cork() - hold an AC file's writes back (TCP_CORK)
 * @fd: an AC file
 * @on: non-zero: every write waits, as with MSG_MORE, for the next one, a
 *	shutdown, the close, or 200 ms; 0: what waits goes now
 *
 * Return: 0, or -ENOTTY (not an AC file, or a module without
 * RDMASHARE_FEAT_FILE_SET), the AC's error, ...
 */
int rdmashare_file_set_cork(int fd, int on);

/**
 * rdmashare_file_set_timeout() - how long an AC file's blocking reads or
 *	writes wait (SO_RCVTIMEO, SO_SNDTIMEO)
 * @fd: an AC file
 * @which: SO_RCVTIMEO: reads waiting for bytes; SO_SNDTIMEO: writes waiting
 *	for room in the send buffer
 * @usecs: microseconds; 0: for as long as it takes (the default)
 *
 * A read or write that waited that long returns the bytes it moved, or
 * fails with EAGAIN if none, as a socket's (RDMASHARE_FEAT_FILE_TIMEO).
 * rdmashare_file_info()'s rcvtimeo_us and sndtimeo_us tell them.
 *
 * Return: 0, or -EINVAL (@which), -ENOTTY (not an AC file), -EINVAL from a
 * module without RDMASHARE_FEAT_FILE_TIMEO, ...
 */
int rdmashare_file_set_timeout(int fd, int which, uint64_t usecs);

#ifdef __cplusplus
}
#endif

#endif /* LIBRDMASHARE_H */

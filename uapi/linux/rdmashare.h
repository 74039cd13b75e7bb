/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * rdmashare: one shared RDMA transport for every application on a host.
 *
 * User-space ABI of /dev/rdmashare.  See Documentation/userspace-api.rst.
 *
 * Rules that every command follows:
 *  - Each ioctl argument starts with "__u32 size", the size of the struct as
 *    the caller knows it.  A smaller size than the first published version of
 *    the struct is rejected with -EINVAL; a larger one is accepted when every
 *    byte the kernel does not know is zero (else -E2BIG); a size above 4096
 *    gets -E2BIG.  Output fields are copied back up to the caller's size.
 *  - Unknown flags and non-zero reserved fields are rejected with -EINVAL.
 *  - An unknown command gets -ENOTTY.
 */
#ifndef _UAPI_LINUX_RDMASHARE_H
#define _UAPI_LINUX_RDMASHARE_H

#include <linux/types.h>
#include <linux/ioctl.h>

/* Bumped on any incompatible change; also in sysfs as "abi_version". */
#define RDMASHARE_ABI_VERSION	1

#define RDMASHARE_TYPE		0xDA

/* Command numbers: RDMASHARE_IOC_* is _IO(RDMASHARE_TYPE, RDMASHARE_CMD_*). */
enum {
	RDMASHARE_CMD_QUERY = 0x00,
	RDMASHARE_CMD_SETUP = 0x01,
	RDMASHARE_CMD_ENTER = 0x02,
	RDMASHARE_CMD_LISTEN = 0x03,
	RDMASHARE_CMD_CONNECT = 0x04,
	RDMASHARE_CMD_ACCEPT = 0x05,
	RDMASHARE_CMD_AC_SET = 0x06,
	RDMASHARE_CMD_AC_STATS = 0x07,
	RDMASHARE_CMD_SHUTDOWN = 0x08,
	RDMASHARE_CMD_FILE_INFO = 0x09,
	RDMASHARE_CMD_SENDMSG = 0x0a,
	RDMASHARE_CMD_RECVMSG = 0x0b,
	RDMASHARE_CMD_FILE_SET = 0x0c
};

/* RDMASHARE_IOC_QUERY features */
#define RDMASHARE_FEAT_RINGS	(1ULL << 0)	/* SETUP, ENTER, mmap'd rings */
#define RDMASHARE_FEAT_AC	(1ULL << 1)	/* LISTEN, CONNECT, ACCEPT, SEND */
#define RDMASHARE_FEAT_SCHED	(1ULL << 2)	/* AC_SET: weights and bands */
#define RDMASHARE_FEAT_SHUTDOWN	(1ULL << 3)	/* OP_SHUTDOWN, CQE_F_HALF */
#define RDMASHARE_FEAT_AC_STATS	(1ULL << 4)	/* AC_STATS */
#define RDMASHARE_FEAT_DISCARD	(1ULL << 5)	/* CQE_F_DISCARD */
#define RDMASHARE_FEAT_CQ_LIMITS	(1ULL << 6)	/* SETUP's max_acs, max_waiting */
#define RDMASHARE_FEAT_SQ_WAKEUP	(1ULL << 7)	/* RDMASHARE_SETUP_SQ_WAKEUP */
#define RDMASHARE_FEAT_CQ_OVERFLOW	(1ULL << 8)	/* RDMASHARE_SQ_CQ_OVERFLOW */
#define RDMASHARE_FEAT_SLOT_SIZE	(1ULL << 9)	/* RDMASHARE_SETUP_SLOT_SIZE */
#define RDMASHARE_FEAT_AC_FILES	(1ULL << 10)	/* AC files: read, write, poll */
#define RDMASHARE_FEAT_LISTEN_FD	(1ULL << 11)	/* RDMASHARE_LISTEN_FD */
#define RDMASHARE_FEAT_CONNECT_NONBLOCK	(1ULL << 12)	/* and FILE_INFO */
#define RDMASHARE_FEAT_MSG		(1ULL << 13)	/* SENDMSG, RECVMSG, SHUTDOWN_RD */
#define RDMASHARE_FEAT_FILE_SET		(1ULL << 14)	/* FILE_SET, growing send buffers */
#define RDMASHARE_FEAT_FILE_TIMEO	(1ULL << 15)	/* FILE_SET's timeouts */
#define RDMASHARE_FEAT_LISTEN_ADDR	(1ULL << 16)	/* RDMASHARE_LISTEN_ADDR */
#define RDMASHARE_FEAT_LISTEN_REUSEPORT	(1ULL << 17)	/* RDMASHARE_LISTEN_REUSEPORT */
#define RDMASHARE_FEAT_CONNECT_PORT	(1ULL << 18)	/* RDMASHARE_CONNECT_PORT */

/**
 * struct rdmashare_query - RDMASHARE_IOC_QUERY
 * @size: sizeof(struct rdmashare_query)
 * @flags: must be 0
 * @abi_version: out, RDMASHARE_ABI_VERSION of the running module
 * @num_devices: out, RDMA devices the module currently uses
 * @features: out, RDMASHARE_FEAT_* the module supports
 */
struct rdmashare_query {
	__u32 size;
	__u32 flags;
	__u32 abi_version;
	__u32 num_devices;
	__aligned_u64 features;
};

#define RDMASHARE_IOC_QUERY	_IO(RDMASHARE_TYPE, RDMASHARE_CMD_QUERY)

/*
 * Rings.  Each file, once set up, has a submission queue (SQ) of struct
 * rdmashare_sqe, a completion queue (CQ) of struct rdmashare_cqe, and a data
 * area for payloads, all shared with the kernel through mmap(2):
 *
 *   offset RDMASHARE_OFF_RINGS: the ring control words, the SQ entries and
 *                               the CQ entries (rings_size bytes); where
 *                               each is comes in struct rdmashare_setup
 *   offset RDMASHARE_OFF_DATA:  the data area (data_size bytes)
 *
 * Indices are free-running __u32, an entry's slot is index & ring_mask.  The
 * application owns the SQ tail and the CQ head, the kernel the SQ head and
 * the CQ tail.  The owner publishes with a store-release, the other side
 * reads with a load-acquire (liburing's io_uring_smp_store_release and
 * io_uring_smp_load_acquire).
 */
#define RDMASHARE_OFF_RINGS	0x00000000ULL
#define RDMASHARE_OFF_DATA	0x10000000ULL

/**
 * struct rdmashare_ring_offsets - where a ring is in the rings mapping
 * @head: offset of the __u32 head index
 * @tail: offset of the __u32 tail index
 * @ring_mask: offset of the __u32 mask (entries - 1)
 * @ring_entries: offset of the __u32 number of entries
 * @flags: offset of the __u32 ring flags: RDMASHARE_SQ_* for the SQ (the
 *	kernel writes them, the application reads them), none for the CQ
 * @entries: offset of the first entry
 * @resv: reserved
 */
struct rdmashare_ring_offsets {
	__u32 head;
	__u32 tail;
	__u32 ring_mask;
	__u32 ring_entries;
	__u32 flags;
	__u32 entries;
	__u32 resv[2];
};

/*
 * RDMASHARE_IOC_SETUP flags.
 *
 * RDMASHARE_SETUP_SQ_WAKEUP: the kernel also consumes the SQ by itself,
 * without RDMASHARE_IOC_ENTER, whenever one of the file's SENDs, CLOSEs or
 * SHUTDOWNs that went on the wire completes, in the order and with the CQ
 * room rules of ENTER.  While such an operation is in flight, and the
 * kernel left nothing in the SQ, it clears RDMASHARE_SQ_NEED_WAKEUP in the
 * SQ ring's flags: SQEs published meanwhile (a store-release of the tail)
 * will be consumed without a system call.  Otherwise the flag is set, and
 * the application must call ENTER for them.  The application publishes the
 * tail, then issues a full barrier, then reads the flags (io_uring's
 * IORING_SQ_NEED_WAKEUP contract); the kernel sets the flag, then issues a
 * full barrier, then looks at the tail once more.
 *
 * RDMASHARE_SETUP_SLOT_SIZE: @rx_slot_size is an input too, the size of
 * each receive slot.  A peer sends an AC of the file chunks of at most that
 * many bytes, so a file that receives small messages on many ACs gets more
 * slots, and larger windows, from the same memory; a larger message comes
 * in more chunks.
 *
 * RDMASHARE_SETUP_FILES: @files_size is an input: the file can make AC
 * files (RDMASHARE_CONNECT_FILE, RDMASHARE_LISTEN_FILES).
 */
#define RDMASHARE_SETUP_SQ_WAKEUP	(1U << 0)
#define RDMASHARE_SETUP_SLOT_SIZE	(1U << 1)
#define RDMASHARE_SETUP_FILES		(1U << 2)

/*
 * SQ ring flags.  RDMASHARE_SQ_CQ_OVERFLOW: an AC's CLOSED completion holds
 * no CQ entry in advance; one that found the CQ without room waits in the
 * kernel, after which the kernel sets this flag.  Any ENTER (and poll(2))
 * posts what waits as soon as the CQ has room, in the order it came, and
 * clears the flag once nothing waits.
 */
#define RDMASHARE_SQ_NEED_WAKEUP	(1U << 0)	/* call ENTER to submit */
#define RDMASHARE_SQ_CQ_OVERFLOW	(1U << 1)	/* call ENTER to get CLOSEDs */

/**
 * struct rdmashare_setup - RDMASHARE_IOC_SETUP
 * @size: sizeof(struct rdmashare_setup)
 * @flags: RDMASHARE_SETUP_*
 * @sq_entries: in: SQ size wanted, 0 for the default; rounded up to a power
 *	of two; out: the SQ size
 * @cq_entries: in: CQ size wanted, 0 for twice the SQ plus @rx_slots; at
 *	least the SQ size plus @rx_slots; rounded up to a power of two; out:
 *	the CQ size
 * @data_size: in: bytes wanted for the application's part of the data
 *	area, 0 for the default; rounded up to the page size; out: its size
 * @rings_size: out: length to mmap at RDMASHARE_OFF_RINGS
 * @rx_slots: in: receive slots wanted, 0 for the default; out: how many
 * @rx_slot_size: in, with RDMASHARE_SETUP_SLOT_SIZE: bytes per receive slot
 *	wanted, 64 to the module's max_chunk_size, rounded up to a multiple of
 *	64 (or to max_chunk_size); out: bytes per receive slot (without the
 *	flag: max_chunk_size)
 * @rx_offset: out: offset of the first receive slot in the data area
 * @map_size: out: length to mmap at RDMASHARE_OFF_DATA: the application's
 *	part, then the receive slots
 * @sq_off: out: the SQ in the rings mapping
 * @cq_off: out: the CQ in the rings mapping
 * @max_acs: out: ACs the file may have at once (the module's
 *	max_acs_per_file when SETUP ran): a LISTEN or CONNECT beyond it gets
 *	-EMFILE, a peer's CONNECT to a listener of the file is refused
 * @max_waiting: out: SENDs, CLOSEs and SHUTDOWNs the file may have at once
 *	that have not completed; see struct rdmashare_enter
 * @files_size: in, with RDMASHARE_SETUP_FILES: bytes of the file area, from
 *	which the AC files that this file makes get their send buffers
 *	(struct rdmashare_file_params); rounded up to the page size; out: its
 *	size.  It follows the receive slots in memory and is not mapped.
 * @resv: reserved, must be 0
 *
 * Once per file: a second call gets -EBUSY.  Sizes above the module's limits
 * get -EINVAL, and so does a CQ with fewer than 4 entries beyond @rx_slots;
 * memory beyond RLIMIT_MEMLOCK (without CAP_IPC_LOCK) -ENOMEM.
 */
struct rdmashare_setup {
	__u32 size;
	__u32 flags;
	__u32 sq_entries;
	__u32 cq_entries;
	__aligned_u64 data_size;
	__aligned_u64 rings_size;
	struct rdmashare_ring_offsets sq_off;
	struct rdmashare_ring_offsets cq_off;
	__u32 rx_slots;
	__u32 rx_slot_size;
	__aligned_u64 rx_offset;
	__aligned_u64 map_size;
	__u32 max_acs;
	__u32 max_waiting;
	__aligned_u64 files_size;
	__aligned_u64 resv[2];
};

#define RDMASHARE_IOC_SETUP	_IO(RDMASHARE_TYPE, RDMASHARE_CMD_SETUP)

/* SQE opcodes */
enum {
	RDMASHARE_OP_NOP = 0,		/* completes at once with res 0 */
	RDMASHARE_OP_SEND = 1,		/* send len bytes at addr on ac */
	RDMASHARE_OP_RELEASE = 2,	/* give back the receive slot at addr */
	RDMASHARE_OP_CLOSE = 3,		/* close ac after its queued sends */
	RDMASHARE_OP_SHUTDOWN = 4,	/* no more sends on ac, after the queued ones */
	RDMASHARE_OP_LAST		/* first unknown opcode */
};

/**
 * struct rdmashare_sqe - a submission, 64 bytes
 * @opcode: RDMASHARE_OP_*
 * @flags: none defined yet, must be 0
 * @resv0: must be 0
 * @ac: the abstract connection the operation is for
 * @user_data: returned unchanged in the operation's completion
 * @addr: offset in the data area
 * @len: bytes at @addr
 * @resv1: must be 0
 * @resv2: must be 0
 */
struct rdmashare_sqe {
	__u8 opcode;
	__u8 flags;
	__u16 resv0;
	__u32 ac;
	__aligned_u64 user_data;
	__aligned_u64 addr;
	__u32 len;
	__u32 resv1;
	__aligned_u64 resv2[4];
};

/* CQE types */
enum {
	RDMASHARE_CQE_OP = 0,		/* completion of an SQE */
	RDMASHARE_CQE_RECV = 1,		/* a received chunk in a slot */
	RDMASHARE_CQE_CLOSED = 2	/* the AC is closed: res 0 or -errno */
};

/* CQE flags */
#define RDMASHARE_CQE_F_MORE	(1U << 0)	/* RECV: more chunks follow */
#define RDMASHARE_CQE_F_HALF	(1U << 1)	/* CLOSED: the peer shut down */
#define RDMASHARE_CQE_F_DISCARD	(1U << 2)	/* CLOSED: never accepted, void */

/**
 * struct rdmashare_cqe - a completion, 32 bytes
 * @user_data: the SQE's user_data
 * @res: result: >= 0 on success, a negative errno on failure; RECV: bytes
 *	in the slot
 * @ac: the abstract connection
 * @type: RDMASHARE_CQE_*
 * @opcode: for RDMASHARE_CQE_OP, the SQE's opcode
 * @flags: RDMASHARE_CQE_F_*
 * @resv: reserved
 * @addr: offset in the data area, where relevant; RECV: the slot
 *
 * RECV completions carry the message's total length in @user_data and the
 * slot's bytes in @res; a message longer than a slot arrives in several
 * RECVs, in order, all but the last flagged RDMASHARE_CQE_F_MORE.  Each
 * slot stays the application's until an RDMASHARE_OP_RELEASE gives it back.
 *
 * An AC gets at most one CLOSED completion, after its last RECV.  Flagged
 * RDMASHARE_CQE_F_HALF (res 0), it says that the peer did an
 * RDMASHARE_OP_SHUTDOWN: nothing more arrives, but the AC is still open for
 * SENDs, and what fails later shows in the completions of its operations.
 * Either way the application ends the AC with RDMASHARE_OP_CLOSE.  An AC
 * whose application queued a CLOSE gets no CLOSED completion: the CLOSE's
 * own completion (res -EPIPE if the peer closed first) ends it, and every
 * CLOSE completion frees the id.
 *
 * An AC that a listener's backlog held when the listener closed, or that a
 * CONNECT opened just as it gave up (timeout, signal), was never the
 * application's; if it received chunks, they are in the CQ under its
 * id, and its CLOSED completion, flagged RDMASHARE_CQE_F_DISCARD (res
 * -ECONNABORTED), comes after them and before the id can name a new AC.
 * The application releases their slots and forgets them; it does not close
 * the AC.
 */
struct rdmashare_cqe {
	__aligned_u64 user_data;
	__s32 res;
	__u32 ac;
	__u8 type;
	__u8 opcode;
	__u16 flags;
	__u32 resv;
	__aligned_u64 addr;
};

/* RDMASHARE_IOC_ENTER flags */
#define RDMASHARE_ENTER_GETEVENTS	(1U << 0)	/* wait for min_complete */

/**
 * struct rdmashare_enter - RDMASHARE_IOC_ENTER
 * @size: sizeof(struct rdmashare_enter)
 * @flags: RDMASHARE_ENTER_*
 * @to_submit: in: consume up to this many SQEs
 * @min_complete: in: with RDMASHARE_ENTER_GETEVENTS, wait until the CQ
 *	holds at least this many completions
 * @timeout_ms: in: with RDMASHARE_ENTER_GETEVENTS, give up waiting after
 *	this long (-ETIME); 0 waits without limit
 * @submitted: out: SQEs consumed
 *
 * Each consumed SQE yields exactly one completion, and is consumed only with
 * room in the CQ for it: SQEs are taken in order, and the first that finds
 * none stays at the head of the SQ (@submitted says how many went).  A
 * SEND, CLOSE or SHUTDOWN also needs one of the file's max_waiting places
 * (struct rdmashare_setup), which it keeps until it completes, so that
 * completions that wait on the peer never fill the CQ: an application that
 * reaps its CQ can always submit a RELEASE, and thereby return credits to a
 * peer whose SENDs wait for them, provided that no SEND waits ahead of it
 * in the SQ.  An application keeps that so by never having more than
 * max_waiting of these operations submitted and not completed.
 *
 * A malformed SQE (unknown opcode or flag, non-zero reserved field)
 * completes with -EINVAL; an SQ tail more than sq_entries ahead of the head
 * makes the call fail with -EINVAL and consume nothing.  A signal ends the
 * wait with -EINTR, after the submissions.
 */
struct rdmashare_enter {
	__u32 size;
	__u32 flags;
	__u32 to_submit;
	__u32 min_complete;
	__u32 timeout_ms;
	__u32 submitted;
};

#define RDMASHARE_IOC_ENTER	_IO(RDMASHARE_TYPE, RDMASHARE_CMD_ENTER)

/**
 * struct rdmashare_addr - a peer: IPv4 or IPv6 address and service port
 * @family: AF_INET or AF_INET6
 * @port: service port, 1 to 65535
 * @addr: the address in network byte order; 4 bytes for AF_INET
 */
struct rdmashare_addr {
	__u32 family;
	__u32 port;
	__u8 addr[16];
};

/* struct rdmashare_file_params flags */
#define RDMASHARE_FILE_NONBLOCK		(1U << 0)	/* the file is O_NONBLOCK */
#define RDMASHARE_FILE_CLOEXEC		(1U << 1)	/* its descriptor: O_CLOEXEC */

/**
 * struct rdmashare_file_params - an AC file (RDMASHARE_FEAT_AC_FILES)
 * @flags: RDMASHARE_FILE_*
 * @fd: out: the AC file's descriptor
 * @sndbuf: in: bytes of the AC file's send buffer, 0 for 64 KiB; rounded up
 *	to the page size; out: its size.  It comes from the file area of the
 *	file that makes the AC (struct rdmashare_setup's @files_size).
 * @resv: must be 0
 *
 * An AC file is a byte stream over one AC, like a connected stream socket:
 * read(2) returns what arrived, 0 once the peer shut down or closed and all
 * of it was read; write(2) copies into the send buffer and queues what it
 * copied as messages, and fails with EPIPE (and SIGPIPE) once the peer
 * closed; poll(2) reports EPOLLIN, EPOLLOUT, EPOLLRDHUP, EPOLLHUP and
 * EPOLLERR; close(2) closes the AC once what was written went out.  A
 * closed AC's error (ECONNRESET when its QP went down) comes from read(2)
 * and write(2).  The AC keeps an id in the file that made it, but SQEs
 * cannot name it and none of its completions come to that file's CQ.  The
 * AC file keeps that file's memory (its receive slots and file area), not
 * the file itself.
 */
struct rdmashare_file_params {
	__u32 flags;
	__s32 fd;
	__u32 sndbuf;
	__u32 resv;
};

/* RDMASHARE_IOC_LISTEN flags */
#define RDMASHARE_LISTEN_FILES		(1U << 0)	/* ACCEPT gives AC files */
#define RDMASHARE_LISTEN_FD		(1U << 1)	/* a listening file */
#define RDMASHARE_LISTEN_ADDR		(1U << 2)	/* on @local alone */
#define RDMASHARE_LISTEN_V6ONLY		(1U << 3)	/* IPv6 wildcard: no IPv4 */
#define RDMASHARE_LISTEN_REUSEPORT	(1U << 4)	/* share the port (SO_REUSEPORT) */

/**
 * struct rdmashare_listen - RDMASHARE_IOC_LISTEN
 * @size: sizeof(struct rdmashare_listen)
 * @flags: RDMASHARE_LISTEN_*
 * @port: service port to listen on, 1 to 65535
 * @backlog: connections waiting for ACCEPT, 1 to the max_backlog tunable
 * @ac: out: the listening AC; 0 for a listening file
 * @resv: must be 0
 * @file: RDMASHARE_LISTEN_FD only: @file.flags the listening file's
 *	(RDMASHARE_FILE_NONBLOCK, RDMASHARE_FILE_CLOEXEC); @file.fd out: its
 *	descriptor; @file.sndbuf: the send buffer of each AC file it accepts,
 *	as struct rdmashare_file_params says
 * @max_files: RDMASHARE_LISTEN_FD only: AC files it gives that may exist
 *	at once, 0 for 64 (each has its send buffer until its AC is freed,
 *	after its close and its data sent); out: the number
 * @rx_slots: RDMASHARE_LISTEN_FD only: receive slots its AC files share, 0
 *	for the module's default; out: the number
 * @local: RDMASHARE_LISTEN_ADDR only (RDMASHARE_FEAT_LISTEN_ADDR): the
 *	address to listen on, as bind(2) names it: @local.family AF_INET or
 *	AF_INET6, @local.addr the address or all zeros for any address of the
 *	family (an IPv4-mapped IPv6 address is the IPv4 one), @local.port 0
 *	or @port
 *
 * Without RDMASHARE_LISTEN_ADDR a listener takes the connections to its
 * port on every address of both families.  With it, only those that
 * reached @local (the address of the QP they came on): so listeners of one
 * port on different addresses or families coexist, as bound sockets do.
 * An AF_INET6 wildcard takes IPv4 connections too, unless
 * RDMASHARE_LISTEN_V6ONLY (IPV6_V6ONLY) is set.  Listeners of a port whose
 * addresses overlap cannot both exist: EADDRINUSE, as for listening TCP
 * sockets; except with RDMASHARE_LISTEN_REUSEPORT (SO_REUSEPORT,
 * RDMASHARE_FEAT_LISTEN_REUSEPORT): listeners that all have it, of one
 * user, on the same addresses (the same flags and @local) share the port,
 * and its connections are dealt among them in turn, skipping those whose
 * backlog is full.
 *
 * With RDMASHARE_LISTEN_FD, LISTEN makes a listening file, like a
 * listening stream socket's descriptor, on any /dev/rdmashare file, set
 * up or not: poll(2) reports EPOLLIN while a connection waits, and
 * RDMASHARE_IOC_ACCEPT on it (with @listen_ac 0) gives the next one as an
 * AC file; its last close stops listening.  It has memory of its own (the
 * receive slots, and a file area of @max_files send buffers), charged as
 * a SETUP of that size would be to the caller.  @file, @max_files and
 * @rx_slots must be 0 without the flag.
 */
struct rdmashare_listen {
	__u32 size;
	__u32 flags;
	__u32 port;
	__u32 backlog;
	__u32 ac;
	__u32 resv;
	struct rdmashare_file_params file;
	__u32 max_files;
	__u32 rx_slots;
	struct rdmashare_addr local;
};

#define RDMASHARE_IOC_LISTEN	_IO(RDMASHARE_TYPE, RDMASHARE_CMD_LISTEN)

/* RDMASHARE_IOC_CONNECT flags */
#define RDMASHARE_CONNECT_FILE		(1U << 0)	/* give an AC file */
#define RDMASHARE_CONNECT_NONBLOCK	(1U << 1)	/* give it at once */
#define RDMASHARE_CONNECT_PORT		(1U << 2)	/* this end's port: @sock's */

/**
 * struct rdmashare_connect - RDMASHARE_IOC_CONNECT
 * @size: sizeof(struct rdmashare_connect)
 * @flags: RDMASHARE_CONNECT_*
 * @peer: where to connect
 * @timeout_ms: give up after this long, 0 for the module's default
 * @ac: out: the new AC
 * @file: with RDMASHARE_CONNECT_FILE: the AC file (in: its flags and send
 *	buffer; out: its descriptor); otherwise must be 0
 * @sock: with RDMASHARE_CONNECT_PORT (RDMASHARE_FEAT_CONNECT_PORT): a TCP
 *	socket of the caller's, bound to a port and neither connected nor
 *	listening; otherwise must be 0
 * @resv: must be 0
 *
 * With RDMASHARE_CONNECT_PORT, the AC's end has @sock's port, as a TCP
 * socket's end has the port it is bound to: getsockname(2) of the AC
 * (RDMASHARE_IOC_FILE_INFO) gives it here, and the peer's ACCEPT and
 * getpeername(2) give it there.  The AC holds @sock (a reference to its
 * file) until the AC is gone, or its connection failed, so that the port
 * stays the caller's meanwhile, as long as nobody unbinds the socket
 * (connect(2) it elsewhere, with AF_UNSPEC: the state is checked once, at
 * CONNECT).  Errors: EBADF, ENOTSOCK, and EINVAL for a socket that is not
 * TCP, not bound, connected, listening or of another network namespace.
 * Without it the AC's port is 0, and a peer of an older module sees 0.
 *
 * Blocks until the peer accepted or refused.  Errors: ECONNREFUSED (no
 * listener on the port), ETIMEDOUT, EHOSTUNREACH / ENETUNREACH (no RDMA
 * path), ENOBUFS (no receive slots or CQ room left in this file), EINTR,
 * EINVAL (unknown flags, a send buffer larger than the file area), ENOSPC
 * (no room left in the file area), EMFILE (no descriptor left).
 *
 * With RDMASHARE_CONNECT_NONBLOCK (and RDMASHARE_CONNECT_FILE, which it
 * needs), CONNECT returns the AC file at once, as connect(2) on a
 * non-blocking socket returns EINPROGRESS: poll(2) reports EPOLLOUT once
 * the peer accepted, EPOLLERR and EPOLLHUP once the connection failed,
 * with the error (those above, within @timeout_ms) pending for
 * RDMASHARE_IOC_FILE_INFO; reads and writes wait (or EAGAIN) until then.
 * Only errors before the AC file exists fail the ioctl itself.
 */
struct rdmashare_connect {
	__u32 size;
	__u32 flags;
	struct rdmashare_addr peer;
	__u32 timeout_ms;
	__u32 ac;
	struct rdmashare_file_params file;
	__s32 sock;
	__u32 resv;
};

#define RDMASHARE_IOC_CONNECT	_IO(RDMASHARE_TYPE, RDMASHARE_CMD_CONNECT)

/* RDMASHARE_IOC_FILE_INFO flags */
#define RDMASHARE_INFO_TAKE_ERROR	(1U << 0)	/* clear @error: SO_ERROR */

/**
 * struct rdmashare_file_info - RDMASHARE_IOC_FILE_INFO, on an AC file
 * @size: sizeof(struct rdmashare_file_info)
 * @flags: RDMASHARE_INFO_*
 * @error: out: the error the AC closed with (-errno), or 0; with
 *	RDMASHARE_INFO_TAKE_ERROR it is cleared once read, as getsockopt(2)'s
 *	SO_ERROR clears a socket's, and EPOLLERR with it
 * @state: out: RDMASHARE_AC_STATE_* (CONNECTING while a non-blocking
 *	CONNECT is under way)
 * @local: out: this end's address (getsockname(2)): the address of the
 *	shared QP, with the service port for an accepted AC, the port of
 *	CONNECT's @sock for a connecting one (0 without); all 0 before the AC
 *	has a QP
 * @peer: out: the peer's address (getpeername(2)): with the service port
 *	for a connecting AC, the port the peer's CONNECT named for an
 *	accepted one (0 for none)
 * @rx_bytes: out: bytes a read(2) would return now (FIONREAD)
 * @tx_bytes: out: bytes written and not yet acknowledged (SIOCOUTQ)
 * @sndbuf: out: the send buffer's size now (SO_SNDBUF)
 * @cork: out: 1 while RDMASHARE_FILE_SET's cork holds writes (TCP_CORK)
 * @resv: must be 0
 * @rcvtimeo_us: out: RDMASHARE_FILE_SET's receive timeout (SO_RCVTIMEO),
 *	0 for none (RDMASHARE_FEAT_FILE_TIMEO)
 * @sndtimeo_us: out: its send timeout (SO_SNDTIMEO), 0 for none
 */
struct rdmashare_file_info {
	__u32 size;
	__u32 flags;
	__s32 error;
	__u32 state;
	struct rdmashare_addr local;
	struct rdmashare_addr peer;
	__u32 rx_bytes;
	__u32 tx_bytes;
	__u32 sndbuf;
	__u32 cork;
	__aligned_u64 resv;
	__aligned_u64 rcvtimeo_us;
	__aligned_u64 sndtimeo_us;
};

#define RDMASHARE_IOC_FILE_INFO	_IO(RDMASHARE_TYPE, RDMASHARE_CMD_FILE_INFO)

/* RDMASHARE_IOC_ACCEPT flags */
#define RDMASHARE_ACCEPT_NONBLOCK	(1U << 0)	/* -EAGAIN if none waits */
#define RDMASHARE_ACCEPT_FILE		(1U << 1)	/* give an AC file */

/**
 * struct rdmashare_accept - RDMASHARE_IOC_ACCEPT
 * @size: sizeof(struct rdmashare_accept)
 * @flags: RDMASHARE_ACCEPT_*
 * @listen_ac: a listening AC of this file
 * @timeout_ms: give up after this long (-ETIME), 0 for no limit
 * @ac: out: the new AC
 * @resv: must be 0
 * @peer: out: the connecting peer, with the port its CONNECT named (0 for
 *	none: RDMASHARE_CONNECT_PORT)
 * @file: with RDMASHARE_ACCEPT_FILE, which a listener with
 *	RDMASHARE_LISTEN_FILES needs and any other refuses (EINVAL): the AC
 *	file (in: its flags and send buffer; out: its descriptor), with the
 *	errors of CONNECT's; otherwise must be 0
 *
 * On a listening file (RDMASHARE_LISTEN_FD): @listen_ac must be 0, and
 * the answer is always an AC file (RDMASHARE_ACCEPT_FILE may be left out),
 * whose flags are @file.flags alone, as accept4(2)'s, never the listening
 * file's; @file.sndbuf must be 0 (the listening file's size is given);
 * @ac is 0.  It waits unless the listening file is O_NONBLOCK or
 * RDMASHARE_ACCEPT_NONBLOCK is given (-EAGAIN), and gets -ENOSPC while
 * max_files AC files of the listening file still exist.
 */
struct rdmashare_accept {
	__u32 size;
	__u32 flags;
	__u32 listen_ac;
	__u32 timeout_ms;
	__u32 ac;
	__u32 resv;
	struct rdmashare_addr peer;
	struct rdmashare_file_params file;
};

#define RDMASHARE_IOC_ACCEPT	_IO(RDMASHARE_TYPE, RDMASHARE_CMD_ACCEPT)

/* RDMASHARE_IOC_AC_SET flags: which fields to apply (at least one) */
#define RDMASHARE_AC_SET_WEIGHT		(1U << 0)
#define RDMASHARE_AC_SET_BAND		(1U << 1)

/* RDMASHARE_IOC_AC_SET ac: the file itself, i.e. the application */
#define RDMASHARE_AC_FILE		0xffffffffU

/* Scheduling bands of an AC */
#define RDMASHARE_BAND_LATENCY		0	/* first, bounded; CAP_NET_ADMIN */
#define RDMASHARE_BAND_NORMAL		1	/* the default */
#define RDMASHARE_BAND_BULK		2

/* Scheduling weights of ACs and applications; 1 is the default */
#define RDMASHARE_WEIGHT_MIN		1
#define RDMASHARE_WEIGHT_MAX		1000

/**
 * struct rdmashare_ac_set - RDMASHARE_IOC_AC_SET
 * @size: sizeof(struct rdmashare_ac_set)
 * @flags: RDMASHARE_AC_SET_*: the fields to apply
 * @ac: an AC of this file, or RDMASHARE_AC_FILE for the application's
 *	weight (shared by all its ACs against other applications)
 * @weight: RDMASHARE_WEIGHT_MIN to _MAX
 * @band: RDMASHARE_BAND_*; not for RDMASHARE_AC_FILE
 * @resv: must be 0
 *
 * Applies at once.  A listening AC passes its weight and band on to the
 * ACs it accepts.  Errors: EINVAL (no or unknown flags, weight or band out
 * of range, a band for the file, reserved), ENOENT (no such AC), EPERM (the
 * latency band without CAP_NET_ADMIN).
 */
struct rdmashare_ac_set {
	__u32 size;
	__u32 flags;
	__u32 ac;
	__u32 weight;
	__u32 band;
	__u32 resv;
};

#define RDMASHARE_IOC_AC_SET	_IO(RDMASHARE_TYPE, RDMASHARE_CMD_AC_SET)

/* RDMASHARE_IOC_AC_STATS state */
#define RDMASHARE_AC_STATE_LISTEN	0
#define RDMASHARE_AC_STATE_OPEN		1
#define RDMASHARE_AC_STATE_CLOSED	2
#define RDMASHARE_AC_STATE_CONNECTING	3

/* RDMASHARE_IOC_AC_STATS status bits */
#define RDMASHARE_AC_SHUT		(1U << 0)	/* SHUTDOWN or CLOSE queued */
#define RDMASHARE_AC_PEER_SHUT		(1U << 1)	/* the peer shut down */
#define RDMASHARE_AC_PEER_CLOSED	(1U << 2)	/* the peer closed */

/**
 * struct rdmashare_ac_stats - RDMASHARE_IOC_AC_STATS
 * @size: sizeof(struct rdmashare_ac_stats)
 * @flags: must be 0
 * @ac: an AC of this file
 * @state: out: RDMASHARE_AC_STATE_*
 * @status: out: RDMASHARE_AC_* bits
 * @weight: out: its scheduling weight
 * @band: out: its scheduling band
 * @port: out: the service port (listened on, or connected to)
 * @qp_num: out: the shared QP it rides, 0 for none
 * @send_credits: out: chunks it may send before the peer grants more
 * @rx_slots: out: receive slots set aside for it and not in use
 * @queued_ops: out: SEND, SHUTDOWN and CLOSE operations not sent yet
 * @resv0: reserved, must be 0
 * @resv1: reserved, must be 0
 * @queued_bytes: out: bytes of those SENDs not posted yet
 * @deficit: out: the scheduler's deficit: bytes it may send this turn
 * @tx_msgs: out: messages whose last chunk was posted
 * @tx_bytes: out: payload bytes posted
 * @tx_chunks: out: chunks posted
 * @rx_msgs: out: messages received whole
 * @rx_bytes: out: payload bytes received
 * @rx_chunks: out: chunks received
 * @credit_stalls: out: times it came to have data to send and no credit
 * @resv: reserved, must be 0
 *
 * A snapshot of one AC of the calling file; other files' ACs cannot be
 * named.  Counters start at 0 when the AC opens and stay after it closed,
 * until the application CLOSEs it.  Errors: EINVAL (flags, reserved),
 * ENOENT.
 */
struct rdmashare_ac_stats {
	__u32 size;
	__u32 flags;
	__u32 ac;
	__u32 state;
	__u32 status;
	__u32 weight;
	__u32 band;
	__u32 port;
	__u32 qp_num;
	__u32 send_credits;
	__u32 rx_slots;
	__u32 queued_ops;
	__u32 resv0;
	__u32 resv1;
	__aligned_u64 queued_bytes;
	__aligned_s64 deficit;
	__aligned_u64 tx_msgs;
	__aligned_u64 tx_bytes;
	__aligned_u64 tx_chunks;
	__aligned_u64 rx_msgs;
	__aligned_u64 rx_bytes;
	__aligned_u64 rx_chunks;
	__aligned_u64 credit_stalls;
	__aligned_u64 resv[4];
};

#define RDMASHARE_IOC_AC_STATS	_IO(RDMASHARE_TYPE, RDMASHARE_CMD_AC_STATS)

/* RDMASHARE_IOC_SHUTDOWN flags: shutdown(2)'s how; 0 is SHUT_WR */
#define RDMASHARE_SHUTDOWN_RD	(1U << 0)	/* reads end */
#define RDMASHARE_SHUTDOWN_WR	(1U << 1)	/* writes end, the peer's reads */

/**
 * struct rdmashare_shutdown - RDMASHARE_IOC_SHUTDOWN, on an AC file
 * @size: sizeof(struct rdmashare_shutdown)
 * @flags: RDMASHARE_SHUTDOWN_*: RD for SHUT_RD, WR (or 0) for SHUT_WR,
 *	both for SHUT_RDWR
 *
 * With RDMASHARE_SHUTDOWN_WR the AC file sends no more: what was written
 * goes out, then the peer's reads end.  Reading goes on; later writes fail
 * with EPIPE.  With RDMASHARE_SHUTDOWN_RD its reads end: a reader waiting
 * now and every later read return 0, what came and was not read is
 * dropped, and so is what comes later (its slots are not used; the peer,
 * which is not told, runs out of credits, as TCP's window closes).  A
 * second call does nothing.  Errors: EINVAL (flags), the AC's error or
 * EPIPE once it closed, ENOTTY on /dev/rdmashare (whose ACs shut down with
 * RDMASHARE_OP_SHUTDOWN).
 *
 * An AC file also takes RDMASHARE_IOC_AC_SET and RDMASHARE_IOC_AC_STATS,
 * for its own AC: their @ac must be 0 (AC_STATS returns the AC's id in the
 * file that made it), and AC_SET takes no RDMASHARE_AC_FILE.
 */
struct rdmashare_shutdown {
	__u32 size;
	__u32 flags;
};

#define RDMASHARE_IOC_SHUTDOWN	_IO(RDMASHARE_TYPE, RDMASHARE_CMD_SHUTDOWN)

/**
 * struct rdmashare_msg - RDMASHARE_IOC_SENDMSG and RDMASHARE_IOC_RECVMSG,
 *	on an AC file: sendmsg(2) and recvmsg(2) with their flags
 * @size: sizeof(struct rdmashare_msg)
 * @flags: must be 0
 * @iov: a struct iovec array (the caller's ABI's, as readv(2)'s)
 * @iovcnt: its entries, at most UIO_MAXIOV
 * @msg_flags: the MSG_* flags of <sys/socket.h> that a stream socket
 *	takes: MSG_DONTWAIT for this call alone, even behind another
 *	reader or writer; for RECVMSG MSG_PEEK (the bytes stay), MSG_WAITALL
 *	(until all came, the stream ended, an error or a signal) and
 *	MSG_CMSG_CLOEXEC (nothing to do); for SENDMSG MSG_NOSIGNAL (EPIPE
 *	without SIGPIPE), MSG_MORE (more follows: the bytes wait, to go with
 *	the next write's, until a write without it, a SHUTDOWN, the close or
 *	200 ms, as TCP_CORK's).  MSG_OOB, and MSG_TRUNC and MSG_ERRQUEUE for
 *	RECVMSG, MSG_FASTOPEN for SENDMSG: EOPNOTSUPP; others are ignored, as
 *	TCP ignores those it has no use for
 * @resv: must be 0
 *
 * The return value is the bytes moved, as read(2) and write(2) give them,
 * with their errors.
 */
struct rdmashare_msg {
	__u32 size;
	__u32 flags;
	__aligned_u64 iov;
	__u32 iovcnt;
	__u32 msg_flags;
	__aligned_u64 resv;
};

#define RDMASHARE_IOC_SENDMSG	_IO(RDMASHARE_TYPE, RDMASHARE_CMD_SENDMSG)
#define RDMASHARE_IOC_RECVMSG	_IO(RDMASHARE_TYPE, RDMASHARE_CMD_RECVMSG)

/* RDMASHARE_IOC_FILE_SET flags: which fields to apply (at least one) */
#define RDMASHARE_FILE_SET_SNDBUF	(1U << 0)
#define RDMASHARE_FILE_SET_CORK		(1U << 1)
#define RDMASHARE_FILE_SET_RCVTIMEO	(1U << 2)	/* RDMASHARE_FEAT_FILE_TIMEO */
#define RDMASHARE_FILE_SET_SNDTIMEO	(1U << 3)	/* RDMASHARE_FEAT_FILE_TIMEO */

/**
 * struct rdmashare_file_set - RDMASHARE_IOC_FILE_SET, on an AC file: the
 *	socket options that mean something to it
 * @size: sizeof(struct rdmashare_file_set)
 * @flags: RDMASHARE_FILE_SET_*
 * @sndbuf: with RDMASHARE_FILE_SET_SNDBUF, the send buffer wanted, bytes
 *	(SO_SNDBUF): rounded up to pages, at least one, at most the
 *	sndbuf_max tunable, and only as large as the maker's file area has
 *	room for; from then on the buffer keeps that size rather than grow
 *	with the stream.  Out: the size it has now (the old one if the area
 *	had no room; writes still queued finish in the old buffer)
 * @cork: with RDMASHARE_FILE_SET_CORK, 1: every write is held back as
 *	with MSG_MORE (TCP_CORK), 200 ms at most; 0: what is held goes now
 * @resv: must be 0
 * @rcvtimeo_us: with RDMASHARE_FILE_SET_RCVTIMEO, how long a blocking read
 *	waits for bytes (SO_RCVTIMEO): then it returns those it read, or
 *	fails with EAGAIN if none; 0: for as long as it takes.  A timeout
 *	longer than the kernel can wait is none.
 * @sndtimeo_us: with RDMASHARE_FILE_SET_SNDTIMEO, the same for a blocking
 *	write waiting for room in the send buffer (SO_SNDTIMEO)
 *
 * Errors: EINVAL (flags, resv, cork not 0 or 1, sndbuf 0), EBUSY (the
 * buffer is being changed already: its old one still has writes in
 * flight), ENOTTY on anything but an AC file.
 */
struct rdmashare_file_set {
	__u32 size;
	__u32 flags;
	__u32 sndbuf;
	__u32 cork;
	__aligned_u64 resv;
	__aligned_u64 rcvtimeo_us;
	__aligned_u64 sndtimeo_us;
};

#define RDMASHARE_IOC_FILE_SET	_IO(RDMASHARE_TYPE, RDMASHARE_CMD_FILE_SET)

#endif /* _UAPI_LINUX_RDMASHARE_H */

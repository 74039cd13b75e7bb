/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rs_kqp_floor: the kernel-QP floor of rdmashare's transport benchmark
 * (Documentation/benchmarks.rst).  A test-only module: two RC QPs of one
 * RDMA device, connected to each other through the in-kernel rdma_cm (as
 * every tool of the benchmark connects, a loopback over rxe), ping-pong or
 * stream messages with nothing else on the path.
 *
 * One end (ep[0], the one that connects) runs in the thread that wrote the
 * command to debugfs (main.c), the other (ep[1], the one that accepts) in
 * a kernel thread.  Each QP has a CQ for its sends and one for its
 * receives.  A thread waits for a completion the way a kernel ULP can:
 * KQP_SLEEP polls the CQ and, when it is empty, arms it and sleeps until
 * the CQ's completion event wakes it (the event handler does nothing else);
 * KQP_POLL polls the CQ in a loop, giving the CPU up only when the
 * scheduler asks (cond_resched()).
 *
 * Receives are posted before the connection is up and reposted as they
 * complete; every N-th send is signalled (N = half the send window), so
 * that the send CQ retires the SQ without a completion per message.
 * Messages of up to KQP_INLINE_MAX bytes are sent inline when the device
 * takes them so.  Every message carries its sequence number in its first
 * 8 bytes, and the receiver checks it.
 */
#ifndef _RS_KQP_H
#define _RS_KQP_H

#include <linux/completion.h>
#include <linux/socket.h>
#include <linux/wait.h>

#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

/* Completions polled at a time (a stream's receiver). */
#define KQP_BATCH		16
/* The largest message sent inline, if the device allows it. */
#define KQP_INLINE_MAX		256
/* Each step of the connection, and each wait for a completion. */
#define KQP_CM_TIMEOUT_MS	5000
#define KQP_WAIT_MS		10000

enum kqp_kind {
	KQP_PINGPONG,
	KQP_STREAM,
};

enum kqp_wait {
	KQP_SLEEP,
	KQP_POLL,
};

/* A command (main.c parses it). */
struct kqp_params {
	enum kqp_kind kind;
	enum kqp_wait wait;
	struct sockaddr_storage addr;	/* listen on it, connect to it */
	u32 size;			/* bytes per message */
	u32 count;			/* round trips, or messages */
	u32 window;			/* sends not known complete, at most */
	u32 rx;				/* receives posted */
};

/* A message buffer, mapped for the device. */
struct kqp_buf {
	void *data;
	u64 dma;
};

struct kqp_ep;

/* A CQ, and whether its completion event came since it was armed. */
struct kqp_cq {
	struct kqp_ep *ep;
	struct ib_cq *cq;
	bool event;
};

struct kqp_run;

/* One end: its rdma_cm id, QP, CQs and buffers. */
struct kqp_ep {
	struct kqp_run *run;
	struct rdma_cm_id *id;
	struct ib_pd *pd;
	struct kqp_cq scq;		/* sends */
	struct kqp_cq rcq;		/* receives */
	wait_queue_head_t wq;		/* a sleeping waiter */
	struct completion established;	/* or cm_error */
	int cm_error;
	bool closing;			/* handlers do nothing (handler lock) */
	bool inline_data;		/* sends go inline */
	u32 nr_tx, nr_rx;		/* buffers */
	struct kqp_buf *tx, *rx;
	u32 posted;			/* sends posted */
	u32 done;			/* sends known complete */
	u32 signal;			/* every signal-th send is signalled */
	struct ib_wc wc[KQP_BATCH];
	struct ib_recv_wr rwr[KQP_BATCH];
	struct ib_sge rsge[KQP_BATCH];
};

struct kqp_run {
	struct kqp_params p;
	struct rdma_cm_id *listen;
	struct kqp_ep ep[2];		/* [0] connects, [1] accepts */
	bool abort;
	struct completion peer_ready;	/* ep[1]'s thread runs */
	struct completion peer_done;	/* ep[1]'s thread has done its part */
	int error;			/* the first error (kqp_abort()) */
	const char *stage;		/* where it happened */
	/* Ping-pong: each round trip, ns */
	u32 *rtt;
	/* Stream, at the receiver: messages, bytes, first and last (ns) */
	u64 msgs, bytes, t_first, t_last;
};

/* cm.c */
int kqp_connect(struct kqp_run *run);
void kqp_disconnect(struct kqp_run *run);
void kqp_abort(struct kqp_run *run, int error);

/* run.c */
int kqp_measure(struct kqp_run *run);
int kqp_post_recvs(struct kqp_ep *ep, const u32 *idx, int n);

#endif /* _RS_KQP_H */

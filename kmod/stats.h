/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: counters of an RDMA device and of a peer, read in sysfs
 * (devices/<ibdev>/stats/, peers/<addr>/stats/).  Pure code, no ib_core.
 */
#ifndef _RDMASHARE_STATS_H
#define _RDMASHARE_STATS_H

#include <linux/percpu.h>
#include <linux/types.h>
#include <linux/u64_stats_sync.h>

enum rs_stat {
	RS_STAT_TX_MSGS,	/* messages whose last chunk was posted */
	RS_STAT_TX_BYTES,	/* payload bytes posted */
	RS_STAT_TX_CHUNKS,	/* DATA messages posted */
	RS_STAT_RX_MSGS,	/* messages received whole */
	RS_STAT_RX_BYTES,	/* payload bytes received */
	RS_STAT_RX_CHUNKS,	/* DATA messages received */
	RS_STAT_CTRL_TX,	/* control messages posted */
	RS_STAT_CTRL_RX,	/* control messages received */
	RS_STAT_CREDIT_STALLS,	/* an AC came to have data and no credit */
	RS_STAT_ERRORS,		/* failed sends and receives, protocol errors */
	RS_STAT_QPS_UP,		/* QPs set up */
	RS_STAT_QPS_LOST,	/* QPs that went down with ACs on them */
	RS_STAT_RECONNECTS,	/* QPs set up to replace a lost one */
	RS_STAT_SRQ_REFILLS,	/* receive buffers posted again (devices) */
	RS_STAT_SRQ_LOW,	/* times the posted buffers fell to a quarter */
	RS_STAT_SRQ_RENEWALS,	/* SRQ made anew, every buffer posted (devices) */
	RS_STAT_TX_SENDS,	/* SENDs (work requests) posted: records in batches */
	RS_STAT_RX_SENDS,	/* SENDs received */
	RS_STAT_TX_WIRE_BYTES,	/* bytes of the SENDs posted: their fill */
	RS_STAT_TX_COPIED,	/* payload bytes the kernel copied to send them */
	RS_STAT_RX_COPIED,	/* payload bytes the kernel copied into slots */
	RS_STAT_SQ_POLLED,	/* SQEs a SEND's completion consumed: no ENTER */
	RS_STAT_TX_PLACED,	/* payload bytes written into the peer's slots */
	RS_STAT_BUSY_POLLED,	/* completions a waiting thread polled itself */
	RS_STAT_TX_WRITES,	/* RDMA WRITEs posted: placed chunks, joined */
	RS_STAT_RX_WRITES,	/* WRITE WITH IMMEDIATEs received: chunks, no SEND */
	RS_STAT_BULK_HELD,	/* times a large chunk waited for small messages */
	RS_STAT_TX_ZCOPY,	/* bytes AC file writes sent from their own pages */
	RS_STAT_WRITE_COPIED,	/* bytes AC file writes copied to send buffers */
	RS_STAT_READ_COPIED,	/* bytes AC file reads copied out of slots */
	RS_STAT_RX_ZCOPY,	/* bytes AC file reads got in their own pages */
	RS_STAT_SLEEP_POLLED,	/* completions a woken waiter polled itself */
	RS_STAT_TX_APPENDED,	/* AC file writes appended to a message not sent */
	RS_STAT_GATE_HELD,	/* times a QP waited for the peer's others (gate.h) */
	RS_STAT_NR
};

/*
 * Per CPU, so that the data path, which counts every chunk for its peer and
 * its device, shares no cache line with other QPs; a read adds them up.
 */
struct rs_stats_cpu {
	u64_stats_t v[RS_STAT_NR];
	struct u64_stats_sync syncp;
};

struct rs_stats {
	struct rs_stats_cpu __percpu *cpu;
};

static inline int rs_stats_init(struct rs_stats *s)
{
	int cpu;

	s->cpu = alloc_percpu(struct rs_stats_cpu);
	if (!s->cpu)
		return -ENOMEM;
	for_each_possible_cpu(cpu)
		u64_stats_init(&per_cpu_ptr(s->cpu, cpu)->syncp);
	return 0;
}

static inline void rs_stats_free(struct rs_stats *s)
{
	free_percpu(s->cpu);
	s->cpu = NULL;
}

/*
 * Process context only (the sender, the CQs' work items, rdma_cm handlers):
 * no update interrupts another on the same CPU.
 */
static inline void rs_stat_add(struct rs_stats *s, enum rs_stat i, u64 n)
{
	struct rs_stats_cpu *c = get_cpu_ptr(s->cpu);

	u64_stats_update_begin(&c->syncp);
	u64_stats_add(&c->v[i], n);
	u64_stats_update_end(&c->syncp);
	put_cpu_ptr(s->cpu);
}

static inline u64 rs_stat_read(const struct rs_stats *s, enum rs_stat i)
{
	const struct rs_stats_cpu *c;
	unsigned int start;
	u64 sum = 0, v;
	int cpu;

	for_each_possible_cpu(cpu) {
		c = per_cpu_ptr(s->cpu, cpu);
		do {
			start = u64_stats_fetch_begin(&c->syncp);
			v = u64_stats_read(&c->v[i]);
		} while (u64_stats_fetch_retry(&c->syncp, start));
		sum += v;
	}
	return sum;
}

#endif /* _RDMASHARE_STATS_H */

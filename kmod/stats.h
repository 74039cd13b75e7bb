/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: counters of an RDMA device and of a peer, read in sysfs
 * (devices/<ibdev>/stats/, peers/<addr>/stats/).  Pure code, no ib_core.
 */
#ifndef _RDMASHARE_STATS_H
#define _RDMASHARE_STATS_H

#include <linux/atomic.h>
#include <linux/types.h>

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
	RS_STAT_NR
};

struct rs_stats {
	atomic64_t v[RS_STAT_NR];
};

static inline void rs_stat_add(struct rs_stats *s, enum rs_stat i, u64 n)
{
	atomic64_add(n, &s->v[i]);
}

static inline u64 rs_stat_read(const struct rs_stats *s, enum rs_stat i)
{
	return atomic64_read(&s->v[i]);
}

#endif /* _RDMASHARE_STATS_H */

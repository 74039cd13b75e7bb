// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: runtime tunables, one value per file in
 * /sys/class/misc/rdmashare/ (Documentation/ABI/testing/
 * sysfs-class-misc-rdmashare).  Root writes them; a write that is not a
 * number in the tunable's range fails with -EINVAL and changes nothing.
 * Readers use READ_ONCE(): a value may change at any time, and each user
 * says when a change takes effect.
 */
#include <linux/device.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/sizes.h>
#include <linux/sysfs.h>

#include "proto.h"
#include "rdmashare.h"
#include "sched.h"

/* Shared QPs to open to each peer. */
unsigned int rs_qps_per_peer = 1;
/* The newest protocol version this host offers a peer (cm.c). */
unsigned int rs_proto_version = RS_PROTO_VERSION;
/* A QP without ACs for this long is disconnected, ms; 0: never. */
unsigned int rs_idle_timeout_ms = 60000;
/* ACs (listening, connecting, open, accepted) one file may hold. */
unsigned int rs_max_acs_per_file = 65536;
/* The scheduler (sched.h): bytes per turn per unit of weight. */
unsigned int rs_sched_quantum;		/* rs_tunables_init() */
/* The latency band's bytes per turn of a weighted band. */
unsigned int rs_sched_latency_quantum = 65536;
/* Flat (per-AC) fairness instead of per application, then per AC. */
bool rs_sched_flat;
/* Bytes of a message per chunk on the wire, up to max_chunk_size. */
unsigned int rs_tx_chunk;		/* rs_tunables_init() */
/* Chunks up to this size share a SEND with other records; 0: never. */
unsigned int rs_coalesce_max = 4096;
/* Chunks up to this size are copied to a TX buffer, larger ones sent in place. */
unsigned int rs_pullup_max = 4096;
/* While a SEND is in flight, let the next one fill up (sender.c). */
unsigned int rs_autocork = 1;
/* A thread waiting in ENTER polls its QP's CQ this long first, us; 0: never. */
unsigned int rs_busy_poll_us;
/*
 * A thread that sleeps in ENTER answers its QP's next completion event
 * itself; the work item takes over if it has not polled within this, us;
 * 0: events always go to the work item.  Off by default: see
 * Documentation/benchmarks-history.rst, "Sleep polling".
 */
unsigned int rs_sleep_poll_us;
/* Bytes of SENDs in flight per QP past which no more are posted. */
unsigned int rs_inflight_max = SZ_128K;
/*
 * While small messages go on a QP, no large chunk is taken while the QP has
 * what it drains in this long in flight, us; 0: inflight_max holds them.
 */
unsigned int rs_bulk_delay_us = 250;
/* Interleave the chunks of different ACs; 0: a message goes out whole. */
unsigned int rs_split = 1;
/* Receive slots a new AC opens with (its fixed window before version 3). */
unsigned int rs_credits_per_ac = 4;
/* Sends in flight per shared QP: its send queue and TX buffers. */
unsigned int rs_send_depth = 64;
/* Largest data area a file may ask for in SETUP, bytes. */
unsigned int rs_data_size_max = RS_DATA_SIZE_LIMIT;
/* Receive buffers posted to each RDMA device's SRQ. */
unsigned int rs_srq_size = 512;
/* Entries of each QP's CQ; 0: what the QP needs (rs_qp_create_ib()). */
unsigned int rs_cq_depth;
/* A QP that carries ACs probes its peer this often, ms; 0: never. */
unsigned int rs_keepalive_ms = 2000;
/* How long a CONNECT that gives no timeout waits, ms. */
unsigned int rs_connect_timeout_ms = 10000;
/* How long a closed AC file's unsent data may wait to go out, ms. */
unsigned int rs_linger_ms = 60000;
/* The largest an AC file's send buffer grows to, or SO_SNDBUF makes it. */
unsigned int rs_sndbuf_max = SZ_4M;
/* AC file writes of at least this many bytes go from the writer's pages; 0: never. */
unsigned int rs_zcopy_min = SZ_256K;
/* The largest backlog a LISTEN may ask for. */
unsigned int rs_backlog_max = 1024;
/* QPs to one peer, either side's (passive ones past it are rejected). */
unsigned int rs_max_qps_per_peer = 2 * RS_QPS_PER_PEER_MAX;
/* QPs to all peers together. */
unsigned int rs_max_qps = 4096;
/* Ports one user may listen on, all files together. */
unsigned int rs_max_listeners_per_user = 1024;
/* ACs (of every kind) one user may hold, all files together. */
unsigned int rs_max_acs_per_user = 65536;

/* Defaults that depend on load-time parameters (rs_params_check()). */
void rs_tunables_init(void)
{
	rs_tx_chunk = rs_chunk_size;
	rs_sched_quantum = rs_chunk_size + RS_HDR_LEN;
}

/* A quantum below the largest chunk on the wire would break the weights. */
static bool rs_quantum_ok(unsigned int v)
{
	return v >= rs_chunk_size + RS_HDR_LEN;
}

static bool rs_tx_chunk_ok(unsigned int v)
{
	return v <= rs_chunk_size;
}

/* Whole pages, and room for what a file gets by default. */
static bool rs_data_size_max_ok(unsigned int v)
{
	return PAGE_ALIGNED(v) && v >= rs_data_size_default;
}

/*
 * Never below what a QP set up now needs: a CQ that overflows takes its QP
 * down.  A QP still gets what it needs if send_depth or srq_size grow.
 */
static bool rs_cq_depth_ok(unsigned int v)
{
	return !v || v >= READ_ONCE(rs_send_depth) * RS_TX_WRS_MAX + 1 + READ_ONCE(rs_srq_size);
}

static const char * const rs_sched_modes[] = { "app", "flat", NULL };

struct rs_tunable {
	struct device_attribute attr;
	unsigned int *val;
	unsigned int min;
	unsigned int max;
	bool (*valid)(unsigned int v);
	void (*changed)(void);
};

#define to_rs_tunable(a) container_of(a, struct rs_tunable, attr)

static ssize_t rs_tunable_show(struct device *dev, struct device_attribute *attr,
			       char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(*to_rs_tunable(attr)->val));
}

static ssize_t rs_tunable_store(struct device *dev, struct device_attribute *attr,
				const char *buf, size_t count)
{
	struct rs_tunable *t = to_rs_tunable(attr);
	unsigned int v;

	/* kstrtouint() takes one trailing newline and nothing else. */
	if (kstrtouint(buf, 0, &v) || v < t->min || v > t->max ||
	    (t->valid && !t->valid(v)))
		return -EINVAL;
	WRITE_ONCE(*t->val, v);
	if (t->changed)
		t->changed();
	return count;
}

#define RS_TUNABLE_CHECKED(_name, _var, _min, _max, _valid, _changed)	\
	static struct rs_tunable rs_tunable_##_name = {			\
		.attr = __ATTR(_name, 0644, rs_tunable_show,		\
			       rs_tunable_store),			\
		.val = &(_var),						\
		.min = (_min),						\
		.max = (_max),						\
		.valid = (_valid),					\
		.changed = (_changed),					\
	}
#define RS_TUNABLE(_name, _var, _min, _max, _changed)			\
	RS_TUNABLE_CHECKED(_name, _var, _min, _max, NULL, _changed)

/* Applies to ACs connected after the write. */
RS_TUNABLE(qps_per_peer, rs_qps_per_peer, 1, RS_QPS_PER_PEER_MAX, NULL);
/* Applies to QPs set up after the write; those up keep their version. */
RS_TUNABLE(proto_version, rs_proto_version, RS_PROTO_VERSION_MIN, RS_PROTO_VERSION, NULL);
/* Applies at once: every idle QP's timer restarts with the new value. */
RS_TUNABLE(idle_timeout_ms, rs_idle_timeout_ms, 0, 24 * 3600 * 1000, rs_peers_idle_changed);

/* Applies to new ACs; a file over a lowered limit keeps its ACs. */
RS_TUNABLE(max_acs_per_file, rs_max_acs_per_file, 1, RS_MAX_ACS_PER_FILE_LIMIT, NULL);

/* Apply at once, to every QP. */
RS_TUNABLE_CHECKED(sched_quantum, rs_sched_quantum, RS_SCHED_QUANTUM_MIN,
		   RS_SCHED_QUANTUM_MAX, rs_quantum_ok, rs_qps_sched_changed);
RS_TUNABLE(sched_latency_quantum, rs_sched_latency_quantum, RS_SCHED_QUANTUM_MIN,
	   RS_SCHED_QUANTUM_MAX, rs_qps_sched_changed);

 /* Apply to the next chunk the sender takes. */
RS_TUNABLE_CHECKED(chunk_size, rs_tx_chunk, 64, RS_PROTO_MAX_CHUNK, rs_tx_chunk_ok, NULL);
RS_TUNABLE(split, rs_split, 0, 1, rs_qps_sched_changed);
RS_TUNABLE(coalesce_max, rs_coalesce_max, 0, RS_PROTO_MAX_CHUNK, NULL);
RS_TUNABLE(pullup_max, rs_pullup_max, 0, RS_PROTO_MAX_CHUNK, NULL);
/* Apply to the next SEND the sender posts. */
RS_TUNABLE(autocork, rs_autocork, 0, 1, NULL);
RS_TUNABLE(inflight_max, rs_inflight_max, 1, SZ_1G, NULL);
RS_TUNABLE(bulk_delay_us, rs_bulk_delay_us, 0, RS_BULK_DELAY_US_MAX, NULL);
/* Applies to the next wait in ENTER. */
RS_TUNABLE(busy_poll_us, rs_busy_poll_us, 0, RS_BUSY_POLL_US_MAX, NULL);
RS_TUNABLE(sleep_poll_us, rs_sleep_poll_us, 0, RS_SLEEP_POLL_US_MAX, NULL);
/* Applies to ACs opened after the write. */
RS_TUNABLE(credits_per_ac, rs_credits_per_ac, 1, RS_PROTO_MAX_CREDITS, NULL);
/* Applies to QPs set up after the write. */
RS_TUNABLE(send_depth, rs_send_depth, 1, 4096, NULL);
/* Applies to SETUPs after the write; set-up files keep their areas. */
RS_TUNABLE_CHECKED(max_data_size, rs_data_size_max, PAGE_SIZE, RS_DATA_SIZE_LIMIT,
		   rs_data_size_max_ok, NULL);
/* Applies to RDMA devices added after the write (devices/<ibdev>/srq_size). */
RS_TUNABLE(srq_size, rs_srq_size, 16, 65536, NULL);
/* Applies at once: every QP up probes with the new period from now on. */
RS_TUNABLE(keepalive_ms, rs_keepalive_ms, 0, 3600 * 1000, rs_peers_keepalive_changed);
/* Apply to CONNECTs and LISTENs after the write. */
RS_TUNABLE(connect_timeout_ms, rs_connect_timeout_ms, 1, 3600 * 1000, NULL);
/* Applies to AC files closed after the write. */
RS_TUNABLE(linger_ms, rs_linger_ms, 1, 3600 * 1000, NULL);
/* Applies to the next growth or RDMASHARE_IOC_FILE_SET; bigger buffers stay. */
RS_TUNABLE(sndbuf_max, rs_sndbuf_max, PAGE_SIZE, RS_DATA_SIZE_LIMIT, NULL);
/* Applies to AC file writes after the write. */
RS_TUNABLE(zcopy_min, rs_zcopy_min, 0, INT_MAX, NULL);
RS_TUNABLE(max_backlog, rs_backlog_max, 1, RS_MAX_ACS_PER_FILE_LIMIT, NULL);
/* Apply to QPs set up after the write; QPs over a lowered limit stay. */
RS_TUNABLE(max_qps_per_peer, rs_max_qps_per_peer, 1, 1024, NULL);
RS_TUNABLE(max_qps, rs_max_qps, 1, 1 << 20, NULL);
/* Apply to LISTENs and new ACs after the write; what is held stays. */
RS_TUNABLE(max_listeners_per_user, rs_max_listeners_per_user, 0, 65535, NULL);
RS_TUNABLE(max_acs_per_user, rs_max_acs_per_user, 1, 1 << 24, NULL);
/* Applies to QPs set up after the write. */
RS_TUNABLE_CHECKED(cq_depth, rs_cq_depth, 0, RS_CQ_DEPTH_MAX, rs_cq_depth_ok, NULL);

/* sched_mode: "app" (per application, then per AC) or "flat" (per AC). */
static ssize_t sched_mode_show(struct device *dev, struct device_attribute *attr,
			       char *buf)
{
	return sysfs_emit(buf, "%s\n", READ_ONCE(rs_sched_flat) ? "flat" : "app");
}

static ssize_t sched_mode_store(struct device *dev, struct device_attribute *attr,
				const char *buf, size_t count)
{
	int i = sysfs_match_string(rs_sched_modes, buf);

	if (i < 0)
		return -EINVAL;
	WRITE_ONCE(rs_sched_flat, i == 1);
	rs_qps_sched_changed();
	return count;
}
static DEVICE_ATTR_RW(sched_mode);

static struct attribute *rs_tunable_attrs[] = {
	&rs_tunable_qps_per_peer.attr.attr,
	&rs_tunable_proto_version.attr.attr,
	&rs_tunable_idle_timeout_ms.attr.attr,
	&rs_tunable_max_acs_per_file.attr.attr,
	&rs_tunable_sched_quantum.attr.attr,
	&rs_tunable_sched_latency_quantum.attr.attr,
	&dev_attr_sched_mode.attr,
	&rs_tunable_chunk_size.attr.attr,
	&rs_tunable_split.attr.attr,
	&rs_tunable_coalesce_max.attr.attr,
	&rs_tunable_pullup_max.attr.attr,
	&rs_tunable_autocork.attr.attr,
	&rs_tunable_inflight_max.attr.attr,
	&rs_tunable_bulk_delay_us.attr.attr,
	&rs_tunable_busy_poll_us.attr.attr,
	&rs_tunable_sleep_poll_us.attr.attr,
	&rs_tunable_credits_per_ac.attr.attr,
	&rs_tunable_send_depth.attr.attr,
	&rs_tunable_max_data_size.attr.attr,
	&rs_tunable_srq_size.attr.attr,
	&rs_tunable_cq_depth.attr.attr,
	&rs_tunable_keepalive_ms.attr.attr,
	&rs_tunable_connect_timeout_ms.attr.attr,
	&rs_tunable_linger_ms.attr.attr,
	&rs_tunable_sndbuf_max.attr.attr,
	&rs_tunable_zcopy_min.attr.attr,
	&rs_tunable_max_backlog.attr.attr,
	&rs_tunable_max_qps_per_peer.attr.attr,
	&rs_tunable_max_qps.attr.attr,
	&rs_tunable_max_listeners_per_user.attr.attr,
	&rs_tunable_max_acs_per_user.attr.attr,
	NULL,
};

const struct attribute_group rs_tunables_group = {
	.attrs = rs_tunable_attrs,
};

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: the shared transport.  Objects and their locking:
 *
 *   rs_device   one per RDMA device (device.c): PD, SRQ and its receive
 *               buffers
 *   rs_peer     one per remote address (peer.c): its shared QPs
 *   rs_qp       one shared RC QP (qp.c, cm.c, sender.c): its CQ, TX buffers,
 *               the scheduler of the ACs pinned to it
 *   rs_ac       one end of an abstract connection (ac.c), owned by a file
 *
 * Locks, outermost first: rs_peers_lock (mutex) > rs_peer.qps_lock (mutex)
 * > rs_file.submit_lock (mutex) > rs_file.ac_lock (mutex) > rs_file.rx_lock
 * (spinlock) > rs_qp.lock (spinlock) > rs_file.cq_lock.  RS_XMIT_BUSY, a bit
 * lock, is taken under submit_lock (an ENTER that posts) and outside
 * rs_qp.lock; its holder takes a file's submit_lock only by trylock
 * (rs_sq_poll()), as a completion handler does.
 * Completion handlers run in process context (IB_POLL_WORKQUEUE).
 */
#ifndef _RDMASHARE_TRANSPORT_H
#define _RDMASHARE_TRANSPORT_H

#include <linux/hrtimer.h>
#include <linux/kref.h>
#include <linux/socket.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "drain.h"
#include "gate.h"
#include "laddr.h"
#include "proto.h"
#include "rdmashare.h"
#include "sched.h"

struct rs_ac;
struct rs_qp;
struct rs_sink;
struct seq_file;

/* A receive buffer posted to a device's SRQ. */
struct rs_rx_buf {
	struct ib_cqe cqe;
	struct rs_device *rdev;
	void *buf;
	u64 dma;
};

/* What one record of a SEND holds on to until the SEND completes. */
struct rs_tx_item {
	struct rs_ac *ac;		/* reference held while posted */
	struct rs_send *op;		/* completed by this SEND, or NULL */
	struct rs_zc *zc;		/* the pages its chunk is in (zcopy.c) */
};

/* Records one SEND carries at most (version 2; version 1: one). */
#define RS_TX_BATCH_MAX		64

/*
 * SGEs one SEND takes at most: the header, a payload in place (a page
 * each), the padding.  With 4 KiB pages a 16 KiB chunk takes 5 pages; a
 * chunk that needs more than the QP takes is copied.
 */
#define RS_TX_MAX_SGE		16

/* rs_dma_map.rx_state: the receive slots' memory region (memreg.c) */
enum rs_rx_mr_state {
	RS_RX_MR_NONE,		/* not registered yet */
	RS_RX_MR_POSTED,	/* its registration rides with a SEND */
	RS_RX_MR_VALID,		/* registered: any QP may name it */
	RS_RX_MR_FAILED,	/* the registration failed: never named */
};

/**
 * struct rs_dma_map - a file's data area mapped for a device (memreg.c)
 * @file_node: in rs_file.dma_maps
 * @dev_node: in rs_device.dma_maps while @rdev is set
 * @rdev: the device; NULL once it went (and the pages were unmapped)
 * @dma: the DMA address of each page of the data area
 * @nr_pages: pages mapped
 * @dir: how the device uses the pages: DMA_BIDIRECTIONAL for a data area,
 *	DMA_TO_DEVICE for a write's own pages (zcopy.c)
 * @rx_off: where the receive slots start in the data area
 * @rx_len: bytes of the receive slots
 * @rx_mr: version 4: a memory region over the receive slots, zero based,
 *	that peers may write chunks into; NULL if the device has none for it
 * @rx_lock: @rx_state and @rx_reg_qp, nested inside a QP's lock
 * @rx_state: RS_RX_MR_*
 * @rx_reg_qp: while RS_RX_MR_POSTED, the QP whose SEND registers it (no
 *	reference: only compared)
 */
struct rs_dma_map {
	struct list_head file_node;
	struct list_head dev_node;
	struct rs_device *rdev;
	u64 *dma;
	unsigned long nr_pages;
	enum dma_data_direction dir;
	u64 rx_off;
	u64 rx_len;
	struct ib_mr *rx_mr;
	spinlock_t rx_lock;		/* see above */
	enum rs_rx_mr_state rx_state;
	const struct rs_qp *rx_reg_qp;
};

/* A chunk written into a receive slot of the peer, ahead of its record. */
struct rs_tx_write {
	const struct rs_dma_map *map;	/* from here, */
	u64 off;			/* at this offset of the data area, */
	u32 len;			/* this many bytes */
	u32 rkey;			/* to the peer's slots, */
	u64 raddr;			/* at this offset */
};

/*
 * What the sender (the holder of RS_XMIT_BUSY) builds the work requests of
 * one SEND in: its registrations and WRITEs, chained before it.
 */
struct rs_tx_wrs {
	struct ib_reg_wr reg[RS_TX_MAX_REGS];
	struct ib_reg_wr sink_reg;
	struct ib_rdma_wr write[RS_TX_MAX_WRITES];
	struct ib_sge write_sge[RS_TX_MAX_WRITES][RS_TX_MAX_SGE];
	struct ib_sge sge[RS_TX_MAX_SGE];
	struct ib_send_wr send;
};

/*
 * A TX buffer and the SEND built in it: @len bytes of records so far;
 * @closed once nothing more may join (full, or a unit that goes alone);
 * @urgent once it holds a control record (credits, CONNECT, ACCEPT, CLOSE,
 * REJECT), which autocork does not hold back.  A chunk sent in place (zero
 * copy) goes alone: the buffer holds its header and padding, and the
 * @zc_len bytes of payload are read from @zc_off of the data area through
 * @zc_map; @len counts them all.  Version 4: a chunk placed in the peer's
 * slot joins the SEND as its record, the WRITE of its payload (@writes,
 * @placed_bytes in all) goes before it; so do the registrations of the
 * receive slots whose rkey its CONNECTs and ACCEPTs name (@regs).
 * @err_cqe is those work requests', which complete only if they fail.
 * Version 5: a placed chunk that continues a message and goes alone is a
 * WRITE WITH IMMEDIATE (@imm_conn, the peer's id of its AC) and no SEND:
 * @len is 0, @writes holds it.
 */
struct rs_tx {
	struct ib_cqe cqe;
	struct ib_cqe err_cqe;
	struct rs_qp *qp;
	void *buf;
	u64 dma;
	u32 len;
	bool closed;
	bool urgent;
	const struct rs_dma_map *zc_map;
	u64 zc_off;
	u32 zc_len;
	u32 placed_bytes;
	u32 imm_conn;
	u32 nr_writes;
	struct rs_tx_write writes[RS_TX_MAX_WRITES];
	u32 nr_regs;
	struct rs_dma_map *regs[RS_TX_MAX_REGS];
	struct rs_sink *sink_reg;
	u32 nr_items;
	struct rs_tx_item items[RS_TX_BATCH_MAX];
	/*
	 * The last DATA record, if small AC-file writes may be appended to it
	 * (a whole message of @tail_ac, copied): at @tail_off, @tail_m its
	 * header.
	 */
	struct rs_ac *tail_ac;
	u32 tail_off;
	struct rs_proto_msg tail_m;
};

/* rs_qp.xmit_flags */
enum {
	RS_XMIT_BUSY,		/* someone is the sender (rs_qp_push()) */
	RS_XMIT_PENDING,	/* work was queued since the sender looked */
};

enum rs_qp_state {
	RS_QP_CONNECTING,
	RS_QP_UP,
	RS_QP_DOWN,
};

/**
 * struct rs_qp - one shared RC QP towards a peer
 * @ref: references: the peer's list, each pinned AC, each posted TX
 * @peer: the peer (reference held)
 * @local: this end's address, set once before the QP is up
 * @rdev: the device, once known (reference held: it may be removed first)
 * @cm_id: the rdma_cm id; destroyed by the teardown work, or by rdma_cm
 *	when the device goes while the QP connects (cleared then)
 * @qp: the QP, once created
 * @qp_num: its number, kept after it is destroyed
 * @cq: completions of its sends and of the receives it took from the SRQ
 *	(poll.c)
 * @cq_size: entries of @cq
 * @poll_id: @cq's id in poll.c's table, by which a busy poller finds it
 * @poll_state: RS_CQ_* bits (poll.c): who polls @cq
 * @poll_lock: orders a busy poller's queueing of @poll_work before the
 *	teardown's cancelling it
 * @poll_work: polls @cq after the device's completion event
 * @poll_sleeper: a thread sleeping in ENTER or in an AC file's read or
 *	write that answers @cq's next event itself (poll.c), or NULL
 * @poll_timer: queues @poll_work if that thread has not polled in time
 * @wcs: the work completions a poll fetches
 * @send_depth: SENDs in flight at most (the send queue, less the drain WR)
 * @max_send_sge: SGEs a SEND may take (RS_TX_MAX_SGE at most)
 * @active: this host initiated the connection
 * @version: the protocol version negotiated with the peer (proto.h), set
 *	before the QP can receive
 * @peer_rx_size: version 2: the peer's receive buffer size, which bounds a
 *	SEND
 * @loop: passive end of a connection from this host to itself: it carries
 *	only the accepting ends of ACs, so that a host that talks to itself
 *	has rs_qps_per_peer QPs each way, as two hosts would
 * @state: RS_QP_*, under @lock; waiters on @wait
 * @error: why the QP went down
 * @wait: woken on state changes
 * @lock: the send side: scheduler, control queue, TX buffers, @acs
 * @sched: ACs with data and credits
 * @gm: the QP in its peer's gate (under the peer's gate_lock)
 * @last_rf: the file the last CONNECT that chose the QP came from
 *	(rs_qp_choose(); compared, never followed), under rs_peers_lock
 * @ctrl: ACs with a control message to send (rs_ac.ctrl_node)
 * @rejects: REJECTs and CLOSEs owed to the peer for ACs this host lacks
 *	(rs_reject.node); @nr_rejects of them for what the peer sent, at most
 *	RS_MAX_REJECTS
 * @tx: TX buffers; @tx_free lists the free ones (a stack of indices)
 * @tx_inflight: SENDs posted and not completed; @tx_inflight_bytes their
 *	bytes, with those of the chunks they placed
 * @wrs: the work requests the sender builds a SEND in
 * @xmit_flags: RS_XMIT_*: whoever holds RS_XMIT_BUSY is the sender, which
 *	alone builds and posts SENDs on this QP (sender.c)
 * @tx_open: the SEND being built, not posted yet; only the sender touches
 *	it, or the teardown once it took RS_XMIT_BUSY for good
 * @send_work: runs the sender when the caller that found work could not
 *	(its budget ran out, or it may not post)
 * @keepalive: probes the peer while ACs use the QP, so that a peer that
 *	vanished is found (the probe's retries run out) even when every AC
 *	waits for credits and nothing else is in flight
 * @ping_pending: a probe is to be sent
 * @down_work: fails the pinned ACs and tears the QP down
 * @connect_work: an active QP's bind to a privileged port and address
 *	resolution (reference held while queued)
 * @idle_work: takes the QP down once it had no AC for rs_idle_timeout_ms,
 *	or, passive, was not established within rs_connect_timeout_ms
 * @acs: ACs pinned to this QP (rs_ac.qp_node)
 * @nr_acs: length of @acs
 * @groups: scheduler groups of the files with ACs here (rs_qp_group.node)
 * @quarantined: closed ACs whose slots the peer may still fill, until its
 *	CLOSE or the QP's end (rs_ac.quar_node, credit.c); a reference each
 * @quar_over: the QP is destroyed: nothing fills a slot, none is kept
 * @small_at: jiffies when the sender last took a small message (one it
 *	copies whole): large chunks keep to bulk_delay_us of @drain for a
 *	while after
 * @drain: the rate at which SENDs complete while the QP is busy (drain.c)
 * @hol_ac: the AC whose message the last chunk was in the middle of (no
 *	reference: unpinning an AC clears it)
 * @nr_waiters: CONNECTs that chose this QP and have not pinned their AC
 *	yet; changed under rs_peers_lock or by the waiter that holds one
 * @peer_node: in rs_peer.qps
 * @rcu: the memory goes after a grace period: a busy poller may have just
 *	found the QP by its @poll_id
 */
struct rs_qp {
	struct kref ref;
	struct rs_peer *peer;
	struct sockaddr_storage local;
	struct rs_device *rdev;
	struct rdma_cm_id *cm_id;
	struct ib_qp *qp;
	u32 qp_num;
	struct ib_cq *cq;
	u32 cq_size;
	u32 poll_id;
	unsigned long poll_state;
	spinlock_t poll_lock;		/* see above */
	struct work_struct poll_work;
	struct task_struct *poll_sleeper;
	struct hrtimer poll_timer;
	struct ib_wc *wcs;
	u32 send_depth;
	u32 max_send_sge;
	bool active;
	u8 version;
	u32 peer_rx_size;
	bool loop;
	enum rs_qp_state state;
	int error;
	wait_queue_head_t wait;

	spinlock_t lock;		/* the send side, see above */
	struct rs_sched sched;
	struct rs_gate_member gm;
	const struct rs_file *last_rf;
	struct list_head ctrl;
	struct list_head rejects;
	u32 nr_rejects;
	struct rs_tx *tx;
	u32 *tx_free;
	u32 nr_tx_free;
	u32 tx_inflight;
	u32 tx_inflight_bytes;
	struct rs_tx_wrs *wrs;
	unsigned long xmit_flags;
	struct rs_tx *tx_open;
	unsigned long small_at;
	struct rs_drain drain;
	struct work_struct send_work;
	struct work_struct down_work;
	struct work_struct connect_work;
	struct delayed_work keepalive;
	bool ping_pending;
	struct delayed_work idle_work;
	struct list_head acs;
	u32 nr_acs;
	struct list_head groups;
	struct list_head quarantined;
	bool quar_over;
	struct rs_ac *hol_ac;
	atomic_t nr_waiters;
	struct list_head peer_node;
	struct rcu_head rcu;
};

/**
 * struct rs_qp_group - a file's scheduler group on a QP
 * @node: in rs_qp.groups, under the QP's lock
 * @rf: the file (no reference: its ACs here hold one)
 * @g: the group
 * @nr_acs: ACs of @rf pinned to the QP; the group goes with the last
 */
struct rs_qp_group {
	struct list_head node;
	struct rs_file *rf;
	struct rs_sched_group g;
	u32 nr_acs;
};

/**
 * struct rs_peer - a remote host
 * @ref: references: rs_peers, each QP
 * @node: in rs_peers
 * @addr: its address (port 0)
 * @qps: its QPs (rs_qp.peer_node), changed under rs_peers_lock and
 *	@qps_lock, read under either
 * @qps_lock: for readers that cannot take rs_peers_lock (debugfs)
 * @debugfs: its debugfs file, peers/<addr>
 * @kobj: its sysfs directory, peers/<addr>; frees the peer when put
 * @in_sysfs: @kobj was added
 * @nr_qps: QPs in @qps
 * @nr_acs: ACs pinned to them
 * @nr_lost: QPs lost (went down with ACs) and not replaced yet
 * @stats: its counters
 * @gate_lock: taken under a QP's lock, around every call on @gate
 * @gate: its QPs with data to send, each held to its share (gate.h)
 */
struct rs_peer {
	struct kref ref;
	struct list_head node;
	struct sockaddr_storage addr;
	struct list_head qps;
	struct mutex qps_lock;		/* see above */
	struct dentry *debugfs;
	struct kobject kobj;
	bool in_sysfs;
	atomic_t nr_qps;
	atomic_t nr_acs;
	atomic_t nr_lost;
	struct rs_stats stats;
	spinlock_t gate_lock;		/* see above */
	struct rs_gate gate;
};

/* Count @n of @i for @qp's peer and device. */
static inline void rs_qp_stat(struct rs_qp *qp, enum rs_stat i, u64 n)
{
	rs_stat_add(&qp->peer->stats, i, n);
	if (qp->rdev)
		rs_stat_add(&qp->rdev->stats, i, n);
}

/* A message @m went out on @qp, or came in (@rx). */
static inline void rs_qp_count_msg(struct rs_qp *qp, const struct rs_proto_msg *m, bool rx)
{
	if (m->type != RS_MSG_DATA) {
		rs_qp_stat(qp, rx ? RS_STAT_CTRL_RX : RS_STAT_CTRL_TX, 1);
		return;
	}
	rs_qp_stat(qp, rx ? RS_STAT_RX_CHUNKS : RS_STAT_TX_CHUNKS, 1);
	rs_qp_stat(qp, rx ? RS_STAT_RX_BYTES : RS_STAT_TX_BYTES, rs_proto_chunk_len(m));
	if (m->flags & RS_F_LAST)
		rs_qp_stat(qp, rx ? RS_STAT_RX_MSGS : RS_STAT_TX_MSGS, 1);
}

enum rs_ac_state {
	RS_AC_LISTEN,
	RS_AC_CONNECTING,
	RS_AC_OPEN,
	RS_AC_CLOSED,
};

/*
 * Version 4: slots of a file in the order they were promised to an AC, a
 * chain through rs_rx_slot.next (credit.c), under the AC's QP's lock.
 */
struct rs_slot_fifo {
	u32 head;
	u32 tail;
	u32 n;
};

/* Slot indices one CREDIT record grants at most (sender.c). */
#define RS_GRANT_MAX	64

/* Control messages an AC owes its peer (rs_ac.ctrl_pending). */
#define RS_CTRL_CONNECT	BIT(0)
#define RS_CTRL_ACCEPT	BIT(1)
#define RS_CTRL_CREDIT	BIT(2)
#define RS_CTRL_CLOSE	BIT(3)
#define RS_CTRL_WANT	BIT(4)	/* version 3: data, no credit */
#define RS_CTRL_RECLAIM	BIT(5)	/* version 3: ask for unused credits */
#define RS_CTRL_RETURN	BIT(6)	/* version 3: give unused credits back */
#define RS_CTRL_SINK	BIT(7)	/* version 6: offer the reader's sink */
#define RS_CTRL_SINK_CANCEL	BIT(8)	/* version 6: ask for it back */
#define RS_CTRL_SINK_DONE	BIT(9)	/* version 6: the peer's sink is done */

/**
 * struct rs_peer_sink - the peer's sink, which this end writes into (sink.c)
 * @id: the peer's number for it
 * @len: its bytes
 * @rkey: its memory region
 * @addr: its first byte there
 * @filled: bytes written so far, the DONE's count once it ends
 * @open: chunks go into it; once it ends, RS_CTRL_SINK_DONE is owed
 */
struct rs_peer_sink {
	u32 id;
	u32 len;
	u32 rkey;
	u64 addr;
	u32 filled;
	bool open;
};

/**
 * struct rs_ac - this host's end of an abstract connection
 * @ref: references: the file's table, the conn table, the QP's lists, TX
 * @id: host-wide connection id, used on the wire (rs_conns)
 * @fid: the file's id for it, what user space sees
 * @rf: the owning file (reference held)
 * @state: RS_AC_*, under @rf->ac_lock for transitions, read anywhere
 * @qp: the QP it is pinned to, once known (reference held)
 * @group: its file's scheduler group on @qp while pinned
 * @remote_id: the peer's connection id
 * @port: service port (listener, or the one connected to)
 * @laddr: listener: the addresses it takes connections on
 * @port_next: listener: the next listener of @port (listen.c's rs_ports)
 * @error: why it closed
 * @wait: CONNECT waiters
 * @backlog: listener: accepted ACs not yet handed out (rs_ac.backlog_node)
 * @backlog_len: listener: length of @backlog
 * @backlog_max: listener: limit of @backlog
 * @qp_lost: the AC closed because its QP went down
 * @handed_out: LISTEN, CONNECT or ACCEPT gave the application its id; until
 *	then, and again from its CLOSE's completion on, the application
 *	cannot name it
 * @cqe_used: its CLOSED completion was posted, or will not be, under
 *	@rf->ac_lock; see rs_ac_take_cqe()
 * @in_connect: the CONNECT that made it has not returned it open yet, under
 *	@rf->ac_lock: that CONNECT, not a close, decides its completions
 * @closed: its CLOSED completion, while it waits for CQ room (rings.c)
 * @closed_free_id: the id is freed once @closed is in the CQ
 * @map: its file's data area as its QP's device sees it (memreg.c), from
 *	version 4 on from the start, before once a SEND large enough to go in
 *	place was queued; set under the QP's lock, never changes after
 * @rx_rkey: version 4: the rkey of its slots this end sent the peer in its
 *	CONNECT or ACCEPT (0: none, the peer places nothing)
 * @peer_rkey: version 4: the rkey the peer sent, 0 for none
 * @peer_stride: version 4: the bytes between two of the peer's slots
 * @af: an AC file's AC: what its file needs (acfile.c); set before the AC
 *	gets an id, never changes after; its chunks and its end do not come
 *	to @rf's CQ, and SQEs cannot name it
 * @files: a listener whose ACs are AC files (RDMASHARE_LISTEN_FILES)
 * @accepted: made by a listener (@port is this end's), not by a CONNECT
 * @psink: version 6: the peer's sink (sink.c), under @qp->lock
 * @sink_offer: version 6: this end's sink whose offer is owed (a
 *	reference), under @qp->lock
 * @sink_cancel: version 6: the sink a CANCEL owed names, under @qp->lock
 *
 * Counters, for RDMASHARE_IOC_AC_STATS: @tx_msgs, @tx_bytes, @tx_chunks and
 * @credit_stalls (times it came to have data and no credit) under
 * @qp->lock, @rx_msgs, @rx_bytes and @rx_chunks under @rf->rx_lock.
 *
 * Send side, under @qp->lock: @se, @sendq, @send_credits, @tx_seq,
 * @peer_slot_size, @ctrl_pending, @ctrl_node, @credits_out (credits to
 * piggyback or send), @shut_queued (a SHUTDOWN or CLOSE is queued: no more
 * SENDs), @close_queued (a CLOSE is), @close_sent (the peer was told that
 * this end is gone), @peer_shut (the peer sends no more), @peer_closed (the
 * peer's end is gone), @want_sent (version 3: the peer was asked for
 * credits and granted none since), @give_back (version 3: the peer asked
 * for unused credits back while this end had data to send), @grant_urgent
 * (the peer may be out of credits: the grant of @credits_out goes at once,
 * not with the next SEND that autocork lets go).
 *
 * Receive side, under @rf->rx_lock (credit.c): @rx_reserved (slots promised
 * to this AC and not in use: credits the peer holds, and @credits_out),
 * @rx_held (slots holding its chunks), @rx_ondemand (its QP speaks version
 * 3: slots come and go with demand), @rx_named (version 4: credits name
 * slots), @rx_active (counted in the file's
 * rx_active), @rx_peer_wants (its WANT came while credits were owed that
 * its releases were to send), @rx_full (the peer used every credit
 * it had: the window may grow), @rx_reclaim (the peer was asked for unused
 * credits), @rx_want_node (in the file's FIFO of ACs whose peer wants
 * credits), @rx_lend_node (in the file's list of ACs with @rx_reserved),
 * @rx_done (closed: deliver nothing more), @rx_seq/@rx_off/@rx_msg_len (the
 * message being received).  Version 4, under the QP's lock too: the slots
 * promised, @rx_sent (granted to the peer, oldest first: a chunk takes the
 * head) and @rx_unsent (@credits_out of them, the grant not sent yet);
 * once closed, @quar_node (in the QP's quarantined list since @quar_since,
 * while the peer may still fill @rx_sent).
 *
 * Version 4, the send side: @tx_slots, a ring of @tx_slots_cap entries from
 * @tx_slots_head, the peer's slots granted to this end (@send_credits of
 * them), oldest first.
 */
struct rs_ac {
	struct kref ref;
	u32 id;
	u32 fid;
	struct rs_file *rf;
	enum rs_ac_state state;
	struct rs_qp *qp;
	struct rs_qp_group *group;
	u32 remote_id;
	u32 port;
	u16 cport;
	struct file *port_sock;
	struct rs_laddr laddr;
	struct rs_ac *port_next;
	int error;
	wait_queue_head_t wait;
	struct list_head qp_node;

	struct list_head backlog;
	struct list_head backlog_node;
	u32 backlog_len;
	u32 backlog_max;

	struct rs_sched_entity se;
	struct list_head sendq;
	u32 send_credits;
	u32 tx_seq;
	u32 peer_slot_size;
	u32 ctrl_pending;
	struct list_head ctrl_node;
	u32 credits_out;
	bool shut_queued;
	bool close_queued;
	bool close_sent;
	bool peer_shut;
	bool peer_closed;
	bool qp_lost;
	bool handed_out;
	bool cqe_used;
	bool in_connect;
	struct rs_cq_over closed;
	bool closed_free_id;
	bool want_sent;
	bool give_back;
	bool grant_urgent;
	struct rs_dma_map *map;
	u32 rx_rkey;
	u32 peer_rkey;
	u32 peer_stride;
	struct rs_acfile *af;
	bool files;
	bool accepted;
	struct rs_peer_sink psink;
	struct rs_sink *sink_offer;
	u32 sink_cancel;

	u32 rx_reserved;
	u32 rx_held;
	bool rx_ondemand;
	bool rx_named;
	bool rx_active;
	bool rx_full;
	bool rx_peer_wants;
	bool rx_reclaim;
	struct list_head rx_want_node;
	struct list_head rx_lend_node;
	bool rx_done;
	struct list_head quar_node;
	unsigned long quar_since;
	struct rs_slot_fifo rx_sent;
	struct rs_slot_fifo rx_unsent;
	u32 *tx_slots;
	u32 tx_slots_head;
	u32 tx_slots_cap;
	u32 rx_seq;
	u32 rx_off;
	u32 rx_msg_len;

	u64 tx_msgs;
	u64 tx_bytes;
	u64 tx_chunks;
	u64 credit_stalls;
	u64 rx_msgs;
	u64 rx_bytes;
	u64 rx_chunks;
};

/*
 * Called with the QP's lock held: can @ac send now?  A chunk needs a
 * credit, or the peer's sink (version 6); a CLOSE or SHUTDOWN does not.
 */
static inline bool rs_ac_can_send(struct rs_ac *ac)
{
	struct rs_send *op;

	op = list_first_entry_or_null(&ac->sendq, struct rs_send, node);
	return op && (ac->send_credits || ac->psink.open || op->opcode != RDMASHARE_OP_SEND);
}

/*
 * Called with the QP's lock held: what waits for the sender on @ac, in
 * operations and in bytes of SENDs not posted yet (for the statistics).
 */
static inline u32 rs_ac_queued(struct rs_ac *ac, u64 *bytes)
{
	struct rs_send *op;
	u32 ops = 0;

	*bytes = 0;
	list_for_each_entry(op, &ac->sendq, node) {
		ops++;
		if (op->opcode == RDMASHARE_OP_SEND)
			*bytes += op->len - op->sent;
	}
	return ops;
}

/* Called with the QP's lock held: @ac's state for the scheduler. */
static inline enum rs_sched_after rs_ac_sched_after(struct rs_ac *ac)
{
	if (rs_ac_can_send(ac))
		return RS_SCHED_MORE;
	return list_empty(&ac->sendq) ? RS_SCHED_EMPTY : RS_SCHED_BLOCKED;
}

/*
 * A REJECT (src 0) or CLOSE owed to a peer for an AC this host lacks.  A
 * peer that is owed more than RS_MAX_REJECTS of them for what it sent (it
 * sends CONNECTs faster than it takes the answers) loses its QP; the CLOSEs
 * of this host's own ACs (@own: a file closed them) do not count.
 */
#define RS_MAX_REJECTS	1024

struct rs_reject {
	struct list_head node;
	u32 dst;
	u32 src;
	u32 error;
	bool own;
};

/* device.c */
struct rs_device *rs_device_get_by_ibdev(struct ib_device *ibdev);
struct rs_device *rs_device_get(struct rs_device *rdev);
void rs_device_put(struct rs_device *rdev);
int rs_device_post_recv(struct rs_device *rdev, struct rs_rx_buf *rx);
void rs_device_qp_destroyed(struct rs_device *rdev);
bool rs_park_wanted(struct rs_device *rdev, struct rdma_cm_id *id);
bool rs_park_cm_id(struct rs_device *rdev, struct rdma_cm_id *id);
int rs_park_init(struct rs_device *rdev);
void rs_park_exit(struct rs_device *rdev);

/*
 * Transport retries before a QP fails: a lost peer is noticed after about
 * (retries + 1) ACK timeouts.  Not 7, which rxe takes as "forever".
 */
#define RS_RETRY_COUNT		6
/*
 * RNR retries: finite (7 would be "forever"), so that a peer that posts no
 * receives costs only its own QP.  rdma_cm's minimum RNR timer is the
 * largest (655 ms): a QP fails after about 4 s of RNR NAKs in a row, which
 * with credits only a peer that takes nothing, or a receive path stalled as
 * long, causes.
 */
#define RS_RNR_RETRY_COUNT	6

/* cm.c: rdma_cm */
extern unsigned int rs_cm_port;
extern atomic_long_t rs_refused_peers;
u16 rs_addr_port(const struct sockaddr *sa);
int rs_cm_init(void);
int rs_cm_listen(void);
void rs_cm_unlisten(void);
void rs_cm_exit(void);
struct rs_qp *rs_qp_get(struct rs_peer *peer, const struct rs_file *rf, int *err);
void rs_qp_give_up(struct rs_qp *qp);
struct rs_qp *rs_qp_get_up(struct rs_peer *peer, const struct rs_file *rf, long timeout,
			   int *err);
void rs_qp_connect_work(struct work_struct *work);

/* qp.c: a QP's life */
extern atomic_t rs_nr_qps;
struct rs_qp *rs_qp_alloc(struct rs_peer *peer, bool active);
struct rs_qp *rs_qp_choose(struct rs_peer *peer, const struct rs_file *rf);
/* What rs_qp_gate() does besides telling the gate what the QP sent. */
enum rs_gate_op {
	RS_GATE_SYNC,		/* only that */
	RS_GATE_CHECK,		/* and whether the QP may take a chunk now */
	RS_GATE_IDLE,		/* the QP cannot send now: out of the gate */
};

bool rs_qp_gate(struct rs_qp *qp, enum rs_gate_op op);
bool rs_qps_capped(struct rs_peer *peer);
int rs_qp_create_ib(struct rs_qp *qp);
int rs_qp_ready(struct rs_qp *qp);
void rs_qp_established(struct rs_qp *qp);
void rs_qp_put(struct rs_qp *qp);
void rs_qp_down(struct rs_qp *qp, int error);
void rs_qp_unwait(struct rs_qp *qp);
void rs_qp_idle_changed(struct rs_qp *qp);
void rs_qp_arm_setup(struct rs_qp *qp);
void rs_qp_keepalive_changed(struct rs_qp *qp);
void rs_qp_sched_changed(struct rs_qp *qp);
void rs_qp_pin_locked(struct rs_qp *qp, struct rs_ac *ac, struct rs_qp_group **spare);
void rs_qp_unpin_locked(struct rs_qp *qp, struct rs_ac *ac);
void rs_qps_down_device(struct rs_device *rdev);

/* poll.c: a QP's CQ */
int rs_cq_create(struct rs_qp *qp, struct ib_device *ibdev);
void rs_cq_stop(struct rs_qp *qp);
void rs_cq_destroy(struct rs_qp *qp);
void rs_file_note_qp(struct rs_file *rf, struct rs_qp *qp);
bool rs_sleep_offer(struct rs_qp *qp);
bool rs_sleep_taken(struct rs_qp *qp);
bool rs_sleep_withdraw(struct rs_qp *qp);

/*
 * wait_event_interruptible_timeout() on @wq for @cond, for at most
 * @timeout jiffies, by a thread that waits for completions of @qp (NULL:
 * none known): it answers @qp's events itself while it sleeps
 * (sleep_poll_us, poll.c), then looks at @cond again, with the time left
 * (none: once, without sleeping).  What wait_event_interruptible_timeout()
 * returns.
 */
#define rs_wait_sleep_polling(qp, wq, cond, timeout)			\
({									\
	struct rs_qp *__qp = (qp);					\
	long __t = (timeout), __ret;					\
	bool __off;							\
									\
	for (;;) {							\
		__off = rs_sleep_offer(__qp);				\
		__ret = wait_event_interruptible_timeout(wq, (cond) ||	\
				(__off && rs_sleep_taken(__qp)), __t);	\
		if (!__off || !rs_sleep_withdraw(__qp) || __ret < 0)	\
			break;						\
		__t = __ret;						\
	}								\
	__ret;								\
})
int rs_poll_init(void);
void rs_poll_exit(void);

/* memreg.c */
struct rs_dma_map *rs_dma_map_get(struct rs_file *rf, struct rs_device *rdev);
struct rs_dma_map *rs_dma_map_find(struct rs_file *rf, struct rs_device *rdev);
void rs_dma_maps_prepare(struct rs_file *rf);
void rs_dma_maps_init(struct rs_file *rf);
void rs_dma_maps_free(struct rs_file *rf);
void rs_dma_maps_device_gone(struct rs_device *rdev);
void rs_dma_map_unmap(struct rs_dma_map *map, unsigned long n);
u32 rs_dma_map_nr_sges(const struct rs_dma_map *map, u64 off, u32 len);
u32 rs_dma_map_fit(const struct rs_dma_map *map, u64 off, u32 len, u32 max);
u32 rs_dma_map_sges(const struct rs_dma_map *map, u32 lkey, u64 off, u32 len,
		    struct ib_sge *sge, u32 max);
void rs_dma_map_sync_for_cpu(const struct rs_dma_map *map, u64 off, u32 len);
u32 rs_rx_mr_claim(struct rs_dma_map *map, const struct rs_qp *qp, bool *reg);
void rs_mr_reg_wr(struct ib_mr *mr, struct ib_reg_wr *wr);
void rs_rx_mr_reg_wr(struct rs_dma_map *map, struct ib_reg_wr *wr);
void rs_rx_mr_registered(struct rs_dma_map *map, bool ok);
void rs_rx_mr_invalidated(struct rs_device *rdev, u32 rkey);

/* debugfs.c */
void rs_debugfs_init(void);
void rs_debugfs_exit(void);
void rs_debugfs_add_peer(struct rs_peer *peer);
void rs_debugfs_del_peer(struct rs_peer *peer);

/* peer.c */
struct rs_peer *rs_peer_get(const struct sockaddr *addr);
void rs_peer_add_qp(struct rs_peer *peer, struct rs_qp *qp);
bool rs_peer_del_qp(struct rs_peer *peer, struct rs_qp *qp);
void rs_peer_put(struct rs_peer *peer);
void rs_peers_down(struct rs_device *rdev);
bool rs_addr_equal(const struct sockaddr *a, const struct sockaddr *b);
extern struct mutex rs_peers_lock;

/* sender.c */
int rs_qp_tx_init(struct rs_qp *qp);
void rs_qp_tx_free(struct rs_qp *qp);
void rs_qp_kick(struct rs_qp *qp);
void rs_qp_push(struct rs_qp *qp);
void rs_sender_work(struct work_struct *work);
void rs_qp_xmit_stop(struct rs_qp *qp);

/* recv.c */
void rs_rx_done(struct ib_cq *cq, struct ib_wc *wc);
void rs_rx_release(struct rs_file *rf, const struct rdmashare_sqe *sqe);
u32 rs_rx_slot_free_locked(struct rs_file *rf, u32 idx);

/* send.c: an application's SEND, SHUTDOWN and CLOSE */
int rs_ac_queue(struct rs_ac *ac, struct rs_send *op, bool *dup_close);
void rs_ac_send(struct rs_ac *ac, const struct rdmashare_sqe *sqe);
void rs_ac_send_done(struct rs_ac *ac, struct rs_send *op, int status);

/* ac.c: called from the transport */
struct rs_ac *rs_ac_lookup_conn(struct rs_qp *qp, u32 id);
void rs_ac_peer_connect(struct rs_qp *qp, const struct rs_proto_msg *m, const void *payload);
void rs_ac_peer_accept(struct rs_qp *qp, struct rs_ac *ac, const struct rs_proto_msg *m,
		       const void *payload);
void rs_ac_peer_reject(struct rs_qp *qp, struct rs_ac *ac, u32 error);
void rs_ac_peer_shut(struct rs_ac *ac);
void rs_ac_peer_close(struct rs_qp *qp, struct rs_ac *ac);
void rs_ac_close_tell(struct rs_ac *ac, int error, bool by_app);
void rs_qp_stray(struct rs_qp *qp, u32 dst, u32 src, u32 error, bool own);
void rs_ac_put(struct rs_ac *ac);
void rs_ac_qp_down(struct rs_ac *ac, int error);
void rs_qp_quarantine_end(struct rs_qp *qp);
void rs_ac_ctrl(struct rs_ac *ac, u32 bit);
void rs_listeners_show(struct seq_file *m);

/* ac.c: an AC's life, for send.c and recv.c */
struct rs_ac *rs_ac_lookup_fid(struct rs_file *rf, u32 fid);
int rs_ac_pin(struct rs_ac *ac, struct rs_qp *qp, u32 ctrl, struct rs_ac *l);
void rs_ac_tell_closed(struct rs_ac *ac, bool answer);
/**
 * struct rs_connect_to - where a CONNECT goes, and from which port
 * @ss: the peer
 * @sock: RDMASHARE_CONNECT_PORT's socket (a reference), or NULL
 * @cport: its port, 0 without
 */
struct rs_connect_to {
	struct sockaddr_storage ss;
	struct file *sock;
	u16 cport;
};

struct rs_ac *rs_ac_new_conn(struct rs_file *rf, const struct rdmashare_connect *c,
			     const struct rs_connect_to *to, bool file, bool in_connect);
void rs_ac_abandon(struct rs_ac *ac, int error);
void rs_addr_to_user(const struct sockaddr_storage *ss, struct rdmashare_addr *a);
void rs_ac_addrs(struct rs_ac *ac, struct rdmashare_addr *local, struct rdmashare_addr *peer);
struct rs_ac *rs_ac_lookup_user(struct rs_file *rf, u32 fid);
bool rs_ac_do_close(struct rs_ac *ac, int error, bool by_app);
void rs_ac_cancel_closed(struct rs_ac *ac);
void rs_ac_del_from_file(struct rs_ac *ac);
void rs_op_done(struct rs_ac *ac, struct rs_send *op, int res);
void rs_ac_close(struct rs_ac *ac, const struct rdmashare_sqe *sqe);
int rs_ac_set_check(const struct rdmashare_ac_set *a);
void rs_ac_set_one(struct rs_ac *ac, const struct rdmashare_ac_set *a);
int rs_ac_stats_check(const struct rdmashare_ac_stats *st);
void rs_ac_stats_one(struct rs_ac *ac, struct rdmashare_ac_stats *st);

/* credit.c: receive slots and credits */
bool rs_rx_open_locked(struct rs_ac *ac, struct rs_qp *qp);
bool rs_rx_close(struct rs_ac *ac);
bool rs_rx_unquarantine(struct rs_ac *ac);
bool rs_rx_take(struct rs_ac *ac, bool placed, u32 *idx);
void rs_rx_slot_back(struct rs_file *rf, struct rs_ac *ac, u32 conn);
void rs_rx_want(struct rs_ac *ac);
int rs_rx_returned(struct rs_ac *ac, u32 n);
u32 rs_ac_take_credits(struct rs_ac *ac);
u32 rs_ac_take_grant(struct rs_ac *ac, u32 *slots, u32 max);
void rs_ac_grant_soon(struct rs_ac *ac);
int rs_ac_slots_room(struct rs_ac *ac, u32 n);
void rs_ac_got_slots(struct rs_ac *ac, const void *payload, u32 n);
u32 rs_ac_peek_slot(struct rs_ac *ac);
u32 rs_ac_take_slot(struct rs_ac *ac);
void rs_ac_got_credits(struct rs_ac *ac, u32 n);
void rs_ac_queued_send(struct rs_ac *ac);
void rs_ac_after_chunk(struct rs_ac *ac);
void rs_ac_reclaimed(struct rs_ac *ac);
u32 rs_ac_take_return(struct rs_ac *ac);
bool rs_ac_take_want(struct rs_ac *ac);

extern struct workqueue_struct *rs_wq;

#endif /* _RDMASHARE_TRANSPORT_H */

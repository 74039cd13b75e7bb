/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: the wire format between two rdmashare hosts.
 *
 * Every message on a shared RC QP is a record: a 32-byte header, big
 * endian, followed by "len" bytes of payload.  Data messages carry one chunk
 * of an application message; control messages manage abstract connections
 * (ACs) and carry a small fixed-size payload of their own.
 *
 *   0       1       2               4
 *   +-------+-------+---------------+
 *   |version| type  |     flags     |
 *   +-------+-------+---------------+
 *   |            dst_conn           |  receiver's connection id
 *   |            src_conn           |  sender's connection id
 *   |              seq              |  DATA: message number on the AC
 *   |            msg_len            |  DATA: length of the whole message
 *   |             offset            |  DATA: offset of this chunk
 *   |              len              |  payload bytes after the header
 *   |            credits            |  receive slots granted to the peer
 *   +-------------------------------+
 *
 * Version 1: a SEND is exactly one record.  Version 2: a SEND is a batch of
 * one or more records, each padded with zeroes to a multiple of 8 bytes, in
 * the order the sender's scheduler chose them; a malformed record makes the
 * whole SEND malformed.  Version 3: receive slots on demand: a CREDIT
 * record may carry one flag, RS_F_WANT (the sender of src_conn has data
 * and no credit), RS_F_RECLAIM (give back the credits for dst_conn that you
 * do not need) or RS_F_RETURN ("credits" are credits for dst_conn given
 * back, not granted).  Version 4: credits name slots.  Only CREDIT,
 * CONNECT and ACCEPT grant credits, and they carry the granted slots'
 * indices (big endian u32s: a CREDIT's whole payload, after the parameters
 * of a CONNECT or ACCEPT); a chunk uses the oldest slot granted and not
 * used yet, a RETURN gives back the oldest ones.  An AC holds at most
 * RS_PROTO_MAX_WINDOW credits.  Version 4 also places chunks: a CONNECT
 * or ACCEPT names in "rkey" a memory region over the sender's receive
 * slots (0: none), slot i at i * slot_size; the peer may then RDMA WRITE a
 * chunk into the slot its credit names and send a DATA record flagged
 * RS_F_PLACED whose payload is only where the chunk went: its length and
 * the slot (RS_PLACED_LEN bytes, struct rs_wire_placed).  Version 5: a
 * placed chunk that continues a message (offset > 0) may come without a
 * record, as an RDMA WRITE WITH IMMEDIATE into the oldest slot granted:
 * the immediate data is dst_conn (big endian), and it stands for the DATA
 * records of the next chunks of the message in progress on that AC
 * (rs_proto_continue()): the bytes written, cut at the receiver's slot
 * size, in the oldest slots granted, one after the other.  Version 6: a
 * reader's own buffer (SDP's SinkAvail): a SINK record offers the peer
 * "len" bytes at "addr" under "rkey" for the stream's bytes from "off"
 * on (the count of DATA bytes on the AC, modulo 2^32), at most one offer
 * at a time per AC.  The peer writes the next chunks there, if its stream
 * is at "off", each an RDMA WRITE and a DATA record flagged RS_F_SINK
 * (payload: struct rs_wire_placed, "slot" the offer's id), no credit
 * used, and ends the offer with a SINK record flagged RS_F_DONE whose
 * "len" is the bytes written (0: none, the stream was past "off"); the
 * reader may ask for it back early with RS_F_CANCEL, answered by the same
 * DONE.  Version 7: a CONNECT's "port" carries in its high 16 bits the
 * connecting end's own port (0: none), which the accepting end reports as
 * the peer's (getpeername(2)).  The version is negotiated when the QP is
 * set up (cm.c) and every record carries it.
 *
 * Connection ids are the host's own numbers for its end of an AC, unique per
 * peer transport; 0 means none.  "credits" on any message returns that many
 * receive slots to the sender of dst_conn.  Documented in
 * Documentation/design.rst; pure code, no ib_core, tested by KUnit.
 */
#ifndef _RDMASHARE_PROTO_H
#define _RDMASHARE_PROTO_H

#include <linux/align.h>
#include <linux/bits.h>
#include <linux/limits.h>
#include <linux/types.h>

#define RS_PROTO_VERSION	7	/* the newest this host speaks */
#define RS_PROTO_VERSION_MIN	1	/* the oldest */
#define RS_HDR_LEN		32
#define RS_REC_ALIGN		8	/* version 2: records start aligned */

/* Hard limits of the protocol; tunables are checked against them. */
#define RS_PROTO_MAX_CHUNK	BIT(20)		/* payload of one SEND */
#define RS_PROTO_MIN_SLOT	64		/* a receive slot holds at least */
#define RS_PROTO_MAX_MSG	BIT(30)		/* one application message */
#define RS_PROTO_MAX_CREDITS	BIT(16)		/* granted in one header */
#define RS_PROTO_MAX_WINDOW	4096		/* version 4: held by one AC */
#define RS_SLOT_IDX_LEN		4		/* version 4: a granted slot */
#define RS_SLOT_OLDEST		U32_MAX		/* version 5: no index, the oldest */

enum rs_msg_type {
	RS_MSG_DATA = 1,	/* a chunk of an application message */
	RS_MSG_CONNECT,		/* open an AC to a service port */
	RS_MSG_ACCEPT,		/* the AC is open */
	RS_MSG_REJECT,		/* no listener, or no resources */
	RS_MSG_CLOSE,		/* the sender closed its end, or shut it down */
	RS_MSG_CREDIT,		/* a credit grant and nothing else */
	RS_MSG_KEEPALIVE,	/* QP liveness probe, for no AC */
	RS_MSG_SINK,		/* version 6: a reader's buffer, offered or done */
	RS_MSG_TYPE_MAX = RS_MSG_SINK,
};

/* DATA flags */
#define RS_F_FIRST	BIT(0)	/* first chunk of a message */
#define RS_F_LAST	BIT(1)	/* last chunk of a message */
#define RS_F_PLACED	BIT(2)	/* version 4: the chunk was written to a slot */
#define RS_F_SINK	BIT(3)	/* version 6: written to the reader's sink */
#define RS_F_DATA_MASK	(RS_F_FIRST | RS_F_LAST | RS_F_PLACED | RS_F_SINK)

/* CLOSE flags */
#define RS_F_HALF	BIT(0)	/* only the sender's data is done (SHUTDOWN) */

/* CREDIT flags, version 3: at most one of them */
#define RS_F_WANT	BIT(0)	/* data to send, no credit: grant some */
#define RS_F_RECLAIM	BIT(1)	/* return the credits you do not need */
#define RS_F_RETURN	BIT(2)	/* "credits" are returned, not granted */
#define RS_F_CREDIT_MASK	(RS_F_WANT | RS_F_RECLAIM | RS_F_RETURN)

/* SINK flags, version 6: none (an offer) or one of them */
#define RS_F_CANCEL	BIT(0)	/* the reader wants its buffer back */
#define RS_F_DONE	BIT(1)	/* the writer is done with it: len bytes in it */
#define RS_F_SINK_MASK	(RS_F_CANCEL | RS_F_DONE)

/* Payload of CONNECT and ACCEPT. */
struct rs_conn_params {
	u32 port;		/* CONNECT: service port; ACCEPT: 0 */
	u16 cport;		/* version 7, CONNECT: the connecting end's port */
	u32 slot_size;		/* largest chunk the sender can receive */
	u32 credits;		/* receive slots granted up front */
	u32 rkey;		/* version 4: the slots' memory region, or 0 */
};

/* Payload of a DATA record flagged RS_F_PLACED. */
struct rs_placed {
	u32 len;		/* bytes of the chunk */
	u32 slot;		/* the receive slot it was written to */
};

/*
 * Payload of SINK, version 6: an offer names all of it; a CANCEL only @id;
 * a DONE @id and in @len the bytes written.
 */
struct rs_sink_params {
	u32 id;			/* the reader's number for the offer */
	u32 off;		/* the stream's byte it starts at */
	u32 len;		/* bytes, at most RS_PROTO_MAX_MSG */
	u32 rkey;		/* of the memory region over them */
	u64 addr;		/* the first byte in that region */
};

#define RS_PLACED_LEN		8
#define RS_SINK_LEN		24
#define RS_CONN_PARAMS_LEN	16
/* Payload of REJECT: a positive errno (ECONNREFUSED, ENOBUFS, ...). */
#define RS_REJECT_LEN		4

/**
 * struct rs_proto_msg - a decoded header (and control payload), in host order
 */
struct rs_proto_msg {
	u8 type;
	u16 flags;
	u32 dst_conn;
	u32 src_conn;
	u32 seq;
	u32 msg_len;
	u32 offset;
	u32 len;
	u32 credits;
	union {
		struct rs_conn_params conn;	/* CONNECT, ACCEPT */
		u32 error;			/* REJECT */
		struct rs_placed placed;	/* DATA, RS_F_PLACED or RS_F_SINK */
		struct rs_sink_params sink;	/* SINK */
	};
};

/* Is @m a DATA record of a chunk placed in a slot?  (Flags are per type.) */
static inline bool rs_proto_placed(const struct rs_proto_msg *m)
{
	return m->type == RS_MSG_DATA && (m->flags & RS_F_PLACED);
}

/* Is @m a DATA record of a chunk written to the reader's sink? */
static inline bool rs_proto_sunk(const struct rs_proto_msg *m)
{
	return m->type == RS_MSG_DATA && (m->flags & RS_F_SINK);
}

/* Bytes of application data a DATA record @m carries or placed. */
static inline u32 rs_proto_chunk_len(const struct rs_proto_msg *m)
{
	return rs_proto_placed(m) || rs_proto_sunk(m) ? m->placed.len : m->len;
}

/*
 * Version 4: where a record's granted slot indices start in its payload
 * (rs_proto_get_slot()), -1 if it grants none.
 */
static inline int rs_proto_slots_off(const struct rs_proto_msg *m, u8 version)
{
	if (version < 4)
		return -1;
	switch (m->type) {
	case RS_MSG_CREDIT:
		return m->credits && !(m->flags & (RS_F_RETURN | RS_F_RECLAIM)) ? 0 : -1;
	case RS_MSG_CONNECT:
	case RS_MSG_ACCEPT:
		return m->conn.credits ? RS_CONN_PARAMS_LEN : -1;
	}
	return -1;
}

/* Bytes a record with @len bytes of payload takes in a SEND of @version. */
static inline size_t rs_proto_rec_len(u8 version, u32 len)
{
	size_t n = RS_HDR_LEN + (size_t)len;

	return version >= 2 ? ALIGN(n, RS_REC_ALIGN) : n;
}

int rs_proto_payload_len(u8 type, u32 data_len);
int rs_proto_encode(const struct rs_proto_msg *m, u8 version, void *buf,
		    size_t buf_len);
int rs_proto_decode(const void *buf, size_t buf_len, u8 version, u32 max_chunk,
		    struct rs_proto_msg *m);
int rs_proto_next(const void *buf, size_t len, size_t *pos, u8 version,
		  u32 max_chunk, struct rs_proto_msg *m);
int rs_proto_check_batch(const void *buf, size_t len, u8 version, u32 max_chunk);
int rs_proto_reject_errno(u32 error);
void rs_proto_put_slots(void *payload, const u32 *slots, u32 n);
u32 rs_proto_get_slot(const void *payload, u32 i);
int rs_proto_continue(struct rs_proto_msg *m, u8 version, u32 dst_conn, u32 src_conn,
		      u32 seq, u32 msg_len, u32 offset, u32 len);

#endif /* _RDMASHARE_PROTO_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare tracepoints: /sys/kernel/tracing/events/rdmashare/.
 *
 *   rdmashare_qp_up, rdmashare_qp_down        a shared QP to a peer
 *   rdmashare_ac_open, rdmashare_ac_close     an AC's end on this host
 *   rdmashare_msg_post                        a message posted on a QP
 *   rdmashare_op_done                         an SQE's completion
 *   rdmashare_credit_stall                    an AC has data, no credit
 *   rdmashare_credit_grant                    credits came from the peer
 *
 * ACs are named by their host-wide connection id ("conn", as on the wire)
 * and their file-local id ("ac", as user space sees it).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rdmashare

#if !defined(_RDMASHARE_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _RDMASHARE_TRACE_H

#include <linux/socket.h>
#include <linux/tracepoint.h>

#include "transport.h"

DECLARE_EVENT_CLASS(rdmashare_qp_class,
	TP_PROTO(const struct rs_qp *qp, int error),
	TP_ARGS(qp, error),
	TP_STRUCT__entry(
		__field(u32, qp_num)
		__field(int, error)
		__field(bool, active)
		__field_struct(struct sockaddr_storage, addr)
	),
	TP_fast_assign(
		__entry->qp_num = qp->qp_num;
		__entry->error = error;
		__entry->active = qp->active;
		memcpy(&__entry->addr, &qp->peer->addr, sizeof(__entry->addr));
	),
	TP_printk("peer %pISc qp %u %s error %d", &__entry->addr, __entry->qp_num,
		  __entry->active ? "active" : "passive", __entry->error)
);

DEFINE_EVENT(rdmashare_qp_class, rdmashare_qp_up,
	TP_PROTO(const struct rs_qp *qp, int error),
	TP_ARGS(qp, error));

DEFINE_EVENT(rdmashare_qp_class, rdmashare_qp_down,
	TP_PROTO(const struct rs_qp *qp, int error),
	TP_ARGS(qp, error));

TRACE_EVENT(rdmashare_ac_open,
	TP_PROTO(const struct rs_ac *ac),
	TP_ARGS(ac),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(u32, ac)
		__field(u32, remote)
		__field(u32, port)
		__field(u32, qp_num)
	),
	TP_fast_assign(
		__entry->conn = ac->id;
		__entry->ac = ac->fid;
		__entry->remote = ac->remote_id;
		__entry->port = ac->port;
		__entry->qp_num = ac->qp ? ac->qp->qp_num : 0;
	),
	TP_printk("conn %u ac %u remote %u port %u qp %u", __entry->conn, __entry->ac,
		  __entry->remote, __entry->port, __entry->qp_num)
);

TRACE_EVENT(rdmashare_ac_close,
	TP_PROTO(const struct rs_ac *ac, int error, bool by_app),
	TP_ARGS(ac, error, by_app),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(u32, ac)
		__field(int, error)
		__field(bool, by_app)
	),
	TP_fast_assign(
		__entry->conn = ac->id;
		__entry->ac = ac->fid;
		__entry->error = error;
		__entry->by_app = by_app;
	),
	TP_printk("conn %u ac %u error %d by %s", __entry->conn, __entry->ac,
		  __entry->error, __entry->by_app ? "app" : "peer")
);

TRACE_EVENT(rdmashare_msg_post,
	TP_PROTO(const struct rs_qp *qp, const struct rs_proto_msg *m),
	TP_ARGS(qp, m),
	TP_STRUCT__entry(
		__field(u32, qp_num)
		__field(u8, type)
		__field(u16, flags)
		__field(u32, dst)
		__field(u32, src)
		__field(u32, seq)
		__field(u32, offset)
		__field(u32, len)
		__field(u32, credits)
	),
	TP_fast_assign(
		__entry->qp_num = qp->qp_num;
		__entry->type = m->type;
		__entry->flags = m->flags;
		__entry->dst = m->dst_conn;
		__entry->src = m->src_conn;
		__entry->seq = m->seq;
		__entry->offset = m->offset;
		__entry->len = rs_proto_chunk_len(m);
		__entry->credits = m->credits;
	),
	TP_printk("qp %u %s flags %#x conn %u->%u seq %u offset %u len %u credits %u",
		  __entry->qp_num,
		  __print_symbolic(__entry->type,
				   { RS_MSG_DATA, "DATA" }, { RS_MSG_CONNECT, "CONNECT" },
				   { RS_MSG_ACCEPT, "ACCEPT" }, { RS_MSG_REJECT, "REJECT" },
				   { RS_MSG_CLOSE, "CLOSE" }, { RS_MSG_CREDIT, "CREDIT" },
				   { RS_MSG_KEEPALIVE, "KEEPALIVE" }, { RS_MSG_SINK, "SINK" }),
		  __entry->flags, __entry->src, __entry->dst, __entry->seq,
		  __entry->offset, __entry->len, __entry->credits)
);

TRACE_EVENT(rdmashare_op_done,
	TP_PROTO(const struct rs_ac *ac, u8 opcode, u64 user_data, int res),
	TP_ARGS(ac, opcode, user_data, res),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(u32, ac)
		__field(u8, opcode)
		__field(u64, user_data)
		__field(int, res)
	),
	TP_fast_assign(
		__entry->conn = ac->id;
		__entry->ac = ac->fid;
		__entry->opcode = opcode;
		__entry->user_data = user_data;
		__entry->res = res;
	),
	TP_printk("conn %u ac %u opcode %u user_data %#llx res %d", __entry->conn,
		  __entry->ac, __entry->opcode, __entry->user_data, __entry->res)
);

DECLARE_EVENT_CLASS(rdmashare_credit_class,
	TP_PROTO(const struct rs_ac *ac, u32 granted),
	TP_ARGS(ac, granted),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(u32, ac)
		__field(u32, granted)
		__field(u32, credits)
	),
	TP_fast_assign(
		__entry->conn = ac->id;
		__entry->ac = ac->fid;
		__entry->granted = granted;
		__entry->credits = ac->send_credits;
	),
	TP_printk("conn %u ac %u granted %u credits %u", __entry->conn, __entry->ac,
		  __entry->granted, __entry->credits)
);

DEFINE_EVENT(rdmashare_credit_class, rdmashare_credit_stall,
	TP_PROTO(const struct rs_ac *ac, u32 granted),
	TP_ARGS(ac, granted));

DEFINE_EVENT(rdmashare_credit_class, rdmashare_credit_grant,
	TP_PROTO(const struct rs_ac *ac, u32 granted),
	TP_ARGS(ac, granted));

#endif /* _RDMASHARE_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: zero copy into a reader's own pages (sink.c).
 */
#ifndef _RDMASHARE_SINK_H
#define _RDMASHARE_SINK_H

#include <linux/kref.h>
#include <linux/types.h>

struct ib_mr;
struct iov_iter;
struct rs_ac;
struct rs_proto_msg;
struct rs_qp;
struct rs_zc;

/**
 * struct rs_sink - a reader's buffer that the peer writes into
 * @ref: the reader holds one while it waits, the AC file one from the
 *	offer until no WRITE can come any more (rs_acfile.sink), the SEND
 *	that registers it one (rs_tx.sink_reg), an owed offer one
 *	(rs_ac.sink_offer); the last unregisters, unmaps and unpins
 * @zc: the reader's pages, pinned for writing and mapped (zcopy.c)
 * @mr: the memory region over them, registered by the offer's SEND
 * @id: the AC file's number for it
 * @off: the stream's byte it starts at
 * @len: its bytes
 * @filled: bytes the peer's DATA records said it wrote, under the file's
 *	rx_lock
 * @done: the peer's DONE came (rx_lock)
 * @orphan: the reader left without it (a fatal signal): the bytes that
 *	still come are lost, which ends the AC (rx_lock)
 */
struct rs_sink {
	struct kref ref;
	struct rs_zc *zc;
	struct ib_mr *mr;
	u32 id;
	u32 off;
	u32 len;
	u32 filled;
	bool done;
	bool orphan;
};

ssize_t rs_sink_read(struct rs_ac *ac, struct iov_iter *to, long *timeo);
void rs_sink_put(struct rs_sink *s);
void rs_sink_ac_free(struct rs_ac *ac);
void rs_sink_offer_params(const struct rs_sink *s, struct rs_proto_msg *m);
int rs_sink_recv(struct rs_qp *qp, struct rs_ac *ac, const struct rs_proto_msg *m, bool *kick);
bool rs_sink_recv_data(struct rs_ac *ac, const struct rs_proto_msg *m);

#endif /* _RDMASHARE_SINK_H */

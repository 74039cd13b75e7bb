// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: connection management of the shared RC QPs (rdma_cm); the
 * QPs themselves, their verbs resources and their teardown are qp.c's.
 *
 * The module listens on one rdma_cm port (module parameter "cm_port") on
 * every address.  The first AC towards a peer creates an active QP
 * (resolve address, resolve route, connect); later ACs reuse the peer's QPs,
 * up to rs_qps_per_peer of them, each AC on the least loaded one.  A
 * CONNECT_REQUEST from a peer creates a passive QP, which this host's ACs
 * use as well.  All QPs of a device share its SRQ; each has its own CQ.
 *
 * The active side gets CONNECT_RESPONSE, not ESTABLISHED (rdmashare moves
 * its QPs through INIT, RTR and RTS itself, qp.c), and answers it with
 * rdma_accept().  rdma_cm handlers never destroy their own cm_id once a QP
 * owns it: the QP's down work does, in process context; the one exception
 * is a device removal under a QP still connecting (rs_cm_device_removal()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in6.h>
#include <linux/module.h>
#include <net/sock.h>

#include <rdma/ib_cm.h>

#include "trace.h"
#include "transport.h"

unsigned int rs_cm_port = 18861;
module_param_named(cm_port, rs_cm_port, uint, 0444);
MODULE_PARM_DESC(cm_port, "rdma_cm port rdmashare listens on and connects to (18861)");

#define RS_CM_TIMEOUT_MS	5000

/*
 * Private data of the REQ and of the REP: the newest protocol version the
 * active side offers (proto_version in sysfs, RS_PROTO_VERSION unless an
 * administrator lowered it), and in the REP the one the passive side chose
 * (the lower of the two sides' offers); from version 2, the size of the sender's
 * receive buffers, which bounds a batch (proto.h).  Version 1 sends the
 * first four bytes only.
 */
struct rs_cm_priv {
	u8 version;
	u8 resv[3];
	__be32 rx_size;
} __packed;

#define RS_CM_PRIV_V1_LEN	4

/*
 * The version and the peer's receive buffer size from its private data;
 * @newest is the newest this host offers (a REQ's version above it is
 * lowered to it).  A peer that sends none, an older version than this host
 * speaks, a REP whose version exceeds the REQ's (@rep), or receive buffers
 * too small for a control record is refused.
 */
static int rs_cm_priv_parse(struct rs_qp *qp, const void *data, u8 len, u8 newest, bool rep)
{
	const struct rs_cm_priv *priv = data;
	u32 rx_size;

	if (!data || len < RS_CM_PRIV_V1_LEN || priv->version < RS_PROTO_VERSION_MIN ||
	    (rep && priv->version > newest))
		return -EPROTO;
	qp->version = min(priv->version, newest);
	qp->peer_rx_size = 0;
	if (qp->version < 2)
		return 0;
	if (len < sizeof(*priv))
		return -EPROTO;
	rx_size = be32_to_cpu(priv->rx_size);
	if (rx_size < RS_HDR_LEN + RS_CONN_PARAMS_LEN)
		return -EPROTO;
	qp->peer_rx_size = min_t(u32, rx_size, RS_HDR_LEN + RS_PROTO_MAX_CHUNK);
	return 0;
}

/* This host's private data for @version. */
static void rs_cm_priv_init(struct rs_qp *qp, u8 version, struct rs_cm_priv *priv,
			    struct rdma_conn_param *param)
{
	memset(priv, 0, sizeof(*priv));
	priv->version = version;
	priv->rx_size = cpu_to_be32(qp->rdev->rx_buf_size);
	param->private_data = priv;
	param->private_data_len = version < 2 ? RS_CM_PRIV_V1_LEN : sizeof(*priv);
}

static struct rdma_cm_id *rs_listen_id;
struct workqueue_struct *rs_wq;

static int rs_cm_connect_req(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	const struct rs_cm_priv *priv = ev->param.conn.private_data;
	struct sockaddr *src = (struct sockaddr *)&id->route.addr.dst_addr;
	struct rdma_conn_param param = {};
	struct rs_cm_priv reply;
	struct rs_peer *peer;
	struct rs_qp *qp;
	int ret;

	if (ev->param.conn.private_data_len < RS_CM_PRIV_V1_LEN ||
	    priv->version < RS_PROTO_VERSION_MIN) {
		pr_warn_ratelimited("rejected a peer speaking another protocol\n");
		rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
		return 1;
	}
	/* Only a peer's rdmashare: see rs_cm_bind_secure(). */
	if (rs_addr_port(src) >= PROT_SOCK) {
		pr_warn_ratelimited("rejected %pISc: port %u is not a privileged one\n",
				    src, rs_addr_port(src));
		atomic_long_inc(&rs_refused_peers);
		rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
		return 1;
	}

	mutex_lock(&rs_peers_lock);
	peer = rs_peer_get(src);
	if (!peer) {
		mutex_unlock(&rs_peers_lock);
		goto reject;
	}
	if (rs_qps_capped(peer)) {
		pr_warn_ratelimited("rejected %pISc: QP limit reached\n", src);
		atomic_long_inc(&rs_refused_peers);
		mutex_unlock(&rs_peers_lock);
		rs_peer_put(peer);
		goto reject;
	}
	qp = rs_qp_alloc(peer, false);
	if (!qp) {
		mutex_unlock(&rs_peers_lock);
		rs_peer_put(peer);
		goto reject;
	}
	qp->cm_id = id;
	qp->loop = rs_addr_equal((struct sockaddr *)&id->route.addr.src_addr,
				 (struct sockaddr *)&id->route.addr.dst_addr);
	/*
	 * The address the peer reached, before the QP can receive: its first
	 * CONNECT may come before ESTABLISHED, and goes to the listener of
	 * that address (rs_ac_peer_connect()).
	 */
	memcpy(&qp->local, &id->route.addr.src_addr, sizeof(qp->local));
	id->context = qp;
	ret = rs_cm_priv_parse(qp, priv, ev->param.conn.private_data_len,
			       READ_ONCE(rs_proto_version), false);
	if (ret) {
		pr_warn_ratelimited("rejected %pISc: bad protocol parameters\n", src);
		goto out_unlock;
	}
	ret = rs_qp_create_ib(qp);
	if (ret)
		goto out_unlock;
	kref_get(&qp->ref);		/* the peer list's */
	rs_peer_add_qp(peer, qp);
	mutex_unlock(&rs_peers_lock);

	ret = rs_qp_ready(qp);
	if (ret) {
		rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
	} else {
		rs_cm_priv_init(qp, qp->version, &reply, &param);
		param.qp_num = qp->qp_num;
		param.srq = 1;
		param.rnr_retry_count = RS_RNR_RETRY_COUNT;
		param.retry_count = RS_RETRY_COUNT;
		rs_qp_arm_setup(qp);
		ret = rdma_accept(id, &param);	/* rejects if it fails */
	}
	if (ret) {
		rs_qp_down(qp, ret);
		/* The down work destroys the id. */
	}
	rs_qp_put(qp);
	return 0;

out_unlock:
	mutex_unlock(&rs_peers_lock);
	/* The handler's return value destroys the id, not the free work. */
	qp->cm_id = NULL;
	rs_qp_put(qp);
reject:
	rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
	return 1;
}

/*
 * The device goes under a QP.  One still connecting (no verbs QP yet: only
 * handlers create it) gives its id to rdma_cm, which destroys it when this
 * returns non-zero: were the down work to destroy it, it could do so while
 * rdma_cm, after this handler, still cancels the route query the id was in
 * (cma_send_device_removal_put() then reads the device that _destroy_id()
 * has just cleared).  The QP is not down yet, so its down work is not
 * queued and has not read @cm_id: it will find none.  A QP with a verbs QP
 * keeps its id (its event handler may use it) for the down work, which
 * rdma_cm does not race with: such an id is past route resolution, and
 * nothing is cancelled.  So does a QP already down for another reason,
 * whose down work may hold the id now.
 */
static int rs_cm_device_removal(struct rs_qp *qp, struct rdma_cm_id *id)
{
	bool give = false;

	spin_lock_irq(&qp->lock);
	if (!qp->qp && qp->cm_id == id && qp->state != RS_QP_DOWN) {
		qp->cm_id = NULL;
		give = true;
	}
	spin_unlock_irq(&qp->lock);
	rs_qp_down(qp, -ECONNRESET);
	if (!give)
		return 0;
	id->context = NULL;
	return 1;
}

/* @qp is connected: its address first, for whoever finds it up (rs_ac_addrs()). */
static void rs_cm_established(struct rdma_cm_id *id, struct rs_qp *qp)
{
	if (!qp->local.ss_family)
		memcpy(&qp->local, &id->route.addr.src_addr, sizeof(qp->local));
	rs_qp_established(qp);
}

static int rs_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rs_qp *qp = id->context;
	struct rdma_conn_param param = {};
	struct rs_cm_priv priv;
	int ret;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return rs_cm_connect_req(id, ev);
	if (!qp)		/* the listener */
		return 0;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, RS_CM_TIMEOUT_MS);
		if (ret)
			rs_qp_down(qp, ret);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (READ_ONCE(qp->state) == RS_QP_DOWN)
			break;
		/* Its address, before the peer can send on it (as rs_cm_connect_req()). */
		memcpy(&qp->local, &id->route.addr.src_addr, sizeof(qp->local));
		mutex_lock(&rs_peers_lock);
		ret = rs_qp_create_ib(qp);
		mutex_unlock(&rs_peers_lock);
		if (!ret) {
			/* What this host offers, the most the REP may choose. */
			qp->version = READ_ONCE(rs_proto_version);
			rs_cm_priv_init(qp, qp->version, &priv, &param);
			param.qp_num = qp->qp_num;
			param.srq = 1;
			param.rnr_retry_count = RS_RNR_RETRY_COUNT;
			param.retry_count = RS_RETRY_COUNT;
			ret = rdma_connect_locked(id, &param);
		}
		if (ret)
			rs_qp_down(qp, ret);
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		/* The peer's REP: ready the QP, then send the RTU. */
		if (READ_ONCE(qp->state) == RS_QP_DOWN) {
			/* The down work may be destroying the QP. */
			rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
			break;
		}
		ret = rs_cm_priv_parse(qp, ev->param.conn.private_data,
				       ev->param.conn.private_data_len, qp->version, true);
		if (ret)
			pr_warn_ratelimited("QP %u: the peer's REP has bad protocol parameters\n",
					    qp->qp_num);
		else
			ret = rs_qp_ready(qp);
		if (ret)
			rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
		else
			ret = rdma_accept(id, NULL);	/* rejects if it fails */
		if (ret)
			rs_qp_down(qp, ret);
		else
			rs_cm_established(id, qp);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		rs_cm_established(id, qp);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		rs_qp_down(qp, -EHOSTUNREACH);
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
		rs_qp_down(qp, -ETIMEDOUT);
		break;
	case RDMA_CM_EVENT_REJECTED:
		rs_qp_down(qp, -ECONNREFUSED);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return rs_cm_device_removal(qp, id);
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		rs_qp_down(qp, -ECONNRESET);
		break;
	default:
		break;
	}
	return 0;
}

/*
 * Peer authentication (Documentation/design.rst, "Security").  A CONNECT
 * REQUEST is accepted only from a privileged port (below PROT_SOCK), which
 * only a process with CAP_NET_BIND_SERVICE can bind, as NFS's "secure
 * ports": what connects is the peer's rdmashare (or its root), never a user
 * process.  An active QP's cm_id is therefore bound to one, from the connect
 * work (a kernel thread has the capability whoever's CONNECT started it).
 * With SO_REUSEADDR semantics among rdmashare's ids, so that every QP need
 * not have a port of its own; the ports are still spread over the range,
 * and one that another privileged process holds is skipped.
 */
#define RS_SECURE_PORT_MIN	665
#define RS_SECURE_PORT_MAX	(PROT_SOCK - 1)

static atomic_t rs_next_port = ATOMIC_INIT(0);
atomic_long_t rs_refused_peers = ATOMIC_LONG_INIT(0);

u16 rs_addr_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
}

static void rs_addr_set_port(struct sockaddr_storage *ss, u16 port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static int rs_cm_bind_secure(struct rdma_cm_id *id, sa_family_t family)
{
	const u32 n = RS_SECURE_PORT_MAX - RS_SECURE_PORT_MIN + 1;
	struct sockaddr_storage any = { .ss_family = family };
	u32 i, first;
	int ret;

	ret = rdma_set_reuseaddr(id, 1);
	if (ret)
		return ret;
	first = (u32)atomic_inc_return(&rs_next_port);
	for (i = 0; i < n; i++) {
		rs_addr_set_port(&any, RS_SECURE_PORT_MIN + (first + i) % n);
		ret = rdma_bind_addr(id, (struct sockaddr *)&any);
		if (ret != -EADDRINUSE && ret != -EADDRNOTAVAIL)
			return ret;
	}
	return ret;
}

/*
 * An active QP's first step, bind and address resolution, off the caller's
 * CONNECT: the down work cancels it (or waits for it) before it destroys the
 * cm_id, so that no setup call runs on a cm_id being destroyed.
 */
void rs_qp_connect_work(struct work_struct *work)
{
	struct rs_qp *qp = container_of(work, struct rs_qp, connect_work);
	struct sockaddr_storage dst;
	int ret;

	if (READ_ONCE(qp->state) == RS_QP_DOWN)
		goto out_put;
	memcpy(&dst, &qp->peer->addr, sizeof(dst));
	rs_addr_set_port(&dst, rs_cm_port);
	ret = rs_cm_bind_secure(qp->cm_id, dst.ss_family);
	if (!ret)
		ret = rdma_resolve_addr(qp->cm_id, NULL, (struct sockaddr *)&dst,
					RS_CM_TIMEOUT_MS);
	if (ret) {
		pr_warn_ratelimited("cannot connect to %pISc: %d\n", &dst, ret);
		rs_qp_down(qp, ret);
	}
out_put:
	rs_qp_put(qp);
}

/*
 * A QP to @peer for an AC of @rf's, up or connecting (a new one if
 * needed, rs_qp_choose()): with a reference, counted as a waiter until
 * the caller calls rs_qp_unwait(); or NULL and *@err.  Its state changes
 * wake qp->wait.
 */
struct rs_qp *rs_qp_get(struct rs_peer *peer, const struct rs_file *rf, int *err)
{
	struct rs_qp *qp;
	int ret;

	mutex_lock(&rs_peers_lock);
	qp = rs_qp_choose(peer, rf);
	if (qp) {
		kref_get(&qp->ref);
		atomic_inc(&qp->nr_waiters);
		mutex_unlock(&rs_peers_lock);
		return qp;
	}

	ret = -ENOBUFS;
	if (rs_qps_capped(peer))
		goto out_unlock;
	ret = -ENOMEM;
	qp = rs_qp_alloc(peer, true);
	if (!qp)
		goto out_unlock;
	kref_get(&peer->ref);
	qp->cm_id = rdma_create_id(&init_net, rs_cm_handler, qp, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(qp->cm_id)) {
		ret = PTR_ERR(qp->cm_id);
		qp->cm_id = NULL;
		rs_qp_put(qp);
		goto out_unlock;
	}
	kref_get(&qp->ref);		/* the peer list's; the first is ours */
	atomic_inc(&qp->nr_waiters);
	qp->last_rf = rf;
	rs_peer_add_qp(peer, qp);
	kref_get(&qp->ref);		/* the connect work's */
	queue_work(rs_wq, &qp->connect_work);
	mutex_unlock(&rs_peers_lock);
	return qp;

out_unlock:
	mutex_unlock(&rs_peers_lock);
	*err = ret;
	return NULL;
}

/*
 * A CONNECT that waited for @qp (a waiter still) timed out: rdma_cm may
 * retry a REQ to a silent peer for minutes, so the QP goes down and the
 * next CONNECT starts afresh, unless other CONNECTs still wait for it
 * (theirs may be longer).
 */
void rs_qp_give_up(struct rs_qp *qp)
{
	bool down;

	mutex_lock(&rs_peers_lock);
	spin_lock_irq(&qp->lock);
	down = qp->state == RS_QP_CONNECTING && atomic_read(&qp->nr_waiters) == 1;
	spin_unlock_irq(&qp->lock);
	if (down)
		rs_qp_down(qp, -ETIMEDOUT);
	mutex_unlock(&rs_peers_lock);
}

/*
 * A QP to @peer for an AC of @rf's that is up, connecting one if needed,
 * waiting at most @timeout jiffies.  Returns it with a reference, counted
 * as a waiter until the caller calls rs_qp_unwait(); or NULL and *@err.
 */
struct rs_qp *rs_qp_get_up(struct rs_peer *peer, const struct rs_file *rf, long timeout,
			   int *err)
{
	struct rs_qp *qp;
	long left;

	qp = rs_qp_get(peer, rf, err);
	if (!qp)
		return NULL;
	left = wait_event_interruptible_timeout(qp->wait, qp->state != RS_QP_CONNECTING,
						timeout);
	if (left > 0 && qp->state == RS_QP_UP)
		return qp;
	if (left < 0) {
		*err = -EINTR;
	} else if (!left) {
		*err = -ETIMEDOUT;
		rs_qp_give_up(qp);
	} else {
		*err = qp->error ?: -ECONNRESET;
	}
	rs_qp_unwait(qp);
	rs_qp_put(qp);
	return NULL;
}

int rs_cm_init(void)
{
	if (!rs_cm_port || rs_cm_port > 65535) {
		pr_err("cm_port=%u: not a port\n", rs_cm_port);
		return -EINVAL;
	}
	rs_wq = alloc_workqueue("rdmashare", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!rs_wq)
		return -ENOMEM;
	return 0;
}

/*
 * Listen for peers, once the devices are known; rs_cm_unlisten() stops
 * before they are released, so that no CONNECT REQUEST creates a QP on a
 * device being removed at module exit.
 */
int rs_cm_listen(void)
{
	struct sockaddr_in6 any = {
		.sin6_family = AF_INET6,
		.sin6_addr = IN6ADDR_ANY_INIT,
		.sin6_port = htons(rs_cm_port),
	};
	int ret;

	rs_listen_id = rdma_create_id(&init_net, rs_cm_handler, NULL, RDMA_PS_TCP,
				      IB_QPT_RC);
	if (IS_ERR(rs_listen_id))
		return PTR_ERR(rs_listen_id);
	ret = rdma_set_afonly(rs_listen_id, 0);
	if (ret)
		goto out_destroy_id;
	ret = rdma_bind_addr(rs_listen_id, (struct sockaddr *)&any);
	if (ret) {
		pr_err("cannot bind rdma_cm port %u: %d\n", rs_cm_port, ret);
		goto out_destroy_id;
	}
	ret = rdma_listen(rs_listen_id, 128);
	if (ret)
		goto out_destroy_id;
	return 0;

out_destroy_id:
	rdma_destroy_id(rs_listen_id);
	return ret;
}

/* No new peers: the listener's handlers have finished when this returns. */
void rs_cm_unlisten(void)
{
	rdma_destroy_id(rs_listen_id);
}

/* Module exit: every file is closed; take down the idle QPs left. */
void rs_cm_exit(void)
{
	rs_peers_down(NULL);
	flush_workqueue(rs_wq);
	destroy_workqueue(rs_wq);
}

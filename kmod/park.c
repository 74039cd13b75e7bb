// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: rdma_cm ids of QPs that went down while their port was down.
 *
 * Taking a connected QP down sends a CM message: a DREQ (rdma_disconnect(),
 * or rdma_destroy_id() of a connected id), a REJ for one half connected.
 * With the port down it cannot go out, and rxe then moves the port's GSI QP
 * (QP1) to the error state, which the MAD layer never recovers: every later
 * CM message on that port, a peer's new CONNECT REQUEST among them, is lost
 * until the rxe device is made anew.  So the id of a QP that goes down while
 * its port is down is parked: rs_cm_handler() no longer sees it (its
 * context is cleared under the handler lock), it waits on its device, and
 * when the port is active again it is disconnected and destroyed.  A device
 * removed meanwhile destroys its parked ids (nothing can be sent then).
 *
 * At most RS_MAX_PARKED ids per device wait; beyond, an id goes at once.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/netdevice.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>
#include <rdma/rdma_cm.h>

#include "rdmashare.h"
#include "transport.h"

#define RS_MAX_PARKED	1024

/**
 * struct rs_park - a device's parked ids
 * @rdev: the device
 * @event_handler: its async events: a port active again
 * @lock: protects @ids, @nr and @closed
 * @ids: the parked ids (struct rs_parked)
 * @nr: entries in @ids
 * @closed: the device goes: no more parking
 * @work: disconnects and destroys the ids of active ports
 */
struct rs_park {
	struct rs_device *rdev;
	struct ib_event_handler event_handler;
	struct mutex lock;		/* @ids */
	struct list_head ids;
	u32 nr;
	bool closed;
	struct work_struct work;
};

struct rs_parked {
	struct list_head node;
	struct rdma_cm_id *id;
};

/*
 * Can the id's port send?  Its cached state says so only once the port's
 * event went through ib_core, later than the QP itself can fail: for RoCE
 * the netdev the route goes through must also be up and have a carrier.
 */
static bool rs_port_active(struct rdma_cm_id *id)
{
	struct rdma_dev_addr *addr = &id->route.addr.dev_addr;
	enum ib_port_state state;
	struct net_device *ndev;
	bool up = true;

	if (ib_get_cached_port_state(id->device, id->port_num, &state))
		return true;	/* no such port: nothing to wait for */
	if (state != IB_PORT_ACTIVE)
		return false;
	if (!addr->bound_dev_if || !addr->net)
		return true;
	rcu_read_lock();
	ndev = dev_get_by_index_rcu(addr->net, addr->bound_dev_if);
	if (ndev)
		up = netif_running(ndev) && netif_carrier_ok(ndev);
	rcu_read_unlock();
	return up;
}

/* Should the down work of a QP hold back the CM messages of @id? */
bool rs_park_wanted(struct rs_device *rdev, struct rdma_cm_id *id)
{
	return rdev && id->device && !rs_port_active(id);
}

/*
 * The down work of a QP is done with @id, and the QP is destroyed: true if
 * the id was parked (the caller must not touch it again), false if the
 * caller disconnects and destroys it now (its port is up again, the device
 * goes, or too many wait).
 */
bool rs_park_cm_id(struct rs_device *rdev, struct rdma_cm_id *id)
{
	struct rs_park *park;
	struct rs_parked *p;

	if (!rs_park_wanted(rdev, id))
		return false;
	park = rdev->park;
	p = kmalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return false;
	p->id = id;
	/* No handler runs now, and none will see the QP again. */
	rdma_lock_handler(id);
	id->context = NULL;
	rdma_unlock_handler(id);

	mutex_lock(&park->lock);
	if (park->closed || park->nr >= RS_MAX_PARKED) {
		mutex_unlock(&park->lock);
		kfree(p);
		return false;
	}
	list_add_tail(&p->node, &park->ids);
	park->nr++;
	mutex_unlock(&park->lock);
	pr_info_ratelimited("%s: port %u down: the peer hears of a lost QP when it is up\n",
			    dev_name(&rdev->ibdev->dev), id->port_num);
	/* The port may have come up before the id was listed. */
	if (rs_port_active(id))
		queue_work(rs_wq, &park->work);
	return true;
}

static void rs_park_destroy(struct list_head *list, bool disconnect)
{
	struct rs_parked *p, *tmp;

	list_for_each_entry_safe(p, tmp, list, node) {
		if (disconnect)
			rdma_disconnect(p->id);
		rdma_destroy_id(p->id);
		kfree(p);
	}
}

/* Ids whose port is active again: disconnect and destroy them. */
static void rs_park_work(struct work_struct *work)
{
	struct rs_park *park = container_of(work, struct rs_park, work);
	struct rs_parked *p, *tmp;
	LIST_HEAD(ready);

	mutex_lock(&park->lock);
	list_for_each_entry_safe(p, tmp, &park->ids, node) {
		if (rs_port_active(p->id)) {
			list_move_tail(&p->node, &ready);
			park->nr--;
		}
	}
	mutex_unlock(&park->lock);
	rs_park_destroy(&ready, true);
}

static void rs_park_event(struct ib_event_handler *handler, struct ib_event *ev)
{
	struct rs_park *park = container_of(handler, struct rs_park, event_handler);

	if (ev->event == IB_EVENT_PORT_ACTIVE)
		queue_work(rs_wq, &park->work);
}

int rs_park_init(struct rs_device *rdev)
{
	struct rs_park *park;

	park = kzalloc(sizeof(*park), GFP_KERNEL);
	if (!park)
		return -ENOMEM;
	park->rdev = rdev;
	mutex_init(&park->lock);
	INIT_LIST_HEAD(&park->ids);
	INIT_WORK(&park->work, rs_park_work);
	INIT_IB_EVENT_HANDLER(&park->event_handler, rdev->ibdev, rs_park_event);
	ib_register_event_handler(&park->event_handler);
	rdev->park = park;
	return 0;
}

/* The device goes: after its QPs' down works, every parked id with it. */
void rs_park_exit(struct rs_device *rdev)
{
	struct rs_park *park = rdev->park;
	LIST_HEAD(all);

	ib_unregister_event_handler(&park->event_handler);
	cancel_work_sync(&park->work);
	mutex_lock(&park->lock);
	park->closed = true;
	list_splice_init(&park->ids, &all);
	park->nr = 0;
	mutex_unlock(&park->lock);
	rs_park_destroy(&all, false);
	mutex_destroy(&park->lock);
	kfree(park);
	rdev->park = NULL;
}

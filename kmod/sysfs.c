// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: sysfs.
 *
 *   /sys/class/misc/rdmashare/abi_version
 *   /sys/class/misc/rdmashare/<tunable> (tunables.c)
 *   /sys/class/misc/rdmashare/devices/<ibdev>/{name,num_ports,srq_size,qps,acs}
 *   /sys/class/misc/rdmashare/devices/<ibdev>/stats/<counter>
 *   /sys/class/misc/rdmashare/peers/<addr>/{address,qps,acs}
 *   /sys/class/misc/rdmashare/peers/<addr>/stats/<counter>
 *
 * Documented in Documentation/ABI/testing/sysfs-class-misc-rdmashare.
 */
#include <linux/device.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <rdma/ib_verbs.h>
#include <uapi/linux/rdmashare.h>

#include "transport.h"

static struct kobject *rs_devices_kobj;
static struct kobject *rs_peers_kobj;

static ssize_t abi_version_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", RDMASHARE_ABI_VERSION);
}
static DEVICE_ATTR_RO(abi_version);

/* CONNECT REQUESTs refused: not from a privileged port, or over a QP limit. */
static ssize_t peers_refused_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%ld\n", atomic_long_read(&rs_refused_peers));
}
static DEVICE_ATTR_RO(peers_refused);

/* QPs to all peers (rdmashare's own, any state), against max_qps. */
static ssize_t qps_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&rs_nr_qps));
}
static DEVICE_ATTR_RO(qps);

static struct attribute *rs_misc_attrs[] = {
	&dev_attr_abi_version.attr,
	&dev_attr_peers_refused.attr,
	&dev_attr_qps.attr,
	NULL,
};

static const struct attribute_group rs_misc_group = {
	.attrs = rs_misc_attrs,
};

const struct attribute_group *rs_misc_groups[] = {
	&rs_misc_group,
	&rs_tunables_group,
	NULL,
};

/*
 * Devices and peers: a read-only attribute is a show() of its own, or
 * (show NULL) a counter of the object's rs_stats, in a "stats" group.
 * kobject_del() waits for readers, so the object is valid in every show().
 */
struct rs_obj_attr {
	struct attribute attr;
	ssize_t (*show)(struct kobject *kobj, char *buf);
	int stat;
};

#define RS_OBJ_ATTR(_var, _name, _show) \
	static struct rs_obj_attr rs_attr_##_var = { \
		.attr = { .name = __stringify(_name), .mode = 0444 }, \
		.show = _show, \
	}

#define RS_STAT_ATTR(_name, _i) \
	static struct rs_obj_attr rs_stat_##_name = { \
		.attr = { .name = __stringify(_name), .mode = 0444 }, \
		.stat = _i, \
	}

RS_STAT_ATTR(tx_msgs, RS_STAT_TX_MSGS);
RS_STAT_ATTR(tx_bytes, RS_STAT_TX_BYTES);
RS_STAT_ATTR(tx_chunks, RS_STAT_TX_CHUNKS);
RS_STAT_ATTR(rx_msgs, RS_STAT_RX_MSGS);
RS_STAT_ATTR(rx_bytes, RS_STAT_RX_BYTES);
RS_STAT_ATTR(rx_chunks, RS_STAT_RX_CHUNKS);
RS_STAT_ATTR(ctrl_tx, RS_STAT_CTRL_TX);
RS_STAT_ATTR(ctrl_rx, RS_STAT_CTRL_RX);
RS_STAT_ATTR(credit_stalls, RS_STAT_CREDIT_STALLS);
RS_STAT_ATTR(errors, RS_STAT_ERRORS);
RS_STAT_ATTR(qps_up, RS_STAT_QPS_UP);
RS_STAT_ATTR(qps_lost, RS_STAT_QPS_LOST);
RS_STAT_ATTR(reconnects, RS_STAT_RECONNECTS);
RS_STAT_ATTR(srq_refills, RS_STAT_SRQ_REFILLS);
RS_STAT_ATTR(srq_low, RS_STAT_SRQ_LOW);
RS_STAT_ATTR(srq_renewals, RS_STAT_SRQ_RENEWALS);
RS_STAT_ATTR(tx_sends, RS_STAT_TX_SENDS);
RS_STAT_ATTR(rx_sends, RS_STAT_RX_SENDS);
RS_STAT_ATTR(tx_wire_bytes, RS_STAT_TX_WIRE_BYTES);
RS_STAT_ATTR(tx_copied, RS_STAT_TX_COPIED);
RS_STAT_ATTR(rx_copied, RS_STAT_RX_COPIED);
RS_STAT_ATTR(sq_polled, RS_STAT_SQ_POLLED);
RS_STAT_ATTR(tx_placed, RS_STAT_TX_PLACED);
RS_STAT_ATTR(busy_polled, RS_STAT_BUSY_POLLED);
RS_STAT_ATTR(tx_writes, RS_STAT_TX_WRITES);
RS_STAT_ATTR(rx_writes, RS_STAT_RX_WRITES);
RS_STAT_ATTR(bulk_held, RS_STAT_BULK_HELD);
RS_STAT_ATTR(tx_zcopy, RS_STAT_TX_ZCOPY);
RS_STAT_ATTR(write_copied, RS_STAT_WRITE_COPIED);
RS_STAT_ATTR(read_copied, RS_STAT_READ_COPIED);
RS_STAT_ATTR(rx_zcopy, RS_STAT_RX_ZCOPY);
RS_STAT_ATTR(sleep_polled, RS_STAT_SLEEP_POLLED);
RS_STAT_ATTR(tx_appended, RS_STAT_TX_APPENDED);
RS_STAT_ATTR(gate_held, RS_STAT_GATE_HELD);

static struct attribute *rs_stat_attrs[] = {
	&rs_stat_tx_msgs.attr,
	&rs_stat_tx_bytes.attr,
	&rs_stat_tx_chunks.attr,
	&rs_stat_rx_msgs.attr,
	&rs_stat_rx_bytes.attr,
	&rs_stat_rx_chunks.attr,
	&rs_stat_ctrl_tx.attr,
	&rs_stat_ctrl_rx.attr,
	&rs_stat_credit_stalls.attr,
	&rs_stat_errors.attr,
	&rs_stat_qps_up.attr,
	&rs_stat_qps_lost.attr,
	&rs_stat_reconnects.attr,
	&rs_stat_srq_refills.attr,
	&rs_stat_srq_low.attr,
	&rs_stat_srq_renewals.attr,
	&rs_stat_tx_sends.attr,
	&rs_stat_rx_sends.attr,
	&rs_stat_tx_wire_bytes.attr,
	&rs_stat_tx_copied.attr,
	&rs_stat_rx_copied.attr,
	&rs_stat_sq_polled.attr,
	&rs_stat_tx_placed.attr,
	&rs_stat_busy_polled.attr,
	&rs_stat_tx_writes.attr,
	&rs_stat_rx_writes.attr,
	&rs_stat_bulk_held.attr,
	&rs_stat_tx_zcopy.attr,
	&rs_stat_write_copied.attr,
	&rs_stat_read_copied.attr,
	&rs_stat_rx_zcopy.attr,
	&rs_stat_sleep_polled.attr,
	&rs_stat_tx_appended.attr,
	&rs_stat_gate_held.attr,
	NULL,
};

static const struct kobj_type rs_dev_ktype;

/* The SRQ is a device's: its counters are not in a peer's directory. */
static umode_t rs_stat_visible(struct kobject *kobj, struct attribute *attr, int i)
{
	if (kobj->ktype != &rs_dev_ktype &&
	    (attr == &rs_stat_srq_refills.attr || attr == &rs_stat_srq_low.attr ||
	     attr == &rs_stat_srq_renewals.attr))
		return 0;
	return attr->mode;
}

static const struct attribute_group rs_stats_group = {
	.name = "stats",
	.attrs = rs_stat_attrs,
	.is_visible = rs_stat_visible,
};

static ssize_t rs_stat_show(const struct rs_stats *stats, int i, char *buf)
{
	return sysfs_emit(buf, "%llu\n", rs_stat_read(stats, i));
}

/* ---- devices/<ibdev> ---- */

#define to_rs_device(k) container_of(k, struct rs_device, kobj)

static ssize_t rs_dev_name_show(struct kobject *kobj, char *buf)
{
	return sysfs_emit(buf, "%s\n", dev_name(&to_rs_device(kobj)->ibdev->dev));
}

static ssize_t rs_dev_num_ports_show(struct kobject *kobj, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_rs_device(kobj)->ibdev->phys_port_cnt);
}

static ssize_t rs_dev_srq_size_show(struct kobject *kobj, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_rs_device(kobj)->srq_size);
}

static ssize_t rs_dev_qps_show(struct kobject *kobj, char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&to_rs_device(kobj)->nr_qps));
}

static ssize_t rs_dev_acs_show(struct kobject *kobj, char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&to_rs_device(kobj)->nr_acs));
}

RS_OBJ_ATTR(dev_name, name, rs_dev_name_show);
RS_OBJ_ATTR(dev_num_ports, num_ports, rs_dev_num_ports_show);
RS_OBJ_ATTR(dev_srq_size, srq_size, rs_dev_srq_size_show);
RS_OBJ_ATTR(dev_qps, qps, rs_dev_qps_show);
RS_OBJ_ATTR(dev_acs, acs, rs_dev_acs_show);

static struct attribute *rs_dev_attrs[] = {
	&rs_attr_dev_name.attr,
	&rs_attr_dev_num_ports.attr,
	&rs_attr_dev_srq_size.attr,
	&rs_attr_dev_qps.attr,
	&rs_attr_dev_acs.attr,
	NULL,
};

static const struct attribute_group rs_dev_group = {
	.attrs = rs_dev_attrs,
};

static const struct attribute_group *rs_dev_groups[] = {
	&rs_dev_group,
	&rs_stats_group,
	NULL,
};

static ssize_t rs_dev_attr_show(struct kobject *kobj, struct attribute *attr,
				char *buf)
{
	struct rs_obj_attr *a = container_of(attr, struct rs_obj_attr, attr);

	if (a->show)
		return a->show(kobj, buf);
	return rs_stat_show(&to_rs_device(kobj)->stats, a->stat, buf);
}

static const struct sysfs_ops rs_dev_sysfs_ops = {
	.show = rs_dev_attr_show,
};

static void rs_dev_release(struct kobject *kobj)
{
	struct rs_device *rdev = to_rs_device(kobj);

	rs_stats_free(&rdev->stats);
	kfree(rdev);
}

static const struct kobj_type rs_dev_ktype = {
	.release = rs_dev_release,
	.sysfs_ops = &rs_dev_sysfs_ops,
	.default_groups = rs_dev_groups,
};

/* From here on rdev is freed by rs_sysfs_put_device(), never by kfree(). */
void rs_sysfs_init_device(struct rs_device *rdev)
{
	kobject_init(&rdev->kobj, &rs_dev_ktype);
}

void rs_sysfs_put_device(struct rs_device *rdev)
{
	kobject_put(&rdev->kobj);
}

/* Called with rs_devices_lock held, so a rename cannot race with it. */
int rs_sysfs_add_device(struct rs_device *rdev)
{
	return kobject_add(&rdev->kobj, rs_devices_kobj, "%s",
			   dev_name(&rdev->ibdev->dev));
}

/* Removes the directory; returns once no show() runs any more. */
void rs_sysfs_del_device(struct rs_device *rdev)
{
	kobject_del(&rdev->kobj);
}

void rs_sysfs_rename_device(struct rs_device *rdev)
{
	int ret;

	ret = kobject_rename(&rdev->kobj, dev_name(&rdev->ibdev->dev));
	if (ret)
		pr_warn("rdmashare: cannot rename %s in sysfs: %d\n",
			kobject_name(&rdev->kobj), ret);
}

/* ---- peers/<addr> ---- */

#define to_rs_peer(k) container_of(k, struct rs_peer, kobj)

static ssize_t rs_peer_address_show(struct kobject *kobj, char *buf)
{
	return sysfs_emit(buf, "%pISc\n", &to_rs_peer(kobj)->addr);
}

static ssize_t rs_peer_qps_show(struct kobject *kobj, char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&to_rs_peer(kobj)->nr_qps));
}

static ssize_t rs_peer_acs_show(struct kobject *kobj, char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&to_rs_peer(kobj)->nr_acs));
}

RS_OBJ_ATTR(peer_address, address, rs_peer_address_show);
RS_OBJ_ATTR(peer_qps, qps, rs_peer_qps_show);
RS_OBJ_ATTR(peer_acs, acs, rs_peer_acs_show);

static struct attribute *rs_peer_attrs[] = {
	&rs_attr_peer_address.attr,
	&rs_attr_peer_qps.attr,
	&rs_attr_peer_acs.attr,
	NULL,
};

static const struct attribute_group rs_peer_group = {
	.attrs = rs_peer_attrs,
};

static const struct attribute_group *rs_peer_groups[] = {
	&rs_peer_group,
	&rs_stats_group,
	NULL,
};

static ssize_t rs_peer_attr_show(struct kobject *kobj, struct attribute *attr,
				 char *buf)
{
	struct rs_obj_attr *a = container_of(attr, struct rs_obj_attr, attr);

	if (a->show)
		return a->show(kobj, buf);
	return rs_stat_show(&to_rs_peer(kobj)->stats, a->stat, buf);
}

static const struct sysfs_ops rs_peer_sysfs_ops = {
	.show = rs_peer_attr_show,
};

static void rs_peer_kobj_release(struct kobject *kobj)
{
	struct rs_peer *peer = to_rs_peer(kobj);

	rs_stats_free(&peer->stats);
	kfree(peer);
}

static const struct kobj_type rs_peer_ktype = {
	.release = rs_peer_kobj_release,
	.sysfs_ops = &rs_peer_sysfs_ops,
	.default_groups = rs_peer_groups,
};

/* From here on the peer is freed by rs_sysfs_put_peer(), never by kfree(). */
void rs_sysfs_init_peer(struct rs_peer *peer)
{
	kobject_init(&peer->kobj, &rs_peer_ktype);
}

/*
 * Called with rs_peers_lock held, which also keeps a peer going away from
 * racing with a new one at the same address.  A peer without a directory
 * works all the same.
 */
void rs_sysfs_add_peer(struct rs_peer *peer)
{
	int ret;

	ret = kobject_add(&peer->kobj, rs_peers_kobj, "%pISc", &peer->addr);
	if (ret)
		pr_warn("rdmashare: no sysfs directory for peer %pISc: %d\n",
			&peer->addr, ret);
	peer->in_sysfs = !ret;
}

/* Called with rs_peers_lock held; returns once no show() runs any more. */
void rs_sysfs_del_peer(struct rs_peer *peer)
{
	if (peer->in_sysfs)
		kobject_del(&peer->kobj);
	peer->in_sysfs = false;
}

void rs_sysfs_put_peer(struct rs_peer *peer)
{
	kobject_put(&peer->kobj);
}

int rs_sysfs_init(struct device *misc_dev)
{
	rs_devices_kobj = kobject_create_and_add("devices", &misc_dev->kobj);
	if (!rs_devices_kobj)
		return -ENOMEM;
	rs_peers_kobj = kobject_create_and_add("peers", &misc_dev->kobj);
	if (!rs_peers_kobj) {
		kobject_put(rs_devices_kobj);
		return -ENOMEM;
	}
	return 0;
}

void rs_sysfs_exit(void)
{
	kobject_put(rs_peers_kobj);
	kobject_put(rs_devices_kobj);
}

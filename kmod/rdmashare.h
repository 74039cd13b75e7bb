/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: internal declarations shared by the module's files.
 */
#ifndef _RDMASHARE_H
#define _RDMASHARE_H

#include <linux/kobject.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <uapi/linux/rdmashare.h>

#include "actable.h"
#include "area.h"
#include "ring.h"
#include "stats.h"

struct ib_device;
struct ib_pd;
struct ib_srq;
struct rs_rx_buf;

/**
 * struct rs_device - one RDMA device the module uses
 * @ibdev: the ib_core device; valid until rs_ib_remove() returns
 * @pd: protection domain for everything rdmashare creates on @ibdev
 * @list: entry in rs_devices, under rs_devices_lock
 * @kobj: /sys/class/misc/rdmashare/devices/<name>
 * @srq: the shared receive queue of every QP on the device
 * @rx_bufs: the @srq_size receive buffers posted to @srq
 * @srq_size: receive buffers
 * @rx_buf_size: bytes per receive buffer: a header and the largest chunk
 * @nr_qps: QPs holding verbs resources on the device
 * @removing: rs_ib_remove() runs: no new QP on the device; set and read
 *	under rs_peers_lock
 * @park: rdma_cm ids of QPs that went down while their port was down
 *	(park.c)
 * @dma_maps: files' data areas mapped for the device (rs_dma_map.dev_node,
 *	memreg.c)
 * @dma_maps_gone: the device goes: no more mappings
 * @zc_users: writes' pages mapped for the device (zcopy.c); rs_ib_remove()
 *	waits for none, after its QPs went
 * @zc_gone: rs_ib_remove() waits for @zc_users: no more of them
 */
struct rs_park;
struct rs_zc;
struct user_struct;

struct rs_device {
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct list_head list;
	struct kobject kobj;

	struct ib_srq *srq;
	struct rs_rx_buf *rx_bufs;
	u32 srq_size;
	u32 rx_buf_size;
	atomic_t nr_qps;
	atomic_t nr_acs;
	atomic_t rx_posted;
	bool removing;
	struct rs_stats stats;
	struct rs_park *park;
	struct list_head dma_maps;
	bool dma_maps_gone;
	atomic_t zc_users;
	bool zc_gone;
};

/**
 * struct rs_ring_ctl - head and tail of one ring, on their own cache lines
 */
struct rs_ring_ctl {
	u32 head ____cacheline_aligned_in_smp;
	u32 tail ____cacheline_aligned_in_smp;
};

/**
 * struct rs_rings - start of the rings mapping (RDMASHARE_OFF_RINGS)
 *
 * User space finds every field through struct rdmashare_setup's offsets;
 * the SQEs and then the CQEs follow, cache-line aligned.  Everything here is
 * writable by user space: the kernel keeps its own copies of the masks and
 * sizes and never trusts the ones in this struct.
 */
struct rs_rings {
	struct rs_ring_ctl sq;
	struct rs_ring_ctl cq;
	u32 sq_ring_mask;
	u32 cq_ring_mask;
	u32 sq_ring_entries;
	u32 cq_ring_entries;
	atomic_t sq_flags;		/* RDMASHARE_SQ_* */
	u32 cq_flags;
};

#define RS_SQ_ENTRIES_MIN	1
#define RS_DATA_SIZE_LIMIT	SZ_256M	/* RDMASHARE_OFF_DATA's window */

/**
 * struct rs_file - an open /dev/rdmashare
 * @setup_lock: serialises RDMASHARE_IOC_SETUP
 * @ready: set (release) once the rings exist; they never change after
 * @rings: ring control words, then @sqes and @cqes (@rings_area)
 * @rings_size: bytes of @rings, page aligned
 * @sqes: the SQ entries
 * @cqes: the CQ entries
 * @data: the data area (@data_area)
 * @data_size: bytes of @data, page aligned
 * @sq_entries: SQ size, a power of two (the kernel's copy)
 * @cq_entries: CQ size, a power of two (the kernel's copy)
 * @submit_lock: serialises SQ consumers; protects @sq_head
 * @sq_head: the kernel's SQ head, published to @rings->sq.head
 * @sq_wakeup: RDMASHARE_SETUP_SQ_WAKEUP: completions consume the SQ too
 * @sq_poll: RS_SQ_POLL_PENDING: a completion found @submit_lock taken; its
 *	holder looks at the SQ once more before it leaves (submit.c)
 * @sq_work: consumes what a completion left of the SQ (a reference held
 *	while queued)
 * @ops_on_wire: the file's operations in SENDs built or posted, each of
 *	which completes without the application (sender.c): while there are
 *	any, a completion will come to consume the SQ
 * @cq_lock: protects @cq_tail and the reservation counts
 * @cq_tail: the kernel's CQ tail, published to @rings->cq.tail
 * @cq_reserved: completions promised to consumed work but not yet posted
 * @cq_waiting: of those, operations that wait on the peer
 * @cq_limits: how far @cq_waiting may go (ring.h)
 * @cq_overflow: completions that reserved no room and found none
 *	(struct rs_cq_over), in the order they came
 * @cq_dead: the file is released: such completions are dropped
 * @cq_wait: woken when a completion is posted
 * @poll_qp: the QP (its rs_qp.poll_id) that posted a completion here last:
 *	the one a thread that waits in ENTER busy-polls (poll.c)
 * @rings_area: the pages of @rings, charged to the memory cgroup of SETUP's
 *	caller
 * @data_area: the pages of @data, likewise
 * @user: the user charged for @rings and @data (RLIMIT_MEMLOCK)
 * @acct_pages: pages charged to @user
 * @mm_account: the process whose pinned_vm counts them (mmgrab()ed)
 * @pinned_pages: pages added to its pinned_vm
 * @owner: the user who opened the file: its ACs and listeners count against
 *	the per-user limits
 * @memcg: the memory cgroup of the process that opened the file (a
 *	reference): what the kernel allocates for the file outside its
 *	system calls (ACs a peer connects) is charged there
 * @ref: the file and each of its ACs hold one
 * @ac_lock: AC table changes and listener backlogs
 * @acs: the file's ACs by file-local id (additions under @ac_lock)
 * @closing: release has started; no new ACs, no SQ consumed (set under
 *	@submit_lock and @ac_lock)
 * @rx_lock: the receive slots and every AC's receive state
 * @rx_slots: receive slots, each @rx_slot_size bytes from @rx_offset in @data
 * @rx_unreserved: slots neither in use nor promised to an AC: the pool
 * @rx_wanting: version 3 ACs whose peer wants credits and got none yet, a
 *	FIFO (rs_ac.rx_want_node)
 * @rx_active: version 3 ACs that receive: with slots promised or in use,
 *	or waiting for some; the file's slots are shared among them
 * @rx_lenders: ACs with slots promised and unused (rs_ac.rx_lend_node),
 *	oldest promise first; at most @rx_slots of them
 * @slots: state of each slot
 * @rx_free: free slots, a stack of indices; @nr_rx_free entries
 * @map_size: bytes of @data: the application's part, then the slots
 * @dma_maps: @data mapped for each device its ACs use (rs_dma_map.file_node,
 *	memreg.c)
 * @map_work: maps @data for the devices, out of the completion handlers
 * @files_offset: where the file area starts in @data: the send buffers of
 *	the AC files the file makes (acfile.c), after the slots, not mapped
 * @files_pages: pages of the file area
 * @files_map: a bit per page of the file area, set while an AC file has it
 * @files_lock: protects @files_map
 * @ops: the operations that wait on the peer, as many as the CQ lets wait
 *	(@cq_limits.waiting), allocated once at SETUP
 * @op_free: the free ones; taken only under @submit_lock, given back from
 *	anywhere
 */
struct rs_file {
	struct mutex setup_lock;	/* serialises SETUP */
	bool ready;
	struct rs_rings *rings;
	size_t rings_size;
	struct rdmashare_sqe *sqes;
	struct rdmashare_cqe *cqes;
	void *data;
	size_t data_size;
	u32 sq_entries;
	u32 cq_entries;

	struct mutex submit_lock;	/* one SQ consumer at a time */
	u32 sq_head;
	bool sq_wakeup;
	unsigned long sq_poll;
	struct work_struct sq_work;
	atomic_t ops_on_wire;

	spinlock_t cq_lock;		/* CQ producers */
	u32 cq_tail;
	u32 cq_reserved;
	u32 cq_waiting;
	struct list_head cq_overflow;
	bool cq_dead;
	struct rs_cq_limits cq_limits;
	wait_queue_head_t cq_wait;
	u32 poll_qp;

	struct rs_area rings_area;
	struct rs_area data_area;
	struct user_struct *user;
	unsigned long acct_pages;
	struct mm_struct *mm_account;
	unsigned long pinned_pages;
	struct rs_user *owner;
	struct mem_cgroup *memcg;

	pid_t tgid;			/* who opened it, for debugfs */
	char comm[TASK_COMM_LEN];

	struct kref ref;
	struct mutex ac_lock;		/* AC table and backlogs */
	struct rs_actable acs;
	bool closing;
	u32 sched_weight;		/* the application's, under ac_lock */

	spinlock_t rx_lock;		/* slots and AC receive state */
	u32 rx_slots;
	u32 rx_slot_size;
	size_t rx_offset;
	u32 rx_unreserved;
	struct list_head rx_wanting;
	u32 rx_active;
	struct list_head rx_lenders;
	struct rs_rx_slot *slots;
	u32 *rx_free;
	u32 nr_rx_free;
	size_t map_size;
	struct list_head dma_maps;
	struct work_struct map_work;

	size_t files_offset;
	u32 files_pages;
	unsigned long *files_map;
	spinlock_t files_lock;		/* files_map */

	struct rs_send *ops;
	struct llist_head op_free;
};

/*
 * A SEND, CLOSE or SHUTDOWN operation queued on an AC, from its file's pool
 * (rs_op_get()).
 */
struct rs_send {
	union {
		struct list_head node;		/* in rs_ac.sendq */
		struct llist_node free_node;	/* in rs_file.op_free */
	};
	u64 user_data;
	u64 addr;
	u32 len;
	u32 sent;			/* bytes posted so far */
	u32 seq;
	u8 opcode;			/* RDMASHARE_OP_SEND, _CLOSE, _SHUTDOWN */
	bool file;			/* an AC file's (acfile.c), not the pool's */
	bool user_pages;		/* an AC file's, from the writer's pages: */
	struct rs_zc *zc;		/* them, until it completes (zcopy.c) */
};

/*
 * A completion that reserves no CQ room (an AC's CLOSED): posted at once if
 * there is room and none waits before it, else it waits on the file's
 * overflow list (@queued, under cq_lock) until an ENTER finds room.
 */
struct rs_cq_over {
	struct list_head node;
	struct rdmashare_cqe cqe;
	bool queued;
};

/* rs_file.sq_poll */
#define RS_SQ_POLL_PENDING	0

/* A receive slot: free, or holding a delivered chunk for an AC. */
struct rs_rx_slot {
	u32 fid;		/* owner AC, 0 when free */
	u32 conn;		/* the owner's host-wide id: which AC had @fid */
	u32 cq_idx;		/* index of the RECV CQE that announced it */
	u32 next;		/* next in its AC's chain (credit.c, acfile.c) */
	u32 len;		/* an AC file's: bytes of the chunk */
	bool file;		/* an AC file's: read(2) gives it back, not RELEASE */
};

/* params.c: load-time limits and defaults */
extern unsigned int rs_sq_entries_default;
extern unsigned int rs_sq_entries_max;
extern unsigned long rs_data_size_default;
extern unsigned int rs_chunk_size;
extern unsigned int rs_rx_slots_default;
extern unsigned int rs_rx_slots_max;
extern unsigned int rs_credits_per_ac;
int rs_params_check(void);

/* tunables.c: runtime tunables in sysfs */
#define RS_QPS_PER_PEER_MAX	16
#define RS_MAX_ACS_PER_FILE_LIMIT	BIT(20)
#define RS_CQ_DEPTH_MAX		BIT(20)
#define RS_BUSY_POLL_US_MAX	10000	/* busy_poll_us: 10 ms */
#define RS_SLEEP_POLL_US_MAX	10000	/* sleep_poll_us: 10 ms */
#define RS_BULK_DELAY_US_MAX	100000	/* bulk_delay_us: 100 ms */
#define RS_SLOT_ALIGN		64	/* SETUP's rx_slot_size is a multiple */
/*
 * Work requests one SEND of a shared QP takes at most, in its send queue
 * and CQ: itself, the RDMA WRITEs of the chunks it places and the
 * registrations it carries (sender.c).
 */
#define RS_TX_MAX_WRITES	4
#define RS_TX_MAX_REGS		2
#define RS_TX_WRS_MAX		(1 + RS_TX_MAX_WRITES + RS_TX_MAX_REGS)
extern unsigned int rs_max_acs_per_file;
extern unsigned int rs_qps_per_peer;
extern unsigned int rs_proto_version;
extern unsigned int rs_idle_timeout_ms;
extern const struct attribute_group rs_tunables_group;
extern unsigned int rs_sched_quantum;
extern unsigned int rs_tx_chunk;
extern unsigned int rs_coalesce_max;
extern unsigned int rs_pullup_max;
extern unsigned int rs_autocork;
extern unsigned int rs_inflight_max;
extern unsigned int rs_bulk_delay_us;
extern unsigned int rs_busy_poll_us;
extern unsigned int rs_sleep_poll_us;
extern unsigned int rs_split;
extern unsigned int rs_send_depth;
extern unsigned int rs_data_size_max;
extern unsigned int rs_srq_size;
extern unsigned int rs_cq_depth;
extern unsigned int rs_keepalive_ms;
extern unsigned int rs_connect_timeout_ms;
extern unsigned int rs_linger_ms;
extern unsigned int rs_sndbuf_max;
extern unsigned int rs_zcopy_min;
extern unsigned int rs_backlog_max;
extern unsigned int rs_max_qps_per_peer;
extern unsigned int rs_max_qps;
extern unsigned int rs_max_listeners_per_user;
extern unsigned int rs_max_acs_per_user;
void rs_tunables_init(void);
extern unsigned int rs_sched_latency_quantum;
extern bool rs_sched_flat;
void rs_peers_idle_changed(void);	/* peer.c */
void rs_peers_keepalive_changed(void);	/* peer.c */
void rs_qps_sched_changed(void);	/* peer.c */

/* user.c: what each local user holds, against the per-user limits */
struct rs_user;
struct rs_user *rs_user_get(kuid_t uid);
void rs_user_put(struct rs_user *u);
long rs_user_lock_mem(struct user_struct *user, unsigned long pages);
void rs_user_unlock_mem(struct user_struct *user, unsigned long pages);
bool rs_user_charge_ac(struct rs_user *u);
void rs_user_uncharge_ac(struct rs_user *u);
bool rs_user_charge_listener(struct rs_user *u);
void rs_user_uncharge_listener(struct rs_user *u);
u32 rs_user_uid(const struct rs_user *u);

/* rings.c: the per-file rings and data area */
void rs_rings_init(struct rs_file *rf);
void rs_rings_free(struct rs_file *rf);
int rs_rings_setup(struct rs_file *rf, struct rdmashare_setup *p);
int rs_rings_mmap(struct rs_file *rf, struct vm_area_struct *vma);
/*
 * What a CQ reservation is for: a completion that comes at once, or one that
 * waits on the peer (a SEND, CLOSE or SHUTDOWN).
 */
enum rs_cq_kind {
	RS_CQ_NOW,
	RS_CQ_WAIT,
};

bool rs_cq_reserve(struct rs_file *rf, enum rs_cq_kind kind);
void rs_cq_unreserve(struct rs_file *rf, enum rs_cq_kind kind);
u32 rs_cq_post(struct rs_file *rf, const struct rdmashare_cqe *cqe, enum rs_cq_kind kind);
u32 rs_cq_post_rx(struct rs_file *rf, const struct rdmashare_cqe *cqe);
bool rs_cq_post_over(struct rs_file *rf, struct rs_cq_over *o);
void rs_cq_flush_over(struct rs_file *rf, struct list_head *done);
bool rs_cq_cancel_over(struct rs_file *rf, struct rs_cq_over *o);
void rs_cq_kill_over(struct rs_file *rf, struct list_head *left);
bool rs_cq_over_fits(struct rs_file *rf);
u32 rs_cq_head(struct rs_file *rf);
u32 rs_cq_ready(struct rs_file *rf);
bool rs_sq_has_space(struct rs_file *rf);
u32 rs_sq_poll(struct rs_file *rf);
void rs_sq_work_init(struct rs_file *rf);
struct rs_send *rs_op_get(struct rs_file *rf);
void rs_op_put(struct rs_file *rf, struct rs_send *op);

/* submit.c: consuming the SQ, waiting for completions */
int rs_enter(struct rs_file *rf, struct rdmashare_enter *e);

/* poll.c: busy polling before ENTER sleeps */
bool rs_busy_poll(struct rs_file *rf, u32 min_complete, u32 timeout_ms);
long rs_sleep_poll(struct rs_file *rf, u32 min_complete, long timeout);
void rs_complete_op(struct rs_file *rf, const struct rdmashare_sqe *sqe, int res);

/* ac.c: abstract connections */
struct rs_file *rs_file_alloc(void);
void rs_file_release(struct rs_file *rf);
void rs_file_put(struct rs_file *rf);
/*
 * A file an ioctl made (an AC file): installed at @fd once the ioctl's
 * answer reached user space (chardev.c); @whole says whether the caller's
 * struct has the fields that tell it the descriptor (else it would not
 * learn it): every field of the kernel's, or up to where the struct grew
 * after them (RS_IOCTL_OP_GREW()).
 */
struct rs_new_file {
	struct file *file;
	int fd;
	bool whole;
};

int rs_ac_listen(struct rs_file *rf, struct rdmashare_listen *l);
int rs_lfile_listen(struct rdmashare_listen *l, struct rs_new_file *nf);
int rs_ac_connect(struct rs_file *rf, struct rdmashare_connect *c, struct rs_new_file *nf);
int rs_ac_accept(struct rs_file *rf, struct rdmashare_accept *a, struct rs_new_file *nf);
int rs_ac_set(struct rs_file *rf, struct rdmashare_ac_set *s);
int rs_ac_stats(struct rs_file *rf, struct rdmashare_ac_stats *st);
void rs_ac_submit(struct rs_file *rf, const struct rdmashare_sqe *sqe);
void rs_ac_flush_closed(struct rs_file *rf);
int rs_ac_init(void);
void rs_ac_exit(void);

/* device.c: ib_client tracking RDMA devices as they come and go */
extern struct mutex rs_devices_lock;
extern struct list_head rs_devices;
int rs_device_count(void);
int rs_ib_init(void);
void rs_ib_exit(void);

/* sysfs.c: attributes of the misc device, each RDMA device and each peer */
extern const struct attribute_group *rs_misc_groups[];
int rs_sysfs_init(struct device *misc_dev);
void rs_sysfs_exit(void);
void rs_sysfs_init_device(struct rs_device *rdev);
void rs_sysfs_put_device(struct rs_device *rdev);
int rs_sysfs_add_device(struct rs_device *rdev);
void rs_sysfs_del_device(struct rs_device *rdev);
void rs_sysfs_rename_device(struct rs_device *rdev);
struct rs_peer;
void rs_sysfs_init_peer(struct rs_peer *peer);
void rs_sysfs_add_peer(struct rs_peer *peer);
void rs_sysfs_del_peer(struct rs_peer *peer);
void rs_sysfs_put_peer(struct rs_peer *peer);

/* chardev.c: /dev/rdmashare */
extern struct miscdevice rs_miscdev;
int rs_chardev_init(void);
void rs_chardev_exit(void);

#endif /* _RDMASHARE_H */

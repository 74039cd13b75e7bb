// SPDX-License-Identifier: GPL-2.0
/*
 * rs_kqp_floor: the kernel-QP floor of rdmashare's transport benchmark
 * (kqp.h).  Its interface is one debugfs file, rs_kqp_floor/run: writing
 * a command runs it in the writing thread, which returns when it is done
 * (or with its error); reading gives the last command's result, one line.
 *
 *   pingpong addr=A [port=P] [size=64] [count=1000] [wait=sleep|poll]
 *            [window=16] [rx=16]
 *   stream   addr=A [port=P] [size=64] [count=10000] [wait=sleep|poll]
 *            [window=128] [rx=512]
 *
 * A is an address of the RDMA device (IPv4 or IPv6), listened on and
 * connected to; P the rdma_cm port (the module parameter port, 18870, by
 * default).  The stream's window and receives are ib_send_bw's defaults
 * (its tx and rx depths).  Results:
 *
 *   pingpong size=S count=N wait=W inline=I: rtt_ns min=A p50=B p99=C max=D mean=E
 *   stream size=S count=N window=X rx=R wait=W inline=I: msgs=M bytes=B ns=T msgps=Q MBps=F
 *   error E in STAGE
 *
 * p50 and p99 are the round trips at n/2 and 99n/100 of the n sorted
 * (rs-pingpong's); msgps and MBps are M and B over T, the receiver's time
 * from its first completion to its last.  One command runs at a time.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/inet.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <net/net_namespace.h>

#include "kqp.h"

static unsigned int kqp_port = 18870;
module_param_named(port, kqp_port, uint, 0644);
MODULE_PARM_DESC(port, "rdma_cm port of a command without port= (18870)");

/* Bounds of a command: the round trips kept, the buffers' memory. */
#define KQP_MAX_SIZE		SZ_1M
#define KQP_MAX_PINGPONG	1000000U
#define KQP_MAX_DEPTH		16384U
#define KQP_MAX_BUF_BYTES	SZ_64M
#define KQP_CMD_MAX		256
#define KQP_RESULT_MAX		256

static struct dentry *kqp_dir;
static DEFINE_MUTEX(kqp_lock);		/* one run; kqp_result */
static char kqp_result[KQP_RESULT_MAX];

static const char *const kqp_wait_names[] = {
	[KQP_SLEEP] = "sleep",
	[KQP_POLL] = "poll",
};

static int kqp_parse_u32(const char *val, u32 min, u32 max, u32 *out)
{
	int ret = kstrtou32(val, 0, out);

	if (ret)
		return ret;
	return *out < min || *out > max ? -EINVAL : 0;
}

static int kqp_parse_wait(const char *val, enum kqp_wait *wait)
{
	int i = match_string(kqp_wait_names, ARRAY_SIZE(kqp_wait_names), val);

	if (i < 0)
		return i;
	*wait = i;
	return 0;
}

/* "pingpong key=value ..." into @p. */
static int kqp_parse(char *cmd, struct kqp_params *p)
{
	char *addr = NULL, *port = NULL, *tok, *val, port_buf[12];
	u32 port_nr;
	int ret = 0;

	tok = strsep(&cmd, " \t\n");
	if (!tok)
		return -EINVAL;
	if (!strcmp(tok, "pingpong")) {
		*p = (struct kqp_params) { .kind = KQP_PINGPONG, .size = 64, .count = 1000,
					   .window = 16, .rx = 16 };
	} else if (!strcmp(tok, "stream")) {
		*p = (struct kqp_params) { .kind = KQP_STREAM, .size = 64, .count = 10000,
					   .window = 128, .rx = 512 };
	} else {
		return -EINVAL;
	}

	while (!ret && (tok = strsep(&cmd, " \t\n"))) {
		if (!*tok)
			continue;
		val = strchr(tok, '=');
		if (!val)
			return -EINVAL;
		*val++ = '\0';
		if (!strcmp(tok, "addr"))
			addr = val;
		else if (!strcmp(tok, "port"))
			port = val;
		else if (!strcmp(tok, "size"))
			ret = kqp_parse_u32(val, sizeof(u64), KQP_MAX_SIZE, &p->size);
		else if (!strcmp(tok, "count"))
			ret = kqp_parse_u32(val, 1, U32_MAX, &p->count);
		else if (!strcmp(tok, "window"))
			ret = kqp_parse_u32(val, 1, KQP_MAX_DEPTH, &p->window);
		else if (!strcmp(tok, "rx"))
			ret = kqp_parse_u32(val, 1, KQP_MAX_DEPTH, &p->rx);
		else if (!strcmp(tok, "wait"))
			ret = kqp_parse_wait(val, &p->wait);
		else
			return -EINVAL;
	}
	if (ret)
		return ret;
	if (p->kind == KQP_PINGPONG && p->count > KQP_MAX_PINGPONG)
		return -EINVAL;
	if ((u64)(p->window + p->rx) * p->size > KQP_MAX_BUF_BYTES)
		return -E2BIG;
	if (!port) {
		snprintf(port_buf, sizeof(port_buf), "%u", READ_ONCE(kqp_port));
		port = port_buf;
	}
	if (!addr || kqp_parse_u32(port, 1, 65535, &port_nr))
		return -EINVAL;
	return inet_pton_with_scope(&init_net, AF_UNSPEC, addr, port, &p->addr);
}

static int kqp_cmp_u32(const void *a, const void *b)
{
	u32 x = *(const u32 *)a, y = *(const u32 *)b;

	return x < y ? -1 : x > y;
}

static void kqp_report(struct kqp_run *run)
{
	const struct kqp_params *p = &run->p;
	int n;

	n = scnprintf(kqp_result, sizeof(kqp_result), "%s size=%u count=%u ",
		      p->kind == KQP_PINGPONG ? "pingpong" : "stream", p->size, p->count);
	if (p->kind == KQP_STREAM)
		n += scnprintf(kqp_result + n, sizeof(kqp_result) - n, "window=%u rx=%u ",
			       p->window, p->rx);
	n += scnprintf(kqp_result + n, sizeof(kqp_result) - n, "wait=%s inline=%d: ",
		       kqp_wait_names[p->wait], run->ep[0].inline_data);

	if (p->kind == KQP_PINGPONG) {
		u32 *rtt = run->rtt, c = p->count;
		u64 sum = 0;
		u32 i;

		for (i = 0; i < c; i++)
			sum += rtt[i];
		sort(rtt, c, sizeof(*rtt), kqp_cmp_u32, NULL);
		scnprintf(kqp_result + n, sizeof(kqp_result) - n,
			  "rtt_ns min=%u p50=%u p99=%u max=%u mean=%llu\n",
			  rtt[0], rtt[c / 2], rtt[(u64)c * 99 / 100], rtt[c - 1],
			  div_u64(sum, c));
	} else {
		u64 ns = max_t(u64, run->t_last - run->t_first, 1);
		u64 mbps_milli = mul_u64_u64_div_u64(run->bytes, 1000000, ns);

		scnprintf(kqp_result + n, sizeof(kqp_result) - n,
			  "msgs=%llu bytes=%llu ns=%llu msgps=%llu MBps=%llu.%03llu\n",
			  run->msgs, run->bytes, ns,
			  mul_u64_u64_div_u64(run->msgs, NSEC_PER_SEC, ns),
			  div_u64(mbps_milli, 1000), mbps_milli % 1000);
	}
}

static int kqp_run_cmd(const struct kqp_params *p)
{
	struct kqp_run *run;
	int ret;

	run = kzalloc(sizeof(*run), GFP_KERNEL);
	if (!run)
		return -ENOMEM;
	run->p = *p;
	init_completion(&run->peer_ready);
	init_completion(&run->peer_done);
	ret = -ENOMEM;
	if (p->kind == KQP_PINGPONG) {
		run->rtt = kvcalloc(p->count, sizeof(*run->rtt), GFP_KERNEL);
		if (!run->rtt)
			goto out_free;
	}

	ret = kqp_connect(run);
	if (!ret) {
		run->stage = p->kind == KQP_PINGPONG ? "pingpong" : "stream";
		ret = kqp_measure(run);
	}
	kqp_disconnect(run);
	if (ret) {
		scnprintf(kqp_result, sizeof(kqp_result), "error %d in %s\n", ret, run->stage);
		pr_warn("%s", kqp_result);
	} else {
		kqp_report(run);
	}
out_free:
	kvfree(run->rtt);
	kfree(run);
	return ret;
}

static ssize_t kqp_write(struct file *file, const char __user *ubuf, size_t len, loff_t *ppos)
{
	struct kqp_params p;
	char *cmd;
	int ret;

	if (len >= KQP_CMD_MAX)
		return -E2BIG;
	cmd = memdup_user_nul(ubuf, len);
	if (IS_ERR(cmd))
		return PTR_ERR(cmd);
	ret = kqp_parse(cmd, &p);
	kfree(cmd);
	if (ret)
		return ret;
	if (mutex_lock_interruptible(&kqp_lock))
		return -EINTR;
	ret = kqp_run_cmd(&p);
	mutex_unlock(&kqp_lock);
	return ret ?: len;
}

static ssize_t kqp_read(struct file *file, char __user *ubuf, size_t len, loff_t *ppos)
{
	ssize_t ret;

	if (mutex_lock_interruptible(&kqp_lock))
		return -EINTR;
	ret = simple_read_from_buffer(ubuf, len, ppos, kqp_result, strlen(kqp_result));
	mutex_unlock(&kqp_lock);
	return ret;
}

static const struct file_operations kqp_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = kqp_read,
	.write = kqp_write,
	.llseek = default_llseek,
};

static int __init kqp_init(void)
{
	kqp_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	if (IS_ERR(kqp_dir))
		return PTR_ERR(kqp_dir);
	debugfs_create_file("run", 0600, kqp_dir, NULL, &kqp_fops);
	return 0;
}

static void __exit kqp_exit(void)
{
	/* Waits for a write in progress: a run ends within its timeouts. */
	debugfs_remove(kqp_dir);
}

module_init(kqp_init);
module_exit(kqp_exit);
MODULE_DESCRIPTION("rdmashare benchmark: the kernel-QP floor (two RC QPs, ping-pong and stream)");
MODULE_LICENSE("GPL");

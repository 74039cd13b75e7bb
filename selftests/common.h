/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by the rdmashare kselftests. */
#ifndef RDMASHARE_SELFTEST_COMMON_H
#define RDMASHARE_SELFTEST_COMMON_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/rdmashare.h>
#include "rdmashare.h"

#define RS_SYSFS "/sys/class/misc/rdmashare"

/* Read a sysfs file into buf (trailing newline stripped); -errno on error. */
static inline int rs_read_file(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

/* Number of entries in a directory, or -errno. */
static inline int rs_count_dir(const char *path)
{
	struct dirent *de;
	int n = 0;
	DIR *d;

	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static inline int rs_path_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Run a shell command quietly; returns its exit status or -1. */
static inline int rs_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int rs_sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	ret = system(cmd);
	if (ret == -1 || !WIFEXITED(ret))
		return -1;
	return WEXITSTATUS(ret);
}

/*
 * Lines of "rdma resource show @what" (qp, cq, pd, srq, cm_id) that contain
 * @a and, unless NULL, @b; -1 if the tool cannot run.
 */
static inline int rs_count_res(const char *what, const char *a, const char *b)
{
	char line[1024], cmd[128];
	FILE *f;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "rdma resource show %s 2>/dev/null", what);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, a) && (!b || strstr(line, b)))
			n++;
	return pclose(f) ? -1 : n;
}

/* rdmashare's QPs on this host, from the rdma tool. */
static inline int count_rdmashare_qps(void)
{
	return rs_count_res("qp", "[rdmashare]", " type RC ");
}

/* CLOCK_MONOTONIC, seconds. */
static inline double rs_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Wait up to @secs for the host's rdmashare QPs to number @n; their count. */
static inline int rs_wait_qps(int n, double secs)
{
	double end = rs_now() + secs;
	int qps;

	for (;;) {
		qps = count_rdmashare_qps();
		if (qps == n || rs_now() > end)
			return qps;
		usleep(100000);
	}
}

/*
 * The sysfs directory of the first RDMA device rdmashare lists (in
 * readdir order), in @buf; 0, or -ENOENT when there is none.
 */
static inline int rs_first_device(char *buf, size_t len)
{
	struct dirent *de;
	DIR *d;

	d = opendir(RS_SYSFS "/devices");
	if (!d)
		return -ENOENT;
	while ((de = readdir(d)) && de->d_name[0] == '.')
		;
	if (de)
		snprintf(buf, len, RS_SYSFS "/devices/%.255s", de->d_name);
	closedir(d);
	return de ? 0 : -ENOENT;
}

/* The first device's counter stats/@name; -1 on error. */
static inline long rs_device_stat(const char *name)
{
	char dir[512], path[800], buf[32];

	if (rs_first_device(dir, sizeof(dir)))
		return -1;
	snprintf(path, sizeof(path), "%s/stats/%s", dir, name);
	return rs_read_file(path, buf, sizeof(buf)) ? -1 : atol(buf);
}

/* The sum of @file (a gauge or "stats/" counter) of every device; -1 on error. */
static inline long rs_devices_sum(const char *file)
{
	char path[512], buf[32];
	struct dirent *de;
	long n = 0;
	DIR *d;

	d = opendir(RS_SYSFS "/devices");
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), RS_SYSFS "/devices/%.255s/%s", de->d_name, file);
		if (!rs_read_file(path, buf, sizeof(buf)))
			n += atol(buf);
	}
	closedir(d);
	return n;
}

/* ACs on every RDMA device rdmashare uses, from their gauges; -1 on error. */
static inline int rs_device_acs(void)
{
	return rs_devices_sum("acs");
}

/* Whether every AC on the devices is gone within @secs. */
static inline bool rs_acs_gone(int secs)
{
	int i;

	for (i = 0; i < secs * 10; i++) {
		if (!rs_device_acs())
			return true;
		usleep(100000);
	}
	return false;
}

/*
 * The sum of the numbers after @key (" quarantined ", " rx_held "...) in
 * the debugfs files of every peer; -1 on error.
 */
static inline int rs_debugfs_peers_sum(const char *key)
{
	static char buf[1 << 16];
	char path[512], *p;
	struct dirent *de;
	int fd, n = 0;
	ssize_t len;
	DIR *d;

	d = opendir("/sys/kernel/debug/rdmashare/peers");
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/debug/rdmashare/peers/%.255s", de->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = 0;
		for (p = buf; (p = strstr(p, key)); p++)
			n += atoi(p + strlen(key));
	}
	closedir(d);
	return n;
}

/*
 * ACs in quarantine (closed, slots kept until the peer's CLOSE) on every QP
 * to every peer, from debugfs; -1 on error.
 */
static inline int rs_quarantined(void)
{
	return rs_debugfs_peers_sum(" quarantined ");
}

/* Receive slots that applications hold (not released), of every AC; -1 on error. */
static inline int rs_rx_held(void)
{
	return rs_debugfs_peers_sum(" rx_held ");
}

/* Write a string to a sysfs file in one write(); 0 or -errno. */
static inline int rs_write_file(const char *path, const char *s)
{
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	if (n < 0)
		n = -errno;
	close(fd);
	return n < 0 ? (int)n : 0;
}

/* cgroup v2, where a test makes a memory cgroup of its own. */
#define RS_CG "/sys/fs/cgroup"

/*
 * A memory cgroup @name below the root, made afresh (cgroup2 mounted and
 * its memory controller on for the root's children if they were not):
 * 0, or -1.
 */
static inline int rs_cg_make(const char *name)
{
	char path[256], buf[256];

	if (!rs_path_exists(RS_CG "/cgroup.controllers") &&
	    mount("none", RS_CG, "cgroup2", 0, NULL))
		return -1;
	if (rs_read_file(RS_CG "/cgroup.controllers", buf, sizeof(buf)) ||
	    !strstr(buf, "memory") ||
	    rs_write_file(RS_CG "/cgroup.subtree_control", "+memory"))
		return -1;
	snprintf(path, sizeof(path), RS_CG "/%s", name);
	rmdir(path);
	return mkdir(path, 0755);
}

/* Process @pid into cgroup @name ("" for the root): 0, or -1. */
static inline int rs_cg_move(const char *name, pid_t pid)
{
	char path[256], buf[32];

	snprintf(path, sizeof(path), RS_CG "/%s%scgroup.procs", name, *name ? "/" : "");
	snprintf(buf, sizeof(buf), "%d", pid);
	return rs_write_file(path, buf);
}

/* Cgroup @name's memory.current, bytes; -1 if unknown. */
static inline long rs_cg_current(const char *name)
{
	char path[256], buf[64];

	snprintf(path, sizeof(path), RS_CG "/%s/memory.current", name);
	if (rs_read_file(path, buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 10);
}

/* A counter of cgroup @name's memory.stat, bytes; -1 if absent. */
static inline long rs_cg_stat(const char *name, const char *key)
{
	char path[256], line[256];
	size_t n = strlen(key);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), RS_CG "/%s/memory.stat", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ' ')
			v = strtol(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

/* A counter of peer @ip (peers/<ip>/stats/@name), or -1. */
static inline long rs_peer_stat(const char *ip, const char *name)
{
	char path[256], buf[32];

	snprintf(path, sizeof(path), RS_SYSFS "/peers/%s/stats/%s", ip, name);
	if (rs_read_file(path, buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 10);
}

/* A /dev/rdmashare handle set up with *@p (which SETUP fills in). */
static inline struct rdmashare *rs_open_with(struct rdmashare_setup *p)
{
	struct rdmashare *rs;

	if (rdmashare_open(&rs, 0))
		return NULL;
	if (rdmashare_setup(rs, p)) {
		rdmashare_close(rs);
		return NULL;
	}
	return rs;
}

/* A /dev/rdmashare handle set up with the given data area and slots. */
static inline struct rdmashare *rs_open_setup(size_t data, unsigned int slots)
{
	struct rdmashare_setup p = { .data_size = data, .rx_slots = slots };

	return rs_open_with(&p);
}

/*
 * The raw CQ: the result of the OP completion with @user_data, reaping the
 * completions before it; -1000 if none comes within 10 s.
 */
static inline int rs_op_result(struct rdmashare *rs, __u64 user_data)
{
	struct rdmashare_cqe *cqe;
	int res;

	for (;;) {
		if (rdmashare_wait_cqe(rs, &cqe, 10000))
			return -1000;
		if (cqe->type == RDMASHARE_CQE_OP && cqe->user_data == user_data) {
			res = cqe->res;
			rdmashare_cqe_seen(rs, cqe);
			return res;
		}
		rdmashare_cqe_seen(rs, cqe);
	}
}

/*
 * Submit one raw SQE (@opcode on @ac, @addr and @len in the data area) and
 * return its result: as rs_op_result(), or -1001 without an SQE.
 */
static inline int rs_raw_op(struct rdmashare *rs, __u8 opcode, __u32 ac, __u64 addr,
			    __u32 len, __u64 user_data)
{
	struct rdmashare_sqe *sqe = rdmashare_get_sqe(rs);

	if (!sqe)
		return -1001;
	sqe->opcode = opcode;
	sqe->ac = ac;
	sqe->addr = addr;
	sqe->len = len;
	sqe->user_data = user_data;
	if (rdmashare_submit(rs) != 1)
		return -1001;
	return rs_op_result(rs, user_data);
}

/*
 * Run @fn(ready_fd, @port) in a child process and wait until it wrote a byte
 * to ready_fd (it listens); its return value is the child's exit status.
 * The child's pid, or -1 if it could not start.
 */
static inline pid_t rs_fork_ready(int (*fn)(int ready_fd, unsigned int port),
				  unsigned int port)
{
	int fds[2];
	pid_t pid;
	char c;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (!pid) {
		close(fds[0]);
		_exit(fn(fds[1], port));
	}
	close(fds[1]);
	if (pid > 0 && read(fds[0], &c, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(fds[0]);
	return pid;
}

/* The exit status of child @pid, 100 + the signal that killed it, or -1. */
static inline int rs_wait_child(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

/*
 * Keep what the calling thread posts in flight while it posts more, as on a
 * loaded host or with a NIC slower than the application: run it at
 * SCHED_FIFO on CPU 0 until rs_fifo_end().  A device that completes on the
 * posting CPU (rxe on 6.1 runs its tasks as tasklets there) queues the
 * completion work there too (ib_comp_wq is per CPU), and it runs only
 * while the thread sleeps.  Left to chance, rxe on 6.1 often completes
 * each SEND before the thread's next system call.
 */
struct rs_fifo {
	cpu_set_t old;
};

static inline int rs_fifo_begin(struct rs_fifo *f)
{
	struct sched_param fifo = { .sched_priority = 1 };
	cpu_set_t cpu0;

	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	if (sched_getaffinity(0, sizeof(f->old), &f->old) ||
	    sched_setaffinity(0, sizeof(cpu0), &cpu0))
		return -errno;
	if (sched_setscheduler(0, SCHED_FIFO, &fifo)) {
		int err = -errno;

		sched_setaffinity(0, sizeof(f->old), &f->old);
		return err;
	}
	return 0;
}

static inline int rs_fifo_end(struct rs_fifo *f)
{
	struct sched_param other = { 0 };
	int ret = 0;

	if (sched_setscheduler(0, SCHED_OTHER, &other))
		ret = -errno;
	if (sched_setaffinity(0, sizeof(f->old), &f->old) && !ret)
		ret = -errno;
	return ret;
}

#endif

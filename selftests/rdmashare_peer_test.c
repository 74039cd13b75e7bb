// SPDX-License-Identifier: GPL-2.0
/*
 * Peer transports and their tunables, on one host (Soft-RoCE loopback to
 * the guest's own address, RS_IP):
 *  - tunable_bad_writes: qps_per_peer and idle_timeout_ms refuse values out
 *    of range, garbage, an empty line and over-long writes with EINVAL
 *    (E2BIG past a page) and keep their value;
 *  - tunable_unprivileged: a user other than root reads them but cannot
 *    write them;
 *  - every_tunable: every writable file of the module's sysfs directory
 *    refuses garbage, a lone newline and over-long writes, ignores an empty
 *    write, keeps its value through all of them, and is root's to write;
 *  - idle_peer: with idle_timeout_ms 0 an idle transport stays; a new
 *    timeout applies at once and takes it down; a later connect builds a
 *    new one;
 *  - max_acs_per_file: LISTEN and CONNECT past it fail with EMFILE, a
 *    CONNECT to a full file is refused, a closed AC makes room;
 *  - qps_per_peer: with 3, nine ACs of one file to the host itself share
 *    one QP (app mode: an application's ACs stay together), nine more in
 *    flat mode ride 3 QPs (plus their 3 accepting ends), each AC carries
 *    its data; lowering it to 1 adds no QP;
 *  - send_depth: bad writes refused; QPs set up after a write have that
 *    many TX buffers (debugfs), and carry data;
 *  - max_data_size: bad writes (unaligned, under the default data area)
 *    refused; SETUP above a lowered limit fails with EINVAL, at it works;
 *  - max_backlog: a LISTEN asking for more fails with EINVAL, at it works;
 *  - proto_version: bad writes refused; for every version from the newest
 *    down to 1, the QPs set up after a write speak it (debugfs), and an AC
 *    carries messages of one and of several chunks both ways over them;
 *    the newest again at the end, on new QPs;
 *  - cq_depth: bad writes (under what a QP needs) refused; QPs set up
 *    after a write have CQs of that many entries ("rdma resource show
 *    cq"), and of what they need with 0.
 */
#include <arpa/inet.h>
#include <time.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT		7400
#define QPS_PATH	RS_SYSFS "/qps_per_peer"
#define IDLE_PATH	RS_SYSFS "/idle_timeout_ms"
#define MAXACS_PATH	RS_SYSFS "/max_acs_per_file"
#define DEPTH_PATH	RS_SYSFS "/send_depth"
#define DATAMAX_PATH	RS_SYSFS "/max_data_size"
#define CQ_PATH		RS_SYSFS "/cq_depth"
#define BACKLOG_PATH	RS_SYSFS "/max_backlog"
#define VERSION_PATH	RS_SYSFS "/proto_version"
#define MODE_PATH	RS_SYSFS "/sched_mode"

static struct sockaddr_in addr_of(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	return sin;
}

/* Connect an AC to this host and accept it: *@c and *@s are its two ends. */
static int pair(struct rdmashare *rs, int l, int *c, int *s)
{
	struct sockaddr_in sin = addr_of(PORT);

	*c = rdmashare_connect(rs, (struct sockaddr *)&sin, 20000);
	if (*c < 0)
		return *c;
	*s = rdmashare_accept(rs, l, 20000);
	return *s < 0 ? *s : 0;
}

/* One message from AC @from of @rs to AC @to of @rs2, checked. */
static int one_message2(struct rdmashare *rs, int from, struct rdmashare *rs2,
			int to, unsigned int seed)
{
	char out[600], in[600];
	ssize_t n;

	memset(out, 'a' + seed % 26, sizeof(out));
	snprintf(out, sizeof(out), "message %u", seed);
	if (rdmashare_send(rs, from, out, sizeof(out)))
		return -1;
	n = rdmashare_recv(rs2, to, in, sizeof(in), 20000);
	if (n < 0)
		return n;
	if (n != sizeof(out) || memcmp(in, out, sizeof(out)))
		return -1000;
	return 0;
}

static int one_message(struct rdmashare *rs, int from, int to, unsigned int seed)
{
	return one_message2(rs, from, rs, to, seed);
}

/* Close both ends and wait until the close went through. */
static int unpair(struct rdmashare *rs, int c, int s)
{
	char b[8];

	if (rdmashare_close_ac(rs, c))
		return -1;
	if (rdmashare_recv(rs, s, b, sizeof(b), 20000) != -EPIPE)
		return -2;
	return rdmashare_close_ac(rs, s);
}

FIXTURE(tun) {
	char qps[32];
	char idle[32];
	char maxacs[32];
	char depth[32];
	char datamax[32];
	char cq[32];
	char backlog[32];
	char version[32];
	char mode[32];
	struct rdmashare *rs;	/* proto_version's, closed here */
};

FIXTURE_SETUP(tun)
{
	ASSERT_EQ(0, rs_read_file(QPS_PATH, self->qps, sizeof(self->qps)));
	ASSERT_EQ(0, rs_read_file(IDLE_PATH, self->idle, sizeof(self->idle)));
	ASSERT_EQ(0, rs_read_file(MAXACS_PATH, self->maxacs, sizeof(self->maxacs)));
	ASSERT_EQ(0, rs_read_file(DEPTH_PATH, self->depth, sizeof(self->depth)));
	ASSERT_EQ(0, rs_read_file(DATAMAX_PATH, self->datamax, sizeof(self->datamax)));
	ASSERT_EQ(0, rs_read_file(CQ_PATH, self->cq, sizeof(self->cq)));
	ASSERT_EQ(0, rs_read_file(BACKLOG_PATH, self->backlog, sizeof(self->backlog)));
	ASSERT_EQ(0, rs_read_file(VERSION_PATH, self->version, sizeof(self->version)));
	ASSERT_EQ(0, rs_read_file(MODE_PATH, self->mode, sizeof(self->mode)));
}

FIXTURE_TEARDOWN(tun)
{
	/*
	 * proto_version's QPs, of any version if it failed: the version put
	 * back first, then its ACs closed and its QPs taken down, so that
	 * later tests set up QPs of the newest.
	 */
	if (self->rs) {
		rs_write_file(VERSION_PATH, self->version);
		rdmashare_close(self->rs);
		rs_write_file(IDLE_PATH, "100");
		if (rs_wait_qps(0, 30))
			fprintf(stderr, "# tun teardown: QPs still up\n");
	}
	rs_write_file(QPS_PATH, self->qps);
	rs_write_file(MODE_PATH, self->mode);
	rs_write_file(IDLE_PATH, self->idle);
	rs_write_file(MAXACS_PATH, self->maxacs);
	rs_write_file(DEPTH_PATH, self->depth);
	rs_write_file(DATAMAX_PATH, self->datamax);
	rs_write_file(CQ_PATH, self->cq);
	rs_write_file(BACKLOG_PATH, self->backlog);
}

/* Each of @bad is refused with EINVAL and leaves @path's value. */
static int refuses(const char *path, const char *const *bad, unsigned int n)
{
	char before[32], after[32];
	unsigned int i;

	if (rs_read_file(path, before, sizeof(before)))
		return -1;
	for (i = 0; i < n; i++) {
		if (rs_write_file(path, bad[i]) != -EINVAL)
			return i + 1;
		if (rs_read_file(path, after, sizeof(after)) || strcmp(before, after))
			return 100 + i;
	}
	return 0;
}

TEST_F_TIMEOUT(tun, send_depth, 180)
{
	static const char *const bad[] = { "0", "4097", "-1", "x", "\n", "8 8" };
	struct rdmashare *rs = rs_open_setup(1 << 20, 64);
	char path[256], *buf = calloc(1, 65536), *p, *eol, *q;
	int l, c, s, fd, n, qps = 0, free8 = 0, tries;

	ASSERT_NE(NULL, rs);
	ASSERT_NE(NULL, buf);
	EXPECT_STREQ("64", self->depth);
	EXPECT_EQ(0, refuses(DEPTH_PATH, bad, sizeof(bad) / sizeof(bad[0])));

	/* New QPs only: take the old ones down first. */
	ASSERT_EQ(0, rs_write_file(IDLE_PATH, "100"));
	ASSERT_EQ(0, rs_wait_qps(0, 30));
	ASSERT_EQ(0, rs_write_file(DEPTH_PATH, "8"));
	l = rdmashare_listen(rs, PORT, 4);
	ASSERT_LE(0, l);
	ASSERT_EQ(0, pair(rs, l, &c, &s));
	for (n = 0; n < 40; n++)
		ASSERT_EQ(0, one_message(rs, c, s, n));

	snprintf(path, sizeof(path), "/sys/kernel/debug/rdmashare/peers/%s",
		 getenv("RS_IP") ?: "127.0.0.1");
	/*
	 * Both QPs, once their last sends (credits) completed: all of their
	 * 8 TX buffers free, never more.
	 */
	for (tries = 0; tries < 100; tries++) {
		fd = open(path, O_RDONLY);
		ASSERT_LE(0, fd);
		n = read(fd, buf, 65535);
		close(fd);
		ASSERT_LT(0, n);
		buf[n] = 0;
		qps = free8 = 0;
		for (p = buf; (p = strstr(p, "\nqp ")); p++) {
			qps++;
			eol = strchr(p + 1, '\n');
			q = strstr(p + 1, " tx_free 8 ");
			if (eol && q && q < eol)
				free8++;
		}
		if (free8 == 2)
			break;
		usleep(100000);
	}
	EXPECT_EQ(2, qps) TH_LOG("%s", buf);
	EXPECT_EQ(2, free8) TH_LOG("%s", buf);
	EXPECT_EQ(0, unpair(rs, c, s));
	rdmashare_close(rs);
	free(buf);
}

TEST_F(tun, max_data_size)
{
	static const char *const bad[] = {
		"0", "4095", "4097", "268435457", "1048576", "x", "\n", "-4096",
	};
	struct rdmashare_setup p = { .rx_slots = 16 };
	struct rdmashare *rs;

	EXPECT_STREQ("268435456", self->datamax);
	/* 1 MiB is a page multiple but under the default area (4 MiB). */
	EXPECT_EQ(0, refuses(DATAMAX_PATH, bad, sizeof(bad) / sizeof(bad[0])));
	ASSERT_EQ(0, rs_write_file(DATAMAX_PATH, "8388608"));

	ASSERT_EQ(0, rdmashare_open(&rs, 0));
	p.data_size = 16 << 20;
	EXPECT_EQ(-EINVAL, rdmashare_setup(rs, &p));
	p.data_size = 8 << 20;
	EXPECT_EQ(0, rdmashare_setup(rs, &p));
	rdmashare_close(rs);
}

/* @len bytes from AC @from to AC @to of @rs, as one message, checked. */
static int long_message(struct rdmashare *rs, int from, int to, size_t len, unsigned int seed)
{
	char *out = malloc(len), *in = malloc(len);
	ssize_t n = -1;
	size_t i;

	if (!out || !in)
		goto out;
	for (i = 0; i < len; i++)
		out[i] = (char)(i * 7 + seed);
	n = rdmashare_send(rs, from, out, len);
	if (!n)
		n = rdmashare_recv(rs, to, in, len, 20000);
	if (n >= 0)
		n = n == (ssize_t)len && !memcmp(in, out, len) ? 0 : -1000;
out:
	free(out);
	free(in);
	return n;
}

/* The QPs of the host's own peer that speak @version, as debugfs lists them. */
static int qps_speaking(unsigned int version)
{
	char path[256], want[32], buf[16384], *p, *eol;
	int fd, n, qps = 0;

	snprintf(path, sizeof(path), "/sys/kernel/debug/rdmashare/peers/%s",
		 getenv("RS_IP") ?: "127.0.0.1");
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	snprintf(want, sizeof(want), " version %u\n", version);
	for (p = buf; (p = strstr(p, "\nqp ")); p++) {
		eol = strchr(p + 1, '\n');
		if (eol && !strncmp(eol - strlen(want) + 1, want, strlen(want)))
			qps++;
	}
	return qps;
}

/* New QPs, speaking @version: an AC over them carries what it is given. */
static void speaks(struct __test_metadata *_metadata, struct rdmashare *rs, int l,
		   unsigned int version)
{
	char v[16];
	int c, s, n;

	ASSERT_EQ(0, rs_write_file(IDLE_PATH, "100"));
	ASSERT_EQ(0, rs_wait_qps(0, 30));
	snprintf(v, sizeof(v), "%u", version);
	ASSERT_EQ(0, rs_write_file(VERSION_PATH, v));
	ASSERT_EQ(0, rs_write_file(IDLE_PATH, "60000"));
	ASSERT_EQ(0, pair(rs, l, &c, &s));
	EXPECT_EQ(2, qps_speaking(version)) TH_LOG("version %u", version);
	for (n = 0; n < 8; n++) {
		EXPECT_EQ(0, one_message(rs, c, s, n)) TH_LOG("version %u", version);
		EXPECT_EQ(0, one_message(rs, s, c, n)) TH_LOG("version %u", version);
	}
	/* Several chunks (chunk_size is 16 KiB by default) each way. */
	EXPECT_EQ(0, long_message(rs, c, s, 100000, version)) TH_LOG("version %u", version);
	EXPECT_EQ(0, long_message(rs, s, c, 100000, version)) TH_LOG("version %u", version);
	EXPECT_EQ(0, unpair(rs, c, s)) TH_LOG("version %u", version);
}

TEST_F_TIMEOUT(tun, proto_version, 300)
{
	static const char *const bad[] = { "0", "-1", "x", "\n", "7 7" };
	unsigned int newest = atoi(self->version), v;
	struct rdmashare *rs;
	char over[16];
	int l;

	rs = self->rs = rs_open_setup(1 << 20, 64);
	ASSERT_NE(NULL, rs);
	ASSERT_LE(7, newest);
	EXPECT_EQ(0, refuses(VERSION_PATH, bad, sizeof(bad) / sizeof(bad[0])));
	snprintf(over, sizeof(over), "%u", newest + 1);
	EXPECT_EQ(-EINVAL, rs_write_file(VERSION_PATH, over));
	l = rdmashare_listen(rs, PORT, 4);
	ASSERT_LE(0, l);
	for (v = newest - 1; v >= 1; v--)
		speaks(_metadata, rs, l, v);
	/* And the newest again. */
	speaks(_metadata, rs, l, newest);
}

TEST_F(tun, max_backlog)
{
	static const char *const bad[] = { "0", "1048577", "-1", "x", "\n" };
	struct rdmashare *rs = rs_open_setup(1 << 20, 64);

	ASSERT_NE(NULL, rs);
	EXPECT_STREQ("1024", self->backlog);
	EXPECT_EQ(0, refuses(BACKLOG_PATH, bad, sizeof(bad) / sizeof(bad[0])));
	EXPECT_EQ(-EINVAL, rdmashare_listen(rs, PORT, 1025));
	ASSERT_EQ(0, rs_write_file(BACKLOG_PATH, "4"));
	EXPECT_EQ(-EINVAL, rdmashare_listen(rs, PORT, 5));
	EXPECT_LE(0, rdmashare_listen(rs, PORT, 4));
	rdmashare_close(rs);
}

/*
 * Set up both QPs of a loopback AC afresh; the number of rdmashare's CQs,
 * their smallest and largest entries in *@min and *@max (a device may
 * round a CQ up).
 */
static int new_qps_cqs(struct rdmashare *rs, int l, unsigned int *min, unsigned int *max)
{
	char line[1024], *p;
	unsigned int cqe;
	int c, s, n = 0;
	FILE *f;

	*min = ~0u;
	*max = 0;
	if (rs_write_file(IDLE_PATH, "100") || rs_wait_qps(0, 30))
		return -1;
	if (pair(rs, l, &c, &s) || one_message(rs, c, s, 0))
		return -2;
	f = popen("rdma resource show cq", "r");
	if (!f)
		return -3;
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, " cqe ");
		if (!strstr(line, "[rdmashare]") || !p || sscanf(p, " cqe %u", &cqe) != 1)
			continue;
		n++;
		*min = cqe < *min ? cqe : *min;
		*max = cqe > *max ? cqe : *max;
	}
	if (pclose(f) || unpair(rs, c, s))
		return -4;
	return n;
}

TEST_F_TIMEOUT(tun, cq_depth, 180)
{
	char bad_small[32], least[32], dev[512], srq[32];
	const char *bad[] = {
		"-1", "x", "\n", "1048577", "4294967296", "1", bad_small, "2000 ",
	};
	struct rdmashare *rs = rs_open_setup(1 << 20, 64);
	unsigned int need, min, max;
	int l;

	ASSERT_NE(NULL, rs);
	EXPECT_STREQ("0", self->cq);
	/*
	 * What a QP on the first device needs: 7 work requests per SEND (it,
	 * 4 WRITEs, 2 registrations), + 1, + its SRQ.
	 */
	ASSERT_EQ(0, rs_first_device(dev, sizeof(dev) - 16));
	strcat(dev, "/srq_size");
	ASSERT_EQ(0, rs_read_file(dev, srq, sizeof(srq)));
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/srq_size", bad_small, sizeof(bad_small)));
	ASSERT_STREQ(srq, bad_small);
	need = 7 * atoi(self->depth) + 1 + atoi(srq);
	snprintf(bad_small, sizeof(bad_small), "%u", need - 1);
	snprintf(least, sizeof(least), "%u", need);
	EXPECT_EQ(0, refuses(CQ_PATH, bad, sizeof(bad) / sizeof(bad[0])));
	EXPECT_EQ(0, rs_write_file(CQ_PATH, least));

	l = rdmashare_listen(rs, PORT, 4);
	ASSERT_LE(0, l);
	/* Each QP has a CQ of its own, as deep as asked. */
	ASSERT_EQ(0, rs_write_file(CQ_PATH, "5000"));
	EXPECT_EQ(2, new_qps_cqs(rs, l, &min, &max));
	EXPECT_LE(5000, min);
	ASSERT_EQ(0, rs_write_file(CQ_PATH, "0"));
	EXPECT_EQ(2, new_qps_cqs(rs, l, &min, &max));
	EXPECT_LE(need, min);
	EXPECT_GT(5000, max);
	rdmashare_close(rs);
}

TEST_F(tun, tunable_bad_writes)
{
	static const char *const bad_qps[] = {
		"0", "17", "-1", "abc", "\n", "2 2", "2x", "0x", "1.0",
		"99999999999999999999", " 2",
	};
	static const char *const bad_idle[] = {
		"-1", "abc", "\n", "86400001", "1.5", "1e3", "5000ms",
		"18446744073709551616",
	};
	static const char *const bad_maxacs[] = {
		"0", "-1", "1048577", "4294967296", "x", "\n", "1 ",
	};
	char v[32], *longv;
	unsigned int i;
	int ret;

	EXPECT_STREQ("1", self->qps);
	EXPECT_STREQ("60000", self->idle);
	EXPECT_STREQ("65536", self->maxacs);

	for (i = 0; i < sizeof(bad_qps) / sizeof(bad_qps[0]); i++) {
		EXPECT_EQ(-EINVAL, rs_write_file(QPS_PATH, bad_qps[i]))
			TH_LOG("qps_per_peer <- '%s'", bad_qps[i]);
		ASSERT_EQ(0, rs_read_file(QPS_PATH, v, sizeof(v)));
		EXPECT_STREQ(self->qps, v);
	}
	for (i = 0; i < sizeof(bad_idle) / sizeof(bad_idle[0]); i++) {
		EXPECT_EQ(-EINVAL, rs_write_file(IDLE_PATH, bad_idle[i]))
			TH_LOG("idle_timeout_ms <- '%s'", bad_idle[i]);
		ASSERT_EQ(0, rs_read_file(IDLE_PATH, v, sizeof(v)));
		EXPECT_STREQ(self->idle, v);
	}

	for (i = 0; i < sizeof(bad_maxacs) / sizeof(bad_maxacs[0]); i++) {
		EXPECT_EQ(-EINVAL, rs_write_file(MAXACS_PATH, bad_maxacs[i]))
			TH_LOG("max_acs_per_file <- '%s'", bad_maxacs[i]);
		ASSERT_EQ(0, rs_read_file(MAXACS_PATH, v, sizeof(v)));
		EXPECT_STREQ(self->maxacs, v);
	}

	/* An empty write(2) reaches no attribute: nothing changes. */
	EXPECT_EQ(0, rs_write_file(QPS_PATH, ""));
	ASSERT_EQ(0, rs_read_file(QPS_PATH, v, sizeof(v)));
	EXPECT_STREQ(self->qps, v);

	/* Too long: a run of digits inside a page, and past a page. */
	longv = malloc(5001);
	ASSERT_NE(NULL, longv);
	memset(longv, '1', 4000);
	longv[4000] = '\0';
	EXPECT_EQ(-EINVAL, rs_write_file(QPS_PATH, longv));
	memset(longv, '1', 5000);
	longv[5000] = '\0';
	ret = rs_write_file(IDLE_PATH, longv);
	EXPECT_TRUE(ret == -E2BIG || ret == -EINVAL) TH_LOG("%d", ret);
	free(longv);
	ASSERT_EQ(0, rs_read_file(QPS_PATH, v, sizeof(v)));
	EXPECT_STREQ(self->qps, v);
	ASSERT_EQ(0, rs_read_file(IDLE_PATH, v, sizeof(v)));
	EXPECT_STREQ(self->idle, v);

	/* The edges of the ranges are good values. */
	EXPECT_EQ(0, rs_write_file(QPS_PATH, "16\n"));
	ASSERT_EQ(0, rs_read_file(QPS_PATH, v, sizeof(v)));
	EXPECT_STREQ("16", v);
	EXPECT_EQ(0, rs_write_file(QPS_PATH, "1"));
	EXPECT_EQ(0, rs_write_file(IDLE_PATH, "86400000"));
	EXPECT_EQ(0, rs_write_file(IDLE_PATH, "0"));
	ASSERT_EQ(0, rs_read_file(IDLE_PATH, v, sizeof(v)));
	EXPECT_STREQ("0", v);
}

TEST_F(tun, every_tunable)
{
	static const char *const bad[] = { "x", "\n", "12x", "- 1" };
	char name[256], path[512], before[64], after[64], *longv;
	struct dirent *de;
	struct stat st;
	unsigned int i;
	int n = 0, ret, status;
	pid_t pid;
	DIR *d;

	longv = malloc(5001);
	ASSERT_NE(NULL, longv);
	d = opendir(RS_SYSFS);
	ASSERT_NE(NULL, d);
	while ((de = readdir(d))) {
		snprintf(name, sizeof(name), "%s", de->d_name);
		snprintf(path, sizeof(path), RS_SYSFS "/%s", name);
		if (lstat(path, &st) || !S_ISREG(st.st_mode) || !(st.st_mode & 0200) ||
		    !strcmp(name, "uevent"))
			continue;
		n++;
		EXPECT_EQ(0644, st.st_mode & 07777) TH_LOG("%s", name);
		ASSERT_EQ(0, rs_read_file(path, before, sizeof(before)));
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			EXPECT_EQ(-EINVAL, rs_write_file(path, bad[i]))
				TH_LOG("%s <- '%s'", name, bad[i]);
		}
		memset(longv, '7', 4000);
		longv[4000] = '\0';
		EXPECT_EQ(-EINVAL, rs_write_file(path, longv)) TH_LOG("%s", name);
		memset(longv, '7', 5000);
		longv[5000] = '\0';
		ret = rs_write_file(path, longv);
		EXPECT_TRUE(ret == -E2BIG || ret == -EINVAL) TH_LOG("%s: %d", name, ret);
		EXPECT_EQ(0, rs_write_file(path, ""));
		ASSERT_EQ(0, rs_read_file(path, after, sizeof(after)));
		EXPECT_STREQ(before, after) TH_LOG("%s", name);

		/* Root's: another user gets EACCES writing the same value. */
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			if (setgid(65534) || setuid(65534))
				_exit(10);
			_exit(rs_write_file(path, before) == -EACCES ? 0 : 11);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("%s", name);
	}
	closedir(d);
	free(longv);
	/* Thirty-one tunables (Documentation/ABI/testing/sysfs-class-misc-rdmashare). */
	EXPECT_EQ(31, n);
}

TEST_F(tun, tunable_unprivileged)
{
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		char v[32];

		if (setgid(65534) || setuid(65534))
			_exit(10);
		if (rs_read_file(QPS_PATH, v, sizeof(v)))
			_exit(11);
		if (rs_write_file(QPS_PATH, "2") != -EACCES)
			_exit(12);
		if (rs_write_file(IDLE_PATH, "0") != -EACCES)
			_exit(13);
		if (rs_write_file(MAXACS_PATH, "1") != -EACCES)
			_exit(14);
		if (rs_write_file(CQ_PATH, "0") != -EACCES)
			_exit(15);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_F_TIMEOUT(tun, idle_peer, 240)
{
	struct rdmashare *rs;
	int l, c, s, qps;
	double t0;

	/* Transports left by earlier tests go first. */
	ASSERT_EQ(0, rs_write_file(IDLE_PATH, "200"));
	ASSERT_EQ(0, rs_wait_qps(0, 30));

	ASSERT_EQ(0, rs_write_file(IDLE_PATH, "0"));
	rs = rs_open_setup(1 << 20, 64);
	ASSERT_NE(NULL, rs);
	l = rdmashare_listen(rs, PORT, 16);
	ASSERT_LE(0, l);
	ASSERT_EQ(0, pair(rs, l, &c, &s));
	ASSERT_EQ(0, one_message(rs, c, s, 1));
	ASSERT_EQ(0, unpair(rs, c, s));
	ASSERT_EQ(2, count_rdmashare_qps());

	/* idle_timeout_ms 0: the idle transport stays. */
	sleep(2);
	EXPECT_EQ(2, count_rdmashare_qps());

	/* A new timeout applies at once. */
	t0 = rs_now();
	ASSERT_EQ(0, rs_write_file(IDLE_PATH, "500"));
	qps = rs_wait_qps(0, 30);
	ASSERT_EQ(0, qps);
	TH_LOG("idle transport gone %.1f s after the 500 ms timeout was set", rs_now() - t0);

	/* A later connect builds a new transport. */
	ASSERT_EQ(0, rs_write_file(IDLE_PATH, "0"));
	ASSERT_EQ(0, pair(rs, l, &c, &s));
	ASSERT_EQ(0, one_message(rs, c, s, 2));
	ASSERT_EQ(0, one_message(rs, s, c, 3));
	EXPECT_EQ(2, count_rdmashare_qps());

	/* Not while an AC uses it, whatever the timeout. */
	ASSERT_EQ(0, rs_write_file(IDLE_PATH, "100"));
	sleep(2);
	EXPECT_EQ(2, count_rdmashare_qps());
	ASSERT_EQ(0, one_message(rs, c, s, 4));
	ASSERT_EQ(0, unpair(rs, c, s));
	EXPECT_EQ(0, rs_wait_qps(0, 30));
	rdmashare_close(rs);
}

TEST_F_TIMEOUT(tun, qps_per_peer, 300)
{
	int l, c[19], s[19], i, qps;
	struct rdmashare *rs;

	ASSERT_EQ(0, rs_write_file(IDLE_PATH, "200"));
	ASSERT_EQ(0, rs_wait_qps(0, 30));
	ASSERT_EQ(0, rs_write_file(IDLE_PATH, "0"));
	ASSERT_EQ(0, rs_write_file(QPS_PATH, "3"));
	ASSERT_EQ(0, rs_write_file(MODE_PATH, "app"));

	rs = rs_open_setup(4 << 20, 256);
	ASSERT_NE(NULL, rs);
	l = rdmashare_listen(rs, PORT, 32);
	ASSERT_LE(0, l);
	/* One application: its ACs share a QP, and its accepting end. */
	for (i = 0; i < 9; i++) {
		ASSERT_EQ(0, pair(rs, l, &c[i], &s[i])) TH_LOG("AC %d", i);
	}
	EXPECT_EQ(2, count_rdmashare_qps());
	/* Every AC on its own: three QPs this way and their accepting ends. */
	ASSERT_EQ(0, rs_write_file(MODE_PATH, "flat"));
	for (i = 9; i < 18; i++) {
		ASSERT_EQ(0, pair(rs, l, &c[i], &s[i])) TH_LOG("AC %d", i);
	}
	qps = count_rdmashare_qps();
	EXPECT_EQ(6, qps);
	for (i = 0; i < 18; i++) {
		ASSERT_EQ(0, one_message(rs, c[i], s[i], 10 + i));
		ASSERT_EQ(0, one_message(rs, s[i], c[i], 40 + i));
	}

	/* Fewer QPs wanted: the new AC takes one of those there. */
	ASSERT_EQ(0, rs_write_file(QPS_PATH, "1"));
	ASSERT_EQ(0, pair(rs, l, &c[18], &s[18]));
	ASSERT_EQ(0, one_message(rs, c[18], s[18], 70));
	EXPECT_EQ(6, count_rdmashare_qps());

	for (i = 0; i < 19; i++) {
		ASSERT_EQ(0, unpair(rs, c[i], s[i]));
	}
	ASSERT_EQ(0, rs_write_file(IDLE_PATH, "200"));
	EXPECT_EQ(0, rs_wait_qps(0, 30));
	rdmashare_close(rs);
}

/* LISTEN and CONNECT past max_acs_per_file: EMFILE; a full acceptor refuses. */
TEST_F_TIMEOUT(tun, max_acs_per_file, 240)
{
	struct sockaddr_in sin = addr_of(PORT + 1);
	struct rdmashare *a, *b;
	int l[4], c[4], s[3], i;

	ASSERT_EQ(0, rs_write_file(MAXACS_PATH, "4"));
	a = rs_open_setup(1 << 20, 64);
	ASSERT_NE(NULL, a);
	b = rs_open_setup(1 << 20, 64);
	ASSERT_NE(NULL, b);

	/* Four listeners fill a; a fifth AC of any kind does not fit. */
	for (i = 0; i < 4; i++) {
		l[i] = rdmashare_listen(a, PORT + 10 + i, 4);
		ASSERT_LE(0, l[i]);
	}
	EXPECT_EQ(-EMFILE, rdmashare_listen(a, PORT + 20, 4));
	EXPECT_EQ(-EMFILE, rdmashare_connect(a, (struct sockaddr *)&sin, 5000));
	/* A closed AC makes room once its close completed. */
	ASSERT_EQ(0, rdmashare_close_ac(a, l[3]));
	ASSERT_EQ(0, rdmashare_flush(a, 5000));
	l[3] = rdmashare_listen(a, PORT + 20, 4);
	ASSERT_LE(0, l[3]);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, rdmashare_close_ac(a, l[i]));
	}
	ASSERT_EQ(0, rdmashare_flush(a, 5000));

	/* b listens and accepts 3: full.  a's fourth CONNECT is refused. */
	l[0] = rdmashare_listen(b, PORT + 1, 8);
	ASSERT_LE(0, l[0]);
	for (i = 0; i < 3; i++) {
		c[i] = rdmashare_connect(a, (struct sockaddr *)&sin, 20000);
		ASSERT_LE(0, c[i]) TH_LOG("connect %d: %d", i, c[i]);
		s[i] = rdmashare_accept(b, l[0], 20000);
		ASSERT_LE(0, s[i]);
	}
	EXPECT_EQ(-ECONNREFUSED, rdmashare_connect(a, (struct sockaddr *)&sin, 20000));
	/* A higher limit: one more fits on both sides. */
	ASSERT_EQ(0, rs_write_file(MAXACS_PATH, "5"));
	c[3] = rdmashare_connect(a, (struct sockaddr *)&sin, 20000);
	ASSERT_LE(0, c[3]);
	/* Lowered again: a keeps its 4 ACs and gets no fifth. */
	ASSERT_EQ(0, rs_write_file(MAXACS_PATH, "4"));
	EXPECT_EQ(-EMFILE, rdmashare_connect(a, (struct sockaddr *)&sin, 20000));
	EXPECT_EQ(-EMFILE, rdmashare_listen(a, PORT + 21, 4));
	/* The ACs that fit work. */
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, one_message2(a, c[i], b, s[i], 40 + i)) TH_LOG("AC %d", i);
	}
	ASSERT_EQ(0, one_message2(b, s[0], a, c[0], 50));
	rdmashare_close(a);
	rdmashare_close(b);
}

TEST_HARNESS_MAIN

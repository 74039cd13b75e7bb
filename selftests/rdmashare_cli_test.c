// SPDX-License-Identifier: GPL-2.0
/*
 * The rdmashare tool (userlib/build/rdmashare) against a live transport:
 *  - status: the device and the peer of an open AC, as a table and as
 *    JSON (checked by python3's json module) with the same numbers as
 *    sysfs;
 *  - stats: counters, and rates over an interval while a child sends;
 *  - get and set: a valid value is written and shown, a bad one is refused
 *    with exit status 1 and leaves the value, an unknown key and the
 *    uevent file are not tunables (exit status 2), a user other than root
 *    is refused;
 *  - no module: status says so (exit status 2).
 */
#include <arpa/inet.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <sys/syscall.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT	7950

static char tool[PATH_MAX];

/* The tool next to the selftests: ../../userlib/build/rdmashare. */
static int find_tool(void)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0)
		return -1;
	self[n] = 0;
	snprintf(tool, sizeof(tool), "%s/../../userlib/build/rdmashare", dirname(self));
	return access(tool, X_OK);
}

/* Run the tool with @args (a shell word list); its stdout and exit status. */
static int run(const char *args, char *out, size_t len)
{
	char cmd[PATH_MAX + 512];
	size_t got = 0, n;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", tool, args);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (got < len - 1 && (n = fread(out + got, 1, len - 1 - got, f)) > 0)
		got += n;
	out[got] = 0;
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* python3 checks @json with @expr (a boolean over "d", the parsed object). */
static int json_check(const char *json, const char *expr)
{
	char path[] = "/tmp/rs-cli-XXXXXX", cmd[512];
	int fd = mkstemp(path), ret;

	if (fd < 0 || write(fd, json, strlen(json)) != (ssize_t)strlen(json))
		return -1;
	close(fd);
	setenv("RS_EXPR", expr, 1);
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import json,os,sys; d=json.load(open(sys.argv[1])); "
		 "sys.exit(0 if eval(os.environ[\"RS_EXPR\"]) else 1)' %s", path);
	ret = system(cmd);
	unlink(path);
	return WIFEXITED(ret) ? WEXITSTATUS(ret) : -1;
}

static struct sockaddr_in addr_of(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	return sin;
}

static const char *ip(void)
{
	return getenv("RS_IP") ?: "127.0.0.1";
}

FIXTURE(cli) {
	struct rdmashare *c, *s;
	int cac, sac;
	char out[65536];
};

FIXTURE_SETUP(cli)
{
	struct sockaddr_in sin = addr_of(PORT);
	int l;

	ASSERT_EQ(0, find_tool()) TH_LOG("no tool at %s", tool);
	self->c = rs_open_setup(1 << 20, 64);
	self->s = rs_open_setup(1 << 20, 64);
	ASSERT_NE(NULL, self->c);
	ASSERT_NE(NULL, self->s);
	l = rdmashare_listen(self->s, PORT, 4);
	ASSERT_LE(0, l);
	self->cac = rdmashare_connect(self->c, (struct sockaddr *)&sin, 20000);
	ASSERT_LE(0, self->cac);
	self->sac = rdmashare_accept(self->s, l, 20000);
	ASSERT_LE(0, self->sac);
}

FIXTURE_TEARDOWN(cli)
{
	rdmashare_close(self->c);
	rdmashare_close(self->s);
}

TEST_F_TIMEOUT(cli, status, 60)
{
	char want[512], path[256], v[32];

	ASSERT_EQ(0, run("status", self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "DEVICE")) TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "\nrxe0 "));
	snprintf(want, sizeof(want), "\n%s ", ip());
	EXPECT_NE(NULL, strstr(self->out, want)) TH_LOG("%s", self->out);

	ASSERT_EQ(0, run("--json status", self->out, sizeof(self->out)));
	/* The same numbers as sysfs: the peer's QPs and ACs, a tunable. */
	snprintf(path, sizeof(path), RS_SYSFS "/idle_timeout_ms");
	ASSERT_EQ(0, rs_read_file(path, v, sizeof(v)));
	v[strcspn(v, "\n")] = 0;
	snprintf(want, sizeof(want),
		 "[p['qps'] for p in d['peers'] if p['name']=='%s']==[2] and "
		 "[p['acs'] for p in d['peers'] if p['name']=='%s']==[2] and "
		 "d['devices'][0]['name']=='rxe0' and d['abi_version']==%d and "
		 "d['tunables']['idle_timeout_ms']=='%s'",
		 ip(), ip(), RDMASHARE_ABI_VERSION, v);
	EXPECT_EQ(0, json_check(self->out, want)) TH_LOG("%s", self->out);
}

TEST_F_TIMEOUT(cli, stats, 90)
{
	char buf[64] = "stats", expr[256], path[256], acs[32] = "0", *second;
	pid_t pid;
	int i;

	for (i = 0; i < 10; i++)
		ASSERT_EQ(0, rdmashare_send(self->c, self->cac, buf, sizeof(buf)));
	for (i = 0; i < 10; i++)
		ASSERT_EQ(64, rdmashare_recv(self->s, self->sac, buf, sizeof(buf), 10000));
	ASSERT_EQ(0, rdmashare_flush(self->c, 10000));
	ASSERT_EQ(0, run("--json stats", self->out, sizeof(self->out)));
	snprintf(expr, sizeof(expr),
		 "[o['tx_msgs']>=10 and o['rx_msgs']>=10 for o in d['objects'] "
		 "if o['kind']=='peer' and o['name']=='%s']==[True]", ip());
	EXPECT_EQ(0, json_check(self->out, expr)) TH_LOG("%s", self->out);
	ASSERT_EQ(0, run("stats", self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "TX_MSGS")) TH_LOG("%s", self->out);

	/* Rates while a child keeps an AC of its own busy, until killed. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct rdmashare *c = rs_open_setup(1 << 20, 64), *s = rs_open_setup(1 << 20, 64);
		struct sockaddr_in sin = addr_of(PORT + 1);
		int l, cac, sac, ret;
		time_t end;

		if (!c || !s)
			_exit(2);
		l = rdmashare_listen(s, PORT + 1, 4);
		cac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
		sac = rdmashare_accept(s, l, 20000);
		if (l < 0 || cac < 0 || sac < 0)
			_exit(3);
		for (end = time(NULL) + 120; time(NULL) < end;) {
			ret = rdmashare_send(c, cac, buf, sizeof(buf));
			if (!ret)
				ret = rdmashare_recv(s, sac, buf, sizeof(buf), 10000);
			if (ret != 0 && ret != 64) {
				fprintf(stderr, "child: %d\n", ret);
				_exit(4);
			}
		}
		_exit(5);
	}
	/* Its two ends join the fixture's two on the peer. */
	snprintf(path, sizeof(path), RS_SYSFS "/peers/%s/acs", ip());
	for (i = 0; i < 300; i++) {
		if (!rs_read_file(path, acs, sizeof(acs)) && atoi(acs) == 4)
			break;
		usleep(100000);
	}
	EXPECT_EQ(4, atoi(acs));
	usleep(500000);
	EXPECT_EQ(0, run("--json stats -w 1 -c 2", self->out, sizeof(self->out)));
	kill(pid, SIGTERM);
	waitpid(pid, &i, 0);
	/* Still sending when it was stopped. */
	EXPECT_TRUE(WIFSIGNALED(i) && WTERMSIG(i) == SIGTERM) TH_LOG("child %#x", i);
	/* Two reports, one per line; the peer's rate is positive in both. */
	snprintf(expr, sizeof(expr),
		 "[o['tx_msgs']>0 for o in d['objects'] "
		 "if o['kind']=='peer' and o['name']=='%s']==[True] and d['interval']>0.5",
		 ip());
	second = strchr(self->out, '\n');
	ASSERT_NE(NULL, second);
	*second++ = 0;
	EXPECT_EQ(0, json_check(self->out, expr)) TH_LOG("%s", self->out);
	EXPECT_EQ(0, json_check(second, expr)) TH_LOG("%s", second);
	EXPECT_EQ(2, run("stats -w 0", self->out, sizeof(self->out)));
}

TEST_F(cli, get_set)
{
	char before[32], v[32];
	pid_t pid;
	int st;

	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/idle_timeout_ms", before, sizeof(before)));
	before[strcspn(before, "\n")] = 0;
	ASSERT_EQ(0, run("get idle_timeout_ms", self->out, sizeof(self->out)));
	EXPECT_EQ(0, strncmp(self->out, before, strlen(before)));
	ASSERT_EQ(0, run("get", self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "qps_per_peer"));
	EXPECT_EQ(NULL, strstr(self->out, "uevent"));
	ASSERT_EQ(0, run("--json get", self->out, sizeof(self->out)));
	EXPECT_EQ(0, json_check(self->out, "'sched_mode' in d['tunables']")) TH_LOG("%s", self->out);

	EXPECT_EQ(0, run("set idle_timeout_ms 54321", self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "idle_timeout_ms 54321"));
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/idle_timeout_ms", v, sizeof(v)));
	EXPECT_EQ(54321, atoi(v));

	EXPECT_EQ(1, run("set idle_timeout_ms soon", self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "refused")) TH_LOG("%s", self->out);
	EXPECT_EQ(1, run("set qps_per_peer 99", self->out, sizeof(self->out)));
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/idle_timeout_ms", v, sizeof(v)));
	EXPECT_EQ(54321, atoi(v));
	EXPECT_EQ(2, run("set no_such_key 1", self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "unknown key"));
	EXPECT_EQ(2, run("set uevent add", self->out, sizeof(self->out)));
	EXPECT_EQ(2, run("get abi_version", self->out, sizeof(self->out)));
	EXPECT_EQ(2, run("set idle_timeout_ms", self->out, sizeof(self->out)));
	EXPECT_EQ(2, run("frobnicate", self->out, sizeof(self->out)));

	/* Not root: refused, and nothing changes. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(10);
		_exit(run("set idle_timeout_ms 1", self->out, sizeof(self->out)) == 1 &&
		      strstr(self->out, "permission denied") ? 0 : 11);
	}
	waitpid(pid, &st, 0);
	EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st)) TH_LOG("child %#x", st);
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/idle_timeout_ms", v, sizeof(v)));
	EXPECT_EQ(54321, atoi(v));
	EXPECT_EQ(0, rs_write_file(RS_SYSFS "/idle_timeout_ms", before));
}

/* Unload the module (nothing may hold it), run the tool, load it again. */
/*
 * listeners: root sees every listening port with its owner: the fixture's
 * (uid 0, this process) and one of nobody's (uid 65534, its pid); --json
 * says the same; nobody cannot list.
 */
TEST_F_TIMEOUT(cli, listeners, 60)
{
	int ready[2], go[2], st;
	char expr[512], line[128];
	pid_t pid;

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct rdmashare *rs;
		char c;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		rs = rs_open_setup(1 << 16, 1);
		if (!rs || rdmashare_listen(rs, PORT + 7, 3) <= 0)
			_exit(11);
		/* Not root: debugfs is closed to it. */
		if (run("listeners", self->out, sizeof(self->out)) != 1)
			_exit(12);
		if (write(ready[1], "x", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(13);
		_exit(0);
	}
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], line, 1));
	ASSERT_EQ(0, run("listeners", self->out, sizeof(self->out)));
	snprintf(line, sizeof(line), "%-6u %-8u %-8d ", PORT + 7, 65534, pid);
	EXPECT_NE(NULL, strstr(self->out, line)) TH_LOG("%s", self->out);
	snprintf(line, sizeof(line), "%-6u %-8u %-8d ", PORT, 0, getpid());
	EXPECT_NE(NULL, strstr(self->out, line)) TH_LOG("%s", self->out);
	ASSERT_EQ(0, run("--json listeners", self->out, sizeof(self->out)));
	snprintf(expr, sizeof(expr),
		 "[(l['uid'], l['pid'], l['backlog_max']) for l in d['listeners'] "
		 "if l['port'] == %u] == [(65534, %d, 3)]", PORT + 7, pid);
	EXPECT_EQ(0, json_check(self->out, expr)) TH_LOG("%s", self->out);
	ASSERT_EQ(1, write(go[1], "x", 1));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("child %d", st);
}

TEST(no_module)
{
	const char *ko = getenv("RS_MODULE");
	char out[4096];
	int fd;

	if (!ko || !*ko)
		SKIP(return, "RS_MODULE is not set");
	ASSERT_EQ(0, find_tool());
	ASSERT_EQ(0, syscall(__NR_delete_module, "rdmashare", O_NONBLOCK));
	EXPECT_EQ(2, run("status", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "is rdmashare.ko loaded?")) TH_LOG("%s", out);
	EXPECT_EQ(2, run("set split 1", out, sizeof(out)));
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, syscall(__NR_finit_module, fd, "", 0));
	close(fd);
	EXPECT_EQ(0, run("status", out, sizeof(out)));
}

TEST_HARNESS_MAIN

// SPDX-License-Identifier: GPL-2.0
/*
 * Peer authentication (Documentation/design.rst, "Security"): only a peer's
 * rdmashare becomes a shared QP.  A "rogue peer" built on user-space
 * librdmacm and verbs connects to the module's rdma_cm port with the
 * protocol's private data (rogue.h), on one host (Soft-RoCE loopback, RS_IP):
 *  - unprivileged_peer: as nobody, from RS_IP and from a second address of
 *    the host: rejected, no QP for it, peers_refused counts it;
 *  - unprivileged_bind: nobody cannot bind rdma_cm below 1024 (EACCES): what
 *    the trust rests on;
 *  - root_unprivileged_port: root, from a port above 1023: rejected;
 *  - root_privileged_port: root, from port 900, as the module's own active
 *    side does: accepted, a QP of rdmashare's appears for it;
 *  - qps_per_peer_cap: with max_qps_per_peer 1 a second QP from that peer
 *    is rejected;
 *  - module_still_works: after all that, rdmashare's own ACs connect.
 */
#include <arpa/inet.h>
#include <grp.h>

#include "common.h"
#include "rdmashare.h"
#include "rogue.h"

#include "kselftest_harness.h"

#define PORT		7900
#define NOBODY		65534
#define SECOND_IP	"198.18.0.201"

static const char *rs_ip(void)
{
	return getenv("RS_IP") ?: "127.0.0.1";
}

/*
 * Connect to the module's port like a peer's rdmashare would, from @src
 * (NULL: the route's) and @src_port (0: any); the event that ends the
 * attempt (RDMA_CM_EVENT_ESTABLISHED, _REJECTED, ...), or -errno of a
 * step that failed.  An established connection is disconnected.
 */
static int rogue_connect(const char *src, unsigned int src_port)
{
	struct rogue r;
	int ret;

	ret = rogue_open(&r, rs_ip(), src, src_port);
	if (ret == RDMA_CM_EVENT_ESTABLISHED) {
		rdma_disconnect(r.id);
		rogue_event(r.ch, 5000);
		rogue_close(&r);
	}
	return ret;
}

static long peers_refused(void)
{
	char buf[64];

	if (rs_read_file(RS_SYSFS "/peers_refused", buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 10);
}

/* rogue_connect() as nobody, in a child; its result. */
static int rogue_as_nobody(const char *src, unsigned int src_port)
{
	int p[2], ret = -1000;
	pid_t pid;

	if (pipe(p))
		return -1001;
	pid = fork();
	if (pid < 0)
		return -1002;
	if (!pid) {
		if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
			ret = -1003;
		else
			ret = rogue_connect(src, src_port);
		_exit(write(p[1], &ret, sizeof(ret)) == sizeof(ret) ? 0 : 1);
	}
	if (read(p[0], &ret, sizeof(ret)) != sizeof(ret))
		ret = -1004;
	waitpid(pid, NULL, 0);
	close(p[0]);
	close(p[1]);
	return ret;
}

FIXTURE(auth)
{
	int qps;
	long refused;
};

FIXTURE_SETUP(auth)
{
	/* No QP of a test before: counts start from a quiet host. */
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/idle_timeout_ms", "1"));
	ASSERT_EQ(0, rs_wait_qps(0, 20));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/idle_timeout_ms", "60000"));
	self->qps = count_rdmashare_qps();
	self->refused = peers_refused();
	ASSERT_LE(0, self->refused);
}

FIXTURE_TEARDOWN(auth)
{
}

TEST_F(auth, unprivileged_peer)
{
	EXPECT_EQ(RDMA_CM_EVENT_REJECTED, rogue_as_nobody(NULL, 0));
	EXPECT_EQ(self->refused + 1, peers_refused());
	EXPECT_EQ(self->qps, count_rdmashare_qps());

	/* From another address of this host, as the review's attacker did. */
	rs_sh("ip addr del %s/32 dev veth0 2>/dev/null", SECOND_IP);
	ASSERT_EQ(0, rs_sh("ip addr add %s/32 dev veth0", SECOND_IP));
	usleep(200000);		/* rxe adds the GID */
	EXPECT_EQ(RDMA_CM_EVENT_REJECTED, rogue_as_nobody(SECOND_IP, 0));
	EXPECT_EQ(self->refused + 2, peers_refused());
	EXPECT_EQ(self->qps, count_rdmashare_qps());
	rs_sh("ip addr del %s/32 dev veth0", SECOND_IP);
}

TEST_F(auth, unprivileged_bind)
{
	EXPECT_EQ(-EACCES, rogue_as_nobody(NULL, 900));
	EXPECT_EQ(self->refused, peers_refused());
}

TEST_F(auth, root_unprivileged_port)
{
	EXPECT_EQ(RDMA_CM_EVENT_REJECTED, rogue_connect(NULL, 40000));
	EXPECT_EQ(self->refused + 1, peers_refused());
	EXPECT_EQ(self->qps, count_rdmashare_qps());
}

TEST_F(auth, root_privileged_port)
{
	EXPECT_EQ(RDMA_CM_EVENT_ESTABLISHED, rogue_connect(NULL, 900));
	EXPECT_EQ(self->refused, peers_refused());
}

/*
 * max_qps_per_peer: with 1, a second QP from the same (authenticated) peer
 * is rejected and counted; the first stays.
 */
TEST_F(auth, qps_per_peer_cap)
{
	char saved[32];
	struct rogue r1, r2;

	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/max_qps_per_peer", saved, sizeof(saved)));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/max_qps_per_peer", "1"));
	rs_sh("ip addr del %s/32 dev veth0 2>/dev/null", SECOND_IP);
	ASSERT_EQ(0, rs_sh("ip addr add %s/32 dev veth0", SECOND_IP));
	usleep(200000);
	EXPECT_EQ(RDMA_CM_EVENT_ESTABLISHED, rogue_open(&r1, rs_ip(), SECOND_IP, 903));
	EXPECT_EQ(RDMA_CM_EVENT_REJECTED, rogue_open(&r2, rs_ip(), SECOND_IP, 904));
	EXPECT_EQ(self->refused + 1, peers_refused());
	EXPECT_EQ(self->qps + 1, count_rdmashare_qps());
	rogue_close(&r1);
	rs_sh("ip addr del %s/32 dev veth0", SECOND_IP);
	EXPECT_EQ(0, rs_write_file(RS_SYSFS "/max_qps_per_peer", saved));
}

TEST_F(auth, module_still_works)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	struct rdmashare *rs = rs_open_setup(0, 0);
	char buf[16];
	int l, c, s;

	ASSERT_EQ(RDMA_CM_EVENT_REJECTED, rogue_as_nobody(NULL, 0));
	ASSERT_NE(NULL, rs);
	inet_pton(AF_INET, rs_ip(), &sin.sin_addr);
	l = rdmashare_listen(rs, PORT, 4);
	ASSERT_LT(0, l);
	c = rdmashare_connect(rs, (struct sockaddr *)&sin, 20000);
	ASSERT_LT(0, c);
	s = rdmashare_accept(rs, l, 20000);
	ASSERT_LT(0, s);
	ASSERT_EQ(0, rdmashare_send(rs, c, "hello", 6));
	EXPECT_EQ(6, rdmashare_recv(rs, s, buf, sizeof(buf), 20000));
	EXPECT_STREQ("hello", buf);
	/* Its own QPs, both ways, passed the check. */
	EXPECT_EQ(self->refused + 1, peers_refused());
	rdmashare_close(rs);
}

TEST_HARNESS_MAIN

// SPDX-License-Identifier: GPL-2.0
/*
 * AC files' send buffers (issue #33): a closed AC file's buffer comes back
 * as soon as no SEND can point at it (at the close, once what was written
 * is acknowledged), not when its AC is freed after its CLOSE and the
 * peer's, so that connects and accepts do not fail with ENOSPC under
 * churn.
 */
#include <arpa/inet.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT		8600

static struct sockaddr_in addr_of(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	return sin;
}

/* A handle whose file area holds @n send buffers of 64 KiB. */
static struct rdmashare *open_area(unsigned int n)
{
	struct rdmashare_setup p = { .flags = RDMASHARE_SETUP_FILES, .files_size = n << 16,
				     .data_size = 1 << 20 };

	return rs_open_with(&p);
}

/* Up to 5 s for what @fd wrote to be acknowledged: 0, or what is left. */
static int acked(int fd)
{
	int i, n = -1;

	for (i = 0; i < 500; i++) {
		if (ioctl(fd, SIOCOUTQ, &n) || !n)
			break;
		usleep(10000);
	}
	return n;
}

/*
 * Room for two AC files, one of them kept open; eight connect, write,
 * wait for the peer's acknowledgement and close, each followed at once by
 * the next connect, while the server keeps every accepted AC file open:
 * each finds room.
 */
TEST(closed_returns_buffer)
{
	struct sockaddr_in sin = addr_of(PORT);
	struct rdmashare *c = open_area(2);
	int lfd, hold, cfd, sfd[8], i;
	char buf[16];

	ASSERT_NE(NULL, c);
	lfd = rdmashare_listen_fd(PORT, 16, 16, 0);
	ASSERT_LE(0, lfd);
	hold = rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 65536, 0);
	ASSERT_LE(0, hold);
	for (i = 0; i < 8; i++) {
		cfd = rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 65536, 0);
		ASSERT_LE(0, cfd) TH_LOG("connect %d: %s", i, strerror(-cfd));
		ASSERT_EQ(5, write(cfd, "hello", 5));
		ASSERT_EQ(0, acked(cfd));
		close(cfd);
	}
	for (i = 0; i < 9; i++) {
		sfd[i % 8] = rdmashare_accept_fd(lfd, NULL, NULL, 0);
		ASSERT_LE(0, sfd[i % 8]);
		if (!i) {
			close(sfd[0]);
			continue;
		}
		EXPECT_EQ(5, read(sfd[i % 8], buf, sizeof(buf)));
		EXPECT_EQ(0, read(sfd[i % 8], buf, sizeof(buf)));
		close(sfd[i % 8]);
	}
	close(hold);
	close(lfd);
	rdmashare_close(c);
}

/*
 * The same on the server's side: a listening file with room for one AC
 * file accepts eight, each written to, acknowledged and closed by the
 * server, and the next accepted at once, while every client keeps its end
 * open.
 */
TEST(closed_accepted_returns_buffer)
{
	struct sockaddr_in sin = addr_of(PORT + 1);
	struct rdmashare *c = open_area(16);
	int lfd, cfd[8], sfd, i;
	char buf[16];

	ASSERT_NE(NULL, c);
	lfd = rdmashare_listen_fd(PORT + 1, 8, 1, 0);
	ASSERT_LE(0, lfd);
	for (i = 0; i < 8; i++) {
		cfd[i] = rdmashare_connect_file(c, (struct sockaddr *)&sin, 20000, 65536, 0);
		ASSERT_LE(0, cfd[i]);
	}
	for (i = 0; i < 8; i++) {
		sfd = rdmashare_accept_fd(lfd, NULL, NULL, 0);
		ASSERT_LE(0, sfd) TH_LOG("accept %d: %s", i, strerror(-sfd));
		ASSERT_EQ(5, write(sfd, "hello", 5));
		ASSERT_EQ(0, acked(sfd));
		close(sfd);
	}
	for (i = 0; i < 8; i++) {
		EXPECT_EQ(5, read(cfd[i], buf, sizeof(buf)));
		EXPECT_EQ(0, read(cfd[i], buf, sizeof(buf)));
		close(cfd[i]);
	}
	close(lfd);
	rdmashare_close(c);
}

TEST_HARNESS_MAIN

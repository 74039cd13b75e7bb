// SPDX-License-Identifier: GPL-2.0
/*
 * rs-installed: the install stage's program, built in a guest against the
 * installed librdmashare through pkg-config (selftests/vm/install-guest.sh).
 * It uses only the public header: open and set up a handle, listen, connect
 * to its own address over Soft-RoCE, accept, and send a message each way.
 *
 *   rs-installed ADDRESS PORT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmashare.h>

static int fail(const char *what, long err)
{
	fprintf(stderr, "rs-installed: %s: %s\n", what, strerror((int)-err));
	return 1;
}

int main(int argc, char **argv)
{
	static const char ping[] = "installed librdmashare, ping";
	static const char pong[] = "installed librdmashare, pong";
	struct rdmashare_query q = { 0 };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdmashare *rs;
	char buf[64];
	int l, c, a, ret;
	ssize_t n;

	if (argc != 3 || inet_pton(AF_INET, argv[1], &sin.sin_addr) != 1) {
		fprintf(stderr, "usage: rs-installed IPV4-ADDRESS PORT\n");
		return 2;
	}
	sin.sin_port = htons((unsigned short)atoi(argv[2]));

	ret = rdmashare_open(&rs, 0);
	if (ret)
		return fail("open", ret);
	ret = rdmashare_query(rs, &q);
	if (ret)
		return fail("query", ret);
	ret = rdmashare_setup(rs, NULL);
	if (ret)
		return fail("setup", ret);
	l = rdmashare_listen(rs, ntohs(sin.sin_port), 4);
	if (l < 0)
		return fail("listen", l);
	c = rdmashare_connect(rs, (struct sockaddr *)&sin, 10000);
	if (c < 0)
		return fail("connect", c);
	a = rdmashare_accept(rs, l, 10000);
	if (a < 0)
		return fail("accept", a);

	ret = rdmashare_send(rs, c, ping, sizeof(ping));
	if (ret)
		return fail("send", ret);
	n = rdmashare_recv(rs, a, buf, sizeof(buf), 10000);
	if (n != sizeof(ping) || memcmp(buf, ping, sizeof(ping)))
		return fail("recv of the ping", n < 0 ? n : -EBADMSG);
	ret = rdmashare_send(rs, a, pong, sizeof(pong));
	if (ret)
		return fail("send", ret);
	n = rdmashare_recv(rs, c, buf, sizeof(buf), 10000);
	if (n != sizeof(pong) || memcmp(buf, pong, sizeof(pong)))
		return fail("recv of the pong", n < 0 ? n : -EBADMSG);

	ret = rdmashare_close_ac(rs, c);
	if (!ret)
		ret = rdmashare_close_ac(rs, a);
	if (!ret)
		ret = rdmashare_flush(rs, 10000);
	if (ret)
		return fail("close", ret);
	rdmashare_close(rs);
	printf("rs-installed: ABI version %u, a message each way over %s\n",
	       q.abi_version, argv[1]);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: the addresses a listener takes connections on.  A listener
 * names a family and an address, or any address of the family, as a
 * bound socket does; a peer's CONNECT goes to the listener of its port
 * whose addresses hold the one the peer reached (its QP's local address).
 * Two listeners of a port whose addresses overlap cannot both exist
 * (EADDRINUSE, as for listening TCP sockets), so at most one matches;
 * unless both share them (SO_REUSEPORT): the same addresses, one user,
 * and then all that match are one group.  No ib_core: KUnit tests it
 * (kmod/tests/laddr_kunit.c).
 */
#ifndef _RDMASHARE_LADDR_H
#define _RDMASHARE_LADDR_H

#include <linux/socket.h>
#include <linux/types.h>

struct rdmashare_addr;

/**
 * struct rs_laddr - what a listener takes
 * @v4: IPv4 connections (an AF_INET listener, or an AF_INET6 wildcard that
 *	is not IPv6-only)
 * @v6: IPv6 connections
 * @any: on every address of those families; otherwise on @addr alone,
 *	whose family is the one of @v4 and @v6 that is set
 * @share: others of the same user may take the same addresses
 *	(RDMASHARE_LISTEN_REUSEPORT)
 * @addr: the address: 4 bytes for IPv4, 16 for IPv6
 */
struct rs_laddr {
	bool v4;
	bool v6;
	bool any;
	bool share;
	u8 addr[16];
};

void rs_laddr_all(struct rs_laddr *la);
int rs_laddr_from_user(struct rs_laddr *la, const struct rdmashare_addr *a, u32 port,
		       bool v6only);
bool rs_laddr_overlap(const struct rs_laddr *a, const struct rs_laddr *b);
bool rs_laddr_conflict(const struct rs_laddr *a, const struct rs_laddr *b, bool same_user);
bool rs_laddr_match(const struct rs_laddr *la, const struct sockaddr_storage *local);

#endif

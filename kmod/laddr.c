// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: the addresses a listener takes connections on (see laddr.h).
 */
#include <kunit/visibility.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/module.h>
#include <linux/string.h>
#include <net/ipv6.h>
#include <uapi/linux/rdmashare.h>

#include "laddr.h"

/* No address given: every address of both families, as before addresses. */
void rs_laddr_all(struct rs_laddr *la)
{
	memset(la, 0, sizeof(*la));
	la->v4 = true;
	la->v6 = true;
	la->any = true;
}
EXPORT_SYMBOL_IF_KUNIT(rs_laddr_all);

/**
 * rs_laddr_from_user() - a listener's addresses from LISTEN's @a
 * @la: gets them
 * @a: family AF_INET or AF_INET6, the address (all zeros: any), and a
 *	port of 0 or @port
 * @port: the listener's port
 * @v6only: an AF_INET6 wildcard takes no IPv4 connections
 *
 * An IPv4-mapped IPv6 address is the IPv4 address, as for a socket.
 *
 * Return: 0, or -EINVAL (a multicast or broadcast address, bytes past an
 * IPv4 address, another port, @v6only for AF_INET), -EAFNOSUPPORT.
 */
int rs_laddr_from_user(struct rs_laddr *la, const struct rdmashare_addr *a, u32 port,
		       bool v6only)
{
	struct in6_addr in6;
	__be32 in4;

	memset(la, 0, sizeof(*la));
	if (a->port && a->port != port)
		return -EINVAL;
	switch (a->family) {
	case AF_INET:
		if (v6only || memchr_inv(a->addr + 4, 0, sizeof(a->addr) - 4))
			return -EINVAL;
		memcpy(&in4, a->addr, 4);
		break;
	case AF_INET6:
		memcpy(&in6, a->addr, 16);
		if (ipv6_addr_is_multicast(&in6))
			return -EINVAL;
		if (ipv6_addr_any(&in6)) {
			la->v4 = !v6only;
			la->v6 = true;
			la->any = true;
			return 0;
		}
		if (!ipv6_addr_v4mapped(&in6)) {
			la->v6 = true;
			memcpy(la->addr, &in6, 16);
			return 0;
		}
		if (v6only)
			return -EINVAL;		/* as bind(2) refuses it */
		in4 = in6.s6_addr32[3];
		break;
	default:
		return -EAFNOSUPPORT;
	}
	if (ipv4_is_multicast(in4) || ipv4_is_lbcast(in4))
		return -EINVAL;
	la->v4 = true;
	la->any = !in4;
	memcpy(la->addr, &in4, 4);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(rs_laddr_from_user);

/* Whether some connection could go to both @a and @b. */
bool rs_laddr_overlap(const struct rs_laddr *a, const struct rs_laddr *b)
{
	if (!(a->v4 && b->v4) && !(a->v6 && b->v6))
		return false;
	if (a->any || b->any)
		return true;
	/* One address each, of the family they share. */
	return !memcmp(a->addr, b->addr, a->v4 ? 4 : 16);
}
EXPORT_SYMBOL_IF_KUNIT(rs_laddr_overlap);

/*
 * Whether listeners on @a and @b cannot both exist: they overlap, and do
 * not share the same addresses as one user's SO_REUSEPORT sockets may.
 */
bool rs_laddr_conflict(const struct rs_laddr *a, const struct rs_laddr *b, bool same_user)
{
	if (!rs_laddr_overlap(a, b))
		return false;
	return !(a->share && b->share && same_user && a->v4 == b->v4 && a->v6 == b->v6 &&
		 a->any == b->any && !memcmp(a->addr, b->addr, sizeof(a->addr)));
}
EXPORT_SYMBOL_IF_KUNIT(rs_laddr_conflict);

/*
 * Whether a connection that reached @local goes to @la.  A QP whose address
 * is not known yet (family 0) reaches wildcards only.
 */
bool rs_laddr_match(const struct rs_laddr *la, const struct sockaddr_storage *local)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)local;
	const struct sockaddr_in *sin = (const struct sockaddr_in *)local;

	switch (local->ss_family) {
	case AF_INET:
		return la->v4 && (la->any || !memcmp(la->addr, &sin->sin_addr, 4));
	case AF_INET6:
		if (ipv6_addr_v4mapped(&sin6->sin6_addr))
			return la->v4 && (la->any ||
					  !memcmp(la->addr, &sin6->sin6_addr.s6_addr32[3], 4));
		return la->v6 && (la->any || !memcmp(la->addr, &sin6->sin6_addr, 16));
	}
	return la->any;
}
EXPORT_SYMBOL_IF_KUNIT(rs_laddr_match);

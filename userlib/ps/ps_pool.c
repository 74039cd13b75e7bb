// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Buffers of a transport's registered memory (rdmashare's data area, a
 * verbs memory region), so that what libps sends from them goes without a
 * copy.  Blocks are power-of-two multiples of a page, each class with a
 * free list, carved from the region's start as needed: a parameter
 * server's buffers come in few sizes (its keys' parts) and are made again
 * and again in the same ones.  A block counts references, its owner's and
 * one per send reading it, and is free at the last put, so that the owner
 * may let go while the transport still sends from it.
 *
 * And a ring for the bytes a transport copies to send them, whose sends
 * complete, and so are freed, in order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ps_int.h"

int ps_pool_init(struct ps_pool *p, void *base, size_t size)
{
	size_t pages = size / PS_POOL_PAGE;

	memset(p, 0, sizeof(*p));
	if (!pages)
		return 0;
	p->start = calloc(pages, sizeof(*p->start));
	p->refs = calloc(pages, sizeof(*p->refs));
	p->next = calloc(pages, sizeof(*p->next));
	p->cls = calloc(pages, sizeof(*p->cls));
	if (!p->start || !p->refs || !p->next || !p->cls) {
		ps_pool_fini(p);
		return -ENOMEM;
	}
	p->base = base;
	p->size = pages * PS_POOL_PAGE;
	return 0;
}

void ps_pool_fini(struct ps_pool *p)
{
	free(p->start);
	free(p->refs);
	free(p->next);
	free(p->cls);
	memset(p, 0, sizeof(*p));
}

/* A block of at least @len bytes, one reference held; NULL when none is left. */
void *ps_pool_alloc(struct ps_pool *p, size_t len)
{
	size_t pages, pg, i;
	unsigned int c = 0;

	if (!p->size || !len || len > p->size)
		return NULL;
	while (((size_t)PS_POOL_PAGE << c) < len)
		c++;
	pages = (size_t)1 << c;
	if (p->free[c]) {
		pg = p->free[c] - 1;
		p->free[c] = p->next[pg];
	} else {
		if (p->brk + pages * PS_POOL_PAGE > p->size)
			return NULL;
		pg = p->brk / PS_POOL_PAGE;
		p->brk += pages * PS_POOL_PAGE;
		for (i = 0; i < pages; i++)
			p->start[pg + i] = pg;
		p->cls[pg] = c;
	}
	p->refs[pg] = 1;
	return p->base + pg * PS_POOL_PAGE;
}

bool ps_pool_has(const struct ps_pool *p, const void *addr)
{
	const char *a = addr;

	return p->size && a >= p->base && a < p->base + p->brk;
}

/* Another reference to the block that holds @addr. */
void ps_pool_get(struct ps_pool *p, const void *addr)
{
	p->refs[p->start[((const char *)addr - p->base) / PS_POOL_PAGE]]++;
}

/* Drop a reference to the block that holds @addr; free it at the last. */
void ps_pool_put(struct ps_pool *p, const void *addr)
{
	uint32_t pg = p->start[((const char *)addr - p->base) / PS_POOL_PAGE];

	if (!p->refs[pg] || --p->refs[pg])
		return;
	p->next[pg] = p->free[p->cls[pg]];
	p->free[p->cls[pg]] = pg + 1;
}

/* A transport's buf_put(): put @addr if it is the pool's; false if not. */
bool ps_pool_put_own(struct ps_pool *p, const void *addr)
{
	if (!ps_pool_has(p, addr))
		return false;
	ps_pool_put(p, addr);
	return true;
}

/* @len bytes (a multiple of 64) at the offset returned, or -1 for no room. */
long long ps_ring_alloc(struct ps_ring *r, uint32_t len)
{
	uint32_t off;

	if (!r->live)
		r->head = r->tail = 0;
	if (r->live && r->tail <= r->head) {
		/* Wrapped: the room is between the two. */
		if (r->head - r->tail < len)
			return -1;
		off = r->tail;
	} else if (r->size - r->tail >= len) {
		off = r->tail;
	} else if (r->head >= len) {
		off = 0;	/* the end stays unused until the tail comes round */
	} else {
		return -1;
	}
	r->tail = off + len;
	r->live++;
	return off;
}

/*
 * Take back the newest allocation, made when the ring's tail was @tail,
 * whatever was freed since.
 */
void ps_ring_unalloc(struct ps_ring *r, uint32_t tail)
{
	r->tail = tail;
	r->live--;
}

/* Free the oldest allocation, @len bytes at @off. */
void ps_ring_free(struct ps_ring *r, uint32_t off, uint32_t len)
{
	r->head = off + len;
	r->live--;
}

// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Where keys live, and how a sync server sums an iteration's gradients.
 *
 * Keys [0, key_max) are cut into S equal ranges, one per server, as
 * ps-lite does; a key goes whole to the server of its range unless it has
 * more than big_bound elements: then it is cut into S near-equal parts,
 * part i on server i, so that a large tensor's traffic spreads over every
 * server (MXNet's big-array split).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ps_int.h"

/* Server @s's keys are [*lo, *hi). */
void ps_key_range(uint64_t key_max, uint32_t num_servers, uint32_t s, uint64_t *lo,
		  uint64_t *hi)
{
	*lo = (unsigned __int128)key_max * s / num_servers;
	*hi = (unsigned __int128)key_max * (s + 1) / num_servers;
}

/* The server whose range holds @key (< key_max). */
uint32_t ps_key_server(uint64_t key_max, uint32_t num_servers, uint64_t key)
{
	uint32_t s = (unsigned __int128)key * num_servers / key_max;
	uint64_t lo, hi;

	/* The estimate is off by at most one where a range's end rounds down. */
	for (;;) {
		ps_key_range(key_max, num_servers, s, &lo, &hi);
		if (key < lo)
			s--;
		else if (key >= hi)
			s++;
		else
			return s;
	}
}

/*
 * The parts of key @key with @total elements, in server order: their
 * number (1..S).  Parts are never empty.
 */
int ps_shard(uint64_t key_max, uint32_t num_servers, uint32_t big_bound, uint64_t key,
	     uint32_t total, struct ps_part *parts)
{
	uint32_t s, n = 0, off, end;

	if (total <= big_bound || num_servers == 1) {
		parts[0].server = ps_key_server(key_max, num_servers, key);
		parts[0].offset = 0;
		parts[0].len = total;
		return 1;
	}
	for (s = 0; s < num_servers; s++) {
		off = (uint64_t)total * s / num_servers;
		end = (uint64_t)total * (s + 1) / num_servers;
		if (end == off)
			continue;
		parts[n].server = s;
		parts[n].offset = off;
		parts[n].len = end - off;
		n++;
	}
	return n;
}

/* Whether server @server holds a part of the key, and which (*@part). */
bool ps_shard_find(uint64_t key_max, uint32_t num_servers, uint32_t big_bound, uint64_t key,
		   uint32_t total, uint32_t server, struct ps_part *part)
{
	uint64_t off, end;

	if (total <= big_bound || num_servers == 1) {
		if (ps_key_server(key_max, num_servers, key) != server)
			return false;
		part->server = server;
		part->offset = 0;
		part->len = total;
		return true;
	}
	off = (uint64_t)total * server / num_servers;
	end = (uint64_t)total * (server + 1) / num_servers;
	part->server = server;
	part->offset = off;
	part->len = end - off;
	return end > off;
}

int ps_agg_init(struct ps_agg *a, uint32_t num_workers, uint32_t len)
{
	a->num_workers = num_workers;
	a->len = len;
	a->count = 0;
	a->grads = malloc((size_t)num_workers * len * sizeof(float));
	a->have = calloc(num_workers, 1);
	if (!a->grads || !a->have) {
		ps_agg_free(a);
		return -ENOMEM;
	}
	return 0;
}

/* Where worker @rank's gradient goes, or NULL if it came already. */
float *ps_agg_slot(struct ps_agg *a, uint32_t rank)
{
	if (a->have[rank])
		return NULL;
	return a->grads + (size_t)rank * a->len;
}

/* Worker @rank's gradient is in its slot; whether every worker's is. */
bool ps_agg_mark(struct ps_agg *a, uint32_t rank)
{
	a->have[rank] = 1;
	return ++a->count == a->num_workers;
}

/*
 * w -= scale * (g_0 + g_1 + ... + g_{W-1}), summed in rank order whatever
 * order the gradients came in, so that the result is the same bits on
 * every run and every transport.  Then ready for the next iteration.
 */
void ps_agg_apply(struct ps_agg *a, float *w, float scale)
{
	float *sum = a->grads, *g;
	uint32_t r, i;

	for (r = 1; r < a->num_workers; r++) {
		g = a->grads + (size_t)r * a->len;
		for (i = 0; i < a->len; i++)
			sum[i] += g[i];
	}
	for (i = 0; i < a->len; i++)
		w[i] -= scale * sum[i];
	memset(a->have, 0, a->num_workers);
	a->count = 0;
}

void ps_agg_free(struct ps_agg *a)
{
	free(a->grads);
	free(a->have);
	a->grads = NULL;
	a->have = NULL;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: load-time limits and defaults.
 *
 * Read once at load (read-only in /sys/module/rdmashare/parameters) and
 * checked by rs_params_check(); a module loaded with an impossible value
 * fails to load with -EINVAL instead of misbehaving later.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sizes.h>

#include "rdmashare.h"
#include "proto.h"
#include "ring.h"

unsigned int rs_sq_entries_default = 256;
module_param_named(sq_entries, rs_sq_entries_default, uint, 0444);
MODULE_PARM_DESC(sq_entries, "SQ size of a file that asks for the default (256)");

unsigned int rs_sq_entries_max = 4096;
module_param_named(max_sq_entries, rs_sq_entries_max, uint, 0444);
MODULE_PARM_DESC(max_sq_entries, "Largest SQ a file may ask for (4096, at most 32768)");

unsigned long rs_data_size_default = SZ_4M;
module_param_named(data_size, rs_data_size_default, ulong, 0444);
MODULE_PARM_DESC(data_size, "Data area of a file that asks for the default, bytes (4 MiB)");

unsigned int rs_chunk_size = SZ_16K;
module_param_named(max_chunk_size, rs_chunk_size, uint, 0444);
MODULE_PARM_DESC(max_chunk_size, "Largest chunk of a message on the wire, and a receive slot, bytes (16 KiB)");

unsigned int rs_rx_slots_default = 64;
module_param_named(rx_slots, rs_rx_slots_default, uint, 0444);
MODULE_PARM_DESC(rx_slots, "Receive slots of a file that asks for the default (64)");

unsigned int rs_rx_slots_max = RS_RING_ENTRIES_MAX / 2;
module_param_named(max_rx_slots, rs_rx_slots_max, uint, 0444);
MODULE_PARM_DESC(max_rx_slots, "Most receive slots a file may ask for (32768)");

int rs_params_check(void)
{
	/* The CQ may be twice the SQ and must still be a valid ring. */
	if (!rs_ring_entries_valid(rs_sq_entries_max, RS_SQ_ENTRIES_MIN,
				   RS_RING_ENTRIES_MAX / 2)) {
		pr_err("max_sq_entries=%u: not a power of two in [%u, %u]\n",
		       rs_sq_entries_max, RS_SQ_ENTRIES_MIN, RS_RING_ENTRIES_MAX / 2);
		return -EINVAL;
	}
	if (rs_sq_entries_default < RS_SQ_ENTRIES_MIN ||
	    rs_sq_entries_default > rs_sq_entries_max) {
		pr_err("sq_entries=%u: not in [%u, max_sq_entries]\n",
		       rs_sq_entries_default, RS_SQ_ENTRIES_MIN);
		return -EINVAL;
	}
	/* The max_data_size tunable starts at the limit and stays above this. */
	if (!rs_data_size_default || rs_data_size_default > RS_DATA_SIZE_LIMIT ||
	    !PAGE_ALIGNED(rs_data_size_default)) {
		pr_err("data_size=%lu: not a multiple of the page size up to %lu\n",
		       rs_data_size_default, (unsigned long)RS_DATA_SIZE_LIMIT);
		return -EINVAL;
	}
	if (rs_chunk_size < 64 || rs_chunk_size > RS_PROTO_MAX_CHUNK) {
		pr_err("max_chunk_size=%u: not in [64, %lu]\n", rs_chunk_size, RS_PROTO_MAX_CHUNK);
		return -EINVAL;
	}
	if (!rs_rx_slots_max || rs_rx_slots_max > RS_RING_ENTRIES_MAX / 2 ||
	    !rs_rx_slots_default || rs_rx_slots_default > rs_rx_slots_max) {
		pr_err("rx_slots=%u, max_rx_slots=%u: not 1 <= rx_slots <= max_rx_slots <= %u\n",
		       rs_rx_slots_default, rs_rx_slots_max, RS_RING_ENTRIES_MAX / 2);
		return -EINVAL;
	}
	rs_tunables_init();
	return 0;
}

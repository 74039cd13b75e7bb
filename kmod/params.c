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

unsigned long rs_data_size_max = SZ_256M;
module_param_named(max_data_size, rs_data_size_max, ulong, 0444);
MODULE_PARM_DESC(max_data_size, "Largest data area a file may ask for, bytes (256 MiB, at most 256 MiB)");

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
	if (!rs_data_size_max || rs_data_size_max > RS_DATA_SIZE_LIMIT ||
	    !PAGE_ALIGNED(rs_data_size_max)) {
		pr_err("max_data_size=%lu: not a multiple of the page size up to %lu\n",
		       rs_data_size_max, (unsigned long)RS_DATA_SIZE_LIMIT);
		return -EINVAL;
	}
	if (!rs_data_size_default || rs_data_size_default > rs_data_size_max ||
	    !PAGE_ALIGNED(rs_data_size_default)) {
		pr_err("data_size=%lu: not a multiple of the page size up to max_data_size\n",
		       rs_data_size_default);
		return -EINVAL;
	}
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: how fast a QP drains what is in flight on it (drain.c).
 */
#ifndef _RDMASHARE_DRAIN_H
#define _RDMASHARE_DRAIN_H

#include <linux/time64.h>
#include <linux/types.h>

/* A sample of the drain rate spans at least this long. */
#define RS_DRAIN_SAMPLE_NS	NSEC_PER_MSEC

/**
 * struct rs_drain - a QP's drain rate, measured over busy periods
 * @start: when the running sample began, ns
 * @bytes: bytes completed since @start
 * @running: the link had at least the fill in flight since @start
 * @rate: bytes per millisecond (kB/s), smoothed; 0 until a sample ends
 */
struct rs_drain {
	u64 start;
	u64 bytes;
	bool running;
	u32 rate;
};

void rs_drain_complete(struct rs_drain *d, u64 now, u32 done, u32 left, u32 fill);

/*
 * Whether rs_drain_complete() reads @now for a completion that leaves
 * @left bytes in flight: while a sample runs or one starts.  Otherwise the
 * caller may pass 0 and spare the clock.
 */
static inline bool rs_drain_timed(const struct rs_drain *d, u32 left, u32 fill)
{
	return d->running || left >= fill;
}

u32 rs_drain_window(const struct rs_drain *d, u32 delay_us, u32 max);

#endif /* _RDMASHARE_DRAIN_H */

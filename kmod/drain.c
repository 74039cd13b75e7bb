// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: the drain rate of a QP, and the bytes in flight that it
 * drains in a given time.
 *
 * While small messages go on a QP, the sender keeps large chunks in flight
 * to what the QP drains in bulk_delay_us (sender.c), so that a small
 * message waits about that long behind them, whatever the link's speed:
 * a few KiB on rxe under emulation, more than inflight_max (no hold at
 * all) on a 100 Gb/s NIC.
 *
 * The rate is what completed over the time it took, counted only while at
 * least @fill bytes stayed in flight from one completion to the next: the
 * link had work all along, and more of it than one round trip's worth, so
 * the sample measures the link, not the window.  Periods held to a small
 * window (as while small messages go) take no sample, or the rate, and
 * with it the window, would spiral down.  Samples span at least
 * RS_DRAIN_SAMPLE_NS and are smoothed (a quarter new, three old).
 */
#include <linux/export.h>
#include <linux/limits.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/time64.h>

#include <kunit/visibility.h>

#include "drain.h"

/*
 * Called with the QP's send lock held, at each completion of a SEND: @done
 * bytes completed at @now (ns), @left remain in flight.
 */
void rs_drain_complete(struct rs_drain *d, u64 now, u32 done, u32 left, u32 fill)
{
	u64 rate, span;

	if (d->running) {
		d->bytes += done;
		span = now - d->start;
		if (span >= RS_DRAIN_SAMPLE_NS) {
			rate = min_t(u64, div64_u64(d->bytes * NSEC_PER_MSEC, span), U32_MAX);
			if (d->rate)
				rate = (3 * (u64)d->rate + rate) / 4;
			d->rate = max_t(u64, rate, 1);
			d->start = now;
			d->bytes = 0;
		}
	}
	if (left < fill) {
		d->running = false;
	} else if (!d->running) {
		d->running = true;
		d->start = now;
		d->bytes = 0;
	}
}
EXPORT_SYMBOL_IF_KUNIT(rs_drain_complete);

/*
 * The bytes @d drains in @delay_us, from 1 to @max: @max while the rate
 * is not known yet or @delay_us is 0.
 */
u32 rs_drain_window(const struct rs_drain *d, u32 delay_us, u32 max)
{
	u64 w;

	if (!delay_us || !d->rate)
		return max;
	w = div_u64((u64)d->rate * delay_us, USEC_PER_MSEC);
	return clamp_t(u64, w, 1, max);
}
EXPORT_SYMBOL_IF_KUNIT(rs_drain_window);

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the transport benchmark's results into a reStructuredText table.

usage: transport-table.py TRANSPORT.TSV [ENV.TXT...]

TRANSPORT.TSV has one number per line: round, tool, size, metric, value
(transport-guest.sh).  Each number in the table is the median over the
rounds; every ratio is to perftest (ib_send_bw, ib_send_lat) at the same
size, measured in the same run; the last lists put rdmashare against the
kernel-QP floor (rs_kqp_floor.ko: two kernel RC QPs, nothing else on the
path), RDS and rsocket.  The ENV files are copied in as a comment.
"""
import collections
import statistics
import sys

sys.dont_write_bytecode = True
from benchtable import fmt, ratio, size_name  # noqa: E402

TOOLS = [
    ("perftest", "perftest (verbs)"),
    ("kqp-sleep", "kernel QP floor (sleep)"),
    ("kqp-poll", "kernel QP floor (poll)"),
    ("rdmashare-1ac", "rdmashare, 1 AC"),
    ("rdmashare-8ac", "rdmashare, 8 ACs"),
    ("rdmashare-1024ac", "rdmashare, 1024 ACs"),
    ("rdmashare-1ac-copy", "rdmashare, 1 AC, copied"),
    ("rdmashare-1ac-bp", "rdmashare, 1 AC, busy poll"),
    ("rds", "RDS (rds_rdma)"),
    ("rsocket", "rsocket (rstream)"),
    ("tcp", "TCP (qperf)"),
]
TARGETS = [  # issue #10: (what, size, metric, tool, bound, "min" or "max")
    ("message rate at 64 B", 64, "rate_msgps", "rdmashare-1ac", 1.0, "min"),
    ("message rate at 64 B", 64, "rate_msgps", "rdmashare-8ac", 2.5, "min"),
    ("ping-pong p50 at 64 B", 64, "lat_p50_us", "rdmashare-1ac", 2.0, "max"),
    ("ping-pong p50 at 64 B", 64, "lat_p50_us", "rdmashare-1ac-bp", 1.3, "max"),
    ("bandwidth at 64 KiB", 65536, "bw_MBps", "rdmashare-1ac", 1.3, "min"),
]
# issue #35: (what, size, metric, tool, floor, bound, "min" or "max"); the
# floor "kqp" is the better of its two waits.
FLOOR_TARGETS = [
    ("ping-pong p50 at 64 B", 64, "lat_p50_us", "rdmashare-1ac", "kqp-sleep", 1.3, "max"),
    ("ping-pong p50 at 64 B", 64, "lat_p50_us", "rdmashare-1ac-bp", "kqp-poll", 1.2, "max"),
    ("bandwidth at 64 KiB", 65536, "bw_MBps", "rdmashare-1ac", "kqp", 0.9, "min"),
]


def main():
    vals = collections.defaultdict(list)
    rounds = set()
    with open(sys.argv[1]) as f:
        next(f)
        for line in f:
            r, tool, size, metric, value = line.rstrip("\n").split("\t")
            rounds.add(r)
            vals[(tool, int(size), metric)].append(float(value))

    def med(tool, size, metric):
        v = vals.get((tool, size, metric))
        return statistics.median(v) if v else None

    def floor(size, metric):
        """The floor's better wait for @metric (latency: lower)."""
        v = [x for x in (med("kqp-sleep", size, metric), med("kqp-poll", size, metric))
             if x is not None]
        if not v:
            return None
        return min(v) if metric.startswith("lat") else max(v)

    def spread(tool, size, metric):
        v = vals.get((tool, size, metric))
        if not v or len(v) < 2 or not statistics.median(v):
            return None
        return (max(v) - min(v)) / statistics.median(v)

    def pkts_per_msg(tool, size):
        """rxe's packets per message of the bandwidth run, both directions."""
        p, n = med(tool, size, "bw_rxe_pkts"), med(tool, size, "bw_msgs")
        return None if p is None or not n else p / n

    sizes = sorted({k[1] for k in vals})
    cols = ["size", "tool", "MB/s", "x", "msg/s", "x", "p50 us", "x",
            "mean us", "x", "pkts/msg"]
    rows = []
    for size in sizes:
        base = {m: med("perftest", size, m)
                for m in ("bw_MBps", "rate_msgps", "lat_p50_us", "lat_mean_us")}
        for tool, label in TOOLS:
            if not any(k[0] == tool and k[1] == size for k in vals):
                continue
            bad = sum(vals.get((tool, size, "errors"), []))
            row = [size_name(size), label + (" (!)" if bad else "")]
            for m in ("bw_MBps", "rate_msgps", "lat_p50_us", "lat_mean_us"):
                v = med(tool, size, m)
                row += [fmt(v), fmt(ratio(v, base[m]))]
            row.append(fmt(pkts_per_msg(tool, size)))
            rows.append(row)

    width = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    rule = "  ".join("=" * w for w in width)
    just = lambda r: "  ".join(
        (c.ljust(w) if i < 2 else c.rjust(w)) for i, (c, w) in enumerate(zip(r, width))).rstrip()
    print(".. Transport benchmark, medians of %d round(s)." % len(rounds))
    for e in sys.argv[2:]:
        with open(e) as f:
            for line in f:
                print("   " + line.rstrip())
    print()
    print(rule)
    print(just(cols))
    print(rule)
    prev = None
    for r in rows:
        if prev is not None and r[0] != prev:
            print()
        prev = r[0]
        print(just(r))
    print(rule)
    print()
    print("x: ratio to perftest at the same size (MB/s, msg/s: higher is better;")
    print("latency: lower is better).  Latency is one way, half the round trip.")
    print("pkts/msg: packets rxe0 sent during the bandwidth run (data, ACKs, both")
    print("directions, setup included) per message; 0 would mean not over rxe.")
    errs = sorted({(k[0], k[1]) for k, v in vals.items() if k[2] == "errors"})
    if errs:
        print("(!): rs-stream's server reported ERRORS (a message out of order or a")
        print("failed receive) in %s." % ", ".join(
            "%s at %s (%d of %d rounds)" % (t, size_name(s), len(vals[(t, s, "errors")]),
                                           len(rounds)) for t, s in errs))
    print()
    print("Targets:")
    print()
    for what, size, metric, tool, bound, kind in TARGETS:
        r = ratio(med(tool, size, metric), med("perftest", size, metric))
        sp = spread(tool, size, metric)
        met = r is not None and (r >= bound if kind == "min" else r <= bound)
        print("* %s, %s: %s x perftest (target %s %.1f): %s%s" % (
            what, dict(TOOLS)[tool], fmt(r), ">=" if kind == "min" else "<=", bound,
            "n/a" if r is None else "met" if met else "missed",
            "" if sp is None else "; spread over rounds %.0f%%" % (sp * 100)))
    many, eight = med("rdmashare-1024ac", 64, "rate_msgps"), med("rdmashare-8ac", 64, "rate_msgps")
    if many is not None:
        ppm = pkts_per_msg("rdmashare-1024ac", 64)
        print("* 1024 ACs at 64 B: %s x the 8-AC rate (target >= 0.95): %s; "
              "%s rxe packets per message (target <= 0.5): %s" % (
                  fmt(ratio(many, eight)), "met" if eight and many / eight >= 0.95 else "missed",
                  fmt(ppm), "met" if ppm is not None and ppm <= 0.5 else "missed"))
    cp, zc = med("rdmashare-1ac-copy", 65536, "bw_MBps"), med("rdmashare-1ac", 65536, "bw_MBps")
    if cp and zc is not None:
        print("* 64 KiB, 1 AC: zero copy %s x the same AC with every chunk copied" % fmt(zc / cp))
    if any(k[0].startswith("kqp-") for k in vals):
        print()
        print("rdmashare against the kernel-QP floor (two kernel RC QPs on the same")
        print("device, nothing else on the path; the floor's threads sleep until a CQ")
        print("event, or poll):")
        print()
        for what, size, metric, tool, base, bound, kind in FLOOR_TARGETS:
            b = floor(size, metric) if base == "kqp" else med(base, size, metric)
            r = ratio(med(tool, size, metric), b)
            met = r is not None and (r >= bound if kind == "min" else r <= bound)
            print("* %s, %s: %s x the floor %s (target %s %.1f): %s" % (
                what, dict(TOOLS)[tool], fmt(r),
                "(the better wait)" if base == "kqp" else dict(TOOLS)[base].split()[-1],
                ">=" if kind == "min" else "<=", bound,
                "n/a" if r is None else "met" if met else "missed"))
        for size in sizes:
            res = []
            for tool, base, how in (("rdmashare-1ac", "kqp-sleep", "1 AC %s x the floor sleeping"),
                                    ("rdmashare-1ac-bp", "kqp-poll",
                                     "busy poll %s x the floor polling")):
                r = ratio(med(tool, size, "lat_p50_us"), med(base, size, "lat_p50_us"))
                if r is not None:
                    res.append(how % fmt(r))
            res = ["p50: " + ", ".join(res)] if res else []
            r = ratio(med("rdmashare-1ac", size, "bw_MBps"), floor(size, "bw_MBps"))
            if r is not None:
                res.append("bandwidth: 1 AC %s x the floor's better stream" % fmt(r))
            print("* %s: %s" % (size_name(size), "; ".join(res) if res else "n/a"))
    print()
    print("rdmashare against RDS and rsocket (rdmashare: the better of 1 and 8 ACs")
    print("for bandwidth; latency by the mean, the only figure all tools give):")
    print()
    for size in sizes:
        rs_bw = max([v for v in (med("rdmashare-1ac", size, "bw_MBps"),
                                 med("rdmashare-8ac", size, "bw_MBps")) if v is not None],
                    default=None)
        rs_lat = med("rdmashare-1ac", size, "lat_mean_us")
        for other in ("rds", "rsocket"):
            o_bw = med(other, size, "bw_MBps")
            o_lat = med(other, size, "lat_mean_us")
            res = []
            if rs_bw is not None and o_bw:
                res.append("bandwidth %s x (%s)" % (
                    fmt(rs_bw / o_bw), "beats" if rs_bw > o_bw else "does not beat"))
            if rs_lat and o_lat:
                res.append("latency %s x (%s)" % (
                    fmt(rs_lat / o_lat), "beats" if rs_lat < o_lat else "does not beat"))
            print("* %s, vs %s: %s" % (size_name(size), dict(TOOLS)[other],
                                       "; ".join(res) if res else "n/a"))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the sockets benchmark's results into reStructuredText tables.

usage: sockets-table.py [--plot OUT.svg] SOCKETS.TSV [ENV.TXT...]

SOCKETS.TSV has one number per line: round, tool, size, metric, value
(sockets-guest.sh); a "fail" line has what the program said as its value.
Each number is the median over the rounds that measured it; every ratio is
to plain TCP measured in the same run: the same program over TCP, and for
rstream and rs-stream (which have no TCP mode) iperf3 over TCP at the same
write size.  The ENV files are copied in as a comment.  --plot draws the
stream throughput by write size and the copy/zero-copy crossover.
"""
import collections
import statistics
import sys

sys.dont_write_bytecode = True
from benchtable import Notes, Rounds, fmt, ratio, size_name, table  # noqa: E402

TRANSPORTS = [("tcp", "TCP"), ("rdmashare", "rdmashare-run"),
              ("rspreload", "librspreload")]
BW_TOOLS = ([("iperf3-" + t, "iperf3, " + l, "iperf3-tcp", "bw") for t, l in TRANSPORTS] +
            [("sockperf-" + t, "sockperf tp, " + l, "sockperf-tcp", "tp")
             for t, l in TRANSPORTS] +
            [("rstream", "rstream (rsocket)", "iperf3-tcp", "bw"),
             ("rs-stream-files", "rs-stream -F, 1 AC file", "iperf3-tcp", "bw"),
             ("rs-stream-iperf", "... iperf3's calls (-I)", "iperf3-tcp", "bw"),
             ("rs-stream-preload", "rs-stream -T, rdmashare-run", "iperf3-tcp", "bw"),
             ("rs-stream-preload-iperf", "... iperf3's calls (-T -I)", "iperf3-tcp", "bw")])
LAT_TOOLS = ([("sockperf-" + t, "sockperf pp, " + l, "sockperf-tcp") for t, l in TRANSPORTS] +
             [("rstream", "rstream (rsocket)", "sockperf-tcp")])
REDIS_TOOLS = [("redis-tcp", "TCP"), ("redis-rdmashare", "rdmashare-run")]
# What a failure's text starts with (sockets-guest.sh's fail lines), by table.
BW_KINDS = ("iperf3", "sockperf tp", "rstream bw", "rs-stream")
LAT_KINDS = ("sockperf pp", "rstream lat")
PRELOAD_TARGETS = [(65536, 0.9), (64, 0.75)]  # issue #33: within 10% and 25%
ZCOPY_TARGET = (1048576, 1.3)  # issue #33: zero copy at 1 MiB >= 1.3x the copy


def fmt_big(v):
    """fmt() with thousands and millions as k and M."""
    if v is not None and v >= 1e6:
        return "%.1fM" % (v / 1e6)
    if v is not None and v >= 1e4:
        return "%.0fk" % (v / 1e3)
    return fmt(v)


def fmt_n(v):
    """A count: an integer below 10^4."""
    return "-" if v is None else "%d" % v if v < 1e4 else fmt_big(v)


class Results(Rounds):
    def __init__(self, path):
        # round 0 is SMC-R's try, before the rounds
        super().__init__(path, key=lambda f: (f[0], int(f[1])), skip=("0",))

    def paired(self, tool, base, size, metric):
        """@tool's value over @base's, the median of the rounds' ratios."""
        return self.ratio((tool, size, metric), (base, size, metric))

    def spread(self, tool, size, metric):
        v = self.vals.get((tool, size, metric))
        if not v or len(v) < 2 or not statistics.median(v):
            return None
        return (max(v) - min(v)) / statistics.median(v)

    def has(self, tool, size):
        return (tool, size) in self.fails or any(
            k[0] == tool and k[1] == size for k in self.vals)


# A footnote's number for a failure's text (the same text, one number).
note = Notes()


def fail_cell(res, tool, size, kinds=None):
    """The footnote of the failures of @tool at @size, those of @kinds
    (what their text starts with) alone if given."""
    f = [t for t in res.fails.get((tool, size), [])
         if kinds is None or t.startswith(kinds)]
    if not f:
        return ""
    common = collections.Counter(f).most_common(1)[0][0]
    n = "%s, %d of %d rounds" % (common, len(f), max(len(res.rounds), 1))
    return note(n)


# The plot's streams: tool, label, style.
PLOT_STREAMS = [("iperf3-tcp", "iperf3, TCP", "o-", "tab:gray"),
                ("iperf3-rdmashare", "iperf3, rdmashare-run", "^-", "tab:green"),
                ("rs-stream-files", "rs-stream -F, AC file", "v--", "tab:olive"),
                ("rstream", "rstream (rsocket)", "s--", "tab:blue"),
                ("iperf3-rspreload", "iperf3, librspreload", "x:", "tab:red")]


def plot(res, path):
    """Stream throughput by write size, and the copy/zero-copy crossover."""
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"
    matplotlib.rcParams["svg.hashsalt"] = "rdmashare-sockets-bench"
    import matplotlib.pyplot as plt

    fig, (ax, az) = plt.subplots(1, 2, figsize=(11, 4.2))
    fig.subplots_adjust(wspace=0.3)
    for tool, label, st, color in PLOT_STREAMS:
        pts = sorted((k[1], res.med(tool, k[1], "bw_MBps")) for k in res.vals
                     if k[0] == tool and k[2] == "bw_MBps")
        pts = [(x, y) for x, y in pts if y]
        if pts:
            ax.plot([x for x, _ in pts], [y for _, y in pts], st, color=color, label=label)
    zs = sorted({k[1] for k in res.vals if k[0] == "rs-stream-zcopy"})
    for tool, label, st, color in (("rs-stream-copy", "copied (zcopy_min 0)", "o-", "tab:gray"),
                                   ("rs-stream-zcopy", "from the writer's pages", "^-",
                                    "tab:green")):
        pts = [(z, res.med(tool, z, "bw_MBps")) for z in zs]
        pts = [(x, y) for x, y in pts if y]
        if pts:
            az.plot([x for x, _ in pts], [y for _, y in pts], st, color=color, label=label)
    for a, title in ((ax, "one stream, by write size"),
                     (az, "AC file writes: copied or zero copy")):
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xlabel("write size, bytes")
        a.set_ylabel("MB/s (log)")
        a.set_title(title)
        a.grid(True, which="both", alpha=0.3)
        if a.lines:
            a.legend(fontsize="small")
    fig.suptitle("rdmashare sockets benchmark (Soft-RoCE loopback, QEMU TCG guest; "
                 "medians of %d round(s))" % len(res.rounds), y=1.02)
    if path.endswith(".png"):
        fig.savefig(path, format="png", dpi=90, bbox_inches="tight",
                    metadata={"Software": None})
    else:
        fig.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None})


def main():
    args = sys.argv[1:]
    plot_path = None
    if args[:1] == ["--plot"]:
        if len(args) < 3:
            sys.exit(__doc__.strip().splitlines()[2])
        plot_path, args = args[1], args[2:]
    if not args:
        sys.exit(__doc__.strip().splitlines()[2])
    sys.argv[1:] = args
    res = Results(sys.argv[1])
    med = res.med
    sizes = sorted({k[1] for k in res.vals if not k[0].startswith(("redis", "smc"))} |
                   {k[1] for k in res.fails if not k[0].startswith(("redis", "smc"))})

    print(".. Sockets benchmark, medians of %d round(s)." % len(res.rounds))
    for e in sys.argv[2:]:
        with open(e) as f:
            for line in f:
                print("   " + line.rstrip())
    print()

    # Throughput.
    rows = []
    for size in sizes:
        for tool, label, base, kind in BW_TOOLS:
            if not res.has(tool, size):
                continue
            pre = "tp_" if kind == "tp" else ""
            bw = med(tool, size, pre + ("MBps" if pre else "bw_MBps"))
            rate = med(tool, size, pre + "rate_msgps")
            bbw = med(base, size, "tp_MBps" if base.startswith("sockperf") else "bw_MBps")
            rows.append([size_name(size), label, fmt(bw), fmt(ratio(bw, bbw)), fmt_big(rate),
                         fmt_n(med(tool, size, kind + "_rxe_pkts")),
                         fmt_n(med(tool, size, kind + "_tcp_segs")),
                         fail_cell(res, tool, size, BW_KINDS)])
    print("Throughput:")
    print()
    print(table(["size", "tool", "MB/s", "x TCP", "msg/s", "rxe pkts", "TCP segs", "notes"],
                rows, left=2))
    print()

    # Latency.
    rows = []
    for size in sizes:
        for tool, label, base in LAT_TOOLS:
            if not any(k[0] == tool and k[1] == size and k[2].startswith("lat")
                       for k in res.vals) and not fail_cell(res, tool, size, LAT_KINDS):
                continue
            p50, mean = med(tool, size, "lat_p50_us"), med(tool, size, "lat_mean_us")
            rows.append([size_name(size), label, fmt(p50),
                         fmt(ratio(p50, med(base, size, "lat_p50_us"))), fmt(mean),
                         fmt(ratio(mean, med(base, size, "lat_mean_us"))),
                         fail_cell(res, tool, size, LAT_KINDS)])
    print("Latency (one way, half the round trip):")
    print()
    print(table(["size", "tool", "p50 us", "x TCP", "mean us", "x TCP", "notes"], rows, left=2))
    print()

    # redis.
    rows = []
    for pipe in (1, 16):
        for tool, label in REDIS_TOOLS:
            if not res.has(tool, pipe):
                continue
            s, g = med(tool, pipe, "set_rps"), med(tool, pipe, "get_rps")
            rows.append(["-P 16" if pipe == 16 else "plain", label, fmt_big(s),
                         fmt(ratio(s, med("redis-tcp", pipe, "set_rps"))), fmt_big(g),
                         fmt(ratio(g, med("redis-tcp", pipe, "get_rps"))),
                         fmt_n(med(tool, pipe, "redis_rxe_pkts")),
                         fmt_n(med(tool, pipe, "redis_tcp_segs")), fail_cell(res, tool, pipe)])
    if rows:
        print("redis-benchmark -t set,get (requests/s):")
        print()
        print(table(["requests", "transport", "SET/s", "x TCP", "GET/s", "x TCP",
                     "rxe pkts", "TCP segs", "notes"], rows, left=2))
        print()

    # The copy/zero-copy crossover.
    zsizes = sorted({k[1] for k in res.vals if k[0] == "rs-stream-zcopy"} |
                    {k[1] for k in res.fails if k[0] == "rs-stream-zcopy"})
    rows = []
    for size in zsizes:
        c, z = med("rs-stream-copy", size, "bw_MBps"), med("rs-stream-zcopy", size, "bw_MBps")
        rows.append([size_name(size), fmt(c), fmt(z),
                     fmt(res.paired("rs-stream-zcopy", "rs-stream-copy", size, "bw_MBps")),
                     fail_cell(res, "rs-stream-copy", size) + fail_cell(res, "rs-stream-zcopy", size)])
    if rows:
        print("AC file writes copied (zcopy_min 0) and from the writer's pages")
        print("(zcopy_min at the write size), rs-stream -F, one AC file; x copied is")
        print("the median of each round's ratio (the two run one after the other):")
        print()
        print(table(["write", "copied MB/s", "zero copy MB/s", "x copied", "notes"], rows, left=1))
        print()

    print("x TCP: ratio to the same program over plain TCP to the same address in")
    print("the same run (rstream and rs-stream: to iperf3 over TCP at the same")
    print("write size); MB/s, msg/s, requests/s: higher is better, latency: lower.")
    print("rxe pkts: packets rxe0 sent during the measurement (0: not over RDMA);")
    print("TCP segs: TCP segments sent meanwhile (both ends, control included).")
    print("sockperf's 1 MiB is 1048575 B, its largest message.")
    if note.texts:
        print()
        for line in note.lines():
            print(line)
    print()

    # SMC-R, tried once.
    for (tool, size), f in sorted(res.fails.items()):
        if tool == "smc-r":
            print("SMC-R (AF_SMC, %s, tried once): %s; %s rxe0 packets, %s TCP segments." % (
                size_name(size), f[0], fmt_n(med(tool, size, "bw_rxe_pkts")),
                fmt_n(med(tool, size, "bw_tcp_segs"))))
            print()
            break
    else:
        if any(k[0] == "smc-r" for k in res.vals):
            size = next(k[1] for k in res.vals if k[0] == "smc-r")
            print("SMC-R (AF_SMC, %s, tried once): %s MB/s, %s rxe0 packets." % (
                size_name(size), fmt(med("smc-r", size, "bw_MBps")),
                fmt_n(med("smc-r", size, "bw_rxe_pkts"))))
            print()

    print("Targets:")
    print()
    for size in sizes:
        rs = med("iperf3-rdmashare", size, "bw_MBps")
        res_ = []
        for other, label in (("rstream", "rstream"), ("iperf3-rspreload", "iperf3 under librspreload")):
            o = med(other, size, "bw_MBps")
            if rs is None:
                res_.append("vs %s: n/a" % label)
            elif o:
                res_.append("vs %s %s x (%s)" % (label, fmt(rs / o),
                                                  "ahead" if rs > o else "behind"))
            elif res.fails.get((other, size)):
                res_.append("vs %s: it moved nothing" % label)
        print("* throughput at %s, iperf3 under rdmashare-run: %s" % (
            size_name(size), "; ".join(res_) if res_ else "n/a"))
        ts, to = med("sockperf-rdmashare", size, "tp_MBps"), med("sockperf-rspreload", size, "tp_MBps")
        if ts is not None:
            print("  (sockperf tp under rdmashare-run vs librspreload: %s)" % (
                "%s x" % fmt(ts / to) if to else "librspreload moved nothing"))
    size, bound = ZCOPY_TARGET
    r = res.paired("rs-stream-zcopy", "rs-stream-copy", size, "bw_MBps")
    if r is not None:
        print("* zero copy at %s: %s x the copy (target >= %.1f): %s" % (
            size_name(size), fmt(r), bound, "met" if r >= bound else "missed"))
    # The preload against AC files without it: iperf3 (its own calls and
    # code besides), and rs-stream itself on sockets (-T), whose calls are
    # those of -F: what sets those apart is the preload alone.
    pairs = (("iperf3-rdmashare", "iperf3 under rdmashare-run", "rs-stream-files",
              "rs-stream -F"),
             ("iperf3-rdmashare", "iperf3 under rdmashare-run", "rs-stream-iperf",
              "rs-stream -F -I (iperf3's calls)"),
             ("rs-stream-preload", "rs-stream -T under rdmashare-run", "rs-stream-files",
              "rs-stream -F"),
             ("rs-stream-preload-iperf", "rs-stream -T -I under rdmashare-run",
              "rs-stream-iperf", "rs-stream -F -I"))
    for size, bound in PRELOAD_TARGETS:
        for tool, who, base, what in pairs:
            r = ratio(med(tool, size, "bw_MBps"), med(base, size, "bw_MBps"))
            if r is None and base != "rs-stream-files":
                continue
            sp = [s for s in (res.spread(tool, size, "bw_MBps"),
                              res.spread(base, size, "bw_MBps")) if s is not None]
            print("* the preload's cost at %s: %s %s x %s "
                  "(target >= %.2f): %s%s" % (
                      size_name(size), who, fmt(r), what, bound,
                      "n/a" if r is None else "met" if r >= bound else "missed",
                      "; spread over rounds %s" % "/".join("%.0f%%" % (s * 100) for s in sp)
                      if sp else ""))
    if plot_path:
        try:
            plot(res, plot_path)
        except Exception as e:  # the tables stand without it
            print("sockets-table.py: no plot: %s" % e, file=sys.stderr)


if __name__ == "__main__":
    main()

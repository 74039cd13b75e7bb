#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the scheduler benchmark's results into reStructuredText and a plot.

usage: sched-table.py [--plot OUT.svg|OUT.png] SCHED.TSV [ENV.TXT...]

SCHED.TSV has one number per line: round, kind (tput or lat), mode, config,
threads, size, metric, value (sched-guest.sh).  Every number is the median
over the rounds; every ratio is between modes measured in the same run.
The ENV files are copied in as a comment.  The plot (matplotlib, SVG) shows
aggregate throughput and Jain's index against the number of senders, and the
ping-pong's p50/p99 alone and behind bulk transfers.
"""
import collections
import statistics
import sys

sys.dont_write_bytecode = True
from benchtable import fmt, ratio, size_name, table  # noqa: E402

MODES = [
    ("mutex", "mutex QP"),
    ("qp", "QP per sender"),
    ("rdmashare", "rdmashare"),
]
LAT_CONFIGS = [  # (mode, config, label)
    ("mutex", "verbs", "mutex QP (verbs)"),
    ("qp", "verbs", "QP per sender (verbs)"),
    ("rdmashare", "split1-cr4", "rdmashare, split on, credits 4"),
    ("rdmashare", "split1-cr64", "rdmashare, split on, credits 64"),
    ("rdmashare", "split0-cr4", "rdmashare, split off, credits 4"),
]
TARGET = 3.0  # p99 behind bulk <= 3 x idle p99, split on
SHARE_N = 4   # the number of senders whose shares are listed one by one


class Results:
    def __init__(self, path):
        self.vals = collections.defaultdict(list)
        self.rounds = set()
        self.kind_rounds = collections.defaultdict(set)
        with open(path) as f:
            next(f)
            for line in f:
                f8 = line.rstrip("\n").split("\t")
                if len(f8) != 8 or f8[7] == "":
                    continue
                r, kind, mode, cfg, t, size, metric, value = f8
                self.rounds.add(r)
                self.kind_rounds[kind].add(r)
                self.vals[(kind, mode, cfg, int(t), int(size), metric)].append(float(value))

    def med(self, kind, mode, cfg, t, size, metric):
        v = self.vals.get((kind, mode, cfg, t, size, metric))
        return statistics.median(v) if v else None

    def keys(self, kind):
        return {k[:5] for k in self.vals if k[0] == kind}

    def tput_cfg(self):
        cfgs = {k[2] for k in self.keys("tput")}
        return sorted(cfgs)[0] if cfgs else None

    def shares(self, mode, t, size):
        """Per-sender fractions of the window's bytes (medians per sender)."""
        cfg = self.tput_cfg()
        b = [self.med("tput", mode, cfg, t, size, "bytes%d" % i) for i in range(t)]
        if any(x is None for x in b) or not sum(b):
            return None
        return [x / sum(b) for x in b]


def tput_section(res):
    cfg = res.tput_cfg()
    keys = res.keys("tput")
    sizes = sorted({k[4] for k in keys})
    threads = sorted({k[3] for k in keys})
    cols = ["size", "N"]
    for _, label in MODES:
        cols += [label + " MB/s", "J", "min"]
    cols += ["rs/mutex", "rs/qp"]
    rows = []
    for size in sizes:
        for t in threads:
            if not any(k[3] == t and k[4] == size for k in keys):
                continue
            row = [size_name(size), str(t)]
            mb = {}
            for mode, _ in MODES:
                mb[mode] = res.med("tput", mode, cfg, t, size, "MBps")
                valid = res.med("tput", mode, cfg, t, size, "window_valid")
                bad = res.med("tput", mode, cfg, t, size, "errors")
                sh = res.shares(mode, t, size)
                mark = "" if valid in (None, 1) else "*"
                mark += "!" if bad else ""
                row += [fmt(mb[mode]) + mark,
                        fmt(res.med("tput", mode, cfg, t, size, "jain"), 3),
                        fmt(min(sh) * t, 2) if sh else "-"]
            row += [fmt(ratio(mb["rdmashare"], mb["mutex"])),
                    fmt(ratio(mb["rdmashare"], mb["qp"]))]
            rows.append(row)
    print(table(cols, rows, left=1))
    print()
    print("MB/s: aggregate, 10^6 bytes/s of whole messages (header included) over")
    print("the window in which all N senders are backlogged.  J: Jain's index of")
    print("the senders' bytes in that window (1 = equal).  min: the smallest")
    print("sender's share as a fraction of the fair share 1/N.  rs/mutex,")
    print("rs/qp: rdmashare's MB/s over the baseline's, same N and size.")
    if any(res.med("tput", m, cfg, k[3], k[4], "window_valid") == 0
           for m, _ in MODES for k in keys):
        print("*: no valid window (a sender finished before all had started);")
        print("the numbers cover what was counted.")
    if any(res.med("tput", m, cfg, k[3], k[4], "errors") for m, _ in MODES for k in keys):
        print("!: rsbench's server counted errors (bad messages, sequence gaps).")
    print()

    # Per-sender shares at one N.
    n = SHARE_N if SHARE_N in threads else (threads[-1] if threads else None)
    if n is None or n == 1:
        return
    cols = ["size", "mode"] + ["s%d" % i for i in range(n)]
    rows = []
    for size in sizes:
        for mode, label in MODES:
            sh = res.shares(mode, n, size)
            if sh is None:
                continue
            rows.append([size_name(size), label] + ["%.1f%%" % (x * 100) for x in sh])
    if rows:
        print("Per-sender shares of the window's bytes with N = %d (fair: %.1f%%):" %
              (n, 100.0 / n))
        print()
        print(table(cols, rows, left=2))
        print()


def lat_section(res):
    keys = res.keys("lat")
    bulk = sorted({k[3] for k in keys if k[3]})
    b = bulk[0] if bulk else None
    cols = ["setup", "idle p50", "idle p99", "bulk p50", "bulk p99", "p99 x",
            "vs qp", "pings", "bulk MB/s"]
    rows = []
    verdicts = []
    qp99 = res.med("lat", "qp", "verbs", b, 64, "p99_us") if b else None
    for mode, cfg, label in LAT_CONFIGS:
        if not any(k[1] == mode and k[2] == cfg for k in keys):
            continue
        i50 = res.med("lat", mode, cfg, 0, 64, "p50_us")
        i99 = res.med("lat", mode, cfg, 0, 64, "p99_us")
        b50 = res.med("lat", mode, cfg, b, 64, "p50_us") if b else None
        b99 = res.med("lat", mode, cfg, b, 64, "p99_us") if b else None
        cnt = res.med("lat", mode, cfg, b, 64, "count") if b else None
        bmb = res.med("lat", mode, cfg, b, 64, "bulk_MBps") if b else None
        r = ratio(b99, i99)
        rows.append([label, fmt(i50), fmt(i99), fmt(b50), fmt(b99), fmt(r),
                     fmt(ratio(b99, qp99)), "%d" % cnt if cnt is not None else "-", fmt(bmb)])
        if mode == "rdmashare" and cfg.startswith("split1"):
            verdicts.append((label, r))
    if not rows:
        return
    print("64-byte ping-pong, round-trip microseconds (p50, p99), alone and")
    print("behind %s sender(s) of 4 MiB messages (%d round(s)):" %
          (b if b else "-", len(res.kind_rounds["lat"])))
    print()
    print(table(cols, rows, left=1))
    print()
    print("p99 x: p99 behind bulk over idle p99, same setup.  vs qp: p99 behind")
    print("bulk over that of one verbs QP per sender (no shared send queue).")
    print("pings: round trips taken while the bulk senders streamed.  bulk MB/s:")
    print("the bulk senders' aggregate meanwhile (the server's count, first to")
    print("last message).")
    print()
    print("Target (issue #4): p99 behind bulk <= %g x idle p99 with split on:" % TARGET)
    print()
    for label, r in verdicts:
        print("* %s: %s x (%s)" % (label, fmt(r),
                                   "n/a" if r is None else "met" if r <= TARGET else "missed"))
    print()


def plot(res, path):
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"
    matplotlib.rcParams["svg.hashsalt"] = "rdmashare-sched-bench"
    import matplotlib.pyplot as plt

    cfg = res.tput_cfg()
    keys = res.keys("tput")
    sizes = sorted({k[4] for k in keys})
    threads = sorted({k[3] for k in keys})
    ncol = max(len(sizes), 1)
    fig = plt.figure(figsize=(4 * ncol, 10.5))
    gs = fig.add_gridspec(3, ncol, height_ratios=[1, 0.8, 1.1], hspace=0.45, wspace=0.3)
    style = {"mutex": ("o-", "tab:red"), "qp": ("s--", "tab:blue"),
             "rdmashare": ("^-", "tab:green")}
    for j, size in enumerate(sizes):
        ax = fig.add_subplot(gs[0, j])
        axj = fig.add_subplot(gs[1, j])
        for mode, label in MODES:
            xs, ys, js = [], [], []
            for t in threads:
                v = res.med("tput", mode, cfg, t, size, "MBps")
                if v is None:
                    continue
                xs.append(t)
                ys.append(v)
                js.append(res.med("tput", mode, cfg, t, size, "jain"))
            if xs:
                ax.plot(xs, ys, style[mode][0], color=style[mode][1], label=label)
                axj.plot(xs, js, style[mode][0], color=style[mode][1], label=label)
        for a in (ax, axj):
            a.set_xscale("log", base=2)
            a.set_xticks(threads)
            a.set_xticklabels([str(t) for t in threads])
            a.grid(True, alpha=0.3)
            a.set_xlabel("senders N")
        ax.set_title("%s messages" % size_name(size))
        ax.set_ylim(bottom=0)
        lo = min([v for mode, _ in MODES for t in threads
                  for v in [res.med("tput", mode, cfg, t, size, "jain")] if v is not None],
                 default=1)
        axj.set_ylim(min(0.9, lo - 0.02), 1.005)
        if j == 0:
            ax.set_ylabel("aggregate MB/s")
            axj.set_ylabel("Jain's index")
            ax.legend(fontsize="small")

    lk = res.keys("lat")
    bulk = sorted({k[3] for k in lk if k[3]})
    b = bulk[0] if bulk else None
    labels, vals = [], {"idle p50": [], "idle p99": [], "bulk p50": [], "bulk p99": []}
    for mode, lcfg, label in LAT_CONFIGS:
        if not any(k[1] == mode and k[2] == lcfg for k in lk):
            continue
        labels.append(label.replace(", ", "\n", 1))
        vals["idle p50"].append(res.med("lat", mode, lcfg, 0, 64, "p50_us") or 0)
        vals["idle p99"].append(res.med("lat", mode, lcfg, 0, 64, "p99_us") or 0)
        vals["bulk p50"].append((res.med("lat", mode, lcfg, b, 64, "p50_us") or 0) if b else 0)
        vals["bulk p99"].append((res.med("lat", mode, lcfg, b, 64, "p99_us") or 0) if b else 0)
    if labels:
        ax = fig.add_subplot(gs[2, :])
        w = 0.2
        colors = ["#9ecae1", "#3182bd", "#fdae6b", "#e6550d"]
        for i, (k, c) in enumerate(zip(vals, colors)):
            ax.bar([x + (i - 1.5) * w for x in range(len(labels))],
                   [v / 1000 for v in vals[k]], w, label=k, color=c)
        ax.set_yscale("log")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, fontsize="small")
        ax.set_ylabel("64 B round trip, ms (log)")
        ax.set_title("ping-pong alone and behind %s x 4 MiB senders" % (b if b else "-"))
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize="small", ncol=4)
    fig.suptitle("rdmashare scheduler benchmark (Soft-RoCE loopback, QEMU TCG guest; "
                 "medians of %d round(s))" % len(res.rounds))
    if path.endswith(".png"):
        fig.savefig(path, format="png", dpi=90, bbox_inches="tight",
                    metadata={"Software": None})
    else:
        fig.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None})


def main():
    args = sys.argv[1:]
    plot_path = None
    if len(args) >= 2 and args[0] == "--plot":
        plot_path = args[1]
        args = args[2:]
    if not args:
        sys.exit(__doc__)
    res = Results(args[0])
    print(".. Scheduler benchmark, medians of %d round(s)." % len(res.rounds))
    for e in args[1:]:
        with open(e) as f:
            for line in f:
                print("   " + line.rstrip())
    print()
    if res.keys("tput"):
        print("Throughput and fairness (credits_per_ac %s; %d round(s)):" %
              ((res.tput_cfg() or "-").replace("cr", ""), len(res.kind_rounds["tput"])))
        print()
        tput_section(res)
    if res.keys("lat"):
        lat_section(res)
    if plot_path:
        plot(res, plot_path)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn make bench-ps's results into reStructuredText tables (and a plot).

usage: ps-table.py [--summary] [--plot OUT.svg] [--env FILE]... PART=PS.TSV...

PART is "one" (every node in one guest) or "pair" (servers on one guest,
workers on the other); PS.TSV is ps-guest.sh's (round, transport, config
S,W,size,mode, metric, value), with its ps-env.txt beside it.  Each number
is the median over the rounds; each ratio the median of the rounds' ratios
of rdmashare's transport to the other measured one after the other in the
same round.  The ENV files and the guests' ps-env.txt are copied in as a
comment.  --summary prints the summary table alone, without footnotes.
"""
import os
import sys

sys.dont_write_bytecode = True
from benchtable import Notes, Rounds, fmt, size_name, table  # noqa: E402

TRANSPORTS = [("tcp", "TCP"), ("verbs", "verbs"), ("rsocket", "rsocket"),
              ("rdmashare", "rdmashare"), ("preload", "rs-run")]
PARTS = {"one": "One guest (all nodes on its rxe address: RDMA loopback)",
         "pair": "Two guests (servers on one, workers on the other)"}
# Issue #34: rdmashare's transport over verbs with a QP per connection, at
# W = 8: >= 1.5x at 4 KiB, >= 1.0x at 4 MiB; ahead of rsocket's preload.
TARGETS = [(4096, 8, 1.5), (4194304, 8, 1.0)]
# The QPs that carry each transport's traffic (ps-guest.sh's samples).
QP_METRIC = {"verbs": "qps_user", "rsocket": "qps_user", "tcp": "qps_user",
             "rdmashare": "qps_rdmashare", "preload": "qps_rdmashare"}

notes = Notes()


def key(f):
    """(transport, S, W, size, mode) of ps-guest.sh's columns."""
    s, w, size, mode = f[1].split(",")
    return (f[0], int(s), int(w), int(size), mode)


def over_tcp(res, k):
    """Whether a run over an RDMA transport went over TCP instead: TCP sent
    more segments than rxe0 packets (medians)."""
    t, p = res.med(*k, "tcp_segs"), res.med(*k, "rxe_pkts")
    return k[0] != "tcp" and t is not None and p is not None and t > p


def cell(res, k, value):
    """A value with the notes of its failures and of a run over TCP."""
    out = value
    f = res.fails.get(k, [])
    if f:
        # A job that hung is not run again: "not run: ..." in later rounds.
        real = [x for x in f if not x.startswith("not run:")]
        out += " " + notes("%s: %s (%d of %d rounds%s)" % (
            dict(TRANSPORTS)[k[0]], max(real, key=real.count) if real else f[0],
            len(real), len(res.rounds),
            "; not run in the %d after" % (len(f) - len(real)) if len(f) > len(real) else ""))
    if over_tcp(res, k):
        out += " " + notes("%s went over TCP: during its runs TCP sent more segments than "
                           "rxe0 packets (the counts are after the latency table)" % dict(TRANSPORTS)[k[0]])
    return out.strip()


def gp_ratio(res, k, base):
    """@k's goodput over @base's, the median of the rounds' ratios."""
    return res.ratio(k + ("goodput_MBps",), base + ("goodput_MBps",))


def ratio_cell(res, k, base):
    r = gp_ratio(res, k, base)
    if r is None:
        return "-"
    return fmt(r) + ("*" if over_tcp(res, base) and base[0] != "tcp" else "")


def qps(res, t, S, W):
    """The RC QPs of transport @t's runs with @S and @W: the most any of
    them saw (they do not depend on the size; a short run may end between
    two samples)."""
    v = [res.med(*k, QP_METRIC[t]) for k in res.keys() if k[:3] == (t, S, W)]
    v = [x for x in v if x is not None]
    return fmt(max(v), 0) if v else "-"


def configs(res):
    return sorted({k[1:] for k in res.keys()}, key=lambda c: (c[3], c[2], c[0], c[1]))


def ms(v):
    return "-" if v is None else fmt(v / 1000)


def part_tables(name, res, env):
    print("%s, %s, medians of %d round(s)%s." % (
        PARTS.get(name, name), env.get("kernel", "?"), len(res.rounds),
        ", RS_BENCH_SCALE %s" % env["scale"] if env.get("scale", "1") != "1" else ""))
    print()
    rows, lrows = [], []
    for c in configs(res):
        S, W, size, mode = c
        ks = {t: (t,) + c for t, _ in TRANSPORTS}
        rs = ks["rdmashare"]
        first = ["%s %s" % (size_name(size), mode) if len(set(x[3] for x in configs(res))) > 1
                 else size_name(size), str(S), str(W)]
        rows.append(first + [cell(res, ks[t], fmt(res.med(*ks[t], "goodput_MBps")))
                             for t, _ in TRANSPORTS] +
                    [ratio_cell(res, rs, ks["verbs"]), ratio_cell(res, rs, ks["rsocket"]),
                     ratio_cell(res, rs, ks["tcp"])] +
                    [qps(res, t, S, W) for t in ("verbs", "rdmashare")])
        lrows.append(first + ["%s/%s" % (ms(res.med(*ks[t], "lat_p50_us")),
                                         ms(res.med(*ks[t], "lat_p99_us")))
                              for t, _ in TRANSPORTS])
    print("Goodput, MB/s (values moved by all workers, both ways for pushpull):")
    print()
    print(table(["size", "S", "W"] + [label for _, label in TRANSPORTS] +
                ["rs/verbs", "rs/rsocket", "rs/TCP", "QPs verbs", "QPs rs"], rows, left=1))
    print()
    print("Worker 0's request latency, p50/p99 in ms (issue to completion, all of a")
    print("round's requests issued at once):")
    print()
    print(table(["size", "S", "W"] + [label for _, label in TRANSPORTS], lrows, left=1))
    print()
    for t, label in TRANSPORTS:
        ks = [k for k in res.keys() if k[0] == t]
        c = [[res.med(*k, m) for k in ks if res.med(*k, m) is not None]
             for m in ("rxe_pkts", "tcp_segs", "rs_bytes")]
        if all(c):
            print("* %s: rxe0 sent %d-%d packets, TCP %d-%d segments, rdmashare %.3g-%.3g MB "
                  "a run (medians)" % (label, min(c[0]), max(c[0]), min(c[1]), max(c[1]),
                                       min(c[2]) / 1e6, max(c[2]) / 1e6))
    print()


def plain(res, k, value):
    """A value, or "failed" for a job that failed every round."""
    return "failed" if value == "-" and res.fails.get(k) else value


def summary(parts, mark=cell):
    """Every part's rows at its largest W, in one table; @mark makes a
    goodput's cell."""
    rows = []
    for name, res, _ in parts:
        W = max(k[2] for k in res.keys())
        for c in configs(res):
            S, w, size, mode = c
            if w != W:
                continue
            ks = {t: (t,) + c for t, _ in TRANSPORTS}
            rs = ks["rdmashare"]
            rows.append([name, size_name(size), str(S), str(W)] +
                        [mark(res, ks[t], fmt(res.med(*ks[t], "goodput_MBps")))
                         for t, _ in TRANSPORTS] +
                        [ratio_cell(res, rs, ks["verbs"]), ratio_cell(res, rs, ks["rsocket"])] +
                        [qps(res, t, S, W) for t in ("verbs", "rdmashare")])
    print("Summary, every part at its largest W, goodput MB/s:")
    print()
    print(table(["part", "size", "S", "W"] + [label for _, label in TRANSPORTS] +
                ["rs/verbs", "rs/rsocket", "QPs verbs", "QPs rs"], rows, left=2))
    print()


def targets(parts):
    print("Targets (issue #34), rdmashare's transport (rs):")
    print()
    for name, res, _ in parts:
        for size, W, bound in TARGETS:
            for S in sorted({k[1] for k in res.keys()}):
                k = ("rdmashare", S, W, size, "pushpull")
                r = gp_ratio(res, k, ("verbs",) + k[1:])
                if r is None:
                    continue
                print("* %s, %s, S %d, W %d: %s x verbs (target >= %.1f): %s" % (
                    name, size_name(size), S, W, fmt(r), bound,
                    "met" if r >= bound else "missed"))
        for size in sorted({k[3] for k in res.keys()}):
            rr = [(gp_ratio(res, k, ("rsocket",) + k[1:]), k)
                  for k in res.keys() if k[0] == "rdmashare" and k[3] == size]
            rr = [x for x in rr if x[0] is not None]
            if not rr:
                continue
            lo = min(rr)
            tcp = any(over_tcp(res, ("rsocket",) + k[1:]) for _, k in rr)
            print("* %s, %s: rs over rsocket's preload %s-%s x (ahead at every S, W: %s)%s" % (
                name, size_name(size), fmt(lo[0]), fmt(max(rr)[0]),
                "yes" if lo[0] > 1 else "no, S %d W %d" % lo[1][1:3],
                "; rsocket's preload went over TCP" if tcp else ""))
    print()


def plot(parts, path):
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"
    matplotlib.rcParams["svg.hashsalt"] = "rdmashare-ps-bench"
    import matplotlib.pyplot as plt

    sizes = sorted({k[3] for _, res, _ in parts for k in res.keys()})
    fig, axes = plt.subplots(len(parts), len(sizes), squeeze=False,
                             figsize=(4.2 * len(sizes), 3.6 * len(parts)))
    style = {"tcp": ("o:", "tab:gray"), "verbs": ("s--", "tab:blue"),
             "rsocket": ("v:", "tab:orange"), "rdmashare": ("^-", "tab:green"),
             "preload": ("D-.", "tab:olive")}
    for i, (name, res, env) in enumerate(parts):
        S = max(k[1] for k in res.keys())
        for j, size in enumerate(sizes):
            ax = axes[i][j]
            ws = sorted({k[2] for k in res.keys() if k[1] == S and k[3] == size})
            for t, label in TRANSPORTS:
                xy = [(w, res.med(t, S, w, size, "pushpull", "goodput_MBps")) for w in ws]
                xy = [p for p in xy if p[1] is not None]
                if xy:
                    ax.plot(*zip(*xy), style[t][0], color=style[t][1], label=label)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(ws)
            ax.set_xticklabels([str(w) for w in ws])
            ax.grid(True, which="both", alpha=0.3)
            ax.set_xlabel("workers W")
            ax.set_title("%s, %s, S %d" % (name, size_name(size), S), fontsize="medium")
            if j == 0:
                ax.set_ylabel("goodput MB/s (log)")
            if i == 0 and j == 0:
                ax.legend(fontsize="small")
    fig.suptitle("ps-bench pushpull (Soft-RoCE, QEMU TCG guests; medians of %d round(s))" %
                 max(len(res.rounds) for _, res, _ in parts))
    fig.tight_layout()
    fig.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None})


def read_env(path):
    env = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition(" ")
                env.setdefault(k, v)
    return env


def main():
    args = sys.argv[1:]
    plot_path, envs, parts, only = None, [], [], False
    while args:
        a = args.pop(0)
        if a == "--summary":
            only = True
        elif a == "--plot":
            plot_path = args.pop(0)
        elif a == "--env":
            envs.append(args.pop(0))
        else:
            name, _, path = a.partition("=")
            parts.append((name, Rounds(path, key), read_env(
                os.path.join(os.path.dirname(path), "ps-env.txt"))))
    if not parts:
        sys.exit(__doc__)
    if only:
        summary(parts, plain)
        return
    print(".. make bench-ps")
    for e in envs:
        with open(e) as f:
            for line in f:
                print("   " + line.rstrip())
    for name, _, env in parts:
        for k in ("kernel", "cpus", "scale", "repeat", "qps_per_peer"):
            print("   %s: %s %s" % (name, k, env.get(k, "?")))
    print()
    for name, res, env in parts:
        part_tables(name, res, env)
    summary(parts)
    print("TCP, verbs (libps's raw verbs: an RC QP per connection), rsocket (the")
    print("sockets transport under rsocket's librspreload.so), rdmashare (libps's")
    print("rdmashare transport: an AC per connection), rs-run (the sockets transport")
    print("under rdmashare-run).  rs/X: rdmashare's goodput over X's (* X went over")
    print("TCP).  QPs: the most RC QPs on the measuring guest's rxe0 during the")
    print("first round's runs with that S and W, the processes' for verbs, the")
    print("module's for rdmashare (in one guest both ends of each connection are")
    print("there).")
    for line in notes.lines():
        print(line)
    print()
    targets(parts)
    if plot_path:
        plot(parts, plot_path)


if __name__ == "__main__":
    main()

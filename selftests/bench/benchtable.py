# SPDX-License-Identifier: GPL-2.0
"""What the benchmarks' table scripts (*-table.py) share: sizes, numbers,
ratios, reStructuredText simple tables, results by round (Rounds) and
footnotes (Notes)."""
import collections
import statistics


def size_name(s):
    if s >= 1 << 20 and s % (1 << 20) == 0:
        return "%d MiB" % (s >> 20)
    if s >= 1024 and s % 1024 == 0:
        return "%d KiB" % (s >> 10)
    return "%d B" % s


def fmt(v, nd=None):
    if v is None:
        return "-"
    if nd is not None:
        return "%.*f" % (nd, v)
    if v >= 100:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    return "%.2f" % v


def ratio(a, b):
    return None if a is None or not b else a / b


def table(cols, rows, left=1):
    """An rst simple table; the first `left` columns left-justified."""
    width = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c)
             for i, c in enumerate(cols)]
    rule = "  ".join("=" * w for w in width)

    def just(r):
        return "  ".join((c.ljust(w) if i < left else c.rjust(w))
                         for i, (c, w) in enumerate(zip(r, width))).rstrip()
    out = [rule, just(cols), rule]
    prev = None
    for r in rows:
        if r is None:
            continue
        if prev is not None and left and r[0] and r[0] != prev:
            out.append("")
        if r[0]:
            prev = r[0]
        out.append(just(r))
    out.append(rule)
    return "\n".join(out)



class Rounds:
    """A benchmark's results: a TSV with a header line, then per line the
    round, the measurement (any number of columns, made a tuple by @key),
    the metric and its value; a "fail" metric's value is what the program
    said.  Values are looked up by the measurement's tuple and the metric;
    rounds named in @skip (e.g. a round 0 before the rounds) do not count
    as rounds."""

    def __init__(self, path, key=tuple, skip=()):
        self.vals = collections.defaultdict(list)
        self.by_round = collections.defaultdict(dict)
        self.fails = collections.defaultdict(list)
        self.rounds = set()
        with open(path) as f:
            next(f)
            for line in f:
                fields = line.rstrip("\n").split("\t")
                r, k, metric, value = fields[0], key(fields[1:-2]), fields[-2], fields[-1]
                if r not in skip:
                    self.rounds.add(r)
                if metric == "fail":
                    self.fails[k].append(value)
                else:
                    self.vals[k + (metric,)].append(float(value))
                    self.by_round[k + (metric,)][r] = float(value)

    def keys(self):
        """Every measurement, failed or not."""
        return {k[:-1] for k in self.vals} | set(self.fails)

    def med(self, *k):
        """The median of measurement and metric @k over the rounds, or None."""
        v = self.vals.get(k)
        return statistics.median(v) if v else None

    def ratio(self, a, b):
        """The median over rounds of @a's value over @b's in the same round
        (measurement and metric each; measured one after the other: less
        noise than a ratio of medians), or None."""
        a, b = self.by_round.get(a), self.by_round.get(b)
        if not a or not b:
            return None
        v = [a[r] / b[r] for r in a if r in b and b[r]]
        return statistics.median(v) if v else None


class Notes:
    """Numbered footnotes: the same text gets the same number."""

    def __init__(self):
        self.texts = []

    def __call__(self, text):
        if text not in self.texts:
            self.texts.append(text)
        return "[%d]" % (self.texts.index(text) + 1)

    def lines(self):
        return ["[%d] %s" % (i + 1, t) for i, t in enumerate(self.texts)]

# SPDX-License-Identifier: GPL-2.0
"""What the benchmarks' table scripts (*-table.py) share: sizes, numbers,
ratios and reStructuredText simple tables."""


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

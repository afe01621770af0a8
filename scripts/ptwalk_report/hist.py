"""ptwalk's latency histograms: exact below 256 ns, above that each power
of two split into 128 equal buckets (results/SCHEMA.md, `buckets`).
Histograms of two results therefore merge bucket by bucket."""
from __future__ import annotations

import math
from typing import Iterable, Sequence

Buckets = Sequence[Sequence[int]]  # [[lower_bound_ns, count], ...]


def bucket_upper(lower: int) -> int:
    """Largest value that falls in the bucket starting at `lower`."""
    if lower < 256:
        return lower
    width = (1 << (int(lower).bit_length() - 1)) // 128
    return lower + width - 1


def merge(hists: Iterable[Buckets]) -> list[list[int]]:
    acc: dict[int, int] = {}
    for h in hists:
        for lower, count in h:
            acc[int(lower)] = acc.get(int(lower), 0) + int(count)
    return [[k, acc[k]] for k in sorted(acc)]


def total(h: Buckets) -> int:
    return sum(int(c) for _, c in h)


def quantile(h: Buckets, q: float) -> int | None:
    """Nearest-rank quantile as the upper bound of its bucket (as ptwalk)."""
    n = total(h)
    if n == 0:
        return None
    rank = max(1, math.ceil(q * n))
    seen = 0
    for lower, count in h:
        seen += int(count)
        if seen >= rank:
            return bucket_upper(int(lower))
    return bucket_upper(int(h[-1][0]))


def fraction_above(h: Buckets, threshold: float) -> float:
    """Share of samples whose bucket lies wholly above `threshold`."""
    n = total(h)
    if n == 0:
        return 0.0
    return sum(int(c) for lower, c in h if lower > threshold) / n


def cdf_points(h: Buckets) -> tuple[list[float], list[float]]:
    """(latency, share of samples <= latency) at each bucket's upper bound."""
    n = total(h)
    xs: list[float] = []
    ys: list[float] = []
    seen = 0
    for lower, count in h:
        seen += int(count)
        xs.append(float(bucket_upper(int(lower))))
        ys.append(seen / n)
    return xs, ys

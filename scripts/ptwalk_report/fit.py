"""Least-squares walk cost model: duration = a + b * entries, and the 95%
prediction interval of one new walk at a size far beyond the measured ones.

With a single measured size the intercept cannot be separated from the
slope; the model is then proportional (duration = b * entries, b = mean
ns per entry) and the interval comes from the spread of ns per entry."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from . import stats


@dataclass(frozen=True)
class Fit:
    a: float            # ns
    b: float            # ns per entry
    n: int
    model: str          # "linear" or "proportional"
    s: float            # residual standard error (linear: ns; proportional: ns/entry)
    x_mean: float
    sxx: float
    x_min: float
    x_max: float
    r2: float | None

    def predict(self, x: float) -> float:
        return self.a + self.b * x

    def interval(self, x: float, level: float = 0.95) -> tuple[float, float, float]:
        """(prediction, low, high) for one new walk at x entries."""
        y = self.predict(x)
        if self.model == "linear":
            if self.n < 3:
                return y, math.nan, math.nan
            t = stats.t_ppf(0.5 + level / 2.0, self.n - 2)
            half = t * self.s * math.sqrt(1.0 + 1.0 / self.n + (x - self.x_mean) ** 2 / self.sxx)
        else:
            if self.n < 2:
                return y, math.nan, math.nan
            t = stats.t_ppf(0.5 + level / 2.0, self.n - 1)
            half = t * self.s * math.sqrt(1.0 + 1.0 / self.n) * x
        return y, y - half, y + half


MIN_SPREAD = 1.5  # largest / smallest entries for a linear (two-parameter) fit


def fit(xs: Sequence[float], ys: Sequence[float]) -> Fit | None:
    if len(xs) != len(ys) or not xs:
        return None
    n = len(xs)
    xm, ym = stats.mean(xs), stats.mean(ys)
    sxx = math.fsum((x - xm) ** 2 for x in xs)
    # a slope needs sizes that differ: entries of one size drift by a few
    # pages (victims fault), which would give a meaningless slope
    spread = max(xs) / min(xs) if min(xs) > 0 else math.inf
    if spread >= MIN_SPREAD and sxx > 0 and n >= 3:
        sxy = math.fsum((x - xm) * (y - ym) for x, y in zip(xs, ys))
        b = sxy / sxx
        a = ym - b * xm
        sse = math.fsum((y - a - b * x) ** 2 for x, y in zip(xs, ys))
        syy = math.fsum((y - ym) ** 2 for y in ys)
        s = math.sqrt(sse / (n - 2))
        r2 = 1.0 - sse / syy if syy > 0 else None
        return Fit(a, b, n, "linear", s, xm, sxx, min(xs), max(xs), r2)
    if xm <= 0:
        return None
    ratios = [y / x for x, y in zip(xs, ys) if x > 0]
    return Fit(0.0, stats.mean(ratios), n, "proportional", stats.stdev(ratios), xm, 0.0,
               min(xs), max(xs), None)

"""Statistics with the standard library only, so they are unit-testable
anywhere: Student's t distribution (via the regularized incomplete beta
function), Welch's t-test, Mann-Whitney U (normal approximation with tie
correction) and a seeded percentile bootstrap of a difference of means."""
from __future__ import annotations

import math
import random
import zlib
from dataclasses import dataclass
from typing import Sequence


def mean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs)


def variance(xs: Sequence[float]) -> float:
    """Sample variance (n - 1 denominator); 0 for fewer than 2 samples."""
    n = len(xs)
    if n < 2:
        return 0.0
    m = mean(xs)
    return math.fsum((x - m) ** 2 for x in xs) / (n - 1)


def stdev(xs: Sequence[float]) -> float:
    return math.sqrt(variance(xs))


def quantile(xs: Sequence[float], q: float) -> float:
    """Nearest-rank quantile (as ptwalk's walk_summary)."""
    s = sorted(xs)
    rank = max(1, math.ceil(q * len(s)))
    return s[rank - 1]


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = tiny if abs(d) < tiny else d
    d = 1.0 / d
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            return h
    raise ArithmeticError(f"betainc({a}, {b}, {x}) did not converge")


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta function I_x(a, b)."""
    if a <= 0 or b <= 0:
        raise ValueError("betainc needs a > 0 and b > 0")
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(lbeta + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """CDF of Student's t distribution with df degrees of freedom."""
    if df <= 0:
        raise ValueError("t_cdf needs df > 0")
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    t2 = t * t
    if t2 < df:
        # near 0: I_x(df/2, 1/2) with x close to 1 loses precision; use the
        # complement 1 - I_{1-x}(1/2, df/2)
        tail = 0.5 - 0.5 * betainc(0.5, df / 2.0, t2 / (df + t2))
    else:
        tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t2))
    return 1.0 - tail if t > 0 else tail


def t_ppf(p: float, df: float) -> float:
    """Inverse of t_cdf, by bisection (monotone, so robust)."""
    if not 0.0 < p < 1.0:
        raise ValueError("t_ppf needs 0 < p < 1")
    lo, hi = -1.0, 1.0
    while t_cdf(lo, df) > p:
        lo *= 2.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, abs(mid)):
            break
    return (lo + hi) / 2.0


def norm_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


@dataclass(frozen=True)
class TestResult:
    statistic: float
    p: float
    df: float | None = None


def welch_t(a: Sequence[float], b: Sequence[float]) -> TestResult:
    """Welch's unequal-variance t-test, two-sided."""
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        raise ValueError("welch_t needs at least 2 samples per side")
    ma, mb = mean(a), mean(b)
    va, vb = variance(a) / na, variance(b) / nb
    se2 = va + vb
    if se2 == 0.0:
        return TestResult(0.0 if ma == mb else math.copysign(math.inf, mb - ma),
                          1.0 if ma == mb else 0.0, float(na + nb - 2))
    t = (mb - ma) / math.sqrt(se2)
    df = se2 * se2 / ((va * va) / (na - 1) + (vb * vb) / (nb - 1))
    p = 2.0 * t_cdf(-abs(t), df)
    return TestResult(t, min(1.0, p), df)


def rank(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Average ranks (1-based) and the sizes of tie groups."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        r = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            ranks[order[k]] = r
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> TestResult:
    """Mann-Whitney U, two-sided, normal approximation with tie and
    continuity correction. statistic = U of sample a."""
    na, nb = len(a), len(b)
    if na < 1 or nb < 1:
        raise ValueError("mann_whitney_u needs samples on both sides")
    ranks, ties = rank(list(a) + list(b))
    u_a = math.fsum(ranks[:na]) - na * (na + 1) / 2.0
    n = na + nb
    mu = na * nb / 2.0
    tie_term = sum(t ** 3 - t for t in ties) / (n * (n - 1)) if n > 1 else 0.0
    var = na * nb / 12.0 * ((n + 1) - tie_term)
    if var <= 0.0:
        return TestResult(u_a, 1.0)
    diff = u_a - mu
    z = (abs(diff) - 0.5) / math.sqrt(var) if abs(diff) >= 0.5 else 0.0
    return TestResult(u_a, min(1.0, 2.0 * (1.0 - norm_cdf(z))))


def seed_for(name: str, base: int = 0) -> int:
    """A stable seed for a metric name (hash() is salted per process)."""
    return zlib.crc32(name.encode()) ^ base


def bootstrap_diff_ci(a: Sequence[float], b: Sequence[float], *, seed: int,
                      level: float = 0.95, iterations: int = 2000) -> tuple[float, float]:
    """Percentile bootstrap CI of mean(b) - mean(a); reproducible for a seed."""
    rng = random.Random(seed)
    a, b = list(a), list(b)
    na, nb = len(a), len(b)
    diffs = []
    for _ in range(iterations):
        ma = math.fsum(rng.choices(a, k=na)) / na
        mb = math.fsum(rng.choices(b, k=nb)) / nb
        diffs.append(mb - ma)
    diffs.sort()
    lo_i = int(math.floor((1.0 - level) / 2.0 * iterations))
    hi_i = min(iterations - 1, int(math.ceil((1.0 + level) / 2.0 * iterations)) - 1)
    return diffs[lo_i], diffs[hi_i]

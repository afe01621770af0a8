"""Statistics of ptwalk compare and the fits, on SciPy (python3-scipy):
exact Mann-Whitney U for small samples, Welch's t-test, Benjamini-Hochberg
adjusted p-values, a seeded bootstrap that resamples runs, and the Student
t quantiles the fits use. The unit of replication is the run: callers pass
one value per run."""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from scipy import stats as sps

# exact Mann-Whitney up to this many runs a side (SciPy's exact null
# distribution; beyond it the normal approximation is accurate)
EXACT_MAX_N = 25
# ties: exact permutation distribution when there are at most this many
# splits of the pooled sample, else the normal approximation with tie correction
PERMUTATION_MAX = 200_000


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


def median(xs: Sequence[float]) -> float:
    return float(np.median(np.asarray(xs, dtype=float)))


def quantile(xs: Sequence[float], q: float) -> float:
    """Nearest-rank quantile (as ptwalk's walk_summary)."""
    s = sorted(xs)
    rank = max(1, math.ceil(q * len(s)))
    return s[rank - 1]


def t_cdf(t: float, df: float) -> float:
    """CDF of Student's t distribution with df degrees of freedom."""
    if df <= 0:
        raise ValueError("t_cdf needs df > 0")
    return float(sps.t.cdf(t, df))


def t_ppf(p: float, df: float) -> float:
    """Quantile of Student's t distribution."""
    if not 0.0 < p < 1.0:
        raise ValueError("t_ppf needs 0 < p < 1")
    if df <= 0:
        raise ValueError("t_ppf needs df > 0")
    return float(sps.t.ppf(p, df))


@dataclass(frozen=True)
class TestResult:
    statistic: float
    p: float
    method: str
    df: float | None = None


def welch_t(a: Sequence[float], b: Sequence[float]) -> TestResult:
    """Welch's unequal-variance t-test, two-sided; statistic > 0 when b > a."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError("welch_t needs at least 2 samples per side")
    ma, mb = mean(a), mean(b)
    va, vb = variance(a) / len(a), variance(b) / len(b)
    if va + vb == 0.0:
        # no spread at all: equal means are the same, different ones differ
        return TestResult(0.0 if ma == mb else math.copysign(math.inf, mb - ma),
                          1.0 if ma == mb else 0.0, "welch", float(len(a) + len(b) - 2))
    r = sps.ttest_ind(b, a, equal_var=False)
    df = (va + vb) ** 2 / (va * va / (len(a) - 1) + vb * vb / (len(b) - 1))
    return TestResult(float(r.statistic), float(r.pvalue), "welch", df)


def mwu_floor(na: int, nb: int) -> float:
    """Smallest two-sided p-value the exact Mann-Whitney U test can give for
    these sample sizes (complete separation): 2 / C(na + nb, na)."""
    if na < 1 or nb < 1:
        return 1.0
    return min(1.0, 2.0 / math.comb(na + nb, na))


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> TestResult:
    """Mann-Whitney U, two-sided; statistic = U of sample a. Exact for up to
    EXACT_MAX_N values a side: SciPy's exact distribution without ties, the
    exact permutation distribution of U with ties; otherwise the normal
    approximation with tie and continuity correction."""
    na, nb = len(a), len(b)
    if na < 1 or nb < 1:
        raise ValueError("mann_whitney_u needs samples on both sides")
    pooled = list(a) + list(b)
    ties = len(set(pooled)) < len(pooled)
    if max(na, nb) <= EXACT_MAX_N and not ties:
        r = sps.mannwhitneyu(a, b, alternative="two-sided", method="exact")
        return TestResult(float(r.statistic), float(r.pvalue), "exact")
    if max(na, nb) <= EXACT_MAX_N and math.comb(na + nb, na) <= PERMUTATION_MAX:
        if len(set(pooled)) == 1:
            return TestResult(na * nb / 2.0, 1.0, "exact")

        def u_stat(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
            return sps.mannwhitneyu(x, y, axis=axis, method="asymptotic").statistic

        r = sps.permutation_test((np.asarray(a, float), np.asarray(b, float)), u_stat,
                                 permutation_type="independent", vectorized=True,
                                 n_resamples=math.inf, alternative="two-sided")
        u = float(sps.mannwhitneyu(a, b, method="asymptotic").statistic)
        return TestResult(u, min(1.0, float(r.pvalue)), "exact")
    r = sps.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic")
    return TestResult(float(r.statistic), float(r.pvalue), "asymptotic")


def bh_adjust(ps: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values): reject at FDR q
    exactly the hypotheses whose adjusted value is <= q."""
    m = len(ps)
    if m == 0:
        return []
    order = sorted(range(m), key=lambda i: ps[i])
    out = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, ps[i] * m / rank)
        out[i] = min(1.0, running)
    return out


def seed_for(name: str, base: int = 0) -> int:
    """A stable seed for a metric name (hash() is salted per process)."""
    return zlib.crc32(name.encode()) ^ base


def rel_change(a: Sequence[float], b: Sequence[float]) -> float:
    """Percent change of the mean of b over the mean of a."""
    ma, mb = mean(a), mean(b)
    if ma == 0.0:
        return 0.0 if mb == 0.0 else math.copysign(math.inf, mb)
    return 100.0 * (mb - ma) / ma


def bootstrap_change_ci(a: Sequence[float], b: Sequence[float], *, seed: int,
                        level: float = 0.95, iterations: int = 2000,
                        statistic: Callable[[Sequence[float], Sequence[float]], float]
                        = rel_change) -> tuple[float, float]:
    """Percentile bootstrap interval of statistic(a, b) (default: percent
    change of means), resampling the runs of each side with replacement;
    reproducible for a seed. With 3 runs a side it is coarse: at most 10
    distinct resampled means per side."""
    rng = np.random.default_rng(seed)
    xa, xb = np.asarray(a, float), np.asarray(b, float)
    ia = rng.integers(0, len(xa), size=(iterations, len(xa)))
    ib = rng.integers(0, len(xb), size=(iterations, len(xb)))
    ma, mb = xa[ia].mean(axis=1), xb[ib].mean(axis=1)
    if statistic is rel_change:
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.where(ma != 0, 100.0 * (mb - ma) / ma, 0.0)
    else:
        d = np.array([statistic(list(xa[i]), list(xb[j])) for i, j in zip(ia, ib)])
    lo, hi = np.quantile(d, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(lo), float(hi)

"""Statistics of ptwalk-compare against known values (computed with SciPy
1.10: scipy.special.betainc, scipy.stats.t, ttest_ind(equal_var=False),
mannwhitneyu(method='asymptotic')), and their error rates on synthetic data."""
from __future__ import annotations

import math
import random

import pytest

from ptwalk_report import compare, stats


@pytest.mark.parametrize("a,b,x,want", [
    (0.5, 0.5, 0.3, 0.3690101195655454),
    (2, 3, 0.4, 0.5248),
    (10, 0.5, 0.9, 0.15164090963470997),
    (50, 60, 0.45, 0.4642352914306064),
    (1, 1, 0.25, 0.25),
])
def test_betainc_known_values(a: float, b: float, x: float, want: float) -> None:
    assert stats.betainc(a, b, x) == pytest.approx(want, rel=1e-12, abs=1e-13)


def test_betainc_edges() -> None:
    assert stats.betainc(2, 3, 0.0) == 0.0
    assert stats.betainc(2, 3, 1.0) == 1.0
    with pytest.raises(ValueError):
        stats.betainc(0, 1, 0.5)


@pytest.mark.parametrize("t,df,want", [
    (2.0, 3, 0.9303370157205785),
    (-1.5, 10, 0.08225366322272008),
    (0.3, 1, 0.5927735790777423),       # Cauchy: 0.5 + atan(0.3)/pi
    (4.0, 2.5, 0.9804935120793409),
    (0.0, 7, 0.5),
])
def test_t_cdf_known_values(t: float, df: float, want: float) -> None:
    assert stats.t_cdf(t, df) == pytest.approx(want, rel=1e-12)


def test_t_ppf_inverts_cdf() -> None:
    assert stats.t_ppf(0.975, 10) == pytest.approx(2.2281388519649385, rel=1e-9)
    assert stats.t_ppf(0.975, 1) == pytest.approx(12.706204736174698, rel=1e-9)
    assert stats.t_ppf(0.5, 4) == pytest.approx(0.0, abs=1e-9)


A = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4]
B = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4]


def test_welch_known_values() -> None:
    r = stats.welch_t(A, B)
    assert r.statistic == pytest.approx(2.455356398286006, rel=1e-12)
    assert r.p == pytest.approx(0.021378001462866985, rel=1e-9)
    assert r.df == pytest.approx(24.98852929023142, rel=1e-9)


def test_welch_zero_variance() -> None:
    assert stats.welch_t([1, 1, 1], [1, 1, 1]).p == 1.0
    assert stats.welch_t([1, 1, 1], [2, 2, 2]).p == 0.0


def test_mann_whitney_known_values_with_ties() -> None:
    x = [1, 2, 2, 3, 4, 5, 5, 5, 9]
    y = [3, 4, 6, 6, 7, 8, 8, 10, 11, 12]
    r = stats.mann_whitney_u(x, y)
    assert r.statistic == 15.0
    assert r.p == pytest.approx(0.015596237887139635, rel=1e-9)


def test_mann_whitney_floor_for_three_runs() -> None:
    # no ordering of 3 vs 3 reaches 0.05 (exact floor 0.1; normal approx 0.0809)
    assert compare.mwu_floor(3, 3) == pytest.approx(0.080856, rel=1e-4)
    assert compare.mwu_floor(5, 5) < 0.05


def test_bootstrap_is_seeded_and_covers_the_difference() -> None:
    rng = random.Random(3)
    a = [rng.gauss(100, 10) for _ in range(40)]
    b = [rng.gauss(110, 10) for _ in range(40)]
    ci1 = stats.bootstrap_diff_ci(a, b, seed=42)
    ci2 = stats.bootstrap_diff_ci(a, b, seed=42)
    assert ci1 == ci2
    assert ci1[0] < stats.mean(b) - stats.mean(a) < ci1[1]
    assert stats.bootstrap_diff_ci(a, b, seed=43) != ci1


def _row(a: list[float], b: list[float], seed: int) -> compare.Row:
    return compare.compare_samples("m", "ns", "walk", a, b, alpha=0.05, min_change_pct=0.0,
                                   seed=seed, iterations=200)


def test_aa_same_distribution_mostly_not_significant() -> None:
    rng = random.Random(20261121)
    n_metrics, flagged = 400, 0
    for i in range(n_metrics):
        n = rng.choice([3, 5, 10, 30])
        if i % 2:
            draw = lambda: rng.gauss(100.0, 15.0)  # noqa: E731
        else:
            draw = lambda: rng.lognormvariate(4.0, 0.5)  # noqa: E731  (heavy-ish tail)
        row = _row([draw() for _ in range(n)], [draw() for _ in range(n)], i)
        flagged += row.significant
    assert flagged / n_metrics <= 0.05, flagged


@pytest.mark.parametrize("shift", [1.10, 1.25])
def test_real_shift_is_flagged(shift: float) -> None:
    rng = random.Random(7)
    caught = 0
    for i in range(50):
        a = [rng.gauss(100.0, 5.0) for _ in range(30)]
        b = [rng.gauss(100.0 * shift, 5.0 * shift) for _ in range(30)]
        row = _row(a, b, i)
        caught += row.significant and row.verdict == compare.REGRESSION
    assert caught >= 48, caught


def test_improvement_and_n_below_three() -> None:
    rng = random.Random(9)
    a = [rng.gauss(100.0, 5.0) for _ in range(20)]
    b = [x * 0.75 for x in a]
    assert _row(a, b, 1).verdict == compare.IMPROVEMENT
    small = _row([1.0, 2.0], [3.0, 4.0, 5.0], 1)
    assert small.verdict == compare.NO_VERDICT and small.note == "n<3: no verdict"


def test_combine() -> None:
    assert compare.combine([compare.NO_CHANGE, compare.REGRESSION]) == compare.REGRESSION
    assert compare.combine([compare.IMPROVEMENT, compare.NO_CHANGE]) == compare.IMPROVEMENT
    assert compare.combine([compare.NO_VERDICT]) == compare.NO_VERDICT
    assert math.isclose(stats.quantile([5, 1, 3, 2, 4], 0.5), 3)

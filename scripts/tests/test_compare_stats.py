"""Statistics of ptwalk compare: exact p-values, Welch, Benjamini-Hochberg,
the bootstrap over runs, the choice of test, and the error rates of the
whole verdict on synthetic runs (A/A quiet, a real shift found)."""
from __future__ import annotations

import math
import random

import pytest

from ptwalk_report import compare, stats


# exact Mann-Whitney: complete separation gives 2 / C(na+nb, na)
@pytest.mark.parametrize("na,nb,want", [
    (3, 3, 0.1), (4, 4, 2 / 70), (5, 5, 2 / 252), (3, 5, 2 / 56), (10, 10, 2 / 184756)])
def test_exact_mwu_at_complete_separation(na: int, nb: int, want: float) -> None:
    a = [float(i) for i in range(na)]
    b = [float(100 + i) for i in range(nb)]
    r = stats.mann_whitney_u(a, b)
    assert r.method == "exact"
    assert r.p == pytest.approx(want, rel=1e-12)
    assert stats.mwu_floor(na, nb) == pytest.approx(want, rel=1e-12)


def test_exact_mwu_values_of_the_issue() -> None:
    # 3 vs 3 cannot reach 0.05 (the normal approximation claimed 0.081);
    # 5 vs 5 separated: 0.0079 (the normal approximation claimed 0.0122)
    assert stats.mann_whitney_u([1, 2, 3], [4, 5, 6]).p == pytest.approx(0.1)
    assert stats.mann_whitney_u([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]).p == \
        pytest.approx(0.007937, abs=1e-6)
    # one swap: U = 1 of 25 -> P(U <= 1) = 2/252, two-sided 4/252
    assert stats.mann_whitney_u([1, 2, 3, 4, 6], [5, 7, 8, 9, 10]).p == \
        pytest.approx(4 / 252, rel=1e-9)


def test_exact_mwu_with_ties_is_a_permutation_test() -> None:
    # ties: every one of the C(6,3) = 20 splits enumerated; the split seen
    # and its mirror image are the two most extreme: p = 2/20
    r = stats.mann_whitney_u([1.0, 1.0, 2.0], [3.0, 3.0, 4.0])
    assert r.method == "exact" and r.p == pytest.approx(0.1)
    assert stats.mann_whitney_u([5.0, 5.0, 5.0], [5.0, 5.0, 5.0]).p == 1.0


def test_large_samples_use_the_normal_approximation() -> None:
    rng = random.Random(1)
    a = [rng.random() for _ in range(40)]
    b = [rng.random() + 0.5 for _ in range(40)]
    r = stats.mann_whitney_u(a, b)
    assert r.method == "asymptotic" and r.p < 1e-6


A = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4]
B = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4]


def test_welch_known_values() -> None:
    # textbook example (Welch 1947 data set as used by many references)
    r = stats.welch_t(A, B)
    assert r.statistic == pytest.approx(2.455356398286006, rel=1e-9)
    assert r.p == pytest.approx(0.021378001462866985, rel=1e-9)
    assert r.df == pytest.approx(24.98852929023142, rel=1e-9)


def test_welch_zero_variance() -> None:
    assert stats.welch_t([1, 1, 1], [1, 1, 1]).p == 1.0
    assert stats.welch_t([1, 1, 1], [2, 2, 2]).p == 0.0


def test_t_quantiles_for_the_fits() -> None:
    assert stats.t_ppf(0.975, 10) == pytest.approx(2.2281388519649385, rel=1e-9)
    assert stats.t_cdf(2.0, 3) == pytest.approx(0.9303370157205785, rel=1e-9)


def test_benjamini_hochberg_known_vector() -> None:
    # worked by hand: m = 10, adjusted p_(i) = min over k >= i of p_(k) m / k
    p = [0.01, 0.04, 0.03, 0.005, 0.5, 0.2, 0.15, 0.9, 0.04, 0.012]
    q = stats.bh_adjust(p)
    want = [0.04, 0.2 / 3, 0.2 / 3, 0.04, 5 / 9, 0.25, 1.5 / 7, 0.9, 0.2 / 3, 0.04]
    assert q == pytest.approx(want, rel=1e-9)
    # at FDR 0.05: 0.005, 0.01, 0.012 rejected (0.04 * 10 / 6 = 0.067 > 0.05)
    assert [i for i, x in enumerate(q) if x < 0.05] == [0, 3, 9]
    assert stats.bh_adjust([]) == []


def test_bootstrap_resamples_runs_and_is_seeded() -> None:
    a, b = [100.0, 102.0, 98.0, 101.0], [110.0, 111.0, 109.0, 112.0]
    ci = stats.bootstrap_change_ci(a, b, seed=42)
    assert ci == stats.bootstrap_change_ci(a, b, seed=42)
    assert ci[0] < stats.rel_change(a, b) < ci[1]
    # resampling runs: the interval lies within the extremes of run means
    assert ci[0] >= 100.0 * (109 / 102 - 1) - 1e-9 and ci[1] <= 100.0 * (112 / 98 - 1) + 1e-9
    assert stats.bootstrap_change_ci(a, b, seed=43) != ci


def _series(vals: list[float], walks: int = 10, q: float | None = None,
            ops: int = 0) -> compare.Series:
    s = compare.Series("walk clear_refs ns/PTE" if q is None else "mmap p99 during walks",
                       "ns/PTE" if q is None else "ns", "run", list(vals), q=q)
    s.walks = [walks] * len(vals) if q is None else []
    s.ops = [ops] * len(vals) if q is not None else []
    return s


def test_choice_of_test_from_sizes() -> None:
    three, four = _series([1, 2, 3]), _series([1, 2, 3, 4])
    assert compare.choose_test(four, four, 0.05) == ("MWU exact", "")
    # 3 vs 3: exact MWU cannot reach 0.05; walk medians of >= 5 walks: Welch
    assert compare.choose_test(three, three, 0.05) == ("Welch", "")
    # a side without spread (no stall in any run): not normal, no Welch
    test, why = compare.choose_test(_series([0, 0, 0]), three, 0.05)
    assert test == "" and why == "too few runs to test (3 vs 3, no spread on one side)"
    few_walks = _series([1, 2, 3], walks=2)
    test, why = compare.choose_test(few_walks, three, 0.05)
    assert test == "" and why.startswith("too few runs to test (3 vs 3")
    assert compare.choose_test(_series([1, 2]), three, 0.05)[1] == "too few runs to test (2 vs 3)"
    # victim quantiles: per-run values, not medians of walks -> no Welch
    v3 = _series([1, 2, 3], q=0.99, ops=5000)
    assert compare.choose_test(v3, v3, 0.05)[0] == ""
    v5 = _series([1, 2, 3, 4, 5], q=0.99, ops=5000)
    assert compare.choose_test(v5, v5, 0.05) == ("MWU exact", "")
    # tails: max never; a quantile needs 10 / (1 - q) operations in every run
    assert "tail (max)" in compare.choose_test(_series([1] * 5, q=1.0, ops=10**6),
                                               _series([1] * 5, q=1.0, ops=10**6), 0.05)[1]
    short = _series([1, 2, 3, 4, 5], q=0.999, ops=9999)
    assert "9999 ops in a run < 10000" in compare.choose_test(short, short, 0.05)[1]
    assert compare.ops_needed(0.99) == 1000 and compare.ops_needed(0.9) == 100


def _rows(pairs: list[tuple[list[float], list[float]]], noise: float = 0.0
          ) -> list[compare.Row]:
    rows = [compare.make_row("s", _series(a), _series(b), alpha=0.05, min_change_pct=noise,
                             noise={}, seed=i, iterations=200)
            for i, (a, b) in enumerate(pairs)]
    compare.decide(rows, 0.05)
    return rows


def test_noise_rule_and_calibration() -> None:
    a = [100.0, 100.5, 99.5, 100.2, 99.8]
    b = [103.0, 103.5, 102.5, 103.2, 102.8]   # +3%, perfectly separated
    r, = _rows([(a, b)], noise=5.0)
    assert r.q == pytest.approx(2 / 252) and not r.significant   # below the 5% floor
    r, = _rows([(a, b)], noise=2.0)
    assert r.significant and r.verdict == compare.REGRESSION and r.noise_from == "min change"
    row = compare.make_row("s", _series(a), _series(b), alpha=0.05, min_change_pct=2.0,
                           noise={"s|walk clear_refs ns/PTE": 4.0}, seed=1, iterations=200)
    compare.decide([row], 0.05)
    assert row.noise_pct == 4.0 and row.noise_from == "A/A" and not row.significant
    # the run-to-run spread is noise too: separated by rank, but one run of A
    # is far off (A's %stddev 25% > the 14% change)
    wide_a = [50.0, 99.0, 99.5, 100.0, 100.5]
    wide_b = [101.0, 101.5, 102.0, 102.5, 103.0]
    r, = _rows([(wide_a, wide_b)], noise=2.0)
    assert r.q is not None and r.noise_pct is not None and r.change_pct is not None
    assert r.q < 0.05 and r.noise_from == "runs" and r.noise_pct > r.change_pct
    assert not r.significant


def test_fdr_across_rows() -> None:
    # one separated 5 v 5 row (p 0.0079) among 9 null rows: BH q = 0.079
    rng = random.Random(3)
    sep = ([100.0 + i for i in range(5)], [200.0 + i for i in range(5)])
    nulls = [([rng.gauss(100, 5) for _ in range(5)], [rng.gauss(100, 5) for _ in range(5)])
             for _ in range(9)]
    rows = _rows([sep] + nulls)
    assert rows[0].q is not None
    assert rows[0].p == pytest.approx(2 / 252) and rows[0].q > 0.05 and not rows[0].significant
    # alone it is a finding
    assert _rows([sep])[0].significant


def test_aa_synthetic_runs_rarely_flagged() -> None:
    # 200 comparisons of 12 null metrics each, 3 to 10 runs a side
    rng = random.Random(20261122)
    comparisons_flagged = rows_flagged = rows = 0
    for c in range(200):
        n = rng.choice([3, 4, 5, 10])
        pairs = [([rng.lognormvariate(4.0, 0.1) for _ in range(n)],
                  [rng.lognormvariate(4.0, 0.1) for _ in range(n)]) for _ in range(12)]
        rs = _rows(pairs, noise=5.0)
        f = sum(r.significant for r in rs)
        comparisons_flagged += f > 0
        rows_flagged += f
        rows += len(rs)
    assert comparisons_flagged <= 0.05 * 200 + 3, comparisons_flagged
    assert rows_flagged / rows <= 0.01, rows_flagged


@pytest.mark.parametrize("runs,shift,min_caught", [(10, 1.10, 49), (5, 1.25, 45)])
def test_real_shift_is_flagged(runs: int, shift: float, min_caught: int) -> None:
    # run medians scatter by 3% (KVM-like); 3 metrics move together, 6 do not
    rng = random.Random(7)
    caught = null_flagged = 0
    for i in range(50):
        pairs = [([rng.gauss(100.0, 3.0) for _ in range(runs)],
                  [rng.gauss(100.0 * (shift if k < 3 else 1.0), 3.0) for _ in range(runs)])
                 for k in range(9)]
        rs = _rows(pairs, noise=5.0)
        caught += all(r.verdict == compare.REGRESSION for r in rs[:3])
        null_flagged += sum(r.significant for r in rs[3:])
    assert caught >= min_caught, caught
    assert null_flagged <= 5, null_flagged


def test_improvement_and_combine() -> None:
    a = [100.0, 101.0, 99.0, 100.5, 99.5]
    r, = _rows([(a, [x * 0.75 for x in a])])
    assert r.verdict == compare.IMPROVEMENT
    assert compare.combine([compare.NO_CHANGE, compare.REGRESSION]) == compare.REGRESSION
    assert compare.combine([compare.IMPROVEMENT, compare.NO_CHANGE]) == compare.IMPROVEMENT
    assert compare.combine([compare.NO_VERDICT]) == compare.NO_VERDICT
    assert math.isclose(stats.quantile([5, 1, 3, 2, 4], 0.5), 3)


def test_good_walks_leave_out_failed_and_incomplete_walks() -> None:
    # an incomplete smaps_rollup walk skipped VMAs: its duration is not the
    # mapping's cost and must not reach the comparison
    from pathlib import Path
    from ptwalk_report import results, synthetic
    walks = [{"kind": "smaps_rollup", "ptes": 65536, "duration_ns": 10_000_000},
             {"kind": "smaps_rollup", "ptes": 65536, "duration_ns": 100_000,
              "incomplete": "smaps_rollup reported Rss 4.3 MiB of 260.0 MiB"},
             {"kind": "smaps_rollup", "ptes": 65536, "duration_ns": 1, "error": "ESRCH"}]
    r = results.parse(Path("r.json"), synthetic.minimal(walks))
    assert [w.duration_ns for w in results.good_walks(r)] == [10_000_000]

"""The standard scenario matrix on this host (run by scripts/qualify.sh),
then one test per budget of results/budgets/*.json over all its results."""
from __future__ import annotations

import shlex

import pytest
from ptwalk_report import budgets as bud
from ptwalk_report import matrix
from ptwalk_report import results as res

EXIT_SKIP = 4
MAX_SKIP_FRACTION = 0.05


def test_scenario(scenario: matrix.Scenario, qualify, record_property) -> None:
    out = qualify.out / "runs" / f"{scenario.id}.json"
    print(shlex.join(scenario.argv(qualify.ptwalk, out)))
    rc, path, err = matrix.run_scenario(scenario, qualify.ptwalk, qualify.out)
    if rc == EXIT_SKIP:
        pytest.skip(f"ptwalk: unsupported here: {err}")
    assert rc == 0, f"ptwalk exit {rc}: {err}"
    r = res.load([path])[0]
    record_property("backend", r.backend.value)
    assert r.complete, f"incomplete result: {r.error or r.interrupted}"


@pytest.mark.parametrize("budget", bud.load_budgets(matrix.qualify_config().budgets),
                         ids=lambda b: b["id"])
def test_budget(budget: dict, qualify) -> None:
    runs = qualify.out / "runs"
    results = res.load([runs], strict=False) if runs.is_dir() else []
    if not results:
        pytest.skip("no scenario results to check")
    vs = bud.evaluate([budget], results)
    print(bud.render(vs))
    failed = [v for v in vs if v.verdict == bud.FAIL]
    assert not failed, bud.render(failed)


def test_sweep_spans_two_decades(qualify) -> None:
    """The runs of this qualify measured every walk kind over >= 2 decades
    of entries on each backing (thp: of PMD leaves, which walk-cost-fit
    fits there), unless the host could not hold the sizes (then the report
    says 'not extrapolated')."""
    from ptwalk_report.report import cost_groups
    m = matrix.load_matrix()
    runs = qualify.out / "runs"
    results = res.load([runs], strict=False) if runs.is_dir() else []
    if not results:
        pytest.skip("no scenario results to check")
    planned = matrix.entries_span(matrix.select(m, qualify.mode, matrix.mem_available()),
                                  m["sweep"]["base_entries"])
    need = 10 ** m["sweep"]["min_decades"]
    spans = {(g.kind.value, g.backing.value): g.span for g in cost_groups(results)}
    leaves: dict[tuple[str, str], list[float]] = {}
    for r in results:
        if r.usable and r.scenario.backing == res.Backing.thp:
            for w in res.good_walks(r):
                leaves.setdefault((w.kind.value, "thp"), []).append(w.pmd_leaves or 0)
    for k, xs in leaves.items():
        spans[k] = max(xs) / min(xs) if min(xs) > 0 else 0.0
    for (kind, backing), want in sorted(planned.items()):
        if want < need:
            continue
        got = spans.get((kind, backing), 0.0)
        print(f"{kind}/{backing}: {'PMD leaves' if backing == 'thp' else 'entries'} "
              f"span {got:.0f}x")
        assert got >= need, f"{kind}/{backing}: measured span {got:.1f}x < {need}x"


def test_skip_fraction(qualify) -> None:
    """Quiet on a healthy host: at most max_skip_fraction (5%) of the
    budgets' verdicts SKIP, each with its reason. Skips that only say the
    backend cannot observe a figure (no stall attribution without tracefs
    or the module) are the backend's, listed but not counted."""
    runs = qualify.out / "runs"
    results = res.load([runs], strict=False) if runs.is_dir() else []
    if not results:
        pytest.skip("no scenario results to check")
    vs = bud.evaluate(bud.load_budgets(qualify.budgets), results)
    skips = [v for v in vs if v.verdict == bud.SKIP]
    print(bud.render(skips) if skips else "no SKIP")
    assert all(v.detail for v in skips), "a SKIP without its reason"
    own = [v for v in vs if not (v.verdict == bud.SKIP and v.detail.startswith("backend "))]
    frac = bud.skip_fraction(own)
    assert frac <= MAX_SKIP_FRACTION, (f"{frac:.1%} of {len(own)} verdicts SKIP "
                                       f"(> {MAX_SKIP_FRACTION:.0%})")

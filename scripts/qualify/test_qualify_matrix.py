"""The standard scenario matrix on this host (run by scripts/qualify.sh),
then one test per budget of results/budgets/*.json over all its results."""
from __future__ import annotations

import json
import shlex

import pytest
from ptwalk_report import budgets as bud
from ptwalk_report import matrix
from ptwalk_report import results as res

EXIT_SKIP = 4


def test_scenario(scenario: matrix.Scenario, qualify, record_property) -> None:
    out = qualify.out / "runs" / f"{scenario.id}.json"
    print(shlex.join(scenario.argv(qualify.ptwalk, out)))
    rc, path, err = matrix.run_scenario(scenario, qualify.ptwalk, qualify.out)
    if rc == EXIT_SKIP:
        pytest.skip(f"ptwalk: unsupported here: {err}")
    assert rc == 0, f"ptwalk exit {rc}: {err}"
    doc = json.loads(path.read_text(encoding="utf-8"))
    record_property("backend", doc.get("backend"))
    assert doc.get("complete"), f"incomplete result: {doc.get('error') or doc.get('interrupted')}"


@pytest.mark.parametrize("budget", bud.load_budgets(matrix.qualify_config().budgets), ids=lambda b: b["id"])
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
    of entries on distinct 4 KiB pages (the fit's sweep), unless the host
    could not hold the sizes (then the report says 'not extrapolated')."""
    from ptwalk_report.report import cost_groups
    m = matrix.load_matrix()
    runs = qualify.out / "runs"
    results = res.load([runs], strict=False) if runs.is_dir() else []
    if not results:
        pytest.skip("no scenario results to check")
    planned = matrix.entries_span(matrix.select(m, qualify.mode, matrix.mem_available()),
                                  m["sweep"]["base_entries"])
    need = 10 ** m["sweep"]["min_decades"]
    spans = {(g.kind, g.backing): g.span for g in cost_groups(results)}
    for (kind, backing), want in sorted(planned.items()):
        if backing != "anon" or want < need:
            continue
        got = spans.get((kind, backing), 0.0)
        print(f"{kind}/{backing}: entries span {got:.0f}x")
        assert got >= need, f"{kind}/{backing}: measured entries span {got:.1f}x < {need}x"

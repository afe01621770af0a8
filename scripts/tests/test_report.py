"""ptwalk-report on recorded results: Markdown + PNGs, the fit (the
selftests' C code through ctypes) and its prediction interval, the
"less than a decade: not extrapolated" rule, the cost plot showing a real
sweep, the interval guidance, kernels bars, the 72-column mailing-list text."""
from __future__ import annotations

import ctypes
import random
import subprocess
import sys
from pathlib import Path

import pytest

from ptwalk_report import fit, report, synthetic
from ptwalk_report import results as res
from ptwalk_report.upstream import render_upstream

DATA = Path(__file__).resolve().parent / "data" / "results"
TOOL = Path(__file__).resolve().parents[1] / "ptwalk-report"
SWEEP = [DATA / "sweep" / f"clear_refs-anon-{s}.json.gz" for s in ("32M", "64M", "256M")]
# a recorded QUICK=1 qualify sweep of clear_refs over 4 KiB anon: 1 MiB .. 512 MiB
SIZES = sorted((DATA / "sizes").glob("*.json.gz"))
REPO = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_fit_known_values() -> None:
    # numpy.polyfit + scipy.stats.t.ppf(0.975, 6) on the same points
    xs = [1, 2, 3, 4, 5, 6, 7, 8]
    ys = [2.1, 3.9, 6.2, 7.8, 10.1, 12.2, 13.8, 16.1]
    f = fit.fit(xs, ys)
    assert f is not None
    assert f.a == pytest.approx(0.035714285714284026, abs=1e-9)
    assert f.b == pytest.approx(1.9976190476190483, rel=1e-12)
    y, lo, hi = f.interval(20)
    assert (lo, hi) == pytest.approx((38.83467123565515, 41.141519240535345), rel=1e-9)


def test_fit_synthetic_sweep_against_scipy() -> None:
    """Known slope (30 ns/entry), fixed cost (150 us), noise with a known
    seed over three decades: slope, intercept, R² as scipy's linregress, the
    prediction interval as its textbook formula, the log-log slope near 1."""
    import numpy as np
    from scipy import stats
    rng = np.random.default_rng(7)
    xs = np.repeat(np.geomspace(1e3, 1e6, 7), 3)
    ys = 150e3 + 30.0 * xs + rng.normal(0, 0.03, xs.size) * 30.0 * xs
    f = fit.fit(list(xs), list(ys))
    ref = stats.linregress(xs, ys)
    assert f is not None and f.n == 21 and f.extrapolates
    assert f.b == pytest.approx(ref.slope, rel=1e-10) and f.b == pytest.approx(30.0, rel=0.05)
    assert f.a == pytest.approx(ref.intercept, rel=1e-6, abs=1e-3)
    assert f.r2 == pytest.approx(ref.rvalue ** 2, rel=1e-12) and f.r2 > 0.99
    resid = ys - (ref.intercept + ref.slope * xs)
    s = np.sqrt((resid ** 2).sum() / (xs.size - 2))
    x0 = 25e6
    half = stats.t.ppf(0.975, xs.size - 2) * s * np.sqrt(
        1 + 1 / xs.size + (x0 - xs.mean()) ** 2 / ((xs - xs.mean()) ** 2).sum())
    y, lo, hi = f.interval(x0)
    assert (lo, hi) == pytest.approx((y - half, y + half), rel=1e-9)
    assert f.exponent == pytest.approx(stats.linregress(np.log(xs), np.log(ys)).slope, rel=1e-9)
    assert f.exponent is not None
    assert 0.7 < f.exponent < 0.9      # the fixed cost bends the small sizes


def test_fit_exact_line_and_power_law() -> None:
    xs = [1e3, 1e4, 1e5, 1e6]
    f = fit.fit(xs, [30.0 * x for x in xs])
    assert f is not None and f.b == pytest.approx(30.0) and f.r2 == pytest.approx(1.0)
    assert f.exponent == pytest.approx(1.0)
    g = fit.fit(xs, [x ** 0.5 for x in xs])
    assert g is not None and g.exponent == pytest.approx(0.5)


def test_fit_needs_different_sizes() -> None:
    # one size: entries drift by a few pages; no slope from that
    assert fit.fit([1000, 1000, 1000, 1010], [30000, 33000, 27000, 30300]) is None
    assert fit.fit([1000, 5000], [1.0, 2.0]) is None          # two points: no interval
    f = fit.fit([1000, 2000, 4000], [1.0, 2.0, 4.1])
    assert f is not None and not f.extrapolates and f.span == pytest.approx(4.0)


def test_decade_rule() -> None:
    assert not fit.extrapolates(1000, 9999)
    assert fit.extrapolates(1000, 10_000)
    assert not fit.extrapolates(0, 10_000)


def test_fit_is_the_selftests_code() -> None:
    """One implementation: fit.py compiles selftests/ptwalk_fit.c (keyed by
    its hash), the selftests link the same file, and nothing else fits."""
    assert fit.SRC == REPO / "selftests" / "ptwalk_fit.c"
    assert "ptw_fit_linear(" in (REPO / "selftests" / "ptwalk_cost.c").read_text()
    mk = (REPO / "selftests" / "Makefile").read_text()
    assert "ptwalk_fit.c" in mk.split("UTIL_SRCS :=")[1].split("\nLOCAL_HDRS")[0]
    assert "$< $(UTIL_SRCS) $(LDFLAGS)" in mk
    assert fit.library().ptw_fit_abi() == fit.ABI * 1000 + ctypes.sizeof(fit._CFit)
    for p in (REPO / "scripts" / "ptwalk_report").glob("*.py"):
        assert "sxx =" not in p.read_text() and "polyfit" not in p.read_text(), p


def _synthetic_sweep(tmp: Path, sizes_mib: list[int], runs: int = 2) -> list[Path]:
    rng = random.Random(3)
    files = []
    for mib in sizes_mib:
        for i in range(runs):
            doc = synthetic.make_result(rng=rng, size_bytes=mib << 20, ptes=mib * 256 + 700,
                                        walks=5, ns_per_pte=30.0, spread=0.02)
            files.append(synthetic.write(doc, tmp / "in" / f"clear_refs-anon-{mib}M-{i}.json"))
    return files


def test_less_than_a_decade_is_not_extrapolated(tmp_path: Path) -> None:
    md = report.generate(res.load(_synthetic_sweep(tmp_path, [16, 32, 64])),
                         tmp_path / "rep")[0].read_text()
    ext = md.split("## Extrapolation")[1].split("\n## ")[0]
    assert "not extrapolated: measured sizes span 3.6x (< 10x, a decade)" in ext
    assert "| 25M |" not in ext and "| 250M |" not in ext


def test_a_decade_or_more_is_extrapolated_with_interval(tmp_path: Path) -> None:
    md = report.generate(res.load(_synthetic_sweep(tmp_path, [1, 16, 256])),
                         tmp_path / "rep")[0].read_text()
    ext = md.split("## Extrapolation")[1].split("\n## ")[0]
    assert "not extrapolated:" not in ext
    row = next(x for x in ext.splitlines() if "| 25M |" in x)
    # 30 ns/entry at 25M entries: 750 ms, inside its interval
    dur = row.split("|")[7]
    assert dur.strip().startswith(("74", "75", "76")) and "[" in dur, row
    assert "| 250M |" in ext
    sizes = md.split("## Sizes measured")[1].split("\n## ")[0]
    assert "| anon | 1 MiB | distinct | 2 |" in sizes
    assert "| anon | 256 MiB | distinct | 2 |" in sizes


def test_report_on_recorded_results(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    p = subprocess.run([sys.executable, str(TOOL), *map(str, SWEEP), str(DATA / "sweep" /
                        "clear_refs-thp-256M.json.gz"), "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    md = (out / "report.md").read_text()
    for heading in ("## Walk cost", "## Extrapolation", "## Victim latency outside vs during walks",
                    "## Scan interval and page size", "## Timelines"):
        assert heading in md
    # one point per run; 3 sizes spanning 7.5x: fitted, but not extrapolated
    assert "| 6.18.44-fc-v595 | clear_refs | anon | 3 | 45 | 8,794-66,122 (7.5x) |" in md
    assert "not extrapolated: measured sizes span 7.5x (< 10x, a decade)" in md
    assert "| anon | 32 MiB | distinct | 1 |" in md and "| thp | 256 MiB | distinct | 1 |" in md
    assert "tracepoint: mmap_lock tracepoints" in md
    pngs = sorted(out.glob("*.png"))
    assert {p.name for p in pngs} >= {"walk_cost_anon.png", "walk_cost_thp.png",
                                      "victims_clear_refs_anon_256M_fault_mmap_read.png",
                                      "timeline_clear_refs_thp_256M_fault_mmap_read.png"}
    for png in pngs:
        assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 10_000
        assert f"]({png.name})" in md


def test_extrapolation_and_interval_figures() -> None:
    rs = res.load(SIZES)
    g = next(c for c in report.cost_groups(rs) if c.kind == res.WalkKind.clear_refs)
    assert g.fit is not None and g.extrapolates and g.span >= 100
    y, lo, hi = g.fit.interval(25_000_000)
    assert 0 < lo < y < hi and 1e8 < y < 1e11           # 0.1 s .. 100 s, not ms or hours
    assert g.entries_at(100 << 30) == pytest.approx(26.2e6, rel=0.1)
    md = "\n".join(report._interval_section(res.group(rs), report.cost_groups(rs)))
    assert "| clear_refs/anon/512M/fault,mmap,read | mmap |" in md
    assert "T >= W * q / 1e-5" in md
    md = "\n".join(report._interval_section(res.group(res.load(SWEEP)),
                                            report.cost_groups(res.load(SWEEP))))
    assert "Left out (a walk kind's fit does not extrapolate" in md


def test_cost_plot_shows_a_real_sweep(tmp_path: Path) -> None:
    """The recorded sweep spans >= 2 decades of entries, and so does the
    plotted data: the x range of the run points drawn, which walk_cost
    stores in the PNG's text chunk."""
    from PIL import Image
    assert len(SIZES) >= 4
    _, pngs = report.generate(res.load(SIZES), tmp_path / "rep")
    png = tmp_path / "rep" / "walk_cost_anon.png"
    assert png in pngs
    im = Image.open(png)
    lo, hi = map(float, im.text["ptwalk-x-range"].split())
    assert hi / lo >= 100, (lo, hi)
    assert int(im.text["ptwalk-runs"]) == len(SIZES)
    assert im.size[0] > 1000


def test_kernels_section_with_two_releases(tmp_path: Path) -> None:
    rng = random.Random(1)
    files = []
    for rel, npp in (("6.1.0", 40.0), ("6.18.0", 30.0)):
        for i in range(2):
            files.append(synthetic.write(synthetic.make_result(rng=rng, release=rel, walks=4,
                                                               ns_per_pte=npp),
                                         tmp_path / "in" / f"{rel}-{i}.json"))
    md_path, pngs = report.generate(res.load(files), tmp_path / "rep")
    md = md_path.read_text()
    assert "## Across kernels" in md and "| clear_refs/anon | " in md
    assert (tmp_path / "rep" / "kernels_ns_per_entry.png") in pngs


def test_upstream_text_fits_72_columns() -> None:
    for f in (DATA / "sweep" / "cadvisor-shmem-128M.json.gz", SWEEP[0]):
        p = subprocess.run([sys.executable, str(TOOL), "--upstream", str(f)],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        lines = p.stdout.splitlines()
        assert max(len(x) for x in lines) <= 72, max(lines, key=len)
        text = p.stdout
        assert "Kernel:   6.18.44-fc-v595" in text and "CONFIG_PER_VMA_LOCK=y" in text
        assert "Reproducer" in text and "  # ptwalk run --size" in text
        assert "Top kernel symbols" in text
        assert "\t" not in text and "**" not in text


def test_upstream_prints_perf_symbols_when_present(tmp_path: Path) -> None:
    doc = synthetic.read(SWEEP[0])
    doc["perf"] = {"symbols": [{"symbol": "clear_refs_pte_range", "percent": 41.5},
                               {"symbol": "_raw_spin_lock", "percent": 7.25}]}
    f = synthetic.write(doc, tmp_path / "p.json")
    out = render_upstream(res.load([f])[0])
    assert "Top kernel symbols (perf):" in out and " 41.50%  clear_refs_pte_range" in out


def test_report_bad_input() -> None:
    p = subprocess.run([sys.executable, str(TOOL), "/nonexistent"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1


def test_upstream_long_argv_stays_exact_and_narrow(tmp_path: Path) -> None:
    doc = synthetic.read(SWEEP[0])
    doc["argv"] = ["ptwalk", "run", "--size", "2048M", "--dir", "/very/" + "long" * 30 + "/dir",
                   "--out", "/results/vm/6.18/20261121T095308Z/runs/clear_refs-anon-2048M.json"]
    out = render_upstream(res.load([synthetic.write(doc, tmp_path / "r.json")])[0])
    assert max(len(x) for x in out.splitlines()) <= 72
    block = out.split("Reproducer (as root, from a ptwalk build):\n")[1].split("\n\n")[0]
    # what a shell reads: backslash-newline removed, leading "  #" comment marker dropped
    shell = block.replace("\\\n", "").replace("  # ", "", 1)
    assert shell.split() == ["ptwalk", "run", "--size", "2048M", "--dir",
                             "/very/" + "long" * 30 + "/dir", "--out",
                             "clear_refs-anon-2048M.json"]


def test_report_says_distinct_and_aliased_and_checks_the_fit(tmp_path: Path) -> None:
    """Aliased runs are named as such, kept out of the distinct-page fit,
    and compared with what that fit predicts at their entries."""
    files = _synthetic_sweep(tmp_path, [1, 16, 256])
    doc = synthetic.make_result(rng=random.Random(5), backing="alias", size_bytes=100 << 30,
                                ptes=26_214_400, walks=3, ns_per_pte=25.0, spread=0.01)
    doc["scenario"].update(aliased=True, physical_bytes=1 << 30, alias_factor=100)
    for w in doc["walks"]:
        w["ns_per_pte_corrected"] = w["ns_per_pte"] * 1.2
    files.append(synthetic.write(doc, tmp_path / "in" / "clear_refs-alias-100G.json"))
    md_path, pngs = report.generate(res.load(files), tmp_path / "rep")
    md = md_path.read_text()
    sizes = md.split("## Sizes measured")[1].split("\n## ")[0]
    assert "| alias | 100 GiB | aliased | 1 |" in sizes and "| anon | 1 MiB | distinct |" in sizes
    anon = next(g for g in report.cost_groups(res.load(files)) if g.backing == res.Backing.anon)
    assert anon.fit is not None and anon.fit.n == 6           # the aliased run is not in it
    row = next(x for x in md.splitlines() if x.startswith("| 6.18.0 | clear_refs | 26,214,400 |"))
    cells = [c.strip() for c in row.split("|")]

    def ms(c: str) -> float:
        v = c.split()[0]
        return float(v[:-2]) if v.endswith("ms") else float(v[:-1]) * 1e3
    assert 620 < ms(cells[4]) < 690 and 740 < ms(cells[5]) < 830   # 25 ns/PTE, x1.2 corrected
    assert 750 < ms(cells[6]) < 830 and "[" in cells[6]            # the 30 ns/entry fit
    assert tmp_path / "rep" / "walk_cost_alias.png" in pngs

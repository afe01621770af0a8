# SPDX-License-Identifier: GPL-2.0
"""ptwalk compare picks the A/A calibration measured under the results'
clock (a machine's aa-noise.json, a VM's aa-noise-vm-ACCEL-CLOCK.json), takes
the minimum change from it, and says which it used."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from ptwalk_report import compare
from ptwalk_report import results as res

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data" / "results"
ICOUNT = {"accel": "tcg", "clock": "icount", "cpu": "max,la57=off", "qemu": "10.0.2"}


def put(d: Path, vm: dict[str, str] | None) -> Path:
    d.mkdir()
    for f in sorted((DATA / "a").glob("*.json.gz")):
        doc = json.loads(gzip.decompress(f.read_bytes()))
        if vm is not None:
            doc.setdefault("host", {})["vm"] = vm
        (d / f.name.removesuffix(".gz")).write_text(json.dumps(doc))
    return d


def cal(path: Path, min_change: float | None, noise: dict[str, float]) -> Path:
    doc: dict[str, object] = {"schema": compare.NOISE_SCHEMA, "noise_pct": noise}
    if min_change is not None:
        doc["min_change_pct"] = min_change
    path.write_text(json.dumps(doc))
    return path


def test_the_file_of_the_results_clock_is_chosen(tmp_path: Path) -> None:
    budgets = tmp_path / "budgets"
    budgets.mkdir()
    cal(budgets / "aa-noise.json", None, {"s|m": 40.0})
    cal(budgets / "aa-noise-vm-tcg-icount.json", 0.4, {"s|m": 0.3})
    vm = res.load([put(tmp_path / "vm", ICOUNT)])
    host = res.load([put(tmp_path / "host", None)])
    rt = res.load([put(tmp_path / "rt", dict(ICOUNT, clock="realtime"))])

    c = compare.choose_noise(vm, budgets=budgets)
    assert c.path == budgets / "aa-noise-vm-tcg-icount.json"
    assert (c.min_change_pct, c.min_change_from) == (0.4, "aa-noise-vm-tcg-icount.json")
    assert c.noise == {"s|m": 0.3} and "clock icount" in c.why
    c = compare.choose_noise(vm, budgets=budgets, min_change=3.0)  # --min-change wins
    assert (c.min_change_pct, c.min_change_from) == (3.0, "--min-change")

    c = compare.choose_noise(host, budgets=budgets)  # no min_change_pct: the fixed 5%
    assert c.path == budgets / "aa-noise.json"
    assert (c.min_change_pct, c.min_change_from) == (5.0, "default")

    c = compare.choose_noise(rt, budgets=budgets)  # never measured: none, and it says so
    assert c.path is None and c.noise == {} and c.min_change_pct == 5.0
    assert "aa-noise-vm-tcg-realtime.json absent" in c.why

    c = compare.choose_noise(vm + host, budgets=budgets)
    assert c.path is None and "mixed clocks" in c.why


def test_compare_names_the_calibration_it_used(tmp_path: Path) -> None:
    a, b = put(tmp_path / "a", ICOUNT), put(tmp_path / "b", ICOUNT)
    p = subprocess.run([sys.executable, str(REPO / "scripts/ptwalk-compare"), str(a), str(b),
                        "--json", str(tmp_path / "c.json")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode in (0, 1), p.stderr
    want = compare.noise_file_for(res.load([a])[0].measured_on)
    assert want.name == "aa-noise-vm-tcg-icount.json"
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("A/A calibration chosen"))
    assert "clock icount" in line
    doc = json.loads((tmp_path / "c.json").read_text())
    if want.exists():
        mc = json.loads(want.read_text())["min_change_pct"]
        assert f"max({mc:g}% (aa-noise-vm-tcg-icount.json)" in p.stdout
        assert doc["noise_file"].endswith("aa-noise-vm-tcg-icount.json")
        assert doc["min_change_pct"] == mc
    else:
        assert doc["noise_file"] == "none" and doc["min_change_pct"] == 5.0


def test_bad_min_change_in_a_calibration_exit_2(tmp_path: Path) -> None:
    a = put(tmp_path / "a", None)
    bad = tmp_path / "n.json"
    bad.write_text(json.dumps({"schema": compare.NOISE_SCHEMA, "min_change_pct": "x",
                               "noise_pct": {}}))
    p = subprocess.run([sys.executable, str(REPO / "scripts/ptwalk-compare"), str(a), str(a),
                        "--noise", str(bad)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "bad A/A calibration value" in p.stderr

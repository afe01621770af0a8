# SPDX-License-Identifier: GPL-2.0
"""`ptwalk monitor --serve` scraped by Debian's real Prometheus: the walker,
the target and a long hold are visible through the query API, the shipped
alert fires, the recording rule holds the worst stall; the textfile output
passes `promtool check metrics`."""
from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from monitor_util import (Prometheus, free_port, http_get, kill, require, require_root,
                          run_walker, start_monitor, start_target, stop, unique_comm,
                          wait_http)
from ptwalk_cli import REPO

RULES = REPO / "deploy" / "prometheus" / "ptwalk-rules.yml"


def _poll(what: str, timeout: float, f: Any) -> Any:
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        last = f()
        if last:
            return last
        time.sleep(1)
    raise AssertionError(f"{what}: not seen within {timeout} s (last: {last!r})")


def test_prometheus_scrapes_walker_target_hold_and_fires_alert(tmp_path: Path) -> None:
    require_root()
    require(shutil.which("prometheus") is not None and shutil.which("promtool") is not None,
            "Debian's prometheus is not installed (scripts/deps.sh prometheus)")
    rc = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True)
    assert rc.returncode == 0, rc.stdout + rc.stderr

    port = free_port()
    mon = start_monitor(tmp_path, "--serve", f"127.0.0.1:{port}", "--quiet")
    prom = None
    run = None
    try:
        wait_http(f"http://127.0.0.1:{port}/metrics", mon, 30)
        prom = Prometheus(tmp_path, port, RULES)
        prom.ready()
        # it is our instance (its own data dir), not an installed service
        flags = prom.api("status/flags")
        assert flags["storage.tsdb.path"] == str(prom.dir / "data")

        # a target whose page tables take a clear_refs walk well over 100 ms
        # (one 256 MiB memfd mapped 96 times: 6.3M PTEs), mapping and
        # unmapping so that it waits behind each walk; a walker of our own
        tcomm, wcomm = unique_comm("pwt-tgt"), unique_comm("pwt-walk")
        target, tpid = start_target(tcomm, 256, 96, "--mapper")
        run = target
        walks = run_walker(wcomm, tpid, "clear_refs", 1.0, 6)
        sel = f'walker="{wcomm}",target="{tcomm}"'
        seen = _poll("walks of the target by the walker", 60,
                     lambda: prom.query(f'sum(ptwalk_monitor_walks_total{{{sel}}})'))

        # clear_refs takes the lock for write; each walk is one hold
        def count() -> float:
            assert prom is not None
            r = prom.query(f'sum(ptwalk_monitor_walks_total{{{sel},mode="write"}})')
            return float(r[0]["value"][1]) if r else 0.0
        end = time.monotonic() + 30
        while count() < len(walks) and time.monotonic() < end:
            time.sleep(1)
        n = count()
        assert n <= len(walks), (n, len(walks), seen)  # never a walk too many
        if n < len(walks):
            # only a kernel ring overrun may hide a walk, and it is counted
            lost = float(prom.query("ptwalk_monitor_lost_events_total")[0]["value"][1])
            assert lost > 0 and n >= len(walks) // 2, (n, len(walks), lost)
        hold = _poll("a hold above 100 ms", 60, lambda: [r for r in prom.query(
            f'ptwalk:target_walk_hold_seconds:max5m{{target="{tcomm}"}}')
            if float(r["value"][1]) > 0.1])
        alert = _poll("the PtwalkLongPageTableWalk alert firing", 60,
                      lambda: [a for a in prom.api("alerts")["alerts"]
                               if a["labels"]["alertname"] == "PtwalkLongPageTableWalk"
                               and a["labels"].get("target") == tcomm
                               and a["labels"].get("walker") == wcomm
                               and a["state"] == "firing"])
        assert alert
        # the mapper's waits behind the walks reach the worst-stall rule
        stall = _poll("the worst stall per target recorded", 60, lambda: [r for r in prom.query(
            f'ptwalk:target_stall_seconds:max5m{{target="{tcomm}"}}')
            if float(r["value"][1]) > 0])
        # the independent view: the walker timed each write(2) itself; the
        # lock is taken inside it, so no hold is longer than the longest write
        longest = max(w["ns"] for w in walks) / 1e9
        h = float(hold[0]["value"][1])
        assert 0.5 * longest <= h <= longest + 0.002, (h, longest)
        total = _poll("hold sum", 10, lambda: prom.query(
            f'sum(ptwalk_monitor_walk_hold_seconds_sum{{{sel},mode="write"}})'))
        tsum = float(total[0]["value"][1])
        wsum = sum(w["ns"] for w in walks) / 1e9
        assert tsum <= wsum + 0.002 * len(walks), (tsum, wsum)
        assert tsum >= 0.5 * wsum * n / len(walks), (tsum, wsum, n)
        # a waiter cannot wait longer than the walk it waited behind (+ its
        # own turn): bounded by the longest write
        assert float(stall[0]["value"][1]) <= longest + 0.05
        # the monitor's own health is exported
        assert prom.query("ptwalk_monitor_cpu_seconds_total")
        assert prom.query("ptwalk_monitor_lost_events_total")
    finally:
        if run is not None:
            kill(run)
        if prom is not None:
            prom.stop()
        rc_mon = stop(mon)
    assert rc_mon == 0, (tmp_path / "monitor.log").read_text()
    assert prom is not None and prom.proc.returncode is not None
    with pytest.raises(OSError):
        http_get(f"http://127.0.0.1:{port}/metrics", timeout=2)


def test_textfile_passes_promtool_and_is_complete(tmp_path: Path) -> None:
    require_root()
    require(shutil.which("promtool") is not None,
            "promtool (Debian's prometheus) is not installed (scripts/deps.sh prometheus)")
    d = tmp_path / "textfile"
    d.mkdir()
    tcomm, wcomm = unique_comm("pwt-tgt"), unique_comm("pwt-walk")
    target, tpid = start_target(tcomm, 64, 8)
    mon = start_monitor(tmp_path, "--textfile", str(d), "--textfile-interval", "500ms", "--quiet")
    try:
        time.sleep(2)
        run_walker(wcomm, tpid, "clear_refs", 0.3, 4)
        time.sleep(1.5)
    finally:
        rc = stop(mon)
        kill(target)
    assert rc == 0, (tmp_path / "monitor.log").read_text()
    # only the final file: no temporary file left behind
    assert [p.name for p in d.iterdir()] == ["ptwalk_monitor.prom"]
    text = (d / "ptwalk_monitor.prom").read_text()
    assert text.endswith("\n")
    chk = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                         text=True, timeout=60)
    assert chk.returncode == 0, chk.stdout + chk.stderr
    lines = [ln for ln in text.splitlines()
             if ln.startswith("ptwalk_monitor_walks_total{")
             and f'walker="{wcomm}"' in ln and f'target="{tcomm}"' in ln]
    # each clear_refs write is one write hold (the kind is "clear_refs" when
    # the fd table was read in flight, else "unknown")
    assert sum(float(ln.rsplit(" ", 1)[1]) for ln in lines if 'mode="write"' in ln) == 4, lines

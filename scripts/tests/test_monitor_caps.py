# SPDX-License-Identifier: GPL-2.0
"""`ptwalk monitor` runs with least privilege: once its BPF programs and perf
events are open, every thread keeps CAP_DAC_READ_SEARCH and CAP_SYS_PTRACE
(the fd table of a walker of another user) and nothing else, in its
effective, permitted and bounding sets; and with only those it still names
the target of a walk by another user's process."""
from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from monitor_util import (WORKLOADS, free_port, kill, require_root, stop, unique_comm,
                          wait_http)
from ptwalk_cli import PTWALK, load, tagged_env

CAP_DAC_READ_SEARCH = 2
CAP_SYS_PTRACE = 19
KEPT = (1 << CAP_DAC_READ_SEARCH) | (1 << CAP_SYS_PTRACE)
# the walker and its target: another user than the monitor's
AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"]


def _caps(pid: int) -> dict[int, dict[str, int]]:
    """tid -> CapInh/CapPrm/CapEff/CapBnd/CapAmb of every thread."""
    out: dict[int, dict[str, int]] = {}
    for st in Path(f"/proc/{pid}/task").glob("*/status"):
        try:
            text = st.read_text()
        except FileNotFoundError:
            continue  # exited meanwhile
        out[int(st.parent.name)] = {k: int(v, 16) for k, v in
                                    (ln.split(":\t") for ln in text.splitlines()
                                     if ln.startswith("Cap"))}
    return out


def _target(comm: str) -> tuple[subprocess.Popen[str], int]:
    p = subprocess.Popen([*AS_NOBODY, "/usr/bin/python3", str(WORKLOADS), "target", "--comm", comm,
                          "--physical", "256", "--copies", "16"],
                         stdout=subprocess.PIPE, text=True, env=tagged_env(), cwd="/")
    assert p.stdout is not None
    pid = int(p.stdout.readline())
    assert p.stdout.readline().strip() == "ready"
    return p, pid


def _walk(comm: str, pid: int) -> list[dict[str, int]]:
    r = subprocess.run([*AS_NOBODY, "/usr/bin/python3", str(WORKLOADS), "walker", "--comm", comm,
                        "--pid", str(pid), "--file", "smaps", "--interval", "1.0",
                        "--count", "5"],
                       capture_output=True, text=True, timeout=300, env=tagged_env(), cwd="/")
    assert r.returncode == 0, r.stderr
    walks = [json.loads(ln) for ln in r.stdout.splitlines()]
    assert walks and all("error" not in w for w in walks), walks
    return walks


@pytest.mark.parametrize("backend", ["bpf", "tracepoint"])
def test_monitor_keeps_only_what_naming_needs(tmp_path: Path, backend: str) -> None:
    require_root()
    tcomm, wcomm = unique_comm("pwt-capt"), unique_comm("pwt-capw")
    target, tpid = _target(tcomm)
    port = free_port()
    log = open(tmp_path / "monitor.log", "w")
    mon = subprocess.Popen([str(PTWALK), "monitor", "--backend", backend,
                            "--serve", f"127.0.0.1:{port}", "--out", str(tmp_path / "m.json")],
                           stdout=log, stderr=subprocess.STDOUT, text=True, env=tagged_env())
    try:
        wait_http(f"http://127.0.0.1:{port}/metrics", mon, 60)
        # the start line follows the drop
        end = time.monotonic() + 30
        while "watching mmap_lock holds" not in (tmp_path / "monitor.log").read_text():
            assert mon.poll() is None and time.monotonic() < end, \
                (tmp_path / "monitor.log").read_text()
            time.sleep(0.1)
        caps = _caps(mon.pid)
        assert len(caps) > 1, caps  # the server's, prober's and readers' threads too
        for tid, c in caps.items():
            assert (c["CapEff"], c["CapPrm"], c["CapBnd"]) == (KEPT, KEPT, KEPT), (tid, c)
            assert c["CapInh"] == 0 and c["CapAmb"] == 0, (tid, c)
        walks = _walk(wcomm, tpid)
        time.sleep(1)  # the last walk's grace period
        mon.send_signal(signal.SIGINT)
        assert stop(mon, timeout=60) == 0, (tmp_path / "monitor.log").read_text()
    finally:
        kill(target)
        if mon.poll() is None:
            stop(mon)
    m = load(tmp_path / "m.json")
    assert m["backend"] == backend
    wpid = walks[0]["pid"]
    mine = [h for h in m["holds"] if h["holder"]["tgid"] == wpid]
    assert mine, f"no hold by the walker {wpid}: {m['holds'][:5]}"
    named = [h for h in mine if h["target"]["tgid"] == tpid]
    # another user's walk of another user's process, named as before the drop
    assert named, mine
    assert all(h["target"]["comm"] == tcomm and not h["target"]["self"] for h in named), named
    # and the walker's fd table, the kept capabilities' reason, was read:
    # without them every hold here was kind "unknown", no walk file (20 of 20)
    assert any(h["kind"] == "smaps" and h.get("walk_file") == f"/proc/{tpid}/smaps"
               for h in named), named

# SPDX-License-Identifier: GPL-2.0
"""A reference table's runs (scripts/vm/table-runs.sh) in one guest boot or
on this host, and what each run exited with: shared by
scripts/ptwalk-stall-table and scripts/ptwalk-working-set-table."""
from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

from ptwalk_vm import vm as pipeline

REPO = Path(__file__).resolve().parents[2]
SCRIPT = "scripts/vm/table-runs.sh"


def in_guest(cfg: Any, k: Any, table: str, size: str, items: list[str], *, clock: str,
             timeout: float, sdir: Path, commands: list[str]) -> Any:
    """The runs in one boot of kernel K: their files and the guest's
    output (guest.txt) under SDIR, the command appended to COMMANDS."""
    ko = "/ptwalk/module/ptwalk.ko" if k.ko else "-"
    cmd = (f"sh /ptwalk/{SCRIPT} /ptwalk/build/ptwalk /results {size} {ko} {table} "
           + " ".join(items))
    commands.append(f"scripts/ptwalk-vm run --kernel {k.image} --clock {clock} "
                    f"--add {SCRIPT}:/ptwalk/{SCRIPT} -- {shlex.quote(cmd)}")
    res = pipeline.run_in_vm(cfg, k, cmd, pipeline.RunOptions(
        add=[(REPO / SCRIPT, f"/ptwalk/{SCRIPT}")], timeout=timeout, clock=clock), sdir / "vm")
    for name, data in res.files.items():
        (sdir / name).write_bytes(data)
    (sdir / "guest.txt").write_text(res.stdout)
    return res


def on_host(ptwalk: Path, table: str, size: str, items: list[str], *, timeout: float,
            sdir: Path, commands: list[str]) -> bool:
    """The runs on this host's kernel (no module: it cannot load here)."""
    args = [str(sdir), size, "-", table, *items]
    commands.append(" ".join(shlex.quote(x) for x in ["sh", SCRIPT, "build/ptwalk", *args]))
    p = subprocess.run(["sh", str(REPO / SCRIPT), str(ptwalk), *args], capture_output=True,
                       text=True, timeout=timeout)
    (sdir / "guest.txt").write_text(p.stdout + p.stderr)
    return p.returncode == 0


def exits(sdir: Path, table: str) -> dict[str, str]:
    """Each run's exit status by name, as guest.txt has it."""
    f = sdir / "guest.txt"
    text = f.read_text() if f.exists() else ""
    return dict(re.findall(rf"^{re.escape(table)}: ([\w.-]+) exit (\d+)$", text, re.M))

# SPDX-License-Identifier: GPL-2.0
"""ptwalk's usage text is made from its option tables (userspace/cli/): it
stays the text the hand-written one was (data/cli/usage.txt, recorded
from it), every option it lists is parsed, the defaults it shows are the
ones a run uses, and an unknown option is a one-line error."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from ptwalk_cli import run_ptwalk

DATA = Path(__file__).resolve().parent / "data" / "cli"


def section(text: str, title: str) -> list[str]:
    return text.split(title + "\n", 1)[1].split("\n\n", 1)[0].splitlines()


def options(text: str, title: str) -> dict[str, str]:
    """--name -> its value's name ("" for a flag) in a usage section."""
    return {m.group(1): m.group(2) or "" for line in section(text, title)
            if (m := re.match(r"  (--[a-z-]+)(?: ([A-Z:.a-z]+))?(?:  |$| )", line))}


def test_usage_is_the_recorded_text() -> None:
    p = run_ptwalk("help", timeout=10)
    assert p.returncode == 0 and p.stderr == ""
    assert p.stdout == (DATA / "usage.txt").read_text()
    bare = run_ptwalk(timeout=10)
    assert bare.returncode == 2 and bare.stderr == p.stdout


def test_monitor_help_is_its_part_of_the_usage() -> None:
    full = run_ptwalk("help", timeout=10).stdout
    p = run_ptwalk("monitor", "--help", timeout=10)
    assert p.returncode == 0
    assert p.stdout.startswith("usage: ptwalk monitor [options]\n\nptwalk monitor options:\n")
    body = "\n".join(section(full, "ptwalk monitor options:"))
    assert body in p.stdout and p.stdout.endswith(full[full.index("exit status:"):])


def test_run_help_is_its_part_of_the_usage() -> None:
    full = run_ptwalk("help", timeout=10).stdout
    p = run_ptwalk("run", "--help", timeout=10)
    assert p.returncode == 0 and p.stderr == "", p
    assert p.stdout.startswith("usage: ptwalk run [options]\n\nptwalk run options:\n")
    body = "\n".join(section(full, "ptwalk run options:"))
    assert body in p.stdout and p.stdout.endswith(full[full.index("exit status:"):])


# every command: `ptwalk CMD --help`, `ptwalk CMD -h` and `ptwalk help CMD`
# print the same usage on stdout and exit 0, the helpers' (compare, report:
# argparse; calibrate) included, with or without other arguments
HELP_COMMANDS = ["run", "monitor", "compare", "report", "calibrate", "locking", "version",
                 "completion"]


@pytest.mark.parametrize("cmd", HELP_COMMANDS)
def test_every_command_has_help(cmd: str) -> None:
    outs = []
    for argv in ([cmd, "--help"], [cmd, "-h"], ["help", cmd], [cmd, "--size", "1G", "--help"]):
        if cmd not in ("run",) and "--size" in argv:
            continue
        p = run_ptwalk(*argv, timeout=30)
        assert p.returncode == 0 and p.stderr == "", (argv, p)
        assert p.stdout.startswith("usage: "), (argv, p.stdout[:200])
        assert "ptwalk" in p.stdout.splitlines()[0], (argv, p.stdout[:200])
        outs.append(p.stdout)
    assert all(o == outs[0] for o in outs), cmd


def test_help_of_help_is_the_usage() -> None:
    """--help is never bad input, not even after help."""
    want = run_ptwalk("help", timeout=10).stdout
    for argv in (["help", "--help"], ["help", "-h"], ["--help"], ["-h"], ["-h", "--help"]):
        p = run_ptwalk(*argv, timeout=10)
        assert p.returncode == 0 and p.stderr == "" and p.stdout == want, (argv, p)


@pytest.mark.parametrize("argv,err", [
    (["help", "bogus"], "ptwalk: unknown command 'bogus' (see 'ptwalk help')\n"),
    (["help", "run", "monitor"], "ptwalk help: one command at a time (see 'ptwalk help')\n"),
    (["version", "now"], "ptwalk version: unexpected argument 'now' (see 'ptwalk help')\n"),
])
def test_help_and_version_bad_input_is_one_line(argv: list[str], err: str) -> None:
    p = run_ptwalk(*argv, timeout=10)
    assert p.returncode == 2 and p.stdout == "" and p.stderr == err, p


def complete(script: str, *words: str) -> list[str]:
    """What bash completes after `ptwalk WORDS` (the last word being typed)."""
    p = subprocess.run(["bash", "-c", script + '\nCOMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); '
                        '_ptwalk; printf "%s\\n" "${COMPREPLY[@]}"', "bash", "ptwalk", *words],
                       capture_output=True, text=True, timeout=10)
    assert p.returncode == 0 and p.stderr == "", p
    return [w for w in p.stdout.splitlines() if w]


def test_bash_completion_is_made_from_the_option_tables() -> None:
    """ptwalk completion: every command the usage lists, every option of
    run and monitor their usage lists, and the choices the usage shows for
    an option's value (the same tables)."""
    p = run_ptwalk("completion", timeout=10)
    assert p.returncode == 0 and p.stderr == "", p
    script = p.stdout
    usage = (DATA / "usage.txt").read_text()
    commands = {m.group(1) for ln in section(usage, "commands:")
                if (m := re.match(r"  ([a-z]+) ", ln))}
    assert len(commands) >= 9 and set(complete(script, "")) == commands
    assert complete(script, "lo") == ["locking"]
    for cmd in ("run", "monitor"):
        listed = set(options(usage, f"ptwalk {cmd} options:"))
        assert set(complete(script, cmd, "--")) == listed | {"--help"}, cmd
    assert sorted(complete(script, "run", "--back")) == ["--backend", "--backing"]
    shown = " ".join(section(usage, "ptwalk run options:"))
    backings = complete(script, "run", "--backing", "")
    assert len(backings) >= 3 and all(b in shown for b in backings), backings
    assert complete(script, "run", "--scanner", "smaps_r") == ["smaps_rollup"]
    assert complete(script, "run", "--size", "") == []
    assert complete(script, "help", "mon") == ["monitor"]
    assert run_ptwalk("completion", "x", timeout=10).returncode == 2


SAMPLE = {"SIZE": "64M", "KIND": "anon", "L": "one", "DIR": "/tmp", "LIST": "read",
          "WS": "0.25,hot", "PROFILE": "smaps", "T": "1s", "N": "2", "B": "syscall",
          "WHERE": "above"}


def test_every_listed_run_option_is_parsed(tmp_path: Path) -> None:
    opts = options((DATA / "usage.txt").read_text(), "ptwalk run options:")
    assert len(opts) >= 19 and "--size" in opts and opts["--force"] == ""
    for name, value in opts.items():
        if name in ("--perf", "--cross-check"):
            continue  # the dry run checks what they need on this host
        arg = [name] + ([str(tmp_path / "r.json") if value == "FILE.json" else SAMPLE[value]]
                        if value else [])
        p = run_ptwalk("run", "--dry-run", "--size", "16M", *arg, timeout=30)
        assert "unknown option" not in p.stderr and "needs a value" not in p.stderr, (name, p)
        assert p.returncode == 0, (name, p.stderr)


def test_shown_defaults_are_the_ones_a_run_uses() -> None:
    run = "\n".join(section((DATA / "usage.txt").read_text(), "ptwalk run options:"))
    for shown in ("--size SIZE          mapping size, binary suffixes K M G T (default 1G)",
                  "(default clear_refs)", "(default 1s)", "(default 10s)", "(default anon)"):
        assert shown in run
    p = run_ptwalk("run", "--dry-run", timeout=30)
    assert p.returncode == 0, p.stderr
    assert "plan: 1.0 GiB anon:" in p.stdout
    assert "scanner clear_refs every 1.00 s for 10.00 s" in p.stdout


@pytest.mark.parametrize("cmd", ["run", "monitor"])
@pytest.mark.parametrize("arg", ["--bogus", "--sise=1G", "--Size"])
def test_an_unknown_option_is_one_line(cmd: str, arg: str) -> None:
    p = run_ptwalk(cmd, arg, "1", timeout=10)
    assert p.returncode == 2
    name = arg.split("=")[0]
    assert p.stderr == f"ptwalk {cmd}: unknown option {name} (see 'ptwalk help')\n"
    assert p.stdout == ""


@pytest.mark.parametrize("cmd,want", [
    ("run", "ptwalk run: unknown --backend 'ebpf' (use auto, module, tracepoint or syscall)\n"),
    ("monitor", "ptwalk monitor: unknown --backend 'ebpf' (use auto, module, bpf or "
                "tracepoint) (see 'ptwalk help')\n")])
def test_an_unknown_backend_names_the_choices(cmd: str, want: str) -> None:
    p = run_ptwalk(cmd, "--backend", "ebpf", timeout=10)
    assert p.returncode == 2 and p.stderr == want


def test_locking_prints_the_table_for_a_release() -> None:
    """ptwalk locking: the per-kernel locking table the figures use, for a
    release given or the running kernel; bad input is a one-line error."""
    p = run_ptwalk("locking", "--release", "7.3.4+deb13-cloud-amd64", timeout=10)
    assert p.returncode == 0 and p.stderr == "", p
    rows = {ln.split()[0]: ln for ln in p.stdout.splitlines()[2:-1]}
    assert "no (per-VMA locks from 7.2" in rows["smaps"]
    # the ways back to mmap_lock the kernel keeps (7.3.4 mm/mmap_lock.c
    # lock_next_vma(), fs/proc/task_mmu.c proc_get_vma())
    assert ("where a VMA cannot be locked, mmap_lock read for the look-up, to the end of "
            "that read() only on a refcount overflow") in rows["smaps"]
    assert "mmap_lock read for the look-up" not in rows["clear_refs"]
    assert rows["smaps_rollup"].split()[1:5] == ["read", "VMA", "(writer", "waits)"]
    assert rows["smaps"].split()[1:4] == ["none", "none", "(VMA"]
    assert rows["clear_refs"].endswith(" yes")
    old = run_ptwalk("locking", "--release", "6.12.95+deb12-amd64", timeout=10)
    assert "read() of VMAs" in old.stdout.split("\nsmaps ")[1].splitlines()[0]
    mid = run_ptwalk("locking", "--release", "6.15.1", "--json", timeout=10)
    doc = json.loads(mid.stdout)
    assert doc["release"] == "6.15.1"
    mp = doc["kinds"]["maps"]
    assert mp["basis"] == "unread" and mp["mmap_lock_waiters_wait"] is None
    assert mp["changed"] == {"before": "6.12", "since": "6.18", "lock_mode": "none",
                             "lock_unit": "vma_lock"}
    # smaps up to 7.1 measured: still mmap_lock there, the change from 7.2
    sm = json.loads(run_ptwalk("locking", "--release", "7.1.13", "--json",
                               timeout=10).stdout)["kinds"]["smaps"]
    assert sm["basis"] == "table" and sm["mmap_lock_waiters_wait"] is True
    assert sm["fallback"] is None
    sm73 = json.loads(run_ptwalk("locking", "--release", "7.3.4", "--json",
                                 timeout=10).stdout)["kinds"]["smaps"]
    assert sm73["fallback"] == {
        "when": "a VMA's vm_refcnt would overflow (lock_next_vma() -EAGAIN)",
        "lock_mode": "read", "held_until": "the end of that read()",
        "lookup": "where a VMA cannot be read-locked as it is found, mmap_lock read for the "
                  "look-up alone, no page table walked under it",
        "source": "mm/mmap_lock.c lock_next_vma(), lock_next_vma_under_mmap_lock(); "
                  "fs/proc/task_mmu.c proc_get_vma(), fallback_to_mmap_lock() (7.2.13, 7.3.4)"}
    assert sm["changed"]["before"] == "7.1" and sm["changed"]["since"] == "7.2"
    assert "lock_vma_range" in json.loads(run_ptwalk(
        "locking", "--json", "--release", "7.2", timeout=10).stdout)["kinds"]["smaps"]["source"]
    here = run_ptwalk("locking", timeout=10)
    assert here.returncode == 0 and here.stdout.startswith("walk kinds' locking on ")
    h = run_ptwalk("locking", "--help", timeout=10)
    assert h.returncode == 0 and h.stdout.startswith("usage: ptwalk locking")
    for bad in (["--release", "x"], ["--release", ""], ["--nope", "1"], ["extra"]):
        b = run_ptwalk("locking", *bad, timeout=10)
        assert b.returncode == 2 and b.stdout == "", (bad, b)
        assert len(b.stderr.splitlines()) == 1 and b.stderr.startswith("ptwalk locking: "), b

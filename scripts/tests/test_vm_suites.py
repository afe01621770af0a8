# SPDX-License-Identifier: GPL-2.0
"""Several suites in one boot (ptwalk_vm/suites.py), split offline: each
suite gets its own exit status, output, files and the kernel-log problems
of its own part of the log; a hang, a panic and a cut channel name the
suite they happened in, and the suites after it say they did not run.
The logs are written here in the channel's format (parse.py), as a boot
leaves them in its run directory."""
from __future__ import annotations

import base64
import gzip
import json
import shlex
import subprocess
from pathlib import Path

from ptwalk_vm import parse, suites
from ptwalk_vm.suites import Suite

NAMES = ["harness", "acceptance", "selftests"]
REPO = Path(__file__).resolve().parents[2]


def _file(name: str, data: bytes) -> str:
    b = base64.b64encode(gzip.compress(data)).decode()
    return (f"@@ptwalk file {base64.b64encode(name.encode()).decode()} gz\n{b}\n"
            "@@ptwalk end file\n")


def _suite_files(name: str, rc: int, out: str, dmesg: str, late: int = 0,
                 extra: dict[str, bytes] | None = None) -> str:
    text = _file(f".suites/{name}/status", f"{rc} 12.50 600 {late}\n".encode())
    text += _file(f".suites/{name}/stdout", out.encode())
    text += _file(f".suites/{name}/stderr", b"")
    text += _file(f".suites/{name}/dmesg", dmesg.encode())
    for k, v in (extra or {}).items():
        text += _file(f"{name}/{k}", v)
    return text


def _marks(name: str, rc: int | None = None) -> list[str]:
    out = [f"<4>[    5.0] ptwalk-suite: begin {name}"]
    if rc is not None:
        out.append(f"<4>[    9.0] ptwalk-suite: end {name} {rc}")
    return out


def _save(tmp: Path, channel: str, console: str, timed_out: bool = False) -> Path:
    (tmp / "channel.log").write_text(channel)
    (tmp / "console.log").write_text(console)
    (tmp / "stdout.log").write_text("6.1.0-56-amd64\n")
    (tmp / "stderr.log").write_text("")
    (tmp / "meta.json").write_text(json.dumps({
        "accel": "tcg", "qemu_cmdline": "qemu -accel tcg", "timed_out": timed_out,
        "timeout": 2280.0, "qemu_returncode": 0, "clock": "realtime"}))
    return tmp


def _boot_log() -> str:
    return "<5>[    0.0] Linux version 6.1.0-56-amd64\n"


def test_a_clean_boot_splits_into_its_suites(tmp_path: Path) -> None:
    dm = _boot_log() + "\n".join(_marks("harness", 3)) + "\n"
    ch = "@@ptwalk begin 1\n@@ptwalk status 1\n"
    ch += _suite_files("harness", 3, "6.1.0-56-amd64\n", dm, extra={"d/y": b"deep\n"})
    dm2 = dm + "\n".join(_marks("acceptance", 0)) + "\n"
    ch += _suite_files("acceptance", 0, "acceptance: ok\n", dm2, extra={"a.json": b"{}"})
    dm3 = dm2 + "\n".join(_marks("selftests", 0)) + "\n"
    ch += _suite_files("selftests", 0, "TAP version 13\n", dm3)
    ch += "@@ptwalk done\n"
    run = suites.split(parse.parse_run_dir(_save(tmp_path, ch, "")), NAMES, [])
    assert list(run.suites) == NAMES and not run.unclaimed
    h, a, s = (run.suite(n) for n in NAMES)
    assert h.returncode == 3 and h.files == {"d/y": b"deep\n"} and h.stdout == "6.1.0-56-amd64\n"
    assert "Linux version" in h.dmesg   # the first suite's log holds the boot's
    assert a.ok and a.files == {"a.json": b"{}"} and a.command_s == 12.5 and a.timeout == 600
    # each later suite's log starts at its own begin marker
    assert "Linux version" not in a.dmesg and "begin acceptance" in a.dmesg.splitlines()[0]
    assert s.ok and s.stdout.startswith("TAP") and not s.findings


def test_a_warning_fails_its_suite_only(tmp_path: Path) -> None:
    warn = "<4>[    7.0] WARNING: CPU: 1 PID: 99 at mm/pagewalk.c:1 walk+0x1/0x2"
    dm = _boot_log() + "\n".join(_marks("harness", 3)) + "\n"
    dm2 = dm + "\n".join([_marks("acceptance")[0], warn, _marks("acceptance", 0)[1]]) + "\n"
    ch = "@@ptwalk begin 1\n@@ptwalk status 1\n"
    ch += _suite_files("harness", 3, "", dm)
    ch += _suite_files("acceptance", 0, "", dm2)
    # the next suite cleared the log (dmesg -c): its part is all it kept
    ch += _suite_files("selftests", 0, "", "<6>[    9.5] ptwalk: loaded\n")
    ch += "@@ptwalk done\n"
    console = "\n".join(["[    5.0] ptwalk-suite: begin harness", "[    5.1] ptwalk-suite: end "
                         "harness 3", "[    5.2] ptwalk-suite: begin acceptance",
                         warn[3:], "[    9.0] ptwalk-suite: end acceptance 0",
                         "[    9.2] ptwalk-suite: begin selftests",
                         "[    9.9] ptwalk-suite: end selftests 0"]) + "\n"
    run = suites.split(parse.parse_run_dir(_save(tmp_path, ch, console)), NAMES, [])
    a = run.suite("acceptance")
    assert [f.kind for f in a.findings] == ["warning"]   # in dmesg and on the console: once
    assert a.exit_code() == parse.EXIT_KERNEL_PROBLEM and "WARNING" in (a.problem() or "")
    assert not run.suite("harness").findings and not run.suite("selftests").findings
    assert run.suite("selftests").dmesg == "[    9.5] ptwalk: loaded\n"
    assert not run.unclaimed


def test_a_hang_names_its_suite_and_the_rest_did_not_run(tmp_path: Path) -> None:
    dm = _boot_log() + "\n".join(_marks("harness", 3)) + "\n"
    ch = "@@ptwalk begin 1\n" + _suite_files("harness", 3, "", dm)
    # the host killed qemu while acceptance ran: no status, no done
    console = ("[    5.0] ptwalk-suite: begin harness\n[    5.1] ptwalk-suite: end harness 3\n"
               "[    5.2] ptwalk-suite: begin acceptance\n[ 2000.0] INFO: task ptwalk:88 "
               "blocked for more than 120 seconds.\n")
    run = suites.split(parse.parse_run_dir(_save(tmp_path, ch, console, timed_out=True)),
                       NAMES, [])
    assert run.suite("harness").returncode == 3 and not run.suite("harness").timed_out
    a = run.suite("acceptance")
    assert a.timed_out and a.returncode is None and a.exit_code() == parse.EXIT_TIMEOUT
    assert [f.kind for f in a.findings] == ["info"]
    s = run.suite("selftests")
    assert not s.ok and "suite selftests did not run" in (s.problem() or "")
    assert "TIMEOUT" in (s.problem() or "")


def test_a_suite_over_its_limit_is_a_timeout(tmp_path: Path) -> None:
    dm = _boot_log() + "\n".join(_marks("harness", 143)) + "\n"
    ch = "@@ptwalk begin 1\n" + _suite_files("harness", 143, "", dm, late=1) + "@@ptwalk done\n"
    r = suites.split(parse.parse_run_dir(_save(tmp_path, ch, "")), ["harness"], []).suite("harness")
    assert r.timed_out and r.exit_code() == parse.EXIT_TIMEOUT
    assert "within 600 s" in (r.problem() or "")


def test_a_panic_after_the_suites_is_the_boots_own(tmp_path: Path) -> None:
    dm = _boot_log() + "\n".join(_marks("harness", 3)) + "\n"
    ch = "@@ptwalk begin 1\n" + _suite_files("harness", 3, "", dm)   # cut: no done
    console = ("[    5.0] ptwalk-suite: begin harness\n[    5.1] ptwalk-suite: end harness 3\n"
               "[    6.0] Kernel panic - not syncing: Fatal exception\n")
    run = suites.split(parse.parse_run_dir(_save(tmp_path, ch, console)), ["harness"], [])
    assert run.suite("harness").returncode == 3 and not run.suite("harness").findings
    assert [f.kind for f in run.unclaimed] == ["panic"]
    assert not run.whole.complete


def test_a_cut_file_fails_its_suite(tmp_path: Path) -> None:
    dm = _boot_log() + "\n".join(_marks("harness", 0)) + "\n"
    ch = "@@ptwalk begin 1\n" + _suite_files("harness", 0, "", dm)
    ch += f"@@ptwalk file {base64.b64encode(b'harness/big').decode()} gz\nH4sIAAAA"
    r = suites.split(parse.parse_run_dir(_save(tmp_path, ch, "")), ["harness"], []).suite("harness")
    assert r.truncated_files == ["harness/big"] and not r.complete and not r.ok


def test_the_boot_command_runs_each_suite_and_counts_failures(tmp_path: Path) -> None:
    """The command the guest runs, run here by sh with the runner stubbed
    to its exit status: every suite runs even after one fails, and the exit
    status counts the failures. The runner's own line is quoted safely."""
    ss = [Suite("a", ("sh", "-c", "exit 0"), 5), Suite("b", ("sh", "-c", "exit 7"), 5),
          Suite("c b", ("env", "X=1 2", "true"), 5, env=(("K", "v w"),))]
    cmd = suites.command(ss)
    stub = tmp_path / "scripts" / "vm" / "suite.sh"
    stub.parent.mkdir(parents=True)
    # the stub: record the arguments it got, then run the suite's command
    stub.write_text('echo "$@" >> "$LOG"; shift 2; "$@"\n')
    p = subprocess.run(["sh", "-c", cmd.replace("uname -r", "true")], cwd=tmp_path,
                       env={"LOG": str(tmp_path / "log"), "PATH": "/usr/bin:/bin"},
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 1, p
    got = (tmp_path / "log").read_text().splitlines()
    assert got == ["a 5 sh -c exit 0", "b 5 sh -c exit 7", "c b 5 env K=v w env X=1 2 true"]
    assert ss[2].line() == " ".join(shlex.quote(w) for w in
                                    ["sh", suites.RUNNER, "c b", "5", "env", "K=v w", "env",
                                     "X=1 2", "true"])


def test_every_module_suite_ships_what_it_runs() -> None:
    for s in suites.module_suites():
        for host, guest in s.files:
            assert host.is_file() or host.name == "walker", (s.name, host)
            assert guest.startswith("/ptwalk/")
        script = next(w for w in s.argv if w.endswith(".sh"))
        assert any(g == f"/ptwalk/{script}" for _, g in s.files), (s.name, script)
    assert (REPO / suites.RUNNER).is_file()


def test_the_session_ends_with_each_suites_guest_time(tmp_path: Path) -> None:
    """make test's log says where the VM stage's time went: per kernel the
    boot's wall time and each suite's guest seconds ("-": did not end)."""
    from ptwalk_vm import pytest_plugin

    dm = _boot_log() + "\n".join(_marks("harness", 3)) + "\n"
    ch = "@@ptwalk begin 1\n@@ptwalk status 1\n" + _suite_files("harness", 3, "", dm)
    ch += "@@ptwalk done\n"
    run = suites.split(parse.parse_run_dir(_save(tmp_path, ch, "")), NAMES, [])
    run.whole.wall_s = 191.4

    class Reporter:
        lines: list[str] = []

        def section(self, title: str) -> None:
            self.lines.append(f"== {title}")

        def write_line(self, line: str) -> None:
            self.lines.append(line)

    saved = dict(pytest_plugin._suite_runs)
    try:
        pytest_plugin._suite_runs.clear()
        pytest_plugin.pytest_terminal_summary(Reporter())
        assert Reporter.lines == []            # no VM suites ran: nothing said
        pytest_plugin._suite_runs["6.1-amd64"] = run
        pytest_plugin.pytest_terminal_summary(Reporter())
    finally:
        pytest_plugin._suite_runs.clear()
        pytest_plugin._suite_runs.update(saved)
    head, row = Reporter.lines[1].split(), Reporter.lines[2].split()
    assert head == ["kernel", "wall", *NAMES]
    assert row == ["6.1-amd64", "191", "12", "-", "-"]


def test_boot_slots_go_to_the_longest_waiter() -> None:
    """A slot given back goes to the thread that asked first, not to the
    one that gave it back and asks again at once (the suites' pool did
    that to the tests with boots of their own): A holds the one slot, B
    then C ask, A gives it back and asks again; the order is A, B, C, A."""
    import threading
    import time

    from ptwalk_vm.pytest_plugin import FairSlots

    slots, order, lock = FairSlots(1), [], threading.Lock()

    def take(name: str, hold: float = 0.0) -> None:
        with slots:
            with lock:
                order.append(name)
            time.sleep(hold)

    def queued(n: int) -> None:
        t0 = time.monotonic()
        while len(slots._queue) < n:
            assert time.monotonic() - t0 < 10, "a thread never queued"
            time.sleep(0.001)

    slots.__enter__()
    order.append("A")
    b = threading.Thread(target=take, args=("B", 0.05))
    b.start()
    queued(1)
    c = threading.Thread(target=take, args=("C",))
    c.start()
    queued(2)
    slots.__exit__()
    a = threading.Thread(target=take, args=("A",))
    a.start()
    for t in (a, b, c):
        t.join(10)
    assert order == ["A", "B", "C", "A"]
    # two slots: two holders at once, the third waits
    two, inside, peak = FairSlots(2), [0], [0]

    def hold() -> None:
        with two:
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            time.sleep(0.05)
            with lock:
                inside[0] -= 1

    ts = [threading.Thread(target=hold) for _ in range(5)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(10)
    assert peak[0] == 2 and inside[0] == 0

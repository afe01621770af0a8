"""Offline parsing of a run: the result channel, the kernel-log detector and
the VmResult that ties them together. Works on saved logs (parse_run_dir).

Channel protocol (ttyS1, written by init.sh), one record per line:
    @@ptwalk begin <version>
    @@ptwalk release <uname -r>
    @@ptwalk boot_uptime|start_uptime|end_uptime <seconds>
    @@ptwalk status <exit status of the command>
    @@ptwalk dmesg - [gz]       base64 lines...  @@ptwalk end dmesg
    @@ptwalk file <b64 name> [gz]  base64 lines...  @@ptwalk end file
("gz": the body is gzip'ed before base64; a cut body yields what decompresses.)
    @@ptwalk done               (last line: the channel is complete)
"""
from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

# Harness exit codes (anything else is the guest command's own status).
EXIT_KERNEL_PROBLEM = 120  # oops/BUG/WARNING/... in the kernel log
EXIT_GUEST_DIED = 121      # channel incomplete: guest died, no exit status
EXIT_HARNESS = 122         # setup failure (no kernel, qemu failed to start...)
EXIT_TIMEOUT = 124         # like timeout(1)
MAX_SHOWN = 8              # findings printed by problem()

# Kernel-log problems: (kind, regex on the message with level/timestamp removed).
# Order matters: the first match names the line.
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (k, re.compile(p)) for k, p in (
        ("panic", r"Kernel panic - not syncing"),
        ("lockdep", r"possible (circular|recursive) locking|inconsistent lock state"
                    r"|suspicious RCU usage|possible irq lock inversion"),
        ("kasan", r"\b(KASAN|KFENCE|KMSAN|UBSAN):"),
        ("oops", r"^Oops\b|: [0-9a-f]{4} \[#\d+\]|^Unable to handle kernel"),
        ("bug", r"\bBUG: |kernel BUG at "),
        ("warning", r"^WARNING: "),
        ("bad-irq", r"^irq \d+: nobody cared"),
        ("info", r"^(\S+: )?INFO: "),
        ("call-trace", r"^Call Trace:"),
    ))

_PREFIX = re.compile(r"^(<\d+>)?(\[\s*\d+\.\d+\])?(\[\s*[TC]\d+\])?\s?")


@dataclass(frozen=True)
class Finding:
    kind: str
    source: str  # "dmesg" or "console"
    lineno: int  # 1-based line in that log
    line: str

    def __str__(self) -> str:
        return f"{self.kind} at {self.source}:{self.lineno}: {self.line.strip()}"


def strip_prefix(line: str) -> str:
    return _PREFIX.sub("", line, count=1)


def scan_kernel_log(text: str, source: str, allow: Sequence[str] = ()) -> list[Finding]:
    """Lines of a kernel log matching PATTERNS, minus those matching an ALLOW regex."""
    allowed = [re.compile(a) for a in allow]
    found: list[Finding] = []
    for i, line in enumerate(text.splitlines(), 1):
        msg = strip_prefix(line.rstrip("\r"))
        if any(a.search(msg) for a in allowed):
            continue
        for kind, pat in PATTERNS:
            if pat.search(msg):
                found.append(Finding(kind, source, i, line.rstrip("\r")))
                break
    return found


def detect(dmesg: str, console: str, allow: Sequence[str] = ()) -> list[Finding]:
    """Problems in dmesg (from the channel) and on the console; a console line
    already seen in dmesg is not reported twice."""
    found = scan_kernel_log(dmesg, "dmesg", allow)
    seen = {strip_prefix(f.line) for f in found}
    for f in scan_kernel_log(console, "console", allow):
        if strip_prefix(f.line) not in seen:
            found.append(f)
    return found


@dataclass
class Channel:
    version: str | None = None
    release: str | None = None
    status: int | None = None
    uptime: dict[str, float] = field(default_factory=dict)
    dmesg: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    truncated_files: list[str] = field(default_factory=list)
    complete: bool = False
    garbage: list[str] = field(default_factory=list)


def _b64(lines: list[str]) -> bytes:
    data = "".join(lines)
    data = data[: len(data) - len(data) % 4]
    try:
        return base64.b64decode(data)
    except (binascii.Error, ValueError):
        return b""


def _gunzip(data: bytes) -> bytes:
    """Decompress as much as possible (a truncated stream gives its prefix)."""
    d = zlib.decompressobj(wbits=31)
    try:
        return d.decompress(data)
    except zlib.error:
        return b""


def parse_channel(text: str) -> Channel:
    ch = Channel()
    rec: tuple[str, str, bool] | None = None  # (kind, name, gzip'ed) of the open record
    body: list[str] = []

    def close(truncated: bool) -> None:
        kind, name, gz = rec  # type: ignore[misc]
        data = _b64(body)
        if gz:
            data = _gunzip(data)
        if kind == "dmesg":
            ch.dmesg = _clean_dmesg(data.decode("utf-8", "replace"))
        elif kind == "file":
            fname = _b64([name]).decode("utf-8", "replace") or name
            ch.files[fname] = data
            if truncated:
                ch.truncated_files.append(fname)

    for line in text.splitlines():
        line = line.rstrip("\r")
        if not line.startswith("@@ptwalk "):
            if rec is not None:
                body.append(line.strip())
            elif line.strip():
                ch.garbage.append(line)
            continue
        words = line.split()
        kind, arg = words[1], (words[2] if len(words) > 2 else "")
        if rec is not None:
            if kind == "end":
                close(False)
                rec, body = None, []
                continue
            close(True)  # a new record inside an open one: previous was cut
            rec, body = None, []
        if kind in ("dmesg", "file"):
            rec, body = (kind, arg, words[3:4] == ["gz"]), []
        elif kind == "begin":
            ch.version = arg
        elif kind == "release":
            ch.release = arg
        elif kind == "status":
            ch.status = int(arg) if arg.lstrip("-").isdigit() else None
        elif kind.endswith("_uptime"):
            try:
                ch.uptime[kind[: -len("_uptime")]] = float(arg)
            except ValueError:
                pass
        elif kind == "done":
            ch.complete = True
    if rec is not None:
        close(True)
        ch.complete = False
    return ch


def _clean_dmesg(raw: str) -> str:
    return "\n".join(re.sub(r"^<\d+>", "", ln) for ln in raw.splitlines()) + ("\n" if raw else "")


@dataclass
class VmResult:
    """Everything a run returns. returncode is the command's exit status
    (None if the guest never reported one); exit_code() classifies the run."""

    returncode: int | None
    stdout: str
    stderr: str
    dmesg: str
    files: dict[str, bytes]
    accel: str
    qemu_cmdline: str
    console: str = ""
    kernel: str = ""
    release: str | None = None
    timed_out: bool = False
    timeout: float | None = None
    complete: bool = False
    findings: list[Finding] = field(default_factory=list)
    truncated_files: list[str] = field(default_factory=list)
    qemu_returncode: int | None = None
    qemu_stderr: str = ""
    wall_s: float | None = None
    boot_s: float | None = None      # guest uptime when /init started
    command_s: float | None = None   # command run time, guest clock
    run_dir: str | None = None
    harness_error: str | None = None  # qemu did not start or died before any console output
    qemu_version: str = ""  # "10.0.2 (Debian 1:10.0.2+ds-2+deb13u1~bpo12+1)"
    cpu: str = ""           # the -cpu model the guest ran on ("max,la57=off", "host")
    clock: str = ""         # realtime or icount (qemu.CLOCKS); "" before they were recorded
    ko: str = ""            # the ptwalk.ko delivered to the guest, "" if none
    no_module: str = ""     # why none was (kernels.toml's no_module, or none built)

    @property
    def ok(self) -> bool:
        return self.exit_code() == 0

    def exit_code(self) -> int:
        if self.harness_error:
            return EXIT_HARNESS
        if self.timed_out:
            return EXIT_TIMEOUT
        if self.findings:
            return EXIT_KERNEL_PROBLEM
        if self.returncode is None or not self.complete:
            return EXIT_GUEST_DIED
        return self.returncode

    def problem(self) -> str | None:
        """One-paragraph description of what went wrong, or None."""
        msgs: list[str] = []
        if self.harness_error:
            return f"HARNESS ERROR: {self.harness_error}"
        if self.timed_out:
            after = ("" if self.returncode is None else
                     f" (the command had finished, status {self.returncode}: the guest"
                     " hung after it, unloading or sending results)")
            msgs.append(f"TIMEOUT: guest did not finish within {self.timeout:g} s; qemu killed"
                        + after + _last_line(self.console))
        for f in self.findings[:MAX_SHOWN]:
            msgs.append(f"KERNEL PROBLEM ({f.kind}) at {f.source} line {f.lineno}: "
                        f"{f.line.strip()}")
        if len(self.findings) > MAX_SHOWN:
            msgs.append(f"... and {len(self.findings) - MAX_SHOWN} more kernel-log findings"
                        + (f" (see {self.run_dir}/result.json)" if self.run_dir else ""))
        if not self.timed_out and (self.returncode is None or not self.complete):
            exited = "" if self.returncode is None else f" (command exited {self.returncode})"
            qemu_err = self.qemu_stderr.strip()
            msgs.append("GUEST DIED: result channel incomplete" + exited
                        + f"; qemu exit {self.qemu_returncode}" + _last_line(self.console)
                        + (f"; qemu: {qemu_err[-300:]}" if qemu_err else ""))
        return "\n".join(msgs) or None

    def to_json(self) -> dict:
        d = asdict(self)
        d["files"] = sorted(self.files)
        d["findings"] = [asdict(f) for f in self.findings]
        d["exit_code"] = self.exit_code()
        for k in ("stdout", "stderr", "dmesg", "console"):
            d.pop(k)
        return d


def _last_line(console: str) -> str:
    lines = [ln for ln in console.splitlines() if ln.strip()]
    return f"; last console line: {lines[-1].strip()!r}" if lines else "; console empty"


def _read(p: Path) -> str:
    try:
        return p.read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""


def parse_run_dir(run_dir: Path, extra_allow: Sequence[str] = ()) -> VmResult:
    """Rebuild a VmResult from the logs a run saved (works offline).

    Expects console.log, channel.log, stdout.log, stderr.log and, optionally,
    meta.json ({accel, qemu_cmdline, timed_out, timeout, qemu_returncode, ...}).
    """
    meta: dict = {}
    if (run_dir / "meta.json").exists():
        meta = json.loads((run_dir / "meta.json").read_text())
    if extra_allow:
        meta["allow"] = [*meta.get("allow", []), *extra_allow]
    return assemble(
        console=_read(run_dir / "console.log"), channel=_read(run_dir / "channel.log"),
        stdout=_read(run_dir / "stdout.log"), stderr=_read(run_dir / "stderr.log"),
        meta=meta, run_dir=run_dir)


def assemble(console: str, channel: str, stdout: str, stderr: str, meta: dict,
             run_dir: Path | None = None) -> VmResult:
    ch = parse_channel(channel)
    boot = ch.uptime.get("boot")
    harness_error = meta.get("harness_error")
    rc = meta.get("qemu_returncode")
    if not harness_error and rc not in (0, None) and not console.strip() and not channel.strip() \
            and not meta.get("timed_out"):
        err = str(meta.get("qemu_stderr", "")).strip()[-500:]
        harness_error = f"qemu exited {rc} before any guest output: {err or '(no message)'}"
    cmd_s = None
    if "start" in ch.uptime and "end" in ch.uptime:
        cmd_s = round(ch.uptime["end"] - ch.uptime["start"], 3)
    return VmResult(
        returncode=ch.status, stdout=stdout, stderr=stderr, dmesg=ch.dmesg,
        files=ch.files, accel=meta.get("accel", "unknown"),
        qemu_cmdline=meta.get("qemu_cmdline", ""), console=console,
        kernel=meta.get("kernel", ""), release=ch.release,
        timed_out=bool(meta.get("timed_out", False)), timeout=meta.get("timeout"),
        complete=ch.complete, findings=detect(ch.dmesg, console, meta.get("allow", ())),
        truncated_files=ch.truncated_files,
        qemu_returncode=meta.get("qemu_returncode"), qemu_stderr=meta.get("qemu_stderr", ""),
        wall_s=meta.get("wall_s"), boot_s=boot, command_s=cmd_s,
        run_dir=str(run_dir) if run_dir else None, harness_error=harness_error,
        qemu_version=str(meta.get("qemu_version", "")), cpu=str(meta.get("cpu", "")),
        clock=str(meta.get("clock", "")), ko=str(meta.get("ko", "")),
        no_module=str(meta.get("no_module", "")))

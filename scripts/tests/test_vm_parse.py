"""Offline tests of ptwalk-vm: recorded logs, the kernel-log detector, the
channel parser, the initramfs writer, the matrix and the KVM cache.

Recorded runs in data/ (real TCG boots of Debian 6.1.0-56-amd64 unless noted):
  good/      command exited 0, wrote /results/out.txt
  warn/      insmod of data/warnmod (WARN at load), command exited 0
  panic/     echo c > /proc/sysrq-trigger: panic, guest reset, channel cut short
  sysrq-l/   echo l > /proc/sysrq-trigger: Call Trace + INFO lines, exit 0
  timeout/   sleep 1000 under --timeout 20
  truncated/ good/ cut mid-dmesg on the channel and mid-line on the console
"""
from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from matrix_util import fake_boot, kernel_entry, kernels_toml
from ptwalk_vm import cli, config, initramfs, parse, qemu

DATA = Path(__file__).with_name("data")


def run(name: str) -> parse.VmResult:
    return parse.parse_run_dir(DATA / name)


def kinds(r: parse.VmResult) -> set[str]:
    return {f.kind for f in r.findings}


def test_good_run() -> None:
    r = run("good")
    assert r.returncode == 0 and r.complete and not r.timed_out
    assert r.findings == [] and r.exit_code() == 0 and r.ok and r.problem() is None
    assert r.stdout == "6.1.0-56-amd64\n"
    assert r.stderr == "warn-to-stderr\n"
    assert r.files == {"out.txt": b"result line\n"}
    assert r.release == "6.1.0-56-amd64" and r.accel == "tcg"
    assert "Linux version 6.1.0-56-amd64" in r.dmesg.splitlines()[0]
    assert not r.dmesg.startswith("<")  # log levels stripped
    assert r.boot_s is not None and 0 < r.boot_s < 60
    assert r.command_s is not None and r.command_s >= 0
    assert "-accel tcg" in r.qemu_cmdline


def test_warn_run_fails_although_command_succeeded() -> None:
    r = run("warn")
    assert r.returncode == 0 and r.complete
    assert r.exit_code() == parse.EXIT_KERNEL_PROBLEM and not r.ok
    first = r.findings[0]
    assert first.kind == "warning" and first.source == "dmesg"
    assert "WARNING: CPU:" in first.line and "ptwalk_vm_warn_init" in first.line
    assert r.dmesg.splitlines()[first.lineno - 1] == first.line
    assert "call-trace" in kinds(r)
    assert r.files == {"after-warn.txt": b"data\n"}
    problem = r.problem() or ""
    assert f"dmesg line {first.lineno}" in problem and "WARNING: CPU:" in problem


def test_panic_run() -> None:
    r = run("panic")
    assert r.returncode is None and not r.complete
    assert r.exit_code() == parse.EXIT_KERNEL_PROBLEM
    assert r.findings[0].kind == "panic" and r.findings[0].source == "console"
    assert "sysrq triggered crash" in r.findings[0].line
    problem = r.problem() or ""
    assert "Kernel panic - not syncing" in problem and "GUEST DIED" in problem
    assert r.stdout == "before-crash\n"


def test_call_trace_and_info_without_warn() -> None:
    r = run("sysrq-l")
    assert r.returncode == 0 and r.complete
    assert {"call-trace", "info"} <= kinds(r)
    assert r.exit_code() == parse.EXIT_KERNEL_PROBLEM


def test_truncated_run() -> None:
    r = run("truncated")
    assert not r.complete and r.returncode == 0  # status came before dmesg
    assert r.exit_code() == parse.EXIT_GUEST_DIED
    assert r.dmesg.startswith("[    0.000000] Linux version")  # partial dmesg kept
    assert r.files == {}
    assert "GUEST DIED" in (r.problem() or "")


def test_timeout_run() -> None:
    r = run("timeout")
    assert r.timed_out and r.returncode is None
    assert r.exit_code() == parse.EXIT_TIMEOUT
    assert (r.problem() or "").startswith("TIMEOUT: guest did not finish within 20 s")
    assert r.stdout == "sleeping\n"


def test_timeout_after_the_command_says_so(tmp_path: Path) -> None:
    """A guest that hangs after its command (unloading, sending results)
    is told apart from a command that never finished."""
    run_dir = tmp_path / "hung-after"
    run_dir.mkdir()
    for f in (DATA / "truncated").iterdir():
        (run_dir / f.name).write_bytes(f.read_bytes())
    meta_file = run_dir / "meta.json"
    meta = json.loads(meta_file.read_text()) if meta_file.exists() else {}
    meta.update(timed_out=True, timeout=900)
    (run_dir / "meta.json").write_text(json.dumps(meta))
    r = parse.parse_run_dir(run_dir)
    assert r.timed_out and r.returncode == 0
    assert r.exit_code() == parse.EXIT_TIMEOUT
    assert "the command had finished, status 0: the guest hung after it" in (r.problem() or "")


@pytest.mark.parametrize("line,kind", [
    ("[   12.3] WARNING: CPU: 0 PID: 1 at mm/pagewalk.c:12 walk_page_range+0x1/0x2", "warning"),
    ("<4>[ 1.0] WARNING: possible circular locking dependency detected", "lockdep"),
    ("[ 1.0] WARNING: suspicious RCU usage", "lockdep"),
    ("[ 1.0] BUG: KASAN: slab-out-of-bounds in ptwalk_read+0x1/0x2", "kasan"),
    ("[ 1.0] UBSAN: shift-out-of-bounds in mm/foo.c:1:2", "kasan"),
    ("[ 1.0] BUG: kernel NULL pointer dereference, address: 0000000000000008", "bug"),
    ("[ 1.0] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [ptwalk:123]", "bug"),
    ("[ 1.0] kernel BUG at mm/memory.c:123!", "bug"),
    ("[ 1.0] Oops: 0002 [#1] PREEMPT SMP NOPTI", "oops"),
    ("[ 1.0] general protection fault, probably for non-canonical address 0xdead: 0000 [#1] SMP",
     "oops"),
    ("[ 1.0] INFO: task ptwalk:99 blocked for more than 120 seconds.", "info"),
    ("[ 1.0] rcu: INFO: rcu_preempt self-detected stall on CPU", "info"),
    ("[ 1.0] Call Trace:", "call-trace"),
    # the RT guest's result channel died this way (scripts/kernels.toml)
    ("[   53.149771] irq 3: nobody cared (try booting with the \"irqpoll\" option)", "bad-irq"),
    ("[ 1.0] Kernel panic - not syncing: Fatal exception", "panic"),
])
def test_detector_flags(line: str, kind: str) -> None:
    found = parse.scan_kernel_log(f"[ 0.9] fine\n{line}\n[ 2.0] fine\n", "dmesg")
    assert [(f.kind, f.lineno, f.line) for f in found] == [(kind, 2, line)]


@pytest.mark.parametrize("line", [
    "[ 0.1] RETBleed: WARNING: Spectre v2 mitigation leaves CPU vulnerable to RETBleed attacks",
    "[ 0.1] Spectre V2 : WARNING: Unprivileged eBPF is enabled with eIBRS on",
    "[ 0.1] ptwalk: loaded, info: 3 probes",
    "[ 0.1] mtrr: your CPUs had inconsistent fixed MTRR settings",
])
def test_detector_ignores_benign(line: str) -> None:
    assert parse.scan_kernel_log(line, "dmesg") == []


def test_allow_list_and_console_dedup() -> None:
    log = "[ 1.0] WARNING: CPU: 0 PID: 1 at x.c:1 f+0x1/0x2\n"
    assert parse.detect(log, log) == parse.scan_kernel_log(log, "dmesg")  # reported once
    assert parse.detect(log, log, allow=[r"at x\.c:1 "]) == []
    r = parse.parse_run_dir(DATA / "sysrq-l", extra_allow=[r"^Call Trace:", r"^INFO: NMI handler"])
    assert r.findings == [] and r.exit_code() == 0


def _frame(kind: str, name: str, data: bytes, gz: bool = False) -> str:
    b = base64.encodebytes(gzip.compress(data) if gz else data).decode()
    return f"@@ptwalk {kind} {name}{' gz' if gz else ''}\n{b}@@ptwalk end {kind}\n"


def test_channel_parser() -> None:
    name = base64.b64encode(b"dir/with space.txt").decode()
    text = ("noise before\n@@ptwalk begin 1\n@@ptwalk release 6.1.0-x\n"
            "@@ptwalk boot_uptime 2.5\n@@ptwalk start_uptime 2.5\n@@ptwalk end_uptime 4.0\n"
            "@@ptwalk status 7\n" + _frame("dmesg", "-", b"<6>[ 0.0] hello\n")
            + _frame("file", name, bytes(range(256)) * 3) + "@@ptwalk done\n")
    ch = parse.parse_channel(text)
    assert ch.complete and ch.status == 7 and ch.release == "6.1.0-x"
    assert ch.dmesg == "[ 0.0] hello\n"
    assert ch.files == {"dir/with space.txt": bytes(range(256)) * 3}
    assert ch.uptime == {"boot": 2.5, "start": 2.5, "end": 4.0}
    assert ch.garbage == ["noise before"]
    cut = text[: text.index("@@ptwalk end file") - 30]
    ch = parse.parse_channel(cut)
    assert not ch.complete and ch.truncated_files == ["dir/with space.txt"]
    got = ch.files["dir/with space.txt"]
    assert got == (bytes(range(256)) * 3)[: len(got)]


def test_channel_gzip_records_and_their_truncation() -> None:
    data = b"".join(b"line %d of the result\n" % i for i in range(5000))
    text = ("@@ptwalk begin 1\n@@ptwalk status 0\n"
            + _frame("dmesg", "-", b"<4>[ 1.0] x\n", gz=True)
            + _frame("file", base64.b64encode(b"r.json").decode(), data, gz=True)
            + "@@ptwalk done\n")
    ch = parse.parse_channel(text)
    assert ch.complete and ch.dmesg == "[ 1.0] x\n" and ch.files == {"r.json": data}
    ch = parse.parse_channel(text[: text.index("@@ptwalk end file") // 2 + len(text) // 4])
    got = ch.files["r.json"]
    assert not ch.complete and ch.truncated_files == ["r.json"] and 0 < len(got) < len(data)
    assert data.startswith(got)


def test_cli_parse_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["parse", str(DATA / "good")]) == 0
    assert cli.main(["parse", str(DATA / "warn")]) == parse.EXIT_KERNEL_PROBLEM
    assert cli.main(["parse", str(DATA / "timeout")]) == parse.EXIT_TIMEOUT
    assert cli.main(["parse", str(DATA / "truncated")]) == parse.EXIT_GUEST_DIED
    err = capsys.readouterr().err
    assert "KERNEL PROBLEM (warning) at dmesg line" in err and "TIMEOUT" in err


def _cpio_names(data: bytes) -> dict[str, int]:
    raw, off = gzip.decompress(data), 0
    names: dict[str, int] = {}
    while True:
        assert raw[off:off + 6] == b"070701"
        f = [int(raw[off + 6 + 8 * i: off + 14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = f[1], f[6], f[11]
        name = raw[off + 110: off + 110 + namesize - 1].decode()
        off = (off + 110 + namesize + 3) & ~3
        off = (off + size + 3) & ~3
        if name == "TRAILER!!!":
            return names
        names[name] = mode


def test_initramfs_contents(tmp_path: Path) -> None:
    if not initramfs.BUSYBOX.exists():
        pytest.skip("busybox-static not installed")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("a")
    spec = initramfs.Spec(command="echo hi",
                          files=[(tmp_path / "d", "/ptwalk/d"),
                                 (Path("/usr/bin/stat"), "/ptwalk/build/stat")])
    out = tmp_path / "i.cpio.gz"
    manifest = initramfs.build_initramfs(spec, out)
    names = _cpio_names(out.read_bytes())
    assert {"init", "bin/busybox", "bin/sh", "dev/console", "etc/ptwalk-vm/cmd.sh",
            "ptwalk/d/a.txt", "ptwalk/build/stat"} <= set(names)
    assert names["dev/console"] & 0o170000 == 0o020000  # char device
    assert names["bin/sh"] & 0o170000 == 0o120000       # symlink to busybox
    libs = [m for m in manifest if m.endswith("(library)")]
    assert any("libc.so.6" in m for m in libs) and any("ld-linux" in m for m in libs)
    assert all(m.split()[0].lstrip("/") in names for m in libs)


def test_modprobe_modules_and_deps(tmp_path: Path) -> None:
    mods = tmp_path / "lib/modules/6.1.0-test"
    (mods / "kernel/mm").mkdir(parents=True)
    (mods / "kernel/drivers").mkdir(parents=True)
    (mods / "kernel/mm/zsmalloc.ko").write_bytes(b"z")
    (mods / "kernel/drivers/zram.ko").write_bytes(b"r")
    (mods / "modules.dep").write_text("kernel/drivers/zram.ko: kernel/mm/zsmalloc.ko\n"
                                      "kernel/mm/zsmalloc.ko:\n")
    spec = initramfs.Spec(command="true", module_dir=mods, modprobe=["zram"])
    if not initramfs.BUSYBOX.exists():
        pytest.skip("busybox-static not installed")
    b = initramfs.Builder(spec)
    b.build()
    assert {"lib/modules/6.1.0-test/kernel/drivers/zram.ko",
            "lib/modules/6.1.0-test/kernel/mm/zsmalloc.ko",
            "lib/modules/6.1.0-test/modules.dep"} <= b.cpio.names
    with pytest.raises(initramfs.InitramfsError, match="not in"):
        initramfs.Builder(initramfs.Spec(command="true", module_dir=mods,
                                         modprobe=["nope"])).build()


def test_is_elf_program() -> None:
    assert initramfs.is_elf_program(Path("/usr/bin/stat"))
    assert not initramfs.is_elf_program(Path(__file__))


def test_parse_add() -> None:
    proj = config.PROJECT
    assert initramfs.parse_add(f"{proj}/build/ptwalk", proj) == \
        (proj / "build/ptwalk", "/ptwalk/build/ptwalk")
    assert initramfs.parse_add("/usr/bin/stat:/bin/xstat", proj) == \
        (Path("/usr/bin/stat"), "/bin/xstat")
    assert initramfs.parse_add("/usr/bin/stat", proj)[1] == "/ptwalk/stat"


def test_matrix_is_data(tmp_path: Path) -> None:
    boot = fake_boot(tmp_path, "6.1.0-9-amd64", "6.1.0-12-amd64", "6.1.0-12-cloud-amd64")
    toml = tmp_path / "k.toml"
    entries = (kernel_entry("m", "amd64", f"{boot}/vmlinuz-6.1.*", r"6\.1\.\d+-\d+-amd64",
                            ko=f"{tmp_path}/ko/{{release}}/ptwalk.ko")
               + kernel_entry("m", "rt", f"{boot}/vmlinuz-6.1.*", ".*-rt-amd64"))
    toml.write_text(kernels_toml({"m": (None, entries)}, "m"))
    (tmp_path / "ko/6.1.0-12-amd64").mkdir(parents=True)
    (tmp_path / "ko/6.1.0-12-amd64/ptwalk.ko").write_bytes(b"vermagic=6.1.0-12-amd64 SMP\0")
    cfg = config.load(toml)
    ks, missing = cfg.matrix()
    assert [(k.name, k.release) for k in ks] == [("amd64", "6.1.0-12-amd64")]  # newest, not cloud
    assert ks[0].ko == tmp_path / "ko/6.1.0-12-amd64/ptwalk.ko"
    assert len(missing) == 1 and missing[0].startswith("rt:")


def test_release_readers(tmp_path: Path) -> None:
    ko = tmp_path / "x.ko"
    ko.write_bytes(b"\x7fELF junk\0license=GPL\0vermagic=6.1.0-56-rt-amd64 SMP preempt_rt\0more")
    assert config.module_release(ko) == "6.1.0-56-rt-amd64"
    # the bzImage's own release string, whichever point release apt gave
    # (the mirror moves: 6.1.0-56, then -57)
    imgs = [p for p in sorted(Path("/boot").glob("vmlinuz-6.1.0-*")) if os.access(p, os.R_OK)]
    if not imgs:
        pytest.skip("no readable /boot/vmlinuz-6.1.0-* (scripts/deps.sh kernel installs them)")
    for img in imgs:
        assert config.image_release(img) == img.name.removeprefix("vmlinuz-")


def test_accel_choice_is_probed_once_and_cached(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PTWALK_VM_ACCEL", raising=False)
    monkeypatch.setattr(qemu, "kvm_usable", lambda: None)
    calls: list[int] = []

    def probe() -> tuple[bool, str]:
        calls.append(1)
        return False, "probe boot hung"

    cache = tmp_path / "kvm-ok"
    accel, why = qemu.resolve_accel("auto", cache, "qemu-system-x86_64", probe, log=lambda s: None)
    assert accel == "tcg"
    accel, why = qemu.resolve_accel("auto", cache, "qemu-system-x86_64", probe, log=lambda s: None)
    assert accel == "tcg" and "cached" in why and len(calls) == 1
    assert list(json.loads(cache.read_text()).values())[0]["ok"] is False
    assert qemu.resolve_accel("kvm", cache, "q", probe)[0] == "kvm"
    monkeypatch.setenv("PTWALK_VM_ACCEL", "kvm")
    assert qemu.resolve_accel("auto", cache, "q", probe) == ("kvm", "PTWALK_VM_ACCEL")
    monkeypatch.setattr(qemu, "kvm_usable", lambda: "/dev/kvm does not exist")
    monkeypatch.delenv("PTWALK_VM_ACCEL")
    assert qemu.resolve_accel("auto", tmp_path / "other", "q", probe) == \
        ("tcg", "/dev/kvm does not exist")


def test_script_runs_without_pytest_path() -> None:
    script = Path(__file__).resolve().parents[1] / "ptwalk-vm"
    p = subprocess.run([sys.executable, str(script), "parse", str(DATA / "panic")],
                       capture_output=True, text=True)
    assert p.returncode == parse.EXIT_KERNEL_PROBLEM
    assert "Kernel panic - not syncing: sysrq triggered crash" in p.stderr


def test_qemu_failing_to_start_is_a_harness_error() -> None:
    r = parse.assemble(console="", channel="", stdout="", stderr="",
                       meta={"qemu_returncode": 1, "qemu_stderr": "qemu: -cpu bogus: not found"})
    assert r.exit_code() == parse.EXIT_HARNESS
    assert "qemu exited 1 before any guest output: qemu: -cpu bogus" in (r.problem() or "")
    r = parse.assemble(console="", channel="", stdout="", stderr="",
                       meta={"harness_error": "cannot start qemu-x: No such file"})
    assert r.exit_code() == parse.EXIT_HARNESS

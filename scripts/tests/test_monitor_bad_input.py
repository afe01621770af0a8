# SPDX-License-Identifier: GPL-2.0
"""`ptwalk monitor` on bad input and faults: a clear one-line error and exit 2
(usage), 1 (failure) or 4 (unsupported here), or a clean shutdown; never a
crash, a hang or a half-written file."""
from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from monitor_util import free_port, http_get, require_root, stop, wait_http
from ptwalk_cli import PTWALK, tagged_env


def _run(*args: str, timeout: float = 60,
         prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*prefix, str(PTWALK), "monitor", *args], capture_output=True,
                          text=True, timeout=timeout, env=tagged_env())


def _one_line(r: subprocess.CompletedProcess[str], *words: str) -> None:
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("ptwalk monitor"), lines
    for w in words:
        assert w in lines[0], lines


@pytest.mark.parametrize("args,word", [
    (["--serve", "127.0.0.1"], "ADDR:PORT"),
    (["--serve", "127.0.0.1:0"], "1..65535"),
    (["--serve", "127.0.0.1:99999"], "1..65535"),
    (["--serve", "::1:80"], "brackets"),
    (["--textfile-interval", "1ms", "--textfile", "/tmp"], "100ms"),
    (["--max-comms", "0", "--serve", "127.0.0.1:9"], "1..10000"),
    (["--serve", "127.0.0.1:9", "--backend", "module"], "tracepoint"),
    (["--duration", "0"], "greater than 0"),
    (["--bogus", "x"], "unknown option"),
])
def test_usage_errors_exit_2(args: list[str], word: str) -> None:
    r = _run(*args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    _one_line(r, word)


def test_port_in_use_exit_1() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        r = _run("--serve", f"127.0.0.1:{port}", "--duration", "5s")
    assert r.returncode == 1, r.stderr
    _one_line(r, f"127.0.0.1:{port}", "Address already in use")


def test_address_not_on_this_host_exit_1() -> None:
    # 192.0.2.1 (TEST-NET-1, RFC 5737) is on no interface: bind fails, no
    # packet is sent
    r = _run("--serve", f"192.0.2.1:{free_port()}", "--duration", "5s")
    assert r.returncode == 1, r.stderr
    _one_line(r, "192.0.2.1", "Cannot assign requested address")


def test_unresolvable_host_exit_1() -> None:
    r = _run("--serve", "no-such-host.invalid:9632", "--duration", "5s")
    assert r.returncode == 1, r.stderr
    _one_line(r, "no-such-host.invalid")


def test_textfile_dir_missing_or_not_a_dir_exit_1(tmp_path: Path) -> None:
    r = _run("--textfile", str(tmp_path / "missing"), "--duration", "5s")
    assert r.returncode == 1, r.stderr
    _one_line(r, "No such file or directory")
    f = tmp_path / "file"
    f.write_text("x")
    r = _run("--textfile", str(f), "--duration", "5s")
    assert r.returncode == 1, r.stderr
    _one_line(r, "not a directory")


def test_textfile_dir_read_only_exit_1(tmp_path: Path) -> None:
    require_root()  # root ignores modes: a read-only mount in a private namespace
    d = tmp_path / "ro"
    d.mkdir()
    r = _run("--textfile", str(d), "--duration", "5s",
             prefix=("unshare", "-m", "sh", "-c",
                     f'mount -t tmpfs -o ro none "{d}" && exec "$0" "$@"'))
    assert r.returncode == 1, r.stderr
    _one_line(r, "not writable", "Read-only file system")
    assert list(d.iterdir()) == []


def test_no_perf_events_or_tracefs_exit_4() -> None:
    require_root()  # to drop to an unprivileged user
    r = _run("--duration", "2s", prefix=("setpriv", "--reuid=nobody", "--regid=nogroup",
                                         "--clear-groups", "--inh-caps=-all"))
    assert r.returncode == 4, (r.returncode, r.stderr)
    _one_line(r, "unavailable")


def test_sigterm_while_serving_clean_shutdown(tmp_path: Path) -> None:
    require_root()
    port = free_port()
    d = tmp_path / "tf"
    d.mkdir()
    log = open(tmp_path / "log", "w")
    p = subprocess.Popen([str(PTWALK), "monitor", "--serve", f"127.0.0.1:{port}",
                          "--textfile", str(d), "--textfile-interval", "200ms"],
                         stdout=log, stderr=subprocess.STDOUT, env=tagged_env())
    try:
        body = wait_http(f"http://127.0.0.1:{port}/metrics", p, 30)
        assert "ptwalk_monitor_events_total" in body
        code, _ = http_get(f"http://127.0.0.1:{port}/nope")
        assert code == 404
        time.sleep(1)
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=20)
        took = time.monotonic() - t0
    finally:
        stop(p)
    assert rc == 0, (tmp_path / "log").read_text()
    assert took < 10
    with pytest.raises(OSError):
        http_get(f"http://127.0.0.1:{port}/metrics", timeout=2)
    # the final textfile, whole; nothing temporary left
    assert [x.name for x in d.iterdir()] == ["ptwalk_monitor.prom"]
    text = (d / "ptwalk_monitor.prom").read_text()
    assert text.endswith("\n") and "ptwalk_monitor_info" in text


def test_sigterm_in_duration_mode_writes_the_json(tmp_path: Path) -> None:
    require_root()
    out = tmp_path / "m.json"
    p = subprocess.Popen([str(PTWALK), "monitor", "--duration", "60s", "--quiet", "--out",
                          str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=tagged_env())
    time.sleep(3)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    import json
    m = json.loads(out.read_text())
    assert m["interrupted"] is True
    assert [x.name for x in tmp_path.iterdir()] == ["m.json"]

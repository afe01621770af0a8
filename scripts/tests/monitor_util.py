# SPDX-License-Identifier: GPL-2.0
"""Helpers for the `ptwalk monitor` tests: free loopback ports, a monitor
and a private Prometheus that are always stopped, HTTP with timeouts."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from ptwalk_cli import PTWALK, is_root, tagged_env


def require(cond: bool, why: str) -> None:
    """Skip with the reason, or fail when PTWALK_REQUIRE_MONITOR=1."""
    if cond:
        return
    if os.environ.get("PTWALK_REQUIRE_MONITOR") == "1":
        pytest.fail(why + " (PTWALK_REQUIRE_MONITOR=1)")
    pytest.skip(why)


def require_root() -> None:
    require(is_root(), "ptwalk monitor needs root (system-wide perf_event_open)")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url: str, timeout: float = 5) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def wait_http(url: str, proc: subprocess.Popen[Any], timeout: float) -> str:
    end = time.monotonic() + timeout
    last = ""
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args[0]} exited with {proc.returncode} before serving {url}")
        try:
            code, body = http_get(url, timeout=2)
            if code == 200:
                return body
            last = f"HTTP {code}"
        except OSError as e:
            last = str(e)
        time.sleep(0.2)
    raise AssertionError(f"{url} not served within {timeout} s: {last}")


def stop(proc: subprocess.Popen[Any], timeout: float = 15) -> int:
    """SIGTERM, wait, SIGKILL if needed; returns the exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    return int(proc.returncode)


def start_monitor(tmp: Path, *args: str) -> subprocess.Popen[str]:
    log = open(tmp / "monitor.log", "w")
    return subprocess.Popen([str(PTWALK), "monitor", *args], stdout=log, stderr=subprocess.STDOUT,
                            text=True, env=tagged_env())


class Prometheus:
    """Debian's prometheus, private: own config, data dir, loopback port."""

    def __init__(self, tmp: Path, scrape_port: int, rules: Path | None = None,
                 scrape_extra: str = "") -> None:
        """scrape_extra: more of the job's YAML (scheme, tls_config, ...)."""
        self.dir = tmp / "prometheus"
        self.dir.mkdir()
        self.port = free_port()
        cfg = self.dir / "prometheus.yml"
        cfg.write_text(
            "global:\n"
            "  scrape_interval: 1s\n"
            "  evaluation_interval: 1s\n"
            + (f"rule_files: [{json.dumps(str(rules))}]\n" if rules else "") +
            "scrape_configs:\n"
            "  - job_name: ptwalk\n"
            + scrape_extra +
            "    static_configs:\n"
            f"      - targets: ['127.0.0.1:{scrape_port}']\n")
        self.log = open(self.dir / "prometheus.log", "w")
        self.proc = subprocess.Popen(
            [shutil.which("prometheus") or "prometheus", f"--config.file={cfg}",
             f"--storage.tsdb.path={self.dir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}",
             "--log.level=warn",
             "--storage.tsdb.retention.time=1h"],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=self.dir, env=tagged_env())
        self.url = f"http://127.0.0.1:{self.port}"

    def ready(self, timeout: float = 60) -> None:
        wait_http(self.url + "/-/ready", self.proc, timeout)

    def api(self, path: str, **params: str) -> Any:
        q = urllib.parse.urlencode(params)
        code, body = http_get(f"{self.url}/api/v1/{path}" + (f"?{q}" if q else ""), timeout=10)
        assert code == 200, body
        doc = json.loads(body)
        assert doc["status"] == "success", doc
        return doc["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        return list(self.api("query", query=expr)["result"])

    def stop(self) -> int:
        rc = stop(self.proc, timeout=30)
        self.log.close()
        return rc


WORKLOADS = Path(__file__).resolve().parent / "monitor_workloads.py"


def unique_comm(prefix: str) -> str:
    """A comm no other process on a shared host has (15 chars max)."""
    return f"{prefix}{os.getpid() % 100000:05d}"[:15]


def start_target(comm: str, physical_mb: int, copies: int, *extra: str,
                 timeout: float = 180) -> tuple[subprocess.Popen[str], int]:
    p = subprocess.Popen(["/usr/bin/python3", str(WORKLOADS), "target", "--comm", comm,
                          "--physical", str(physical_mb), "--copies", str(copies), *extra],
                         stdout=subprocess.PIPE, text=True, env=tagged_env())
    assert p.stdout is not None
    end = time.monotonic() + timeout
    pid = int(p.stdout.readline())
    while time.monotonic() < end:
        line = p.stdout.readline()
        if line.strip() == "ready":
            return p, pid
        if not line:
            break
    p.kill()
    raise AssertionError("target did not get ready")


def run_walker(comm: str, pid: int, file: str, interval: float, count: int,
               timeout: float = 300) -> list[dict[str, int]]:
    r = subprocess.run(["/usr/bin/python3", str(WORKLOADS), "walker", "--comm", comm,
                        "--pid", str(pid), "--file", file, "--interval", str(interval),
                        "--count", str(count)],
                       capture_output=True, text=True, timeout=timeout, env=tagged_env())
    assert r.returncode == 0, r.stderr
    walks = [json.loads(ln) for ln in r.stdout.splitlines()]
    assert walks and all("error" not in w for w in walks), walks
    return walks


def kill(p: subprocess.Popen[Any]) -> None:
    if p.poll() is None:
        p.kill()
    p.wait(timeout=30)

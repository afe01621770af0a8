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
import threading
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
            what = proc.args[0] if isinstance(proc.args, (list, tuple)) else proc.args
            raise AssertionError(f"{what!s} exited with {proc.returncode} "
                                 f"before serving {url}")
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


class Served:
    """`ptwalk monitor --serve` on a free loopback port and a private
    Prometheus scraping it every second (timeout 1 s), as a block: entered
    once Prometheus has found the target up, both stopped on the way out
    (the monitor's exit status in `rc`). Shared by the hostile-client test
    and its bench."""

    def __init__(self, tmp: Path, *monitor_args: str) -> None:
        self.tmp, self.args = tmp, monitor_args
        self.port = free_port()
        self.mon: subprocess.Popen[str] | None = None
        self.prom: Prometheus | None = None
        self.rc: int | None = None

    def __enter__(self) -> "Served":
        self.mon = start_monitor(self.tmp, "--serve", f"127.0.0.1:{self.port}", "--quiet",
                                 *self.args)
        try:
            wait_http(f"http://127.0.0.1:{self.port}/metrics", self.mon, 30)
            self.prom = Prometheus(self.tmp, self.port)
            self.prom.ready()
            end = time.monotonic() + 20
            while time.monotonic() < end and not self.prom.query('up{job="ptwalk"} == 1'):
                time.sleep(0.5)
            assert self.prom.query('up{job="ptwalk"} == 1'), "Prometheus never scraped the monitor"
            t = self.prom.api("targets")["activeTargets"][0]
            assert (t["scrapeInterval"], t["scrapeTimeout"]) == ("1s", "1s"), t
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.prom is not None:
            self.prom.stop()
        if self.mon is not None:
            self.rc = stop(self.mon)

    def log(self) -> str:
        return (self.tmp / "monitor.log").read_text()


def metric_sum(text: str, name: str, **labels: str) -> float:
    """The sum of a metric's samples in a Prometheus text exposition whose
    labels include `labels` (0 when there is none)."""
    want = [f'{k}="{v}"' for k, v in labels.items()]
    total = 0.0
    for ln in text.splitlines():
        if ln.startswith(name + "{") or ln.startswith(name + " "):
            series, _, value = ln.rpartition(" ")
            if all(w in series for w in want):
                total += float(value)
    return total


class WalkWitness:
    """A walker of our own, timing each clear_refs walk of a target of our
    own every `interval` while in the block: afterwards, the walks the
    monitor at `port` counted for that walker (ptwalk_monitor_walks_total)
    against the walks made, and the events it says it lost meanwhile
    (ptwalk_monitor_lost_events_total). The target's page tables make each
    walk hold the lock well above the monitor's --min-hold (1 ms): 16
    mappings of one 32 MiB memfd, 131k PTEs, ~5 ms per walk natively."""

    def __init__(self, port: int, target: tuple[str, int], interval: float, secs: float) -> None:
        self.port, (self.tcomm, self.tpid) = port, target
        self.comm = unique_comm("pwh-walk")
        self.interval, self.count = interval, max(1, int(secs / interval))
        self.walks: list[dict[str, int]] = []
        self.error: BaseException | None = None

    def _metrics(self) -> str:
        code, body = http_get(f"http://127.0.0.1:{self.port}/metrics", timeout=5)
        assert code == 200, code
        return body

    def _run(self) -> None:
        try:
            self.walks = run_walker(self.comm, self.tpid, "clear_refs", self.interval, self.count)
        except BaseException as e:  # reported by check()
            self.error = e

    def _counted(self, text: str) -> int:
        return int(metric_sum(text, "ptwalk_monitor_walks_total", walker=self.comm,
                              target=self.tcomm))

    def __enter__(self) -> "WalkWitness":
        text = self._metrics()
        self.lost0 = metric_sum(text, "ptwalk_monitor_lost_events_total")
        self.folded0 = metric_sum(text, "ptwalk_monitor_folded_comms_total")
        self.unpaired0 = metric_sum(text, "ptwalk_monitor_unpaired_events_total")
        self.n0 = self._counted(text)
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._t.join(timeout=120)

    def seen(self, timeout: float = 10) -> tuple[int, float]:
        """(walks the monitor counted, events it reports lost since the
        start), once it has counted them all or after `timeout`; `folded`:
        walks it reports under the comm "other" meanwhile (label limit)."""
        assert self.error is None and self.walks, self.error
        end = time.monotonic() + timeout
        while True:
            text = self._metrics()
            n = self._counted(text) - self.n0
            if n >= len(self.walks) or time.monotonic() > end:
                lost = metric_sum(text, "ptwalk_monitor_lost_events_total") - self.lost0
                self.folded = metric_sum(text, "ptwalk_monitor_folded_comms_total") - self.folded0
                self.unpaired = (metric_sum(text, "ptwalk_monitor_unpaired_events_total")
                                 - self.unpaired0)
                self.lines = [ln for ln in text.splitlines()
                              if f'walker="{self.comm}"' in ln and "_walks_total" in ln]
                return n, lost
            time.sleep(0.5)


REPO_DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def deployed_cpu_share() -> float:
    """The monitor's CPU budget as deployed, in cores: the systemd unit's
    CPUQuota= and the DaemonSet's CPU limit, which must agree."""
    unit = (REPO_DEPLOY / "systemd" / "ptwalk-monitor.service").read_text()
    ds = (REPO_DEPLOY / "kubernetes" / "ptwalk-monitor-daemonset.yaml").read_text()
    q = [ln.split("=", 1)[1].strip() for ln in unit.splitlines() if ln.startswith("CPUQuota=")]
    assert len(q) == 1 and q[0].endswith("%"), q
    lim = ds[ds.index("limits:"):].split("cpu:", 1)[1].split()[0]
    assert lim.endswith("m"), lim
    share = float(q[0][:-1]) / 100
    assert abs(share - float(lim[:-1]) / 1000) < 1e-9, (q, lim)
    return share


class CpuQuota:
    """`pid` (all its threads) in a cgroup of its own limited to `share` of
    one CPU, as CPUQuota= or a Kubernetes CPU limit would, while in the
    block: cgroup v1 `cpu` (cfs_quota_us) or v2 `cpu.max`. On the way out
    (every path) the process goes back to the cgroup it came from and the
    cgroup is removed; a v2 root's `+cpu` that this enabled is disabled
    again. `why` says why no CPU controller could be used (then nothing was
    changed)."""

    PERIOD_US = 100_000

    def __init__(self, pid: int, share: float) -> None:
        self.pid, self.share = pid, share
        self.dir: Path | None = None
        self.back: Path | None = None
        self.enabled_cpu: Path | None = None
        self.why = ""
        v1, v2 = Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup")
        if (v1 / "cpu.cfs_quota_us").exists():
            self.root, self.v2 = v1, False
        elif "cpu" in (v2 / "cgroup.controllers").read_text().split() \
                if (v2 / "cgroup.controllers").exists() else False:
            self.root, self.v2 = v2, True
        else:
            self.why = "no cgroup CPU controller here (v1 cpu or v2 cpu.max)"

    def _origin(self) -> Path:
        for ln in Path(f"/proc/{self.pid}/cgroup").read_text().splitlines():
            hid, ctrl, path = ln.split(":", 2)
            if (self.v2 and hid == "0") or (not self.v2 and "cpu" in ctrl.split(",")):
                return self.root / path.lstrip("/")
        return self.root

    def __enter__(self) -> "CpuQuota":
        if self.why:
            return self
        self.back = self._origin()
        d = self.root / f"ptwalk-test-{os.getpid()}-{self.pid}"
        try:
            if self.v2:
                ctl = self.root / "cgroup.subtree_control"
                if "cpu" not in ctl.read_text().split():
                    ctl.write_text("+cpu")
                    self.enabled_cpu = ctl
            d.mkdir()
            self.dir = d
            quota = int(self.share * self.PERIOD_US)
            if self.v2:
                (d / "cpu.max").write_text(f"{quota} {self.PERIOD_US}")
            else:
                (d / "cpu.cfs_period_us").write_text(str(self.PERIOD_US))
                (d / "cpu.cfs_quota_us").write_text(str(quota))
            (d / "cgroup.procs").write_text(str(self.pid))
        except BaseException:
            self.__exit__()
            raise
        return self

    def throttled_us(self) -> int:
        """How long the cgroup's tasks were kept off CPU by the quota."""
        assert self.dir is not None
        for ln in (self.dir / "cpu.stat").read_text().splitlines():
            k, v = ln.split()
            if k == "throttled_usec":
                return int(v)
            if k == "throttled_time":
                return int(v) // 1000
        return 0

    def __exit__(self, *exc: object) -> None:
        if self.dir is not None:
            try:
                if self.back is not None and Path(f"/proc/{self.pid}").exists():
                    (self.back / "cgroup.procs").write_text(str(self.pid))
            except OSError:
                pass  # the process is gone: nothing to move
            for _ in range(50):
                try:
                    self.dir.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
            self.dir = None
        if self.enabled_cpu is not None:
            try:
                self.enabled_cpu.write_text("-cpu")
            except OSError:
                pass  # another cgroup below the root uses it now
            self.enabled_cpu = None

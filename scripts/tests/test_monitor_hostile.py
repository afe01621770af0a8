# SPDX-License-Identifier: GPL-2.0
"""`ptwalk monitor --serve` under hostile clients while Debian's Prometheus
scrapes it every second: 300 idle half-requests, a flood from 8 client
threads, 2 MiB headers, clients that reset mid-response. The monitor runs
under its deployed CPU budget (the systemd unit's CPUQuota=, the
DaemonSet's CPU limit: a cgroup quota of the same share), and a walker of
our own walks a target every 0.5 s meanwhile. Each load keeps >= 99% of
the scrapes of its window answered, each within SCRAPE_BOUND_S; the
monitor's CPU within its budget and its VmRSS within RSS_GROWTH_KIB of
what it was before the first load; and it counts every walk of the
walker, or reports lost events (never a walk missed in silence). The
loads (http_load.py) come from other loopback addresses than
Prometheus's, as another host on the pod network would; the flood comes
from Prometheus's own 127.0.0.1."""
from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

import http_load
from monitor_util import (CpuQuota, Served, WalkWitness, deployed_cpu_share, http_get, kill,
                          require, require_root, start_target, unique_comm)

# each scrape's scrape_duration_seconds: half Prometheus's 1 s timeout.
# Under the 20% quota a scrape also waits for CPU: alone on the 2-vCPU
# development host the longest was 42 ms; beside other work (load 4-5:
# builds and qualify runs flooding the host with mmap_lock events) 19
# runs of the file saw up to 454 ms, once.
SCRAPE_BOUND_S = 0.5
RSS_GROWTH_KIB = 16 << 10  # over the monitor's VmRSS before the first load
MIN_SUCCESS = 0.99
WALK_INTERVAL_S = 0.5
# from the server (userspace/os/include/ptwalk/http_server.hpp)
IDLE_TIMEOUT_S = 5
PER_IP = 16


@dataclass
class Env:
    srv: Served
    quota: CpuQuota
    target: tuple[str, int]
    rss0_kib: int

    @property
    def port(self) -> int:
        return self.srv.port

    @property
    def pid(self) -> int:
        assert self.srv.mon is not None
        return self.srv.mon.pid


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    require_root()
    require(shutil.which("prometheus") is not None,
            "Debian's prometheus is not installed (scripts/deps.sh prometheus)")
    tmp = tmp_path_factory.mktemp("hostile")
    tcomm = unique_comm("pwh-tgt")
    tproc, tpid = start_target(tcomm, 32, 16)
    try:
        with Served(tmp) as srv:
            assert srv.mon is not None
            with CpuQuota(srv.mon.pid, deployed_cpu_share()) as quota:
                require(not quota.why, quota.why)
                yield Env(srv, quota, (tcomm, tpid), http_load.vm_rss_kib(srv.mon.pid))
        assert srv.rc == 0, srv.log()
    finally:
        kill(tproc)


@pytest.fixture
def witness(served: Env) -> Iterator[WalkWitness]:
    """Walks of our own during the load, started before it, longer than it."""
    with WalkWitness(served.port, served.target, WALK_INTERVAL_S, 8) as w:
        yield w
        # a window that failed before counting its walks: counted now,
        # so that none of them is taken for the next window's
        w.__exit__()
        if w.error is None and w.walks:
            w.seen()


def check_window(e: Env, t0: float, pw: http_load.ProcWatch, ww: WalkWitness,
                 what: str) -> http_load.Scrapes:
    """The scrapes of [t0, now] from Prometheus, the monitor's RSS and CPU,
    and the walks it counted."""
    assert e.srv.prom is not None and e.srv.mon is not None
    t1 = time.time()
    time.sleep(1.5)  # the last scrape of the window stored
    sc = http_load.scrapes(e.srv.prom, t0, t1)
    assert e.srv.mon.poll() is None, f"monitor exited under {what}"
    assert sc.total >= int(t1 - t0) - 2, (what, sc)  # a scrape every second
    assert sc.rate() >= MIN_SUCCESS, f"{what}: {sc.ok}/{sc.total} scrapes answered: {sc}"
    assert max(sc.seconds) <= SCRAPE_BOUND_S, \
        f"{what}: scrape durations {sc.seconds}; CPU {pw.cpu_share:.3f} of a core"
    assert pw.max_kib <= e.rss0_kib + RSS_GROWTH_KIB, (what, pw.max_kib, e.rss0_kib)
    # the quota holds it (1 period of slack over the window)
    budget = e.quota.share
    assert pw.cpu_share <= budget + 0.1 / pw.wall_s, (what, pw.cpu_share, budget)
    code, _ = http_get(f"http://127.0.0.1:{e.port}/metrics", timeout=5)
    assert code == 200
    ww.__exit__()
    seen, lost = ww.seen()
    made = len(ww.walks)
    assert seen <= made, (what, seen, made)  # never a walk too many
    # a walk missed is a lost event the monitor reported, or counted under
    # walker="other" past the comm label limit, which it reports too
    assert seen == made or lost > 0 or ww.folded > 0, (
        f"{what}: {seen}/{made} walks counted, 0 events lost, {ww.unpaired:.0f} unpaired "
        f"events; the walker's series: {ww.lines}; its walks: {ww.walks}")
    print(f"{what}: {sc.ok}/{sc.total} scrapes answered, longest {max(sc.seconds) * 1e3:.1f} ms, "
          f"VmRSS at most {pw.max_kib} KiB (before the loads {e.rss0_kib} KiB), CPU "
          f"{100 * pw.cpu_share:.1f}% of a core (budget {100 * budget:.0f}%, throttled "
          f"{e.quota.throttled_us() / 1e6:.2f} s so far), walks counted {seen}/{made}, "
          f"{lost:.0f} events reported lost, {ww.folded:.0f} walks folded into other")
    return sc


def test_idle_half_requests(served: Env, witness: WalkWitness) -> None:
    """300 connections that send "GET /met" and wait, from 10 addresses:
    16 from each are held until the idle timeout (and then opened again,
    for one more round), the rest closed at once; the scrapes go on."""
    n, addrs = 300, len(http_load.ATTACKERS)
    t0 = time.time()
    with http_load.ProcWatch(served.pid) as pw, \
            http_load.IdleHalfRequests(served.port, n, reopen_s=IDLE_TIMEOUT_S + 1) as idle:
        idle.watch(2 * IDLE_TIMEOUT_S + 4)
    st = idle.stats
    print(st.summary())
    check_window(served, t0, pw, witness, "300 idle half-requests")
    assert not st.errors, st.errors  # each connected (a refusal is a close)
    assert st.still_open == 0, f"{st.still_open} idle connections outlived the timeout"
    early = [t for t in st.closed_after if t < 1]
    held = [t for t in st.closed_after if t >= 1]
    assert len(early) >= n - addrs * PER_IP, (len(early), len(held))
    assert addrs * PER_IP // 2 <= len(held) <= 2 * addrs * PER_IP, (len(early), len(held))
    assert idle.most_held_at_once() <= PER_IP, idle.most_held_at_once()
    assert all(IDLE_TIMEOUT_S - 1 <= t <= IDLE_TIMEOUT_S + 2 for t in held), sorted(held)
    assert not st.statuses, st.statuses  # no answer to half a request


def loaded_window(e: Env, ww: WalkWitness, load: Callable[[int, int, float], http_load.Load],
                  threads: int, what: str) -> http_load.LoadStats:
    """load(port, threads, 6 s) against the monitor, watched; what its
    clients saw, once check_window passed."""
    t0 = time.time()
    with http_load.ProcWatch(e.pid) as pw, load(e.port, threads, 6) as running:
        time.sleep(6)
    st = running.stop()
    print(st.summary())
    check_window(e, t0, pw, ww, what)
    return st


def test_flood_from_8_threads(served: Env, witness: WalkWitness) -> None:
    st = loaded_window(served, witness, http_load.flood, 8, "a flood from 8 threads")
    assert st.statuses[200] >= 100, st  # the flood was served too
    # the rest refused by the per-address limit (a closed connection is
    # counted until the server has reaped it): reset, never answered wrong
    assert set(st.statuses) <= {200, 0}, st
    assert set(st.errors) <= {"ConnectionResetError", "BrokenPipeError"}, st.errors


def test_2mib_headers(served: Env, witness: WalkWitness) -> None:
    st = loaded_window(served, witness, http_load.big_headers, 4, "2 MiB headers")
    # answered 431 once the headers passed the request memory, and closed;
    # a client still sending may see the reset before the answer
    assert st.statuses[431] >= 1, st
    assert set(st.statuses) <= {431, 0}, st


def test_clients_leaving_mid_response(served: Env, witness: WalkWitness) -> None:
    st = loaded_window(served, witness, http_load.leave_mid_response, 4,
                       "clients leaving mid-response")
    assert st.attempts >= 100, st
    assert set(st.statuses) <= {200, 0}, st

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make bench, monitor server part: Prometheus's scrapes of `ptwalk monitor
--serve` under each hostile load of scripts/tests/http_load.py, in one run.

Debian's prometheus scrapes the monitor every second (timeout 1 s) for a
window with no load, then one window under each load: 300 idle
half-requests (reopened as the server closes them), a flood from 8 client
threads, 2 MiB headers from 4 threads, clients that reset mid-response
from 4 threads. Reports per window the share of scrapes answered and the
scrape latency (Prometheus's scrape_duration_seconds: median and max), what
the load's clients saw, and the monitor's largest VmRSS. Figures, not
assertions (test_monitor_hostile.py asserts the bounds); BENCH_HTTP_WINDOW_S
sets the window (default 20 s)."""
from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, ContextManager

sys.path.insert(0, str(Path(__file__).resolve().parent / "tests"))

import http_load  # noqa: E402
from monitor_util import Prometheus, free_port, start_monitor, stop, wait_http  # noqa: E402


class Quiet:
    """No load: the baseline window."""

    def __enter__(self) -> "Quiet":
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def window(name: str, prom: Prometheus, pid: int, secs: float,
           load: Callable[[], ContextManager[object]]) -> None:
    t0 = time.time()
    with http_load.RssWatch(pid) as rss, load() as ld:
        if isinstance(ld, http_load.IdleHalfRequests):
            ld.watch(secs)
        else:
            time.sleep(secs)
    t1 = time.time()
    time.sleep(1.5)  # the window's last scrape stored
    sc = http_load.scrapes(prom, t0, t1)
    ok = [s for s, u in zip(sc.seconds, sc.up) if u == 1]
    lat = (f"median {statistics.median(ok) * 1e3:6.1f} ms, max {max(ok) * 1e3:6.1f} ms"
           if ok else "none answered")
    print(f"  {name:<22} {sc.ok:>3}/{sc.total:<3} scrapes answered ({100 * sc.rate():5.1f}%), "
          f"latency {lat}, VmRSS max {rss.max_kib / 1024:.1f} MiB")
    st = getattr(ld, "stats", None)
    if isinstance(ld, http_load.Load):
        st = ld.stop()
    if isinstance(st, http_load.LoadStats):
        print(f"  {'':<22} clients: {st.summary()}")


def main() -> int:
    print("monitor HTTP server under hostile clients (Prometheus scraping every 1 s):")
    if os.geteuid() != 0:
        print("  not measured: ptwalk monitor needs root")
        return 0
    if shutil.which("prometheus") is None:
        print("  not measured: Debian's prometheus is not installed (scripts/deps.sh prometheus)")
        return 0
    secs = float(os.environ.get("BENCH_HTTP_WINDOW_S", "20"))
    with tempfile.TemporaryDirectory(prefix="ptwalk-bench-http-") as d:
        tmp = Path(d)
        port = free_port()
        mon = start_monitor(tmp, "--serve", f"127.0.0.1:{port}", "--quiet")
        prom = None
        try:
            wait_http(f"http://127.0.0.1:{port}/metrics", mon, 30)
            prom = Prometheus(tmp, port)
            prom.ready()
            end = time.monotonic() + 20
            while time.monotonic() < end and not prom.query('up{job="ptwalk"} == 1'):
                time.sleep(0.5)
            print(f"  window {secs:.0f} s each; the monitor's VmRSS before: "
                  f"{http_load.vm_rss_kib(mon.pid) / 1024:.1f} MiB")
            window("no load", prom, mon.pid, secs, Quiet)
            window("300 idle half-requests", prom, mon.pid, secs,
                   lambda: http_load.IdleHalfRequests(port, 300, reopen_s=secs))
            window("flood, 8 threads", prom, mon.pid, secs,
                   lambda: http_load.flood(port, 8, secs))
            window("2 MiB headers", prom, mon.pid, secs,
                   lambda: http_load.big_headers(port, 4, secs))
            window("reset mid-response", prom, mon.pid, secs,
                   lambda: http_load.leave_mid_response(port, 4, secs))
        except (AssertionError, OSError) as e:
            print(f"  not measured: {e}")
        finally:
            if prom is not None:
                prom.stop()
            rc = stop(mon)
        if rc != 0:
            print(f"  ptwalk monitor exited {rc}: {(tmp / 'monitor.log').read_text().strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

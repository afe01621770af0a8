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
the load's clients saw, the monitor's largest VmRSS and CPU share, and
whether it counted every walk of a walker of our own made meanwhile (and
the events it reports lost). Figures, not
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
from monitor_util import Served, WalkWitness, kill, start_target, unique_comm  # noqa: E402


class Quiet:
    """No load: the baseline window."""

    def __enter__(self) -> "Quiet":
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def window(name: str, srv: Served, target: tuple[str, int], secs: float,
           load: Callable[[], ContextManager[object]]) -> None:
    assert srv.prom is not None and srv.mon is not None
    t0 = time.time()
    with http_load.ProcWatch(srv.mon.pid) as pw, \
            WalkWitness(srv.port, target, 0.5, secs) as ww, load() as ld:
        if isinstance(ld, http_load.IdleHalfRequests):
            ld.watch(secs)
        else:
            time.sleep(secs)
    t1 = time.time()
    time.sleep(1.5)  # the window's last scrape stored
    sc = http_load.scrapes(srv.prom, t0, t1)
    ok = [s for s, u in zip(sc.seconds, sc.up) if u == 1]
    lat = (f"median {statistics.median(ok) * 1e3:6.1f} ms, max {max(ok) * 1e3:6.1f} ms"
           if ok else "none answered")
    seen, lost = ww.seen()
    print(f"  {name:<22} {sc.ok:>3}/{sc.total:<3} scrapes answered ({100 * sc.rate():5.1f}%), "
          f"latency {lat}, VmRSS max {pw.max_kib / 1024:.1f} MiB, "
          f"CPU {100 * pw.cpu_share:.1f}% of a core, "
          f"walks counted {seen}/{len(ww.walks)} ({lost:.0f} events reported lost)")
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
        srv = Served(Path(d))
        tcomm = unique_comm("pwh-tgt")
        tproc = None
        try:
            tproc, tpid = start_target(tcomm, 32, 16)
            with srv:
                assert srv.mon is not None
                print(f"  window {secs:.0f} s each, a clear_refs walk every 0.5 s; the "
                      f"monitor's VmRSS before: {http_load.vm_rss_kib(srv.mon.pid) / 1024:.1f} MiB")
                port, tgt = srv.port, (tcomm, tpid)
                window("no load", srv, tgt, secs, Quiet)
                window("300 idle half-requests", srv, tgt, secs,
                       lambda: http_load.IdleHalfRequests(port, 300, reopen_s=secs))
                window("flood, 8 threads", srv, tgt, secs,
                       lambda: http_load.flood(port, 8, secs))
                window("2 MiB headers", srv, tgt, secs,
                       lambda: http_load.big_headers(port, 4, secs))
                window("reset mid-response", srv, tgt, secs,
                       lambda: http_load.leave_mid_response(port, 4, secs))
        except (AssertionError, OSError) as e:
            print(f"  not measured: {e}")
        finally:
            if tproc is not None:
                kill(tproc)
        if srv.rc not in (None, 0):
            print(f"  ptwalk monitor exited {srv.rc}: {srv.log().strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

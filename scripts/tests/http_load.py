# SPDX-License-Identifier: GPL-2.0
"""Hostile clients for `ptwalk monitor --serve`, shared by
test_monitor_hostile.py and scripts/bench_monitor_http.py: idle
half-requests, a flood, 2 MiB headers, clients that leave mid-response;
and what Prometheus and /proc saw meanwhile. Loopback addresses only;
every loop is bounded in count and in time."""
from __future__ import annotations

import collections
import os
import selectors
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from monitor_util import Prometheus

# Other hosts on the pod network: loopback addresses other than
# Prometheus's 127.0.0.1 (the whole of 127.0.0.0/8 is lo's on Linux)
ATTACKERS = [f"127.0.0.{i}" for i in range(2, 12)]
REQUEST = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
MAX_PER_THREAD = 100000  # requests of one client thread, whatever the time
OPEN_S = 10  # to open the idle connections, whatever the server does


@dataclass
class LoadStats:
    """What the clients of one load saw."""
    name: str
    attempts: int = 0
    statuses: collections.Counter[int] = field(default_factory=collections.Counter)
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    latencies: list[float] = field(default_factory=list)  # answered requests, s
    # idle half-requests: seconds from connect until the server closed
    closed_after: list[float] = field(default_factory=list)
    still_open: int = 0

    def summary(self) -> str:
        lat = sorted(self.latencies)
        x = f"{self.name}: {self.attempts} attempts, statuses {dict(self.statuses)}"
        if self.errors:
            x += f", errors {dict(self.errors)}"
        if lat:
            x += (f", client latency median {lat[len(lat) // 2] * 1e3:.1f} ms, "
                  f"max {lat[-1] * 1e3:.1f} ms")
        if self.closed_after:
            early = sum(1 for t in self.closed_after if t < 1)
            late = [t for t in self.closed_after if t >= 1]
            x += (f", closed by the server: {early} within 1 s, "
                  f"{len(late)} after {min(late) if late else 0:.1f}"
                  f"-{max(self.closed_after):.1f} s")
        if self.still_open:
            x += f", {self.still_open} still open at the end"
        return x

    def merge(self, o: "LoadStats") -> None:
        self.attempts += o.attempts
        self.statuses.update(o.statuses)
        self.errors.update(o.errors)
        self.latencies += o.latencies


def _connect(port: int, src: str = "127.0.0.1", timeout: float = 5) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.bind((src, 0))
        s.connect(("127.0.0.1", port))
    except OSError:
        s.close()
        raise
    return s


def _status(head: bytes) -> Optional[int]:
    if head.startswith(b"HTTP/1.") and len(head) >= 12:
        try:
            return int(head[9:12])
        except ValueError:
            return None
    return None


def _read_all(s: socket.socket, limit: int = 8 << 20) -> bytes:
    out = bytearray()
    while len(out) < limit:
        b = s.recv(65536)
        if not b:
            break
        out += b
    return bytes(out)


class Load:
    """Client threads that run `one` until stop() or `duration` s."""

    def __init__(self, name: str, threads: int, duration: float,
                 one: Callable[[int, LoadStats], None]) -> None:
        self.name, self.duration, self.one = name, duration, one
        self.stats = [LoadStats(name) for _ in range(threads)]
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                         for i in range(threads)]

    def _run(self, i: int) -> None:
        end = time.monotonic() + self.duration
        st = self.stats[i]
        for _ in range(MAX_PER_THREAD):
            if self._stop.is_set() or time.monotonic() >= end:
                break
            st.attempts += 1
            try:
                self.one(i, st)
            except OSError as e:
                st.errors[type(e).__name__] += 1

    def __enter__(self) -> "Load":
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> LoadStats:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=30)
        total = LoadStats(self.name)
        for s in self.stats:
            total.merge(s)
        return total


def flood(port: int, threads: int, duration: float) -> Load:
    """Full scrapes back to back, each on a new connection."""
    def one(_i: int, st: LoadStats) -> None:
        t0 = time.monotonic()
        with _connect(port) as s:
            s.sendall(REQUEST)
            body = _read_all(s)
        code = _status(body)
        st.statuses[code or 0] += 1
        if code is not None:
            st.latencies.append(time.monotonic() - t0)
    return Load("flood", threads, duration, one)


def big_headers(port: int, threads: int, duration: float, size: int = 2 << 20) -> Load:
    """A request whose headers run to `size` bytes."""
    pad = b"X-Pad: " + b"a" * size + b"\r\n"

    def one(i: int, st: LoadStats) -> None:
        with _connect(port, ATTACKERS[i % len(ATTACKERS)]) as s:
            try:
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n" + pad + b"\r\n")
            except OSError as e:  # the server answered and closed before the end
                st.errors["send:" + type(e).__name__] += 1
            try:
                head = s.recv(64)
            except OSError as e:
                st.errors["recv:" + type(e).__name__] += 1
                return
        st.statuses[_status(head) or 0] += 1
    return Load("2 MiB headers", threads, duration, one)


def leave_mid_response(port: int, threads: int, duration: float) -> Load:
    """A scrape whose client resets the connection after the first bytes
    of the answer (or before any, every other time)."""
    linger = struct.pack("ii", 1, 0)  # close() sends RST

    def one(i: int, st: LoadStats) -> None:
        with _connect(port, ATTACKERS[i % len(ATTACKERS)]) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(REQUEST)
            if st.attempts % 2:
                st.statuses[_status(s.recv(16)) or 0] += 1
    return Load("leave mid-response", threads, duration, one)


class IdleHalfRequests:
    """`count` connections spread over ATTACKERS, each sends the start of a
    request ("GET /met") and nothing more. Records when the server closes
    each one (a refusal at once, or its idle timeout); until `reopen_s`
    after the start, one the server held and then closed is opened again
    from the same address, as a patient attacker would."""

    def __init__(self, port: int, count: int, reopen_s: float = 0) -> None:
        self.port, self.count = port, count
        self.stats = LoadStats("idle half-requests")
        self.spans: list[tuple[str, float, float]] = []  # (address, opened, closed)
        self.reopen_until = time.monotonic() + reopen_s

    def _open(self, src: str) -> None:
        self.stats.attempts += 1
        try:
            s = _connect(self.port, src, timeout=1)
            s.sendall(b"GET /met")
            s.setblocking(False)
        except OSError as e:
            self.stats.errors[type(e).__name__] += 1
            return
        self.sel.register(s, selectors.EVENT_READ, (src, time.monotonic()))

    def __enter__(self) -> "IdleHalfRequests":
        self.sel = selectors.DefaultSelector()
        end = time.monotonic() + OPEN_S
        for i in range(self.count):
            if time.monotonic() >= end:
                self.stats.errors[f"not opened within {OPEN_S} s"] += self.count - i
                break
            self._open(ATTACKERS[i % len(ATTACKERS)])
        return self

    def watch(self, seconds: float) -> None:
        """Records the closes seen within `seconds`."""
        end = time.monotonic() + seconds
        while self.sel.get_map() and time.monotonic() < end:
            for key, _ in self.sel.select(timeout=max(0.0, end - time.monotonic())):
                s = key.fileobj
                assert isinstance(s, socket.socket)
                try:
                    b = s.recv(4096)
                except OSError:
                    b = b""
                if b:
                    self.stats.statuses[_status(b) or 0] += 1
                    continue
                src, opened = key.data
                now = time.monotonic()
                self.stats.closed_after.append(now - opened)
                self.spans.append((src, opened, now))
                self.sel.unregister(s)
                s.close()
                if now - opened >= 1 and now < self.reopen_until:
                    self._open(src)

    def most_held_at_once(self) -> int:
        """The most connections from one address open at once, among those
        the server held (closed 1 s or more after they opened)."""
        most = 0
        for src in {a for a, _, _ in self.spans}:
            ev = sorted(x for a, o, c in self.spans if a == src and c - o >= 1
                        for x in ((o, 1), (c, -1)))
            n = 0
            for _, d in ev:
                n += d
                most = max(most, n)
        return most

    def __exit__(self, *exc: object) -> None:
        self.stats.still_open = len(self.sel.get_map())
        for key in list(self.sel.get_map().values()):
            self.sel.unregister(key.fileobj)
            key.fileobj.close()  # type: ignore[union-attr]
        self.sel.close()


def vm_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of `pid` (/proc/PID/stat fields 14, 15)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ProcWatch:
    """While in the block: the most VmRSS of `pid` seen every 0.2 s, and
    the CPU time it used (cpu_s; cpu_share: of one core, over the block)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.max_kib = pid, vm_rss_kib(pid)
        self.cpu_s, self.wall_s = 0.0, 0.0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            try:
                self.max_kib = max(self.max_kib, vm_rss_kib(self.pid))
            except (OSError, AssertionError):
                return

    @property
    def cpu_share(self) -> float:
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    def __enter__(self) -> "ProcWatch":
        self._cpu0, self._t0 = cpu_seconds(self.pid), time.monotonic()
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join(timeout=5)
        self.wall_s = time.monotonic() - self._t0
        try:
            self.cpu_s = cpu_seconds(self.pid) - self._cpu0
        except OSError:
            self.cpu_s = float("nan")


@dataclass
class Scrapes:
    """Prometheus's scrapes of the monitor whose timestamps fall in a
    window: one `up` sample and one `scrape_duration_seconds` each."""
    up: list[float]
    seconds: list[float]

    @property
    def total(self) -> int:
        return len(self.up)

    @property
    def ok(self) -> int:
        return sum(1 for u in self.up if u == 1)

    def rate(self) -> float:
        return self.ok / self.total if self.total else 0.0


def scrapes(prom: Prometheus, t0_unix: float, t1_unix: float) -> Scrapes:
    """The raw samples of (t0, t1] (call a scrape interval after t1)."""
    w = f"{max(1, int((t1_unix - t0_unix) * 1000))}ms"

    def samples(expr: str) -> list[float]:
        r = prom.api("query", query=f'{expr}{{job="ptwalk"}}[{w}]', time=f"{t1_unix:.3f}")
        return [float(v) for _, v in r["result"][0]["values"]] if r["result"] else []
    return Scrapes(samples("up"), samples("scrape_duration_seconds"))

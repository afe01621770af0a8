#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Small foreign programs for the `ptwalk monitor` tests, with comms of the
test's choosing (other engineers' ptwalk runs on a shared host use ptwalk's
own names):

  target  --comm C --physical MB --copies N [--mapper] [--exit-after S]
          one memfd of MB mapped N times (MAP_POPULATE): N*MB of page
          tables from MB of RAM; idle (never takes its own mmap_lock) or, with
          --mapper, maps and unmaps 64 KiB flat out. Prints its pid, then
          "ready".
  walker  --comm C --pid P --file clear_refs|smaps --interval S --count N
          writes 1 to /proc/P/clear_refs or reads /proc/P/smaps every S
          seconds (as wss does); prints one JSON line per walk:
          {"start_ns": CLOCK_MONOTONIC, "ns": duration, "pid": own pid}.
  holder  --comm C --pid P
          reads /proc/P/pagemap over P's largest mappings flat out, each
          read(2) holding a reference to P's mm from start to end, until P
          has exited: when P exits during a read, the reader drops the mm's
          last reference and the kernel tears the mm down (exit_mmap) in
          the reader. Prints its pid, then "reading".
  forker  --comm C --mb MB --count N
          touches MB of private anonymous memory, then N times forks a
          child that execs /bin/true: each child's exec tears down its copy
          of the parent's page tables (exit_mmap in the child, before the
          exec event). Prints each child's pid, then "done".
"""
from __future__ import annotations

import argparse
import json
import mmap
import os
import sys
import time


def set_comm(c: str) -> None:
    with open("/proc/self/comm", "w") as f:
        f.write(c[:15])


def target(a: argparse.Namespace) -> None:
    set_comm(a.comm)
    size = a.physical << 20
    fd = os.memfd_create("monitor-test")
    os.ftruncate(fd, size)
    chunk = b"\1" * (1 << 20)
    for off in range(0, size, len(chunk)):
        os.pwrite(fd, chunk, off)
    maps = [mmap.mmap(fd, size, flags=mmap.MAP_SHARED | mmap.MAP_POPULATE)
            for _ in range(a.copies)]
    assert len(maps) == a.copies  # kept mapped until exit
    print(os.getpid(), flush=True)
    print("ready", flush=True)
    end = time.monotonic() + a.exit_after if a.exit_after else None
    while end is None or time.monotonic() < end:
        if a.mapper:
            for _ in range(200):
                m = mmap.mmap(-1, 64 << 10)
                m[0] = 1
                m.close()
        else:
            time.sleep(0.2)
    # exit without unmapping: the kernel tears every mapping down in
    # exit_mmap (mmap_lock for read to unmap, then for write to free the
    # page tables), in the exiting process
    sys.stdout.flush()
    os._exit(0)


def walker(a: argparse.Namespace) -> None:
    set_comm(a.comm)
    path = f"/proc/{a.pid}/{a.file}"
    for i in range(a.count):
        t0 = time.monotonic_ns()
        try:
            if a.file == "clear_refs":
                with open(path, "w") as f:
                    f.write("1")
            else:
                with open(path, "rb") as f:
                    while f.read(1 << 16):
                        pass
        except OSError as e:
            print(json.dumps({"error": str(e)}), flush=True)
            return
        t1 = time.monotonic_ns()
        print(json.dumps({"start_ns": t0, "ns": t1 - t0, "pid": os.getpid()}), flush=True)
        if i + 1 < a.count:
            time.sleep(a.interval)


def holder(a: argparse.Namespace) -> None:
    set_comm(a.comm)
    spans = []
    with open(f"/proc/{a.pid}/maps") as f:
        for ln in f:
            lo, hi = (int(x, 16) for x in ln.split()[0].split("-"))
            spans.append((hi - lo, lo))
    size, lo = max(spans)
    # one read(2) covers every mapping of the memfd's size (8 bytes a page)
    starts = sorted(s for n, s in spans if n == size)
    first, last = starts[0], starts[-1] + size
    buf = bytearray((last - first) // 4096 * 8)
    fd = os.open(f"/proc/{a.pid}/pagemap", os.O_RDONLY)
    print(os.getpid(), flush=True)
    print("reading", flush=True)
    # pagemap_read() returns 0 once the mm has no users left
    while os.preadv(fd, [buf], first // 4096 * 8) > 0:
        pass
    os.close(fd)


def forker(a: argparse.Namespace) -> None:
    set_comm(a.comm)
    size = a.mb << 20
    buf = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for off in range(0, size, 4096):
        buf[off] = 1
    for _ in range(a.count):
        pid = os.fork()
        if pid == 0:
            os.execv("/bin/true", ["true"])
        os.waitpid(pid, 0)
        print(pid, flush=True)
        time.sleep(0.2)
    print("done", flush=True)


def main() -> int:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("target")
    t.add_argument("--comm", required=True)
    t.add_argument("--physical", type=int, default=64)
    t.add_argument("--copies", type=int, default=1)
    t.add_argument("--mapper", action="store_true")
    t.add_argument("--exit-after", type=float, default=0)
    w = sub.add_parser("walker")
    w.add_argument("--comm", required=True)
    w.add_argument("--pid", type=int, required=True)
    w.add_argument("--file", choices=["clear_refs", "smaps"], required=True)
    w.add_argument("--interval", type=float, default=1.0)
    w.add_argument("--count", type=int, default=5)
    h = sub.add_parser("holder")
    h.add_argument("--comm", required=True)
    h.add_argument("--pid", type=int, required=True)
    f = sub.add_parser("forker")
    f.add_argument("--comm", required=True)
    f.add_argument("--mb", type=int, default=1024)
    f.add_argument("--count", type=int, default=5)
    a = p.parse_args()
    {"target": target, "walker": walker, "holder": holder, "forker": forker}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())

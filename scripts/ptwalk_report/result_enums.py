# SPDX-License-Identifier: GPL-2.0
"""The enumerations of a ptwalk.result/1 document beyond the walk kinds,
lock modes and units of walk_kinds.py: each member's value is its text in
the JSON (results/SCHEMA.md)."""
from __future__ import annotations

import enum


class Backend(enum.Enum):
    module = "module"
    tracepoint = "tracepoint"
    syscall = "syscall"


class Backing(enum.Enum):
    anon = "anon"
    thp = "thp"
    shmem = "shmem"
    file = "file"
    hugetlb = "hugetlb"
    alias = "alias"
    zeropage = "zeropage"


class VictimName(enum.Enum):
    read = "read"
    write = "write"
    fault = "fault"
    mmap = "mmap"


class EstimateStatus(enum.Enum):
    distinct = "distinct"
    corrected = "corrected"
    range = "range"
    uncorrected = "uncorrected"


class Accel(enum.Enum):
    tcg = "tcg"
    kvm = "kvm"


class GuestClock(enum.Enum):
    realtime = "realtime"
    icount = "icount"

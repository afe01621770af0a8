# SPDX-License-Identifier: GPL-2.0
"""The enumerations of ptwalk's results and of the monitor's JSON beyond
the walk kinds, lock modes and units of walk_kinds.py, written by
scripts/gen_walk_kinds.py from their one definition,
userspace/model/include/ptwalk/result_enums.def: do not edit
(scripts/tests/test_walk_kinds.py fails when it drifts). Each member's
value is its text in the JSON (results/SCHEMA.md)."""
from __future__ import annotations

import enum


class Backend(enum.Enum):
    """The kernel view a result was measured with (backend)."""
    module = "module"
    tracepoint = "tracepoint"
    syscall = "syscall"


class MonitorBackend(enum.Enum):
    """The kernel view of a monitor's JSON (backend)."""
    module = "module"
    bpf = "bpf"
    tracepoint = "tracepoint"


class Backing(enum.Enum):
    """The scenario's memory (scenario.backing)."""
    anon = "anon"
    thp = "thp"
    shmem = "shmem"
    file = "file"
    hugetlb = "hugetlb"
    alias = "alias"
    zeropage = "zeropage"


class VictimName(enum.Enum):
    """A victim (scenario.victims, victims' keys, a stall's victim)."""
    read = "read"
    write = "write"
    fault = "fault"
    mmap = "mmap"
    vma = "vma"


class FaultRegion(enum.Enum):
    """Where the fault victim maps (scenario.fault_region)."""
    any = "any"
    below = "below"
    above = "above"


class EstimateStatus(enum.Enum):
    """How a kind's stall estimate was made (stall_estimate.kinds.KIND.status)."""
    distinct = "distinct"
    corrected = "corrected"
    range = "range"
    uncorrected = "uncorrected"
    no_mmap_lock = "no_mmap_lock"


class MonitorBasis(enum.Enum):
    """How the monitor knows a walk's target (a hold's target.basis)."""
    probe = "probe"
    mm_owner = "mm_owner"
    fd_table = "fd_table"
    exit = "exit"
    exec = "exec"
    unknown = "unknown"
    module = "module"


class MeasuredStallSource(enum.Enum):
    """Where a kind's measured stall is from (measured_stall_source)."""
    backend = "backend attribution (walk_summary.max_stall_ns)"
    mmap_victim = "mmap victim, max during walks"

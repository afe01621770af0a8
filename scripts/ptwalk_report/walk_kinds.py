# SPDX-License-Identifier: GPL-2.0
"""Walk kinds, scanner profiles and lock modes, written by
scripts/gen_walk_kinds.py from their one definition,
userspace/model/include/ptwalk/walk_kinds.def and (the lock modes)
userspace/os/include/ptwalk/lock_modes.def: do not edit
(scripts/tests/test_walk_kinds.py fails when it drifts).
Text becomes a member here: WalkKind("smaps") raises ValueError for an
unknown name."""
from __future__ import annotations

import enum
from dataclasses import dataclass


class WalkKind(enum.Enum):
    clear_refs = "clear_refs"
    clear_refs_anon = "clear_refs_anon"
    clear_refs_file = "clear_refs_file"
    softdirty = "softdirty"
    smaps = "smaps"
    smaps_rollup = "smaps_rollup"
    maps = "maps"
    numa_maps = "numa_maps"
    pagemap = "pagemap"
    pagemap_scan = "pagemap_scan"


class Profile(enum.Enum):
    clear_refs = "clear_refs"
    clear_refs_anon = "clear_refs_anon"
    clear_refs_file = "clear_refs_file"
    softdirty = "softdirty"
    smaps = "smaps"
    smaps_rollup = "smaps_rollup"
    maps = "maps"
    numa_maps = "numa_maps"
    pagemap = "pagemap"
    pagemap_scan = "pagemap_scan"
    cadvisor = "cadvisor"
    wss = "wss"
    damon = "damon"


class LockMode(enum.Enum):
    """How a walk kind takes mmap_lock, and how one hold or wait does."""
    none = "none"
    read = "read"
    write = "write"


class WalkLockMode(enum.Enum):
    """How a walk took mmap_lock (the C++ LockMode): as a LockMode, both
    ways or not at all (a module walk without a hold, or a kind summary
    whose first walk had none; writers before the C++ LockMode wrote ""
    there, which reads as none)."""
    none = "none"
    read = "read"
    write = "write"
    read_write = "read+write"

    @classmethod
    def _missing_(cls, value: object) -> WalkLockMode | None:
        return cls.none if value == "" else None


class LockUnit(enum.Enum):
    """What one hold of mmap_lock covers in a walk (PTW_LOCK_UNITS)."""
    whole_walk = "whole_walk"
    vma_when_contended = "vma_when_contended"
    read_chunk = "read_chunk"
    pmd_chunk = "pmd_chunk"
    vma_per_call = "vma_per_call"
    vma_lock = "vma_lock"


# how tables name each unit ("lock held per"), as ptwalk run and locking do
UNIT_TEXT: dict[LockUnit, str] = {
    LockUnit.whole_walk: "whole walk",
    LockUnit.vma_when_contended: "VMA (writer waits)",
    LockUnit.read_chunk: "read() of VMAs",
    LockUnit.pmd_chunk: "2 MiB range",
    LockUnit.vma_per_call: "VMA (per ioctl)",
    LockUnit.vma_lock: "none (VMA locks)",
}


@dataclass(frozen=True)
class KindFacts:
    module: str | None  # ptwalk.ko's kind (PTW_KINDS), None when none sees it
    lock_mode: LockMode
    lock_unit: LockUnit
    file: str  # the /proc/PID file it reads or writes


# in the order tables and verdicts list them
FACTS: dict[WalkKind, KindFacts] = {
    WalkKind.clear_refs: KindFacts(
        "clear_refs", LockMode.write, LockUnit.whole_walk, "clear_refs"),
    WalkKind.clear_refs_anon: KindFacts(
        "clear_refs", LockMode.write, LockUnit.whole_walk, "clear_refs"),
    WalkKind.clear_refs_file: KindFacts(
        "clear_refs", LockMode.write, LockUnit.whole_walk, "clear_refs"),
    WalkKind.softdirty: KindFacts(
        "clear_refs", LockMode.write, LockUnit.whole_walk, "clear_refs"),
    WalkKind.smaps: KindFacts(
        "smaps", LockMode.read, LockUnit.read_chunk, "smaps"),
    WalkKind.smaps_rollup: KindFacts(
        "smaps_rollup", LockMode.read, LockUnit.vma_when_contended, "smaps_rollup"),
    WalkKind.maps: KindFacts(
        None, LockMode.read, LockUnit.read_chunk, "maps"),
    WalkKind.numa_maps: KindFacts(
        None, LockMode.read, LockUnit.read_chunk, "numa_maps"),
    WalkKind.pagemap: KindFacts(
        "pagemap", LockMode.read, LockUnit.pmd_chunk, "pagemap"),
    WalkKind.pagemap_scan: KindFacts(
        "pagemap_scan", LockMode.read, LockUnit.vma_per_call, "pagemap"),
}


@dataclass(frozen=True)
class LockChange:
    """A kind's locking from release `since` on (PTW_LOCK_CHANGES: as
    FACTS up to `before`; releases between were neither read nor
    measured)."""
    before: str
    since: str
    lock_mode: LockMode
    lock_unit: LockUnit


LOCK_CHANGES: dict[WalkKind, LockChange] = {
    WalkKind.smaps: LockChange("7.1", "7.2", LockMode.none, LockUnit.vma_lock),
    WalkKind.numa_maps: LockChange("7.1", "7.2", LockMode.none, LockUnit.vma_lock),
    WalkKind.maps: LockChange("6.12", "6.18", LockMode.none, LockUnit.vma_lock),
}

# the kinds a profile walks, in order, per interval
PROFILE_WALKS: dict[Profile, tuple[WalkKind, ...]] = {
    Profile.clear_refs: (WalkKind.clear_refs,),
    Profile.clear_refs_anon: (WalkKind.clear_refs_anon,),
    Profile.clear_refs_file: (WalkKind.clear_refs_file,),
    Profile.softdirty: (WalkKind.softdirty,),
    Profile.smaps: (WalkKind.smaps,),
    Profile.smaps_rollup: (WalkKind.smaps_rollup,),
    Profile.maps: (WalkKind.maps,),
    Profile.numa_maps: (WalkKind.numa_maps,),
    Profile.pagemap: (WalkKind.pagemap,),
    Profile.pagemap_scan: (WalkKind.pagemap_scan,),
    Profile.cadvisor: (WalkKind.smaps, WalkKind.clear_refs),
    Profile.wss: (WalkKind.clear_refs, WalkKind.smaps),
    Profile.damon: (),
}


def profile_walks(profile: str) -> tuple[str, ...]:
    """The names of the kinds a profile walks; ValueError for an unknown one."""
    return tuple(k.value for k in PROFILE_WALKS[Profile(profile)])

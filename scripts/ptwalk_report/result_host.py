# SPDX-License-Identifier: GPL-2.0
"""Where and on what a ptwalk.result/1 was measured, typed: the kernel, the
host (and a ptwalk-vm guest), the workload's size and the tool's own
memory (results/SCHEMA.md); result_types.Result holds them."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from .result_json import _kind, _Obj


# the guest's accelerator and clock, as scripts/ptwalk_vm writes them
class Accel(enum.Enum):
    tcg = "tcg"
    kvm = "kvm"


class GuestClock(enum.Enum):
    realtime = "realtime"
    icount = "icount"


@dataclass(frozen=True)
class Kernel:
    release: str | None = None
    version: str | None = None
    machine: str | None = None
    config_source: str | None = None
    config_note: str | None = None
    config: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def parse(o: _Obj) -> Kernel:
        c = o.opt_obj("config")
        config = {k: c.str_(k) for k in c.d} if c is not None else {}
        return Kernel(o.opt_str("release"), o.opt_str("version"), o.opt_str("machine"),
                      o.opt_str("config_source"), o.opt_str("config_note"), config)


@dataclass(frozen=True)
class GuestVm:
    """`host.vm`: how a ptwalk-vm guest ran; each None when absent."""
    accel: Accel | None = None
    clock: GuestClock | None = None
    cpu: str | None = None
    qemu: str | None = None

    @staticmethod
    def parse(o: _Obj) -> GuestVm:
        return GuestVm(o.opt_enum("accel", Accel), o.opt_enum("clock", GuestClock),
                       o.opt_str("cpu"), o.opt_str("qemu"))


@dataclass(frozen=True)
class Host:
    hostname: str | None = None
    cpu_model: str | None = None
    cpus: int | None = None
    mem_total_bytes: int | None = None
    mem_available_bytes: int | None = None
    thp: dict[str, str | None] = field(default_factory=dict)   # None: unreadable
    virtualized: str | None = None   # "hypervisor", "xen"; None: false or absent
    vm: GuestVm | None = None

    @staticmethod
    def parse(o: _Obj) -> Host:
        t = o.opt_obj("thp")
        thp = {k: t.opt_str(k) for k in t.d} if t is not None else {}
        virt = o.d.get("virtualized")
        if virt is not None and not isinstance(virt, (str, bool)):
            raise o.fail("virtualized", f"is {_kind(virt)}, want a string or false")
        return Host(o.opt_str("hostname"), o.opt_str("cpu_model"), o.opt_int("cpus"),
                    o.opt_int("mem_total_bytes"), o.opt_int("mem_available_bytes"), thp,
                    virt if isinstance(virt, str) else None,
                    o.opt_parsed("vm", GuestVm.parse))


@dataclass(frozen=True)
class WalkSize:
    """`workload.size_start` / `size_end`: the walk size from /proc."""
    ptes: int | None = None
    pmd_entries: int | None = None
    entries: int | None = None
    pte_slots: int | None = None
    rss_bytes: int | None = None
    huge_bytes: int | None = None
    vmas: int | None = None

    @staticmethod
    def parse(o: _Obj) -> WalkSize:
        return WalkSize(o.opt_int("ptes"), o.opt_int("pmd_entries"), o.opt_int("entries"),
                        o.opt_int("pte_slots"), o.opt_int("rss_bytes"), o.opt_int("huge_bytes"),
                        o.opt_int("vmas"))


@dataclass(frozen=True)
class SizeBucket:
    """`vma_layout.size_histogram[]`: VMAs of from_bytes up to to_bytes."""
    from_bytes: int
    to_bytes: int
    count: int
    bytes: int

    @staticmethod
    def parse(o: _Obj, _i: int) -> SizeBucket:
        return SizeBucket(o.int_("from_bytes"), o.int_("to_bytes"), o.int_("count"),
                          o.int_("bytes"))


@dataclass(frozen=True)
class MappingVmas:
    """`vma_layout.mapping`: the walked mapping's VMAs."""
    vmas: int
    bytes: int
    largest_bytes: int
    smallest_bytes: int

    @staticmethod
    def parse(o: _Obj) -> MappingVmas:
        return MappingVmas(o.int_("vmas"), o.int_("bytes"), o.int_("largest_bytes"),
                           o.int_("smallest_bytes"))


@dataclass(frozen=True)
class VmaLayout:
    """`workload.vma_layout`: the workload's VMAs once populated."""
    vmas: int
    bytes: int
    largest_bytes: int
    mapping: MappingVmas
    size_histogram: tuple[SizeBucket, ...] = ()

    @staticmethod
    def parse(o: _Obj) -> VmaLayout:
        return VmaLayout(o.int_("vmas"), o.int_("bytes"), o.int_("largest_bytes"),
                         MappingVmas.parse(o.obj("mapping")),
                         o.objs("size_histogram", SizeBucket.parse, required=False))


@dataclass(frozen=True)
class Workload:
    pid: int | None = None
    populate_ns: int | None = None
    populate_bytes: int | None = None
    populate_bytes_per_s: float | None = None
    size_start: WalkSize | None = None
    size_end: WalkSize | None = None
    vma_layout: VmaLayout | None = None
    ptes_source: str | None = None

    @staticmethod
    def parse(o: _Obj) -> Workload:
        return Workload(o.opt_int("pid"), o.opt_int("populate_ns"), o.opt_int("populate_bytes"),
                        o.opt_float("populate_bytes_per_s"),
                        o.opt_parsed("size_start", WalkSize.parse),
                        o.opt_parsed("size_end", WalkSize.parse),
                        o.opt_parsed("vma_layout", VmaLayout.parse),
                        o.opt_str("ptes_source"))


@dataclass(frozen=True)
class SelfMemory:
    """ptwalk's own memory apart from the mapping (`self_memory`)."""
    parent_hwm_bytes: int | None = None
    scanner_hwm_bytes: int | None = None
    workload_rss_minus_mapping_bytes: int | None = None

    @staticmethod
    def parse(o: _Obj) -> SelfMemory:
        return SelfMemory(o.opt_int("parent_hwm_bytes"), o.opt_int("scanner_hwm_bytes"),
                          o.opt_int("workload_rss_minus_mapping_bytes"))


@dataclass(frozen=True, order=True)
class MeasuredOn:
    """How the figures were clocked: a ptwalk-vm guest's accelerator,
    clock mode and QEMU (host.vm), or the machine itself. Text: it names
    the A/A noise file (compare.noise_file_for) and sorts."""
    vm: bool = False
    accel: str = ""
    clock: str = ""
    qemu: str = ""

    def __str__(self) -> str:
        if not self.vm:
            return "no VM (the machine's own clock)"
        return f"VM: accel {self.accel}, clock {self.clock}, QEMU {self.qemu}"

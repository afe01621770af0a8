# SPDX-License-Identifier: GPL-2.0
"""The typed ptwalk.result/1 document (results/SCHEMA.md): dataclasses for
a result and its parts, and their parser. The C++ writer is
userspace/model/src/result_json.cpp (and kernel_view.cpp).

JSON text becomes members here and nowhere else: enumerations become
enum members (walk kinds, lock modes and lock units from walk_kinds.py,
generated from walk_kinds.def and lock_modes.def), a member the schema
lets be absent is `X | None` (absent stays apart from 0: no figure is
made up), and a malformed document or an unknown enumeration value
raises ResultError naming the file and the member's path. Members the
schema has and no tool reads are left to `Result.doc`."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .result_enums import (Backend, Backing, EstimateStatus, FaultRegion, MeasuredStallSource,
                           VictimName)
from .result_host import (Accel, GuestClock, GuestVm, Host, Kernel, MeasuredOn, SelfMemory,
                          WalkSize, Workload)
from .result_json import InputError, ResultError, _Obj
from .result_validation import Validation
from .walk_kinds import LockMode, LockUnit, Profile, WalkKind, WalkLockMode

__all__ = ["Accel", "Backend", "Backing", "EstimateStatus", "FaultRegion", "GuestClock", "GuestVm",
           "Host", "InputError", "Kernel", "MeasuredOn", "MeasuredStallSource", "ResultError",
           "SelfMemory", "VictimName", "WalkLockMode", "WalkSize", "Workload"]


@dataclass(frozen=True)
class Latency:
    """A victim's latency summary (`outside` or `during` walks)."""
    count: int
    min_ns: int | None = None
    p50_ns: int | None = None
    p90_ns: int | None = None
    p99_ns: int | None = None
    p999_ns: int | None = None
    p9999_ns: int | None = None
    max_ns: int | None = None
    mean_ns: float | None = None
    buckets: tuple[tuple[int, int], ...] = ()

    QUANTILES = ("min_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "p9999_ns", "max_ns")

    def quantile(self, name: str) -> int | None:
        """A quantile by its member name (`p99_ns`, ...), for tables that
        list several."""
        if name not in self.QUANTILES:
            raise KeyError(name)
        v: int | None = getattr(self, name)
        return v

    @staticmethod
    def parse(o: _Obj) -> Latency:
        buckets = []
        for i, b in enumerate(o.list_("buckets", False)):
            if (not isinstance(b, list) or len(b) != 2
                    or not all(isinstance(x, int) and not isinstance(x, bool) for x in b)):
                raise ResultError(o.path, f"{o.at('buckets')}[{i}]", "want [lower_bound_ns, count]")
            buckets.append((int(b[0]), int(b[1])))
        q = {k: o.opt_int(k) for k in Latency.QUANTILES}
        return Latency(count=o.int_("count"), mean_ns=o.opt_float("mean_ns"),
                       buckets=tuple(buckets), **q)


@dataclass(frozen=True)
class Victim:
    tid: int
    ops: int
    outside: Latency
    during: Latency
    run_delay_ns: int | None = None

    @staticmethod
    def parse(o: _Obj) -> Victim:
        return Victim(o.int_("tid"), o.int_("ops"), Latency.parse(o.obj("outside")),
                      Latency.parse(o.obj("during")), o.opt_int("run_delay_ns"))


@dataclass(frozen=True)
class Walk:
    """One walk of `walks[]`; `index` is its place there (a stall's `walk`)."""
    index: int
    kind: WalkKind
    start_ns: int
    duration_ns: int
    iteration: int | None = None
    walker_pid: int | None = None
    syscall_ns: int | None = None
    ptes: int | None = None
    ptes_4k: int | None = None
    pmd_leaves: int | None = None
    pte_slots: int | None = None
    ns_per_pte: float | None = None
    ns_per_pte_corrected: float | None = None
    bytes_read: int | None = None
    referenced_bytes: int | None = None
    rollup_rss_bytes: int | None = None
    incomplete: str | None = None
    error: str | None = None
    lock_hold_ns: int | None = None
    lock_wait_ns: int | None = None
    lock_acquisitions: int | None = None
    lock_mode: WalkLockMode | None = None
    stalls: int | None = None
    max_stall_ns: int | None = None
    max_stall_walker_held_ns: int | None = None
    kernel_call_ns: int | None = None
    kernel_walk_ns: int | None = None
    kernel_ns_per_pte: float | None = None
    pte_tables: int | None = None
    pte_slots_visited: int | None = None
    pte_revisits: int | None = None
    # module backend: of pte_tables, those walked while the walker held
    # mmap_lock (its own lock events): none on a per-VMA-locked walk
    pte_tables_mmap_locked: int | None = None
    tlb_flushes: int | None = None
    tlb_ipis: int | None = None
    probe_missed: int | None = None
    # module backend with its VMA-lock view: lock_next_vma() gave up and
    # the reader went on under mmap_lock
    vma_fallbacks: int | None = None

    @staticmethod
    def parse(o: _Obj, index: int) -> Walk:
        return Walk(
            index=index, kind=o.enum("kind", WalkKind), start_ns=o.int_("start_ns"),
            duration_ns=o.int_("duration_ns"), incomplete=o.opt_str("incomplete"),
            error=o.opt_str("error"), lock_mode=o.opt_enum("lock_mode", WalkLockMode),
            iteration=o.opt_int("iteration"),
            walker_pid=o.opt_int("walker_pid"),
            syscall_ns=o.opt_int("syscall_ns"),
            ptes=o.opt_int("ptes"),
            ptes_4k=o.opt_int("ptes_4k"),
            pmd_leaves=o.opt_int("pmd_leaves"),
            pte_slots=o.opt_int("pte_slots"),
            bytes_read=o.opt_int("bytes_read"),
            referenced_bytes=o.opt_int("referenced_bytes"),
            rollup_rss_bytes=o.opt_int("rollup_rss_bytes"),
            lock_hold_ns=o.opt_int("lock_hold_ns"),
            lock_wait_ns=o.opt_int("lock_wait_ns"),
            lock_acquisitions=o.opt_int("lock_acquisitions"),
            stalls=o.opt_int("stalls"),
            max_stall_ns=o.opt_int("max_stall_ns"),
            max_stall_walker_held_ns=o.opt_int("max_stall_walker_held_ns"),
            kernel_call_ns=o.opt_int("kernel_call_ns"),
            kernel_walk_ns=o.opt_int("kernel_walk_ns"),
            pte_tables=o.opt_int("pte_tables"),
            pte_slots_visited=o.opt_int("pte_slots_visited"),
            pte_revisits=o.opt_int("pte_revisits"),
            pte_tables_mmap_locked=o.opt_int("pte_tables_mmap_locked"),
            tlb_flushes=o.opt_int("tlb_flushes"),
            tlb_ipis=o.opt_int("tlb_ipis"),
            probe_missed=o.opt_int("probe_missed"),
            vma_fallbacks=o.opt_int("vma_fallbacks"),
            ns_per_pte=o.opt_float("ns_per_pte"),
            ns_per_pte_corrected=o.opt_float("ns_per_pte_corrected"),
            kernel_ns_per_pte=o.opt_float("kernel_ns_per_pte"))

    @property
    def good(self) -> bool:
        """Its cost is the mapping's: not failed, not incomplete, entries known."""
        return self.error is None and self.incomplete is None and bool(self.ptes)


@dataclass(frozen=True)
class Stall:
    """An attributed wait of `kernel_view.stalls[]`, with its split. Its
    waiter is a victim, else (the module's view) a thread ptwalk did not
    register, by its comm: exactly one of `victim` and `waiter_comm`."""
    tid: int
    victim: VictimName | None
    start_ns: int
    wait_ns: int
    mode: LockMode | None = None
    walk: int | None = None
    acquired: bool | None = None
    walker_held_ns: int | None = None
    others_held_ns: int | None = None
    free_ns: int | None = None
    walker_off_cpu_ns: int | None = None
    waiter_runnable_ns: int | None = None
    waiter_comm: str | None = None
    clock_spread_ns: int | None = None
    late_hold_ns: int | None = None
    at_release: bool | None = None   # the module's: began as the walk released

    @staticmethod
    def parse(o: _Obj, _i: int) -> Stall:
        if not o.has("victim") and not o.has("waiter_comm"):
            raise o.fail("victim", "missing, and no waiter_comm")
        if o.has("victim") and o.has("waiter_comm"):
            raise o.fail("waiter_comm", "beside victim, want one of the two")
        return Stall(o.int_("tid"), o.opt_enum("victim", VictimName), o.int_("start_ns"),
                     o.int_("wait_ns"), o.opt_enum("mode", LockMode), o.opt_int("walk"),
                     o.opt_bool("acquired"), o.opt_int("walker_held_ns"),
                     o.opt_int("others_held_ns"), o.opt_int("free_ns"),
                     o.opt_int("walker_off_cpu_ns"), o.opt_int("waiter_runnable_ns"),
                     o.opt_str("waiter_comm"), o.opt_int("clock_spread_ns"),
                     o.opt_int("late_hold_ns"), o.opt_bool("at_release"))

    @property
    def waiter(self) -> str:
        """The victim's name, else the waiter's comm."""
        return self.victim.value if self.victim is not None else str(self.waiter_comm)

    @property
    def split(self) -> bool:
        """It carries the three parts of its wait."""
        return (self.walker_held_ns is not None and self.others_held_ns is not None
                and self.free_ns is not None)


@dataclass(frozen=True)
class ThreadWaits:
    """`kernel_view.threads.NAME`: a waiter's mmap_lock waits during walks
    and how many were attributed; all None, and `why`, when unknown."""
    waits: Latency | None = None
    attributed: int | None = None
    max_attributed_ns: int | None = None
    max_attributed_walker_held_ns: int | None = None
    why: str | None = None

    @staticmethod
    def parse(o: _Obj) -> ThreadWaits:
        return ThreadWaits(o.opt_parsed("waits", Latency.parse), o.opt_int("attributed"),
                           o.opt_int("max_attributed_ns"),
                           o.opt_int("max_attributed_walker_held_ns"), o.opt_str("why"))


@dataclass(frozen=True)
class SchedEvents:
    """`kernel_view.sched_events` (tracepoint): whether the walker's
    switches were followed (`why` not), and the waiters' wakeups too."""
    available: bool
    why: str | None = None
    filter: str | None = None
    waiters: bool | None = None
    waiters_why: str | None = None
    spans_dropped: int | None = None

    @staticmethod
    def parse(o: _Obj) -> SchedEvents:
        return SchedEvents(o.bool_("available"), o.opt_str("why"), o.opt_str("filter"),
                           o.opt_bool("waiters"), o.opt_str("waiters_why"),
                           o.opt_int("spans_dropped"))


@dataclass(frozen=True)
class KernelView:
    """A backend's own findings; `stalls` is None when the backend sees none
    (syscall), `counters` None without the module."""
    source: str | None = None
    events: int | None = None
    lost_events: int | None = None
    stalls: tuple[Stall, ...] | None = None
    stalls_total: int | None = None
    stalls_complete_above_ns: int | None = None
    counters: dict[str, int] | None = None
    nmissed: int | None = None
    walks_matched: int | None = None
    walks_hookable: int | None = None
    module_walks_unmatched: int | None = None
    sched_events: SchedEvents | None = None
    threads: dict[str, ThreadWaits] = field(default_factory=dict)   # by victim name, or comm
    target_mm_found: bool | None = None

    def counter(self, name: str) -> int | None:
        """A module counter by its name (None: no such counter, or no module)."""
        return self.counters.get(name) if self.counters is not None else None

    def thread(self, name: str) -> ThreadWaits | None:
        """A waiter's waits by its victim name or comm (None: not listed)."""
        return self.threads.get(name)

    @staticmethod
    def parse(o: _Obj) -> KernelView:
        counters = None
        c = o.opt_obj("counters")
        if c is not None:
            counters = {k: c.int_(k) for k in c.d}
        stalls = o.objs("stalls", Stall.parse) if o.has("stalls") else None
        th = o.opt_obj("threads")
        threads = {k: ThreadWaits.parse(th.obj(k)) for k in th.d} if th is not None else {}
        return KernelView(o.opt_str("source"), o.opt_int("events"), o.opt_int("lost_events"),
                          stalls, o.opt_int("stalls_total"), o.opt_int("stalls_complete_above_ns"),
                          counters, o.opt_int("nmissed"), o.opt_int("walks_matched"),
                          o.opt_int("walks_hookable"), o.opt_int("module_walks_unmatched"),
                          o.opt_parsed("sched_events", SchedEvents.parse), threads,
                          o.opt_bool("target_mm_found"))


@dataclass(frozen=True)
class WalkSummary:
    """`walk_summary.KIND`."""
    count: int
    errors: int | None = None
    incomplete: int | None = None
    ptes: int | None = None
    duration_min_ns: int | None = None
    duration_p50_ns: int | None = None
    duration_max_ns: int | None = None
    ms_per_gib_p50: float | None = None
    ns_per_pte_p50: float | None = None
    ns_per_pte_min: float | None = None
    ns_per_pte_corrected_p50: float | None = None
    lock_hold_p50_ns: int | None = None
    lock_hold_max_ns: int | None = None
    lock_mode: WalkLockMode | None = None
    max_stall_ns: int | None = None

    @staticmethod
    def parse(o: _Obj) -> WalkSummary:
        return WalkSummary(
            count=o.int_("count"), lock_mode=o.opt_enum("lock_mode", WalkLockMode),
            errors=o.opt_int("errors"),
            incomplete=o.opt_int("incomplete"),
            ptes=o.opt_int("ptes"),
            duration_min_ns=o.opt_int("duration_min_ns"),
            duration_p50_ns=o.opt_int("duration_p50_ns"),
            duration_max_ns=o.opt_int("duration_max_ns"),
            lock_hold_p50_ns=o.opt_int("lock_hold_p50_ns"),
            lock_hold_max_ns=o.opt_int("lock_hold_max_ns"),
            max_stall_ns=o.opt_int("max_stall_ns"),
            ms_per_gib_p50=o.opt_float("ms_per_gib_p50"),
            ns_per_pte_p50=o.opt_float("ns_per_pte_p50"),
            ns_per_pte_min=o.opt_float("ns_per_pte_min"),
            ns_per_pte_corrected_p50=o.opt_float("ns_per_pte_corrected_p50"))


@dataclass(frozen=True)
class KindLocking:
    """`stall_estimate.kinds.KIND.locking`: the kind's locking fact for the
    run's kernel against what the run's lock view saw."""
    release: str
    basis: str  # table | changed | unread
    since: str | None = None  # the kind's change, when it has one
    observed_lock_mode: WalkLockMode | None = None
    observed_hold_p50_ns: int | None = None
    agrees: bool | None = None  # None: no lock view
    why: str = ""

    @staticmethod
    def parse(o: _Obj) -> KindLocking:
        ch = o.opt_obj("changed")
        return KindLocking(o.str_("release"), o.str_("basis"),
                           ch.str_("since") if ch is not None else None,
                           o.opt_enum("observed_lock_mode", WalkLockMode),
                           o.opt_int("observed_hold_p50_ns"), o.opt_bool("agrees"),
                           o.opt_str("why") or "")


@dataclass(frozen=True)
class KindEstimate:
    """`stall_estimate.kinds.KIND`: the worst stall for a VMA layout."""
    lock_unit: LockUnit
    lock_mode: LockMode | None = None
    source: str | None = None
    layout_dependent: bool | None = None
    vmas_per_read: float | None = None
    measured_hold_bytes: int | None = None
    layout_hold_bytes: int | None = None
    model_stall_max_ns: int | None = None
    measured_stall_source: MeasuredStallSource | None = None
    measured_stall_max_ns: int | None = None
    model_check_ratio: float | None = None
    status: EstimateStatus | None = None
    why: str | None = None
    factor: float | None = None
    estimate_max_ns: int | None = None
    estimate_p50_ns: int | None = None
    estimate_max_range_ns: tuple[float, float] | None = None
    estimate_p50_range_ns: tuple[float, float] | None = None
    locking: KindLocking | None = None  # results before per-kernel facts: None

    @staticmethod
    def parse(o: _Obj) -> KindEstimate:
        return KindEstimate(
            o.enum("lock_unit", LockUnit), o.opt_enum("lock_mode", LockMode),
            o.opt_str("source"), o.opt_bool("layout_dependent"), o.opt_float("vmas_per_read"),
            o.opt_int("measured_hold_bytes"), o.opt_int("layout_hold_bytes"),
            o.opt_int("model_stall_max_ns"),
            o.opt_enum("measured_stall_source", MeasuredStallSource),
            o.opt_int("measured_stall_max_ns"), o.opt_float("model_check_ratio"),
            o.opt_enum("status", EstimateStatus), o.opt_str("why"), o.opt_float("factor"),
            o.opt_int("estimate_max_ns"), o.opt_int("estimate_p50_ns"),
            o.pair("estimate_max_range_ns"), o.pair("estimate_p50_range_ns"),
            o.opt_parsed("locking", KindLocking.parse))


@dataclass(frozen=True)
class StallEstimate:
    layout: str | None = None
    layout_vmas: int | None = None
    layout_largest_vma_bytes: int | None = None
    kinds: dict[WalkKind, KindEstimate] = field(default_factory=dict)

    @staticmethod
    def parse(o: _Obj) -> StallEstimate:
        return StallEstimate(o.opt_str("layout"), o.opt_int("layout_vmas"),
                             o.opt_int("layout_largest_vma_bytes"),
                             o.keyed("kinds", WalkKind, KindEstimate.parse))


@dataclass(frozen=True)
class AliasCalibration:
    """What the readers use of `alias_calibration`: the per-kind ratios, or
    why it did not run."""
    skipped: str | None = None
    ratio: dict[WalkKind, float] = field(default_factory=dict)
    stall_ratio: dict[WalkKind, float] = field(default_factory=dict)

    @staticmethod
    def parse(o: _Obj) -> AliasCalibration:
        return AliasCalibration(o.opt_str("skipped"), o.numbers("ratio", WalkKind),
                                o.numbers("stall_ratio", WalkKind))


@dataclass(frozen=True)
class Scenario:
    size_bytes: int
    backing: Backing
    profile: Profile
    victims: tuple[VictimName, ...]
    aliased: bool = False
    physical_bytes: int | None = None
    alias_factor: int | None = None
    interval_ns: int | None = None
    duration_ns: int | None = None
    op_interval_ns: int | None = None
    populate_threads: int | None = None
    dir: str | None = None
    fault_region: FaultRegion | None = None
    lower_bound: str | None = None   # zeropage: why its figures are a lower bound
    max_scans: int | None = None     # --scans: the scanner stopped after this many

    @staticmethod
    def parse(o: _Obj) -> Scenario:
        return Scenario(o.int_("size_bytes"), o.enum("backing", Backing),
                        o.enum("profile", Profile), o.enums("victims", VictimName),
                        o.bool_("aliased"),
                        o.opt_int("physical_bytes"), o.opt_int("alias_factor"),
                        o.opt_int("interval_ns"), o.opt_int("duration_ns"),
                        o.opt_int("op_interval_ns"), o.opt_int("populate_threads"),
                        o.opt_str("dir"), o.opt_enum("fault_region", FaultRegion),
                        o.opt_str("lower_bound"), o.opt_int("max_scans"))

    @property
    def planned_walk_intervals(self) -> int:
        """Scanner intervals in the duration (0 when either is unknown),
        at most --scans."""
        if not self.interval_ns or self.duration_ns is None:
            return 0
        n = self.duration_ns // self.interval_ns
        return min(n, self.max_scans) if self.max_scans else n


@dataclass(frozen=True)
class Result:
    """One ptwalk.result/1 document. `doc` is the raw JSON: only for members
    not modelled here (`perf`, whose shape follows perf's own output, and
    the rest no tool reads); everything else is read through the members."""
    path: Path
    doc: dict[str, Any]
    scenario: Scenario
    walks: tuple[Walk, ...]
    victims: dict[VictimName, Victim]
    backend: Backend
    complete: bool = False
    interrupted: str | None = None
    error: str | None = None
    started_at: str | None = None
    tool_version: str | None = None
    argv: tuple[str, ...] = ()
    kernel: Kernel = Kernel()
    host: Host = Host()
    backend_detail: str | None = None
    backend_fallback: str | None = None
    workload: Workload | None = None
    self_memory: SelfMemory | None = None
    scan_start_ns: int | None = None
    scan_end_ns: int | None = None
    walks_dropped: int | None = None
    walk_summary: dict[WalkKind, WalkSummary] = field(default_factory=dict)
    kernel_view: KernelView | None = None
    kernel_view_tracepoint: KernelView | None = None
    validation: Validation | None = None
    stall_estimate: StallEstimate | None = None
    alias_calibration: AliasCalibration | None = None

    @property
    def usable(self) -> bool:
        return self.complete and self.error is None

    @property
    def release(self) -> str:
        return self.kernel.release or "?"

    @property
    def measured_on(self) -> MeasuredOn:
        vm = self.host.vm
        if vm is None:
            return MeasuredOn()
        return MeasuredOn(vm=True, accel=str(vm.accel.value if vm.accel else None),
                          clock=str(vm.clock.value if vm.clock else None), qemu=str(vm.qemu))

    @property
    def stalls(self) -> tuple[Stall, ...]:
        """The backend's attributed stalls (none when it sees none)."""
        kv = self.kernel_view
        return kv.stalls if kv is not None and kv.stalls is not None else ()

    def good_walks(self) -> list[Walk]:
        return [w for w in self.walks if w.good]

    def walk_of(self, s: Stall) -> Walk | None:
        """The walk a stall is attributed to, if it is listed."""
        return self.walks[s.walk] if s.walk is not None and 0 <= s.walk < len(self.walks) else None


def parse(path: Path, doc: object) -> Result:
    """The typed result of a ptwalk.result/1 document; ResultError when a
    member is missing, of the wrong type, or an unknown enumeration value."""
    o = _Obj(path, "", doc)

    kernel, host, tool = o.opt_obj("kernel"), o.opt_obj("host"), o.opt_obj("tool")
    return Result(
        path=path, doc=o.d, scenario=Scenario.parse(o.obj("scenario")),
        walks=o.objs("walks", Walk.parse), victims=o.keyed("victims", VictimName, Victim.parse),
        backend=o.enum("backend", Backend), complete=o.bool_("complete"),
        interrupted=o.opt_str("interrupted"), error=o.opt_str("error"),
        started_at=o.opt_str("started_at"),
        tool_version=tool.opt_str("version") if tool is not None else None,
        argv=o.strs("argv"),
        kernel=Kernel.parse(kernel) if kernel is not None else Kernel(),
        host=Host.parse(host) if host is not None else Host(),
        backend_detail=o.opt_str("backend_detail"), backend_fallback=o.opt_str("backend_fallback"),
        workload=o.opt_parsed("workload", Workload.parse),
        self_memory=o.opt_parsed("self_memory", SelfMemory.parse),
        scan_start_ns=o.opt_int("scan_start_ns"),
        scan_end_ns=o.opt_int("scan_end_ns"), walks_dropped=o.opt_int("walks_dropped"),
        walk_summary=o.keyed("walk_summary", WalkKind, WalkSummary.parse),
        kernel_view=o.opt_parsed("kernel_view", KernelView.parse),
        kernel_view_tracepoint=o.opt_parsed("kernel_view_tracepoint", KernelView.parse),
        validation=o.opt_parsed("validation", Validation.parse),
        stall_estimate=o.opt_parsed("stall_estimate", StallEstimate.parse),
        alias_calibration=o.opt_parsed("alias_calibration", AliasCalibration.parse))

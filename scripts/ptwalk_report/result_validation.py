# SPDX-License-Identifier: GPL-2.0
"""A ptwalk.result/1's `validation` typed (results/SCHEMA.md): each kernel
view against the victims' own clocks, the two views against each other
(`--cross-check`), the stall splits' own checks and, with the module,
its walks against the scanner's. result_types.Result holds it."""
from __future__ import annotations

from dataclasses import dataclass
from .result_enums import Backend, VictimName
from .result_json import _Obj


@dataclass(frozen=True)
class UnexplainedOp:
    """A reference operation no stall explains (`stalls.unexplained[]`)."""
    victim: VictimName
    tid: int
    start_ns: int
    ns: int

    @staticmethod
    def parse(o: _Obj, _i: int) -> UnexplainedOp:
        return UnexplainedOp(o.enum("victim", VictimName), o.int_("tid"), o.int_("start_ns"),
                             o.int_("ns"))


@dataclass(frozen=True)
class UnconfirmedStall:
    """A stall no logged operation contains (`stalls.unconfirmed[]`)."""
    tid: int
    start_ns: int
    wait_ns: int

    @staticmethod
    def parse(o: _Obj, _i: int) -> UnconfirmedStall:
        return UnconfirmedStall(o.int_("tid"), o.int_("start_ns"), o.int_("wait_ns"))


@dataclass(frozen=True)
class StallValidation:
    view: Backend | None = None
    skipped: str | None = None
    threshold_ns: int | None = None
    reference_ops: int | None = None
    reference_ops_dropped: int | None = None
    not_behind_walk: int | None = None
    outside_walk_holds: int | None = None  # one view: overlapped no walk hold
    vma_lock_waits: int | None = None   # waited on a VMA lock, which no view sees
    recalled: int | None = None
    recall: float | None = None
    unexplained: tuple[UnexplainedOp, ...] = ()
    stalls_checked: int | None = None
    confirmed: int | None = None
    confirmed_by_upkeep: int | None = None
    precision: float | None = None
    unconfirmed: tuple[UnconfirmedStall, ...] = ()
    agree: bool | None = None
    disagreements: tuple[str, ...] = ()

    INTS = ("threshold_ns", "reference_ops", "reference_ops_dropped", "not_behind_walk",
            "outside_walk_holds", "vma_lock_waits", "recalled", "stalls_checked", "confirmed",
            "confirmed_by_upkeep")

    @staticmethod
    def parse(o: _Obj) -> StallValidation:
        ints = {k: o.opt_int(k) for k in StallValidation.INTS}
        return StallValidation(
            view=o.opt_enum("view", Backend), skipped=o.opt_str("skipped"),
            recall=o.opt_float("recall"),
            unexplained=o.objs("unexplained", UnexplainedOp.parse, required=False),
            precision=o.opt_float("precision"),
            unconfirmed=o.objs("unconfirmed", UnconfirmedStall.parse, required=False),
            agree=o.opt_bool("agree"), disagreements=o.strs("disagreements"), **ints)


@dataclass(frozen=True)
class ViewsAgreement:
    """`validation.views` (`--cross-check`): how many stalls of one kernel
    view the other saw, and how many splits both made agree."""
    module_stalls: int | None = None
    module_in_tracepoint: int | None = None
    tracepoint_in_module: int | None = None
    tracepoint_stalls: int | None = None
    split_compared: int | None = None
    split_agree: int | None = None
    split_max_diff_ns: int | None = None
    module_late_unseen: int | None = None

    INTS = ("module_stalls", "module_in_tracepoint", "tracepoint_in_module",
            "tracepoint_stalls", "split_compared", "split_agree", "split_max_diff_ns",
            "module_late_unseen")

    @staticmethod
    def parse(o: _Obj) -> ViewsAgreement:
        return ViewsAgreement(**{k: o.opt_int(k) for k in ViewsAgreement.INTS})


@dataclass(frozen=True)
class WalkValidation:
    """The module's walks against the scanner's (`validation.walks`)."""
    walks: int | None = None
    matched_once: int | None = None
    module_walks_unmatched: int | None = None
    walk_proper_timed: int | None = None
    walk_proper_le_syscall: int | None = None
    pte_slots_checked: int | None = None
    pte_slots_in_bounds: int | None = None
    short_after_yielding_lock: int | None = None
    short_unconfirmed: int | None = None
    complete_walk_pte_slots: float | None = None
    agree: bool | None = None
    disagreements: tuple[str, ...] = ()

    INTS = ("walks", "matched_once", "module_walks_unmatched", "walk_proper_timed",
            "walk_proper_le_syscall", "pte_slots_checked", "pte_slots_in_bounds",
            "short_after_yielding_lock", "short_unconfirmed")

    @staticmethod
    def parse(o: _Obj) -> WalkValidation:
        ints = {k: o.opt_int(k) for k in WalkValidation.INTS}
        return WalkValidation(complete_walk_pte_slots=o.opt_float("complete_walk_pte_slots"),
                              agree=o.opt_bool("agree"), disagreements=o.strs("disagreements"),
                              **ints)


@dataclass(frozen=True)
class RunnableCheck:
    """`stall_parts.runnable_vs_schedstat`: the waiters' runnable parts
    against each victim's schedstat run_delay."""
    victims: int
    bad: int
    tolerance_ns: int
    bad_victims: tuple[VictimName, ...] = ()

    @staticmethod
    def parse(o: _Obj) -> RunnableCheck:
        return RunnableCheck(o.int_("victims"), o.int_("bad"), o.int_("tolerance_ns"),
                             o.enums("bad_victims", VictimName))


@dataclass(frozen=True)
class StallParts:
    checked: int
    bad: int
    runnable_vs_schedstat: RunnableCheck | None = None

    @staticmethod
    def parse(o: _Obj) -> StallParts:
        return StallParts(o.int_("checked"), o.int_("bad"),
                          o.opt_parsed("runnable_vs_schedstat", RunnableCheck.parse))


@dataclass(frozen=True)
class Validation:
    stalls: StallValidation | None = None
    stalls_tracepoint: StallValidation | None = None
    walks: WalkValidation | None = None
    stall_parts: StallParts | None = None
    views: ViewsAgreement | None = None

    @staticmethod
    def parse(o: _Obj) -> Validation:
        return Validation(o.opt_parsed("stalls", StallValidation.parse),
                          o.opt_parsed("stalls_tracepoint", StallValidation.parse),
                          o.opt_parsed("walks", WalkValidation.parse),
                          o.opt_parsed("stall_parts", StallParts.parse),
                          o.opt_parsed("views", ViewsAgreement.parse))

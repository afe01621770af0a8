"""Plain-text report of one result for a kernel mailing list: at most 72
columns, no Markdown, the exact reproducer, the numbers."""
from __future__ import annotations

import shlex
import shutil
import textwrap
from typing import Any

from . import results as res
from . import split
from .compare import fmt_ns

WIDTH = 72
CONFIG_KEYS = ("CONFIG_PER_VMA_LOCK", "CONFIG_PREEMPT", "CONFIG_PREEMPT_VOLUNTARY",
               "CONFIG_PREEMPT_NONE", "CONFIG_PREEMPT_DYNAMIC", "CONFIG_HZ",
               "CONFIG_TRANSPARENT_HUGEPAGE", "CONFIG_MEM_SOFT_DIRTY", "CONFIG_PGTABLE_LEVELS",
               "CONFIG_LRU_GEN", "CONFIG_LOCK_STAT", "CONFIG_PROVE_LOCKING", "CONFIG_DEBUG_VM",
               "CONFIG_KASAN", "CONFIG_NUMA")


def _wrap(label: str, text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=f"{label:<10}",
                         subsequent_indent=" " * 10, break_on_hyphens=False) or [label]


def _command(argv: list[str]) -> list[str]:
    """Shell command wrapped at 72 columns with backslash continuations. The
    --out file is shown by its base name (where it went does not matter to
    a reproducer); a word still too long is split by a backslash-newline,
    which the shell removes, so the command stays exact."""
    args = list(argv)
    for i, a in enumerate(args[:-1]):
        if a == "--out":
            args[i + 1] = args[i + 1].rsplit("/", 1)[-1]
    words = [shlex.quote(a) for a in args]
    lines, cur = [], "  #"
    for w in words:
        if len(cur) + 1 + len(w) <= WIDTH - 2:
            cur += " " + w
            continue
        lines.append(cur + " \\")
        cur = "      "
        while len(cur) + len(w) > WIDTH - 2:
            cut = WIDTH - 2 - len(cur)
            lines.append(cur + w[:cut] + "\\")
            cur, w = "", w[cut:]
        cur += w
    lines.append(cur)
    return lines


def _gib(n: float) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def _perf(doc: dict[str, Any]) -> list[str]:
    """perf's summary, read from the raw document: its shape follows perf's
    own output (and older results'), so it is not modelled in result_types."""
    perf = doc.get("perf")
    if not perf:
        why = ("perf is not installed here" if shutil.which("perf") is None
               else "this result carries no perf summary")
        return [f"Top kernel symbols: not available ({why})."]
    rec = perf.get("record", {}) if isinstance(perf, dict) else {}
    syms = (rec.get("top_kernel_symbols") or perf.get("symbols") or perf.get("top_symbols")
            or []) if isinstance(perf, dict) else perf
    if isinstance(perf, dict) and not syms:
        return [f"Top kernel symbols: not available ({rec.get('error', 'no samples')})."]
    out = [f"Top kernel symbols (perf record -e {rec.get('event', '?')} -g of the scanner, "
           f"{rec.get('samples', '?')} samples):" if rec else "Top kernel symbols (perf):"]
    for s in syms[:10]:
        if isinstance(s, dict):
            name, pct = s.get("symbol", s.get("name", "?")), s.get("percent", s.get("pct"))
        else:
            name, pct = s[0], s[1] if len(s) > 1 else None
        pct_s = f"{float(pct):6.2f}%" if pct is not None else "      -"
        out.append(f"  {pct_s}  {str(name)[:WIDTH - 12]}")
    events = (perf.get("stat") or {}).get("events") if isinstance(perf, dict) else None
    if events:
        out.append("Tracepoint counts (perf stat, scanner + target):")
        for ev, n in sorted(events.items()):
            out.append(f"  {n:>12}  {ev[:WIDTH - 16]}")
    return out


def _split_lines(r: res.Result) -> list[str]:
    """The longest attributed wait of each kind split into the walk's part
    (the walker held mmap_lock against the waiter) and the rest, and the
    walk's share of each victim's p99.9 during walks (split.py)."""
    if not split.stalls(r):
        return []
    kinds = sorted({w.kind.value for w in r.walks})
    rows = [f"{k}: longest wait {x.text()}" for k in kinds
            for x in split.worst_split([r], k)]
    if not rows:
        return [""] + textwrap.wrap(
            f"Attributed waits: {split.UNAVAILABLE} (this view did not split them); the "
            f"figures above are whole waits.", WIDTH)
    out = [""] + textwrap.wrap("Attributed waits, split (walk held: the walker held "
                               "mmap_lock against the waiter; other holders; free: the "
                               "waiter not yet running):", WIDTH)
    for line in rows:
        out += textwrap.wrap(line, WIDTH, initial_indent="  ", subsequent_indent="    ")
    for name, v in sorted(r.victims.items(), key=lambda x: x[0].value):
        n, raw = v.during.count, v.during.p999_ns
        sh = split.victim_share([r], name, 0.999, n) if n >= 1000 else None
        if sh is None or raw is None:
            continue
        out += textwrap.wrap(f"{name.value} p99.9 during walks {fmt_ns(raw)}, the walk's share "
                             f"{'<= ' if sh.bound else ''}{fmt_ns(sh.value)}", WIDTH,
                             initial_indent="  ", subsequent_indent="    ")
    return out


def _incomplete_lines(r: res.Result) -> list[str]:
    """Walks that covered less than the workload: the finding itself when
    the kernel skips VMAs (6.1's show_smaps_rollup() after yielding
    mmap_lock), so the text a maintainer reads says it, with an example."""
    out: list[str] = []
    for kind, s in sorted(r.walk_summary.items(), key=lambda x: x[0].value):
        n = s.incomplete
        if not n:
            continue
        ws = [w for w in r.walks if w.kind == kind]
        short = [w for w in ws if w.incomplete is not None]
        yielded = sum(1 for w in short if (w.lock_acquisitions or 0) > 1)
        val = r.validation.walks if r.validation is not None else None
        conf = val.short_after_yielding_lock if val is not None else None
        line = (f"{kind.value}: {n} of {s.count} walks covered less than the "
                f"workload ({yielded} of them after taking mmap_lock again)")
        if conf is not None:
            line += f"; ptwalk.ko's count of such walks: {conf}"
        out += ["", "Incomplete walks:"]
        out += textwrap.wrap(line, WIDTH, initial_indent="  ", subsequent_indent="    ")
        if short:
            out += textwrap.wrap(f"e.g. {short[0].incomplete}", WIDTH,
                                 initial_indent="    ", subsequent_indent="    ")
    return out


def _ns(v: float | None) -> str:
    return fmt_ns(v) if v is not None else "-"


def render_upstream(r: res.Result) -> str:
    k, h, sc = r.kernel, r.host, r.scenario
    size = r.workload.size_start if r.workload is not None else None
    entries = size.entries if size is not None else None
    out: list[str] = []
    title = (f"ptwalk: {sc.profile.value} walks of {res.human_size(sc.size_bytes)}iB "
             f"{sc.backing.value} ({f'{entries:,}' if entries is not None else '?'} entries) "
             f"on {r.release}")
    out += textwrap.wrap(title, WIDTH) + [""]
    out += _wrap("Kernel:", f"{r.release} {k.version or ''} ({k.machine or ''})")
    cfg = k.config
    shown = [f"{c}={cfg[c]}" for c in CONFIG_KEYS if c in cfg]
    out += _wrap("Config:", " ".join(shown) if shown else
                 f"not available ({k.config_note or 'no config source'})")
    virt = h.virtualized
    mem = _gib(h.mem_total_bytes) if h.mem_total_bytes is not None else "?"
    out += _wrap("Hardware:", f"{h.cpu_model or '?'}, {h.cpus if h.cpus is not None else '?'} "
                 f"CPUs, {mem} RAM" + (f", virtualized ({virt})" if virt else ", bare metal"))
    out += _wrap("THP:", " ".join(f"{a}: {b}" for a, b in h.thp.items()))
    out += _wrap("Backend:", f"{r.backend.value}: {r.backend_detail or ''}")
    if r.backend_fallback is not None:
        out += _wrap("Fallback:", r.backend_fallback)
    if not r.usable:
        out += _wrap("NOTE:", "incomplete run: " + (r.error or r.interrupted or "complete=false"))
    out += ["", "Reproducer (as root, from a ptwalk build):"]
    out += _command(list(r.argv) or ["ptwalk", "run"])
    out += ["", "Walks:", f"  {'kind':<13}{'walks':>6}{'entries':>11}{'p50':>9}{'max':>9}"
            f"{'ns/ent':>8}{'hold p50':>10}"]
    summary = sorted(r.walk_summary.items(), key=lambda x: x[0].value)
    for kind, s in summary:
        hold = s.lock_hold_p50_ns
        npe = f"{s.ns_per_pte_p50:.1f}" if s.ns_per_pte_p50 is not None else "-"
        ptes = f"{s.ptes:,}" if s.ptes is not None else "-"
        out.append(f"  {kind.value[:12]:<13}{s.count:>6}{ptes:>11}"
                   f"{_ns(s.duration_p50_ns):>9}{_ns(s.duration_max_ns):>9}"
                   f"{npe:>8}{fmt_ns(hold) if hold else '-':>10}")
    locks = [f"{kind.value}: {s.lock_mode.value} lock, longest attributed wait "
             f"{_ns(s.max_stall_ns)}" for kind, s in summary if s.lock_mode is not None]
    for line in locks:
        out += textwrap.wrap(line, WIDTH, initial_indent="  ", subsequent_indent="    ")
    out += _incomplete_lines(r)
    out += _split_lines(r)
    out += ["", "Victim latency, outside walks -> during walks:",
            f"  {'victim':<7}{'ops out/during':>17}{'p99':>19}{'p99.9':>19}"]
    for name, v in sorted(r.victims.items(), key=lambda x: x[0].value):
        o, du = v.outside, v.during

        def pair(key: str) -> str:
            return f"{_ns(o.quantile(key))}->{_ns(du.quantile(key))}"
        out.append(f"  {name.value[:6]:<7}{o.count:>10,}/{du.count:<6,}"
                   f"{pair('p99_ns'):>19}{pair('p999_ns'):>19}")
        out.append(f"  {'':<7}{'max':>17}{pair('max_ns'):>19}")
    lost = r.kernel_view.lost_events if r.kernel_view is not None else None
    if lost:
        out += ["", f"Note: {lost} tracepoint events lost; lock figures are partial."]
    out += [""] + _perf(r.doc) + [""]
    out += textwrap.wrap(f"Result: {r.path.name}, ptwalk {r.tool_version or '?'}, "
                         f"started {r.started_at or '?'}.", WIDTH)
    return "\n".join(line.rstrip() for line in out) + "\n"

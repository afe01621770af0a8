"""Walk cost across sizes: least squares duration = a + b * entries, its R²
and the 95% prediction interval of one new sample at a size beyond the
measured ones.

The fit itself is selftests/ptwalk_fit.c, the code the selftests'
linearity check links: it is compiled here into a shared object (cached
under build/fit/, keyed by the source's hash, so an edited source is never
run stale) and called through ctypes. Python adds only the t quantile
(scipy.stats) for the interval.

Extrapolation rule: a fit predicts beyond its measured sizes only when they
span at least a decade (largest / smallest entries >= 10); otherwise the
figure is "not extrapolated"."""
from __future__ import annotations

import ctypes
import hashlib
import math
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from . import layout

REPO = layout.REPO
SRC = REPO / "selftests" / "ptwalk_fit.c"
HDR = REPO / "selftests" / "ptwalk_fit.h"
ABI = 1
DECADE = 10.0       # measured span needed before a fit may extrapolate
MIN_SPREAD = 1.5    # below this span the sizes are one size (victims' pages drift)


class FitError(RuntimeError):
    pass


class _CFit(ctypes.Structure):
    # mirror of struct ptw_fit (selftests/ptwalk_fit.h), checked by ptw_fit_abi()
    _fields_ = [("a", ctypes.c_double), ("b", ctypes.c_double), ("r2", ctypes.c_double),
                ("s", ctypes.c_double), ("x_mean", ctypes.c_double),
                ("sxx", ctypes.c_double), ("x_min", ctypes.c_double),
                ("x_max", ctypes.c_double), ("n", ctypes.c_uint)]


_LIB: ctypes.CDLL | None = None


def _build(dest: Path) -> None:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise FitError(f"no C compiler to build {SRC.name} (install gcc)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, suffix=".so.tmp")
    os.close(fd)
    try:
        p = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", tmp, str(SRC), "-lm"],
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise FitError(f"building {SRC.name}: {p.stderr.strip().splitlines()[-1:]}")
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def library() -> ctypes.CDLL:
    """The compiled ptwalk_fit.c (PTWALK_FIT_LIB overrides the path)."""
    global _LIB
    if _LIB is not None:
        return _LIB
    installed = layout.fit_library()
    path = os.environ.get("PTWALK_FIT_LIB") or (str(installed) if installed else None)
    if not path:
        h = hashlib.sha256(SRC.read_bytes() + HDR.read_bytes()).hexdigest()[:16]
        so = REPO / "build" / "fit" / f"libptwalk_fit-{h}.so"
        if not so.exists():
            try:
                _build(so)
            except OSError:     # read-only checkout: a private cache
                so = Path(tempfile.gettempdir()) / f"ptwalk-fit-{os.getuid()}" / so.name
                if not so.exists():
                    _build(so)
        path = str(so)
    lib = ctypes.CDLL(path)
    lib.ptw_fit_linear.argtypes = [ctypes.POINTER(ctypes.c_double),
                                   ctypes.POINTER(ctypes.c_double), ctypes.c_uint,
                                   ctypes.POINTER(_CFit)]
    lib.ptw_fit_linear.restype = ctypes.c_int
    lib.ptw_fit_pred_se.argtypes = [ctypes.POINTER(_CFit), ctypes.c_double]
    lib.ptw_fit_pred_se.restype = ctypes.c_double
    lib.ptw_fit_abi.restype = ctypes.c_uint
    want = ABI * 1000 + ctypes.sizeof(_CFit)
    if lib.ptw_fit_abi() != want:
        raise FitError(f"{path}: ABI {lib.ptw_fit_abi()} != {want}: struct ptw_fit and "
                       f"fit.py's mirror differ")
    _LIB = lib
    return lib


def linear(xs: Sequence[float], ys: Sequence[float]) -> _CFit | None:
    """Raw least squares through the C code; None when it has no slope."""
    n = len(xs)
    if n != len(ys) or n < 2:
        return None
    arr = ctypes.c_double * n
    out = _CFit()
    if library().ptw_fit_linear(arr(*map(float, xs)), arr(*map(float, ys)), n,
                                ctypes.byref(out)) != 0:
        return None
    return out


@dataclass(frozen=True)
class Fit:
    a: float            # ns (fixed cost per walk)
    b: float            # ns per entry
    n: int
    r2: float
    s: float            # residual standard error, ns
    x_mean: float
    sxx: float
    x_min: float
    x_max: float
    exponent: float | None   # slope of log(y) on log(x): 1 = proportional
    _c: _CFit

    @property
    def span(self) -> float:
        return self.x_max / self.x_min if self.x_min > 0 else math.inf

    @property
    def extrapolates(self) -> bool:
        return extrapolates(self.x_min, self.x_max)

    def predict(self, x: float) -> float:
        return self.a + self.b * x

    def interval(self, x: float, level: float = 0.95) -> tuple[float, float, float]:
        """(prediction, low, high) of one new sample at x; nan bounds for n < 3."""
        y = self.predict(x)
        if self.n < 3:
            return y, math.nan, math.nan
        from scipy.stats import t
        half = float(t.ppf(0.5 + level / 2.0, self.n - 2)) * library().ptw_fit_pred_se(
            ctypes.byref(self._c), float(x))
        return y, y - half, y + half


def extrapolates(x_min: float, x_max: float) -> bool:
    """The rule: extrapolate only from sizes spanning a decade or more."""
    return x_min > 0 and x_max / x_min >= DECADE


def fit(xs: Sequence[float], ys: Sequence[float]) -> Fit | None:
    """duration = a + b * entries; None with fewer than 3 points or sizes that
    do not differ (entries of one size drift by a few pages as victims fault,
    which would give a meaningless slope)."""
    if len(xs) != len(ys) or len(xs) < 3 or min(xs) <= 0 or max(xs) / min(xs) < MIN_SPREAD:
        return None
    c = linear(xs, ys)
    if c is None:
        return None
    pos = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if y > 0]
    lg = linear([p[0] for p in pos], [p[1] for p in pos]) if len(pos) >= 2 else None
    return Fit(c.a, c.b, c.n, c.r2, c.s, c.x_mean, c.sxx, c.x_min, c.x_max,
               lg.b if lg is not None else None, c)

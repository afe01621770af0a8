"""Where the report tools' data live: the source tree (scripts/ beside
results/, selftests/ and build/) or a tree made by `make install`, where
libexec/ptwalk/ holds the tools and layout.json says where the rest went,
relative to itself (so a DESTDIR staging tree works as well). The Debian
package puts this package on python3's path instead: there layout.json is
found beside the helper that runs (libexec/ptwalk/ptwalk-compare)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]  # scripts/ or <prefix>/libexec/ptwalk/
REPO = HERE.parent                          # the source tree, when not installed


def _marker() -> Path | None:
    helper = Path(sys.argv[0]).resolve().parent if sys.argv and sys.argv[0] else HERE
    for d in (HERE, helper):
        if (d / "layout.json").is_file():
            return d / "layout.json"
    return None


def installed() -> dict[str, Path] | None:
    """The installed layout, or None in the source tree."""
    marker = _marker()
    if marker is None:
        return None
    doc = json.loads(marker.read_text())
    return {k: (marker.parent / v).resolve() for k, v in doc.items()}


def budgets_dir() -> Path:
    inst = installed()
    return inst["budgets"] if inst else REPO / "results" / "budgets"


def fit_library() -> Path | None:
    """The built fit library of an installed tree; None: build it from source."""
    inst = installed()
    return inst["fit_library"] if inst else None

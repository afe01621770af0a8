"""Where the report tools' data live: the source tree (scripts/ beside
results/, selftests/ and build/) or a tree made by `make install`, where
libexec/ptwalk/ holds the tools and layout.json says where the rest went,
relative to itself (so a DESTDIR staging tree works as well)."""
from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]  # scripts/ or <prefix>/libexec/ptwalk/
MARKER = HERE / "layout.json"
REPO = HERE.parent                          # the source tree, when not installed


def installed() -> dict[str, Path] | None:
    """The installed layout, or None in the source tree."""
    if not MARKER.exists():
        return None
    doc = json.loads(MARKER.read_text())
    return {k: (MARKER.parent / v).resolve() for k, v in doc.items()}


def budgets_dir() -> Path:
    inst = installed()
    return inst["budgets"] if inst else REPO / "results" / "budgets"


def fit_library() -> Path | None:
    """The built fit library of an installed tree; None: build it from source."""
    inst = installed()
    return inst["fit_library"] if inst else None

"""Fixtures of the qualification run (scripts/qualify.sh). Every scenario of
scripts/qualify/matrix.json (in the mode QUICK=1 / FULL=1 select) becomes
one parametrized test; see ptwalk_report.matrix.qualify_config."""
from __future__ import annotations

from pathlib import Path

import pytest

from ptwalk_report import matrix

_CONFIG = matrix.qualify_config()


@pytest.fixture(scope="session")
def qualify() -> matrix.QualifyConfig:
    if not Path(_CONFIG.ptwalk).exists():
        pytest.fail(f"{_CONFIG.ptwalk} missing: run 'make build' first")
    _CONFIG.out.mkdir(parents=True, exist_ok=True)
    return _CONFIG


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "scenario" in metafunc.fixturenames:
        scs = matrix.select(matrix.load_matrix(), _CONFIG.mode, matrix.mem_available())
        metafunc.parametrize("scenario", scs, ids=[s.id for s in scs])

# SPDX-License-Identifier: GPL-2.0
"""A kernel matrix of fake kernels for the ptwalk_vm config tests: a /boot
of named vmlinuz files and the kernels.toml entries that find them."""
from __future__ import annotations

from pathlib import Path


def fake_boot(tmp: Path, *releases: str) -> Path:
    """tmp/boot with a vmlinuz-RELEASE (not a bzImage) of each release."""
    boot = tmp / "boot"
    boot.mkdir()
    for rel in releases:
        (boot / f"vmlinuz-{rel}").write_bytes(b"not a bzImage")
    return boot


def kernel_entry(matrix: str, name: str, image: str | Path, release_match: str | None = None,
                 ko: str | None = None) -> str:
    """One [[matrix.MATRIX.kernel]] of kernels.toml; release_match a regular
    expression, written as a TOML literal string."""
    out = f'[[matrix.{matrix}.kernel]]\nname = "{name}"\nimage = "{image}"\n'
    if release_match is not None:
        out += f"release_match = '{release_match}'\n"
    if ko is not None:
        out += f'ko = "{ko}"\n'
    return out


def kernels_toml(matrices: dict[str, tuple[str | None, str]], default: str | None = None,
                 test_matrices: list[str] | None = None, extra: str = "") -> str:
    """A whole kernels.toml: the x86_64 arch, then each matrix (name ->
    (series or None, its kernel_entry text)); extra goes in the matrix
    table that comes last."""
    out = f'default_matrix = "{default}"\n' if default else ""
    if test_matrices is not None:
        out += "test_matrices = [" + ", ".join(f'"{m}"' for m in test_matrices) + "]\n"
    out += '[arch.x86_64]\nqemu = "qemu-system-x86_64"\n'
    for name, (series, entries) in matrices.items():
        out += f"[matrix.{name}]\n"
        if series is not None:
            out += f'series = "{series}"\n'
        out += extra if name == list(matrices)[-1] else ""
        out += entries
    return out

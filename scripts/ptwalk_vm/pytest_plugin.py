"""pytest fixtures for running commands in VM kernels (loaded by scripts/conftest.py).

    def test_uname(vm_kernel, run_in_vm):          # one test per matrix kernel
        r = run_in_vm(vm_kernel, "uname -r; echo hi > /results/x; exit 3")
        assert r.returncode == 3 and r.files["x"] == b"hi\\n"

    def test_smoke(vm):                              # vm = run_in_vm bound to vm_kernel
        assert vm("true").ok

run_in_vm(kernel, command, files=(), **RunOptions fields) -> VmResult
    kernel: a config.Kernel (from vm_kernel) or None for the first matrix kernel;
    files: host paths or (host, guest) pairs; default_files is False in tests
    (pass default_files=True to get module/ptwalk.ko, build/ptwalk, build/selftests).
VmResult: returncode, stdout, stderr, dmesg, files{name: bytes}, accel,
    qemu_cmdline, findings, timed_out, complete, wall_s, boot_s, exit_code(), ok.

Environment:
    PTWALK_REQUIRE_VM=1   a missing qemu/kernel/permission fails instead of skipping
    PTWALK_VM_KERNEL=IMG  run vm tests on this image instead of the matrix
    PTWALK_VM_MATRIX=NAME[,NAME] matrices to use (default: kernels.toml's
                          test_matrices); PTWALK_VM_ACCEL=auto|kvm|tcg
    PTWALK_VM_ARTIFACTS=DIR the acceptance test keeps the guest's files there
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import pytest

from . import config, initramfs
from . import vm as pipeline
from .config import Config, ConfigError, Kernel
from .parse import VmResult

RunInVm = Callable[..., VmResult]


def require_vm() -> bool:
    return os.environ.get("PTWALK_REQUIRE_VM", "") not in ("", "0")


def skip_or_fail(reason: str) -> None:
    """Skip, or fail when PTWALK_REQUIRE_VM=1 (CI)."""
    if require_vm():
        pytest.fail(f"PTWALK_REQUIRE_VM=1 and the VM is unavailable: {reason}", pytrace=False)
    pytest.skip(reason)


def vm_unavailable(cfg: Config, kernel: Kernel) -> str | None:
    arch = cfg.arch(kernel.arch)
    if shutil.which(arch.qemu) is None:
        return f"{arch.qemu} not installed"
    if not initramfs.BUSYBOX.exists():
        return f"{initramfs.BUSYBOX} missing (apt install busybox-static)"
    if not os.access(kernel.image, os.R_OK):
        return f"cannot read {kernel.image} (Debian's /boot/vmlinuz-* are root-only: run as root)"
    return None


def _load() -> Config:
    return config.load()


def matrix_kernels(cfg: Config) -> tuple[list[Kernel], list[str]]:
    img = os.environ.get("PTWALK_VM_KERNEL")
    if img:
        try:
            return [cfg.kernel("custom", Path(img))], []
        except ConfigError as e:
            return [], [str(e)]
    env = os.environ.get("PTWALK_VM_MATRIX", "")
    try:
        names = [n for n in env.split(",") if n] if env else cfg.test_matrices
        return cfg.matrices(names)
    except ConfigError as e:
        return [], [str(e)]


def matrix_kernel(cfg: Config, key: str) -> Kernel:
    """The first matrix kernel whose id ("6.12-cloud-amd64") or flavour name
    ("cloud-amd64") is KEY; skip (or fail, PTWALK_REQUIRE_VM=1) without one."""
    ks, missing = matrix_kernels(cfg)
    k = next((k for k in ks if key in (k.id, k.name)), None)
    if k is None:
        skip_or_fail(f"kernel {key} not in the matrix: {missing}")
    assert k is not None
    return k


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "vm: boots a kernel in qemu (slow; needs qemu and root)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "vm_kernel" not in metafunc.fixturenames:
        return
    kernels, missing = matrix_kernels(_load())
    if kernels:
        metafunc.parametrize("vm_kernel", kernels, ids=[k.id for k in kernels], scope="session")
    else:
        why = "; ".join(missing) or "empty matrix"
        metafunc.parametrize("vm_kernel", [pytest.param(None, id="no-kernel")], scope="session")
        metafunc.function.__ptwalk_no_kernel__ = why


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = getattr(item, "fixturenames", ())
        if {"vm_kernel", "run_in_vm", "vm"} & set(names):
            item.add_marker(pytest.mark.vm)


@pytest.fixture(scope="session")
def vm_config() -> Config:
    return _load()


@pytest.fixture
def run_in_vm(vm_config: Config, tmp_path: Path) -> RunInVm:
    counter = iter(range(1_000_000))

    def run(kernel: Kernel | None, command: str | Sequence[str],
            files: Iterable[Path | str | tuple[Path, str]] = (), **kw: Any) -> VmResult:
        if kernel is None:
            ks, missing = matrix_kernels(vm_config)
            if not ks:
                skip_or_fail("no kernel available: " + "; ".join(missing))
            kernel = ks[0]
        reason = vm_unavailable(vm_config, kernel)
        if reason:
            skip_or_fail(reason)
        add: list[tuple[Path, str]] = []
        for f in files:
            if isinstance(f, tuple):
                add.append((Path(f[0]), f[1]))
            else:
                add.append(initramfs.parse_add(str(f), config.PROJECT))
        kw.setdefault("timeout", 300.0)
        kw.setdefault("default_files", False)
        opts = pipeline.RunOptions(add=add, **kw)
        run_dir = tmp_path / f"{kernel.name}-{next(counter)}"
        return pipeline.run_in_vm(vm_config, kernel, command, opts, run_dir)

    return run


@pytest.fixture
def vm(request: pytest.FixtureRequest, vm_kernel: Kernel | None, run_in_vm: RunInVm) -> RunInVm:
    """run_in_vm bound to the parametrized matrix kernel: vm(command, files=(), **opts)."""
    if vm_kernel is None:
        skip_or_fail("no matrix kernel: "
                     + getattr(request.function, "__ptwalk_no_kernel__", "unknown"))

    def bound(command: str | Sequence[str], files: Iterable[Path | str | tuple[Path, str]] = (),
              **kw: Any) -> VmResult:
        return run_in_vm(vm_kernel, command, files, **kw)

    return bound

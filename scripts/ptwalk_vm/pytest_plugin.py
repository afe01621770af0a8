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
    PTWALK_VM_PARALLEL=N  boots of different kernels' suites at a time (default 2)

kernel_suites(kernel) -> suites.SuitesRun: the boot of KERNEL that runs the
    harness's checks and, with ptwalk.ko built for it, every module suite
    (suites.module_suites), once per session; tests read their suite's
    VmResult with .suite(name).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import pytest

from . import config, initramfs, reliability, suites
from . import vm as pipeline
from .config import Config, ConfigError, Kernel
from .parse import VmResult

RunInVm = Callable[..., VmResult]

# Guests the tests run at a time: a TCG guest is one host thread
# (thread=single), so two use the 2-CPU machine's two CPUs. Every boot of
# the tests takes a slot (run_in_vm, the kernels' suites, the boot
# reliability boots), so a guest whose figures are timed never shares the
# host with more than one other.
PARALLEL_BOOTS = max(1, int(os.environ.get("PTWALK_VM_PARALLEL", "2")))


class FairSlots:
    """A semaphore that hands its slots out in the order they were asked
    for. threading's is not FIFO: the thread that releases a slot takes it
    back first when it asks again at once, so the suite boots' pool kept
    both slots while the tests with boots of their own waited, and those
    then ran one at a time with a slot idle."""

    def __init__(self, n: int) -> None:
        self._free = n
        self._queue: deque[object] = deque()
        self._cv = threading.Condition()

    def __enter__(self) -> "FairSlots":
        me = object()
        with self._cv:
            self._queue.append(me)
            self._cv.wait_for(lambda: self._queue[0] is me and self._free > 0)
            self._queue.popleft()
            self._free -= 1
            self._cv.notify_all()  # the next in line may take another free slot
        return self

    def __exit__(self, *exc: object) -> None:
        with self._cv:
            self._free += 1
            self._cv.notify_all()


BOOT_SLOTS = FairSlots(PARALLEL_BOOTS)
KernelSuites = Callable[[Kernel | None], "suites.SuitesRun"]


def require_vm() -> bool:
    return os.environ.get("PTWALK_REQUIRE_VM", "") not in ("", "0")


def skip_or_fail(reason: str) -> None:
    """Skip, or fail when PTWALK_REQUIRE_VM=1 (CI)."""
    if require_vm():
        pytest.fail(f"PTWALK_REQUIRE_VM=1 and the VM is unavailable: {reason}", pytrace=False)
    pytest.skip(reason)


def require_module(kernel: Kernel | None) -> None:
    """A test of ptwalk.ko on KERNEL: skip where the matrix says none can be
    built (kernels.toml's no_module: the moduleless suites judge that
    kernel), fail where one should have been (make module-matrix)."""
    if kernel is None:
        return
    if kernel.moduleless:
        pytest.skip(f"{kernel.id}: {kernel.no_module}")
    if kernel.ko is None:
        pytest.fail(f"ptwalk.ko is not built for {kernel.release} (make module-matrix)")


def require_moduleless(kernel: Kernel | None, judged_by: str) -> Kernel:
    """A test of a kernel without ptwalk.ko by design; the others have
    their module's tests (JUDGED_BY) instead."""
    if kernel is None:
        skip_or_fail("no matrix kernel installed")
    assert kernel is not None
    if not kernel.moduleless:
        pytest.skip(f"{kernel.id} has ptwalk.ko: {judged_by} judges it")
    return kernel


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
        if {"vm_kernel", "run_in_vm", "vm", "kernel_suites", "reliability_boots"} & set(names):
            item.add_marker(pytest.mark.vm)
    # The shared suite boots and then the boot-reliability boots start with
    # the session (vm_prefetch) and run in the background, PARALLEL_BOOTS
    # at a time, so the tests that judge them go last. The tests with one
    # guest of their own run first, beside those boots, and take a slot in
    # turn (BOOT_SLOTS), so both slots stay busy to the end. In file order
    # the one-guest tests ran last, one slot idle; with the reliability
    # boots run by their tests after them, one slot was idle for 4.5 min
    # while the last one-guest tests ran.

    def rank(item: pytest.Item) -> int:
        return 1 if {"kernel_suites", "reliability_boots"} & set(
            getattr(item, "fixturenames", ())) else 0
    items.sort(key=rank)


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
        with BOOT_SLOTS:
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


HELLO_CC = r"""
#include <iostream>
#include <string>
#include <vector>
int main() { std::vector<std::string> v{"hello", "from", "c++"};
  for (auto &s : v) std::cout << s << (&s == &v.back() ? "\n" : " "); return 0; }
"""


@pytest.fixture(scope="session")
def cxx_hello(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """A dynamically linked C++ program (libstdc++), or None without g++."""
    gxx = shutil.which("g++")
    if gxx is None:
        return None
    d = tmp_path_factory.mktemp("cxx")
    (d / "hello.cc").write_text(HELLO_CC)
    subprocess.run([gxx, "-O1", "-o", str(d / "hello"), str(d / "hello.cc")], check=True)
    return d / "hello"


_suite_kernels: list[Kernel] = []  # the kernels whose suites the selected tests read
_reliability_kernels: list[Kernel] = []  # ... and whose reliability boots they judge
_suite_runs: dict[str, suites.SuitesRun] = {}  # kernel id -> its boot, once done


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Where the VM stage's time goes: per kernel, the boot's wall time and
    each suite's guest seconds (what to move or cut when make test grows)."""
    if not _suite_runs:
        return
    names = list(dict.fromkeys(n for r in _suite_runs.values() for n in r.suites))
    tr = terminalreporter
    tr.section("VM suites: one boot per kernel (wall s; guest s per suite)")
    tr.write_line(f"{'kernel':20} {'wall':>6} " + " ".join(f"{n[:15]:>15}" for n in names))
    for kid, r in _suite_runs.items():
        cells = [_secs(r.suites[n].command_s) if n in r.suites else "" for n in names]
        tr.write_line(f"{kid:20} {_secs(r.whole.wall_s):>6} "
                      + " ".join(f"{c:>15}" for c in cells))


def _secs(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def pytest_collection_finish(session: pytest.Session) -> None:
    for fixture, kernels in (("kernel_suites", _suite_kernels),
                             ("reliability_boots", _reliability_kernels)):
        seen: set[str] = set()
        for item in session.items:
            cs = getattr(item, "callspec", None)
            k = cs.params.get("vm_kernel") if cs is not None else None
            if fixture in getattr(item, "fixturenames", ()) and isinstance(k, Kernel) \
                    and k.id not in seen:
                seen.add(k.id)
                kernels.append(k)


@pytest.fixture(scope="session", autouse=True)
def vm_prefetch(request: pytest.FixtureRequest) -> None:
    """Starts the shared suite boots, then the reliability boots, with the
    session when the selected tests judge any (none in a host-only run:
    nothing is built or booted)."""
    if _suite_kernels:
        request.getfixturevalue("kernel_suites")
    if _reliability_kernels:
        request.getfixturevalue("reliability_boots")


@pytest.fixture(scope="session")
def background_boots() -> Iterator[ThreadPoolExecutor]:
    """The session's background boots, PARALLEL_BOOTS at a time in the
    order they were asked for (each takes a BOOT_SLOTS slot to run)."""
    pool = ThreadPoolExecutor(PARALLEL_BOOTS)
    yield pool
    pool.shutdown(wait=True, cancel_futures=True)


ReliabilityBoots = Callable[[Kernel], "tuple[list[VmResult], Path]"]


@pytest.fixture(scope="session")
def reliability_boots(vm_config: Config, tmp_path_factory: pytest.TempPathFactory,
                      background_boots: ThreadPoolExecutor) -> ReliabilityBoots:
    """reliability.BOOTS boots of each kernel the selected tests judge,
    started with the session after the suite boots; get(kernel) waits for
    its boots and returns them with their directory."""
    started: dict[str, tuple[Future[list[VmResult]], Path]] = {}

    def start(kernel: Kernel) -> None:
        if kernel.id in started or vm_unavailable(vm_config, kernel) \
                or reliability.missing(kernel):
            return
        out = tmp_path_factory.mktemp(f"boots-{kernel.id}")
        started[kernel.id] = (background_boots.submit(
            reliability.boots, vm_config, kernel, out, BOOT_SLOTS), out)

    for k in _reliability_kernels:
        start(k)

    def get(kernel: Kernel) -> tuple[list[VmResult], Path]:
        start(kernel)
        fut, out = started[kernel.id]
        return fut.result(), out

    return get


@pytest.fixture(scope="session")
def kernel_suites(vm_config: Config, tmp_path_factory: pytest.TempPathFactory,
                  cxx_hello: Path | None,
                  background_boots: ThreadPoolExecutor) -> KernelSuites:
    """One boot per kernel for every suite of it, shared by the tests that
    judge them (kunit.py's and LKP's way: boot once, run many jobs). The
    boots of the kernels the selected tests need start when this fixture
    is set up (with the session: vm_prefetch), PARALLEL_BOOTS at a time,
    in the tests' order."""
    pool = background_boots
    started: dict[str, Future[suites.SuitesRun]] = {}

    def start(kernel: Kernel) -> None:
        if kernel.id in started or vm_unavailable(vm_config, kernel):
            return
        todo = [suites.harness_suite(cxx_hello, kernel.ko is not None)]
        if kernel.ko is not None:
            todo += suites.module_suites(own=suites.own_suites(kernel))
        elif kernel.moduleless:
            todo += suites.moduleless_suites()
        run_dir = tmp_path_factory.mktemp(f"suites-{kernel.id}")
        log = run_dir / "harness.log"
        opts = pipeline.RunOptions(log=open(log, "w"))  # closed with the run below

        def boot() -> suites.SuitesRun:
            try:
                with BOOT_SLOTS:
                    return suites.run_suites(vm_config, kernel, todo, run_dir, opts)
            finally:
                opts.log.close()

        started[kernel.id] = pool.submit(boot)

    for k in _suite_kernels:
        start(k)

    def get(kernel: Kernel | None) -> suites.SuitesRun:
        if kernel is None:
            skip_or_fail("no matrix kernel installed")
        assert kernel is not None
        reason = vm_unavailable(vm_config, kernel)
        if reason:
            skip_or_fail(reason)
        start(kernel)  # a kernel the collection did not see (the others started above)
        run = started[kernel.id].result()
        _suite_runs.setdefault(kernel.id, run)
        return run

    return get

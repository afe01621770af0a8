"""ptwalk-vm: boot kernel builds in qemu and run ptwalk commands inside them.

Modules: config (matrix, kernels.toml), initramfs (build step), qemu (boot
step, KVM/TCG choice), parse (offline parsing + kernel-log detector), vm (the
pipeline), cli (scripts/ptwalk-vm), pytest_plugin (fixtures).
"""
from .config import Kernel, load
from .parse import VmResult, Finding, parse_run_dir
from .vm import RunOptions, run_in_vm

__all__ = ["Kernel", "load", "VmResult", "Finding", "parse_run_dir", "RunOptions", "run_in_vm"]

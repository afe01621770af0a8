"""pytest setup for scripts/: makes ptwalk_vm importable and loads its fixtures
(vm_config, vm_kernel parametrized over the kernel matrix, run_in_vm, vm)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ptwalk_vm.pytest_plugin import (  # noqa: E402,F401  (fixtures and hooks)
    background_boots,
    cxx_hello,
    kernel_suites,
    pytest_collection_finish,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_generate_tests,
    pytest_terminal_summary,
    reliability_boots,
    run_in_vm,
    vm,
    vm_config,
    vm_prefetch,
)

"""Build the guest initramfs: cpio newc + gzip, written in pure Python.

Contents: busybox-static with its applet symlinks, /init (init.sh), the
command script, and every requested host file. ELF executables and shared
objects are copied together with their loader and libraries (resolved with
ldd) so dynamically linked C++ binaries run in the guest. The project tree is
mirrored under /ptwalk in the guest (module/ptwalk.ko -> /ptwalk/module/...),
and the command runs with /ptwalk as its working directory.
"""
from __future__ import annotations

import gzip
import io
import os
import re
import shlex
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

GUEST_ROOT = "/ptwalk"
INIT_SCRIPT = Path(__file__).with_name("init.sh")
BUSYBOX = Path("/bin/busybox")
BASE_DIRS = ("bin", "sbin", "usr", "usr/bin", "usr/sbin", "dev", "proc", "sys",
             "tmp", "root", "run", "etc", "etc/ptwalk-vm", "results", "lib",
             "lib64", "mnt", GUEST_ROOT.lstrip("/"))


class InitramfsError(RuntimeError):
    pass


@dataclass
class Spec:
    """What goes into one initramfs (one kernel, one command)."""

    command: str
    # (host path, guest path); directories are copied recursively.
    files: list[tuple[Path, str]] = field(default_factory=list)
    # Kernel module tree (/lib/modules/<rel>) and modules to modprobe at boot.
    module_dir: Path | None = None
    modprobe: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


class CpioWriter:
    """Minimal cpio "newc" writer (the format the kernel unpacks)."""

    def __init__(self) -> None:
        self._buf = io.BytesIO()
        self._ino = 1
        self.names: set[str] = set()

    def _entry(self, name: str, mode: int, data: bytes = b"",
               rdev: tuple[int, int] = (0, 0), nlink: int = 1) -> None:
        name = name.strip("/")
        if name in self.names:
            return
        self.names.add(name)
        bname = name.encode() + b"\0"
        fields = (self._ino, mode, 0, 0, nlink, 0, len(data), 0, 0,
                  rdev[0], rdev[1], len(bname), 0)
        hdr = b"070701" + b"".join(b"%08X" % f for f in fields)
        self._ino += 1
        out = self._buf
        out.write(hdr + bname)
        out.write(b"\0" * (-(len(hdr) + len(bname)) % 4))
        out.write(data)
        out.write(b"\0" * (-len(data) % 4))

    def mkdir(self, name: str) -> None:
        parts = name.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            self._entry("/".join(parts[:i]), stat.S_IFDIR | 0o755, nlink=2)

    def _parent(self, name: str) -> None:
        parent = os.path.dirname(name.strip("/"))
        if parent:
            self.mkdir(parent)

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        self._parent(name)
        self._entry(name, stat.S_IFREG | (mode & 0o7777), data)

    def symlink(self, name: str, target: str) -> None:
        self._parent(name)
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def chardev(self, name: str, major: int, minor: int, mode: int = 0o600) -> None:
        self._parent(name)
        self._entry(name, stat.S_IFCHR | mode, rdev=(major, minor))

    def finish(self, level: int = 6) -> bytes:
        self._entry("TRAILER!!!", 0, nlink=1)
        raw = self._buf.getvalue()
        raw += b"\0" * (-len(raw) % 512)
        return gzip.compress(raw, compresslevel=level, mtime=0)


def is_elf_program(path: Path) -> bool:
    """True for ELF executables and shared objects (not .ko relocatables)."""
    try:
        with path.open("rb") as f:
            head = f.read(18)
    except OSError:
        return False
    if len(head) < 18 or head[:4] != b"\x7fELF":
        return False
    e_type = int.from_bytes(head[16:18], "little" if head[5] == 1 else "big")
    return e_type in (2, 3)  # ET_EXEC, ET_DYN


_LDD_ARROW = re.compile(r"^\s*\S+ => (/\S+) \(0x[0-9a-f]+\)")
_LDD_PLAIN = re.compile(r"^\s*(/\S+) \(0x[0-9a-f]+\)")


def shared_libs(path: Path) -> list[str]:
    """Loader and libraries of an ELF program, as absolute host paths."""
    proc = subprocess.run(["ldd", str(path)], capture_output=True, text=True)
    if proc.returncode != 0:  # static, or not a program ldd understands
        return []
    libs: list[str] = []
    for line in proc.stdout.splitlines():
        if "not found" in line:
            raise InitramfsError(f"{path}: ldd: {line.strip()}")
        m = _LDD_ARROW.match(line) or _LDD_PLAIN.match(line)
        if m:
            libs.append(m.group(1))
    return libs


def parse_add(arg: str, project: Path) -> tuple[Path, str]:
    """--add HOST[:GUEST]; without GUEST, paths inside the project keep their
    relative path under /ptwalk, others land in /ptwalk/<basename>."""
    host, sep, guest = arg.partition(":")
    hp = Path(host).expanduser()
    if not hp.is_absolute():
        hp = Path.cwd() / hp
    if not sep or not guest:
        try:
            guest = f"{GUEST_ROOT}/{hp.resolve().relative_to(project.resolve())}"
        except ValueError:
            guest = f"{GUEST_ROOT}/{hp.name}"
    return hp, guest


class Builder:
    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.cpio = CpioWriter()
        self.lib_dirs: list[str] = []
        self.manifest: list[str] = []

    def _add_host_file(self, host: Path, guest: str) -> None:
        try:
            data = host.read_bytes()
            mode = host.stat().st_mode
        except OSError as e:
            raise InitramfsError(f"cannot read {host}: {e}") from e
        self.cpio.file(guest, data, mode)
        self.manifest.append(f"{guest} <- {host}")
        if is_elf_program(host):
            for lib in shared_libs(host):
                self._add_lib(lib)

    def _add_lib(self, lib: str) -> None:
        if lib.strip("/") in self.cpio.names:
            return
        self.cpio.file(lib, Path(lib).read_bytes(), 0o755)  # follows symlinks
        self.manifest.append(f"{lib} (library)")
        d = os.path.dirname(lib)
        if d not in self.lib_dirs:
            self.lib_dirs.append(d)

    def _add_tree(self, host: Path, guest: str) -> None:
        if host.is_dir():
            self.cpio.mkdir(guest)
            for child in sorted(host.iterdir()):
                self._add_tree(child, f"{guest}/{child.name}")
        elif host.exists():
            self._add_host_file(host, guest)
        else:
            raise InitramfsError(f"no such file: {host}")

    def _add_busybox(self) -> None:
        if not BUSYBOX.exists() or is_elf_program(BUSYBOX) and shared_libs(BUSYBOX):
            raise InitramfsError(f"{BUSYBOX} missing or not static (apt install busybox-static)")
        self.cpio.file("bin/busybox", BUSYBOX.read_bytes(), 0o755)
        out = subprocess.run([str(BUSYBOX), "--list-full"], capture_output=True,
                             text=True, check=True).stdout
        for applet in out.split():
            if applet.strip("/") != "bin/busybox":
                self.cpio.symlink(applet, "/bin/busybox")

    def _add_modules(self, module_dir: Path, names: list[str]) -> None:
        rel = module_dir.name
        dest = f"lib/modules/{rel}"
        for meta in sorted(module_dir.glob("modules.*")):
            if meta.is_file():
                self.cpio.file(f"{dest}/{meta.name}", meta.read_bytes())
        deps = _read_modules_dep(module_dir)
        wanted: list[str] = []
        for name in names:
            key = _find_module(deps, name)
            if key is None:
                raise InitramfsError(f"module {name} not in {module_dir}/modules.dep")
            for k in [key, *deps[key]]:
                if k not in wanted:
                    wanted.append(k)
        for k in wanted:
            self.cpio.file(f"{dest}/{k}", (module_dir / k).read_bytes())
            self.manifest.append(f"/{dest}/{k} <- {module_dir / k}")

    def build(self, level: int = 6) -> bytes:
        for d in BASE_DIRS:
            self.cpio.mkdir(d)
        self.cpio.chardev("dev/console", 5, 1)
        self.cpio.chardev("dev/null", 1, 3, 0o666)
        self._add_busybox()
        self.cpio.file("init", INIT_SCRIPT.read_bytes(), 0o755)
        self.cpio.file("etc/ptwalk-vm/cmd.sh", self.spec.command.encode() + b"\n", 0o755)
        self.cpio.file("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
        self.cpio.file("etc/group", b"root:x:0:\n")
        for host, guest in self.spec.files:
            self._add_tree(host, guest)
        if self.spec.module_dir is not None:
            self._add_modules(self.spec.module_dir, self.spec.modprobe)
        env = dict(self.spec.env)
        if self.lib_dirs:
            env.setdefault("LD_LIBRARY_PATH", ":".join(self.lib_dirs))
        env["PTWALK_MODPROBE"] = " ".join(self.spec.modprobe)
        lines = [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]
        self.cpio.file("etc/ptwalk-vm/env", ("\n".join(lines) + "\n").encode())
        return self.cpio.finish(level)


def _read_modules_dep(module_dir: Path) -> dict[str, list[str]]:
    deps: dict[str, list[str]] = {}
    for line in (module_dir / "modules.dep").read_text().splitlines():
        key, _, rest = line.partition(":")
        deps[key] = rest.split()
    return deps


def _find_module(deps: dict[str, list[str]], name: str) -> str | None:
    norm = name.replace("-", "_")
    for key in deps:
        base = os.path.basename(key).split(".ko")[0].replace("-", "_")
        if base == norm:
            return key
    return None


def build_initramfs(spec: Spec, out: Path) -> list[str]:
    """Write the gzip'ed cpio to OUT; return the manifest (guest <- host)."""
    builder = Builder(spec)
    data = builder.build()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(out)
    return builder.manifest

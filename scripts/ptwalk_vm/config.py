"""Kernel matrix and per-arch qemu settings, loaded from scripts/kernels.toml."""
from __future__ import annotations

import dataclasses
import glob
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent
PROJECT = SCRIPTS.parent
DEFAULT_TOML = SCRIPTS / "kernels.toml"
# where scripts/deps.sh kernels unpacks the images of kernels newer than
# the host's Debian ({kernels} in kernels.toml; PTWALK_KERNELS overrides)
KERNELS_DIR = Path("/var/lib/ptwalk/kernels")
# the trixie build root of scripts/deps.sh buildroot: the deb13 kernels'
# headers and their gcc-14 ({buildroot}; PTWALK_BUILDROOT overrides, as in
# scripts/build-modules.sh)
BUILDROOT_DIR = Path("/var/lib/ptwalk/trixie-root")


class ConfigError(RuntimeError):
    pass


# Kernel bugs a matrix can say its kernels have (kernels.toml's known_bugs),
# and what the suites then expect.
KNOWN_BUGS = {
    # show_smaps_rollup() skips the VMA it finds after yielding mmap_lock to
    # a waiting writer; fixed by 6d065f507d82 (v6.10), not in 6.1.y
    "smaps_rollup_skip": "smaps_rollup walks that yield mmap_lock skip a VMA",
}


@dataclass(frozen=True)
class ArchSettings:
    name: str
    qemu: str
    machine: str
    cpu_tcg: str
    cpu_kvm: str
    console: str
    append: tuple[str, ...]
    extra_args: tuple[str, ...]
    # -accel tcg options, e.g. "thread=single" (see kernels.toml)
    tcg_opts: str = ""
    # qemu arguments of --clock icount (kernels.toml's icount_args)
    icount_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Kernel:
    """One kernel build to boot: image plus what belongs to it."""

    name: str
    image: Path
    release: str
    arch: str = "x86_64"
    headers: Path | None = None
    module_dir: Path | None = None
    ko: Path | None = None  # ptwalk.ko built for this release, if any
    series: str = ""  # the matrix's series ("6.1", "6.12"), "" outside a matrix
    # the kernel bugs the suites expect of this series (kernels.toml's
    # known_bugs, e.g. "smaps_rollup_skip"); None: not known (a kernel
    # outside a matrix), so the suites assert neither way
    known_bugs: tuple[str, ...] | None = None
    # why this kernel has no ptwalk.ko ("" when it has one): the matrix's
    # no_module reason, or that none was built for its release
    no_module: str = ""
    # the matrix says none can be built (no_module): its suites run the
    # views that need no module instead
    moduleless: bool = False

    @property
    def id(self) -> str:  # pytest id / result directory name: "6.12-amd64"
        return f"{self.series}-{self.name}" if self.series else self.name


@dataclass
class Config:
    raw: dict
    path: Path = DEFAULT_TOML
    arches: dict[str, ArchSettings] = field(default_factory=dict)

    @property
    def default_matrix(self) -> str:
        return str(self.raw.get("default_matrix", ""))

    def arch(self, name: str) -> ArchSettings:
        try:
            return self.arches[name]
        except KeyError:
            raise ConfigError(f"{self.path}: no [arch.{name}] table") from None

    def matrix_names(self) -> list[str]:
        return sorted(self.raw.get("matrix", {}))

    @property
    def test_matrices(self) -> list[str]:
        """The matrices the VM test suites run on (default: the default matrix)."""
        names = [str(n) for n in self.raw.get("test_matrices", [self.default_matrix])]
        for n in names:
            if n.partition(":")[0] not in self.raw.get("matrix", {}):
                raise ConfigError(f"{self.path}: test_matrices names {n!r}, which is no matrix")
        return names

    def matrices(self, names: list[str]) -> tuple[list[Kernel], list[str]]:
        """Every kernel of NAMES, in order; why entries were skipped. A name
        "MATRIX:FLAVOUR[+FLAVOUR...]" keeps those flavours of MATRIX only."""
        kernels: list[Kernel] = []
        missing: list[str] = []
        for n in names:
            name, _, only = n.partition(":")
            ks, miss = self.matrix(name)
            if only:
                keep = only.split("+")
                known = {e.get("name") for e in self.raw["matrix"][name].get("kernel", [])}
                bad = sorted(set(keep) - known)
                if bad:
                    raise ConfigError(f"{self.path}: matrix {name!r} has no flavour "
                                      f"{', '.join(bad)} (have: {', '.join(sorted(known))})")
                ks = [k for k in ks if k.name in keep]
                miss = [m for m in miss if m.partition(":")[0] in keep]
            kernels += ks
            missing += [f"{n}: {m}" for m in miss]
        ids = [k.id for k in kernels]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ConfigError(f"{self.path}: kernel ids {', '.join(dup)} occur in more than one "
                              "matrix: give each matrix its own series")
        return kernels, missing

    def allow(self) -> list[str]:
        """Regexes of kernel-log lines the detector tolerates."""
        return [str(a) for a in self.raw.get("allow", [])]

    def default_files(self) -> list[Path]:
        return [Path(_fmt(p, "")) for p in self.raw.get("default_files", [])]

    def find_ko(self, release: str) -> Path | None:
        """First ko candidate whose vermagic matches RELEASE."""
        for pat in self.raw.get("ko", []):
            p = Path(_fmt(pat, release))
            if p.is_file() and module_release(p) == release:
                return p
        return None

    def matrix(self, name: str | None = None) -> tuple[list[Kernel], list[str]]:
        """Resolve a matrix to installed kernels; also return why entries were skipped."""
        name = name or self.default_matrix
        table = self.raw.get("matrix", {}).get(name)
        if table is None:
            have = ", ".join(self.matrix_names())
            raise ConfigError(f"{self.path}: no matrix {name!r} (have: {have})")
        kernels: list[Kernel] = []
        missing: list[str] = []
        series = str(table.get("series", ""))
        bugs = tuple(str(b) for b in table.get("known_bugs", []))
        for b in bugs:
            if b not in KNOWN_BUGS:
                raise ConfigError(f"{self.path}: matrix {name!r}: unknown bug {b!r} "
                                  f"(known: {', '.join(KNOWN_BUGS)})")
        absent = str(table.get("no_module", ""))
        for entry in table.get("kernel", []):
            k = self._resolve(entry, series)
            if not isinstance(k, str):
                k = dataclasses.replace(k, known_bugs=bugs, no_module=absent or k.no_module,
                                        ko=None if absent else k.ko, moduleless=bool(absent))
            if isinstance(k, str):
                missing.append(k)
            else:
                kernels.append(k)
        return kernels, missing

    def _resolve(self, e: dict, series: str = "") -> Kernel | str:
        name = e["name"]
        pat = re.compile(e.get("release_match", ".*"))
        # one glob, or several: Debian's two layouts, /boot/vmlinuz-REL and
        # (7.x) /usr/lib/modules/REL/vmlinuz
        pats = e["image"] if isinstance(e["image"], list) else [e["image"]]
        found: list[tuple[tuple, Path, str]] = []
        for img in sorted({i for p in pats for i in glob.glob(_fmt(str(p), "*"))}):
            rel = image_release(Path(img)) or _release_from_name(Path(img))
            if rel and pat.fullmatch(rel):
                found.append((_version_key(rel), Path(img), rel))
        if not found:
            return (f"{name}: no image matches {' or '.join(_fmt(str(p), '*') for p in pats)} "
                    f"with release {pat.pattern}")
        _, image, rel = max(found)
        ko = Path(_fmt(e["ko"], rel)) if "ko" in e else None
        k = self.kernel(name, image, rel, e.get("arch", "x86_64"), headers=e.get("headers"),
                        module_dir=e.get("modules"), ko=ko if ko and ko.is_file() else None,
                        series=series)
        if k.ko is None:
            where = _fmt(e["headers"], rel) if "headers" in e else "(none named)"
            why = (f"no ptwalk.ko built for {rel} (make module-matrix)" if k.headers else
                   f"no ptwalk.ko for {rel}: no kernel headers at {where} to build it")
            k = dataclasses.replace(k, no_module=why)
        return k

    def kernel(self, name: str, image: Path, release: str | None = None,
               arch: str = "x86_64", headers: str | None = None,
               module_dir: str | None = None, ko: Path | None = None,
               series: str = "") -> Kernel:
        """Describe one kernel; RELEASE is read from the image if not given."""
        if not image.is_file():
            raise ConfigError(f"kernel image not found: {image}")
        release = release or image_release(image) or _release_from_name(image)
        if not release and module_dir:
            release = Path(module_dir).name
        if not release:
            raise ConfigError(f"cannot tell the release of {image}; pass --modules DIR")
        hdr = Path(_fmt(headers, release)) if headers else None
        mod = Path(_fmt(module_dir, release)) if module_dir else None
        return Kernel(name=name, image=image, release=release, arch=arch,
                      headers=hdr if hdr and hdr.is_dir() else None,
                      module_dir=mod if mod and mod.is_dir() else None,
                      ko=ko or self.find_ko(release), series=series)


def load(path: Path = DEFAULT_TOML) -> Config:
    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: {e}") from e
    arches = {}
    for name, a in raw.get("arch", {}).items():
        arches[name] = ArchSettings(
            name=name, qemu=a["qemu"], machine=a.get("machine", "pc"),
            cpu_tcg=a.get("cpu_tcg", "max"), cpu_kvm=a.get("cpu_kvm", "host"),
            console=a.get("console", "ttyS0"), append=tuple(a.get("append", [])),
            extra_args=tuple(a.get("extra_args", [])), tcg_opts=a.get("tcg_opts", ""),
            icount_args=tuple(a.get("icount_args", [])))
    return Config(raw=raw, path=path, arches=arches)


def kernels_dir() -> Path:
    return Path(os.environ.get("PTWALK_KERNELS") or KERNELS_DIR)


def buildroot_dir() -> Path:
    return Path(os.environ.get("PTWALK_BUILDROOT") or BUILDROOT_DIR)


def _fmt(s: str, release: str) -> str:
    return (s.replace("{release}", release).replace("{project}", str(PROJECT))
            .replace("{kernels}", str(kernels_dir()))
            .replace("{buildroot}", str(buildroot_dir())))


def image_release(image: Path) -> str | None:
    """Release string from an x86 bzImage setup header (kernel_version field)."""
    try:
        with image.open("rb") as f:
            hdr = f.read(0x210)
            if len(hdr) < 0x210 or hdr[0x202:0x206] != b"HdrS":
                return None
            off = int.from_bytes(hdr[0x20E:0x210], "little")
            if not off:
                return None
            f.seek(off + 0x200)
            s = f.read(256).split(b"\0", 1)[0].decode("ascii", "replace")
    except OSError:
        return None
    return s.split()[0] if s.split() else None


def module_release(ko: Path) -> str | None:
    """Release from a .ko's vermagic (e.g. '6.1.0-56-amd64 SMP preempt ...')."""
    try:
        data = ko.read_bytes()
    except OSError:
        return None
    i = data.find(b"vermagic=")
    if i < 0:
        return None
    val = data[i + 9:data.find(b"\0", i)].decode("ascii", "replace")
    return val.split()[0] if val.split() else None


def _release_from_name(image: Path) -> str | None:
    """vmlinuz-REL, or (Debian 7.x) modules/REL/vmlinuz."""
    m = re.match(r"(?:vmlinuz|bzImage|vmlinux)-(.+)$", image.name)
    if m:
        return m.group(1)
    if image.name == "vmlinuz" and image.parent.parent.name == "modules":
        return image.parent.name
    return None


def _version_key(rel: str) -> tuple:
    """Numbers compared as numbers: 6.18.15+deb13 is newer than 6.18.9+deb13."""
    return tuple((0, int(x), "") if x.isdigit() else (1, 0, x)
                 for x in re.findall(r"\d+|[^\d.+~-]+", rel))

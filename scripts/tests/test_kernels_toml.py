# SPDX-License-Identifier: GPL-2.0
"""The kernel matrix is data: both Debian series in scripts/kernels.toml,
kernel ids that never collide across matrices, a developer's own bzImage as
an entry, and the packages scripts/deps.sh installs matching what the
matrices look for. Offline: no boot, no installed kernel needed (but for
the check of the real matrix, which needs `scripts/deps.sh vm`)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from matrix_util import fake_boot, kernel_entry, kernels_toml
from ptwalk_vm import config, qemu
from ptwalk_vm.config import ConfigError

SCRIPTS = Path(__file__).resolve().parents[1]
DEPS = SCRIPTS / "deps.sh"
FLAVOURS = ["amd64", "cloud-amd64", "rt-amd64"]


def _bzimage(path: Path, release: str) -> None:
    """A file with an x86 setup header naming RELEASE (what image_release reads)."""
    hdr = bytearray(0x600)
    hdr[0x202:0x206] = b"HdrS"
    hdr[0x20E:0x210] = (0x300 - 0x200).to_bytes(2, "little")
    ver = f"{release} (me@host) #1 SMP".encode()
    hdr[0x300:0x300 + len(ver)] = ver
    path.write_bytes(bytes(hdr))


def test_both_series_with_every_flavour() -> None:
    raw = tomllib.loads((SCRIPTS / "kernels.toml").read_text())
    # make test: cloud and rt of 6.1 and 6.12, the cloud one of 6.18 and 7.3
    # (make test-matrix: every flavour)
    assert raw["test_matrices"] == ["debian-6.1:cloud-amd64+rt-amd64",
                                    "debian-6.12:cloud-amd64+rt-amd64",
                                    "debian-6.18:cloud-amd64", "debian-7.3:cloud-amd64"]
    for name, series in (("debian-6.1", "6.1"), ("debian-6.12", "6.12")):
        m = raw["matrix"][name]
        assert m["series"] == series
        assert [k["name"] for k in m["kernel"]] == FLAVOURS
        prefixes = {"6.1": "6.1.0-56-", "6.12": "6.12.95+deb12-"}
        for k in m["kernel"]:  # a regex of this series and flavour only
            pat = re.compile(k["release_match"])
            for s, prefix in prefixes.items():
                for flavour in FLAVOURS:
                    want = s == series and flavour == k["name"]
                    assert bool(pat.fullmatch(prefix + flavour)) == want, (k, prefix + flavour)


def test_deps_installs_what_the_6_12_matrix_looks_for() -> None:
    text = DEPS.read_text()
    rel = re.search(r'^bpo_k612="([^"]+)"', text, re.M)
    assert rel, "deps.sh names no 6.12 release (bpo_k612)"
    raw = tomllib.loads((SCRIPTS / "kernels.toml").read_text())
    for k in raw["matrix"]["debian-6.12"]["kernel"]:
        release = f"{rel.group(1)}-{k['name']}"
        assert re.fullmatch(k["release_match"], release), (release, k["release_match"])
        for pkg in ("linux-image-$bpo_k612-", "linux-headers-$bpo_k612-"):
            assert f"{pkg}{k['name']}" in text, f"deps.sh does not install {pkg}{k['name']}"
    assert "qemu-system-x86/$bpo_suite:1:10.0" in text
    # the machine's apt sources are left alone: a private configuration
    assert "APT_CONFIG=" in text and "/etc/apt/sources.list.d/" in text
    assert not re.search(r">+\s*\"?/etc/apt", text), "deps.sh writes under /etc/apt"


def test_two_matrices_ids_and_a_developer_bzimage(tmp_path: Path) -> None:
    boot = fake_boot(tmp_path, "6.1.0-9-amd64", "6.1.0-12-amd64", "6.12.43+deb12-amd64",
                     "6.12.95+deb12-amd64")
    _bzimage(tmp_path / "bzImage", "6.1.192-patched")
    a = kernel_entry("a", "amd64", f"{boot}/vmlinuz-6.1.*", r"6\.1\.\d+-\d+-amd64")
    b = kernel_entry("b", "amd64", f"{boot}/vmlinuz-6.12.*", r"6\.12\.43\+deb12-amd64")
    mine = kernel_entry("mine", "patched", tmp_path / "bzImage")
    toml = tmp_path / "k.toml"
    toml.write_text(kernels_toml({"a": ("6.1", a), "b": ("6.12", b), "mine": ("dev", mine)},
                                 "a", ["a", "b", "mine"]))
    cfg = config.load(toml)
    ks, missing = cfg.matrices(cfg.test_matrices)
    assert not missing
    # newest 6.1; the pinned point release, not the newest 6.12; the bzImage's own release
    assert [(k.id, k.release) for k in ks] == [("6.1-amd64", "6.1.0-12-amd64"),
                                               ("6.12-amd64", "6.12.43+deb12-amd64"),
                                               ("dev-patched", "6.1.192-patched")]
    toml.write_text(toml.read_text().replace('series = "6.12"', 'series = "6.1"'))
    with pytest.raises(ConfigError, match="6.1-amd64 occur in more than one matrix"):
        config.load(toml).matrices(["a", "b"])
    toml.write_text(toml.read_text().replace('"mine"]', '"nope"]'))
    with pytest.raises(ConfigError, match="'nope', which is no matrix"):
        _ = config.load(toml).test_matrices


def test_one_flavour_of_a_matrix(tmp_path: Path) -> None:
    """test_matrices may keep one flavour of a matrix ("MATRIX:FLAVOUR");
    a look-up over every matrix still finds each kernel once."""
    import bench_vm
    boot = fake_boot(tmp_path, "6.1.0-12-amd64", "6.12.95+deb12-amd64",
                     "6.12.95+deb12-cloud-amd64")
    a = kernel_entry("a", "amd64", f"{boot}/vmlinuz-6.1.*", r"6\.1\.\d+-\d+-amd64")
    b = (kernel_entry("b", "amd64", f"{boot}/vmlinuz-6.12.*", r"6\.12\.\d+\+deb12-amd64")
         + kernel_entry("b", "cloud-amd64", f"{boot}/vmlinuz-6.12.*",
                        r"6\.12\.\d+\+deb12-cloud-amd64"))
    toml = tmp_path / "k.toml"
    toml.write_text(kernels_toml({"a": ("6.1", a), "b": ("6.12", b)}, "a",
                                 ["a", "b:cloud-amd64"]))
    cfg = config.load(toml)
    ks, missing = cfg.matrices(cfg.test_matrices)
    assert not missing and [k.id for k in ks] == ["6.1-amd64", "6.12-cloud-amd64"]
    both = cfg.matrices(["b:amd64+cloud-amd64"])[0]
    assert [k.id for k in both] == ["6.12-amd64", "6.12-cloud-amd64"]
    with pytest.raises(ConfigError, match="has no flavour rt-amd64"):
        cfg.matrices(["b:rt-amd64"])
    # every matrix whole, beside the one flavour test_matrices keeps: the
    # kernel is found (no module built for it), not a duplicate id
    with pytest.raises(ConfigError, match="6.12-amd64: no ptwalk.ko built"):
        bench_vm.find_kernel(cfg, "6.12-amd64")


# vm: it needs ptwalk.ko of the matrix kernels, which make test builds beside
# pytest-host (module-matrix), so it runs with the VM stage
@pytest.mark.vm
def test_matrix_json_lists_the_6_12_flavours() -> None:
    """`ptwalk-vm matrix --matrix debian-6.12 --json`: the three flavours, each
    with the ptwalk.ko built for it (make module-matrix)."""
    if not list(Path("/boot").glob("vmlinuz-6.12.*")):
        if os.environ.get("PTWALK_REQUIRE_VM"):
            pytest.fail("no 6.12 kernel in /boot: scripts/deps.sh vm installs them")
        pytest.skip("no 6.12 kernel in /boot (scripts/deps.sh vm)")
    p = subprocess.run([sys.executable, str(SCRIPTS / "ptwalk-vm"), "matrix", "--matrix",
                        "debian-6.12", "--json"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    ks = json.loads(p.stdout)
    assert [k["name"] for k in ks] == FLAVOURS
    for k in ks:
        assert k["series"] == "6.12"
        assert re.fullmatch(r"6\.12\.\d+\+deb12-" + k["name"], k["release"])
        assert k["ko"], f"no ptwalk.ko for {k['release']} (make module-matrix)"
        assert config.module_release(Path(k["ko"])) == k["release"]
        assert Path(k["headers"]).is_dir() and Path(k["module_dir"]).is_dir()


def test_qemu_version_and_cpu_are_read(tmp_path: Path) -> None:
    fake = tmp_path / "qemu-fake"
    fake.write_text("#!/bin/sh\necho 'QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-2)'\n")
    fake.chmod(0o755)
    assert qemu.qemu_version(str(fake)) == "10.0.2 (Debian 1:10.0.2+ds-2)"
    assert qemu.qemu_version(str(tmp_path / "none")).startswith("unknown (")
    assert qemu.cpu_model(["q", "-cpu", "max,la57=off", "-m", "1G"]) == "max,la57=off"
    assert qemu.cpu_model(["q", "-m", "1G"]) == ""
    real = shutil.which("qemu-system-x86_64")
    if real:
        assert qemu.qemu_version(real)[:1].isdigit(), qemu.qemu_version(real)


def test_known_bugs_are_data(tmp_path: Path) -> None:
    """6.1 is expected to skip a VMA after smaps_rollup yields (6d065f507d82
    is not in 6.1.y) and 6.12 not to; a bug name the suites do not know is
    refused rather than silently expected nowhere."""
    cfg = config.load()
    raw = tomllib.loads((SCRIPTS / "kernels.toml").read_text())
    assert raw["matrix"]["debian-6.1"]["known_bugs"] == ["smaps_rollup_skip"]
    assert raw["matrix"]["debian-6.12"]["known_bugs"] == []
    for k in cfg.matrices(cfg.test_matrices)[0]:
        assert k.known_bugs == (("smaps_rollup_skip",) if k.series == "6.1" else ())
    boot = tmp_path / "vmlinuz-6.1.0-1-amd64"
    boot.write_bytes(b"x")
    toml = tmp_path / "k.toml"
    toml.write_text(kernels_toml({"m": (None, kernel_entry("m", "amd64", boot))},
                                 extra='known_bugs = ["smaps_rollup_skp"]\n'))
    with pytest.raises(ConfigError, match="unknown bug 'smaps_rollup_skp'"):
        config.load(toml).matrix("m")
    assert config.load(toml).kernel("x", boot).known_bugs is None  # outside a matrix: unknown


def test_clock_mode_on_the_qemu_command_line(tmp_path: Path) -> None:
    arch = config.load().arch("x86_64")
    p = qemu.BootParams(kernel=Path("/k"), initrd=Path("/i"), arch=arch, accel="tcg")
    real = qemu.qemu_command(p, tmp_path, "10.0.2 (Debian)")
    assert "-icount" not in real and "ptwalk_clock=realtime" in real[real.index("-append") + 1]
    assert "ptwalk_qemu=10.0.2" in real[real.index("-append") + 1]
    ic = qemu.qemu_command(qemu.BootParams(kernel=Path("/k"), initrd=Path("/i"), arch=arch,
                                           accel="tcg", clock="icount"), tmp_path, "10.0.2")
    assert ic[ic.index("-icount") + 1] == "shift=0,sleep=off"
    with pytest.raises(qemu.QemuError, match="needs TCG"):
        qemu.qemu_command(qemu.BootParams(kernel=Path("/k"), initrd=Path("/i"), arch=arch,
                                          accel="kvm", clock="icount"), tmp_path)
    with pytest.raises(qemu.QemuError, match="clock must be one of"):
        qemu.qemu_command(qemu.BootParams(kernel=Path("/k"), initrd=Path("/i"), arch=arch,
                                          accel="tcg", clock="fast"), tmp_path)
    r = subprocess.run([sys.executable, str(SCRIPTS / "ptwalk-vm"), "run", "--clock", "icount",
                        "--accel", "kvm", "--kernel", "/nonexistent", "--", "true"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and r.stderr.count("\n") <= 2 and "Traceback" not in r.stderr


NEW = {"debian-6.18": ("6.18", "tbpo_k618", ("linux-image-$tbpo_k618-",)),
       "debian-7.3": ("7.3", "tbpo_k73", ("linux-binary-$tbpo_k73-", "linux-modules-$tbpo_k73-",
                                          "linux-base-$tbpo_k73-"))}


def test_deps_unpacks_what_the_6_18_and_7_3_matrices_look_for() -> None:
    """`scripts/deps.sh kernels` fetches the point release each new matrix
    finds, for every flavour (7.x: the image, its modules and base files are
    three packages), from trixie-backports through a private apt
    configuration, into {kernels}: never installed."""
    text = DEPS.read_text()
    raw = tomllib.loads((SCRIPTS / "kernels.toml").read_text())
    assert 'kernels) want_kernels="$want_kernels $pkgs_kernels_tbpo" ;;' in text
    # make test's one: the 7.3 cloud image, its modules and base files
    assert 'kernel-7.3-cloud) want_kernels="$want_kernels $pkgs_kernel73_cloud" ;;' in text
    assert re.search(r'^pkgs_kernel73_cloud="linux-binary-\$tbpo_k73-cloud-amd64 '
                     r'linux-modules-\$tbpo_k73-cloud-amd64 \\\nlinux-base-\$tbpo_k73-cloud-amd64"',
                     text, re.M), "deps.sh: no kernel-7.3-cloud packages"
    assert 'kernel-6.18-cloud) want_kernels="$want_kernels $pkgs_kernel618_cloud" ;;' in text
    assert re.search(r'^pkgs_kernel618_cloud="linux-image-\$tbpo_k618-cloud-amd64"', text, re.M)
    deps_test = (SCRIPTS.parent / "Makefile").read_text().split("deps-test:")[1].split("\n\n")[0]
    assert "kernel-7.3-cloud" in deps_test and "kernel-6.18-cloud" in deps_test
    assert 'tbpo_suite="trixie-backports"' in text and "dpkg-deb -x" in text
    assert not re.search(r"dpkg -i|apt-get install[^\n]*\$missing_kernels", text)
    for name, (series, var, pkgs) in NEW.items():
        rel = re.search(rf'^{var}="([^"]+)"', text, re.M)
        assert rel, f"deps.sh names no {series} release ({var})"
        m = raw["matrix"][name]
        # in make test by one flavour (above), whole in make test-matrix
        assert m["series"] == series and name not in raw["test_matrices"]
        assert f"{name}:cloud-amd64" in raw["test_matrices"]
        assert [k["name"] for k in m["kernel"]] == FLAVOURS
        for k in m["kernel"]:
            assert re.fullmatch(k["release_match"], f"{rel.group(1)}-{k['name']}"), k
            assert k["modules"] == "{kernels}/usr/lib/modules/{release}"
            for pkg in pkgs:
                assert f"{pkg}{k['name']}" in text, f"deps.sh does not fetch {pkg}{k['name']}"
    assert "no_module" in raw["matrix"]["debian-6.18"]
    assert "no_module" not in raw["matrix"]["debian-7.3"]
    # 7.3's headers: in the trixie build root, one per flavour (their gcc-14)
    root = re.search(r'^pkgs_buildroot="([^"]+)"', text, re.M | re.S)
    assert root and "gcc-14" in root.group(1), "deps.sh makes no build root with gcc-14"
    for k in raw["matrix"]["debian-7.3"]["kernel"]:
        assert k["headers"] == "{buildroot}/usr/src/linux-headers-{release}"
        assert f"linux-headers-$tbpo_k73-{k['name']}" in root.group(1), k


def _fake_kernels(root: Path) -> None:
    """Both of Debian's layouts under ROOT: 6.18's /boot/vmlinuz-REL (two
    point releases) and 7.x's /usr/lib/modules/REL/vmlinuz."""
    (root / "boot").mkdir(parents=True)
    for pt in ("9", "15"):
        for f in FLAVOURS:
            rel = f"6.18.{pt}+deb13-{f}"
            _bzimage(root / "boot" / f"vmlinuz-{rel}", rel)
            (root / "usr/lib/modules" / rel).mkdir(parents=True)
    for f in FLAVOURS:
        rel = f"7.3.99+deb13-{f}"  # a point release no ptwalk.ko is built for
        d = root / "usr/lib/modules" / rel
        d.mkdir(parents=True)
        if f == "amd64":  # a file whose release only its path tells
            (d / "vmlinuz").write_bytes(b"not a bzImage")
        else:
            _bzimage(d / "vmlinuz", rel)


def test_both_layouts_and_why_a_kernel_has_no_module(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The real kernels.toml over a fake {kernels}: 6.18 found in /boot (the
    newest point release), 7.3 in /usr/lib/modules/REL/vmlinuz, with the
    release read from the image or its directory; every kernel without a
    ptwalk.ko says why: the matrix's reason for 6.18, the missing headers
    for 7.3. A pinned release_match picks its point release."""
    _fake_kernels(tmp_path / "k")
    monkeypatch.setenv("PTWALK_KERNELS", str(tmp_path / "k"))
    monkeypatch.setenv("PTWALK_BUILDROOT", str(tmp_path / "root"))
    # the cloud flavour's headers are in the build root, not built for yet
    (tmp_path / "root/usr/src/linux-headers-7.3.99+deb13-cloud-amd64").mkdir(parents=True)
    cfg = config.load()
    ks, missing = cfg.matrices(["debian-6.18", "debian-7.3"])
    assert not missing
    assert [(k.id, k.release) for k in ks] == (
        [(f"6.18-{f}", f"6.18.15+deb13-{f}") for f in FLAVOURS]
        + [(f"7.3-{f}", f"7.3.99+deb13-{f}") for f in FLAVOURS])
    for k in ks:
        assert k.ko is None and k.module_dir == tmp_path / "k/usr/lib/modules" / k.release
        if k.series == "6.18":
            assert k.image == tmp_path / "k/boot" / f"vmlinuz-{k.release}"
            assert "no linux-headers" in k.no_module
        else:
            assert k.image == tmp_path / "k/usr/lib/modules" / k.release / "vmlinuz"
            if k.name == "cloud-amd64":
                assert k.no_module == f"no ptwalk.ko built for {k.release} (make module-matrix)"
            else:
                assert k.no_module == (f"no ptwalk.ko for {k.release}: no kernel headers at "
                                       f"{tmp_path}/root/usr/src/linux-headers-{k.release} "
                                       "to build it")
    # the next step of a rollout is one line: pin the point release
    toml = tmp_path / "pin.toml"
    toml.write_text((SCRIPTS / "kernels.toml").read_text().replace(
        r"release_match = '6\.18\.\d+\+deb13-cloud-amd64'",
        r"release_match = '6\.18\.9\+deb13-cloud-amd64'"))
    pinned = {k.name: k.release for k in config.load(toml).matrix("debian-6.18")[0]}
    assert pinned == {"amd64": "6.18.15+deb13-amd64", "cloud-amd64": "6.18.9+deb13-cloud-amd64",
                      "rt-amd64": "6.18.15+deb13-rt-amd64"}
    # nothing unpacked: each kernel says where it looked
    monkeypatch.setenv("PTWALK_KERNELS", str(tmp_path / "none"))
    ks, missing = config.load().matrix("debian-7.3")
    assert ks == [] and len(missing) == 3
    assert all(f"{tmp_path}/none/usr/lib/modules/7.3.*/vmlinuz or " in m for m in missing)


def test_matrix_json_says_why_there_is_no_module(tmp_path: Path) -> None:
    """`ptwalk-vm matrix --matrix debian-6.18 --json` over a fake {kernels}:
    three kernels, each without ptwalk.ko and with the reason; lists stay
    lists in the JSON."""
    _fake_kernels(tmp_path / "k")
    env = {**os.environ, "PTWALK_KERNELS": str(tmp_path / "k"),
           "PTWALK_BUILDROOT": str(tmp_path / "root")}
    for name in NEW:
        p = subprocess.run([sys.executable, str(SCRIPTS / "ptwalk-vm"), "matrix", "--matrix",
                            name, "--json"], capture_output=True, text=True, timeout=60, env=env)
        assert p.returncode == 0, p.stderr
        ks = json.loads(p.stdout)
        assert [k["name"] for k in ks] == FLAVOURS
        for k in ks:
            assert k["ko"] is None and k["no_module"] and k["known_bugs"] == []
        p = subprocess.run([sys.executable, str(SCRIPTS / "ptwalk-vm"), "matrix", "--matrix",
                            name], capture_output=True, text=True, timeout=60, env=env)
        assert p.returncode == 0 and p.stdout.count("ko=None (no ptwalk.ko") == 3, p.stdout

# SPDX-License-Identifier: GPL-2.0
"""deploy/: the systemd unit and the Kubernetes DaemonSet run a command line
`ptwalk monitor --help` documents, and that command really starts and
serves (on loopback, briefly); the rule file passes promtool."""
from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from monitor_util import free_port, require, require_root, stop, wait_http
from ptwalk_cli import PTWALK, REPO, tagged_env

DEPLOY = REPO / "deploy"


def _help() -> str:
    r = subprocess.run([str(PTWALK), "monitor", "--help"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _documented(help_text: str) -> dict[str, bool]:
    """option -> takes a value, from the help text."""
    opts: dict[str, bool] = {}
    for m in re.finditer(r"^  (--[a-z-]+)( [A-Z.:]+)?", help_text, re.M):
        opts[m.group(1)] = m.group(2) is not None
    return opts


def _check_argv(argv: list[str], where: str) -> list[str]:
    assert Path(argv[0]).name == "ptwalk", where
    assert argv[1] == "monitor", where
    opts = _documented(_help())
    assert "--serve" in opts and opts["--serve"] and not opts["--quiet"], opts
    i = 2
    while i < len(argv):
        a = argv[i]
        assert a in opts, f"{where}: {a} is not in `ptwalk monitor --help`"
        i += 2 if opts[a] else 1
    assert "--serve" in argv, where
    return argv[2:]


def _systemd_argv() -> tuple[list[str], list[str]]:
    unit = (DEPLOY / "systemd" / "ptwalk-monitor.service").read_text()
    sections: dict[str, dict[str, str]] = {}
    cur = ""
    for ln in unit.splitlines():
        ln = ln.strip()
        if not ln or ln.startswith("#"):
            continue
        if ln.startswith("["):
            cur = ln.strip("[]")
            sections[cur] = {}
            continue
        k, v = ln.split("=", 1)
        sections[cur][k] = v
    assert {"Unit", "Service", "Install"} <= set(sections)
    svc = sections["Service"]
    # SIGTERM is the clean stop; 2 and 4 must not loop restarting
    assert svc["KillSignal"] == "SIGTERM"
    assert set(svc["RestartPreventExitStatus"].split()) == {"2", "4"}
    caps = svc["CapabilityBoundingSet"].split()
    assert caps == svc["AmbientCapabilities"].split()
    return shlex.split(svc["ExecStart"]), [c.removeprefix("CAP_").lower() for c in caps]


def _daemonset_argv() -> tuple[list[str], list[str]]:
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load((DEPLOY / "kubernetes" / "ptwalk-monitor-daemonset.yaml").read_text())
    assert doc["kind"] == "DaemonSet"
    spec = doc["spec"]["template"]["spec"]
    assert spec["hostPID"] is True  # /proc of every process on the node
    c = spec["containers"][0]
    caps = set(c["securityContext"]["capabilities"]["add"])
    assert {"BPF", "PERFMON", "SYS_ADMIN"} <= caps  # BPF, system-wide perf events, tracefs
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    assert {"/sys/kernel/tracing", "/sys/kernel/debug"} <= mounts
    port = c["ports"][0]["containerPort"]
    argv = list(c["command"]) + list(c.get("args", []))
    serve = argv[argv.index("--serve") + 1]
    assert serve.endswith(f":{port}")
    assert doc["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"] == str(port)
    sc = c["securityContext"]
    # every capability dropped but the ones added, under the runtime's
    # default seccomp profile, not privileged, no setuid gains
    assert sc["capabilities"]["drop"] == ["ALL"]
    seccomp = sc.get("seccompProfile") or spec.get("securityContext", {}).get("seccompProfile")
    assert seccomp == {"type": "RuntimeDefault"}, seccomp
    assert sc["privileged"] is False
    assert sc["allowPrivilegeEscalation"] is False
    # the same capabilities as the systemd unit's bounding set
    assert {x.lower() for x in caps} == set(_systemd_argv()[1])
    return argv, [x.lower() for x in caps]


@pytest.mark.parametrize("which", ["systemd", "kubernetes"])
def test_deploy_command_line_is_documented_and_runs(which: str, tmp_path: Path) -> None:
    argv, caps = _systemd_argv() if which == "systemd" else _daemonset_argv()
    args = _check_argv(argv, which)
    require_root()
    # run it for real, briefly: on a free loopback port (tests listen on
    # 127.0.0.1 only, whatever the manifest's address)
    port = free_port()
    i = args.index("--serve")
    args[i + 1] = f"127.0.0.1:{port}"
    # with the capabilities the file grants and no others (tracefs is
    # mounted for it, as the unit's After= and the DaemonSet's mount do)
    only = ",".join(["-all"] + ["+" + c for c in caps])
    log = open(tmp_path / "monitor.log", "w")
    mon = subprocess.Popen(
        ["unshare", "-m", "sh", "-c",
         '{ mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing; } '
         '&& exec setpriv '
         f'--inh-caps={only} --ambient-caps={only} --bounding-set={only} "$@"', "sh",
         str(PTWALK), "monitor", *args], stdout=log, stderr=subprocess.STDOUT, text=True,
        env=tagged_env())
    try:
        body = wait_http(f"http://127.0.0.1:{port}/metrics", mon, 30)
        # those capabilities are enough for the cheap backend
        assert 'ptwalk_monitor_info{backend="bpf"} 1' in body, body[-2000:]
        # the deployed monitor leaves the kernel's BPF run-time statistics
        # off (host-wide: every BPF program on the node would pay for them)
        assert "ptwalk_monitor_bpf_run_seconds_total" not in body
    finally:
        rc = stop(mon)
    assert rc == 0, (tmp_path / "monitor.log").read_text()


def test_rule_file_passes_promtool() -> None:
    require(shutil.which("promtool") is not None, "promtool (scripts/deps.sh prometheus) missing")
    rules = DEPLOY / "prometheus" / "ptwalk-rules.yml"
    r = subprocess.run(["promtool", "check", "rules", str(rules)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS: 4 rules found" in r.stdout, r.stdout


def test_docs_explain_each_deploy_file() -> None:
    doc = (REPO / "docs" / "monitor.md").read_text()
    for f in DEPLOY.rglob("*"):
        if f.is_file():
            assert str(f.relative_to(REPO)) in doc, f"docs/monitor.md does not explain {f.name}"


_EXPOSURE = re.compile(r"Overall exposure level for ptwalk-monitor\.service: (\d+\.\d+) ")


def test_systemd_unit_exposure_at_most_recorded() -> None:
    """systemd's own rating of the unit's sandboxing, offline: no worse than
    the figure deploy/systemd/SECURITY.md records."""
    recorded = _EXPOSURE.search((DEPLOY / "systemd" / "SECURITY.md").read_text())
    assert recorded, "deploy/systemd/SECURITY.md records no exposure level"
    tool = shutil.which("systemd-analyze")
    require(tool is not None, "systemd-analyze (Debian package systemd) missing")
    r = subprocess.run([str(tool), "security", "--offline=yes", "--no-pager",
                        str(DEPLOY / "systemd" / "ptwalk-monitor.service")],
                       capture_output=True, text=True, timeout=60)
    out = r.stdout + r.stderr
    require("--offline" not in r.stderr, f"systemd-analyze has no --offline: {r.stderr.strip()}")
    m = _EXPOSURE.search(out)
    assert m, out[-2000:]
    assert float(m.group(1)) <= float(recorded.group(1)), out

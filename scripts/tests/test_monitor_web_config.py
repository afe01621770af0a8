# SPDX-License-Identifier: GPL-2.0
"""`ptwalk monitor --serve --web-config FILE`: TLS and basic auth in the
Prometheus exporter-toolkit format. Debian's Prometheus scrapes over TLS
with basic auth; a wrong password gets 401; plain HTTP to the TLS port
gets no answer and breaks nothing; with client_ca_file a client without a
certificate the CA signed is disconnected; a bad file is refused at
start with one line and exit 1. Certificates from the openssl command,
bcrypt hashes from libxcrypt (Python's crypt module)."""
from __future__ import annotations

import http.client
import shutil
import socket
import ssl
import subprocess
import time
import warnings
from pathlib import Path

import pytest

from monitor_util import (Prometheus, free_port, require, require_root, start_monitor, stop)
from ptwalk_cli import PTWALK, tagged_env

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt  # libxcrypt's crypt(3); deprecated in Python, not in Debian 12

PASSWORD = "s3cret-scrape"


def bcrypt(pw: str) -> str:
    h = crypt.crypt(pw, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 6))
    assert h and h.startswith("$2"), h
    return h


def _openssl(*args: str, cwd: Path) -> None:
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def make_ca(d: Path, name: str) -> None:
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "2",
             "-subj", f"/CN={name}", cwd=d)


def make_cert(d: Path, name: str, ca: str, ext: str) -> None:
    (d / f"{name}.ext").write_text(ext + "\n")
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=d)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext",
             cwd=d)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require(shutil.which("openssl") is not None,
            "the openssl command is not installed (scripts/deps.sh prometheus)")
    d = tmp_path_factory.mktemp("pki")
    make_ca(d, "ca")
    make_ca(d, "other-ca")
    make_cert(d, "server", "ca", "subjectAltName=IP:127.0.0.1")
    make_cert(d, "client", "ca", "extendedKeyUsage=clientAuth")
    make_cert(d, "stranger", "other-ca", "extendedKeyUsage=clientAuth")
    return d


def get(port: int, ctx: ssl.SSLContext | None, auth: tuple[str, str] | None = None,
        timeout: float = 5) -> int:
    """The status of GET /metrics, over TLS when ctx."""
    import base64
    c: http.client.HTTPConnection
    if ctx is not None:
        c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=timeout)
    else:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {}
    if auth:
        h["Authorization"] = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    try:
        c.request("GET", "/metrics", headers=h)
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


def client_ctx(pki: Path, cert: str | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    if cert:
        ctx.load_cert_chain(str(pki / f"{cert}.crt"), str(pki / f"{cert}.key"))
    return ctx


def wait_tls(port: int, ctx: ssl.SSLContext, mon: subprocess.Popen[str],
             auth: tuple[str, str] | None) -> None:
    end = time.monotonic() + 30
    last = ""
    while time.monotonic() < end:
        assert mon.poll() is None, "monitor exited"
        try:
            if get(port, ctx, auth, timeout=2) == 200:
                return
        except OSError as e:
            last = str(e)
        time.sleep(0.2)
    raise AssertionError(f"not served over TLS within 30 s: {last}")


def test_prometheus_scrapes_over_tls_with_basic_auth(tmp_path: Path, pki: Path) -> None:
    require_root()
    require(shutil.which("prometheus") is not None,
            "Debian's prometheus is not installed (scripts/deps.sh prometheus)")
    # relative paths are the config file's directory's
    (pki / "web.yml").write_text(
        "tls_server_config:\n"
        "  cert_file: server.crt\n"
        "  key_file: server.key\n"
        "basic_auth_users:\n"
        f"  prometheus: '{bcrypt(PASSWORD)}'\n")
    port = free_port()
    mon = start_monitor(tmp_path, "--serve", f"127.0.0.1:{port}",
                        "--web-config", str(pki / "web.yml"), "--quiet")
    prom = None
    ctx = client_ctx(pki)
    try:
        wait_tls(port, ctx, mon, ("prometheus", PASSWORD))
        assert get(port, ctx, ("prometheus", "wrong")) == 401
        assert get(port, ctx, ("nobody", PASSWORD)) == 401
        assert get(port, ctx) == 401
        # plain HTTP to the TLS port: no HTTP answer, and the server goes on
        with pytest.raises((http.client.HTTPException, OSError)):
            get(port, None)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            try:
                got = s.recv(4096)
            except ConnectionResetError:
                got = b""
            assert not got.startswith(b"HTTP/"), got
        assert get(port, ctx, ("prometheus", PASSWORD)) == 200
        prom = Prometheus(tmp_path, port, scrape_extra=(
            "    scheme: https\n"
            "    tls_config:\n"
            f"      ca_file: {pki / 'ca.crt'}\n"
            "    basic_auth:\n"
            "      username: prometheus\n"
            f"      password: {PASSWORD}\n"))
        prom.ready()
        end = time.monotonic() + 30
        up: list[dict[str, object]] = []
        while time.monotonic() < end:
            up = prom.query('up{job="ptwalk"} == 1')
            if up:
                break
            time.sleep(0.5)
        assert up, prom.api("targets")["activeTargets"]
        assert prom.query('ptwalk_monitor_cpu_seconds_total{job="ptwalk"}')
    finally:
        if prom is not None:
            prom.stop()
        rc = stop(mon)
    assert rc == 0, (tmp_path / "monitor.log").read_text()


def test_client_certificate_required(tmp_path: Path, pki: Path) -> None:
    require_root()
    (pki / "web-mtls.yml").write_text(
        "tls_server_config:\n"
        f"  cert_file: {pki / 'server.crt'}\n"
        f"  key_file: {pki / 'server.key'}\n"
        f"  client_ca_file: {pki / 'ca.crt'}\n"
        "  client_auth_type: RequireAndVerifyClientCert\n")
    port = free_port()
    mon = start_monitor(tmp_path, "--serve", f"127.0.0.1:{port}",
                        "--web-config", str(pki / "web-mtls.yml"), "--quiet")
    try:
        wait_tls(port, client_ctx(pki, "client"), mon, None)
        for who in (None, "stranger"):  # no certificate, or another CA's
            with pytest.raises((http.client.HTTPException, OSError)):
                get(port, client_ctx(pki, who))
        assert get(port, client_ctx(pki, "client")) == 200
    finally:
        rc = stop(mon)
    assert rc == 0, (tmp_path / "monitor.log").read_text()


@pytest.mark.parametrize("body,word", [
    (None, "cannot read"),
    ("tls_server_config: [\n", "not YAML"),
    ("tls_server_config:\n  cert_file: server.crt\n", "key_file missing"),
    ("tls_server_config:\n  cert_file: ca.key\n  key_file: ca.key\n", "cert_file and key_file"),
    ("tls_server_config:\n  cert_file: server.crt\n  key_file: ca.key\n", "cert_file and key_file"),
    ("tls_server_config:\n  cert_file: server.ext\n  key_file: server.key\n", "not PEM"),
    ("tls_server_config:\n  cert_file: nothere.crt\n  key_file: server.key\n", "cannot read"),
    ("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
     "  cipher_suites: [x]\n", "cipher_suites: not supported"),
    ("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
     "  client_auth_type: VerifyClientCertIfGiven\n", "not supported"),
    ("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
     "  client_auth_type: RequireAndVerifyClientCert\n", "needs client_ca_file"),
    ("basic_auth_users:\n  u: $1$abc$0123456789012345678901\n", "not a bcrypt hash"),
    ("basic_auth_users: [u]\n", "want a mapping"),
    ("http_server_config:\n  http2: true\n", "http_server_config: not supported"),
])
def test_bad_web_config_refused_at_start(pki: Path, body: str | None, word: str) -> None:
    f = pki / "bad.yml"
    f.unlink(missing_ok=True)
    if body is not None:
        f.write_text(body)
    r = subprocess.run([str(PTWALK), "monitor", "--serve", f"127.0.0.1:{free_port()}",
                        "--web-config", str(f), "--duration", "5s"],
                       capture_output=True, text=True, timeout=60, env=tagged_env())
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert len(lines) == 1 and lines[0].startswith(f"ptwalk monitor: --web-config {f}: "), lines
    assert word in lines[0], lines


def test_web_config_without_serve_exit_2(pki: Path) -> None:
    r = subprocess.run([str(PTWALK), "monitor", "--web-config", str(pki / "ca.crt")],
                       capture_output=True, text=True, timeout=60, env=tagged_env())
    assert r.returncode == 2, r.stderr
    assert "--web-config needs --serve" in r.stderr

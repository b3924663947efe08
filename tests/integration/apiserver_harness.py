"""A real kube-apiserver v1.35.4 on loopback, over a real etcd, for what only a real API server decides: the
ValidatingAdmissionPolicies' CEL and the encryption at rest of the karmada-apiserver's configuration.

Both binaries are the pinned upstream builds (`python -m upstream.build`: upstream.build.binary); missing, the test
skips with the reason (a failure under KARMADA_HUB_REQUIRE_TOOLS=1). Not the rendered karmada-apiserver command
line (that is the local real fleet's job): authentication is a static token table, so a case's user and groups
are exactly the token's, authorization RBAC, admission the default plugins (ValidatingAdmissionPolicy among them),
plus whatever flags a test adds (`--encryption-provider-config`). Every process is stopped and every file removed
on exit, also on failure; every wait is bounded.
"""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization

from tests.support.testpki import make_ca, make_leaf
from tests.support.tools import require_tool

READY_SECONDS = 90


def binaries() -> tuple[str, str, str]:
    """(etcd, etcdctl, kube-apiserver) from the upstream build, or skip/fail as require_tool does."""
    try:
        from upstream.build import binary
    except ImportError:  # pragma: no cover - the package is part of this checkout
        binary = None  # type: ignore[assignment]
    found = []
    for name in ("etcd", "etcdctl", "kube-apiserver"):
        path = binary(name) if binary is not None else None
        found.append(str(path) if path else require_tool(
            name, "the pinned upstream build: python -m upstream.build"))
    return found[0], found[1], found[2]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class ApiServer:
    """`tokens`: token -> (user, groups). Use as a context manager."""

    tokens: Mapping[str, tuple[str, Sequence[str]]]
    extra_args: Sequence[str] = ()
    files: Mapping[str, str] = field(default_factory=dict)
    """name -> text, written into the server's directory (`{dir}` in extra_args is that directory)."""
    url: str = ""
    etcd_url: str = ""
    ca_pem: str = ""

    def __enter__(self) -> ApiServer:
        self._dir = Path(tempfile.mkdtemp(prefix="kas-"))
        self._procs: list[subprocess.Popen[bytes]] = []
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *_: Any) -> None:
        for proc in reversed(getattr(self, "_procs", [])):
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)
        shutil.rmtree(self._dir, ignore_errors=True)

    def _start(self) -> None:
        etcd, self._etcdctl, apiserver = binaries()
        d = self._dir
        ca = make_ca("kas-test-ca")
        leaf = make_leaf(ca, "kube-apiserver", True)
        sa = make_ca("kas-test-sa")
        for name, text in {"ca.crt": ca.cert_pem, "srv.crt": leaf.cert_pem, "srv.key": leaf.key_pem,
                           "sa.key": sa.key_pem, "sa.pub": sa.cert.public_key().public_bytes(
                               serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode(),
                           **self.files}.items():
            (d / name).write_text(text)
        (d / "tokens.csv").write_text("".join(
            f'{token},{user},{user}-uid,"{",".join(groups)}"\n' for token, (user, groups) in self.tokens.items()))
        client, peer, port = _port(), _port(), _port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        self._spawn([etcd, f"--data-dir={d / 'etcd'}", f"--listen-client-urls={self.etcd_url}",
                     f"--advertise-client-urls={self.etcd_url}", f"--listen-peer-urls=http://127.0.0.1:{peer}",
                     f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                     f"--initial-cluster=default=http://127.0.0.1:{peer}"], "etcd.log")
        self._spawn([apiserver, f"--etcd-servers={self.etcd_url}", "--bind-address=127.0.0.1",
                     f"--secure-port={port}", f"--tls-cert-file={d / 'srv.crt'}",
                     f"--tls-private-key-file={d / 'srv.key'}", f"--token-auth-file={d / 'tokens.csv'}",
                     "--authorization-mode=RBAC", "--anonymous-auth=false",
                     "--service-account-issuer=https://kubernetes.default.svc",
                     f"--service-account-key-file={d / 'sa.pub'}", f"--service-account-signing-key-file={d / 'sa.key'}",
                     "--service-cluster-ip-range=10.96.0.0/16",
                     *(a.replace("{dir}", str(d)) for a in self.extra_args)], "kube-apiserver.log")
        self.url, self.ca_pem = f"https://127.0.0.1:{port}", ca.cert_pem
        admin = next(t for t, (_, groups) in self.tokens.items() if "system:masters" in groups)
        deadline = time.monotonic() + READY_SECONDS
        while True:
            try:
                if self.request(admin, "GET", "/readyz")[0] == 200 and self.request(
                        admin, "GET", "/api/v1/namespaces/kube-system")[0] == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline or any(p.poll() is not None for p in self._procs):
                log = (d / "kube-apiserver.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"kube-apiserver did not become ready: {log}")
            time.sleep(0.5)

    def _spawn(self, argv: list[str], log: str) -> None:
        out = (self._dir / log).open("wb")
        self._procs.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT))

    def spawn(self, argv: list[str], log: str) -> subprocess.Popen[bytes]:
        """Another process beside the server (an aggregated apiserver), stopped and cleaned up with it."""
        self._spawn(argv, log)
        return self._procs[-1]

    def log(self, name: str) -> str:
        return (self._dir / name).read_text(errors="replace")

    def kubeconfig(self, token: str) -> Path:
        """A kubeconfig file for this server with `token` (for processes the test starts)."""
        path = self._dir / f"kubeconfig-{len(list(self._dir.glob('kubeconfig-*')))}"
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": self.url, "certificate-authority": str(self._dir /
                                                                                                    "ca.crt")}}],
            "users": [{"name": "u", "user": {"token": token}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
        return path

    @property
    def directory(self) -> Path:
        return self._dir

    def request(self, token: str, method: str, path: str, body: Any = None,
                content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
        """One call; (status, decoded JSON body or {})."""
        context = ssl.create_default_context(cadata=self.ca_pem)
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": content_type,
                                              "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, context=context, timeout=30) as resp:
                raw = resp.read()
                status = resp.status
        except urllib.error.HTTPError as err:
            raw, status = err.read(), err.code
        try:
            return status, json.loads(raw or b"{}")
        except ValueError:
            return status, {"message": raw.decode(errors="replace")}

    def etcd_value(self, key: str) -> bytes:
        """The raw bytes etcd holds for `key` (what encryption at rest must have turned into ciphertext)."""
        out = subprocess.run([self._etcdctl, f"--endpoints={self.etcd_url}", "get", key, "--print-value-only"],
                             capture_output=True, timeout=30, check=True)
        return out.stdout

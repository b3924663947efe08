"""Pull-member join and certificate pickup, run inside the member (standard library and the `openssl` binary).

`join` (a Job, before the karmada-agent Deployment) does what `karmadactl register` does for the agent's own
credential, without its rbac-generator step (the hub stack owns the agent's RBAC):

1. If Secret `<namespace>/<kubeconfig-secret>` holds a kubeconfig that still belongs to the current hub, the member
   is joined: delete the bootstrap Secret if any, exit 0. It belongs to the hub when its client certificate verifies
   against the kubeconfig's own CA and has more than a tenth of its life left, and, when a bootstrap Secret is
   there (PullJoin writes one exactly when the hub's URL or CA no longer match, or the certificate is used up), when
   its `server` and `certificate-authority-data` are that Secret's `server` and `ca.crt`. The agent cannot heal a
   stale one itself: karmada v1.18.2 `cmd/agent/app/agent.go` reads the kubeconfig once at start, and certRotation
   (`pkg/controllers/certificate/cert_rotation_controller.go` `syncCertRotation`) rewrites only the client
   certificate and key, through the hub it can no longer reach.
2. Read Secret `<namespace>/<bootstrap-secret>` (`token`, `server`, `ca.crt`), written by the region stack's
   PullJoin resource; the token is a bootstrap token that lives an hour.
3. Make an EC P-256 key and a CSR for CN `system:karmada:agent:<cluster>`, O `system:karmada:agents`, here, with
   `openssl` (the pinned python:3.12-slim-bookworm image has it: its `ca-certificates` depends on `openssl`).
4. Create a CertificateSigningRequest at the hub with the bootstrap token (signer
   `kubernetes.io/kube-apiserver-client`, usages digital signature/key encipherment/client auth, the lifetime
   asked), and wait until the controller-manager's agentcsrapproving has approved it and kube-controller-manager
   has signed it (`status.certificate`); a Denied or Failed condition stops the join.
5. Check the certificate is for this key, write the kubeconfig the agent's cert rotation expects (cluster
   `karmada-apiserver`, user `<cluster>`, context `<cluster>@karmada-apiserver`, inline data), create the Secret
   (an existing stale one is replaced), delete the bootstrap Secret.

`restart` (a CronJob) rolls the agent Deployment when one of its containers started before the certificate in the
Secret was issued: the agent loads its kubeconfig only at start, and its certRotation controller writes the new
certificate into that Secret (karmada v1.18.2 pkg/controllers/certificate/cert_rotation_controller.go). The issue
time is `notBefore` plus kube-controller-manager's five-minute backdate (SIGNER_BACKDATE).

Member API access is the pod's service account (in-cluster), or `--member-server/--member-token-file/
--member-ca-file` for tests. Logs never print the token, the key or a certificate.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from typing import Any

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
AGENT_GROUP = "system:karmada:agents"
AGENT_USER_PREFIX = "system:karmada:agent:"
SIGNER = "kubernetes.io/kube-apiserver-client"
USAGES = ["digital signature", "key encipherment", "client auth"]
CLUSTER_ENTRY = "karmada-apiserver"
"""register's `DefaultClusterName`: the kubeconfig's cluster entry."""
KUBECONFIG_KEY = "karmada-kubeconfig"
CERT_FIELD = "client-certificate-data"
KEY_FIELD = "client-key-data"
MIN_LIFE_LEFT = 0.1
RESTART_ANNOTATION = "karmada-hub.io/agent-cert-not-before"
START_MARGIN = dt.timedelta(minutes=2)
"""kubelet refreshes a mounted Secret within about a minute; a container that started just after the rotation may
still have read the old file."""
SIGNER_BACKDATE = dt.timedelta(minutes=5)
"""kube-controller-manager's csrsigning signs with `Backdate: 5 * time.Minute` and sets `NotBefore = now - Backdate`
(kubernetes v1.35.4 pkg/controller/certificates/signer/signer.go `sign`, pkg/controller/certificates/authority/
policies.go `PermissiveSigningPolicy.apply`): a certificate was issued five minutes after its notBefore."""


class JoinError(Exception):
    """A failure the operator must act on; the message is one line."""


class Api:
    """A small JSON client for one API server: bearer token, pinned CA."""

    def __init__(self, server: str, ca_pem: str, token: str, timeout: float = 10.0) -> None:
        if not server.startswith("https://"):
            raise JoinError(f"refusing a non-https API server URL {server!r}")
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.context = ssl.create_default_context(cadata=ca_pem)

    def request(self, method: str, path: str, body: Any = None,
                content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self.context, timeout=self.timeout) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            try:
                payload = json.loads(exc.read() or b"{}")
            except ValueError:
                payload = {}
            return exc.code, payload


def member_api(args: argparse.Namespace) -> Api:
    server = args.member_server
    if not server:
        host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        if not host:
            raise JoinError("not in a pod (KUBERNETES_SERVICE_HOST unset) and no --member-server given")
        server = f"https://{host}:{port}" if ":" not in host else f"https://[{host}]:{port}"
    with open(args.member_token_file) as fh:
        token = fh.read().strip()
    with open(args.member_ca_file) as fh:
        ca = fh.read()
    return Api(server, ca, token)


# ------------------------------------------------------------------------------------------- openssl


def openssl(*argv: str, stdin: bytes | None = None) -> bytes:
    binary = shutil.which("openssl")
    if binary is None:
        raise JoinError("the openssl binary is missing from this image (python:3.12-slim-bookworm has it)")
    result = subprocess.run([binary, *argv], input=stdin, capture_output=True, timeout=60, check=False)
    if result.returncode != 0:
        raise JoinError(f"openssl {argv[0]} failed: {result.stderr.decode(errors='replace').strip()[:200]}")
    return result.stdout


def csr_subject(cluster: str) -> list[tuple[str, str]]:
    """The agent's subject, as karmadactl register asks for it: the user is the CN, the group the O."""
    return [("O", AGENT_GROUP), ("CN", f"{AGENT_USER_PREFIX}{cluster}")]


def make_key_and_csr(workdir: str, cluster: str) -> tuple[bytes, bytes]:
    """An EC P-256 key (PKCS#8 PEM) and its CSR with exactly the agent's subject, no extensions, no SANs."""
    key_path, cnf = os.path.join(workdir, "agent.key"), os.path.join(workdir, "req.cnf")
    with open(cnf, "w") as fh:
        fh.write("[req]\ndistinguished_name = dn\nprompt = no\n[dn]\n" +
                 "".join(f"{field} = {value}\n" for field, value in csr_subject(cluster)))
    old = os.umask(0o077)
    try:
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key_path)
    finally:
        os.umask(old)
    csr = openssl("req", "-new", "-key", key_path, "-config", cnf)
    with open(key_path, "rb") as fh:
        return fh.read(), csr


def cert_dates(cert_pem: bytes) -> tuple[dt.datetime, dt.datetime]:
    out = openssl("x509", "-noout", "-startdate", "-enddate", stdin=cert_pem).decode()
    values = dict(line.split("=", 1) for line in out.strip().splitlines())

    def parse(text: str) -> dt.datetime:
        return dt.datetime.strptime(" ".join(text.split()), "%b %d %H:%M:%S %Y %Z").replace(tzinfo=dt.UTC)

    return parse(values["notBefore"]), parse(values["notAfter"])


def public_key(pem: bytes, is_cert: bool) -> bytes:
    if is_cert:
        return openssl("x509", "-noout", "-pubkey", stdin=pem)
    return openssl("pkey", "-pubout", stdin=pem)


def life_left(cert_pem: bytes, now: dt.datetime) -> float:
    start, end = cert_dates(cert_pem)
    total = (end - start).total_seconds()
    return max(0.0, (end - now).total_seconds()) / total if total > 0 else 0.0


# ------------------------------------------------------------------------------------------ kubeconfig


def kubeconfig(cluster: str, server: str, ca_pem: bytes, cert_pem: bytes, key_pem: bytes) -> str:
    """The agent's kubeconfig as register writes it (CreateWithCert); JSON, which clientcmd reads as YAML."""
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    context = f"{cluster}@{CLUSTER_ENTRY}"
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": CLUSTER_ENTRY, "cluster": {"server": server, "certificate-authority-data": b64(ca_pem)}}],
        "users": [{"name": cluster, "user": {CERT_FIELD: b64(cert_pem), KEY_FIELD: b64(key_pem)}}],
        "contexts": [{"name": context, "context": {"cluster": CLUSTER_ENTRY, "user": cluster}}],
    }, indent=2)


_CERT_DATA = re.compile(r"""client-certificate-data["']?\s*:\s*["']?([A-Za-z0-9+/=]+)""")
_CA_DATA = re.compile(r"""certificate-authority-data["']?\s*:\s*["']?([A-Za-z0-9+/=]+)""")
_SERVER = re.compile(r"""(?<![-\w])server["']?\s*:\s*["']?(https://[^"'\s,}]+)""")


def _only(pattern: re.Pattern[str], text: str) -> str | None:
    found = pattern.findall(text)
    return found[0] if len(found) == 1 else None


def client_cert(kubeconfig_text: str) -> bytes | None:
    """The client certificate of a one-user kubeconfig (ours as JSON, or as the rotation controller rewrites it
    in YAML); None when there is none or there are several."""
    found = _only(_CERT_DATA, kubeconfig_text)
    return base64.b64decode(found) if found else None


def cluster_entry(kubeconfig_text: str) -> tuple[str, bytes] | None:
    """The `server` and the CA (PEM) of a one-cluster kubeconfig, JSON or YAML; None unless there is exactly one."""
    server, ca = _only(_SERVER, kubeconfig_text), _only(_CA_DATA, kubeconfig_text)
    return (server, base64.b64decode(ca)) if server and ca else None


def pem_certificates(pem: bytes) -> list[bytes]:
    """The DER of every certificate in a PEM bundle: the same CA compares equal however it was wrapped."""
    text = pem.decode(errors="replace")
    blocks = re.findall(r"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", text, re.S)
    return [base64.b64decode("".join(b.split())) for b in blocks]


def same_hub(a: tuple[str, bytes], b: tuple[str, bytes]) -> bool:
    """Two (server, CA PEM) pairs name the same hub: the same URL and the same CA certificates."""
    return a[0].rstrip("/") == b[0].rstrip("/") and bool(pem_certificates(a[1])) and \
        pem_certificates(a[1]) == pem_certificates(b[1])


def issued_by(cert_pem: bytes, ca_pem: bytes) -> bool:
    """`openssl verify`: the certificate chains to (a certificate of) this CA bundle and is within its dates."""
    with tempfile.TemporaryDirectory(prefix="verify-") as work:
        ca_path, cert_path = os.path.join(work, "ca.crt"), os.path.join(work, "cert.crt")
        with open(ca_path, "wb") as fh:
            fh.write(ca_pem)
        with open(cert_path, "wb") as fh:
            fh.write(cert_pem)
        try:
            openssl("verify", "-CAfile", ca_path, cert_path)
        except JoinError:
            return False
    return True


def secret_value(secret: dict[str, Any], key: str) -> bytes | None:
    value = (secret.get("data") or {}).get(key)
    return base64.b64decode(value) if value else None


def _secret_path(namespace: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{namespace}/secrets" + (f"/{name}" if name else "")


def stale_because(secret: dict[str, Any], now: dt.datetime, hub: tuple[str, bytes] | None) -> str | None:
    """Why this kubeconfig Secret does not join the member to the hub, or None when it does. `hub`: the current
    hub's (server, CA PEM) from the bootstrap Secret, when there is one."""
    text = secret_value(secret, KUBECONFIG_KEY)
    decoded = text.decode(errors="replace") if text else ""
    cert, entry = client_cert(decoded), cluster_entry(decoded)
    if cert is None or entry is None:
        return "it holds no one-cluster, one-user kubeconfig"
    if hub is not None and not same_hub(entry, hub):
        return "it points at another hub (server or CA) than the bootstrap Secret"
    if not issued_by(cert, entry[1]):
        return "its client certificate does not verify against its CA"
    try:
        if life_left(cert, now) <= MIN_LIFE_LEFT:
            return f"its client certificate has less than {MIN_LIFE_LEFT:.0%} of its life left"
    except JoinError:
        return "its client certificate cannot be read"
    return None


# ------------------------------------------------------------------------------------------------ join


def join(args: argparse.Namespace, now: dt.datetime | None = None) -> str:
    member = member_api(args)
    ns = args.namespace
    status, existing = member.request("GET", _secret_path(ns, args.kubeconfig_secret))
    if status not in (200, 404):
        raise JoinError(f"reading Secret {ns}/{args.kubeconfig_secret} failed: HTTP {status}")
    stale = status == 200
    b_status, bootstrap = member.request("GET", _secret_path(ns, args.bootstrap_secret))
    if b_status not in (200, 404):
        raise JoinError(f"reading Secret {ns}/{args.bootstrap_secret} failed: HTTP {b_status}")
    token, server, ca = (secret_value(bootstrap, k) for k in ("token", "server", "ca.crt")) if b_status == 200 \
        else (None, None, None)
    current = (server.decode(), ca) if server and ca else None
    if stale:
        why = stale_because(existing, now or dt.datetime.now(dt.UTC), current)
        if why is None:
            member.request("DELETE", _secret_path(ns, args.bootstrap_secret))
            return "already joined"
        print(f"join: Secret {ns}/{args.kubeconfig_secret} is stale: {why}; joining again", flush=True)
    if b_status != 200:
        raise JoinError(f"no bootstrap Secret {ns}/{args.bootstrap_secret} (HTTP {b_status}): bump the member's "
                        "joinGeneration in its stack file and up the region stack")
    if not (token and server and ca):
        raise JoinError(f"bootstrap Secret {ns}/{args.bootstrap_secret} lacks token, server or ca.crt")
    hub = Api(server.decode(), ca.decode(), token.decode())
    with tempfile.TemporaryDirectory(prefix="join-") as work:
        key_pem, csr_pem = make_key_and_csr(work, args.cluster_name)
        cert_pem = request_certificate(hub, args.cluster_name, csr_pem, args.cert_seconds, args.timeout)
        if public_key(cert_pem, True) != public_key(key_pem, False):
            raise JoinError("the hub returned a certificate for another key")
    body = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": args.kubeconfig_secret, "namespace": ns, "labels": {"karmada.io/system": "true"}},
            "data": {KUBECONFIG_KEY: base64.b64encode(
                kubeconfig(args.cluster_name, server.decode(), ca, cert_pem, key_pem).encode()).decode()}}
    if stale:
        status, _ = member.request("PUT", _secret_path(ns, args.kubeconfig_secret), body)
    else:
        status, _ = member.request("POST", _secret_path(ns), body)
    if status == 409:
        status, winner = member.request("GET", _secret_path(ns, args.kubeconfig_secret))
        if status != 200 or stale_because(winner, dt.datetime.now(dt.UTC), (server.decode(), ca)) is not None:
            raise JoinError(f"Secret {ns}/{args.kubeconfig_secret} appeared meanwhile and is not usable")
        return "joined by a concurrent run"
    if status not in (200, 201):
        raise JoinError(f"writing Secret {ns}/{args.kubeconfig_secret} failed: HTTP {status}")
    member.request("DELETE", _secret_path(ns, args.bootstrap_secret))
    return "joined"


def request_certificate(hub: Api, cluster: str, csr_pem: bytes, seconds: int, timeout: float) -> bytes:
    body = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"generateName": f"{cluster}-", "labels": {"karmada.io/system": "true"}},
            "spec": {"request": base64.b64encode(csr_pem).decode(), "signerName": SIGNER, "usages": USAGES,
                     "expirationSeconds": seconds}}
    path = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
    status, created = hub.request("POST", path, body)
    if status != 201:
        raise JoinError(f"creating the CertificateSigningRequest failed: HTTP {status} "
                        f"{created.get('message', '')[:200]}")
    name = created["metadata"]["name"]
    deadline = time.monotonic() + timeout
    while True:
        status, csr = hub.request("GET", f"{path}/{name}")
        if status != 200:
            raise JoinError(f"reading CertificateSigningRequest {name} failed: HTTP {status}")
        for condition in (csr.get("status") or {}).get("conditions") or []:
            if condition.get("type") in ("Denied", "Failed") and condition.get("status", "True") == "True":
                raise JoinError(f"CertificateSigningRequest {name} {condition['type'].lower()}: "
                                f"{condition.get('reason', '')} {condition.get('message', '')}".strip())
        issued = (csr.get("status") or {}).get("certificate")
        if issued:
            return base64.b64decode(issued)
        if time.monotonic() > deadline:
            raise JoinError(f"CertificateSigningRequest {name} not signed within {timeout:.0f}s (is the "
                            "controller-manager's agentcsrapproving and kube-controller-manager's csrsigning up?)")
        time.sleep(1)


# --------------------------------------------------------------------------------------------- restart


def _time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def restart(args: argparse.Namespace) -> str:
    member = member_api(args)
    ns = args.namespace
    status, secret = member.request("GET", _secret_path(ns, args.kubeconfig_secret))
    if status != 200:
        raise JoinError(f"reading Secret {ns}/{args.kubeconfig_secret} failed: HTTP {status}")
    text = secret_value(secret, KUBECONFIG_KEY)
    cert = client_cert(text.decode()) if text else None
    if cert is None:
        raise JoinError(f"Secret {ns}/{args.kubeconfig_secret} holds no client certificate")
    not_before, _ = cert_dates(cert)
    issued = not_before + SIGNER_BACKDATE
    selector = urllib.request.quote(args.selector)
    status, pods = member.request("GET", f"/api/v1/namespaces/{ns}/pods?labelSelector={selector}")
    if status != 200:
        raise JoinError(f"listing pods {args.selector} failed: HTTP {status}")
    stale = []
    for pod in pods.get("items") or []:
        for container in (pod.get("status") or {}).get("containerStatuses") or []:
            started = ((container.get("state") or {}).get("running") or {}).get("startedAt")
            if started and _time(started) < issued + START_MARGIN:
                stale.append(pod["metadata"]["name"])
    if not stale:
        return "every agent runs the current certificate"
    mark = not_before.strftime("%Y-%m-%dT%H:%M:%SZ")
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/{args.deployment}"
    status, deployment = member.request("GET", path)
    if status != 200:
        raise JoinError(f"reading Deployment {ns}/{args.deployment} failed: HTTP {status}")
    template = deployment["spec"]["template"]["metadata"]
    if (template.get("annotations") or {}).get(RESTART_ANNOTATION) == mark:
        return f"a rollout for the certificate valid from {mark} is under way"
    patch = {"spec": {"template": {"metadata": {"annotations": {RESTART_ANNOTATION: mark}}}}}
    status, _ = member.request("PATCH", path, patch, content_type="application/merge-patch+json")
    if status != 200:
        raise JoinError(f"patching Deployment {ns}/{args.deployment} failed: HTTP {status}")
    return f"restarting {', '.join(sorted(set(stale)))} for the certificate valid from {mark}"


# ------------------------------------------------------------------------------------------------ main


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pull_join.py")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("join", "restart"):
        p = sub.add_parser(name)
        p.add_argument("--namespace", required=True)
        p.add_argument("--kubeconfig-secret", required=True)
        p.add_argument("--member-server", default="")
        p.add_argument("--member-token-file", default=f"{SA_DIR}/token")
        p.add_argument("--member-ca-file", default=f"{SA_DIR}/ca.crt")
        if name == "join":
            p.add_argument("--cluster-name", required=True)
            p.add_argument("--bootstrap-secret", required=True)
            p.add_argument("--cert-seconds", type=int, required=True)
            p.add_argument("--timeout", type=float, default=600)
        else:
            p.add_argument("--deployment", required=True)
            p.add_argument("--selector", required=True)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        result = join(args) if args.command == "join" else restart(args)
    except (JoinError, OSError) as exc:
        print(f"{args.command}: error: {exc}", file=sys.stderr, flush=True)
        return 1
    print(f"{args.command}: {result}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

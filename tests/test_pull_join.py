"""The Pull join end to end, against fake API servers that enforce the rendered RBAC (no cluster needed).

The hub is a fake karmada-apiserver serving TLS with the karmada-apiserver certificate prod-hub renders, verifying
client certificates against the rendered Karmada CA, authenticating bootstrap tokens from the Secrets it holds,
authorizing with prod-hub's rendered Roles and bindings, with the approvers the rendered hub runs: the hub's own
(agents/agent_csr_approver.py, with its rendered certificate and arguments, polling as its Deployment does) and,
only if the rendered karmada-controller-manager still ran it, upstream's agentcsrapproving (its checks from
pkg/controllers/certificate/approver/agent_csr_approving.go and its SubjectAccessReview against the same RBAC);
kube-controller-manager's csrsigning signs what is approved with the rendered Karmada CA key, capped at
`--cluster-signing-duration`. The member is a fake kube-apiserver authorizing with the Roles prod-fsn1 renders
into member prod-fsn1-b.

1. PullJoin's create (as the region stack runs it, with the region's rendered identity) writes the hub's bootstrap
   token and the member's bootstrap Secret; what it returns holds no token.
2. agents/pull_join.py runs for real (`python3` with the rendered Job's arguments, the real `openssl` making the
   key and CSR), gets its certificate with the token and writes the agent's kubeconfig into the member.
3. That kubeconfig opens a real mutual-TLS session to the hub, as the agent, and the rendered agent RBAC lets it
   do what the agent does (read the Cluster the hub made for it, update its status, its two leases, its
   self-rotation CSR) and nothing else: no Cluster of its own making, no change to its Cluster's spec.
Also: a second join is a no-op, an expired token is refused, a token cannot buy more than its own member's agent
(the review's attack: a region identity's token for another member), and the restart CronJob rolls exactly the
agents that run an older certificate.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from agents import pull_join as script
from components.fleet import csr_approver_docs as approver_docs
from components.fleet import member_docs as docs
from components.fleet import pull_join
from components.kube.api_client import KubeApi
from components.kube.kubeconfig import kubeconfig
from components.trust import region_rbac
from hubctl.mocks import unwrap
from hubctl.plan import Plan
from tests.support.fake_apiserver import FakeApiServer, Key, User
from tests.support.rbac import NODE_BOOTSTRAPPER, Rbac, Request
from tests.support.rendered import find, objects, secret_files
from tests.support.testpki import make_ca, make_leaf
from tests.support.tools import REPO, require_tool

MEMBER = "prod-fsn1-b"
SIGNING_CAP = dt.timedelta(hours=720)
BACKDATE = dt.timedelta(minutes=5)
ADMIN_TOKEN, JOIN_TOKEN, RESTART_TOKEN = "member-admin", "join-sa-token", "restart-sa-token"
USAGES_FULL = {"digital signature", "key encipherment", "client auth"}


def _rbac_objects(plan: Plan, target: str) -> list[dict[str, Any]]:
    return [o for t, o in objects(plan) if t == target and o["kind"] in (
        "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")]


def _record(plan: Plan, name: str) -> Any:
    return next(r for r in plan.records if r.name == name)


# ------------------------------------------------------------------------------- the approver + signer


def _upstream_approver_enabled(hub_plan: Plan) -> bool:
    """Whether the rendered karmada-controller-manager runs agentcsrapproving (`*` without `-agentcsrapproving`)."""
    deployment = find(hub_plan, "host", "Deployment", "karmada-controller-manager")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    controllers = next(a.split("=", 1)[1] for a in args if a.startswith("--controllers=")).split(",")
    return "-agentcsrapproving" not in controllers and ("*" in controllers or "agentcsrapproving" in controllers)


class Signer:
    """kube-controller-manager's csrsigning: signs every approved kube-apiserver-client CSR with the Karmada CA,
    capped at `--cluster-signing-duration`."""

    def __init__(self, server: FakeApiServer, ca_cert: x509.Certificate, ca_key: Any) -> None:
        self.server, self.ca_cert, self.ca_key = server, ca_cert, ca_key

    def __call__(self, _verb: str, key: Key, obj: dict[str, Any], _user: User) -> None:
        if key[:2] != ("certificates.k8s.io", "certificatesigningrequests"):
            return
        status = obj.get("status") or {}
        approved = any(c.get("type") == "Approved" for c in status.get("conditions") or [])
        if not approved or status.get("certificate") or obj["spec"].get("signerName") != script.SIGNER:
            return
        csr = x509.load_pem_x509_csr(base64.b64decode(obj["spec"]["request"]))
        now = dt.datetime.now(dt.UTC).replace(microsecond=0)
        life = min(dt.timedelta(seconds=int(obj["spec"].get("expirationSeconds", 10**9))), SIGNING_CAP)
        # csrsigning's PermissiveSigningPolicy: NotBefore = now - 5m; NotAfter = now + ttl - 5m for ttl >= 8h
        # (kubernetes v1.35.4 pkg/controller/certificates/signer/signer.go sign, authority/policies.go apply)
        cert = (x509.CertificateBuilder().subject_name(csr.subject).issuer_name(self.ca_cert.subject)
                .public_key(csr.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - BACKDATE).not_valid_after(now + life - BACKDATE)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                .sign(self.ca_key, hashes.SHA256()))
        obj["status"] = {**status, "certificate": base64.b64encode(
            cert.public_bytes(serialization.Encoding.PEM)).decode()}
        self.server.put(*key[:2], obj)


class UpstreamApprover:
    """agentcsrapproving as karmada v1.18.2 runs it (recognize, SubjectAccessReview on the CSR's user): in the lab
    only when the rendered controller-manager runs it."""

    def __init__(self, server: FakeApiServer, signer: Signer) -> None:
        self.server, self.signer = server, signer

    def __call__(self, verb: str, key: Key, obj: dict[str, Any], user: User) -> None:
        if verb != "create" or key[:2] != ("certificates.k8s.io", "certificatesigningrequests"):
            return
        spec = obj["spec"]
        csr = x509.load_pem_x509_csr(base64.b64decode(spec["request"]))
        orgs = [a.value for a in csr.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
        cn = csr.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
        try:
            csr.extensions.get_extension_for_class(x509.SubjectAlternativeName)
            has_sans = True
        except x509.ExtensionNotFound:
            has_sans = False
        usages = set(spec.get("usages") or [])
        if (spec.get("signerName") != "kubernetes.io/kube-apiserver-client" or orgs != ["system:karmada:agents"]
                or not str(cn).startswith("system:karmada:agent:") or has_sans
                or usages not in (USAGES_FULL, {"digital signature", "client auth"})):
            return  # not an agent CSR: left pending
        subresources = (["selfclusteragent"] if spec["username"] == cn else []) + ["clusteragent"]
        assert self.server.rbac is not None
        if not any(self.server.rbac.allowed(Request(spec["username"], "create", "certificates.k8s.io",
                                                    f"certificatesigningrequests/{sub}", groups=tuple(spec["groups"])))
                   for sub in subresources):
            return
        obj["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "AutoApproved"}]}
        self.signer("update", key, self.server.put(*key[:2], obj), user)  # a direct write runs no hooks


class HubApprover:
    """The rendered hub's own approver (agents/agent_csr_approver.py `reconcile` and `clean_tokens`, with its
    rendered client certificate and --member arguments) on a thread polling the fake hub, as its Deployment runs."""

    def __init__(self, hub_plan: Plan, server: FakeApiServer, tmp: Path) -> None:
        from agents import agent_csr_approver

        self.module = agent_csr_approver
        pki = secret_files(find(hub_plan, "host", "Secret", approver_docs.CERT_SECRET))
        for name, text in pki.items():
            (tmp / f"approver-{name}").write_text(text)
        deployment = find(hub_plan, "host", "Deployment", approver_docs.NAME)
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        self.tokens = agent_csr_approver.token_map(a.split("=", 1)[1] for a in args if a.startswith("--member="))
        self.api = agent_csr_approver.Client(server.url, str(tmp / "approver-ca.crt"),
                                             cert_file=str(tmp / "approver-tls.crt"),
                                             key_file=str(tmp / "approver-tls.key"))
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.is_set():
            try:
                self.module.reconcile(self.api, self.tokens)
            except Exception as err:  # reported by the fixture's teardown
                self.errors.append(repr(err))
            self.stop.wait(0.1)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


def _pem_files(tmp: Path, name: str, cert_pem: str, key_pem: str) -> tuple[Path, Path]:
    cert, key = tmp / f"{name}.crt", tmp / f"{name}.key"
    cert.write_text(cert_pem)
    key.write_text(key_pem)
    return cert, key


def _member_tls(tmp: Path) -> tuple[str, str, str]:
    """A CA and a 127.0.0.1 serving certificate for the fake member API server."""
    ca = make_ca("member-ca")
    leaf = make_leaf(ca, "member", True)
    return ca.cert_pem, leaf.cert_pem, leaf.key_pem


# ------------------------------------------------------------------------------------------- fixtures


class Lab:
    def __init__(self, hub: FakeApiServer, member: FakeApiServer, member_ca: str, karmada_ca: str, tmp: Path,
                 writer: str, job_args: list[str], restart_args: list[str]) -> None:
        self.hub, self.member, self.member_ca, self.karmada_ca, self.tmp = hub, member, member_ca, karmada_ca, tmp
        self.writer, self.job_args, self.restart_args = writer, job_args, restart_args

    def member_api(self, token: str = ADMIN_TOKEN) -> KubeApi:
        return KubeApi(server=self.member.url, ca_pem=self.member_ca, token=token)

    def run(self, args: list[str], token: str) -> subprocess.CompletedProcess[str]:
        (self.tmp / "token").write_text(token)
        (self.tmp / "ca.crt").write_text(self.member_ca)
        argv = [*args, f"--member-server={self.member.url}", f"--member-token-file={self.tmp / 'token'}",
                f"--member-ca-file={self.tmp / 'ca.crt'}"]
        return subprocess.run([sys.executable, str(REPO / "agents" / "pull_join.py"), *argv], capture_output=True,
                              text=True, timeout=120)

    def member_secret(self, name: str) -> dict[str, Any] | None:
        return self.member.get("", "secrets", docs.AGENT_NAMESPACE, name)

    def decided(self, name: str, timeout: float = 10.0) -> dict[str, Any]:
        """The CSR once the hub decided it (a certificate, or a Denied condition); bounded."""
        deadline = time.monotonic() + timeout
        while True:
            csr = self.hub.get("certificates.k8s.io", "certificatesigningrequests", "", name) or {}
            status = csr.get("status") or {}
            if status.get("certificate") or any(c.get("type") == "Denied" for c in status.get("conditions") or []):
                return csr
            if time.monotonic() > deadline:
                return csr
            time.sleep(0.05)


@pytest.fixture
def lab(rendered_prod: dict[str, Plan], tmp_path: Path) -> Iterator[Lab]:
    require_tool("openssl", "Debian package openssl (the join makes its key and CSR with it)")
    hub_plan, region_plan = rendered_prod["prod-hub"], rendered_prod["prod-fsn1"]
    api = secret_files(find(hub_plan, "host", "Secret", "karmada-apiserver-pki"))
    ca_key = serialization.load_pem_private_key(
        unwrap(_record(hub_plan, "karmada-pki-ca-key").outputs)["privateKeyPem"].encode(), None)
    ca_cert = x509.load_pem_x509_certificate(api["ca.crt"].encode())
    (tmp_path / "karmada-ca.crt").write_text(api["ca.crt"])
    hub = FakeApiServer(*_pem_files(tmp_path, "hub", api["apiserver.crt"], api["apiserver.key"]),
                        client_ca=tmp_path / "karmada-ca.crt", bootstrap_tokens=True,
                        rbac=Rbac(_rbac_objects(hub_plan, "karmada"), builtins=NODE_BOOTSTRAPPER))
    signer = Signer(hub, ca_cert, ca_key)
    if _upstream_approver_enabled(hub_plan):
        hub.hooks.append(UpstreamApprover(hub, signer))
    hub.hooks.append(signer)
    hub_approver = HubApprover(hub_plan, hub, tmp_path) if any(
        o["kind"] == "Deployment" and o["metadata"]["name"] == approver_docs.NAME
        for _, o in objects(hub_plan)) else None
    member_ca, member_cert, member_key = _member_tls(tmp_path)
    member_rbac = Rbac(_rbac_objects(region_plan, f"member-{MEMBER}"))
    member = FakeApiServer(*_pem_files(tmp_path, "member", member_cert, member_key), rbac=member_rbac,
                           tokens={
                               ADMIN_TOKEN: User("capi-admin", ("system:masters",)),
                               JOIN_TOKEN: User(f"system:serviceaccount:{docs.AGENT_NAMESPACE}:{docs.JOIN_NAME}"),
                               RESTART_TOKEN: User(f"system:serviceaccount:{docs.AGENT_NAMESPACE}:{docs.RESTART_NAME}"),
                           })
    writer = _region_writer(hub_plan, ca_cert, ca_key, hub.url)
    job = find(region_plan, f"member-{MEMBER}", "Job", docs.JOIN_NAME)
    cron = find(region_plan, f"member-{MEMBER}", "CronJob", docs.RESTART_NAME)
    job_args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    restart_args = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"]
    try:
        yield Lab(hub, member, member_ca, api["ca.crt"], tmp_path, writer, job_args, restart_args)
    finally:
        if hub_approver is not None:
            hub_approver.close()
            assert hub_approver.errors == []
        hub.close()
        member.close()


def _region_writer(hub_plan: Plan, ca_cert: x509.Certificate, ca_key: Any, server: str) -> str:
    """prod-fsn1's identity as the hub binds it: the user name the hub signed for the region's committed key (the
    example's key was thrown away, so the lab signs that name for a key of its own with the rendered Karmada CA);
    the fake hub plays api.hub.prod.example.com:32443."""
    user = hub_plan.raw_outputs["regionIdentities"]["eu-fsn"]["user"]
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, user)]))
            .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=1)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return kubeconfig(user, server, ca_cert.public_bytes(serialization.Encoding.PEM).decode(),
                      cert.public_bytes(serialization.Encoding.PEM).decode(),
                      key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()).decode())


def rendered_user(lab: Lab) -> str:
    """The user name of the lab's region writer (the one the hub binds prod-fsn1's RBAC to)."""
    import yaml

    return str(yaml.safe_load(lab.writer)["users"][0]["name"]).removesuffix("-admin")


def _pull_join(lab: Lab) -> dict[str, Any]:
    return pull_join.join_once(KubeApi.from_kubeconfig(lab.writer), lab.member_api(), docs.token_id(MEMBER),
                               lab.hub.url, lab.karmada_ca)


# ---------------------------------------------------------------------------------------------- tests


def test_a_pull_member_joins_with_a_bootstrap_token_and_a_csr(lab: Lab) -> None:
    facts = _pull_join(lab)
    token_secret = lab.hub.get("", "secrets", "kube-system", region_rbac.bootstrap_token_secret_name(MEMBER))
    assert token_secret is not None
    token = f"{docs.token_id(MEMBER)}.{base64.b64decode(token_secret['data']['token-secret']).decode()}"
    assert token not in json.dumps(facts) and token.split(".")[1] not in json.dumps(facts)  # never an output
    assert set(facts) == {"tokenId", "joined", "expiresAt"} and facts["joined"] is False
    expires = dt.datetime.fromisoformat(facts["expiresAt"].replace("Z", "+00:00"))
    assert dt.timedelta(minutes=59) < expires - dt.datetime.now(dt.UTC) <= dt.timedelta(hours=1)
    region_user = rendered_user(lab)
    assert [s for u, m, _, s in lab.hub.requests if u == region_user] == [201]  # created by SSA, with its own identity
    bootstrap = lab.member_secret(docs.AGENT_BOOTSTRAP_SECRET)
    assert bootstrap is not None and base64.b64decode(bootstrap["data"]["token"]).decode() == token

    result = lab.run(lab.job_args, JOIN_TOKEN)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "join: joined"
    assert token not in result.stdout + result.stderr
    assert lab.member_secret(docs.AGENT_BOOTSTRAP_SECRET) is None  # consumed
    secret = lab.member_secret(docs.AGENT_KUBECONFIG_SECRET)
    assert secret is not None
    config = json.loads(base64.b64decode(secret["data"][docs.AGENT_KUBECONFIG_SECRET]))
    assert config["current-context"] == f"{MEMBER}@karmada-apiserver"
    (user,) = config["users"]
    assert user["name"] == MEMBER  # certRotation names its CSRs after the kubeconfig's user
    cert = x509.load_pem_x509_certificate(base64.b64decode(user["user"]["client-certificate-data"]))
    key = serialization.load_pem_private_key(base64.b64decode(user["user"]["client-key-data"]), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"
    assert cert.public_key().public_numbers() == key.public_key().public_numbers()
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(lab.karmada_ca.encode()))
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == docs.agent_user(MEMBER)
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == [
        "system:karmada:agents"]
    assert cert.not_valid_after_utc - cert.not_valid_before_utc <= SIGNING_CAP + dt.timedelta(seconds=1)
    (csr,) = lab.hub.items("certificates.k8s.io", "certificatesigningrequests")
    assert csr["spec"]["username"] == f"system:bootstrap:{docs.token_id(MEMBER)}"
    assert csr["spec"]["expirationSeconds"] == docs.AGENT_CERT_SECONDS
    assert csr["status"]["conditions"][0]["reason"] == "KarmadaHubAgentApprover"
    assert csr["status"]["conditions"][0]["message"] == (f"join of {MEMBER} with its own bootstrap token "
                                                          f"{docs.token_id(MEMBER)}")

    # The agent's credential at the hub, over real mutual TLS, with the rendered agent RBAC.
    agent = KubeApi.from_kubeconfig(json.dumps(config))
    clusters = "/apis/cluster.karmada.io/v1alpha1/clusters"
    mine = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": MEMBER},
            "spec": {"syncMode": "Pull", "id": "kube-system-uid"}}
    lab.hub.put("cluster.karmada.io", "clusters", mine)  # the hub made it (member_docs.cluster_object)
    assert agent.request("GET", clusters)[0] == 200  # Validate lists every Cluster
    assert agent.request("GET", f"{clusters}/{MEMBER}")[0] == 200  # CreateOrUpdateClusterObject reads it
    rogue = {**mine, "metadata": {"name": "rogue"}, "spec": {"syncMode": "Push", "secretRef": {
        "namespace": "karmada-cluster", "name": "prod-fsn1-a"}, "apiEndpoint": "https://attacker.example"}}
    assert agent.request("POST", clusters, rogue)[0] == 403  # review C2: no Cluster of its own making
    redirected = {**mine, "spec": {**mine["spec"], "apiEndpoint": "https://attacker.example", "region": "eu-hel"}}
    assert agent.request("PUT", f"{clusters}/{MEMBER}", redirected)[0] == 403  # nor a changed spec
    assert agent.request("PUT", f"{clusters}/{MEMBER}/status", {**mine, "status": {"conditions": []}})[0] == 200
    assert agent.request("DELETE", f"{clusters}/{MEMBER}")[0] == 403
    lab.hub.put("cluster.karmada.io", "clusters", {"metadata": {"name": "prod-fsn1-a"}, "spec": {}})
    assert agent.request("PUT", f"{clusters}/prod-fsn1-a", {"metadata": {"name": "prod-fsn1-a"}})[0] == 403
    assert agent.request("PUT", f"{clusters}/prod-fsn1-a/status", {"metadata": {"name": "prod-fsn1-a"}})[0] == 403
    leases = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
    for ns, name in (("karmada-cluster", MEMBER), ("karmada-system", docs.agent_leader_lease(MEMBER))):
        lease = {"metadata": {"name": name}, "spec": {}}
        assert agent.request("POST", leases.format(ns=ns), lease)[0] == 201
        assert agent.request("PUT", leases.format(ns=ns) + f"/{name}", lease)[0] == 200
    lab.hub.put("coordination.k8s.io", "leases",
                {"metadata": {"name": "karmada-controller-manager", "namespace": "karmada-system"}})
    assert agent.request("PUT", leases.format(ns="karmada-system") + "/karmada-controller-manager",
                         {"metadata": {"name": "karmada-controller-manager"}})[0] == 403  # no other leader lock
    assert agent.request("GET", "/api/v1/namespaces/karmada-cluster/secrets/prod-fsn1-a")[0] == 403
    assert agent.request("GET", "/api/v1/namespaces/kube-system/secrets")[0] == 403

    # certRotation: the agent asks for its next certificate itself (the self-approval path).
    work = lab.tmp / "rotate"
    work.mkdir()
    _, next_csr = script.make_key_and_csr(str(work), MEMBER)
    body = {"metadata": {"name": f"{MEMBER}-next"},
            "spec": {"request": base64.b64encode(next_csr).decode(), "signerName": script.SIGNER,
                     "usages": script.USAGES, "expirationSeconds": docs.AGENT_CERT_SECONDS}}
    status, _ = agent.request("POST", "/apis/certificates.k8s.io/v1/certificatesigningrequests", body)
    assert status == 201
    rotated = lab.decided(f"{MEMBER}-next")
    assert rotated["status"]["certificate"], rotated.get("status")
    assert rotated["spec"]["username"] == docs.agent_user(MEMBER)

    # A second join is a no-op, and PullJoin sees the member is joined.
    again = lab.run(lab.job_args, JOIN_TOKEN)
    assert again.returncode == 0 and again.stdout.strip() == "join: already joined", again.stderr
    assert _pull_join(lab)["joined"] is True


def test_an_expired_token_is_refused(lab: Lab) -> None:
    _pull_join(lab)
    lab.hub.now = lambda: dt.datetime.now(dt.UTC) + dt.timedelta(hours=1, minutes=1)
    result = lab.run([*lab.job_args[:-1], "--timeout=5"], JOIN_TOKEN)
    assert result.returncode == 1
    assert result.stderr.strip() == "join: error: creating the CertificateSigningRequest failed: HTTP 401 Unauthorized"
    assert lab.member_secret(docs.AGENT_KUBECONFIG_SECRET) is None


def test_without_a_bootstrap_secret_the_join_says_what_to_do(lab: Lab) -> None:
    result = lab.run(lab.job_args, JOIN_TOKEN)
    assert result.returncode == 1
    assert "bump the member's joinGeneration in its stack file and up the region stack" in result.stderr


def test_the_join_account_may_touch_only_its_two_secrets(lab: Lab) -> None:
    api = lab.member_api(JOIN_TOKEN)
    assert api.request("GET", "/api/v1/namespaces/karmada-system/secrets/other")[0] == 403
    assert api.request("GET", "/api/v1/namespaces/karmada-system/secrets")[0] == 403
    assert api.request("GET", "/api/v1/namespaces/karmada-system/secrets/karmada-kubeconfig")[0] == 404  # allowed


def test_a_token_buys_no_more_than_an_agent_identity(lab: Lab) -> None:
    """Upstream's approver cannot tie a CSR to a name, so a token holder may get a certificate for any
    `system:karmada:agent:*` CN (karmada-io/karmada#7147). Without the rbac-generator binding, the CN that is
    cluster-admin upstream can do nothing here."""
    generator = User("system:karmada:agent:rbac-generator", ("system:karmada:agents", "system:authenticated"))
    for method, path in (("GET", "/api/v1/namespaces/kube-system/secrets"),
                         ("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"),
                         ("GET", "/apis/cluster.karmada.io/v1alpha1/clusters/prod-fsn1-a")):
        assert lab.hub.serve(generator, method, path, {"metadata": {"name": "x"}}, "application/json")[0] == 403


def test_the_restart_job_rolls_only_agents_on_an_older_certificate(lab: Lab) -> None:
    _pull_join(lab)
    assert lab.run(lab.job_args, JOIN_TOKEN).returncode == 0
    secret = lab.member_secret(docs.AGENT_KUBECONFIG_SECRET)
    assert secret is not None
    user = json.loads(base64.b64decode(secret["data"][docs.AGENT_KUBECONFIG_SECRET]))["users"][0]
    not_before = x509.load_pem_x509_certificate(base64.b64decode(user["user"]["client-certificate-data"])
                                                ).not_valid_before_utc
    issued = not_before + BACKDATE  # when kube-controller-manager signed it
    lab.member.put("apps", "deployments", {"metadata": {"name": docs.AGENT_NAME, "namespace": docs.AGENT_NAMESPACE},
                                           "spec": {"template": {"metadata": {}}}})

    def pod(name: str, started: dt.datetime) -> None:
        lab.member.put("", "pods", {
            "metadata": {"name": name, "namespace": docs.AGENT_NAMESPACE, "labels": {"app": docs.AGENT_NAME}},
            "status": {"containerStatuses": [{"state": {"running": {
                "startedAt": started.strftime("%Y-%m-%dT%H:%M:%SZ")}}}]}})

    pod("agent-new", issued + dt.timedelta(minutes=10))
    fresh = lab.run(lab.restart_args, RESTART_TOKEN)
    assert fresh.returncode == 0 and fresh.stdout.strip() == "restart: every agent runs the current certificate"
    # started a minute after the rotation: kubelet may still have served it the old file. Measured from notBefore
    # (five minutes earlier) this container looked six minutes younger than the certificate and was never rolled.
    pod("agent-just-after", issued + dt.timedelta(minutes=1))
    pod("agent-old", issued - dt.timedelta(days=20))
    rolled = lab.run(lab.restart_args, RESTART_TOKEN)
    assert rolled.returncode == 0, rolled.stderr
    assert rolled.stdout.strip().startswith(
        "restart: restarting agent-just-after, agent-old for the certificate valid from "), rolled.stdout
    deployment = lab.member.get("apps", "deployments", docs.AGENT_NAMESPACE, docs.AGENT_NAME)
    assert deployment is not None
    mark = deployment["spec"]["template"]["metadata"]["annotations"][script.RESTART_ANNOTATION]
    assert mark == not_before.strftime("%Y-%m-%dT%H:%M:%SZ")
    again = lab.run(lab.restart_args, RESTART_TOKEN)
    assert again.stdout.strip() == f"restart: a rollout for the certificate valid from {mark} is under way"


def _kubeconfig_secret(server: str, ca_pem: str, cert_pem: str, key_pem: str) -> dict[str, Any]:
    text = script.kubeconfig(MEMBER, server, ca_pem.encode(), cert_pem.encode(), key_pem.encode())
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": docs.AGENT_KUBECONFIG_SECRET, "namespace": docs.AGENT_NAMESPACE},
            "data": {docs.AGENT_KUBECONFIG_KEY: base64.b64encode(text.encode()).decode()}}


@pytest.mark.parametrize("change", ["hub CA", "hub URL"])
def test_a_member_that_trusts_another_hub_joins_again(lab: Lab, change: str) -> None:
    """After a Karmada CA change or a new hub URL the member's certificate still has weeks left: that must not count
    as joined. PullJoin (its create runs again when hubUrl/hubCaPem change) writes a new token, and the Job (its
    template carries the hub's fingerprint, so it runs again) replaces the kubeconfig."""
    old_ca = make_ca("karmada-before-rotation")
    old_cert = make_leaf(old_ca, docs.agent_user(MEMBER), False)
    server, ca = (lab.hub.url, old_ca.cert_pem) if change == "hub CA" else ("https://old-hub.example.com:32443",
                                                                           lab.karmada_ca)
    if change == "hub URL":  # a certificate of the current CA, for a hub that moved
        signed = lab.run(lab.job_args, JOIN_TOKEN) if _pull_join(lab) else None
        assert signed is not None and signed.returncode == 0, signed.stderr
        config = json.loads(base64.b64decode(lab.member_secret(docs.AGENT_KUBECONFIG_SECRET)["data"][  # type: ignore
            docs.AGENT_KUBECONFIG_KEY]))
        user = config["users"][0]["user"]
        old_cert.cert_pem = base64.b64decode(user["client-certificate-data"]).decode()
        old_cert.key_pem = base64.b64decode(user["client-key-data"]).decode()
    lab.member.put("", "secrets", _kubeconfig_secret(server, ca, old_cert.cert_pem, old_cert.key_pem))

    facts = _pull_join(lab)  # against the current hub: lab.hub.url and the rendered Karmada CA
    assert facts["joined"] is False, "a certificate with life left is not a join to this hub"
    result = lab.run(lab.job_args, JOIN_TOKEN)
    assert result.returncode == 0, result.stderr
    assert "is stale: it points at another hub (server or CA) than the bootstrap Secret" in result.stdout
    assert result.stdout.strip().endswith("join: joined")
    config = json.loads(base64.b64decode(lab.member_secret(docs.AGENT_KUBECONFIG_SECRET)["data"][  # type: ignore
        docs.AGENT_KUBECONFIG_KEY]))
    assert config["clusters"][0]["cluster"]["server"] == lab.hub.url
    assert base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]).decode() == lab.karmada_ca
    cert = x509.load_pem_x509_certificate(base64.b64decode(config["users"][0]["user"]["client-certificate-data"]))
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(lab.karmada_ca.encode()))
    assert _pull_join(lab)["joined"] is True


def test_joined_means_this_hub_this_ca_a_signed_certificate_and_life_left() -> None:
    ca, other = make_ca("karmada"), make_ca("another karmada")
    now = dt.datetime.now(dt.UTC)
    leaf = make_leaf(ca, docs.agent_user(MEMBER), False)
    url = "https://api.hub.example.com:32443"

    def text(server: str = url, ca_pem: str = ca.cert_pem, cert_pem: str = leaf.cert_pem) -> bytes:
        return script.kubeconfig(MEMBER, server, ca_pem.encode(), cert_pem.encode(), leaf.key_pem.encode()).encode()

    assert pull_join.joins_to(text(), url, ca.cert_pem, now)
    assert pull_join.joins_to(text(), url + "/", "\n" + ca.cert_pem.replace("\n", "\r\n"), now)  # same hub, rewrapped
    rotated = yaml.safe_dump(json.loads(text()))  # certRotation writes it back as YAML
    assert pull_join.joins_to(rotated.encode(), url, ca.cert_pem, now)
    assert not pull_join.joins_to(text(), url, other.cert_pem, now), "another CA"
    assert not pull_join.joins_to(text(server="https://old.example.com:32443"), url, ca.cert_pem, now), "another URL"
    forged = make_leaf(other, docs.agent_user(MEMBER), False)
    assert not pull_join.joins_to(text(cert_pem=forged.cert_pem), url, ca.cert_pem, now), "not signed by the CA"
    assert not pull_join.joins_to(text(), url, ca.cert_pem, now + dt.timedelta(hours=22)), "life nearly used up"
    assert not pull_join.joins_to(b"not: [a, kubeconfig", url, ca.cert_pem, now)
    # the script's own decision, with the bootstrap Secret's hub
    secret = _kubeconfig_secret(url, ca.cert_pem, leaf.cert_pem, leaf.key_pem)
    require_tool("openssl", "Debian package openssl")
    assert script.stale_because(secret, now, (url, ca.cert_pem.encode())) is None
    assert script.stale_because(secret, now, None) is None
    assert "another hub" in str(script.stale_because(secret, now, (url, other.cert_pem.encode())))
    assert "another hub" in str(script.stale_because(secret, now, ("https://new.example.com", ca.cert_pem.encode())))
    mixed = _kubeconfig_secret(url, ca.cert_pem, forged.cert_pem, forged.key_pem)
    assert "does not verify" in str(script.stale_because(mixed, now, None))
    assert "life left" in str(script.stale_because(secret, now + dt.timedelta(hours=22), None))


def test_a_new_hub_url_or_ca_replaces_the_pull_join() -> None:
    provider = pull_join._PullJoinProvider()
    olds = {"cluster": MEMBER, "tokenId": "abc123", "generation": 1, "hubUrl": "https://a", "hubCaPem": "CA1",
            "writerKubeconfig": "w", "memberKubeconfig": "m"}
    for key, value in (("hubUrl", "https://b"), ("hubCaPem", "CA2"), ("generation", 2)):
        diff = provider.diff("id", olds, {**olds, key: value})
        assert diff.replaces == [key] and diff.delete_before_replace, key
    diff = provider.diff("id", olds, {**olds, "writerKubeconfig": "w2"})
    assert diff.changes and not diff.replaces


def test_the_join_job_runs_again_for_another_hub(rendered_prod: dict[str, Plan]) -> None:
    job = find(rendered_prod["prod-fsn1"], f"member-{MEMBER}", "Job", docs.JOIN_NAME)
    hub = rendered_prod["prod-hub"]
    outputs = hub.outputs
    trust = job["spec"]["template"]["metadata"]["annotations"][docs.HUB_TRUST_ANNOTATION]
    assert trust == docs.hub_trust(outputs["karmadaApiEndpoint"], outputs["karmadaCaCertPem"])
    assert docs.hub_trust(outputs["karmadaApiEndpoint"], make_ca("new").cert_pem) != trust
    assert docs.hub_trust("https://elsewhere:32443", outputs["karmadaCaCertPem"]) != trust


def test_the_openssl_csr_has_exactly_the_agent_subject(tmp_path: Path) -> None:
    require_tool("openssl", "Debian package openssl")
    key_pem, csr_pem = script.make_key_and_csr(str(tmp_path), MEMBER)
    csr = x509.load_pem_x509_csr(csr_pem)
    assert csr.is_signature_valid
    assert csr.subject.rfc4514_string() == f"CN={docs.agent_user(MEMBER)},O=system:karmada:agents"
    assert not list(csr.extensions)  # no SANs (the approver refuses any), no extensions at all
    assert (tmp_path / "agent.key").stat().st_mode & 0o077 == 0
    key = serialization.load_pem_private_key(key_pem, None)
    assert csr.public_key().public_numbers() == key.public_key().public_numbers()


def test_kubeconfig_parsing_handles_the_rotated_yaml_form() -> None:
    """certRotation rewrites the Secret with clientcmd.Write (YAML): the join and restart still find the cert."""
    rotated = kubeconfig(MEMBER, "https://hub:32443", "CA", "CERT-PEM", "KEY-PEM")
    assert script.client_cert(rotated) == b"CERT-PEM"
    assert script.client_cert(json.dumps({"users": []})) is None


def test_the_script_agrees_with_the_program_on_names() -> None:
    """The CN the join asks for is the one the names check bounds and the agent RBAC binds; the Secret key is
    the one certRotation reads (cert_rotation_controller.go KarmadaKubeconfigName) and PullJoin checks."""
    from components.karmada import pki_spec

    spec = pki_spec.agent_cert_spec("dev-hel1-a")
    assert script.csr_subject("dev-hel1-a") == [("O", spec.organization[0]), ("CN", spec.common_name)]
    assert spec.common_name == docs.agent_user("dev-hel1-a")
    assert script.KUBECONFIG_KEY == docs.AGENT_KUBECONFIG_KEY == "karmada-kubeconfig"


def test_an_all_in_one_join_waits_for_the_hub_side_rbac(rendered_dev: Plan) -> None:
    """In one stack nothing else orders PullJoin (and so the Job) after what its CSR and its agent need: the token's
    CSR rights, the hub's approver (its RBAC and Deployment), the agent's RBAC and the Cluster the hub makes for it
    (the agent may not create one); without them the Job would wait out its 600 s on a first up."""
    by_urn = {r.urn: r for r in rendered_dev.records}
    for member in ("dev-hel1-a",):  # dev's Pull member
        join = next(r for r in rendered_dev.records if r.name == f"member-{member}-join")
        rbac = {r.urn for r in rendered_dev.records if r.custom and "rbac.authorization.k8s.io" in r.type and (
            unwrap(r.inputs).get("metadata", {}).get("name", "") in {
                "system:karmada:agent-bootstrap", "karmada-hub:agent-csr-approver",
                f"system:karmada:{member}:agent", f"system:karmada:{member}:agent-work"})}
        # 1 bootstrap binding; the approver's Role, ClusterRole and their bindings; the agent's 2 Roles and bindings
        assert len(rbac) == 9, sorted(by_urn[u].name for u in rbac)
        others = {r.urn for r in rendered_dev.records if r.custom and (
            (r.type.endswith("apps/v1:Deployment") and unwrap(r.inputs)["metadata"]["name"] == approver_docs.NAME)
            or (r.type.endswith("Cluster") and unwrap(r.inputs)["metadata"]["name"] == member))}
        assert len(others) == 2, sorted(by_urn[u].name for u in others)
        needed = rbac | others
        assert needed <= set(join.dependencies), sorted(by_urn[u].name for u in needed - set(join.dependencies))


def _agent_csr(cn: str) -> dict[str, Any]:
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (x509.CertificateSigningRequestBuilder()
           .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:karmada:agents"),
                                    x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
           .sign(key, hashes.SHA256()))
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"generateName": "attack-"},
            "spec": {"request": base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode(),
                     "signerName": script.SIGNER, "usages": script.USAGES, "expirationSeconds": 86400}}


def test_attack_a_region_identity_mints_a_token_for_another_member(lab: Lab) -> None:
    """Review C1, step 2: the region's identity may write its own Pull member's bootstrap token; before, that token
    bought a certificate for *any* agent CN (upstream agentcsrapproving checks only that the requester may create
    `clusteragent`, which the token group may), i.e. every Pull member's agent. Now the token for prod-fsn1-b gets
    exactly prod-fsn1-b's agent: the hub's approver denies prod-hel1-b's CN with the reason, nothing is signed;
    writing prod-hel1-b's own token is refused by RBAC; and an agent cannot renew into another member either."""
    _pull_join(lab)
    writer = KubeApi.from_kubeconfig(lab.writer)
    expires = (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    other = docs.bootstrap_token_secret(docs.token_id("prod-hel1-b"), "0123456789abcdef", expires)
    assert writer.request("POST", "/api/v1/namespaces/kube-system/secrets", other)[0] == 403

    stored = lab.hub.get("", "secrets", "kube-system", region_rbac.bootstrap_token_secret_name(MEMBER))
    assert stored is not None
    token = f"{docs.token_id(MEMBER)}.{base64.b64decode(stored['data']['token-secret']).decode()}"
    bootstrap = KubeApi(server=lab.hub.url, ca_pem=lab.karmada_ca, token=token)
    csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
    for victim in ("prod-hel1-b", "prod-ash-a", "not-a-member"):
        status, created = bootstrap.request("POST", csrs, _agent_csr(docs.agent_user(victim)))
        assert status == 201, created
        decided = lab.decided(created["metadata"]["name"])
        assert not (decided.get("status") or {}).get("certificate"), f"{victim}: signed"
        denied = [c for c in decided["status"]["conditions"] if c["type"] == "Denied"]
        assert denied, decided.get("status")
    assert denied[0]["message"] == "not-a-member is no Pull member of this hub"
    messages = {c["message"] for csr in lab.hub.items("certificates.k8s.io", "certificatesigningrequests")
                for c in (csr.get("status") or {}).get("conditions") or [] if c["type"] == "Denied"}
    assert f"bootstrap token {docs.token_id(MEMBER)} is member {MEMBER}'s token, not prod-hel1-b's" in messages

    # The joined agent asks for another member's certificate as a "renewal": denied too.
    assert lab.run(lab.job_args, JOIN_TOKEN).returncode == 0
    secret = lab.member_secret(docs.AGENT_KUBECONFIG_SECRET)
    assert secret is not None
    agent = KubeApi.from_kubeconfig(base64.b64decode(secret["data"][docs.AGENT_KUBECONFIG_SECRET]).decode())
    status, created = agent.request("POST", csrs, _agent_csr(docs.agent_user("prod-hel1-b")))
    assert status == 201
    decided = lab.decided(created["metadata"]["name"])
    assert not decided["status"].get("certificate")
    assert decided["status"]["conditions"][-1]["message"] == (
        f"requested by {docs.agent_user(MEMBER)}, neither prod-hel1-b's bootstrap token nor its agent")

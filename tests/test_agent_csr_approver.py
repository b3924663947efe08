"""The hub's agent CSR approver (agents/agent_csr_approver.py), each decision both ways, and what its identity may do.

- its DER reader sees exactly the subject and the attribute count of CSRs made by cryptography and by openssl
  (the join's tool), multi-valued RDNs and extension requests included;
- a join is approved only for the member whose token asked; a renewal only by the agent itself; anything else
  agent-shaped is denied with its reason; other CSRs are left alone;
- members' bootstrap tokens go an hour after their creation, younger ones and other Secrets stay;
- the rendered RBAC lets it approve for the client signer only, read and delete only members' tokens.
"""

from __future__ import annotations

import base64
import datetime as dt
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from agents import agent_csr_approver as approver
from components.fleet import csr_approver_docs as docs
from components.fleet import member_docs
from tests.support.fake_apiserver import FakeApiServer, User
from tests.support.rbac import Rbac, Request
from tests.support.testpki import make_ca, make_leaf
from tests.support.tools import require_tool

TOKENS = {member_docs.token_id(m): m for m in ("prod-fsn1-b", "prod-hel1-b")}
FSN, HEL = "prod-fsn1-b", "prod-hel1-b"
FSN_TOKEN = member_docs.token_id(FSN)
USAGES = ["digital signature", "key encipherment", "client auth"]


def _csr_pem(attrs: list[list[tuple[Any, str]]], extensions: list[Any] = ()) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.RelativeDistinguishedName([x509.NameAttribute(o, v) for o, v in rdn]) for rdn in attrs])
    builder = x509.CertificateSigningRequestBuilder().subject_name(name)
    for ext in extensions:
        builder = builder.add_extension(ext, critical=False)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def _agent(cn: str) -> list[list[tuple[Any, str]]]:
    return [[(NameOID.ORGANIZATION_NAME, "system:karmada:agents")], [(NameOID.COMMON_NAME, cn)]]


def _obj(pem: bytes, user: str, groups: list[str], usages: list[str] = USAGES,
         signer: str = "kubernetes.io/kube-apiserver-client", status: dict | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "c"}, "spec": {"request": base64.b64encode(pem).decode(), "username": user,
                                                "groups": groups, "usages": usages, "signerName": signer},
            "status": status or {}}


BOOT = f"system:bootstrap:{FSN_TOKEN}"
BOOT_GROUPS = ["system:bootstrappers", member_docs.BOOTSTRAP_GROUP, "system:authenticated"]
AGENT_GROUPS = ["system:karmada:agents", "system:authenticated"]


# ------------------------------------------------------------------------------------------- reading


def test_the_reader_sees_subject_and_attributes() -> None:
    plain = approver.parse_csr(_csr_pem(_agent("system:karmada:agent:x")))
    assert plain.subject == (("2.5.4.10", "system:karmada:agents"), ("2.5.4.3", "system:karmada:agent:x"))
    assert plain.attributes == 0 and not plain.multi_valued
    san = approver.parse_csr(_csr_pem(_agent("a"), [x509.SubjectAlternativeName([x509.DNSName("x")])]))
    assert san.attributes == 1
    multi = approver.parse_csr(_csr_pem([[(NameOID.ORGANIZATION_NAME, "system:karmada:agents"),
                                          (NameOID.COMMON_NAME, "system:karmada:agent:x")]]))
    assert multi.multi_valued
    der = x509.load_pem_x509_csr(_csr_pem(_agent("b"))).public_bytes(serialization.Encoding.DER)
    assert approver.parse_csr(der).subject[1] == ("2.5.4.3", "b")
    for bad in (b"", b"\x30\x03\x02\x01", b"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END X-----\n",
                der[:-3]):
        with pytest.raises(ValueError):
            approver.parse_csr(bad)


def test_the_reader_agrees_with_openssl(tmp_path: Path) -> None:
    """The join makes its CSR with openssl (agents/pull_join.py): the reader sees its subject, and no attributes."""
    from agents import pull_join

    require_tool("openssl", "Debian package openssl (the join makes its key and CSR with it)")
    _, pem = pull_join.make_key_and_csr(str(tmp_path), FSN)
    parsed = approver.parse_csr(pem)
    text = subprocess.run(["openssl", "req", "-noout", "-subject", "-nameopt", "RFC2253"], input=pem,
                          capture_output=True, check=True).stdout.decode()
    assert text.strip() == f"subject=CN=system:karmada:agent:{FSN},O=system:karmada:agents"
    assert sorted(parsed.subject) == [("2.5.4.10", "system:karmada:agents"), ("2.5.4.3", f"system:karmada:agent:{FSN}")]
    assert parsed.attributes == 0


# ----------------------------------------------------------------------------------------- decisions


@pytest.mark.parametrize(("obj", "action", "reason"), [
    (_obj(_csr_pem(_agent(f"system:karmada:agent:{FSN}")), BOOT, BOOT_GROUPS), "approve",
     f"join of {FSN} with its own bootstrap token {FSN_TOKEN}"),
    (_obj(_csr_pem(_agent(f"system:karmada:agent:{FSN}")), BOOT, BOOT_GROUPS, usages=["digital signature",
                                                                                       "client auth"]),
     "approve", f"join of {FSN} with its own bootstrap token {FSN_TOKEN}"),
    (_obj(_csr_pem(_agent(f"system:karmada:agent:{HEL}")), BOOT, BOOT_GROUPS), "deny",
     f"bootstrap token {FSN_TOKEN} is member {FSN}'s token, not {HEL}'s"),
    (_obj(_csr_pem(_agent(f"system:karmada:agent:{FSN}")), "system:bootstrap:abcdef", BOOT_GROUPS), "deny",
     f"bootstrap token abcdef is no Pull member's token, not {FSN}'s"),
    (_obj(_csr_pem(_agent(f"system:karmada:agent:{FSN}")), BOOT, ["system:bootstrappers"]), "deny",
     f"bootstrap token {FSN_TOKEN} is not in group {member_docs.BOOTSTRAP_GROUP}"),
    (_obj(_csr_pem(_agent(f"system:karmada:agent:{FSN}")), f"system:karmada:agent:{FSN}", AGENT_GROUPS),
     "approve", f"renewal by agent {FSN} itself"),
    (_obj(_csr_pem(_agent(f"system:karmada:agent:{HEL}")), f"system:karmada:agent:{FSN}", AGENT_GROUPS),
     "deny", f"requested by system:karmada:agent:{FSN}, neither {HEL}'s bootstrap token nor its agent"),
    (_obj(_csr_pem(_agent(f"system:karmada:agent:{FSN}")), f"system:karmada:agent:{FSN}", ["system:authenticated"]),
     "deny", f"requested by system:karmada:agent:{FSN}, neither {FSN}'s bootstrap token nor its agent"),
    (_obj(_csr_pem(_agent("system:karmada:agent:rbac-generator")), BOOT, BOOT_GROUPS), "deny",
     "rbac-generator is no Pull member of this hub"),
    (_obj(_csr_pem([[(NameOID.ORGANIZATION_NAME, "system:masters")], [(NameOID.COMMON_NAME,
                                                                        f"system:karmada:agent:{FSN}")]]),
          BOOT, BOOT_GROUPS), "deny", "the subject must be exactly O=system:karmada:agents"),
    (_obj(_csr_pem([*_agent(f"system:karmada:agent:{FSN}"), [(NameOID.ORGANIZATION_NAME, "system:masters")]]),
          BOOT, BOOT_GROUPS), "deny", "the subject must be exactly"),
    (_obj(_csr_pem(_agent(f"system:karmada:agent:{FSN}"), [x509.SubjectAlternativeName([x509.DNSName("x")])]),
          BOOT, BOOT_GROUPS), "deny", "an agent's request carries no attributes"),
    (_obj(_csr_pem(_agent(f"system:karmada:agent:{FSN}")), BOOT, BOOT_GROUPS, usages=["client auth"]), "deny",
     "usages must be"),
    (_obj(_csr_pem(_agent(f"system:karmada:agent:{FSN}")), BOOT, BOOT_GROUPS, signer="example.com/other"), "skip",
     "not a pending client certificate request"),
    (_obj(_csr_pem(_agent(f"system:karmada:agent:{FSN}")), BOOT, BOOT_GROUPS,
          status={"conditions": [{"type": "Denied"}]}), "skip", "not a pending"),
    (_obj(_csr_pem([[(NameOID.COMMON_NAME, "alice")]]), "alice", []), "skip", "not an agent's request"),
])
def test_decide(obj: dict[str, Any], action: str, reason: str) -> None:
    decision = approver.decide(obj, TOKENS)
    assert decision.action == action and decision.reason.startswith(reason), decision


@pytest.mark.parametrize("pairs", [["x"], ["m:short"], ["m:abcdef", "n:abcdef"], [":abcdef"]])
def test_a_malformed_member_argument_is_refused(pairs: list[str]) -> None:
    with pytest.raises(ValueError, match="want <member>:<6-character token id>"):
        approver.token_map(pairs)


def test_the_rendered_arguments_bind_every_pull_member() -> None:
    args = docs.args(["b-member", "a-member"])
    pairs = [a.split("=", 1)[1] for a in args if a.startswith("--member=")]
    assert approver.token_map(pairs) == {member_docs.token_id("a-member"): "a-member",
                                         member_docs.token_id("b-member"): "b-member"}


# -------------------------------------------------------------------------------- against an API server


@pytest.fixture
def hub(tmp_path: Path) -> Any:
    ca = make_ca("hub-ca")
    leaf = make_leaf(ca, "127.0.0.1", True)
    (tmp_path / "srv.crt").write_text(leaf.cert_pem)
    (tmp_path / "srv.key").write_text(leaf.key_pem)
    (tmp_path / "ca.crt").write_text(ca.cert_pem)
    rbac = Rbac(docs.karmada_rbac([FSN, HEL]))
    server = FakeApiServer(tmp_path / "srv.crt", tmp_path / "srv.key", rbac=rbac,
                           tokens={"approver": User(docs.USER)})
    try:
        yield server, tmp_path / "ca.crt"
    finally:
        server.close()


def _client(server: FakeApiServer, ca: Path, tmp: Path) -> approver.Client:
    (tmp / "token").write_text("approver")
    return approver.Client(server.url, str(ca), token_file=str(tmp / "token"))


def test_members_tokens_go_an_hour_after_creation(hub: Any, tmp_path: Path) -> None:
    server, ca = hub
    now = dt.datetime(2026, 5, 1, 12, tzinfo=dt.UTC)
    expires = "2099-01-01T00:00:00Z"  # what the writer claims does not matter

    def put(tid: str, created: dt.datetime, name: str | None = None) -> None:
        doc = member_docs.bootstrap_token_secret(tid, "0123456789abcdef", expires)
        doc["metadata"]["creationTimestamp"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
        if name:
            doc["metadata"]["name"] = name
        server.put("", "secrets", doc)

    fsn, hel = member_docs.token_id(FSN), member_docs.token_id(HEL)
    put(fsn, now - dt.timedelta(minutes=61))
    put(hel, now - dt.timedelta(minutes=59))
    put("zzzzzz", now - dt.timedelta(days=3))  # no member's: the hub admin's, not the approver's to touch
    deleted = approver.clean_tokens(_client(server, ca, tmp_path), TOKENS, dt.timedelta(hours=1), now)
    assert deleted == [fsn]
    left = {s["metadata"]["name"] for s in server.items("", "secrets", "kube-system")}
    assert left == {f"bootstrap-token-{hel}", "bootstrap-token-zzzzzz"}
    assert approver.clean_tokens(_client(server, ca, tmp_path), TOKENS, dt.timedelta(hours=1), now) == []


def test_one_pass_approves_and_denies_through_the_api(hub: Any, tmp_path: Path) -> None:
    server, ca = hub
    ok = _obj(_csr_pem(_agent(f"system:karmada:agent:{FSN}")), BOOT, BOOT_GROUPS)
    bad = _obj(_csr_pem(_agent(f"system:karmada:agent:{HEL}")), BOOT, BOOT_GROUPS)
    other = _obj(_csr_pem([[(NameOID.COMMON_NAME, "alice")]]), "alice", [])
    for name, obj in (("ok", ok), ("bad", bad), ("other", other)):
        obj["metadata"]["name"] = name
        server.put("certificates.k8s.io", "certificatesigningrequests", obj)
    acted = approver.reconcile(_client(server, ca, tmp_path), TOKENS)
    assert sorted((n, d.action) for n, d in acted) == [("bad", "deny"), ("ok", "approve")]

    def types(name: str) -> list[str]:
        csr = server.get("certificates.k8s.io", "certificatesigningrequests", "", name) or {}
        return [c["type"] for c in (csr.get("status") or {}).get("conditions") or []]

    assert (types("ok"), types("bad"), types("other")) == (["Approved"], ["Denied"], [])
    assert approver.reconcile(_client(server, ca, tmp_path), TOKENS) == []  # decided once


def test_what_the_approver_identity_may_do() -> None:
    rbac = Rbac(docs.karmada_rbac([FSN]))
    u, cert = docs.USER, "certificates.k8s.io"
    token = f"bootstrap-token-{member_docs.token_id(FSN)}"
    allowed = [Request(u, "list", cert, "certificatesigningrequests"),
               Request(u, "update", cert, "certificatesigningrequests/approval", name="x"),
               Request(u, "approve", cert, "signers", name="kubernetes.io/kube-apiserver-client"),
               Request(u, "delete", "", "secrets", "kube-system", token)]
    denied = [Request(u, "approve", cert, "signers", name="kubernetes.io/kubelet-serving"),
              Request(u, "approve", cert, "signers", name="example.com/anything"),
              Request(u, "create", cert, "certificatesigningrequests"),
              Request(u, "update", cert, "certificatesigningrequests/status", name="x"),
              Request(u, "get", "", "secrets", "kube-system", "bootstrap-token-abcdef"),
              Request(u, "list", "", "secrets", "kube-system"),
              Request(u, "get", "", "secrets", "karmada-cluster", FSN)]
    assert [r for r in allowed if not rbac.allowed(r)] == []
    assert [r for r in denied if rbac.allowed(r)] == []

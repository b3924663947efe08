"""Region stacks hold no CA key and no admin credential; the hub decides their identity; their identity may write
exactly what they write.

- The hub exports no secret at all. A region's whole state holds exactly one private key, its own identity key
  (from its encrypted config), inside the kubeconfigs its providers use.
- The hub accepts a region CSR only with subject exactly `CN=karmada-hub:region:<region>`, nothing requested, a
  valid self-signature, an allowed key, and a key the offline planner cannot derive (the review's attack: a
  committed CSR asking for `O=system:masters` is refused with one line, end to end through `hubctl plan`).
- The certificates the hub signs carry the user name the hub chooses, `karmada-hub:region:<region>:<key id>`,
  no groups, 30 days from a fixed window; RBAC binds that user, so a new key revokes the old one's certificates.
- A certificate for another key stops the region with one line.
- RBAC both ways, evaluated with RBAC semantics over the hub's rendered Roles and bindings.
"""

from __future__ import annotations

import copy
import datetime as dt
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pulumi
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID

from components.config import ConfigError, FleetConfig
from components.fleet import member_docs
from components.hetzner.hub_cluster import K3S_CA_NAMES
from components.kube import region_csr
from components.operations import preflight
from components.operations.region_intents import region_intents
from components.roles import HUB_OUTPUTS
from components.trust import region_rbac
from hubctl.commands import load_config
from hubctl.mocks import ec_key, unwrap
from hubctl.plan import Plan, run_program
from tests.support.rbac import NODE_BOOTSTRAPPER, Rbac, Request
from tests.support.rendered import objects
from tests.support.tools import REPO, copy_program, edited_stack, load_stack, program_env, stack_values

REGIONS = {"prod-fsn1": "eu-fsn", "prod-hel1": "eu-hel", "prod-ash": "us-ash"}
PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")
HUB = "organization/karmada-hub/prod-hub"


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


_SHA256 = hashes.SHA256()


def _csr(key: Any, attrs: list[x509.NameAttribute], extensions: list[x509.ExtensionType] = (),
         algorithm: Any = _SHA256) -> str:
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attrs))
    for ext in extensions:
        builder = builder.add_extension(ext, critical=False)
    return builder.sign(key, algorithm).public_bytes(serialization.Encoding.PEM).decode()


def _cn(value: str) -> x509.NameAttribute:
    return x509.NameAttribute(NameOID.COMMON_NAME, value)


def _user(stack: str) -> str:
    return region_csr.check_region_csr(load_stack(stack).identity_csr, REGIONS[stack]).user


# ------------------------------------------------------------------------------------------- no keys


def test_the_hub_exports_nothing_secret(rendered_prod_hub: Plan) -> None:
    assert not [name for name, secret in HUB_OUTPUTS.items() if secret]
    assert not {"karmadaCaKeyPem", "karmadaKubeconfig", "hubKubeconfig"} & set(rendered_prod_hub.outputs)
    for name, value in rendered_prod_hub.raw_outputs.items():
        text = " ".join(_strings(value))
        assert not PRIVATE_KEY.search(text) and "client-key-data" not in text, name


def test_the_hub_keeps_ca_keys_out_of_the_signers_outputs(rendered_prod_hub: Plan) -> None:
    """The CA key is a (secret) input of each RegionCertificate, never one of its outputs (its state's outputs
    are what the hub's own readers, and `pulumi stack output`, see)."""
    signers = [r for r in rendered_prod_hub.records if unwrap(r.inputs).get("kind") == "RegionCertificate"]
    assert len(signers) == 6
    for r in signers:
        assert "caKeyPem" in unwrap(r.inputs) and "caKeyPem" not in unwrap(r.outputs), r.name
        assert not PRIVATE_KEY.search(" ".join(_strings(unwrap(r.outputs)))), r.name


_CLIENT_KEY = re.compile(r"client-key-data[\"']?\s*:\s*[\"']?([A-Za-z0-9+/=]+)")


@pytest.mark.parametrize("stack", REGIONS)
def test_a_region_state_holds_no_key_but_its_own(rendered_prod: dict[str, Plan], stack: str) -> None:
    """Every value the region registers, inputs and outputs (its state), StackReference included: no PEM private
    key, and every kubeconfig's client key is the stack's own `identityKey` (offline: its placeholder)."""
    import base64

    plan = rendered_prod[stack]
    own = stack_values(stack)[0]["identityKey"]
    assert not [r.name for r in plan.records if r.type == "tls:index/privateKey:PrivateKey"]
    keys = []
    for record in plan.records:
        for part in (unwrap(record.inputs), unwrap(record.outputs)):
            for text in _strings(part):
                assert not PRIVATE_KEY.search(text), record.name
                keys += [base64.b64decode(b).decode() for b in _CLIENT_KEY.findall(text)]
    assert keys and set(keys) == {own}


# ---------------------------------------------------------------------------------------- the CSR check


@pytest.mark.parametrize("stack", REGIONS)
def test_the_example_csrs_are_accepted_and_no_planner_key(stack: str) -> None:
    """The committed CSRs are of keys made with `hubctl region-key` and thrown away: accepted by the hub, and
    none is a key the offline planner derives for any region (the review's experiment 1)."""
    config = load_stack(stack)
    accepted = region_csr.check_region_csr(config.identity_csr, REGIONS[stack], REGIONS.values())
    fmt = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    planned = {k.public_bytes(*fmt) for k in region_csr.planner_identity_keys(REGIONS.values())}
    assert accepted.public_key.public_bytes(*fmt) not in planned


def test_the_planner_key_is_the_mocks_key() -> None:
    """One derivation: what the hub refuses is exactly what the offline planner computes."""
    seed = "tls:index/privateKey:PrivateKey::region-identity-eu-fsn"
    assert ec_key(seed).private_numbers() == region_csr.planner_key(seed).private_numbers()
    assert region_csr.planner_identity_keys(["eu-fsn"])[0].public_numbers() == \
        ec_key(seed).public_key().public_numbers()


_GOOD = ec.generate_private_key(ec.SECP256R1())


@pytest.mark.parametrize(("pem", "why"), [
    (lambda: _csr(_GOOD, [_cn("karmada-hub:region:eu-fsn"), x509.NameAttribute(NameOID.ORGANIZATION_NAME,
                                                                               "system:masters")]),
     "its subject must be exactly CN=karmada-hub:region:eu-fsn (no O, OU or other attribute), got "
     "O=system:masters,CN=karmada-hub:region:eu-fsn"),
    (lambda: _csr(_GOOD, [_cn("karmada-hub:region:eu-hel")]), "its subject must be exactly"),
    (lambda: _csr(_GOOD, [_cn("karmada-hub:region:eu-fsn"), x509.NameAttribute(
        NameOID.ORGANIZATIONAL_UNIT_NAME, "x")]), "its subject must be exactly"),
    (lambda: _csr(_GOOD, [_cn("karmada-hub:region:eu-fsn:aaaaaaaaaaaa")]), "its subject must be exactly"),
    (lambda: _csr(_GOOD, [_cn("karmada-hub:region:eu-fsn")], [x509.SubjectAlternativeName(
        [x509.DNSName("x")])]), "it must carry no attributes or extensions"),
    (lambda: _csr(_GOOD, [_cn("karmada-hub:region:eu-fsn")], [x509.BasicConstraints(ca=True, path_length=None)]),
     "it must carry no attributes or extensions"),
    (lambda: _csr(ec_key("tls:index/privateKey:PrivateKey::region-identity-eu-fsn"),
                  [_cn("karmada-hub:region:eu-fsn")]), "its key is one the offline planner derives"),
    (lambda: _csr(ec_key("tls:index/privateKey:PrivateKey::region-identity-us-ash"),
                  [_cn("karmada-hub:region:eu-fsn")]), "its key is one the offline planner derives"),
    (lambda: _csr(rsa.generate_private_key(65537, 1024), [_cn("karmada-hub:region:eu-fsn")]),
     "its key is RSA 1024 bits"),
    (lambda: _csr(ec.generate_private_key(ec.SECP521R1()), [_cn("karmada-hub:region:eu-fsn")]),
     "its key is ECDSA secp521r1"),
    (lambda: _csr(ed25519.Ed25519PrivateKey.generate(), [_cn("karmada-hub:region:eu-fsn")], algorithm=None),
     "its key type Ed25519PublicKey is not ECDSA P-256/P-384 or RSA"),
    (lambda: _csr(_GOOD, [_cn("karmada-hub:region:eu-fsn")], algorithm=hashes.SHA224()),
     "its signature must use SHA-256"),
    (lambda: _tampered(), "its self-signature does not verify"),
    (lambda: "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n",
     "is not a readable PEM certificate request"),
    (lambda: _csr(_GOOD, [_cn("karmada-hub:region:eu-fsn")]) * 2, "must be exactly one PEM certificate request"),
])
def test_a_csr_the_hub_must_not_sign_is_refused(pem: Any, why: str) -> None:
    with pytest.raises(ValueError) as info:
        region_csr.check_region_csr(pem(), "eu-fsn", ["eu-fsn", "eu-hel", "us-ash"])
    assert str(info.value).startswith(why), str(info.value)


def _tampered() -> str:
    """A CSR whose signed content changed after signing: its subject's region renamed in the DER (the key check
    passes, the signature check runs before the subject check)."""
    import base64

    pem = _csr(_GOOD, [_cn("karmada-hub:region:eu-fsm")])
    der = x509.load_pem_x509_csr(pem.encode()).public_bytes(serialization.Encoding.DER)
    assert der.count(b"eu-fsm") == 1
    body = base64.b64encode(der.replace(b"eu-fsm", b"eu-fsn")).decode()
    return "-----BEGIN CERTIFICATE REQUEST-----\n" + "\n".join(
        body[i:i + 64] for i in range(0, len(body), 64)) + "\n-----END CERTIFICATE REQUEST-----\n"


def test_an_accepted_csr_gives_the_key_bound_user() -> None:
    pem = _csr(_GOOD, [_cn("karmada-hub:region:eu-fsn")])
    accepted = region_csr.check_region_csr(pem, "eu-fsn")
    der = _GOOD.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    import hashlib

    assert accepted.user == f"karmada-hub:region:eu-fsn:{hashlib.sha256(der).hexdigest()[:12]}"
    rsa_pem = _csr(rsa.generate_private_key(65537, 2048), [_cn("karmada-hub:region:eu-fsn")])
    assert region_csr.check_region_csr(rsa_pem, "eu-fsn").user.startswith("karmada-hub:region:eu-fsn:")


def _replace_csr(path: Path, pem: str) -> None:
    lines = path.read_text().split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("  karmada-hub:identityCsr:"))
    end = next(i for i, line in enumerate(lines) if "-----END CERTIFICATE REQUEST-----" in line)
    lines[start:end + 1] = ["  karmada-hub:identityCsr: |", *("    " + x for x in pem.strip().splitlines())]
    path.write_text("\n".join(lines))


def test_attack_a_committed_csr_asking_for_system_masters_is_refused(tmp_path: Path) -> None:
    """The review's experiment 2, end to end: a region file carrying a CSR for `O=system:masters` (a key the
    attacker holds). Before, `hubctl plan prod-hub --policy` signed it with both CAs and the policy pack passed;
    now the plan stops with one line naming the file and key, and writes nothing."""
    program = copy_program(tmp_path / "repo")
    attacker = ec.generate_private_key(ec.SECP256R1())
    _replace_csr(program / "stacks" / "Pulumi.prod-fsn1.yaml", _csr(attacker, [
        _cn("karmada-hub:region:eu-fsn"), x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters")]))
    result = subprocess.run([sys.executable, "-m", "hubctl", "plan", "prod-hub", "--policy", "--quiet", "--out",
                             str(tmp_path / "out")], cwd=program, capture_output=True, text=True, timeout=600,
                            env=program_env(), check=False)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip() == (
        "error: stacks/Pulumi.prod-fsn1.yaml: karmada-hub:identityCsr: its subject must be exactly "
        "CN=karmada-hub:region:eu-fsn (no O, OU or other attribute), got O=system:masters,CN=karmada-hub:region:eu-fsn;"
        " make a key and CSR with `hubctl region-key prod-fsn1` and commit the CSR it prints")
    assert not (tmp_path / "out" / "prod-hub").exists()


def test_the_hub_reads_each_csr_through_the_check(tmp_path: Path) -> None:
    """region_intents (what the hub runs first) refuses the planner's own key for a region, with one line."""
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    for name in ("prod-hub", *REGIONS):
        (stacks / f"Pulumi.{name}.yaml").write_bytes((REPO / "stacks" / f"Pulumi.{name}.yaml").read_bytes())
    planner = ec_key("tls:index/privateKey:PrivateKey::region-identity-eu-hel")
    _replace_csr(stacks / "Pulumi.prod-hel1.yaml", _csr(planner, [_cn("karmada-hub:region:eu-hel")]))
    with pytest.raises(ConfigError) as info:
        region_intents(load_stack("prod-hub"), "prod-hub", stacks)
    assert str(info.value).startswith("stacks/Pulumi.prod-hel1.yaml: karmada-hub:identityCsr: its key is one the "
                                      "offline planner derives") and "\n" not in str(info.value)


# ---------------------------------------------------------------------------------------- the certs


def _cert(pem: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem.encode())


def _ca(plan: Plan, name: str) -> x509.Certificate:
    rec = next(r for r in plan.records if r.name == name)
    return _cert(unwrap(rec.outputs)["certPem"])


@pytest.mark.parametrize(("stack", "region"), REGIONS.items())
def test_the_hub_signs_the_committed_key_under_its_own_subject(rendered_prod: dict[str, Plan], stack: str,
                                                                region: str) -> None:
    hub = rendered_prod["prod-hub"]
    csr = x509.load_pem_x509_csr(load_stack(stack).identity_csr.encode())
    karmada_ca, host_ca = _ca(hub, "karmada-pki-ca"), _ca(hub, f"hub-{K3S_CA_NAMES['client-ca']}")
    issued = hub.raw_outputs["regionIdentities"][region]
    assert issued["user"] == _user(stack)
    for which, ca in (("karmada", karmada_ca), ("host", host_ca)):
        cert = _cert(issued[f"{which}CertPem"])
        cert.verify_directly_issued_by(ca)
        assert cert.public_key().public_numbers() == csr.public_key().public_numbers()
        assert cert.subject.rfc4514_string() == f"CN={_user(stack)}"  # no O: no groups
        assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
            x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]
        assert cert.not_valid_after_utc - cert.not_valid_before_utc <= dt.timedelta(days=30, minutes=5)
        assert region_csr.certificate_problems(issued[f"{which}CertPem"], region, csr.public_bytes(
            serialization.Encoding.PEM).decode()) == []


def test_region_certificates_follow_the_window() -> None:
    """Same window, same certificate bytes (every `up` within it is a no-op); the next window, a new certificate
    whose life starts there; 30 days each, so a certificate in use has at least 20 days left."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([_cn("test-ca")])
    now = dt.datetime(2026, 3, 14, 15, tzinfo=dt.UTC)
    ca = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(ca_key.public_key())
          .serial_number(1).not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=900))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))
    ca_pem = ca.public_bytes(serialization.Encoding.PEM).decode()
    key_pem = ca_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption()).decode()
    pem = _csr(_GOOD, [_cn("karmada-hub:region:eu-fsn")])
    w1 = region_csr.cert_window(now)
    assert w1 <= now < w1 + dt.timedelta(days=10) and region_csr.cert_window(now + dt.timedelta(days=3)) in (
        w1, w1 + dt.timedelta(days=10))
    same = region_csr.sign_region_certificate(pem, "eu-fsn", ca_pem, key_pem, w1)
    assert same == region_csr.sign_region_certificate(pem, "eu-fsn", ca_pem, key_pem, region_csr.cert_window(now))
    later = region_csr.sign_region_certificate(pem, "eu-fsn", ca_pem, key_pem, w1 + dt.timedelta(days=10))
    assert later != same
    a, b = _cert(same), _cert(later)
    assert b.not_valid_before_utc - a.not_valid_before_utc == dt.timedelta(days=10)
    assert a.not_valid_after_utc - now >= dt.timedelta(days=20)
    assert region_csr.certificate_problems(same, "eu-fsn", pem) == []
    assert region_csr.certificate_problems(same, "eu-hel", pem)  # another region's name: a finding


def test_a_new_key_revokes_the_old_certificates(tmp_path: Path) -> None:
    """Committing a CSR for a new key moves every RoleBinding of the region to the new key's user: the old key's
    certificates (still within their 30 days) then authenticate as a user bound to nothing."""
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    for name in ("prod-hub", *REGIONS):
        (stacks / f"Pulumi.{name}.yaml").write_bytes((REPO / "stacks" / f"Pulumi.{name}.yaml").read_bytes())
    hub = load_stack("prod-hub")
    before = region_intents(hub, "prod-hub", stacks)[0]
    new_key = ec.generate_private_key(ec.SECP256R1())
    _replace_csr(stacks / "Pulumi.prod-fsn1.yaml", _csr(new_key, [_cn("karmada-hub:region:eu-fsn")]))
    after = region_intents(hub, "prod-hub", stacks)[0]
    old_user, new_user = region_rbac.region_user(before), region_rbac.region_user(after)
    assert old_user != new_user and old_user and new_user
    old_rbac, new_rbac = Rbac(region_rbac.karmada_rbac(before)), Rbac(region_rbac.karmada_rbac(after))
    token = region_rbac.bootstrap_token_secret_name("prod-fsn1-b")
    write = ("create", "", "secrets", "kube-system", token)
    assert old_rbac.allowed(Request(old_user, *write)) and new_rbac.allowed(Request(new_user, *write))
    assert not new_rbac.allowed(Request(old_user, *write))
    names = {o["metadata"]["name"] for o in region_rbac.karmada_rbac(after)}
    assert names == {"karmada-hub:region:eu-fsn"}  # bindings keep their names: a new key rebinds in place


def test_a_certificate_for_another_key_stops_the_region(rendered_prod_hub: Plan) -> None:
    outputs, secret = rendered_prod_hub.as_stack_reference()
    swapped = copy.deepcopy(outputs)
    swapped["regionIdentities"]["eu-fsn"] = swapped["regionIdentities"]["eu-hel"]
    stack, _ = load_config(REPO, "prod-fsn1")
    with pytest.raises(pulumi.RunError) as info:
        run_program(REPO, stack, {HUB: (swapped, secret)})
    assert str(info.value).startswith("stacks/Pulumi.prod-fsn1.yaml: karmada-hub:identityCsr: "
                                      f"{HUB} signed a ") and "\n" not in str(info.value)


def test_a_region_whose_csr_the_hub_has_not_signed_stops(rendered_prod_hub: Plan) -> None:
    outputs, secret = rendered_prod_hub.as_stack_reference()
    missing = {**outputs, "regionIdentities": {}}
    stack, _ = load_config(REPO, "prod-fsn1")
    with pytest.raises(pulumi.RunError, match=r"has not signed this region's identity yet; up the hub stack first"):
        run_program(REPO, stack, {HUB: (missing, secret)})


def _region_config(**secrets: str) -> tuple[FleetConfig, str]:
    raw, keys = stack_values("prod-fsn1")
    raw = {**raw, **secrets}
    return FleetConfig.from_mapping(raw, "stacks/Pulumi.prod-fsn1.yaml", keys | frozenset(secrets)), raw[
        "identityCsr"]


def test_a_region_without_its_csr_or_key_is_one_line() -> None:
    raw, keys = stack_values("prod-fsn1")
    with pytest.raises(ConfigError) as info:
        FleetConfig.from_mapping({k: v for k, v in raw.items() if k != "identityCsr"}, "stacks/Pulumi.prod-fsn1.yaml",
                                 keys)
    assert "identityCsr: role 'region' needs its identity CSR: run `hubctl region-key <stack>`" in str(info.value)
    with pytest.raises(ConfigError, match=r"stack secret karmada-hub:identityKey is not set"):
        FleetConfig.from_mapping({k: v for k, v in raw.items() if k != "identityKey"}, "stacks/Pulumi.prod-fsn1.yaml",
                                 keys - {"identityKey"})


def test_the_region_checks_its_key_against_its_csr() -> None:
    """The region's own preflight: its `identityKey` must be its committed CSR's key (one line, exit 2), else the
    hub's certificates would fail at the first API call; the offline placeholder is not judged."""
    config, _ = _region_config()
    preflight.check_region_identity(config, "stacks/Pulumi.prod-fsn1.yaml")  # the placeholder
    other = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    config, _ = _region_config(identityKey=other)
    with pytest.raises(ConfigError) as info:
        preflight.check_region_identity(config, "stacks/Pulumi.prod-fsn1.yaml")
    assert str(info.value).startswith("stacks/Pulumi.prod-fsn1.yaml: karmada-hub:identityKey: is not the key of "
                                      "karmada-hub:identityCsr")
    config, _ = _region_config(identityKey="not a key")
    with pytest.raises(ConfigError, match="is not an unencrypted PEM private key"):
        preflight.check_region_identity(config, "stacks/Pulumi.prod-fsn1.yaml")
    mine = _GOOD.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                               serialization.NoEncryption()).decode()
    raw, keys = stack_values("prod-fsn1")
    raw = {**raw, "identityKey": mine, "identityCsr": _csr(_GOOD, [_cn("karmada-hub:region:eu-fsn")])}
    preflight.check_region_identity(FleetConfig.from_mapping(raw, "stacks/Pulumi.prod-fsn1.yaml", keys),
                                    "stacks/Pulumi.prod-fsn1.yaml")


# ------------------------------------------------------------------------------------------------ RBAC


def _rbac(plan: Plan, target: str) -> Rbac:
    return Rbac([o for t, o in objects(plan) if t == target and o["kind"] in (
        "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")], builtins=NODE_BOOTSTRAPPER)


_PLURAL = {"Secret": "secrets", "PropagationPolicy": "propagationpolicies", "OverridePolicy": "overridepolicies",
           "FederatedResourceQuota": "federatedresourcequotas", "ConfigMap": "configmaps"}


def _written(plan: Plan, target: str, config: Any) -> set[region_rbac.Grant]:
    """What the region plan writes to one API server, plus the bootstrap tokens its PullJoins write there."""
    out = {region_rbac.Grant(o["apiVersion"].rpartition("/")[0], _PLURAL[o["kind"]],
                             o["metadata"].get("namespace", ""), o["metadata"]["name"])
           for t, o in objects(plan) if t == target}
    if target == "karmada":
        joins = [unwrap(r.inputs) for r in plan.records if r.type == "pulumi-python:dynamic:Resource"
                 and r.name.endswith("-join")]
        out |= {region_rbac.Grant("", "secrets", "kube-system", f"bootstrap-token-{j['tokenId']}") for j in joins}
        assert {j["cluster"] for j in joins} == {m.name for m in config.members if m.sync_mode == "Pull"}
    return out


def _granted(rbac: Rbac, user: str) -> dict[region_rbac.Grant, set[str]]:
    """Every named object the user's rules cover, with the verbs; a rule without names is an error here."""
    out: dict[region_rbac.Grant, set[str]] = {}
    for scope, rule in rbac.rules_for(Request(user=user, verb="get", group="", resource="")):
        assert rule.get("resourceNames"), f"{user} has a rule not limited by name: {rule}"
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for name in rule["resourceNames"]:
                    grant = region_rbac.Grant(group, resource, "" if scope == "*" else scope, name)
                    out.setdefault(grant, set()).update(rule["verbs"])
    return out


@pytest.mark.parametrize(("stack", "region"), REGIONS.items())
def test_the_region_identity_may_write_exactly_what_the_region_writes(rendered_prod: dict[str, Plan], stack: str,
                                                                     region: str) -> None:
    hub, plan = rendered_prod["prod-hub"], rendered_prod[stack]
    config = load_stack(stack)
    user = _user(stack)
    for target in ("karmada", "host"):
        rbac = _rbac(hub, target)
        written = _written(plan, target, config)
        granted = _granted(rbac, user)
        assert set(granted) == written, (target, sorted(set(granted) ^ written))
        for grant in written:
            for verb in ("get", "create", "patch", "delete"):
                assert rbac.allowed(Request(user, verb, grant.group, grant.resource, grant.namespace, grant.name)), (
                    target, verb, grant)
        assert all(verbs == set(region_rbac.VERBS) for verbs in granted.values())
        # the region's name without the key id, i.e. any other key's certificate, is bound to nothing
        assert _granted(rbac, f"karmada-hub:region:{region}") == {}


def test_what_a_region_identity_must_not_do(rendered_prod: dict[str, Plan]) -> None:
    rbac = _rbac(rendered_prod["prod-hub"], "karmada")
    host = _rbac(rendered_prod["prod-hub"], "host")
    fsn = _user("prod-fsn1")
    denied = [
        Request(fsn, "create", "cluster.karmada.io", "clusters", "", "prod-fsn1-a"),   # Clusters are the hub's
        Request(fsn, "patch", "cluster.karmada.io", "clusters", "", "prod-fsn1-a"),
        Request(fsn, "create", "rbac.authorization.k8s.io", "roles", "shop", "x"),      # no RBAC of its own
        Request(fsn, "create", "rbac.authorization.k8s.io", "rolebindings", "shop", "x"),
        Request(fsn, "get", "", "secrets", "karmada-cluster", "prod-hel1-a"),           # another region's member
        Request(fsn, "patch", "policy.karmada.io", "propagationpolicies", "search", "search"),  # another's tenant
        Request(fsn, "create", "", "secrets", "kube-system", "bootstrap-token-abcdef"),  # another token
        Request(fsn, "list", "", "secrets", "kube-system"),                              # no listing
        Request(fsn, "create", "", "namespaces", "", "shop"),                            # namespaces are the hub's
        Request(fsn, "create", "certificates.k8s.io", "certificatesigningrequests"),     # no CSRs
    ]
    assert [r for r in denied if rbac.allowed(r)] == []
    assert not host.allowed(Request(fsn, "get", "", "secrets", "karmada-system", "karmada-apiserver-pki"))
    assert not host.allowed(Request(fsn, "create", "apps", "deployments", "karmada-system", "x"))
    token = region_rbac.bootstrap_token_secret_name("prod-fsn1-b")
    assert rbac.allowed(Request(fsn, "create", "", "secrets", "kube-system", token))
    assert not rbac.allowed(Request(_user("prod-hel1"), "create", "", "secrets", "kube-system", token))


def test_a_widened_grant_is_caught(rendered_prod: dict[str, Plan]) -> None:
    hub = copy.deepcopy([o for t, o in objects(rendered_prod["prod-hub"]) if t == "karmada"])
    role = next(o for o in hub if o["kind"] == "Role" and o["metadata"]["name"] == "karmada-hub:region:eu-fsn"
                and o["metadata"]["namespace"] == "karmada-cluster")
    role["rules"][0]["resourceNames"].append("prod-hel1-a")
    rbac = Rbac([o for o in hub if o["kind"].endswith(("Role", "Binding"))])
    granted = _granted(rbac, _user("prod-fsn1"))
    written = _written(rendered_prod["prod-fsn1"], "karmada", load_stack("prod-fsn1"))
    assert set(granted) - written == {region_rbac.Grant("", "secrets", "karmada-cluster", "prod-hel1-a")}


def test_the_hub_reads_its_regions_from_their_files() -> None:
    hub = load_stack("prod-hub")
    intents = region_intents(hub, "prod-hub")
    assert [(i.stack, i.region) for i in intents] == [("prod-fsn1", "eu-fsn"), ("prod-hel1", "eu-hel"),
                                                      ("prod-ash", "us-ash")]
    assert all(i.csr is not None for i in intents)
    names = [m.name for i in intents for m in i.members]
    assert len(names) == len(set(names))
    assert {member_docs.token_id(m.name) for i in intents for m in i.members if m.sync_mode == "Pull"}


def test_two_region_stacks_cannot_claim_one_tenant(tmp_path: Path) -> None:
    """Review M4 (experiment 3): `payments` in prod-fsn1 and prod-hel1 gave both regions write on the same policy
    names; the hub now refuses the second file with one line."""
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    for name in ("prod-hub", *REGIONS):
        (stacks / f"Pulumi.{name}.yaml").write_bytes((REPO / "stacks" / f"Pulumi.{name}.yaml").read_bytes())
    hel = stacks / "Pulumi.prod-hel1.yaml"
    text = hel.read_text().replace("    - name: search\n      namespace: search\n",
                                   "    - name: search\n      namespace: payments\n")
    assert "namespace: payments" in text
    hel.write_text(text)
    with pytest.raises(ConfigError) as info:
        region_intents(load_stack("prod-hub"), "prod-hub", stacks)
    assert str(info.value) == ("stacks/Pulumi.prod-hel1.yaml: karmada-hub:tenants[0].namespace: 'payments' is "
                               "already tenant payments's namespace in stacks/Pulumi.prod-fsn1.yaml; one tenant per "
                               "namespace across the fleet (each region's identity may write only in its own tenants' "
                               "namespaces): give this tenant its own")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda v: v.append("prod-nowhere"), "stacks/Pulumi.prod-hub.yaml: karmada-hub:regionStacks[3]: no stack file "
                                         "prod-nowhere in stacks/ (did you mean prod-hel1?); list the region stacks' "
                                         "names"),
    (lambda v: v.append("dev"), "stacks/Pulumi.dev.yaml: karmada-hub:role: listed in stacks/Pulumi.prod-hub.yaml "
                                "regionStacks but is not a region stack (role: region)"),
])
def test_a_wrong_region_stack_list_is_one_line(edit: Any, message: str) -> None:
    stack = edited_stack("prod-hub", {"regionStacks": edit})
    with pytest.raises(ConfigError) as info:
        raw, secrets = stack.project_values()
        region_intents(FleetConfig.from_mapping(raw, "stacks/Pulumi.prod-hub.yaml", secrets), "prod-hub")
    assert str(info.value) == message


@pytest.mark.parametrize(("text", "message"), [
    ("config:\n  karmada-hub:role: region\n  karmada-hub:tenants: &t []\n  karmada-hub:x: *t\n",
     "stacks/Pulumi.r.yaml: line 4, column 18: YAML aliases (*name) are not read here; write the value out"),
    ("config:\n  karmada-hub:labels: " + "[" * 40 + "]" * 40 + "\n",
     "stacks/Pulumi.r.yaml: line 2, column 53: nested more than 32 levels deep"),
    ("- config\n", "stacks/Pulumi.r.yaml: must be a mapping with a `config:` section"),
    ("config: {a: [}\n", "stacks/Pulumi.r.yaml: not valid YAML: "),
    ("x" * ((1 << 20) + 1), "stacks/Pulumi.r.yaml: is 1,048,577 bytes; a stack file may be at most 1,048,576"),
    ("config:\n  a: 1\n  a: 2\n", "stacks/Pulumi.r.yaml: line 3, column 3 (under a): duplicate key 'a'"),
])
def test_a_region_file_is_read_with_bounds(tmp_path: Any, text: str, message: str) -> None:
    """A hub reads its region stacks' files with the CLI's bounded reader (components/kube/safeyaml.py) and no
    aliases at all: aliases, depth, size and duplicate keys are refused with one line naming the file."""
    from components.config import read_stack_file

    path = tmp_path / "Pulumi.r.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        read_stack_file(path, "stacks/Pulumi.r.yaml")
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


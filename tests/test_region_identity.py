"""Region stacks hold no CA key and no admin credential, and their identity may write exactly what they write.

- The hub exports no secret at all, so no StackReference can carry a key; a region's whole state (every input and
  output of every resource it registers) holds exactly one private key: its own identity's.
- The CSR committed in each example region stack file is that stack's own (so the plans stay consistent), and the
  hub's two certificates for it chain to the Karmada CA and the k3s client CA, for the region's key, with
  CN `karmada-hub:region:<region>` and no groups.
- A certificate for another key stops the region with one line; a region without a committed CSR makes its key
  and CSR and nothing else.
- RBAC both ways, evaluated with RBAC semantics over the hub's rendered Roles and bindings: every object a region
  plan applies to the karmada-apiserver or the host (plus the bootstrap tokens its PullJoin writes) is allowed for
  its user with the verbs server-side apply uses, and the set of objects its rules name is exactly that set;
  what it must not do (write a Cluster, a Role, another region's or member's objects, read other Secrets) is
  denied. A mutated grant is caught.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pulumi
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID

from components.fleet import member_docs
from components.hetzner.hub_cluster import K3S_CA_NAMES
from components.operations.region_intents import region_intents
from components.roles import HUB_OUTPUTS
from components.trust import region_rbac
from hubctl.commands import load_config
from hubctl.mocks import unwrap
from hubctl.plan import Plan, run_program
from tests.support.rbac import NODE_BOOTSTRAPPER, Rbac, Request
from tests.support.rendered import objects
from tests.support.tools import REPO, edited_stack, load_stack

REGIONS = {"prod-fsn1": "eu-fsn", "prod-hel1": "eu-hel", "prod-ash": "us-ash"}
PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")
HUB = "organization/karmada-hub/prod-hub"


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


# ------------------------------------------------------------------------------------------- no keys


def test_the_hub_exports_nothing_secret(rendered_prod_hub: Plan) -> None:
    assert not [name for name, secret in HUB_OUTPUTS.items() if secret]
    assert not {"karmadaCaKeyPem", "karmadaKubeconfig", "hubKubeconfig"} & set(rendered_prod_hub.outputs)
    for name, value in rendered_prod_hub.raw_outputs.items():
        text = " ".join(_strings(value))
        assert not PRIVATE_KEY.search(text) and "client-key-data" not in text, name


_CLIENT_KEY = re.compile(r"client-key-data[\"']?\s*:\s*[\"']?([A-Za-z0-9+/=]+)")


def _keys_in(text: str) -> set[str]:
    """Private keys in a string: PEM blocks, and the base64 `client-key-data` of kubeconfigs, decoded."""
    import base64

    found = set(re.findall(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]+?-----END [A-Z ]*PRIVATE KEY-----", text))
    for b64 in _CLIENT_KEY.findall(text):
        found |= _keys_in(base64.b64decode(b64).decode())
    return found


@pytest.mark.parametrize("stack", REGIONS)
def test_a_region_state_holds_only_its_own_key(rendered_prod: dict[str, Plan], stack: str) -> None:
    """Every value the region stack registers, inputs and outputs (what its state would hold), StackReference
    included: every private key in it, PEM or inside a kubeconfig, is the identity key it generated itself."""
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    plan = rendered_prod[stack]
    own = next(r for r in plan.records if (r.type, r.name) == ("tls:index/privateKey:PrivateKey",
                                                               f"region-identity-{REGIONS[stack]}"))
    own_numbers = load_pem_private_key(unwrap(own.outputs)["privateKeyPem"].encode(), None).private_numbers()
    assert [r.name for r in plan.records if r.type == "tls:index/privateKey:PrivateKey"] == [own.name]
    seen = 0
    for record in plan.records:
        for part in (unwrap(record.inputs), unwrap(record.outputs)):
            for text in _strings(part):
                for key in _keys_in(text):
                    if "OPENSSH" in key:
                        continue  # the same key in OpenSSH form (tls.PrivateKey's privateKeyOpenssh)
                    seen += 1
                    assert load_pem_private_key(key.encode(), None).private_numbers() == own_numbers, record.name
    assert seen >= 3  # the key itself, the CSR's input, the region's kubeconfigs


def test_the_key_check_sees_a_foreign_key(rendered_prod: dict[str, Plan]) -> None:
    """The same scan over the hub's state finds keys that are not the region's (the CA keys among them)."""
    hub_keys = {k for r in rendered_prod["prod-hub"].records for part in (unwrap(r.inputs), unwrap(r.outputs))
                for text in _strings(part) for k in _keys_in(text)}
    fsn = unwrap(next(r for r in rendered_prod["prod-fsn1"].records if r.name == "region-identity-eu-fsn").outputs)
    assert len(hub_keys - {fsn["privateKeyPem"]}) > 10


# ---------------------------------------------------------------------------------------- the certs


def _cert(plan: Plan, name: str) -> x509.Certificate:
    rec = next(r for r in plan.records if r.name == name)
    return x509.load_pem_x509_certificate(unwrap(rec.outputs)["certPem"].encode())


@pytest.mark.parametrize(("stack", "region"), REGIONS.items())
def test_the_hub_signs_the_committed_csr_of_the_regions_own_key(rendered_prod: dict[str, Plan], stack: str,
                                                                region: str) -> None:
    hub, plan = rendered_prod["prod-hub"], rendered_prod[stack]
    committed = load_stack(stack).identity_csr
    assert committed == plan.raw_outputs["identityCsrPem"].strip(), f"commit the new identityCsrPem to stacks/{stack}"
    key = next(r for r in plan.records if r.name == f"region-identity-{region}")
    public = serialization.load_pem_public_key(unwrap(key.outputs)["publicKeyPem"].encode())
    karmada_ca, host_ca = _cert(hub, "karmada-pki-ca"), _cert(hub, f"hub-{K3S_CA_NAMES['client-ca']}")
    for which, ca in (("karmada", karmada_ca), ("host", host_ca)):
        cert = _cert(hub, f"region-{region}-{which}")
        cert.verify_directly_issued_by(ca)
        assert cert.public_key().public_numbers() == public.public_numbers()
        assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == f"karmada-hub:region:{region}"
        assert not cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)  # no groups
        assert x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH in cert.extensions.get_extension_for_class(
            x509.ExtendedKeyUsage).value
        exported = rendered_prod["prod-hub"].raw_outputs["regionIdentities"][region][f"{which}CertPem"]
        assert x509.load_pem_x509_certificate(exported.encode()) == cert


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


def test_a_region_without_a_committed_csr_makes_only_its_key(rendered_prod_hub: Plan) -> None:
    import dataclasses

    stack, _ = load_config(REPO, "prod-fsn1")
    config = {k: v for k, v in stack.config.items() if k != "karmada-hub:identityCsr"}
    plan = run_program(REPO, dataclasses.replace(stack, config=config),
                       {HUB: rendered_prod_hub.as_stack_reference()})
    kinds = {r.type for r in plan.records if r.custom and not r.type.startswith("pulumi:providers:")}
    assert kinds == {"tls:index/privateKey:PrivateKey", "tls:index/certRequest:CertRequest",
                     "pulumi:pulumi:StackReference"}, kinds
    assert set(plan.outputs) == {"identityCsrPem"}


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
    user = region_rbac.region_user(region)
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


def test_what_a_region_identity_must_not_do(rendered_prod: dict[str, Plan]) -> None:
    rbac = _rbac(rendered_prod["prod-hub"], "karmada")
    host = _rbac(rendered_prod["prod-hub"], "host")
    fsn = region_rbac.region_user("eu-fsn")
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
    assert not rbac.allowed(Request(region_rbac.region_user("eu-hel"), "create", "", "secrets", "kube-system", token))


def test_a_widened_grant_is_caught(rendered_prod: dict[str, Plan]) -> None:
    hub = copy.deepcopy([o for t, o in objects(rendered_prod["prod-hub"]) if t == "karmada"])
    role = next(o for o in hub if o["kind"] == "Role" and o["metadata"]["name"] == "karmada-hub:region:eu-fsn"
                and o["metadata"]["namespace"] == "karmada-cluster")
    role["rules"][0]["resourceNames"].append("prod-hel1-a")
    rbac = Rbac([o for o in hub if o["kind"].endswith(("Role", "Binding"))])
    granted = _granted(rbac, region_rbac.region_user("eu-fsn"))
    written = _written(rendered_prod["prod-fsn1"], "karmada", load_stack("prod-fsn1"))
    assert set(granted) - written == {region_rbac.Grant("", "secrets", "karmada-cluster", "prod-hel1-a")}


def test_the_hub_reads_its_regions_from_their_files() -> None:
    hub = load_stack("prod-hub")
    intents = region_intents(hub, "prod-hub")
    assert [(i.stack, i.region) for i in intents] == [("prod-fsn1", "eu-fsn"), ("prod-hel1", "eu-hel"),
                                                      ("prod-ash", "us-ash")]
    assert all(i.identity_csr for i in intents)
    names = [m.name for i in intents for m in i.members]
    assert len(names) == len(set(names))
    assert {member_docs.token_id(m.name) for i in intents for m in i.members if m.sync_mode == "Pull"}


@pytest.mark.parametrize(("edit", "message"), [
    (lambda v: v.append("prod-nowhere"), "stacks/Pulumi.prod-hub.yaml: karmada-hub:regionStacks[3]: no stack file "
                                         "prod-nowhere in stacks/ (did you mean prod-hel1?); list the region stacks' "
                                         "names"),
    (lambda v: v.append("dev"), "stacks/Pulumi.dev.yaml: karmada-hub:role: listed in stacks/Pulumi.prod-hub.yaml "
                                "regionStacks but is not a region stack (role: region)"),
])
def test_a_wrong_region_stack_list_is_one_line(edit: Any, message: str) -> None:
    from components.config import ConfigError

    stack = edited_stack("prod-hub", {"regionStacks": edit})
    with pytest.raises(ConfigError) as info:
        from components.config import FleetConfig

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
    from components.config import ConfigError, read_stack_file

    path = tmp_path / "Pulumi.r.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        read_stack_file(path, "stacks/Pulumi.r.yaml")
    assert str(info.value).startswith(message) and "\n" not in str(info.value)

"""`hubctl kubeconfig`: the admin kubeconfig comes from the hub's own state, never from an output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID

from hubctl.errors import UserError
from hubctl.kubeconfig import admin_kubeconfig, operator_kubeconfig
from hubctl.mocks import unwrap
from hubctl.plan import Plan
from tests.support.tools import REPO

SECRET = "4dabf18193072939515e22adb298388d"


def _export(plan: Plan, show_secrets: bool = True) -> dict[str, Any]:
    """A `pulumi stack export` document of the plan: each gate's outputs, the stack's outputs, secrets wrapped as
    the CLI writes them (plaintext JSON with --show-secrets, ciphertext without)."""
    def wrap(value: Any) -> Any:
        return {SECRET: "1b47061264138c4ac30d75fd1eb44270",
                **({"plaintext": json.dumps(value)} if show_secrets else {"ciphertext": "v1:abc"})}

    secret_fields = ("kubeconfig", "privateKeyPem")
    kept = ("pulumi-python:dynamic:Resource", "tls:index/privateKey:PrivateKey",
            "tls:index/locallySignedCert:LocallySignedCert")
    resources = [{"urn": r.urn, "type": r.type, "outputs": {k: wrap(v) if k in secret_fields else v
                                                            for k, v in unwrap(r.outputs).items()}}
                 for r in plan.records if r.type in kept]
    resources.append({"urn": "urn:pulumi:dev::karmada-hub::pulumi:pulumi:Stack::karmada-hub-dev",
                      "type": "pulumi:pulumi:Stack", "outputs": dict(plan.raw_outputs)})
    return {"version": 3, "deployment": {"resources": resources}}


@pytest.mark.parametrize(("api", "port", "cn"), [("karmada", 32443, "system:admin"), ("host", 6443, "system:admin")])
def test_admin_kubeconfig_from_the_state(rendered_dev: Plan, api: str, port: int, cn: str) -> None:
    config = yaml.safe_load(admin_kubeconfig(_export(rendered_dev), api))
    assert config["clusters"][0]["cluster"]["server"] == f"https://api.hub.dev.example.com:{port}"
    import base64

    cert = x509.load_pem_x509_certificate(base64.b64decode(config["users"][0]["user"]["client-certificate-data"]))
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == cn
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["system:masters"]


@pytest.mark.parametrize(("api", "port"), [("karmada", 32443), ("host", 6443)])
def test_the_everyday_kubeconfig_is_the_operators_revocable_one(rendered_dev: Plan, api: str, port: int) -> None:
    """Review M8: the operator's certificate carries the group the one ClusterRoleBinding names (its key's id), not
    system:masters: deleting the binding, or replacing the key, revokes it."""
    import base64

    from components.trust import operators
    from tests.support.rendered import objects

    config = yaml.safe_load(operator_kubeconfig(_export(rendered_dev), api))
    assert config["clusters"][0]["cluster"]["server"] == f"https://api.hub.dev.example.com:{port}"
    cert = x509.load_pem_x509_certificate(base64.b64decode(config["users"][0]["user"]["client-certificate-data"]))
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == operators.OPERATOR_USER
    (group,) = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    assert group == operators.operator_group(cert.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode())
    (binding,) = [o for t, o in objects(rendered_dev) if t == api and o["kind"] == "ClusterRoleBinding"
                  and o["metadata"]["name"] == operators.BINDING]
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]
    assert binding["roleRef"]["name"] == "cluster-admin"
    assert cert.not_valid_after_utc - cert.not_valid_before_utc <= __import__("datetime").timedelta(days=30)


def test_an_export_without_show_secrets_is_one_line(rendered_dev: Plan) -> None:
    with pytest.raises(UserError, match=r"^karmada-apiserver-ready.kubeconfig is encrypted in this export: run "):
        admin_kubeconfig(_export(rendered_dev, show_secrets=False), "karmada")


def test_a_region_stack_has_no_admin_kubeconfig(rendered_prod: dict[str, Plan]) -> None:
    with pytest.raises(UserError, match=r"^this is not a hub stack's state"):
        admin_kubeconfig(_export(rendered_prod["prod-fsn1"]), "karmada")


def test_the_cli_prints_it(rendered_dev: Plan, tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(_export(rendered_dev)))
    result = subprocess.run([sys.executable, "-m", "hubctl", "kubeconfig", "dev", "host", "--from-file", str(path)],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(result.stdout)["kind"] == "Config"
    assert "the operators' host credential" in result.stderr
    glass = subprocess.run([sys.executable, "-m", "hubctl", "kubeconfig", "dev", "host", "--from-file", str(path),
                            "--break-glass"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert glass.returncode == 0 and "break-glass system:masters credential" in glass.stderr
    path.write_text(json.dumps(_export(rendered_dev, show_secrets=False)))
    bad = subprocess.run([sys.executable, "-m", "hubctl", "kubeconfig", "dev", "host", "--from-file", str(path)],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith(f"error: {path}: hub-api-ready.kubeconfig is encrypted")

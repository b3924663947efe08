"""`hubctl plan` / `hubctl diff`: deterministic output, the documented shape, and no secret in any file.

The secret checks do not trust the plan's own bookkeeping: the secret values are taken from what the
providers (mocked) actually returned in an unredacted run, and searched for in every written file.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from hubctl.commands import run_plan
from hubctl.mocks import unwrap
from hubctl.plan import SecretLeak, assert_no_secrets
from tests.support.tools import REPO, copy_program, program_env

EPOCH = dt.datetime.now(dt.UTC).date().isoformat()
"""Today (certificates must be valid now), pinned once so two runs cannot straddle midnight."""
RESOURCE_KEYS = {"urn", "type", "name", "parent", "provider", "dependencies", "inputs", "options"}
TOKEN = re.compile(r"K10[0-9a-f]{64}::server:")


@pytest.fixture(scope="module")
def fixed_epoch() -> Any:
    """Certificates carry the plan epoch; pin it for this module's runs, then restore the environment."""
    old = os.environ.get("HUBCTL_PLAN_EPOCH")
    os.environ["HUBCTL_PLAN_EPOCH"] = EPOCH
    yield EPOCH
    if old is None:
        os.environ.pop("HUBCTL_PLAN_EPOCH", None)
    else:
        os.environ["HUBCTL_PLAN_EPOCH"] = old


@pytest.fixture(scope="module")
def plan_dir(tmp_path_factory: pytest.TempPathFactory, fixed_epoch: str) -> Path:
    out = tmp_path_factory.mktemp("plan-a")
    assert run_plan(REPO, "dev", out, quiet=True) == 0
    return out / "dev"


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------------------------------- determinism


def test_two_runs_are_byte_identical(plan_dir: Path, tmp_path: Path, fixed_epoch: str) -> None:
    assert run_plan(REPO, "dev", tmp_path, quiet=True) == 0
    first, second = files_of(plan_dir), files_of(tmp_path / "dev")
    assert "plan.json" in first and any(k.startswith("cloud-init/") for k in first)
    assert sorted(first) == sorted(second)
    for rel in first:
        assert first[rel] == second[rel], f"{rel} differs between two runs"


def test_plan_writes_one_cloud_init_file_per_hub_server(plan_dir: Path) -> None:
    plan = json.loads((plan_dir / "plan.json").read_text())
    names = sorted(r["inputs"]["name"] for r in plan["resources"] if r["type"] == "hcloud:index/server:Server")
    assert names
    assert sorted(p.stem for p in (plan_dir / "cloud-init").glob("*.yaml")) == names


# ---------------------------------------------------------------------------------------------- shape


def test_plan_json_shape(plan_dir: Path) -> None:
    plan = json.loads((plan_dir / "plan.json").read_text())
    assert set(plan) == {"project", "stack", "resources", "outputs"}
    assert (plan["project"], plan["stack"]) == ("karmada-hub", "dev")
    resources = plan["resources"]
    assert resources
    urns = [r["urn"] for r in resources]
    assert urns == sorted(urns)
    assert len(set(urns)) == len(urns)
    known = set(urns)
    for r in resources:
        assert set(r) == RESOURCE_KEYS, r["urn"]
        assert r["urn"].startswith("urn:pulumi:dev::karmada-hub::") and r["urn"].endswith(f"::{r['name']}")
        assert r["type"] in r["urn"]
        assert isinstance(r["dependencies"], list) and r["dependencies"] == sorted(r["dependencies"])
        assert set(r["dependencies"]) <= known, r["urn"]
        assert r["parent"] == "" or r["parent"] in known, r["urn"]
        assert isinstance(r["inputs"], dict) and isinstance(r["options"], dict)
    assert isinstance(plan["outputs"], dict) and "hubApiEndpoint" in plan["outputs"]


def test_plan_json_has_no_floats_for_integers(plan_dir: Path) -> None:
    """The wire has only floats; the plan shows ports and counts as the integers the program wrote."""
    plan = json.loads((plan_dir / "plan.json").read_text())
    services = [r for r in plan["resources"] if r["type"] == "hcloud:index/loadBalancerService:LoadBalancerService"]
    assert services
    for s in services:
        assert isinstance(s["inputs"]["listenPort"], int)


# -------------------------------------------------------------------------------------------- secrets


def _actual_secrets(plan: Any) -> set[str]:
    """Secret values providers returned in the unredacted run: keys, passwords, the k3s token."""
    found: set[str] = set()
    for r in plan.records:
        state = unwrap(r.outputs or {})
        if r.type == "tls:index/privateKey:PrivateKey":
            found |= {state["privateKeyPem"], state["privateKeyPemPkcs8"]}
        elif r.type == "random:index/randomPassword:RandomPassword":
            found.add(state["result"])
        elif r.type == "hcloud:index/server:Server":
            for entry in yaml.safe_load(unwrap(r.inputs)["userData"])["write_files"]:
                if entry["path"].endswith("/token"):
                    found.add(entry["content"].strip())
    for value in plan.raw_outputs.values():
        if isinstance(value, str) and "client-key-data" in value:
            found.add(value)
    assert any("PRIVATE KEY" in v for v in found) and any(TOKEN.match(v) for v in found)
    return found


def test_no_secret_value_in_any_plan_file(plan_dir: Path, rendered_dev) -> None:
    secrets = _actual_secrets(rendered_dev)
    needles = secrets | {base64.b64encode(s.encode()).decode() for s in secrets}
    for rel, content in files_of(plan_dir).items():
        text = content.decode()
        assert "PRIVATE KEY" not in text, rel
        assert not TOKEN.search(text), rel
        for needle in needles:
            assert needle not in text, f"{rel} contains a secret value ({needle[:12]}…)"


def test_stack_secrets_never_reach_the_plan(plan_dir: Path, rendered_dev) -> None:
    """The Hetzner DNS token and the CAPI kubeconfig (stack secrets; offline their placeholders) are used by
    the program (the DNS zone's hcloud provider, the CAPI provider) but appear in no plan file, raw or base64;
    nor do the nameservers' TSIG keys (dns.mode self-hosted: random, in two Secrets)."""
    from hubctl.stackfile import placeholder, read_stack

    stack = read_stack(REPO, "dev")
    assert {"karmada-hub:hetznerDnsToken", "karmada-hub:capiKubeconfig"} <= set(stack.secret_keys)
    token = placeholder("karmada-hub:hetznerDnsToken")
    used = [r for r in rendered_dev.records if r.type == "pulumi:providers:hcloud" and r.name == "hcloud-dns"]
    assert used and unwrap(used[0].inputs)["token"] == token
    tsig = [r for r in rendered_dev.records if r.type == "kubernetes:core/v1:Secret"
            and (unwrap(r.inputs).get("metadata") or {}).get("name") == "knot-tsig"]
    assert tsig
    keys = base64.b64decode(unwrap(tsig[0].inputs)["data"]["secret"]).decode()
    values = [placeholder(key) for key in stack.secret_keys] + [keys]
    for value in values:
        for rel, content in files_of(plan_dir).items():
            text = content.decode()
            assert value not in text and base64.b64encode(value.encode()).decode() not in text, (value[:8], rel)


def test_a_plan_prints_no_secret(rendered_dev) -> None:
    """pytest shows fixture values when a test fails: a Plan's repr must not carry keys or tokens."""
    text = repr(rendered_dev)
    assert "PRIVATE KEY" not in text and not TOKEN.search(text)
    assert not any(secret in text for secret in _actual_secrets(rendered_dev))


KEY_DATA = "client-key-data"
KEY_DATA_TEXT = re.compile(r"client-key-data[\"']?\s*:\s*[\"']?([^\"'\s,}]+)")


def client_key_data(files: dict[str, bytes]) -> list[tuple[str, str]]:
    """(file, value) of every `client-key-data` in the plan's files: a key of any mapping, in JSON and YAML, in a
    string that is itself a kubeconfig (a provider input, a ConfigMap or Secret value), in a Secret's base64
    `data`; in text that does not parse, after `client-key-data:`."""
    found: list[tuple[str, str]] = []

    def walk(rel: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if k == KEY_DATA:
                    found.append((rel, v if isinstance(v, str) else repr(v)))
                walk(rel, v)
            if value.get("kind") == "Secret" and isinstance(value.get("data"), dict):
                for v in value["data"].values():
                    try:
                        walk(rel, base64.b64decode(v, validate=True).decode())
                    except (ValueError, TypeError):
                        continue  # a redaction placeholder, not base64
        elif isinstance(value, list):
            for v in value:
                walk(rel, v)
        elif isinstance(value, str) and KEY_DATA in value:
            try:
                docs = [d for d in yaml.safe_load_all(value) if isinstance(d, dict | list)]
            except yaml.YAMLError:
                docs = []
            if docs:
                walk(rel, docs)
            else:
                found.extend((rel, v) for v in KEY_DATA_TEXT.findall(value))

    for rel, content in files.items():
        text = content.decode()
        try:
            walk(rel, json.loads(text) if rel.endswith(".json") else list(yaml.safe_load_all(text)))
        except (ValueError, yaml.YAMLError):
            walk(rel, text)
    return found


def _redacted(value: str) -> bool:
    return value == "[secret]" or bool(PLACEHOLDER.match(value))


def _kubeconfig_with_key() -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "users": [{"name": "admin", "user": {
        "client-certificate-data": "Y2VydA==", KEY_DATA: base64.b64encode(b"-----BEGIN EC PRIVATE KEY-----").decode(),
    }}]})


def test_no_client_key_data_with_a_value(plan_dir: Path) -> None:
    files = files_of(plan_dir)
    leaks = [(rel, value) for rel, value in client_key_data(files) if not _redacted(value)]
    assert not leaks, [f"{rel}: client-key-data {value[:12]}…" for rel, value in leaks]

    # The check can fail: the same plan with a kubeconfig that carries its key where a plan holds kubeconfigs
    # (a provider input in plan.json, a Secret's base64 data and a ConfigMap value in a manifest file).
    plan = json.loads(files["plan.json"])
    provider = next(r for r in plan["resources"] if r["type"] == "pulumi:providers:kubernetes")
    assert provider["inputs"]["kubeconfig"] == "[secret]"
    provider["inputs"]["kubeconfig"] = _kubeconfig_with_key()
    manifest = next(rel for rel in files if rel.startswith("manifests/"))
    leaked = yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "leak"},
         "data": {"config": base64.b64encode(_kubeconfig_with_key().encode()).decode()}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "leak"},
         "data": {"config": _kubeconfig_with_key()}},
    ])
    doctored = {**files, "plan.json": json.dumps(plan).encode(), manifest: files[manifest] + b"---\n" + leaked.encode()}
    found = [(rel, value) for rel, value in client_key_data(doctored) if not _redacted(value)]
    assert sorted(rel for rel, _ in found) == sorted(["plan.json", manifest, manifest])
    assert client_key_data({"x.txt": b"client-key-data: LS0tLS1CRUdJTg"}) == [("x.txt", "LS0tLS1CRUdJTg")]


def _kubernetes_objects(plan_dir: Path) -> list[dict[str, Any]]:
    objects = []
    for path in sorted((plan_dir / "manifests").glob("*.yaml")) if (plan_dir / "manifests").is_dir() else []:
        objects += [o for o in yaml.safe_load_all(path.read_text()) if o]
    plan = json.loads((plan_dir / "plan.json").read_text())
    objects += [r["inputs"] for r in plan["resources"] if r["type"].startswith("kubernetes:")]
    return objects


PLACEHOLDER = re.compile(r"^\[secret [0-9a-f]{12}\]$")


def test_every_secret_object_is_redacted_per_key(plan_dir: Path) -> None:
    """Keys stay visible, each value is `[secret <fingerprint>]` (base64 of it under `data`): never the value."""
    seen = 0
    for obj in _kubernetes_objects(plan_dir):
        if obj.get("kind") != "Secret":
            continue
        for key in ("data", "stringData"):
            payload = obj.get(key)
            if payload is None:
                continue
            assert isinstance(payload, dict) and payload, (obj.get("metadata"), key)
            for name, value in payload.items():
                text = base64.b64decode(value, validate=True).decode() if key == "data" else value
                assert PLACEHOLDER.match(text), (obj["metadata"].get("name"), key, name)
                seen += 1
    assert seen > 20


def test_redacted_objects_still_validate(plan_dir: Path) -> None:
    """What plan files show is schema-valid too: a Secret's `data` holds base64 per key, not one string."""
    from components import versions
    from tests.support.schemas import validate_kubernetes

    secrets = [o for o in yaml.safe_load_all((plan_dir / "manifests" / "host.yaml").read_text())
               if o and o.get("kind") == "Secret"]
    assert any("data" in o for o in secrets) and any("stringData" in o for o in secrets)
    for obj in secrets:
        validate_kubernetes(obj, versions.kubernetes_minor(versions.K3S_VERSION))


def test_a_changed_secret_value_changes_only_its_fingerprint(rendered_dev) -> None:
    from hubctl.plan import kubernetes_object, redacted_value

    record = next(r for r in rendered_dev.records if r.type == "kubernetes:core/v1:Secret"
                  and isinstance(unwrap(r.inputs).get("data"), dict))
    key = sorted(unwrap(record.inputs)["data"])[0]
    before = kubernetes_object(record)["data"][key]
    assert before == redacted_value(unwrap(record.inputs)["data"][key], True)
    assert redacted_value("another value", True) != before


def test_secret_outputs_are_redacted(plan_dir: Path, rendered_dev) -> None:
    outputs = json.loads((plan_dir / "plan.json").read_text())["outputs"]
    assert set(outputs) == set(rendered_dev.raw_outputs)
    assert not [n for n, v in outputs.items() if v == "[secret]"], "the hub exports nothing secret at all"
    # so no output may carry a key, a kubeconfig's key data or a join token, and each is written as it is
    for name, raw in rendered_dev.raw_outputs.items():
        text = json.dumps(raw)
        assert "PRIVATE KEY" not in text and "client-key-data" not in text and not TOKEN.search(text), name
        assert outputs[name] == raw, name


def test_assert_no_secrets_guard() -> None:
    secret = "s3cr3t-value-that-must-not-leak"
    assert_no_secrets({"plan.json": '{"a": "[secret]"}'}, [secret])
    with pytest.raises(SecretLeak, match=r"plan\.json"):
        assert_no_secrets({"plan.json": f'{{"a": "{secret}"}}'}, [secret])
    with pytest.raises(SecretLeak, match=r"cloud-init/x\.yaml"):
        encoded = base64.b64encode(secret.encode()).decode()
        assert_no_secrets({"ok.yaml": "fine", "cloud-init/x.yaml": f"content: {encoded}\n"}, [secret])
    with pytest.raises(SecretLeak, match="private key"):
        assert_no_secrets({"m.yaml": "-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----\n"}, [])


def test_render_refuses_a_plan_that_would_leak(rendered_dev, monkeypatch) -> None:
    """The writer runs the guard: a secret value that reached a file aborts the render."""
    from hubctl import plan as plan_mod

    api = rendered_dev.raw_outputs["hubApiEndpoint"]
    monkeypatch.setattr(rendered_dev, "secret_values", {*rendered_dev.secret_values, api})
    with pytest.raises(SecretLeak):
        plan_mod.render_files(rendered_dev)


# ----------------------------------------------------------------------------------------------- diff


@pytest.fixture(scope="module")
def five_server_plan(tmp_path_factory: pytest.TempPathFactory, fixed_epoch: str) -> Path:
    """The dev stack with hub.servers 3 -> 5, planned from a copy of the program (URNs keep stack `dev`)."""
    repo = copy_program(tmp_path_factory.mktemp("repo5") / "repo")
    stack = repo / "stacks" / "Pulumi.dev.yaml"
    doc = yaml.safe_load(stack.read_text())
    assert doc["config"]["karmada-hub:hub"]["servers"] == 3
    doc["config"]["karmada-hub:hub"]["servers"] = 5
    doc["config"]["karmada-hub:karmada"]["replicas"]["apiserver"] = 5  # one per server (config.py says why)
    stack.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = tmp_path_factory.mktemp("plan-5")
    result = subprocess.run([sys.executable, "-m", "hubctl", "plan", "dev", "--out", str(out), "--quiet"], cwd=repo,
                            capture_output=True, text=True, timeout=300,
                            env=program_env(HUBCTL_PLAN_EPOCH=fixed_epoch))
    assert result.returncode == 0, result.stderr
    return out / "dev"


def test_diff_reports_added_servers_and_changes(plan_dir: Path, five_server_plan: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "hubctl", "diff", str(plan_dir), str(five_server_plan)],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    md = result.stdout
    old = {r["urn"]: r for r in json.loads((plan_dir / "plan.json").read_text())["resources"]}
    new = {r["urn"]: r for r in json.loads((five_server_plan / "plan.json").read_text())["resources"]}
    added = set(new) - set(old)
    added_servers = sorted(new[u]["inputs"]["name"] for u in added if new[u]["type"] == "hcloud:index/server:Server")
    assert len(added_servers) == 2
    assert md.startswith("### karmada-hub plan diff: `dev`\n")
    assert f" · {len(added)} to add · " in md and f"({len(old)} → {len(new)} resources)" in md
    # two more hub servers are two more nameservers: the nameservers' configuration and the controller's copy of
    # the zone change, and a ConfigMap's data is replaced; nothing else goes
    removals = md.split("#### Removals and replacements", 1)[1].split("\n#### ", 1)[0]
    replaced = sorted(line for line in removals.splitlines() if line.startswith("- ") and "ConfigMap" in line)
    assert len(replaced) == 2 and all("knot" in line or "traffic-failover-zone" in line for line in replaced), removals
    assert "Server" not in removals and "Secret" not in removals
    section = md.split("##### HubCluster hub", 1)[1]
    for name in added_servers:
        assert f"`Server {name}`" in section
    # the readiness gate now waits for the two new servers too: a state-only dependency change
    gate = section.split("`readiness gate hub-api-ready`", 1)
    assert len(gate) == 2 and "state only" in section.split("`readiness gate hub-api-ready`")[0].rsplit("- ", 1)[1]
    assert "`dependsOn[" in gate[1] and "Server hub-server-3" in gate[1]
    as_json = subprocess.run([sys.executable, "-m", "hubctl", "diff", "--json", str(plan_dir), str(five_server_plan)],
                             cwd=REPO, capture_output=True, text=True, timeout=120)
    doc = json.loads(as_json.stdout)
    assert doc["counts"]["create"] == len(added) and doc["counts"]["delete"] == 0


def test_diff_of_identical_plans_says_no_changes(plan_dir: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "hubctl", "diff", str(plan_dir), str(plan_dir / "plan.json")],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "**0 to remove · 0 to replace · 0 to add · 0 to update" in result.stdout
    assert "No changes." in result.stdout


@pytest.mark.parametrize(("content", "expected"), [
    (b"not json", "not a plan file (not JSON: Expecting value at line 1, column 1)"),
    (b"\xff\xfe", "not a plan file (not UTF-8 text: byte 0)"),
    (b'{"resources": "x"}', "not a plan file (no `resources` list; it is written by `hubctl plan`)"),
    (b'{"resources": [1]}', "not a plan file (resources[0] has no urn and type)"),
])
def test_diff_of_a_file_that_is_not_a_plan_is_one_line(tmp_path: Path, content: bytes, expected: str) -> None:
    bad = tmp_path / "plan.json"
    bad.write_bytes(content)
    result = subprocess.run([sys.executable, "-m", "hubctl", "diff", str(bad), str(bad)], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [f"error: {bad}: {expected}"]
    missing = subprocess.run([sys.executable, "-m", "hubctl", "diff", str(tmp_path / "nope"), str(bad)], cwd=REPO,
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and missing.stderr.splitlines() == [
        f"error: {tmp_path / 'nope'}: no such file (run `hubctl plan <stack>` first)"]

"""`hubctl kubeconfig <stack> karmada|host [--break-glass]`: an admin kubeconfig, read from the hub stack's own state.

By default the operators' everyday identity (components/trust/operators.py: a group bound by one
ClusterRoleBinding, revocable); with `--break-glass` the program's own `system:masters` identity, which nothing
can revoke before it expires.


The hub exports no admin credential (every output of a hub stack is copied into each region stack's state by its
StackReference). The program's own admin kubeconfigs live in the hub's state only, as the readiness gates'
outputs (`karmada-apiserver-ready`, `hub-api-ready`), which `pulumi stack export --show-secrets` decrypts for
whoever may decrypt that stack. The server becomes the stack's public endpoint (the DNS name) when it has one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from hubctl.errors import UserError as ConfigError

GATES = {"karmada": ("karmada-apiserver-ready", "karmadaApiEndpoint"), "host": ("hub-api-ready", "hubApiEndpoint")}
_SECRET_KEY = "4dabf18193072939515e22adb298388d"


def _plain(value: Any, what: str) -> Any:
    if isinstance(value, dict) and _SECRET_KEY in value:
        if "plaintext" not in value:
            raise ConfigError(f"{what} is encrypted in this export: run `pulumi stack export --show-secrets`")
        try:
            return json.loads(value["plaintext"])
        except (TypeError, json.JSONDecodeError):
            raise ConfigError(f"{what} in this export is not a secret `pulumi stack export` wrote") from None
    return value


def admin_kubeconfig(export: dict[str, Any], api: str) -> str:
    """The admin kubeconfig for `api` from a `pulumi stack export --show-secrets` document."""
    gate_name, endpoint_output = GATES[api]
    resources = [r for r in (export.get("deployment") or {}).get("resources") or [] if isinstance(r, dict)]
    gates = [r for r in resources if r.get("type") == "pulumi-python:dynamic:Resource"
             and str(r.get("urn", "")).endswith(f"::{gate_name}")]
    if len(gates) != 1:
        raise ConfigError(f"this is not a hub stack's state (no {gate_name} resource); use the hub or all-in-one "
                          "stack")
    text = _plain((gates[0].get("outputs") or {}).get("kubeconfig"), f"{gate_name}.kubeconfig")
    try:
        config = yaml.safe_load(text) if isinstance(text, str) else None
    except yaml.YAMLError:
        config = None
    if not isinstance(config, dict) or not isinstance(config.get("clusters"), list) or not config["clusters"]:
        raise ConfigError(f"this export's {gate_name} resource holds no kubeconfig output (an export from before its "
                          "first successful `pulumi up`, or a partial one); export the hub stack again after `up`")
    stack = next((r for r in resources if r.get("type") == "pulumi:pulumi:Stack"), {})
    endpoint = _plain((stack.get("outputs") or {}).get(endpoint_output), endpoint_output)
    if isinstance(endpoint, str) and endpoint.startswith("https://") and isinstance(
            config["clusters"][0].get("cluster"), dict):
        config["clusters"][0]["cluster"]["server"] = endpoint
    return yaml.safe_dump(config, sort_keys=False)


def check_stack(repo: Path, stack: str, from_file: bool = False) -> None:
    """Before anything slow: a stack of this checkout that is a region stack has no admin credential (its hub has
    it), and without `--from-file` the Pulumi CLI must be there."""
    from components.kube import safeyaml

    name = stack.rsplit("/", 1)[-1]
    path = Path(repo) / "stacks" / f"Pulumi.{name}.yaml"
    if path.is_file():
        try:
            config = (safeyaml.load(path.read_bytes()) or {}).get("config") or {}
        except (OSError, AttributeError, safeyaml.YamlRefused):
            config = {}
        role = config.get("karmada-hub:role", config.get("role")) if isinstance(config, dict) else None
        if role == "region":
            raise ConfigError(f"{stack}: a region stack has no admin kubeconfig; ask its hub stack (hubStack.stack "
                              f"in stacks/Pulumi.{name}.yaml)")
    if not from_file and shutil.which("pulumi") is None:
        raise ConfigError("the Pulumi CLI is not installed (https://www.pulumi.com/docs/install/); it runs `pulumi "
                          "stack export`, or pass --from-file with an export made elsewhere")


def read_export(path: Any) -> dict[str, Any]:
    """A `pulumi stack export --show-secrets` file; anything else is one user error naming the file."""
    try:
        value = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not a pulumi stack export (not UTF-8 text: byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not a pulumi stack export (not JSON: {exc.msg} at line {exc.lineno}); write "
                          "one with `pulumi stack export --show-secrets --stack <hub stack> > FILE`") from None
    if not isinstance(value, dict) or not isinstance(value.get("deployment"), dict):
        raise ConfigError(f"{path}: not a pulumi stack export (no `deployment` section); write one with "
                          "`pulumi stack export --show-secrets --stack <hub stack> > FILE`")
    return value


def _resource(resources: list[dict[str, Any]], typ: str, name: str) -> dict[str, Any]:
    found = [r for r in resources if r.get("type") == typ and str(r.get("urn", "")).endswith(f"::{name}")]
    if len(found) != 1:
        raise ConfigError(f"this hub stack's state has no {name} (up the hub stack with this version first, or use "
                          "--break-glass)")
    return found[0]


def operator_kubeconfig(export: dict[str, Any], api: str) -> str:
    """The operators' kubeconfig for `api`: the admin kubeconfig's cluster, the operator certificate and key."""
    config = yaml.safe_load(admin_kubeconfig(export, api))
    resources = (export.get("deployment") or {}).get("resources") or []
    name = f"operator-{api}"
    cert = _plain((_resource(resources, "tls:index/locallySignedCert:LocallySignedCert", name).get("outputs") or {})
                  .get("certPem"), f"{name}.certPem")
    key = _plain((_resource(resources, "tls:index/privateKey:PrivateKey", f"{name}-key").get("outputs") or {})
                 .get("privateKeyPem"), f"{name}-key.privateKeyPem")
    import base64

    config["users"][0]["user"] = {"client-certificate-data": base64.b64encode(str(cert).encode()).decode(),
                                  "client-key-data": base64.b64encode(str(key).encode()).decode()}
    return yaml.safe_dump(config, sort_keys=False)


def export_stack(stack: str) -> dict[str, Any]:
    try:
        result = subprocess.run(["pulumi", "stack", "export", "--show-secrets", "--stack", stack],
                                capture_output=True, text=True, timeout=300, check=False)
    except FileNotFoundError:
        raise ConfigError("the Pulumi CLI is not installed (pulumi stack export)") from None
    if result.returncode != 0:
        raise ConfigError(f"pulumi stack export --stack {stack} failed: {result.stderr.strip().splitlines()[-1:]}")
    return json.loads(result.stdout)

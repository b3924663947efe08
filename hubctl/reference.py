"""The configuration reference and the stack-file JSON Schema, generated from `components/config.py`.

`hubctl docs` writes `docs/configuration.md` (every key with its type, default, limits and description) and
`docs/stack.schema.json` (what editors use through the `# yaml-language-server: $schema=` line at the top of
each stack file). Both come from the pydantic models' own JSON Schema, so the reference, the editor and the
validator cannot disagree; `tests/test_reference.py` regenerates them and compares.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from components.config import PROJECT, FleetConfig
from hubctl.errors import EXIT_FINDINGS, EXIT_OK
from hubctl.output import Output

REFERENCE = Path("docs") / "configuration.md"
SCHEMA = Path("docs") / "stack.schema.json"
MODELINE = "# yaml-language-server: $schema=../docs/stack.schema.json"
"""First line of every stack file (a path relative to the stack file, as yaml-language-server resolves it)."""
OTHER_NAMESPACES = ("pulumi", "hcloud", "kubernetes", "tls", "random")
SECRET_DEFAULTS = {
    "capiKubeconfig": "kubeconfig of the Cluster API management cluster (`capi.kubeconfigConfigKey`)",
    "hetznerDnsToken": "Hetzner API token of external-dns (`dns.tokenConfigKey`)",
    "etcdBackupAccessKey": "object-storage access key of the etcd backups (`karmada.etcd.backup.accessKeyConfigKey`)",
    "etcdBackupSecretKey": "object-storage secret key of the etcd backups (`karmada.etcd.backup.secretKeyConfigKey`)",
    "etcdBackupEncryptionKey": "key every etcd snapshot is encrypted with, at least 32 characters, e.g. `openssl rand "
                               "-base64 32`; keep a copy off the hub (`karmada.etcd.backup.encryptionKeyConfigKey`)",
}


# ------------------------------------------------------------------------------------------ schema


def _clean(node: Any) -> Any:
    """Drop pydantic's generated per-property titles ("Sshcidrs"); keep model titles."""
    if isinstance(node, dict):
        out = {k: _clean(v) for k, v in node.items() if k != "title" or "properties" in node}
        return out
    if isinstance(node, list):
        return [_clean(v) for v in node]
    return node


def model_schema() -> dict[str, Any]:
    schema = _clean(FleetConfig.model_json_schema(by_alias=True, mode="validation"))
    schema["properties"].pop("secrets", None)
    return schema


def stack_schema() -> dict[str, Any]:
    """The JSON Schema of `stacks/Pulumi.<stack>.yaml`: Pulumi's stack-file shape around FleetConfig's keys."""
    model = model_schema()
    defs = model.pop("$defs")
    defs["secure"] = {
        "type": "object", "description": "A stack secret: `pulumi config set --secret <key> <value>` writes it.",
        "properties": {"secure": {"type": "string", "description": "ciphertext of the stack's secrets provider"}},
        "required": ["secure"], "additionalProperties": False,
    }
    keys = list(model["properties"])
    properties: dict[str, Any] = {}
    for key, prop in model["properties"].items():
        properties[f"{PROJECT}:{key}"] = prop
        properties[key] = {"$ref": f"#/properties/config/properties/{PROJECT}:{key}"}
    not_a_key = "|".join(keys)
    config = {
        "type": "object",
        "description": f"`{PROJECT}:<key>` (or `<key>`) values, provider settings, and stack secrets.",
        "properties": properties,
        "patternProperties": {
            f"^({'|'.join(OTHER_NAMESPACES)}):": {"description": "a Pulumi or provider setting"},
            f"^({PROJECT}:)?(?!({not_a_key})$)[a-zA-Z][a-zA-Z0-9]*$": {"$ref": "#/$defs/secure"},
        },
        "additionalProperties": False,
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "karmada-hub stack file (stacks/Pulumi.<stack>.yaml)",
        "description": "Generated from components/config.py by `hubctl docs`; do not edit.",
        "type": "object",
        "properties": {
            "config": config,
            "secretsprovider": {"type": "string"}, "encryptedkey": {"type": "string"},
            "encryptionsalt": {"type": "string"}, "environment": {},
        },
        "additionalProperties": False,
        "$defs": defs,
    }


# ------------------------------------------------------------------------------------------ reference


def _ref_name(node: dict[str, Any]) -> str | None:
    ref = node.get("$ref")
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


def _type(node: dict[str, Any]) -> str:
    name = _ref_name(node)
    if name:
        return f"[{name}](#{name.lower()})"
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
    for combinator in ("oneOf", "anyOf"):
        if combinator in node:
            parts = [_type(n) for n in node[combinator] if n.get("type") != "null"]
            nullable = any(n.get("type") == "null" for n in node[combinator])
            text = " or ".join(dict.fromkeys(parts))
            return f"{text} (optional)" if nullable else text
    kind = node.get("type")
    if isinstance(kind, list):  # a value YAML may write two ways (a quantity: "40" or 40)
        return " or ".join(_type({**node, "type": k}) for k in kind)
    if kind == "array":
        return f"list of {_type(node.get('items') or {})}"
    if kind == "object":
        if "patternProperties" in node:
            (value,) = node["patternProperties"].values()
            return f"map of name to {_type(value)}"
        if isinstance(node.get("additionalProperties"), dict):
            return f"map of string to {_type(node['additionalProperties'])}"
        return "map"
    fmt = node.get("format")
    if fmt in ("ipv4network", "ipv6network"):
        return f"{fmt[:4].upper()}{fmt[4:]} network".replace("IPV4network", "IPv4").replace("IPV6network", "IPv6")
    return {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean"}.get(str(kind), "any")


def _limits(node: dict[str, Any]) -> str:
    parts = []
    for key, label in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<")):
        if key in node:
            parts.append(f"{label} {node[key]}")
    if node.get("not") == {"multipleOf": 2}:
        parts.append("odd")
    if "minLength" in node or "maxLength" in node:
        parts.append(f"{node.get('minLength', 0)}..{node.get('maxLength', '∞')} characters")
    if "minItems" in node:
        parts.append(f"at least {node['minItems']} item{'s' if node['minItems'] != 1 else ''}")
    if "pattern" in node:
        parts.append(f"matches `{node['pattern']}`")
    for combinator in ("anyOf", "oneOf"):
        for sub in node.get(combinator) or []:
            inner = _limits(sub)
            if inner:
                parts.append(inner)
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        inner = _limits(node["items"])
        if inner:
            parts.append(f"each {inner}")
    if node.get("type") == "object" and "patternProperties" in node:
        (pattern,) = node["patternProperties"]
        parts.append(f"names match `{pattern}`")
    return "; ".join(parts)


def _default(node: dict[str, Any], required: bool) -> str:
    if required:
        return "**required**"
    if "default" not in node:
        return "—"
    value = node["default"]
    if value in ({}, []):
        return "empty"
    if value is None:
        return "unset"
    text = json.dumps(value)
    return f"`{text}`" if len(text) <= 40 else "the defaults below"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _table(name: str, node: dict[str, Any], prefix: str) -> list[str]:
    lines = [f"### {name}", ""]
    if node.get("description"):
        lines += [_cell(node["description"]), ""]
    if prefix:
        lines += [f"Under `{prefix}`.", ""]
    lines += ["| key | type | default | limits | description |", "| --- | --- | --- | --- | --- |"]
    required = set(node.get("required") or [])
    for key, prop in (node.get("properties") or {}).items():
        lines.append(f"| `{key}` | {_cell(_type(prop))} | {_cell(_default(prop, key in required))} | "
                     f"{_cell(_limits(prop))} | {_cell(prop.get('description', ''))} |")
    return [*lines, ""]


def _where_used(defs: dict[str, Any], root: dict[str, Any]) -> dict[str, str]:
    """model -> the first key path it appears under (for the 'Under `hub.firewall`' lines)."""
    found: dict[str, str] = {}

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            name = _ref_name(node)
            if name and name not in found:
                found[name] = path
                walk(defs[name], path)
                return
            for key, value in node.items():
                if key == "properties" and isinstance(value, dict):
                    for prop, sub in value.items():
                        walk(sub, f"{path}.{prop}" if path else prop)
                elif key in ("items", "anyOf", "oneOf", "additionalProperties"):
                    walk(value, f"{path}[]" if key == "items" else path)
                elif key == "patternProperties" and isinstance(value, dict):
                    for sub in value.values():
                        walk(sub, f"{path}.<name>")
        elif isinstance(node, list):
            for item in node:
                walk(item, path)

    walk(root, "")
    return found


def reference_markdown() -> str:
    model = model_schema()
    defs = model["$defs"]
    used = _where_used(defs, model)
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated from components/config.py by `hubctl docs`; edit the models, not this file. -->",
        "",
        f"A stack file (`stacks/Pulumi.<stack>.yaml`) sets `{PROJECT}:<key>` values under `config:`. Unknown keys are",
        "refused with a one-line error that names the file, the key and the nearest known key. Editors complete",
        "and check stack files through [stack.schema.json](stack.schema.json) (the first line of each stack file is",
        f"`{MODELINE}`). Rules that involve several keys (etcd quorum against",
        "`hub.servers`, member regions, quota sums, the failover budget against `failover.rtoSeconds`, version skew)",
        "are checked by `hubctl plan` and `pulumi preview` alike before anything is created.",
        "",
        "## Stack secrets",
        "",
        "Secrets are never written in plain text: `pulumi config set --secret <key> <value>` stores them encrypted",
        "(`<key>: {secure: ...}`). The config refers to them by name; these are the default names:",
        "",
        "| key | holds |",
        "| --- | --- |",
        *[f"| `{PROJECT}:{key}` | {what} |" for key, what in SECRET_DEFAULTS.items()],
        "",
        "A member with `credentials: {source: secret, configKey: <key>}` reads its kubeconfig from the stack secret",
        f"`{PROJECT}:<key>`. Provider credentials (`hcloud:token`) are refused in plain text too.",
        "",
        "## Writing the keys",
        "",
        f"A key without a namespace is this project's: `hub:` is `{PROJECT}:hub` (Pulumi reads a stack file the same",
        "way; hubctl refuses a file that sets both). Keys of other namespaces configure a provider or the engine;",
        "the example stacks set `pulumi:disable-default-providers: [\"kubernetes\"]` (every Kubernetes resource",
        "names one of the program's own providers, never the ambient kubeconfig) and `hcloud:pollInterval` (how",
        "often the hcloud provider polls Hetzner actions). Structured keys can be set from the command line with",
        f"`--path`: `pulumi config set --path '{PROJECT}:hub.servers' 5`,",
        f"`pulumi config set --path '{PROJECT}:members[0].zones[0]' fsn1`.",
        "",
        "## Keys",
        "",
        *_table("FleetConfig", model, "")[2:],
        "## Sections",
        "",
    ]
    for name in sorted(defs, key=lambda n: (used.get(n, "~"), n)):
        lines += _table(name, defs[name], used.get(name, ""))
    return "\n".join(lines).rstrip("\n") + "\n"


# ------------------------------------------------------------------------------------------ files


def rendered() -> dict[Path, str]:
    return {REFERENCE: reference_markdown(), SCHEMA: json.dumps(stack_schema(), indent=2) + "\n"}


def write_or_check(repo: Path, check: bool = False, out: Output | None = None) -> int:
    out = out or Output()
    stale = []
    for rel, text in rendered().items():
        path = repo / rel
        current = path.read_text() if path.is_file() else None
        if current == text:
            continue
        stale.append(str(rel))
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if check and stale:
        out.text(f"out of date: {', '.join(stale)} (run `hubctl docs`)")
        return EXIT_FINDINGS
    out.text("up to date" if not stale else f"wrote {', '.join(stale)}")
    return EXIT_OK

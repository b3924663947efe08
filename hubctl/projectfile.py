"""The project file's config declarations (`Pulumi.yaml` `config:`), applied to a stack file as the Pulumi CLI does.

The mock runtime never reads `Pulumi.yaml`, so without this room a declaration the CLI enforces would first bite at
the first real `pulumi preview`. The rules, from pulumi/pulumi `sdk/go/common/workspace`:

- `project.go` `(*Project).Validate`: a key has at most one of `default` and `value`; a typed `array` names its
  `items`; a typed key's `default` is of its type; a key in another namespace (`hcloud:…`) has no type and no
  default, only a `value`;
- `config.go` `mergeConfig`: a key of the project's namespace with neither `default` nor `value` must be set in
  the stack file (`Stack 'dev' is missing configuration value 'region'`); a key the stack leaves unset gets its
  `default` (or `value`), which is what the program then reads;
- `config.go` `validateStackConfigValue`: a typed key declared `secret: true` must be a `secure:` value in the
  stack (a plain default of a secret key fails here too), and the value must be of the declared type
  (`ValidateConfigValue`: a scalar is a string; `integer` parses as one, `boolean` is `true`/`false`, an
  `array` is a YAML list whose items are of `items`' type).

So a key only some stacks need (a role's, a feature's) is not declared without a default: `components/config.py`
validates it instead, with the stack's role and features at hand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.config import PROJECT, ConfigError
from components.kube import safeyaml

PROJECT_FILE = "Pulumi.yaml"
TYPES = ("string", "integer", "boolean", "array")
"""What a project config declaration's `type` may be (structured config has no schema)."""


@dataclass(frozen=True)
class Declaration:
    """One entry of `Pulumi.yaml` `config:`."""

    key: str
    """Namespaced: `karmada-hub:role`, `hcloud:pollInterval`."""
    type: str | None = None
    items: dict[str, Any] | None = None
    secret: bool = False
    default: Any = None
    value: Any = None
    has_default: bool = False
    has_value: bool = False

    @property
    def required(self) -> bool:
        """The CLI refuses a stack file without it (mergeConfig's `missingConfigurationKeys`)."""
        return self.key.startswith(f"{PROJECT}:") and not (self.has_default or self.has_value)

    @property
    def type_name(self) -> str:
        """`InferFullTypeName`: `array<string>` for an array of strings."""
        return _type_name(self.type or "", self.items)


def _type_name(type_name: str, items: dict[str, Any] | None) -> str:
    if items is None:
        return type_name
    return f"array<{_type_name(str(items.get('type')), items.get('items'))}>"


@dataclass(frozen=True)
class Project:
    path: str
    declarations: tuple[Declaration, ...] = field(default=())


def _namespaced(key: str) -> str:
    return key if ":" in key else f"{PROJECT}:{key}"


def valid_value(type_name: str, items: dict[str, Any] | None, value: Any) -> bool:
    """pulumi `ValidateConfigValue` on a value as the engine holds it (a scalar as its string, a list as a list)."""
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "integer":
        if isinstance(value, bool):
            return False
        if isinstance(value, int):
            return True
        if isinstance(value, float):
            return math.isfinite(value) and value == math.trunc(value)
        if isinstance(value, str):
            try:
                int(value, 10)
            except ValueError:
                return False
            return True
        return False
    if type_name == "boolean":
        return isinstance(value, bool) or value in ("true", "false")
    if not isinstance(value, list) or items is None:
        return False
    return all(valid_value(str(items.get("type")), items.get("items"), item) for item in value)


def load_project(repo: Path) -> Project | None:
    """`Pulumi.yaml`'s declarations, checked as `(*Project).Validate` checks them; None without a project file."""
    path = repo / PROJECT_FILE
    if not path.is_file():
        return None
    try:
        doc = safeyaml.load(path.read_bytes())
    except (OSError, safeyaml.YamlRefused) as exc:
        raise ConfigError(f"{PROJECT_FILE}: {exc}") from None
    raw = (doc or {}).get("config") or {} if isinstance(doc, dict) else {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{PROJECT_FILE}: config: must be a mapping of keys to declarations")
    declarations = []
    for name, spec in raw.items():
        key = _namespaced(str(name))
        where = f"{PROJECT_FILE}: config.{name}"
        if not isinstance(spec, dict):  # `key: value` is shorthand for `key: {value: value}`
            spec = {"value": spec}
        unknown = set(spec) - {"type", "items", "secret", "default", "value", "description"}
        if unknown:
            raise ConfigError(f"{where}: unknown attribute {sorted(unknown)[0]} (a declaration has type, items, "
                              "secret, default, value, description)")
        decl = Declaration(key=key, type=spec.get("type"), items=spec.get("items"), secret=bool(spec.get("secret")),
                           default=spec.get("default"), value=spec.get("value"), has_default="default" in spec,
                           has_value="value" in spec)
        if decl.has_default and decl.has_value:
            raise ConfigError(f"{where}: has both default and value; the Pulumi CLI refuses the project, keep one")
        if key.startswith(f"{PROJECT}:"):
            if decl.type is not None and decl.type not in TYPES:
                raise ConfigError(f"{where}: type {decl.type!r} is not one of {', '.join(TYPES)} (structured keys "
                                  "are not declared; components/config.py validates them)")
            if decl.type == "array" and decl.items is None:
                raise ConfigError(f"{where}: an array declares its items' type (items: {{type: string}})")
            if decl.type is not None and decl.has_default and not valid_value(decl.type, decl.items, decl.default):
                raise ConfigError(f"{where}: the default is not of type {decl.type_name}")
        else:
            if decl.type is not None or decl.has_default:
                raise ConfigError(f"{where}: a key outside the {PROJECT} namespace takes only a value (no type, no "
                                  "default)")
            if not decl.has_value:
                raise ConfigError(f"{where}: a key outside the {PROJECT} namespace must give a value")
        declarations.append(decl)
    return Project(path=PROJECT_FILE, declarations=tuple(sorted(declarations, key=lambda d: d.key)))


def check_stack(project: Project, stack: str, rel: str, raw: dict[str, Any]) -> None:
    """Raise ConfigError (one line naming the stack file, the key and the fix) where the Pulumi CLI would refuse
    this stack. `raw`: the stack file's `config:` with namespaced keys, values as written (`{secure: …}` kept)."""
    missing = [d for d in project.declarations if d.required and d.key not in raw]
    if missing:
        names = ", ".join(d.key for d in missing)
        first = missing[0].key.split(":", 1)[1]
        secret = "--secret " if missing[0].secret else ""
        raise ConfigError(
            f"{rel}: {names}: {PROJECT_FILE} declares {'it' if len(missing) == 1 else 'them'} without a default, so "
            f"the Pulumi CLI refuses this stack (\"Stack '{stack}' is missing configuration value\"): set "
            f"{'it' if len(missing) == 1 else 'each'} here (pulumi config set {secret}{first} <value>)"
            f", or, if only some stacks need it, give its declaration a default or remove it (and let "
            "components/config.py require it where it is needed)")
    for decl in project.declarations:
        if decl.type is None or not decl.key.startswith(f"{PROJECT}:"):
            continue
        present = decl.key in raw
        value = raw[decl.key] if present else (decl.default if decl.has_default else decl.value)
        secure = isinstance(value, dict) and set(value) == {"secure"}
        if decl.secret and not secure:
            where = "" if present else f" (its {PROJECT_FILE} default is plain text)"
            raise ConfigError(f"{rel}: {decl.key}: {PROJECT_FILE} declares it secret, so the Pulumi CLI refuses a "
                              f"plain value{where}: pulumi config set --secret {decl.key.split(':', 1)[1]} <value>")
        if secure:
            continue  # its type is checked on the decrypted value, which needs the passphrase
        shown = value if isinstance(value, (list, dict)) else ("" if value is None else _as_engine_string(value))
        if not valid_value(decl.type, decl.items, shown):
            raise ConfigError(f"{rel}: {decl.key}: must be of type {decl.type_name}: write one {decl.type_name} "
                              f"value here ({PROJECT_FILE} declares the type and the Pulumi CLI checks it)")


def _as_engine_string(value: Any) -> str:
    """A YAML scalar as the engine holds it: config values are strings (`true`, `3`), objects are JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def defaults(project: Project, raw: dict[str, Any]) -> dict[str, Any]:
    """The project's defaults (or values) for the keys this stack leaves unset: what the engine adds."""
    out = {}
    for decl in project.declarations:
        if decl.key in raw:
            continue
        if decl.has_default:
            out[decl.key] = decl.default
        elif decl.has_value:
            out[decl.key] = decl.value
    return out

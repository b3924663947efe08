"""Reading `stacks/Pulumi.<stack>.yaml` the way the Pulumi CLI hands it to the program, without the CLI.

Structured values become JSON strings (as the engine passes them), `secure:` values become
placeholders (the offline plan never has the passphrase), and keys outside `karmada-hub:` are kept
so provider settings stay visible to the program.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.config import PROJECT, ConfigError


@dataclass(frozen=True)
class StackConfig:
    stack: str
    path: Path
    config: dict[str, str]
    """`namespace:key` -> value as the engine would pass it (JSON for structured values)."""
    secret_keys: tuple[str, ...]

    def project_values(self) -> tuple[dict[str, Any], frozenset[str]]:
        """`karmada-hub:*` keys without the prefix, decoded, and which of them are secret."""
        prefix = f"{PROJECT}:"
        raw = {k[len(prefix):]: _decode(v) for k, v in self.config.items() if k.startswith(prefix)}
        secrets = frozenset(k[len(prefix):] for k in self.secret_keys if k.startswith(prefix))
        return raw, secrets


def placeholder(key: str) -> str:
    return f"offline-placeholder-for-{key.split(':', 1)[-1]}"


def stack_file(repo: Path, stack: str) -> Path:
    return repo / "stacks" / f"Pulumi.{stack}.yaml"


def read_stack(repo: Path, stack: str) -> StackConfig:
    path = stack_file(repo, stack)
    rel = f"stacks/Pulumi.{stack}.yaml"
    if not path.is_file():
        known = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (repo / "stacks").glob("Pulumi.*.yaml"))
        raise ConfigError(f"{rel}: no such stack file (stacks: {', '.join(known)})")
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{rel}: not valid YAML: {str(exc).splitlines()[0]}") from None
    raw = doc.get("config") or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{rel}: config: must be a mapping of keys to values")
    config: dict[str, str] = {}
    secrets: list[str] = []
    for key, value in raw.items():
        key = str(key)
        if ":" not in key:
            key = f"{PROJECT}:{key}"
        if isinstance(value, dict) and set(value) == {"secure"}:
            config[key] = placeholder(key)
            secrets.append(key)
        elif isinstance(value, str):
            config[key] = value
        else:
            config[key] = json.dumps(value)
    return StackConfig(stack=stack, path=path, config=config, secret_keys=tuple(sorted(secrets)))


def _decode(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value

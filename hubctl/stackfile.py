"""Reading `stacks/Pulumi.<stack>.yaml` the way the Pulumi CLI hands it to the program, without the CLI.

Structured values become JSON strings (as the engine passes them), `secure:` values become
placeholders (the offline plan never has the passphrase), and keys outside `karmada-hub:` are kept
so provider settings stay visible to the program. The file is read with bounds (`components/kube/safeyaml.py`);
typos in top-level keys, namespaces and secure values are refused rather than silently ignored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.config import OFFLINE_PLACEHOLDER, PROJECT, ConfigError
from components.kube import safeyaml
from hubctl import projectfile


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
    return f"{OFFLINE_PLACEHOLDER}{key.split(':', 1)[-1]}"


def stack_file(repo: Path, stack: str) -> Path:
    return repo / "stacks" / f"Pulumi.{stack}.yaml"


STACK_FILE_KEYS = ("config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment")
"""Top-level keys of a Pulumi stack file (pulumi sdk/go/common/workspace/project.go ProjectStack)."""
NAMESPACES = (PROJECT, "pulumi", "hcloud", "kubernetes", "tls", "random")
"""Config namespaces this program (or a provider it uses) reads; anything else would be silently ignored."""
PLAIN_CREDENTIALS = ("hcloud:token", "kubernetes:kubeconfig")
DISABLE_DEFAULT_PROVIDERS = "pulumi:disable-default-providers"
"""The engine reads it as a JSON list of strings and fails on anything else ("Failed to parse ...": pulumi/pulumi
pkg/resource/deploy/default_providers.go, defaultProviders.shouldDenyRequest)."""
"""Provider settings that are credentials: refused in plain text (they would sit in git)."""


def _close(word: str, options: list[str] | tuple[str, ...]) -> str:
    import difflib

    match = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean {match[0]}?)" if match else ""


def stack_name(repo: Path, arg: str) -> str:
    """A stack as the user may name it: `dev`, or its file `stacks/Pulumi.dev.yaml` (a tab completion). A file
    outside stacks/ is refused: hubctl, like the Pulumi CLI, reads a stack's config from stacks/ only."""
    match = re.fullmatch(r"(?:(.*)[/\\])?Pulumi\.([A-Za-z0-9_.-]{1,100})\.ya?ml", arg)
    if match is None:
        return arg
    folder, name = match.groups()
    if folder is not None:
        try:
            inside = Path(folder).resolve() == (repo / "stacks").resolve()
        except OSError:
            inside = False
        if not inside:
            raise ConfigError(f"{arg[:200]}: hubctl reads stack files from stacks/ only (as Pulumi.yaml's "
                              f"stackConfigDir says); copy it to stacks/Pulumi.{name}.yaml and name the stack {name}")
    return name


def read_stack(repo: Path, stack: str) -> StackConfig:
    path = stack_file(repo, stack)
    rel = f"stacks/Pulumi.{stack}.yaml"
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", stack) or not path.is_file():
        known = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (repo / "stacks").glob("Pulumi.*.yaml"))
        shown = stack if re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", stack) else "<that name>"
        raise ConfigError(f"stacks/Pulumi.{shown}.yaml: no such stack file (stacks: {', '.join(known)})"
                          f"{_close(stack, known)}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{rel}: cannot read it ({exc.strerror})") from None
    try:
        doc = safeyaml.load(data)
    except safeyaml.YamlRefused as exc:
        raise ConfigError(f"{rel}: {exc}") from None
    doc = {} if doc is None else doc
    if not isinstance(doc, dict):
        raise ConfigError(f"{rel}: must be a mapping with a `config:` section (got a {type(doc).__name__})")
    for key in doc:
        if key not in STACK_FILE_KEYS:
            raise ConfigError(f"{rel}: {str(key)[:60]}: unknown top-level key{_close(str(key), STACK_FILE_KEYS)} "
                              f"(a stack file has {', '.join(STACK_FILE_KEYS)})")
    raw = doc.get("config") or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{rel}: config: must be a mapping of keys to values")
    config: dict[str, str] = {}
    secrets: list[str] = []
    written: dict[str, str] = {}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        shown = str(key)[:80]
        key = str(key)
        if ":" not in key:
            key = f"{PROJECT}:{key}"
        namespace = key.split(":", 1)[0]
        if namespace not in NAMESPACES:
            raise ConfigError(f"{rel}: {shown}: unknown config namespace '{namespace[:40]}'"
                              f"{_close(namespace, NAMESPACES)}; this program reads {', '.join(NAMESPACES)}")
        if key in written:
            raise ConfigError(f"{rel}: {key}: set twice (as {written[key]} and {shown}); keep one")
        written[key] = shown
        values[key] = value
        if isinstance(value, dict) and "secure" in value:
            if set(value) != {"secure"} or not isinstance(value["secure"], str) or not value["secure"].strip():
                raise ConfigError(f"{rel}: {key}: a secret is `secure: <ciphertext>` and nothing else; set it with "
                                  f"`pulumi config set --secret {key.split(':', 1)[1]} <value>`")
            config[key] = placeholder(key)
            secrets.append(key)
            continue
        if _has_nested_secure(value):
            raise ConfigError(f"{rel}: {key}: secure values nested inside a structured value are not read by this "
                              "program; keep secrets in their own keys (e.g. members[].credentials.configKey)")
        if key == DISABLE_DEFAULT_PROVIDERS and not (
                value in ("", None) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
            raise ConfigError(f"{rel}: {key}: must be a list of package names, like [\"kubernetes\"] (got "
                              f"{str(value)[:60]!r}); the Pulumi engine fails to parse anything else")
        if key in PLAIN_CREDENTIALS:
            raise ConfigError(f"{rel}: {key}: a credential in plain text would sit in git; remove it and run "
                              f"`pulumi config set --secret {key} <value>` (or export it in the environment)")
        config[key] = _engine_value(value)
    if not any(k.startswith(f"{PROJECT}:") for k in config):
        raise ConfigError(f"{rel}: config: sets no {PROJECT} keys (the file is empty or only has provider settings); "
                          "start from a copy of stacks/Pulumi.dev.yaml (all-in-one) or of the prod stacks")
    project = projectfile.load_project(repo)
    if project is not None:  # what the CLI refuses, and the defaults it adds, before the program runs
        projectfile.check_stack(project, stack, rel, values)
        config.update({k: _engine_value(v) for k, v in projectfile.defaults(project, values).items()})
    return StackConfig(stack=stack, path=path, config=config, secret_keys=tuple(sorted(secrets)))


def _engine_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _has_nested_secure(value: Any) -> bool:
    if isinstance(value, dict):
        return ("secure" in value and len(value) == 1) or any(_has_nested_secure(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_nested_secure(v) for v in value)
    return False


def _decode(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value

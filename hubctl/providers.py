"""Providers as the engine registers them, so the offline plan's graph has every node `pulumi up` has.

A resource without an explicit provider is managed by the engine's *default provider* for its package: the
engine registers it itself, before the first resource that needs it, as
`urn:pulumi:<stack>::<project>::pulumi:providers:<pkg>::default_<major>_<minor>_<patch>` (no parent), with the
stack's `<pkg>:*` config as its inputs plus the requested `version`, and every resource of the package then
waits for it (pulumi/pulumi pkg/resource/deploy/providers/provider.go `ProviderRequest.Name`,
pkg/resource/deploy/source_eval.go `newRegisterDefaultProviderEvent`). An explicit provider gets the `version`
its SDK requested added to its inputs (source_eval.go `RegisterResource`, `providers.SetProviderVersion`).
`pulumi:disable-default-providers` names packages that get no default provider; a resource of such a package
without an explicit one is an error, as under the engine.

The mock runtime does none of this, so `complete` adds it to the recorded registrations.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hubctl.mocks import SECRET_SIG

PROVIDER_TYPE_PREFIX = "pulumi:providers:"
DISABLE_KEY = "pulumi:disable-default-providers"
VERSION_KEY = "version"
"""`providers.versionKey`: the input that pins the provider plugin's version."""


class DefaultProviderDisabled(RuntimeError):
    """A resource needs the default provider of a package the stack disabled."""


def package(type_token: str) -> str:
    """`hcloud:index/server:Server` -> `hcloud`; `pulumi:pulumi:StackReference` -> `pulumi` (`tokens.Type.Package`)."""
    return type_token.split(":", 1)[0]


def default_name(version: str, plugin_download_url: str = "") -> str:
    """`ProviderRequest.Name()`: `default`, then `_<major>_<minor>_<patch>`, each pre-release and build part."""
    name = "default"
    if version:
        match = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+([0-9A-Za-z.-]+))?", version)
        if match is None:
            raise ValueError(f"not a semantic version: {version!r}")
        major, minor, patch, pre, build = match.groups()
        name += f"_{major}_{minor}_{patch}"
        for part in [*(pre.split(".") if pre else []), *(build.split(".") if build else [])]:
            name += f"_{part}"
    if plugin_download_url:
        raise NotImplementedError(f"the offline plan does not name default providers with a download URL "
                                  f"({plugin_download_url})")
    return name


def provider_urn(stack: str, project: str, pkg: str, name: str) -> str:
    return f"urn:pulumi:{stack}::{project}::{PROVIDER_TYPE_PREFIX}{pkg}::{name}"


def is_engine_default(urn: str) -> bool:
    """Whether `urn` is a default provider the engine registers itself (the program never does): top-level
    `pulumi:providers:<pkg>` named `default` or `default_<version>`."""
    parts = urn.split("::")
    return len(parts) == 4 and parts[2].startswith(PROVIDER_TYPE_PREFIX) and re.fullmatch(r"default(_\w+)?", parts[3]) \
        is not None


def disabled_packages(config: Mapping[str, str]) -> frozenset[str]:
    raw = config.get(DISABLE_KEY)
    if not raw:
        return frozenset()
    value = json.loads(raw) if raw.strip().startswith("[") else [raw]
    return frozenset(str(v) for v in value)


def package_config(config: Mapping[str, str], secret_keys: Sequence[str], pkg: str) -> dict[str, Any]:
    """The stack's `<pkg>:<key>` values, as the engine hands them to the provider (secret ones wrapped)."""
    prefix = f"{pkg}:"
    out: dict[str, Any] = {}
    for key, value in sorted(config.items()):
        if key.startswith(prefix) and key != DISABLE_KEY:
            out[key[len(prefix):]] = {**SECRET_SIG, "value": value} if key in secret_keys else value
    return out


def complete(records: list[Any], stack: str, project: str, config: Mapping[str, str],
             secret_keys: Sequence[str], record_type: Any) -> list[Any]:
    """`records` plus the default providers the engine would register, with every custom resource that has no
    explicit provider pointing at its package's default one, and explicit providers carrying their `version`.

    `record_type` builds a record (hubctl.plan.Record); records need `version` (what the SDK requested)."""
    disabled = disabled_packages(config)
    defaults: dict[str, Any] = {}
    for record in records:
        if record.type.startswith(PROVIDER_TYPE_PREFIX):
            if record.version and isinstance(record.inputs, dict):
                record.inputs = {**record.inputs, VERSION_KEY: record.version}
            continue
        if not record.custom or record.provider:
            continue
        pkg = package(record.type)
        if pkg in disabled:
            raise DefaultProviderDisabled(
                f"{record.urn} needs the default provider of '{pkg}', which {DISABLE_KEY} turns off")
        name = default_name(record.version)
        urn = provider_urn(stack, project, pkg, name)
        if urn not in defaults:
            inputs = package_config(config, secret_keys, pkg)
            if record.version:
                inputs[VERSION_KEY] = record.version
            defaults[urn] = record_type(urn=urn, type=f"{PROVIDER_TYPE_PREFIX}{pkg}", name=name, parent="",
                                        provider="", dependencies=[], inputs=inputs, options={}, custom=True,
                                        outputs=dict(inputs), version=record.version)
        record.provider = urn
    return sorted([*records, *defaults.values()], key=lambda r: r.urn)

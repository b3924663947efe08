"""plan.json carries the providers `pulumi up` registers: the explicit ones with their `version`, and the
engine's default provider of every package a resource uses without naming a provider (hubctl/providers.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hubctl import providers
from hubctl.plan import REDACTED, Record, plan_document
from tests.support.tools import REPO


@pytest.mark.parametrize(("version", "name"), [
    ("1.43.3", "default_1_43_3"), ("", "default"), ("v5.6.2", "default_5_6_2"),
    ("1.2.3-alpha.1+build.7", "default_1_2_3_alpha_1_build_7"),
])
def test_default_provider_names_follow_the_engine(version: str, name: str) -> None:
    assert providers.default_name(version) == name


def test_a_version_that_is_no_version_is_refused() -> None:
    with pytest.raises(ValueError, match="semantic version"):
        providers.default_name("latest")


@pytest.fixture(scope="module")
def dev_plan(rendered_dev: Any) -> dict[str, Any]:
    return json.loads(json.dumps(plan_document(rendered_dev)))


def test_every_custom_resource_has_a_provider_in_the_plan(dev_plan: dict[str, Any]) -> None:
    by_urn = {r["urn"]: r for r in dev_plan["resources"]}
    components = {r["urn"] for r in dev_plan["resources"] if r["type"].startswith("karmada-hub:")}
    for r in dev_plan["resources"]:
        if r["type"].startswith(providers.PROVIDER_TYPE_PREFIX) or r["urn"] in components:
            assert r["provider"] == "", r["urn"]
            continue
        assert r["provider"] in by_urn, f"{r['urn']} is managed by {r['provider']!r}, which the plan lacks"
        provider = by_urn[r["provider"]]
        assert provider["type"] == providers.PROVIDER_TYPE_PREFIX + providers.package(r["type"])


def test_default_providers_are_the_engine_s(dev_plan: dict[str, Any]) -> None:
    defaults = {r["name"]: r for r in dev_plan["resources"]
                if r["type"].startswith(providers.PROVIDER_TYPE_PREFIX) and r["name"].startswith("default")}
    import pulumi_hcloud
    import pulumi_tls

    hcloud = defaults[providers.default_name(pulumi_hcloud._utilities.get_version())]
    assert hcloud["urn"] == f"urn:pulumi:dev::karmada-hub::pulumi:providers:hcloud::{hcloud['name']}"
    assert hcloud["parent"] == "" and hcloud["dependencies"] == []
    assert hcloud["inputs"] == {"pollInterval": "1s", "version": pulumi_hcloud._utilities.get_version()}
    assert providers.default_name(pulumi_tls._utilities.get_version()) in defaults
    assert "default" in defaults, "the readiness gates' dynamic provider (pulumi-python)"
    assert not any(r["type"] == "pulumi:providers:kubernetes" and r["name"].startswith("default")
                   for r in dev_plan["resources"]), "the stack disables kubernetes' default provider"


def test_explicit_providers_carry_their_version(dev_plan: dict[str, Any]) -> None:
    import pulumi_kubernetes

    explicit = [r for r in dev_plan["resources"] if r["type"] == "pulumi:providers:kubernetes"]
    assert explicit
    for r in explicit:
        assert r["inputs"]["version"] == pulumi_kubernetes._utilities.get_version()
        assert r["inputs"]["kubeconfig"] == REDACTED


def _record(urn: str, type_: str, provider: str = "", version: str = "1.0.0") -> Record:
    return Record(urn=urn, type=type_, name=urn.rsplit("::", 1)[-1], parent="", provider=provider, dependencies=[],
                  inputs={}, options={}, custom=True, version=version)


def test_default_provider_inputs_are_the_package_config_with_secrets_wrapped() -> None:
    config = {"hcloud:token": "t0k3n", "hcloud:pollInterval": "1s", "tls:other": "x", "karmada-hub:role": "hub"}
    server = _record("urn:pulumi:s::p::hcloud:index/server:Server::a", "hcloud:index/server:Server")
    records = providers.complete([server], "s", "p", config, ("hcloud:token",), Record)
    provider = next(r for r in records if r.type == "pulumi:providers:hcloud")
    assert provider.urn == "urn:pulumi:s::p::pulumi:providers:hcloud::default_1_0_0"
    assert set(provider.inputs) == {"token", "pollInterval", "version"}
    doc = plan_document(_plan(records))
    shown = next(r for r in doc["resources"] if r["urn"] == provider.urn)
    assert shown["inputs"] == {"pollInterval": "1s", "token": REDACTED, "version": "1.0.0"}


def test_two_versions_of_one_package_are_two_default_providers() -> None:
    key = "tls:index/privateKey:PrivateKey"
    records = providers.complete([_record(f"urn:pulumi:s::p::{key}::a", key, version="5.6.2"),
                                  _record(f"urn:pulumi:s::p::{key}::b", key, version="5.7.0")],
                                 "s", "p", {}, (), Record)
    assert sorted(r.name for r in records if r.type == "pulumi:providers:tls") == ["default_5_6_2", "default_5_7_0"]


def test_a_disabled_default_provider_is_an_error() -> None:
    config = {"pulumi:disable-default-providers": '["kubernetes"]'}
    with pytest.raises(providers.DefaultProviderDisabled, match="kubernetes"):
        providers.complete([_record("urn:pulumi:s::p::kubernetes:core/v1:Secret::a", "kubernetes:core/v1:Secret")],
                           "s", "p", config, (), Record)
    explicit = "urn:pulumi:s::p::pulumi:providers:kubernetes::k8s-x"
    ok = providers.complete([_record(explicit, "pulumi:providers:kubernetes"),
                             _record("urn:pulumi:s::p::kubernetes:core/v1:Secret::a", "kubernetes:core/v1:Secret",
                                     provider=explicit)], "s", "p", config, (), Record)
    assert len(ok) == 2


def _plan(records: list[Record]) -> Any:
    from hubctl.plan import Plan

    return Plan(project="p", stack="s", records=records, outputs={})


def test_written_plan_has_the_providers(tmp_path: Path) -> None:
    import pulumi_tls

    from hubctl.commands import run_plan

    assert run_plan(REPO, "dev", tmp_path, quiet=True) == 0
    plan = json.loads((tmp_path / "dev" / "plan.json").read_text())
    name = providers.default_name(pulumi_tls._utilities.get_version())
    tls = f"urn:pulumi:dev::karmada-hub::pulumi:providers:tls::{name}"
    assert tls in {r["urn"] for r in plan["resources"]}
    assert all(r["provider"] == tls for r in plan["resources"] if r["type"].startswith("tls:"))


def test_engine_default_providers_are_told_from_the_program_s() -> None:
    assert providers.is_engine_default("urn:pulumi:dev::karmada-hub::pulumi:providers:hcloud::default_1_43_3")
    assert providers.is_engine_default("urn:pulumi:dev::karmada-hub::pulumi:providers:pulumi-python::default")
    assert not providers.is_engine_default("urn:pulumi:dev::karmada-hub::pulumi:providers:kubernetes::k8s-capi")
    assert not providers.is_engine_default(
        "urn:pulumi:dev::karmada-hub::karmada-hub:index:HubCluster$pulumi:providers:kubernetes::k8s-host")
    assert not providers.is_engine_default("urn:pulumi:dev::karmada-hub::tls:index/privateKey:PrivateKey::default")

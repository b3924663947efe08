"""docs/configuration.md and docs/stack.schema.json are what `hubctl docs` generates from the models, every key is
documented, the example stacks validate against the schema and carry its modeline, and the schema catches what
the models refuse."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
import yaml

from components import config as cfg
from hubctl import reference
from tests.support.tools import REPO

STACKS = sorted((REPO / "stacks").glob("Pulumi.*.yaml"))


def test_generated_files_are_up_to_date() -> None:
    for rel, text in reference.rendered().items():
        assert (REPO / rel).read_text() == text, f"{rel} is stale: run `hubctl docs` and commit the result"


def _models() -> list[type[cfg.Model]]:
    return [m for m in vars(cfg).values() if isinstance(m, type) and issubclass(m, cfg.Model) and m is not cfg.Model]


def test_every_field_has_a_description_and_a_row() -> None:
    doc = (REPO / reference.REFERENCE).read_text()
    for model in _models():
        for name, field in model.model_fields.items():
            if name == "secrets":
                continue
            assert field.description, f"{model.__name__}.{name} has no docstring (it is the reference's sentence)"
            key = field.alias or name
            assert f"| `{key}` |" in doc, f"{model.__name__}.{key} is missing from docs/configuration.md"
        if model is not cfg.FleetConfig:
            assert f"### {model.__name__}" in doc


def test_the_reference_is_regenerated_from_the_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """A changed description shows up in the rendered reference: it is generated, not a copy."""
    field = cfg.HubConfig.model_fields["servers"]
    monkeypatch.setattr(field, "description", "a sentence that is nowhere else")
    try:
        for model in (cfg.HubConfig, cfg.FleetConfig):
            model.model_rebuild(force=True)
        assert "a sentence that is nowhere else" in reference.reference_markdown()
    finally:
        monkeypatch.undo()
        for model in (cfg.HubConfig, cfg.FleetConfig):
            model.model_rebuild(force=True)
    assert "a sentence that is nowhere else" not in reference.reference_markdown()


def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads((REPO / reference.SCHEMA).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


@pytest.mark.parametrize("path", STACKS, ids=lambda p: p.name)
def test_example_stacks_validate_and_name_the_schema(path: Any) -> None:
    assert path.read_text().splitlines()[0] == reference.MODELINE
    errors = [e.message for e in validator().iter_errors(yaml.safe_load(path.read_text()))]
    assert errors == []


def dev() -> dict[str, Any]:
    return yaml.safe_load((REPO / "stacks" / "Pulumi.dev.yaml").read_text())


def _set(doc: dict[str, Any], path: list[Any], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    node = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return doc


@pytest.mark.parametrize(("path", "value"), [
    (["config", "karmada-hub:hub", "servers"], 4),
    (["config", "karmada-hub:hub", "servers"], 11),
    (["config", "karmada-hub:hub", "firewall", "sshCidr"], ["198.51.100.0/24"]),
    (["config", "karmada-hub:hbu"], {"servers": 3}),
    (["config", "karmada-hub:hetznerDnsToken"], "plain text"),
    (["config", "karmada-hub:members", 0, "syncMode"], "push"),
    (["config", "karmada-hub:dns", "ttl"], 61),
    (["config", "karmada-hub:karmada", "replicas", "webhook"], 1),
    (["confg"], {}),
])
def test_the_schema_catches_what_the_models_refuse(path: list[Any], value: Any) -> None:
    assert list(validator().iter_errors(_set(dev(), path, value))), (path, value)


def test_keys_without_the_project_prefix_and_provider_settings_are_allowed() -> None:
    doc = dev()
    doc["config"]["pulumi:template"] = "x"
    doc["config"]["role"] = doc["config"].pop("karmada-hub:role")
    assert list(validator().iter_errors(doc)) == []

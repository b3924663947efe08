"""A simulated first `pulumi preview` of every example stack stays honest (tests/support/first_preview.py): with
every provider-computed value unknown the program registers exactly the resources the offline plan has, no
Output is ever stringified, no resource is created inside an apply, and no URN is registered twice. The harness
itself is shown to catch each of those on a small program that does it."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from hubctl import providers
from hubctl.commands import load_config
from hubctl.plan import Plan, run_program
from hubctl.stackfile import read_stack
from tests.support.first_preview import Preview, run_preview, unknown
from tests.support.tools import REPO

STACKS = ("dev", "prod-hub", "prod-fsn1", "prod-hel1", "prod-ash")


def _hub_reference(stack: str, rendered_prod_hub: Plan) -> dict[str, Any]:
    """A region stack's first preview runs after its hub's `up`: the StackReference has the hub's values."""
    _, config = load_config(REPO, stack)
    return {} if config.hub_stack is None else {config.hub_stack.stack: rendered_prod_hub.as_stack_reference()}


@pytest.fixture(scope="module")
def previews(rendered_prod_hub: Plan) -> dict[str, tuple[Preview, Plan]]:
    out = {}
    for stack in STACKS:
        refs = _hub_reference(stack, rendered_prod_hub)
        out[stack] = (run_preview(REPO, read_stack(REPO, stack), refs), run_program(REPO, read_stack(REPO, stack),
                                                                                     refs))
    return out


@pytest.mark.parametrize("stack", STACKS)
def test_first_preview_registers_what_up_would(previews: dict[str, tuple[Preview, Plan]], stack: str) -> None:
    preview, plan = previews[stack]
    assert not preview.duplicates, preview.duplicates
    assert not preview.created_in_apply, preview.created_in_apply
    assert not preview.stringified(), preview.stringified()[:5]
    # The plan also lists the default providers the engine registers itself (hubctl/providers.py); the program
    # registers every other resource, in the preview as in the plan.
    registered = {r.urn for r in plan.records if not providers.is_engine_default(r.urn)}
    assert set(preview.urns) == registered, sorted(set(preview.urns) ^ registered)


def test_provider_computed_values_are_unknown_in_the_preview(previews: dict[str, tuple[Preview, Plan]]) -> None:
    """Not a vacuous pass: certificates, addresses and the providers built from them really are unknown."""
    preview, _ = previews["dev"]
    by_name = {r.name: r for r in preview.records}
    assert unknown(by_name["k8s-karmada"].inputs.get("kubeconfig"))  # from the readiness gate's output
    assert unknown(by_name["k8s-host"].inputs.get("kubeconfig"))  # from the pre-generated k3s CA
    assert any(r.type == "tls:index/locallySignedCert:LocallySignedCert" and unknown((r.outputs or {}).get("certPem"))
               for r in preview.records)
    assert any(r.type == "hcloud:index/loadBalancer:LoadBalancer" and unknown((r.outputs or {}).get("ipv4"))
               for r in preview.records)


def _toy(tmp_path: Path, body: str) -> Path:
    repo = tmp_path / "toy"
    repo.mkdir()
    (repo / "__main__.py").write_text("import pulumi\nimport pulumi_random as random\n" + textwrap.dedent(body))
    return repo


def _toy_stack() -> Any:
    import dataclasses

    return dataclasses.replace(read_stack(REPO, "dev"), config={}, secret_keys=frozenset())


def test_a_stringified_output_fails_the_preview(tmp_path: Path) -> None:
    repo = _toy(tmp_path, """
        p = random.RandomPassword("p", length=12)
        pulumi.export("bad", f"password={p.result}")
    """)
    with pytest.raises(Exception, match="Calling __str__ on an Output"):
        run_preview(repo, _toy_stack())


def test_a_repr_of_an_output_in_an_input_is_found(tmp_path: Path) -> None:
    repo = _toy(tmp_path, """
        p = random.RandomPassword("p", length=12)
        random.RandomPassword("q", length=12, override_special=repr(p.result))
    """)
    preview = run_preview(repo, _toy_stack())
    assert [s for s in preview.stringified() if "::q" in s] == [
        "urn:pulumi:dev::karmada-hub::random:index/randomPassword:RandomPassword::q.overrideSpecial"]


def test_a_resource_created_inside_an_apply_is_found(tmp_path: Path) -> None:
    repo = _toy(tmp_path, """
        pulumi.Output.from_input("known").apply(lambda v: random.RandomPassword("inside", length=12))
    """)
    preview = run_preview(repo, _toy_stack())
    assert preview.created_in_apply == ["random:index/randomPassword:RandomPassword::inside"]


def test_a_resource_behind_an_unknown_value_is_missing_from_the_preview(tmp_path: Path) -> None:
    """Preview skips callbacks on unknown values: the resource never registers (the URN comparison catches it)."""
    repo = _toy(tmp_path, """
        p = random.RandomPassword("p", length=12)
        p.result.apply(lambda v: random.RandomPassword("later", length=12))
    """)
    preview = run_preview(repo, _toy_stack())
    assert not any(u.endswith("::later") for u in preview.urns)
    plan = run_program(repo, _toy_stack())
    assert any(r.urn.endswith("::later") for r in plan.records)


def test_a_duplicate_urn_is_found(tmp_path: Path) -> None:
    repo = _toy(tmp_path, """
        random.RandomPassword("twice", length=12)
        random.RandomPassword("twice", length=16)
    """)
    preview = run_preview(repo, _toy_stack())
    assert preview.duplicates == ["urn:pulumi:dev::karmada-hub::random:index/randomPassword:RandomPassword::twice"]

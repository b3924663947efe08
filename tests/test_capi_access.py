"""Review C3: one Cluster API credential per stack, able to read its own members' kubeconfigs and nothing else.

`hubctl capi-access <stack>` prints the management-cluster objects a stack's `capiKubeconfig` must be made from;
evaluated with RBAC semantics both ways: its own members' `<cluster>-kubeconfig` Secrets, not another region's,
not a list, not the infrastructure provider's Secrets beside them. The hub stack carries no CAPI credential.
"""

from __future__ import annotations

import io

import pytest
import yaml

from components.config import ConfigError, FleetConfig
from components.fleet import member_docs
from hubctl.__main__ import main
from tests.support.rbac import Rbac, Request
from tests.support.schemas import validate_kubernetes
from tests.support.tools import REPO, load_stack, stack_values


def _objects(stack: str) -> list[dict]:
    out, err = io.StringIO(), io.StringIO()
    assert main(["capi-access", stack], repo=REPO, stdout=out, stderr=err) == 0, err.getvalue()
    assert "pulumi config set --secret capiKubeconfig" in err.getvalue()
    return [d for d in yaml.safe_load_all(out.getvalue()) if d]


@pytest.mark.parametrize(("stack", "mine", "theirs"), [
    ("prod-fsn1", ["prod-fsn1-a", "prod-fsn1-b", "prod-fsn1-c"], ["prod-hel1-a", "prod-ash-a"]),
    ("prod-ash", ["prod-ash-a"], ["prod-fsn1-a", "prod-ash-legacy"]),
    ("dev", ["dev-fsn1-a", "dev-hel1-a"], ["prod-fsn1-a"]),
])
def test_a_stack_reads_only_its_own_members(stack: str, mine: list[str], theirs: list[str]) -> None:
    objs = _objects(stack)
    for obj in objs:
        validate_kubernetes(obj, "1.34")
    sa = next(o for o in objs if o["kind"] == "ServiceAccount")["metadata"]
    user = f"system:serviceaccount:{sa['namespace']}:{sa['name']}"
    rbac = Rbac(objs)
    ns = "fleet-dev" if stack == "dev" else "fleet-prod"
    for cluster in mine:
        assert rbac.allowed(Request(user, "get", "", "secrets", ns, f"{cluster}-kubeconfig")), cluster
    for cluster in theirs:
        assert not rbac.allowed(Request(user, "get", "", "secrets", "fleet-prod", f"{cluster}-kubeconfig")), cluster
    for denied in (Request(user, "list", "", "secrets", ns), Request(user, "watch", "", "secrets", ns),
                   Request(user, "get", "", "secrets", ns, f"{mine[0]}-hetzner"),  # CAPH's project token
                   Request(user, "get", "cluster.x-k8s.io", "clusters", ns, mine[0]),
                   Request(user, "update", "", "secrets", ns, f"{mine[0]}-kubeconfig")):
        assert not rbac.allowed(denied), denied


def test_the_rendered_reader_follows_the_members() -> None:
    config = load_stack("prod-fsn1")
    role = next(o for o in member_docs.capi_reader_objects("prod-fsn1", list(config.members)) if o["kind"] == "Role")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                              "resourceNames": ["prod-fsn1-a-kubeconfig", "prod-fsn1-b-kubeconfig",
                                                "prod-fsn1-c-kubeconfig"]}]


def test_a_hub_stack_carries_no_capi_credential() -> None:
    raw, secrets = stack_values("prod-hub")
    assert "capiKubeconfig" not in raw
    raw["capiKubeconfig"] = "offline-placeholder-for-capiKubeconfig"
    with pytest.raises(ConfigError) as info:
        FleetConfig.from_mapping(raw, "stacks/Pulumi.prod-hub.yaml", secrets | {"capiKubeconfig"})
    assert str(info.value) == ("stacks/Pulumi.prod-hub.yaml: karmada-hub:capi.kubeconfigConfigKey: a hub stack joins "
                               "no members and reads no Cluster API credential; remove karmada-hub:capiKubeconfig "
                               "from this file")
    err = io.StringIO()
    assert main(["capi-access", "prod-hub"], repo=REPO, stdout=io.StringIO(), stderr=err) == 2
    assert "no member comes from Cluster API" in err.getvalue()

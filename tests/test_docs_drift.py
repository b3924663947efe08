"""The docs say what the code does (review-newcomer.md §1 #18, §4): the runbooks' examples can be copied as they
are, and what a newcomer needs to know (the CRD download, the plan epoch, the environment variables, every stack
secret) is written down."""

from __future__ import annotations

import re

import yaml

from components.config import FleetConfig
from tests.support.tools import REPO, stack_values

MEMBERS = (REPO / "docs" / "runbooks" / "members.md").read_text()


def _section(text: str, start: str, end: str) -> str:
    return text[text.index(start):text.index(end, text.index(start))]


def test_the_member_a_runbook_adds_is_a_new_member_that_validates() -> None:
    """Copying the example member of "Add a member" into its stack was refused: prod-fsn1-c already exists."""
    add = _section(MEMBERS, "## Add a member", "### Re-join a Pull member")
    block = re.search(r"```yaml\n(\s+karmada-hub:members:\n.*?)```", add, re.S)
    assert block is not None
    (member,) = yaml.safe_load(block.group(1))["karmada-hub:members"]
    raw, secrets = stack_values("prod-fsn1")
    assert member["name"] not in {m["name"] for m in raw["members"]}
    raw["members"].append(member)
    config = FleetConfig.from_mapping(raw, "stacks/Pulumi.prod-fsn1.yaml", secrets)
    assert config.members[-1].name == member["name"]
    assert member["name"] in _section(MEMBERS, "## Verify", "After a removal")


def test_removing_a_pull_member_deletes_its_cluster_once() -> None:
    """The runbook deleted a Pull member's Cluster by hand, twice. Since security review 2 (C2) the hub owns every
    Cluster, Pull ones too: the hub's `up` deletes it, once, and the runbook never does."""
    remove = _section(MEMBERS, "## Remove a member", "## Verify")
    assert "delete cluster prod-fsn1-b" not in remove
    assert "the Cluster (the hub's, Push and Pull)" in remove
    assert "delete it once the agent is gone" not in remove


def test_the_two_plans_of_a_review_share_a_day() -> None:
    add = _section(MEMBERS, "## Add a member", "### Re-join a Pull member")
    plans = re.findall(r"hubctl plan prod-fsn1 [^\n]*", add)
    assert len(plans) == 2 and all('--epoch "$EPOCH"' in p for p in plans)


def test_first_deploy_verify_matches_the_control_plane() -> None:
    verify = (REPO / "docs" / "runbooks" / "first-deploy.md").read_text()
    assert "every component 2/2" not in verify
    assert "karmada-apiserver 3/3 (one per hub server)" in verify and "karmada-descheduler" in verify


def test_the_readme_says_what_a_newcomer_meets() -> None:
    readme = (REPO / "README.md").read_text()
    for needle in ("raw.githubusercontent.com", "KARMADA_HUB_CRDS_DIR", "KARMADA_HUB_UPSTREAM_CRDS_DIR",
                   "KARMADA_HUB_NO_DOWNLOAD", "KARMADA_HUB_OFFLINE", "HUBCTL_PLAN_EPOCH", "--epoch",
                   "HUBCTL_DEPLOYED", "hubctl --version"):
        assert needle in readme, needle


def test_configuration_md_lists_every_stack_secret_the_example_stacks_set() -> None:
    doc = (REPO / "docs" / "configuration.md").read_text()
    table = _section(doc, "## Stack secrets", "## Keys")
    for stack in ("dev", "prod-hub"):
        _, secrets = stack_values(stack)
        for key in secrets:
            assert f"`karmada-hub:{key}`" in table, (stack, key)
    assert "pulumi config set --path" in doc and "pulumi:disable-default-providers" in doc

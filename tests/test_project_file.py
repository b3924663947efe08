"""`Pulumi.yaml`'s config declarations against the stack files, by the Pulumi CLI's rules (hubctl/projectfile.py).

The mock runtime never reads the project file, so these rules would otherwise first bite at the first real
`pulumi preview`: a key declared without a default must be set in every stack file, a secret one must be `secure:`,
a typed one must be of its type, and a declaration must itself be valid. Sources: pulumi/pulumi
sdk/go/common/workspace/config.go (`mergeConfig`, `validateStackConfigValue`) and project.go (`Validate`,
`ValidateConfigValue`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from components.config import ConfigError
from hubctl import projectfile
from hubctl.stackfile import read_stack
from tests.support.tools import REPO

STACK_FILES = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (REPO / "stacks").glob("Pulumi.*.yaml"))


def test_every_example_stack_file_is_one_the_cli_accepts() -> None:
    project = projectfile.load_project(REPO)
    assert project is not None and project.declarations, "Pulumi.yaml declares config"
    assert STACK_FILES == ["dev", "prod-ash", "prod-fsn1", "prod-hel1", "prod-hub"]
    for stack in STACK_FILES:
        read_stack(REPO, stack)  # raises ConfigError naming the file and the key


@pytest.mark.parametrize("stack", STACK_FILES)
def test_every_key_declared_without_a_default_is_set_in_every_stack_file(stack: str) -> None:
    """The CLI's rule spelled out on the files themselves, independent of the checker above."""
    import yaml

    project = projectfile.load_project(REPO)
    assert project is not None
    doc = yaml.safe_load((REPO / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    keys = {k if ":" in k else f"karmada-hub:{k}" for k in (doc.get("config") or {})}
    for decl in project.declarations:
        if decl.key.startswith("karmada-hub:") and not (decl.has_default or decl.has_value):
            assert decl.key in keys, f"stacks/Pulumi.{stack}.yaml lacks {decl.key}, which Pulumi.yaml requires"


def test_the_engine_hands_the_program_a_declared_default(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "  role:\n    type: string\n    default: all-in-one\n", "  karmada-hub:hub: {name: x}\n")
    cfg = read_stack(repo, "s")
    assert cfg.config["karmada-hub:role"] == "all-in-one"


@pytest.mark.parametrize(("declarations", "stack_config", "message"), [
    ("  region:\n    type: string\n", "  karmada-hub:role: hub\n",
     "stacks/Pulumi.s.yaml: karmada-hub:region: Pulumi.yaml declares it without a default, so the Pulumi CLI refuses "
     "this stack (\"Stack 's' is missing configuration value\"): set it here (pulumi config set region <value>)"),
    ("  a:\n    type: string\n  b:\n    type: string\n    secret: true\n", "  x: 1\n",
     "stacks/Pulumi.s.yaml: karmada-hub:a, karmada-hub:b: Pulumi.yaml declares them without a default"),
    ("  token:\n    type: string\n    secret: true\n", "  karmada-hub:token: plain\n",
     "stacks/Pulumi.s.yaml: karmada-hub:token: Pulumi.yaml declares it secret, so the Pulumi CLI refuses a plain "
     "value: pulumi config set --secret token <value>"),
    ("  token:\n    type: string\n    secret: true\n    default: abc\n", "  x: 1\n",
     "karmada-hub:token: Pulumi.yaml declares it secret, so the Pulumi CLI refuses a plain value (its Pulumi.yaml "
     "default is plain text)"),
    ("  n:\n    type: integer\n", "  karmada-hub:n: three\n",
     "stacks/Pulumi.s.yaml: karmada-hub:n: must be of type integer"),
    ("  flag:\n    type: boolean\n", "  karmada-hub:flag: yes please\n", "karmada-hub:flag: must be of type boolean"),
    ("  names:\n    type: array\n    items:\n      type: string\n", "  karmada-hub:names: [a, {b: 1}]\n",
     "karmada-hub:names: must be of type array<string>"),
    ("  name:\n    type: string\n", "  karmada-hub:name: {a: 1}\n", "karmada-hub:name: must be of type string"),
    ("  n:\n    type: integer\n    default: x\n", "", "Pulumi.yaml: config.n: the default is not of type integer"),
    ("  n:\n    type: array\n", "", "Pulumi.yaml: config.n: an array declares its items' type"),
    ("  n:\n    default: 1\n    value: 2\n", "", "Pulumi.yaml: config.n: has both default and value"),
    ("  hcloud:pollInterval:\n    type: string\n    value: 1s\n", "",
     "Pulumi.yaml: config.hcloud:pollInterval: a key outside the karmada-hub namespace takes only a value"),
])
def test_what_the_cli_refuses_is_refused_in_one_line(tmp_path: Path, declarations: str, stack_config: str,
                                                     message: str) -> None:
    repo = _repo(tmp_path, declarations, stack_config)
    with pytest.raises(ConfigError) as info:
        read_stack(repo, "s")
    assert message in str(info.value) and "\n" not in str(info.value), str(info.value)


@pytest.mark.parametrize(("declarations", "stack_config"), [
    ("  n:\n    type: integer\n", "  karmada-hub:n: 3\n"),
    ("  n:\n    type: integer\n", "  karmada-hub:n: '42'\n"),
    ("  flag:\n    type: boolean\n", "  karmada-hub:flag: true\n"),
    ("  names:\n    type: array\n    items:\n      type: string\n", "  karmada-hub:names: [a, b]\n"),
    ("  token:\n    type: string\n    secret: true\n", "  karmada-hub:token:\n    secure: v1:abc\n"),
    ("  name:\n    type: string\n", "  karmada-hub:name: 3\n"),  # a scalar is a string to the engine
    ("  note: hello\n", ""),  # untyped with a value: nothing to set
])
def test_what_the_cli_accepts_is_accepted(tmp_path: Path, declarations: str, stack_config: str) -> None:
    read_stack(_repo(tmp_path, declarations, stack_config), "s")


def test_without_a_project_file_only_the_stack_file_counts(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "  region:\n    type: string\n", "  karmada-hub:role: hub\n")
    (repo / "Pulumi.yaml").unlink()
    assert read_stack(repo, "s").config == {"karmada-hub:role": "hub"}


def _repo(tmp_path: Path, declarations: str, stack_config: str) -> Path:
    repo = tmp_path / "repo"
    (repo / "stacks").mkdir(parents=True)
    shutil.copy(REPO / "Pulumi.yaml", repo / "Pulumi.yaml")
    text = (repo / "Pulumi.yaml").read_text()
    (repo / "Pulumi.yaml").write_text(text[:text.index("config:\n")] + "config:\n" + declarations)
    (repo / "stacks" / "Pulumi.s.yaml").write_text("config:\n" + (stack_config or "  karmada-hub:role: hub\n"))
    return repo

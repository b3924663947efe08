"""YAML mistakes in a stack file say what to write instead (review-newcomer.md §1 #19, §3 "could teach more"):
octal and base-60 numbers are refused rather than read as 8 or 90, and a parse error names the key it is under and
the usual fix (quote it, check the indentation) besides PyYAML's own words."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.config import ConfigError
from components.kube import safeyaml
from hubctl.stackfile import read_stack


@pytest.mark.parametrize(("text", "expected"), [
    ("config:\n  karmada-hub:dns:\n    ttl: 060\n",
     "line 3, column 10 (under karmada-hub:dns.ttl): 060 is an octal number in YAML (it reads as 48); write 60, or "
     "quote it (\"060\") if it is text"),
    ("retain: 010\n", "line 1, column 9 (under retain): 010 is an octal number in YAML (it reads as 8); write 10, "
                      "or quote it (\"010\") if it is text"),
    ("x: -010\n", "line 1, column 4 (under x): -010 is an octal number in YAML (it reads as -8); write -10, or quote "
                  "it (\"-010\") if it is text"),
    ("at: 1:30\n", "line 1, column 5 (under at): 1:30 is a base-60 number in YAML 1.1 (hubctl would read a number, "
                   "Pulumi a string); quote it (\"1:30\")"),
    ("config:\n  karmada-hub:karmada:\n    etcd:\n      defragSchedule: */30 * * * *\n",
     "not valid YAML: line 4, column 24 (under karmada-hub:karmada.etcd.defragSchedule): did not find expected "
     "alphabetic or numeric character (while scanning an alias at line 4, column 23); a plain value cannot start "
     "with * (YAML reads it as an alias): quote the value, like schedule: \"*/30 * * * *\""),
    ("config:\n  karmada-hub:karmada:\n    priorityClasses:\n"
     "      - {name: a, value: 1, description: placed first: after a loss}\n",
     "not valid YAML: line 4, column 54 (under karmada-hub:karmada.priorityClasses): did not find expected ',' or "
     "'}' (while parsing a flow mapping at line 4, column 9); a {...} must be closed, and a value inside it that "
     "contains ': ' or ',' must be quoted, like description: \"placed first: after a loss\""),
    ("config:\n  karmada-hub:tenants:\n    - name: a\n      note: placed first: after a loss\n",
     "not valid YAML: line 4, column 25 (under karmada-hub:tenants.note): mapping values are not allowed in this "
     "context; a value that contains ': ' must be quoted"),
    ("config:\n  karmada-hub:identityCsr: |\n    -----BEGIN CERTIFICATE REQUEST-----\n    MIHe\n  MIGG\n"
     "    -----END CERTIFICATE REQUEST-----\n  karmada-hub:region: eu-fsn\n",
     "not valid YAML: line 7, column 3 (under karmada-hub:identityCsr): could not find expected ':' (while scanning "
     "a simple key at line 5, column 3); this line is neither a key nor part of a value: check its indentation"),
    ("config:\n  karmada-hub:members:\n    dev-a:\n      name: a\n    - name: d\n",
     "not valid YAML: line 5, column 5 (under karmada-hub:members): did not find expected key (while parsing a "
     "block mapping at line 3, column 5); keys of one mapping must line up, and a list item (- ) cannot sit among "
     "them"),
    ("config:\n  karmada-hub:members:\n    - name: a\n      region: r\n      name: b\n",
     "line 5, column 7 (under karmada-hub:members.name): duplicate key 'name' (first at line 3, column 7); YAML would "
     "silently keep only the last one; a list item starts with '- ': a line that lost its dash merges it into the item "
     "above"),
    ("a: @x\n", "not valid YAML: line 1, column 4 (under a): found character that cannot start any token"),
])
def test_a_yaml_mistake_says_what_to_write(text: str, expected: str) -> None:
    with pytest.raises(safeyaml.YamlRefused) as info:
        safeyaml.load(text.encode())
    assert str(info.value).startswith(expected), str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("text", "value"), [
    ("x: 0\n", 0), ("x: 10\n", 10), ("x: 0.5\n", 0.5), ("x: '010'\n", "010"), ("x: \"1:30\"\n", "1:30"),
    ("x: 08\n", "08"), ("x: 0x1F\n", 31), ("x: v1.33.4\n", "v1.33.4"), ("x: 17 */6 * * *\n", "17 */6 * * *"),
])
def test_numbers_people_mean_are_read(text: str, value: object) -> None:
    assert safeyaml.load(text.encode()) == {"x": value}


def _write(tmp_path: Path, text: str) -> str:
    (tmp_path / "stacks").mkdir(exist_ok=True)
    (tmp_path / "stacks" / "Pulumi.t.yaml").write_text(text)
    return "t"


@pytest.mark.parametrize("text", ["", "# only a comment\n", "config:\n", "config:\n  hcloud:pollInterval: 1s\n"])
def test_an_empty_stack_file_says_where_to_start(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError) as info:
        read_stack(tmp_path, _write(tmp_path, text))
    assert str(info.value) == ("stacks/Pulumi.t.yaml: config: sets no karmada-hub keys (the file is empty or only has "
                               "provider settings); start from a copy of stacks/Pulumi.dev.yaml (all-in-one) or of "
                               "the prod stacks")


def test_an_empty_ciphertext_is_not_a_secret(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        read_stack(tmp_path, _write(tmp_path, "config:\n  karmada-hub:role: hub\n  karmada-hub:hetznerDnsToken:\n"
                                              "    secure: \"\"\n"))
    assert str(info.value) == ("stacks/Pulumi.t.yaml: karmada-hub:hetznerDnsToken: a secret is `secure: <ciphertext>` "
                               "and nothing else; set it with `pulumi config set --secret hetznerDnsToken <value>`")

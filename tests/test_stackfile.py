"""Reading a stack file: bounded YAML (size, nesting, aliases, duplicates), encodings, line and column in every
YAML error, and the stack-file shape (top-level keys, namespaces, secure values, plain credentials)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from components.config import ConfigError
from components.kube import safeyaml
from hubctl.stackfile import read_stack

LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8))
"""Billion laughs: 9 levels of 9 aliases, 500 bytes, 387 million values when expanded."""


@pytest.mark.parametrize(("data", "expected"), [
    (LAUGHS.encode(), "expands to more than 200000 values through aliases (an alias bomb?); write the values out"),
    (b"a: &a [*a]\n", "expands to more than 200000 values through aliases"),
    (("a: " + "[" * 40 + "]" * 40).encode(), "line 1, column 35: nested more than 32 levels deep"),
    (("a: " + "[" * 100_000).encode(), "(nested more than 32 levels deep|.*exceeded maximum nesting depth)"),
    (b"x: " + b"y" * (2 << 20), "is 2,097,155 bytes; a stack file may be at most 1,048,576"),
    ("a: caf\xe9\n".encode("latin-1"), "is not UTF-8: byte 0xe9 at line 1, column 7 (save the file as UTF-8)"),
    ("a: 1\n".encode("utf-16"), "is UTF-16 encoded; save it as UTF-8"),
    (b"a: b\x00c\n", "not valid YAML: line 1, column 5: character U+0000 is not allowed in YAML"),
    (b"a: 1\nb: 2\na: 3\n", "line 3, column 1 (under a): duplicate key 'a' (first at line 1, column 1); YAML would "
                            "silently keep only the last one"),
    (b"a:\n\tb: 1\n", "not valid YAML: line 2, column 1: a tab character; YAML indents with spaces only"),
    (b"a: [1, 2\nb: 3\n", "not valid YAML: line 2, column 2 (under a): did not find expected ',' or ']' (while "
                          "parsing a flow sequence at line 1, column 4); a [...] must be closed"),
    (b"a: 1\n---\nb: 2\n", "line 2, column 1: a second YAML document (---); a stack file is one"),
    (b"a: !!python/object/apply:os.system [echo]\n", "not valid YAML: line 1, column 4 (under a): could not "
                                                     "determine a constructor for the tag"),
    (b"? [a, b]\n: 1\n", "line 1, column 3: a key must be a plain string, not a list"),
    (b"a: " + b"*x, " * 300 + b"\n", "not valid YAML"),
])
def test_refused_yaml_is_one_line_and_fast(data: bytes, expected: str) -> None:
    started = time.monotonic()
    with pytest.raises(safeyaml.YamlRefused) as info:
        safeyaml.load(data)
    assert re.match(re.escape(expected) if "|" not in expected else expected, str(info.value)), str(info.value)
    assert "\n" not in str(info.value)
    assert time.monotonic() - started < 5, "a refusal must not do the work it refuses"


def test_accepted_yaml() -> None:
    assert safeyaml.load(b"\xef\xbb\xbfa: 1\n") == {"a": 1}  # a UTF-8 BOM is fine
    assert safeyaml.load(b"base: &b {x: 1}\nc: {<<: *b, y: 2}\n")["c"] == {"x": 1, "y": 2}
    assert safeyaml.load(b"") is None


def test_many_aliases_are_counted(tmp_path: Path) -> None:
    text = "a: &a 1\nb: [" + ", ".join(["*a"] * 300) + "]\n"
    with pytest.raises(safeyaml.YamlRefused, match="more than 256 aliases"):
        safeyaml.load(text.encode())


def write(repo: Path, text: str | bytes, stack: str = "t") -> str:
    (repo / "stacks").mkdir(parents=True, exist_ok=True)
    path = repo / "stacks" / f"Pulumi.{stack}.yaml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return stack


@pytest.mark.parametrize(("text", "expected"), [
    ("- a\n- b\n", "stacks/Pulumi.t.yaml: must be a mapping with a `config:` section (got a list)"),
    ("confg: {}\n", "stacks/Pulumi.t.yaml: confg: unknown top-level key (did you mean config?) (a stack file has "
                    "config, secretsprovider, encryptedkey, encryptionsalt, environment)"),
    ("config: [1]\n", "stacks/Pulumi.t.yaml: config: must be a mapping of keys to values"),
    ("config:\n  karmadahub:hub: {}\n", "stacks/Pulumi.t.yaml: karmadahub:hub: unknown config namespace 'karmadahub' "
                                        "(did you mean karmada-hub?); this program reads karmada-hub, pulumi, hcloud, "
                                        "kubernetes, tls, random"),
    ("config:\n  hub: {}\n  karmada-hub:hub: {}\n", "stacks/Pulumi.t.yaml: karmada-hub:hub: set twice (as hub and "
                                                    "karmada-hub:hub); keep one"),
    ("config:\n  karmada-hub:x:\n    secure: 5\n", "stacks/Pulumi.t.yaml: karmada-hub:x: a secret is `secure: "
                                                  "<ciphertext>` and nothing else; set it with `pulumi config set "
                                                  "--secret x <value>`"),
    ("config:\n  karmada-hub:hub:\n    k: {secure: abc}\n", "stacks/Pulumi.t.yaml: karmada-hub:hub: secure values "
                                                            "nested inside a structured value are not read"),
    ("config:\n  hcloud:token: hunter2-token\n", "stacks/Pulumi.t.yaml: hcloud:token: a credential in plain text "
                                                 "would sit in git; remove it and run `pulumi config set --secret "
                                                 "hcloud:token <value>` (or export it in the environment)"),
])
def test_stack_file_shape(tmp_path: Path, text: str, expected: str) -> None:
    stack = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        read_stack(tmp_path, stack)
    assert str(info.value).startswith(expected) and "hunter2" not in str(info.value)


def test_unknown_stack_suggests_the_near_one(tmp_path: Path) -> None:
    write(tmp_path, "config: {}\n", "prod-hub")
    with pytest.raises(ConfigError) as info:
        read_stack(tmp_path, "prod-hbu")
    assert str(info.value) == ("stacks/Pulumi.prod-hbu.yaml: no such stack file (stacks: prod-hub) "
                               "(did you mean prod-hub?)")
    with pytest.raises(ConfigError, match=r"^stacks/Pulumi.<that name>.yaml: no such stack file"):
        read_stack(tmp_path, "../../etc/passwd")


def test_a_good_stack_file_reads(tmp_path: Path) -> None:
    stack = write(tmp_path, "# yaml-language-server: $schema=../docs/stack.schema.json\nconfig:\n"
                            "  karmada-hub:role: hub\n  hub: {servers: 3}\n  karmada-hub:tok:\n    secure: v1:abc\n"
                            "  pulumi:x: 1\n")
    cfg = read_stack(tmp_path, stack)
    assert cfg.config["karmada-hub:hub"] == '{"servers": 3}' and cfg.secret_keys == ("karmada-hub:tok",)

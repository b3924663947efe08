"""components/kube/yamlutil: libyaml where it gives PyYAML's bytes, PyYAML where it would not.

The plan's manifests must stay byte-identical whichever emitter wrote them; the two emitters differ only in
where they fold a scalar longer than the line width, and `_fits` must only let through documents where no
scalar can get there.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import yaml

from components.kube import yamlutil

needs_libyaml = pytest.mark.skipif(not getattr(yaml, "__with_libyaml__", False), reason="PyYAML built without libyaml")


def _c_dump(obj: Any) -> str:
    assert yamlutil._CDumper is not None
    return yaml.dump(obj, Dumper=yamlutil._CDumper, sort_keys=False, default_flow_style=False,
                     width=yamlutil.WIDTH)


def _nested(value: Any, depth: int) -> Any:
    for i in range(depth):
        value = {f"level{i}": [value] if i % 2 else value}
    return value


def test_every_rendered_object_dumps_as_the_python_emitter_would(rendered_dev: Any) -> None:
    from hubctl.plan import manifests

    objects = [o for objs in manifests(rendered_dev).values() for o in objs]
    assert len(objects) > 100
    for obj in objects:
        assert yamlutil.dump(obj) == yamlutil.dump_python(obj), obj["metadata"]["name"]
    if yamlutil._CDumper is not None:
        fast = sum(yamlutil._fits(o) for o in objects)
        assert fast > 0.8 * len(objects), "most objects should take libyaml's path"


@needs_libyaml
def test_a_long_scalar_is_written_by_the_python_emitter() -> None:
    """The hazard itself: a CRD-style description past the width folds differently in libyaml."""
    # A tab after a line break (as in the Ingress CRD's `host` description) forces double quotes.
    text = "\n\t  ".join(f'line {i} of a description "that" goes on and on' for i in range(40))
    doc = _nested({"description": text}, 6)
    assert _c_dump(doc) != yamlutil.dump_python(doc), "libyaml and PyYAML agree here; the test lost its point"
    assert not yamlutil._fits(doc)
    assert yamlutil.dump(doc) == yamlutil.dump_python(doc)


@needs_libyaml
@pytest.mark.parametrize("depth", [0, 3, 9])
def test_whatever_fits_is_identical_across_the_width_boundary(depth: int) -> None:
    """Strings of every shape near the width: whenever `_fits` lets a document through, both emitters agree."""
    pieces = ["word ", 'quote" ', "back\\slash ", "it's ", "tab\there ", "line\nbreak ", "ümlaut ", "x"]
    checked = 0
    for piece, length in itertools.product(pieces, range(600, 1040, 9)):
        value = (piece * (length // len(piece) + 1))[:length]
        for doc in (_nested({"key": value}, depth), _nested([value, {"k": value}], depth)):
            if yamlutil._fits(doc):
                checked += 1
                assert _c_dump(doc) == yamlutil.dump_python(doc), (piece, length, depth)
            assert yamlutil.dump(doc) == yamlutil.dump_python(doc)
    assert checked > 0


@needs_libyaml
@pytest.mark.parametrize("depth", [0, 3, 9])
def test_literal_blocks_with_long_lines_are_identical_when_they_fit(depth: int) -> None:
    """Multi-line strings (agent scripts, kubeconfigs) are literal blocks, which neither emitter folds; `_fits`
    measures their longest line. Lines of every shape near the width, with leading spaces, trailing breaks, and
    the characters that make an emitter refuse a block (tab, CR, non-ASCII, trailing space): whenever `_fits`
    lets one through, both emitters agree, and long scripts do take libyaml's path."""
    shapes = ["code = call(x)  # ", "  indented ", 'quote" and \\ ', "tab\there ", "cr\rhere ", "ümlaut ",
              "trailing space ", "- item: [x] "]
    endings = ["", "\n", "\n\n"]
    checked = admitted_long = 0
    for shape, length, ending, lead in itertools.product(shapes, range(900, 1040, 23), endings, ["", "  "]):
        line = (shape * (length // len(shape) + 1))[:length]
        value = lead + "\n".join(["short line", line, "x = 1"]) + ending
        for doc in (_nested({"script.py": value}, depth), _nested([value, {"k": value}], depth)):
            if yamlutil._fits(doc):
                checked += 1
                assert _c_dump(doc) == yamlutil.dump_python(doc), (shape, length, repr(ending), lead, depth)
            assert yamlutil.dump(doc) == yamlutil.dump_python(doc)
        long_script = "\n".join(f"line {i}: " + "y" * 100 for i in range(200)) + ending
        if yamlutil._fits(_nested({"script.py": long_script}, depth)):
            admitted_long += 1
    assert checked > 0
    assert admitted_long > 0, "a long script with short lines should take libyaml's path"


def test_load_reads_what_safe_load_reads() -> None:
    from components import versions
    from components.karmada import crds

    rel = sorted(crds.CRD_SHA256[versions.KARMADA_VERSION])[0]
    text = crds.fetch(versions.KARMADA_VERSION, rel, allow_download=False)
    assert yamlutil.load(text) == yaml.safe_load(text)
    with pytest.raises(yaml.YAMLError):
        yamlutil.load("a: [1, 2\nb: 3")


def test_directly_built_nodes_match_the_representer() -> None:
    """`_node` stands in for SafeRepresenter: every scalar kind, look-alike strings, empty containers."""
    strings = ["", " lead", "trail ", "yes", "no", "on", "null", "~", "1", "-1", "0x1f", "1.5", "1e3", ".inf",
               "2026-12-01", "a: b", "- x", "#c", "@x", "`x", "multi\nline", "multi\nline \n", "tab\tx", "ümlaut",
               "quote'", 'dq"', "*alias", "&anchor", "!tag", "%x", "{x}", "[x]"]
    doc = {
        "strings": strings, "ints": [0, -3, 2**70], "bools": [True, False], "none": None,
        "empty": {"map": {}, "seq": []}, "nested": [[{"a": [1, {"b": None}]}]],
        **{s: s for s in strings if s},
    }
    assert yamlutil._c_dump(doc) == yamlutil.dump_python(doc) if yamlutil._CDumper else True
    assert yamlutil.dump(doc) == yamlutil.dump_python(doc)


@pytest.mark.parametrize("doc", [
    {"shared": (_s := {"x": 1}), "again": _s},  # the representer anchors it: &id001 / *id001
    {"float": 1.5, "big": 1e17, "nan": float("nan")},
    {"tuple": (1, 2)},
    {2: "int key", None: "null key", True: "bool key"},
])
def test_anything_else_goes_through_the_representer(doc: Any) -> None:
    assert yamlutil.dump(doc) == yamlutil.dump_python(doc)
    if yamlutil._CDumper is not None and not all(isinstance(k, str) for k in doc):
        assert yamlutil._c_dump(doc) == yamlutil.dump_python(doc)


@needs_libyaml
@pytest.mark.parametrize("auth", ["certificate", "token", "token-and-server-name"])
def test_kubeconfig_is_what_the_pure_python_emitter_writes(auth: str) -> None:
    """components/kube/kubeconfig writes with libyaml; the bytes are `yaml.safe_dump`'s (Secrets and their
    checksums in the plan depend on them)."""
    from components.kube.kubeconfig import kubeconfig
    from tests.support.testpki import make_ca, make_leaf

    ca = make_ca("karmada-ca")
    client = make_leaf(ca, "system:admin", server=False)
    kwargs: dict[str, Any] = (
        {"client_cert_pem": client.cert_pem, "client_key_pem": client.key_pem} if auth == "certificate" else
        {"token": "eyJhbGciOiJSUzI1NiIsImtpZCI6Ii1" + "x" * 900 + ".sig-_~"})
    if auth == "token-and-server-name":
        kwargs["tls_server_name"] = "karmada-apiserver.karmada-system.svc.cluster.local"
    text = kubeconfig("member-eu-fsn-m000-with-a-long-name", "https://[2a01:4f8::1]:6443/some/long/path" * 3,
                      ca.cert_pem, **kwargs)
    assert text == yaml.safe_dump(yaml.safe_load(text), sort_keys=False)
    assert yaml.safe_load(text)["clusters"][0]["cluster"]["certificate-authority-data"]

"""YAML output people can read: multi-line strings as literal blocks, keys in the order given.

`dump` writes with libyaml (PyYAML's C emitter, about 6x faster) whenever that gives the very bytes the
pure-Python emitter gives, and with the pure-Python emitter otherwise; for plain JSON-like data it also builds
the node graph itself, as the representer would, at half the representer's cost. The two differ only in where they
fold a scalar that runs past the line width (`width=1000`); `_fits` proves from the document's shape that
no scalar can reach that column, so neither folds. `load` reads with libyaml's parser when present (the
constructed values are the same; only the error texts differ).
"""

from __future__ import annotations

import io
from typing import Any

import yaml

WIDTH = 1000


class _Dumper(yaml.SafeDumper):
    pass


_CDumper: type | None = None
if getattr(yaml, "__with_libyaml__", False):

    class _CDumperImpl(yaml.CSafeDumper):  # type: ignore[name-defined,misc]
        pass

    _CDumper = _CDumperImpl


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=_str_style(data))


def _str_style(data: str) -> str | None:
    """Multi-line strings as literal blocks (unless a line ends in whitespace, which a block cannot keep)."""
    return "|" if "\n" in data and not any(line != line.rstrip() for line in data.splitlines()) else None


_Dumper.add_representer(str, _str)
if _CDumper is not None:
    _CDumper.add_representer(str, _str)

_INDENT_PER_LEVEL = 4
"""A bound on the columns one nesting level adds: 2 of indentation plus a sequence's `- `."""
_ESCAPE_GROWTH = 10
"""A bound on the characters one source character becomes in a double-quoted scalar (`\\UXXXXXXXX`)."""


def _block_safe(value: str) -> bool:
    """`value` goes out as a literal block in both emitters: `_str` asks for one, and nothing in it makes either
    emitter refuse a block (only line breaks and printable ASCII: a tab, a CR or a non-ASCII character would be
    a special character to PyYAML's `analyze_scalar` without allow_unicode). A literal block is never folded."""
    return value.isascii() and value.replace("\n", "").isprintable() and _str_style(value) == "|"


def _scalar_width(value: str) -> int:
    """An upper bound on the columns `value` takes on one line: a literal block's longest line, indented one level
    below its key; otherwise its whole length in any style (plain, single- or double-quoted)."""
    if "\n" in value and _block_safe(value):
        return _INDENT_PER_LEVEL + max(len(line) for line in value.split("\n"))
    if not value.isascii():
        return _ESCAPE_GROWTH * len(value) + 2
    escaped = value.count('"') + value.count("\\") + value.count("'")  # \" and \\ (or '' when single-quoted)
    if not value.isprintable():  # \n and \t take two characters, other control characters four (\xXX)
        escaped += value.count("\n") + value.count("\t")
        escaped += 3 * sum(1 for c in value if (c < " " and c not in "\n\t") or c == "\x7f")
    return len(value) + escaped + 2


def _value_width(value: Any) -> int:
    if isinstance(value, str):
        return _scalar_width(value)
    if value is None or isinstance(value, bool | int | float):
        return 32
    return WIDTH + 1  # a type the representer might render in unforeseen ways: never provably short


def _fits(obj: Any, width: int = WIDTH) -> bool:
    """True when no scalar of `obj` can reach column `width`: then no emitter folds a line, and libyaml writes
    exactly what PyYAML writes. Conservative: a document it cannot prove goes to the pure-Python emitter."""
    stack: list[tuple[Any, int]] = [(obj, 0)]
    while stack:
        value, depth = stack.pop()
        column = _INDENT_PER_LEVEL * depth
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and "\n" in key:  # a multi-line key is a `? ` complex key
                    return False
                key_width = _scalar_width(key) if isinstance(key, str) else _value_width(key)
                if key_width > 128 or column + key_width + 2 > width:  # long keys become `? ` complex keys
                    return False
                if isinstance(item, dict | list):
                    stack.append((item, depth + 1))
                elif column + key_width + 2 + _value_width(item) > width:
                    return False
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict | list):
                    stack.append((item, depth + 1))
                elif column + 2 + _value_width(item) > width:
                    return False
        elif column + _value_width(value) > width:
            return False
    return True


_STR, _INT, _BOOL, _NULL = (f"tag:yaml.org,2002:{t}" for t in ("str", "int", "bool", "null"))
_MAP, _SEQ = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


class _Unplain(Exception):
    """The document has something `_node` does not build exactly as the representer would."""


def _node(value: Any, seen: set[int]) -> yaml.Node:
    """The node SafeRepresenter (with `_str`, `default_flow_style=False`) builds for plain JSON-like data, built
    directly: no alias bookkeeping, so a container met twice (the representer would anchor it) and any type but
    str/int/bool/None/dict/list raise `_Unplain`."""
    if isinstance(value, str):
        return _str_node(value)
    if isinstance(value, bool):
        return yaml.ScalarNode(_BOOL, "true" if value else "false")
    if isinstance(value, int):
        return yaml.ScalarNode(_INT, str(value))
    if value is None:
        return yaml.ScalarNode(_NULL, "null")
    if isinstance(value, dict | list):
        if id(value) in seen:
            raise _Unplain
        seen.add(id(value))
        if isinstance(value, dict):
            return yaml.MappingNode(_MAP, [(_node(k, seen), _node(v, seen)) for k, v in value.items()],
                                    flow_style=False)
        return yaml.SequenceNode(_SEQ, [_node(v, seen) for v in value], flow_style=False)
    raise _Unplain


def _str_node(data: str) -> yaml.ScalarNode:
    return yaml.ScalarNode(_STR, data, style=_str_style(data))


def _c_dump(obj: Any) -> str | None:
    """libyaml's output for `obj` from directly built nodes, or None when `_node` cannot build them."""
    assert _CDumper is not None
    try:
        node = _node(obj, set())
    except _Unplain:
        return None
    stream = io.StringIO()
    dumper = _CDumper(stream, default_flow_style=False, sort_keys=False, width=WIDTH)
    dumper.open()
    dumper.serialize(node)
    dumper.close()
    return stream.getvalue()


def dump(obj: Any) -> str:
    if _CDumper is not None and _fits(obj):
        fast = _c_dump(obj)
        if fast is not None:
            return fast
        return yaml.dump(obj, Dumper=_CDumper, sort_keys=False, default_flow_style=False, width=WIDTH)
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=WIDTH)


def dump_python(obj: Any) -> str:
    """The pure-Python emitter's output: the reference `dump` must equal (tests compare the two)."""
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=WIDTH)


_Loader = yaml.CSafeLoader if getattr(yaml, "__with_libyaml__", False) else yaml.SafeLoader


def load(text: str | bytes) -> Any:
    """`yaml.safe_load` with libyaml's parser when present (same values, about 10x faster)."""
    return yaml.load(text, Loader=_Loader)  # a SafeLoader (C or Python): plain data only

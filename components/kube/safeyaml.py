"""YAML a user commits, read with bounds: size, encoding, nesting, aliases, expanded size, duplicate keys.

`yaml.safe_load` itself is quick on an alias bomb (aliases resolve to shared nodes), but whatever walks
the result afterwards — `json.dumps`, pydantic — expands it: a 500-byte "billion laughs" file runs for
minutes and gigabytes. So the document is parsed into events and composed into nodes first, every limit
is checked on those (linear in the file's size, the expanded size memoised per node), and only then is it
constructed. Every refusal is one line with the line and column where YAML reports them.
"""

from __future__ import annotations

import codecs
from typing import Any

import yaml

Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_BYTES = 1 << 20
"""A stack file is a few kilobytes; 1 MiB leaves room for a 300-member fleet (about 150 KiB) and stops a runaway."""
MAX_DEPTH = 32
"""Nesting of mappings and sequences (stack files need 7)."""
MAX_ALIASES = 256
MAX_NODES = 200_000
"""Nodes after expanding every alias (a 300-member stack is about 20,000)."""

_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"), (codecs.BOM_UTF16_LE, "UTF-16"),
         (codecs.BOM_UTF16_BE, "UTF-16"))


class YamlRefused(ValueError):
    """The text is not acceptable YAML; `str()` is one line (no file name: callers prefix their own)."""


def _at(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "somewhere"


def decode(data: bytes) -> str:
    """UTF-8 text (a UTF-8 BOM is allowed); anything else is refused naming the first bad byte's line and column."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            raise YamlRefused(f"is {name} encoded; save it as UTF-8")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        column = exc.start - (before.rfind(b"\n") + 1) + 1
        raise YamlRefused(f"is not UTF-8: byte 0x{data[exc.start]:02x} at line {line}, column {column} "
                          "(save the file as UTF-8)") from None
    return text


def _problem(exc: yaml.YAMLError, text: str) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or exc.context or "syntax error"
        context = f" ({exc.context} at {_at(exc.context_mark)})" if exc.context and exc.problem else ""
        lines = text.splitlines()
        if mark is not None and mark.line < len(lines) and "\t" in lines[mark.line][: mark.column + 1]:
            what, context = "a tab character; YAML indents with spaces only", ""
        return f"{_at(mark)}: {what}{context}"
    if isinstance(exc, yaml.reader.ReaderError):
        before = text[: exc.position]
        line, column = before.count("\n") + 1, exc.position - (before.rfind("\n") + 1) + 1
        return f"line {line}, column {column}: character U+{exc.character:04X} is not allowed in YAML ({exc.reason})"
    return " ".join(str(exc).split())


def _check_events(text: str, max_aliases: int) -> None:
    depth = aliases = 0
    documents = 0
    for event in yaml.parse(text, Loader=Loader):
        if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise YamlRefused(f"{_at(event.start_mark)}: nested more than {MAX_DEPTH} levels deep")
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            depth -= 1
        elif isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > max_aliases:
                if not max_aliases:
                    raise YamlRefused(f"{_at(event.start_mark)}: YAML aliases (*name) are not read here; write the "
                                      "value out")
                raise YamlRefused(f"{_at(event.start_mark)}: more than {max_aliases} aliases (*name); write the "
                                  "values out")
        elif isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise YamlRefused(f"{_at(event.start_mark)}: a second YAML document (---); a stack file is one")


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """Nodes `node` stands for once every alias is expanded (each node computed once: linear)."""
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = MAX_NODES + 1  # a cycle (a recursive alias) counts as too big
    size = 1
    if isinstance(node, yaml.SequenceNode):
        for child in node.value:
            size += _expanded_size(child, memo)
            if size > MAX_NODES:
                break
    elif isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            size += _expanded_size(k, memo) + _expanded_size(v, memo)
            if size > MAX_NODES:
                break
    memo[key] = size
    return size


def _check_nodes(node: yaml.Node) -> None:
    if _expanded_size(node, {}) > MAX_NODES:
        raise YamlRefused(f"expands to more than {MAX_NODES} values through aliases (an alias bomb?); write the "
                          "values out")
    stack = [node]
    seen: set[int] = set()
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, yaml.MappingNode):
            keys: dict[Any, Any] = {}
            for k, v in current.value:
                if isinstance(k, yaml.ScalarNode):
                    if k.value in keys and k.value != "<<":
                        raise YamlRefused(f"{_at(k.start_mark)}: duplicate key '{k.value[:60]}' (first at "
                                          f"{_at(keys[k.value])}); YAML would silently keep only the last one")
                    keys[k.value] = k.start_mark
                elif not isinstance(k, yaml.ScalarNode):
                    raise YamlRefused(f"{_at(k.start_mark)}: a key must be a plain string, not a "
                                      f"{'list' if isinstance(k, yaml.SequenceNode) else 'mapping'}")
                stack += [k, v]
        elif isinstance(current, yaml.SequenceNode):
            stack += current.value


def load(data: bytes, max_aliases: int = MAX_ALIASES) -> Any:
    """Decode, check and construct one YAML document; YamlRefused (one line) for anything unacceptable.
    `max_aliases=0` refuses aliases outright (another stack's file, which Pulumi never writes with them)."""
    if len(data) > MAX_BYTES:
        raise YamlRefused(f"is {len(data):,} bytes; a stack file may be at most {MAX_BYTES:,}")
    text = decode(data)
    try:
        _check_events(text, max_aliases)
        node = yaml.compose(text, Loader=Loader)
        if node is None:
            return None
        _check_nodes(node)
        loader = Loader(text)
        try:
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise YamlRefused(f"not valid YAML: {_problem(exc, text)}") from None
    except RecursionError:
        raise YamlRefused(f"nested more than {MAX_DEPTH} levels deep") from None

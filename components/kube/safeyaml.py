"""YAML a user commits, read with bounds: size, encoding, nesting, aliases, expanded size, duplicate keys.

`yaml.safe_load` itself is quick on an alias bomb (aliases resolve to shared nodes), but whatever walks
the result afterwards — `json.dumps`, pydantic — expands it: a 500-byte "billion laughs" file runs for
minutes and gigabytes. So the document is parsed into events and composed into nodes first, every limit
is checked on those (linear in the file's size, the expanded size memoised per node), and only then is it
constructed. Every refusal is one line with the line and column where YAML reports them.
"""

from __future__ import annotations

import codecs
import re
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


_KEY = re.compile(r"(?:- )?([^\s:#{}\[\],'\"&*!|>%@`-][^#{}\[\],]*?):(?:\s|$)")

_HINTS = (
    ("while scanning an alias", "", "a plain value cannot start with * (YAML reads it as an alias): quote the value, "
     "like schedule: \"*/30 * * * *\""),
    ("while scanning an anchor", "", "a plain value cannot start with & (YAML reads it as an anchor): quote the value"),
    ("", "cannot start any token", "a plain value cannot start with this character: quote the value"),
    ("while parsing a flow mapping", "", "a {...} must be closed, and a value inside it that contains ': ' or ',' "
     "must be quoted, like description: \"placed first: after a loss\""),
    ("while parsing a flow sequence", "", "a [...] must be closed, and a value inside it that contains ': ' or ',' "
     "must be quoted"),
    ("", "mapping values are not allowed", "a value that contains ': ' must be quoted, like "
     "description: \"placed first: after a loss\""),
    ("while scanning a simple key", "", "this line is neither a key nor part of a value: check its indentation "
     "against the lines above (a multi-line value such as identityCsr: | keeps every line indented under its key)"),
    ("while parsing a block mapping", "", "keys of one mapping must line up, and a list item (- ) cannot sit among "
     "them: check the indentation against the lines above"),
    ("while parsing a block collection", "", "list items (- ) of one list must line up: check the indentation"),
)
"""(context, problem fragment, hint): what to write instead of PyYAML's own words for the mistakes people make."""


_AT_CONTEXT = ("while scanning a simple key", "while parsing a flow mapping", "while parsing a flow sequence",
               "while parsing a block mapping", "while parsing a block collection")


def key_path(text: str, line: int) -> str:
    """The key path a line sits under (`karmada-hub:karmada.priorityClasses`), read from the indentation of the lines
    above it; '' when there is none. For messages only: the document did not parse."""
    lines = text.splitlines()
    if line >= len(lines):
        return ""
    current = lines[line]
    indent = len(current) - len(current.lstrip(" "))
    own = _KEY.match(current.lstrip(" "))
    path = [own.group(1)] if own else []
    start = line - 1
    while not path and start >= 0:  # not a key itself: the value of the nearest key above at its level or less
        stripped = lines[start].lstrip(" ")
        level = len(lines[start]) - len(stripped)
        key = _KEY.match(stripped) if stripped and not stripped.startswith("#") else None
        if key and level <= indent:
            path, indent = [key.group(1)], level
        start -= 1
    for i in range(start, -1, -1):
        stripped = lines[i].lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        level = len(lines[i]) - len(stripped)
        if level >= indent:
            continue
        indent = level
        key = _KEY.match(stripped)
        if key and not stripped.startswith("- "):
            path.append(key.group(1))
        if level == 0:
            break
    path.reverse()
    if path[:1] == ["config"]:
        path = path[1:]
    return ".".join(path)


def _problem(exc: yaml.YAMLError, text: str) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or exc.context or "syntax error"
        context = f" ({exc.context} at {_at(exc.context_mark)})" if exc.context and exc.problem else ""
        lines = text.splitlines()
        if mark is not None and mark.line < len(lines) and "\t" in lines[mark.line][: mark.column + 1]:
            return f"{_at(mark)}: a tab character; YAML indents with spaces only"
        where = key_path(text, mark.line) if mark is not None else ""
        if exc.context in _AT_CONTEXT and exc.context_mark is not None:  # the line that started the broken part
            where = key_path(text, exc.context_mark.line)
            if "block" in exc.context:  # a whole block: name the key that holds it
                where = where.rpartition(".")[0] if "." in where else where
        hint = next((h for ctx, prob, h in _HINTS if (not ctx or ctx == exc.context) and prob in (exc.problem or "")),
                    "")
        return f"{_at(mark)}{f' (under {where})' if where else ''}: {what}{context}{f'; {hint}' if hint else ''}"
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


_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_OCTAL = re.compile(r"[-+]?0[0-7_]+")
_SEXAGESIMAL = re.compile(r"[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?")


def _under(text: str, mark: Any) -> str:
    where = key_path(text, mark.line) if text and mark is not None else ""
    return f" (under {where})" if where else ""


def _check_number(node: yaml.ScalarNode, text: str = "") -> None:
    """YAML 1.1 numbers nobody means: `010` is octal 8 and `1:30` is base-60 90 (Pulumi's YAML 1.2 reader
    disagrees about the latter), so a plain scalar written that way is refused with what to write instead."""
    if node.style or node.tag not in (_INT, _FLOAT):  # plain: None (Python loader) or '' (libyaml)
        return
    value = node.value
    if node.tag == _INT and _OCTAL.fullmatch(value):
        number = int(value.replace("_", ""), 8)
        plain = value[:1].strip("+0123456789") + (value.lstrip("+-").lstrip("0").replace("_", "") or "0")
        raise YamlRefused(f"{_at(node.start_mark)}{_under(text, node.start_mark)}: {value} is an octal number in "
                          f"YAML (it reads as {number}); write {plain}, or quote it (\"{value}\") if it is text")
    if _SEXAGESIMAL.fullmatch(value):
        raise YamlRefused(f"{_at(node.start_mark)}{_under(text, node.start_mark)}: {value} is a base-60 number in "
                          f"YAML 1.1 (hubctl would read a number, Pulumi a string); quote it (\"{value}\")")


def _check_nodes(node: yaml.Node, text: str = "") -> None:
    if _expanded_size(node, {}) > MAX_NODES:
        raise YamlRefused(f"expands to more than {MAX_NODES} values through aliases (an alias bomb?); write the "
                          "values out")
    stack = [node]
    seen: set[int] = set()
    items: set[int] = set()
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
                        hint = ("; a list item starts with '- ': a line that lost its dash merges it into the item "
                                "above") if id(current) in items else ""
                        raise YamlRefused(f"{_at(k.start_mark)}{_under(text, k.start_mark)}: duplicate key "
                                          f"'{k.value[:60]}' (first at "
                                          f"{_at(keys[k.value])}); YAML would silently keep only the last one{hint}")
                    keys[k.value] = k.start_mark
                elif not isinstance(k, yaml.ScalarNode):
                    raise YamlRefused(f"{_at(k.start_mark)}: a key must be a plain string, not a "
                                      f"{'list' if isinstance(k, yaml.SequenceNode) else 'mapping'}")
                stack += [k, v]
        elif isinstance(current, yaml.SequenceNode):
            stack += current.value
            items.update(id(n) for n in current.value)
        elif isinstance(current, yaml.ScalarNode):
            _check_number(current, text)


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
        _check_nodes(node, text)
        loader = Loader(text)
        try:
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise YamlRefused(f"not valid YAML: {_problem(exc, text)}") from None
    except RecursionError:
        raise YamlRefused(f"nested more than {MAX_DEPTH} levels deep") from None

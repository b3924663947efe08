"""`hubctl diff` as Markdown for a pull request: the deltas that matter first, removals and replacements next,
then every change grouped by component; long values as unified diffs, certificates as what is in them.

A PR comment holds at most 65,536 characters. The renderer tries levels of detail from full to counts only
and returns the first that fits `max_chars`, saying so at the top: it degrades to a summary, it never cuts
a comment off in the middle.
"""

from __future__ import annotations

import difflib
import json
from collections import defaultdict
from typing import Any

from hubctl import certs
from hubctl.diff import (
    ACTION_LABEL,
    ACTIONS,
    MISSING,
    Change,
    FileDiff,
    PlanDiff,
    ResourceChange,
    reordered,
    secret_placeholder,
)

DEFAULT_MAX_CHARS = 60_000
"""Under GitHub's 65,536-character comment limit, with room for the workflow's own headings."""
SHORT = 80
"""Values longer than this (or with a newline) are shown as a diff below the table, never cut."""
DETAILS_OVER = 12
"""A list with more entries than this goes into a <details> block."""
ICON = {"delete": "✖", "replace": "↻", "create": "＋", "update": "～", "ignored": "⊘", "state": "·"}
LEVELS = ("full", "without long-value diffs", "one line per resource", "counts per component", "totals only")


# ------------------------------------------------------------------------------------------ cells


def _code(text: str) -> str:
    text = text.replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _is_long(value: Any) -> bool:
    return isinstance(value, str) and (len(value) > SHORT or "\n" in value)


def _cell(value: Any) -> str:
    if value is MISSING:
        return "_(absent)_"
    secret = secret_placeholder(value)
    if secret is not None:
        return "_secret_"
    if certs.looks_like_cert(value):
        found = certs.parse_all(certs.pem_text(value) or "")
        return f"_{len(found)} certificate{'s' if len(found) != 1 else ''}_" if found else "_PEM_"
    if _is_long(value):
        lines = value.count("\n") + 1
        return f"_{len(value)} characters, {lines} line{'s' if lines != 1 else ''} (diff below)_"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    if len(text) > SHORT:
        return f"_{len(text)} characters of JSON (diff below)_"
    return _code(text)


def _secret_note(change: Change) -> str:
    a, b = secret_placeholder(change.before), secret_placeholder(change.after)
    if a is None and b is None:
        return ""
    if change.before is MISSING:
        return "secret key added"
    if change.after is MISSING:
        return "secret key removed"
    if a is not None and b is not None:
        return "secret value changed" if a != b else "secret"
    return ""


def _body(change: Change) -> list[str]:
    """The lines under a table for one long value: a certificate summary or a unified diff around the change."""
    before, after = change.before, change.after
    if certs.looks_like_cert(before) or certs.looks_like_cert(after):
        lines = certs.describe_change(certs.pem_text(before), certs.pem_text(after))
        return [f"  - `{change.path}`: {line}" for line in lines] + ([""] if lines else [])
    if not (_is_long(before) or _is_long(after) or _long_json(before) or _long_json(after)):
        return []
    a = _text(before)
    b = _text(after)
    if "\n" not in a and "\n" not in b:
        return [f"  `{change.path}`:", "", "  ```diff", *_inline(a, b), "  ```", ""]
    diff = list(difflib.unified_diff(a.splitlines(), b.splitlines(), "before", "after", n=3, lineterm=""))
    return [f"  `{change.path}`:", "", "  ```diff", *(f"  {line}" for line in diff[2:]), "  ```", ""]


def _long_json(value: Any) -> bool:
    return isinstance(value, dict | list) and len(json.dumps(value)) > SHORT


def _text(value: Any) -> str:
    if value is MISSING or value is None:
        return ""
    if isinstance(value, str):
        return value
    from components.kube.yamlutil import dump

    return dump(value).rstrip("\n")


def _inline(a: str, b: str, context: int = 40) -> list[str]:
    """One long line changed: the differing middle with `context` characters either side."""
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    lo = max(0, start - context)

    def cut(s: str) -> str:
        hi = len(s) - max(0, end - context)
        return ("…" if lo else "") + s[lo:hi] + ("…" if hi < len(s) else "")

    return [f"  - {cut(a)}", f"  + {cut(b)}"]


# ------------------------------------------------------------------------------------------ blocks


def _details(summary: str, lines: list[str]) -> list[str]:
    return [f"<details><summary>{summary}</summary>", "", *lines, "", "</details>", ""]


def _signature(change: ResourceChange) -> str:
    """Equal for resources that change in exactly the same way (three servers' cloud-init, 300 estimators)."""
    return json.dumps([change.action, change.type, change.reasons, change.delete_before_replace,
                       [(c.path, c.before is MISSING, c.after is MISSING, c.before, c.after, c.effect, c.why)
                        for c in change.changes],
                       [(f.path, f.secret, f.before is None, f.after is None, _unified(f.before, f.after))
                        for f in change.files]], default=repr, sort_keys=True)


def _unified(before: str | None, after: str | None) -> list[str]:
    return list(difflib.unified_diff((before or "").splitlines(), (after or "").splitlines(), "before", "after", n=3,
                                     lineterm=""))[2:]


def _grouped(changes: list[ResourceChange]) -> list[list[ResourceChange]]:
    groups: dict[str, list[ResourceChange]] = {}
    for c in changes:
        key = _signature(c) if not c.children else c.urn
        groups.setdefault(key, []).append(c)
    return list(groups.values())


def _where(change: ResourceChange) -> str:
    return f" on `{change.target}`" if change.target else ""


def _headline(change: ResourceChange, same: list[ResourceChange] | None = None) -> str:
    same = same or [change]
    if len(same) == 1:
        who = f"{_code(change.label)}{_where(change)}"
    elif len(same) <= 5:
        who = ", ".join(f"{_code(c.label)}{_where(c)}" for c in same)
        who += " (the same change on each)" if change.action not in ("create", "delete") else ""
    else:
        who = f"{len(same)} resources like {_code(change.label)}{_where(change)}"
        who += " (the same change on each; listed below)" if change.action not in ("create", "delete") else \
            " (listed below)"
    head = f"- {ICON[change.action]} **{ACTION_LABEL[change.action]}** {who}"
    if change.children:
        head += f" and its {len(change.children)} resources"
    if change.action == "replace":
        forcing = sorted({c.path for c in change.changes if c.effect == "replace"})
        if forcing:
            shown = ", ".join(_code(p) for p in forcing[:4]) + (", …" if len(forcing) > 4 else "")
            head += f" — {shown} force{'s' if len(forcing) == 1 else ''} a new one"
        elif change.reasons:
            head += f" — {'; '.join(change.reasons)}"
        if change.delete_before_replace:
            head += " (**deleted before it is recreated**)"
        if change.create_conflict:
            head += f" ⚠ {change.create_conflict}"
    return head


def _table(changes: list[Change], with_bodies: bool) -> list[str]:
    rows = ["  | field | before | after | effect |", "  | --- | --- | --- | --- |"]
    bodies: list[str] = []
    for c in changes:
        effect = {"replace": "**replace**", "ignored": "not applied", "state": "state"}.get(c.effect, "update")
        if c.why and c.effect != "update":
            effect += f" ({c.why})"
        secret = _secret_note(c)
        if reordered(c.before, c.after):
            effect += " (reordered)"
        before, after = (_cell(c.before), _cell(c.after)) if not secret else (
            "_(absent)_" if c.before is MISSING else "_secret_", "_(absent)_" if c.after is MISSING else "_secret_")
        if secret:
            effect += f" ({secret})"
        rows.append(f"  | {_code(c.path)} | {before} | {after} | {effect.replace('|', '/')} |")
        if with_bodies and not secret:
            bodies += _body(c)
    return ["", *rows, "", *bodies] if bodies else ["", *rows, ""]


def _files(files: list[FileDiff], with_bodies: bool) -> list[str]:
    lines: list[str] = []
    for f in files:
        state = "added" if f.before is None else "removed" if f.after is None else "changed"
        if f.secret:
            lines.append(f"  - `{f.path}` {state} (secret; content not shown)")
            continue
        lines.append(f"  - `{f.path}` {state}")
        if with_bodies:
            lines += ["", "    ```diff", *(f"    {line}" for line in _unified(f.before, f.after)), "    ```", ""]
    return lines


def _resource(group: list[ResourceChange], level: int) -> list[str]:
    change = group[0]
    out = [_headline(change, group)]
    if len(group) > 5 and level < 2:
        listed = [f"- {_code(c.label)}{_where(c)}" for c in group]
        out += ["", *_indent(_details(f"{len(group)} resources", listed))]
    if change.children:
        if level < 2:
            listed = [f"- {_code(c.label)}{_where(c)}" for c in change.children]
            out += ["", *_indent(_details(f"{len(listed)} resources", listed))]
        return out
    shown = [c for c in change.changes if not (c.path == "userData" and change.files)]
    if level >= 2:
        paths = sorted({c.path.split(".")[0].split("[")[0] for c in change.changes})
        if paths:
            out[0] += f" ({', '.join(paths[:6])}{', …' if len(paths) > 6 else ''})"
        return out
    if (change.cascade_from and not shown) or (change.reasons and not change.changes and not change.files):
        if change.action == "state" and change.reasons:
            out[0] += f" — {'; '.join(change.reasons)}"
        return out
    if shown:
        table = _table(shown, with_bodies=level == 0)
        out += table if len(shown) <= DETAILS_OVER else ["", *_indent(_details(f"{len(shown)} fields", table))]
    if change.files:
        user_data = next((c for c in change.changes if c.path == "userData"), None)
        effect = {"ignored": "not applied", "replace": "**replaces the server**"}.get(
            user_data.effect if user_data else "", "changes")
        note = f" ({user_data.why})" if user_data and user_data.why else ""
        files = _files(change.files, with_bodies=level == 0)
        summary = f"cloud-init: {len(change.files)} file{'s' if len(change.files) != 1 else ''} changed"
        out += ([] if out[-1] == "" else [""]) + [f"  user-data {effect}{note}", "", *_indent(_details(summary, files))]
    return out


def _indent(lines: list[str]) -> list[str]:
    return [f"  {line}" if line else "" for line in lines]


def _cascades(changes: list[ResourceChange]) -> tuple[list[ResourceChange], dict[str, list[ResourceChange]]]:
    """Replacements that only follow from a replaced provider, grouped under it (one root cause, one count)."""
    grouped: dict[str, list[ResourceChange]] = defaultdict(list)
    rest = []
    for c in changes:
        if c.action == "replace" and c.cascade_from and not c.changes and c.type.startswith("kubernetes:"):
            grouped[c.cascade_from].append(c)
        else:
            rest.append(c)
    return rest, grouped


# ------------------------------------------------------------------------------------------ document


def _summary_line(diff: PlanDiff) -> str:
    counts = diff.counts()
    parts = [f"{counts[a]} to {ACTION_LABEL[a]}" if a in ("delete", "replace", "create", "update")
             else f"{counts[a]} {ACTION_LABEL[a]}" for a in ACTIONS]
    return f"**{' · '.join(parts)}** ({diff.old_resources} → {diff.new_resources} resources)"


def _deltas(diff: PlanDiff) -> list[str]:
    if not diff.deltas and not diff.certificates and not diff.whatif:
        return []
    out = ["#### At a glance", ""]
    if diff.whatif:
        lines = [f"- {_code(line)}" for line in diff.whatif]
        title = f"what-if: {len(lines)} placement{'s' if len(lines) != 1 else ''} or loss outcome" \
                f"{'s' if len(lines) != 1 else ''} change"
        out += _details(title, lines) if len(lines) > 8 else [f"**{title}**", "", *lines, ""]
    if diff.deltas:
        out += ["| | before | after | |", "| --- | ---: | ---: | --- |"]
        for d in diff.deltas:
            unit = f" {d.unit}" if d.unit else ""

            def fmt(v: Any, u: str = unit) -> str:
                if v is None:
                    return "—"
                if isinstance(v, float) and v.is_integer():
                    v = int(v)
                return f"{v}{u}"

            mark = {"better": "✓ better", "worse": "⚠ worse"}.get(d.verdict, "")
            out.append(f"| {d.section}: {d.metric} | {fmt(d.before)} | {fmt(d.after)} | {mark} |")
        out.append("")
    if diff.certificates:
        lines = [f"- {line}" for line in diff.certificates]
        title = f"certificates: {len(lines)} reissued, added or removed"
        out += _details(title, lines) if len(lines) > 3 else [f"**{title}**", "", *lines, ""]
    return out


def _render(diff: PlanDiff, level: int, note: str = "") -> str:
    lines = [f"### karmada-hub plan diff: `{diff.stack}`", "", _summary_line(diff), ""]
    if note:
        lines += [f"> {note}", ""]
    lines += [f"> {n}" for n in diff.notes] + ([""] if diff.notes else [])
    lines += _deltas(diff)
    if not diff.resources and not diff.outputs:
        lines += ["No changes."]
        return "\n".join(lines).rstrip("\n") + "\n"
    if level >= 4:
        return "\n".join(lines).rstrip("\n") + "\n"
    rest, cascades = _cascades(diff.resources)
    by_component: dict[str, list[ResourceChange]] = defaultdict(list)
    for c in rest:
        by_component[c.component].append(c)
    if level == 3:
        lines += ["#### Changes per component", "", "| component | " + " | ".join(ACTION_LABEL[a] for a in ACTIONS)
                  + " |", "| --- |" + " ---: |" * len(ACTIONS)]
        for component in sorted(by_component):
            n = {a: sum(1 + len(c.children) for c in by_component[component] if c.action == a) for a in ACTIONS}
            lines.append(f"| {component} | " + " | ".join(str(n[a]) for a in ACTIONS) + " |")
        for provider, group in sorted(cascades.items()):
            name = provider.rsplit("::", 1)[-1]
            lines.append(f"| replaced with provider {name} | 0 | {len(group)} | 0 | 0 | 0 | 0 |")
        return "\n".join(lines).rstrip("\n") + "\n"
    danger = [c for c in rest if c.action in ("delete", "replace")]
    if danger or cascades:
        lines += ["#### Removals and replacements", ""]
        for component in sorted({c.component for c in danger}):
            lines += [f"**{component}**", ""]
            for group in _grouped([c for c in danger if c.component == component]):
                lines += _resource(group, level)
            lines.append("")
        for provider, group in sorted(cascades.items()):
            name = provider.rsplit("::", 1)[-1]
            listed = [f"- {_code(c.label)} ({c.component})" for c in group]
            lines += [f"- {ICON['replace']} **replace {len(group)} objects** managed by provider `{name}`, "
                      f"because the provider is replaced (deleted before they are recreated)", "",
                      *_indent(_details(f"{len(group)} objects", listed))]
    calm = [c for c in rest if c.action not in ("delete", "replace")]
    if calm:
        lines += ["#### Changes by component", ""]
        for component in sorted({c.component for c in calm}):
            entries: list[str] = []
            members = [c for c in calm if c.component == component]
            groups = _grouped(members)
            for group in groups:
                entries += _resource(group, level)
            header = f"##### {component}"
            lines += [header, ""] + (entries if len(groups) <= DETAILS_OVER else
                                     _details(f"{len(members)} resources changed", entries)) + [""]
    if diff.outputs:
        lines += ["#### Outputs", "", *_table(diff.outputs, with_bodies=level == 0)]
    return "\n".join(lines).rstrip("\n") + "\n"


def markdown(diff: PlanDiff, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The most detailed rendering that fits `max_chars`; a degraded one says what it left out."""
    full = _render(diff, 0)
    if len(full) <= max_chars:
        return full
    for level in range(1, len(LEVELS)):
        note = (f"The full diff is {len(full):,} characters, over the {max_chars:,}-character limit of a PR comment; "
                f"this is the {LEVELS[level]} view. Run `hubctl diff OLD NEW` (or `--json`) on the two plans for "
                "everything.")
        text = _render(diff, level, note)
        if len(text) <= max_chars:
            return text
    return _render(diff, len(LEVELS) - 1, note)

"""`hubctl diff OLD NEW`: a Markdown summary of two offline plans, ready to paste into a pull request.

Added, removed and changed resources by URN, with field-level changes of the inputs. Like the plan it
works from, it cannot tell an update from a replacement (only the provider can); it flags
`replace?` where a changed field is listed in the resource's `replaceOnChanges`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAX_VALUE = 80
MAX_FIELDS = 25


def load_plan(path: Path) -> dict[str, Any]:
    if path.is_dir():
        path = path / "plan.json"
    return json.loads(path.read_text())


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """{'spec': {'replicas': 2}} -> {'spec.replicas': 2}; lists by index."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, item in enumerate(value):
            out.update(flatten(item, f"{prefix}[{i}]"))
        return out
    return {prefix: value}


def _show(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    text = text.replace("\n", "\\n").replace("|", "\\|")
    return f"`{text[:MAX_VALUE]}{'…' if len(text) > MAX_VALUE else ''}`"


def field_changes(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    a, b = flatten(old), flatten(new)
    missing = object()
    changes = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key, missing), b.get(key, missing)
        if va != vb:
            changes.append((key, None if va is missing else va, None if vb is missing else vb))
    return changes


def _label(resource: dict[str, Any]) -> str:
    return f"`{resource['type']}` **{resource['name']}**"


def diff_plans(old: dict[str, Any], new: dict[str, Any]) -> str:
    olds = {r["urn"]: r for r in old["resources"]}
    news = {r["urn"]: r for r in new["resources"]}
    added = sorted(set(news) - set(olds))
    removed = sorted(set(olds) - set(news))
    changed = []
    for urn in sorted(set(olds) & set(news)):
        before = {"inputs": olds[urn]["inputs"], "options": olds[urn].get("options", {}),
                  "dependencies": olds[urn].get("dependencies", [])}
        after = {"inputs": news[urn]["inputs"], "options": news[urn].get("options", {}),
                 "dependencies": news[urn].get("dependencies", [])}
        fields = field_changes(before, after)
        if fields:
            changed.append((urn, fields))
    lines = [f"### karmada-hub plan diff: `{new['stack']}`", ""]
    lines.append(f"**{len(added)} to add, {len(changed)} to change, {len(removed)} to remove** "
                 f"({len(news)} resources in the new plan)")
    if not (added or removed or changed):
        lines += ["", "No changes."]
    if added:
        lines += ["", "#### Added", ""] + [f"- {_label(news[u])}" for u in added]
    if removed:
        lines += ["", "#### Removed", ""] + [f"- {_label(olds[u])}" for u in removed]
    if changed:
        lines += ["", "#### Changed"]
        for urn, fields in changed:
            replace_on = set(news[urn].get("options", {}).get("replaceOnChanges", []))
            flag = " (replace?)" if any(f[0].split(".")[1] in replace_on for f in fields if "." in f[0]) else ""
            lines += ["", f"- {_label(news[urn])}{flag}", "", "  | field | old | new |", "  | --- | --- | --- |"]
            for key, before, after in fields[:MAX_FIELDS]:
                lines.append(f"  | `{key}` | {_show(before)} | {_show(after)} |")
            if len(fields) > MAX_FIELDS:
                lines.append(f"  | … {len(fields) - MAX_FIELDS} more fields | | |")
    if old.get("outputs") != new.get("outputs"):
        lines += ["", "#### Outputs", "", "  | output | old | new |", "  | --- | --- | --- |"]
        for key, before, after in field_changes(old.get("outputs", {}), new.get("outputs", {})):
            lines.append(f"  | `{key}` | {_show(before)} | {_show(after)} |")
    return "\n".join(lines) + "\n"

"""`hubctl diff OLD NEW`: what a change does to a stack, computed from two offline plans.

The model (this module) and its Markdown (`diff_render.py`) are separate, so `--json` and the PR comment say
the same thing. For every resource the diff says what the engine would do — create, delete, replace,
update, not applied (`ignoreChanges`, or an input the provider ignores) or state only (dependencies,
options) — and why, from the providers' own replace rules (`replacement.py`). Lists are matched by their
entries' keys (name, cluster, path, ...) or, without a key, by content, so removing the first member is one
removal, not a hundred shifted indexes. Server user-data (a secret in plan.json) is diffed per file from the
plans' `cloud-init/` directories, and the reports beside the plans (`report.json`) give the budget,
version-skew and certificate deltas.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.kube.safeyaml import YamlRefused
from components.kube.safeyaml import load as load_yaml
from hubctl import replacement


class _Missing:
    def __repr__(self) -> str:
        return "<absent>"


MISSING: Any = _Missing()
"""A key or list entry that does not exist on one side."""

LIST_KEYS = ("name", "clusterName", "cluster", "key", "path", "mountPath", "affinityName", "containerPort",
             "port", "ip", "labelSelector", "id", "type")
"""Fields that identify an entry of a list of objects, tried in this order (unique on both sides)."""

ACTIONS = ("delete", "replace", "create", "update", "ignored", "state")
"""Display order: what removes or recreates something first."""
ACTION_LABEL = {"delete": "remove", "replace": "replace", "create": "add", "update": "update",
                "ignored": "not applied", "state": "state only"}


@dataclass
class Change:
    path: str
    before: Any
    after: Any
    effect: str = "update"
    """update | replace | ignored | state."""
    why: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "before": None if self.before is MISSING else self.before,
                "after": None if self.after is MISSING else self.after, "added": self.before is MISSING,
                "removed": self.after is MISSING, "effect": self.effect, "why": self.why}


@dataclass
class FileDiff:
    """One file inside a server's user-data (or one top-level cloud-config key)."""

    path: str
    before: str | None
    after: str | None
    secret: bool = False

    def as_dict(self) -> dict[str, Any]:
        if self.secret:
            return {"path": self.path, "secret": True, "added": self.before is None, "removed": self.after is None}
        return {"path": self.path, "before": self.before, "after": self.after, "secret": False}


@dataclass
class ResourceChange:
    urn: str
    type: str
    name: str
    component: str
    action: str
    target: str | None = None
    """Kubernetes API server (`host`, `karmada`, `member-x`) the object goes to."""
    label: str = ""
    changes: list[Change] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    delete_before_replace: bool = False
    cascade_from: str | None = None
    """The replaced resource this replacement follows from (a provider), when that is the only reason."""
    create_conflict: str | None = None
    """Why creating the replacement before deleting the old one would fail (a name unique per project)."""
    files: list[FileDiff] = field(default_factory=list)
    children: list[ResourceChange] = field(default_factory=list)
    """For a component added or removed whole: its descendants (shown as one line)."""
    depth: int = 0

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"urn": self.urn, "type": self.type, "name": self.name, "component": self.component,
                               "action": self.action, "label": self.label}
        if self.target:
            out["target"] = self.target
        if self.changes:
            out["changes"] = [c.as_dict() for c in self.changes]
        if self.reasons:
            out["reasons"] = self.reasons
        if self.delete_before_replace:
            out["deleteBeforeReplace"] = True
        if self.cascade_from:
            out["cascadeFrom"] = self.cascade_from
        if self.files:
            out["files"] = [f.as_dict() for f in self.files]
        if self.children:
            out["children"] = [c.urn for c in self.children]
        return out


@dataclass
class Delta:
    section: str
    metric: str
    before: Any
    after: Any
    unit: str = ""
    better: str = ""

    @property
    def verdict(self) -> str:
        """`better` / `worse` / `` for a numeric metric that says which way is good."""
        if not self.better or not all(isinstance(v, int | float) for v in (self.before, self.after)):
            return ""
        lower_is_better = self.better == "lower"
        return "better" if (self.after < self.before) == lower_is_better else "worse"

    def as_dict(self) -> dict[str, Any]:
        return {"section": self.section, "metric": self.metric, "before": self.before, "after": self.after,
                "unit": self.unit, "verdict": self.verdict}


@dataclass
class PlanDiff:
    stack: str
    old_resources: int
    new_resources: int
    resources: list[ResourceChange]
    outputs: list[Change]
    deltas: list[Delta]
    certificates: list[str]
    """Lines about certificates reissued, added or removed (from the reports)."""
    notes: list[str] = field(default_factory=list)
    whatif: list[str] = field(default_factory=list)
    """Lines about what-if rows that change: a tenant's initial placement, or what one loss now does to it."""

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(ACTIONS, 0)
        for r in self.resources:
            counts[r.action] += 1 + len(r.children)
        return counts

    def as_dict(self) -> dict[str, Any]:
        return {"stack": self.stack, "resources": {"before": self.old_resources, "after": self.new_resources},
                "counts": self.counts(), "changes": [r.as_dict() for r in self.resources],
                "outputs": [c.as_dict() for c in self.outputs], "deltas": [d.as_dict() for d in self.deltas],
                "certificates": self.certificates, "notes": self.notes, "whatif": self.whatif}


# ------------------------------------------------------------------------------------------ values


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key_path(prefix: str, key: str) -> str:
    part = key if _PLAIN_KEY.match(key) else f'["{key}"]'
    if not prefix:
        return part
    return f"{prefix}.{part}" if _PLAIN_KEY.match(key) else f"{prefix}{part}"


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or value is None


def _key_value(item: dict[str, Any], key: str) -> str | None:
    """The identifying value of a list entry under `key`: a scalar, or a targetCluster naming clusters."""
    value = item.get(key)
    if _scalar(value) and key in item:
        return str(value)
    if key == "targetCluster" and isinstance(value, dict) and set(value) == {"clusterNames"}:
        return ",".join(str(c) for c in value["clusterNames"] or [])
    return None


def _list_key(a: list[Any], b: list[Any]) -> str | None:
    items = a + b
    if not items or not all(isinstance(x, dict) for x in items):
        return None
    for key in (*LIST_KEYS, "targetCluster"):
        if all(_key_value(x, key) is not None for x in items):
            va, vb = [_key_value(x, key) for x in a], [_key_value(x, key) for x in b]
            if len(set(va)) == len(va) and len(set(vb)) == len(vb):
                return key
    return None


def _follow_clusters(olds: dict[str, Any], news: dict[str, Any]) -> dict[str, Any]:
    """Rules targeted by cluster names are the same rule when they share clusters (a member joined or left a
    region's rule): re-key each new entry that overlaps exactly one old entry, and that old one only it, under the
    old key, so the change shows as the one name added or removed, not a rule replaced."""
    sets = {k: set(k.split(",")) - {""} for k in (*olds, *news)}
    out: dict[str, Any] = {}
    for k, item in news.items():
        matches = [o for o in olds if sets[o] & sets[k]]
        back = [n for n in news if matches and sets[n] & sets[matches[0]]]
        same = len(matches) == 1 and back == [k] and (matches[0] == k or matches[0] not in news)
        out[matches[0] if same else k] = item
    return out


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def diff_values(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Every leaf change from `a` to `b` as (path, before, after); MISSING marks an absent side."""
    out: list[tuple[str, Any, Any]] = []
    _diff(a, b, path, out)
    return out


def _diff(a: Any, b: Any, path: str, out: list[tuple[str, Any, Any]]) -> None:
    if a == b and type(a) is type(b):
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            _diff(a.get(key, MISSING), b.get(key, MISSING), _key_path(path, str(key)), out)
        return
    if isinstance(a, list) and isinstance(b, list):
        _diff_list(a, b, path, out)
        return
    out.append((path, a, b))


def reordered(before: Any, after: Any) -> bool:
    """The same entries in another order (a change of order only, shown as one)."""
    if not isinstance(before, list) or not isinstance(after, list) or before == after:
        return False
    return sorted(_canon(x) for x in before) == sorted(_canon(x) for x in after)


def _diff_list(a: list[Any], b: list[Any], path: str, out: list[tuple[str, Any, Any]]) -> None:
    key = _list_key(a, b)
    if key is not None:
        olds = {str(_key_value(x, key)): x for x in a}
        news = {str(_key_value(x, key)): x for x in b}
        if key == "targetCluster":
            news = _follow_clusters(olds, news)
        kept_before = [k for k in olds if k in news]
        kept_after = [k for k in news if k in olds]
        if kept_before != kept_after:  # entries matched by key, but in another order: order is meaning here
            out.append((path, kept_before, kept_after))  # (affinity groups are tried in order, for one)
        for k, item in olds.items():
            _diff(item, news.get(k, MISSING), f"{path}[{key}={k}]", out)
        for k, item in news.items():
            if k not in olds:
                out.append((f"{path}[{key}={k}]", MISSING, item))
        return
    ca, cb = [_canon(x) for x in a], [_canon(x) for x in b]
    if ca != cb and sorted(ca) == sorted(cb):
        out.append((path, a, b))  # one reorder, not an entry removed here and added there
        return
    matcher = difflib.SequenceMatcher(None, ca, cb, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        pairs = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(pairs):
            _diff(a[i1 + k], b[j1 + k], f"{path}[{j1 + k}]", out)
        for i in range(i1 + pairs, i2):
            out.append((f"{path}[{i}]", a[i], MISSING))
        for j in range(j1 + pairs, j2):
            out.append((f"{path}[{j}]", MISSING, b[j]))


# ------------------------------------------------------------------------------------------ secrets


_FINGERPRINT = re.compile(r"^\[secret [0-9a-f]{12}\]$")


def secret_placeholder(value: Any) -> str | None:
    """`[secret <fp>]` for a per-key redacted Secret value (plain or base64 under `data`), else None."""
    if not isinstance(value, str):
        return None
    if value == "[secret]" or _FINGERPRINT.match(value):
        return value
    if len(value) == 28:
        try:
            text = base64.b64decode(value, validate=True).decode("ascii")
        except (binascii.Error, ValueError, UnicodeDecodeError):
            return None
        if _FINGERPRINT.match(text):
            return text
    return None


# ------------------------------------------------------------------------------------------ cloud-init


def _cloud_init(plan_dir: Path | None) -> dict[str, dict[str, Any]]:
    """server name -> its user-data document, from `<plan>/cloud-init/*.yaml`."""
    if plan_dir is None or not (plan_dir / "cloud-init").is_dir():
        return {}
    docs = {}
    for path in sorted((plan_dir / "cloud-init").glob("*.yaml")):
        try:
            doc = load_yaml(path.read_bytes())
        except (OSError, YamlRefused):
            continue
        if isinstance(doc, dict):
            docs[path.stem] = doc
    return docs


def _files_of(doc: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """path -> (content, secret) for every write_files entry, and `#<key>` -> YAML for other cloud-config keys."""
    from components.kube.yamlutil import dump

    files: dict[str, tuple[str, bool]] = {}
    for entry in doc.get("write_files") or []:
        if isinstance(entry, dict) and "path" in entry:
            content = str(entry.get("content", ""))
            files[str(entry["path"])] = (content, content == "[secret]")
    for key, value in doc.items():
        if key != "write_files":
            files[f"#cloud-config {key}"] = (dump({key: value}), False)
    return files


def cloud_init_diff(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[FileDiff]:
    a, b = _files_of(old or {}), _files_of(new or {})
    out = []
    for path in sorted(set(a) | set(b)):
        before, after = a.get(path), b.get(path)
        if before == after:
            continue
        secret = bool((before and before[1]) or (after and after[1]))
        out.append(FileDiff(path, before[0] if before else None, after[0] if after else None, secret))
    return out


# ------------------------------------------------------------------------------------------ resources


def _labels(plan: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, int]]:
    """urn -> top-level component label, urn -> depth under it."""
    by_urn = {r["urn"]: r for r in plan["resources"]}
    labels, depths = {}, {}
    for r in plan["resources"]:
        top, depth = r, 0
        seen = set()
        while top.get("parent") and top["parent"] in by_urn and top["urn"] not in seen:
            seen.add(top["urn"])
            top = by_urn[top["parent"]]
            depth += 1
        custom = not str(r["type"]).startswith("karmada-hub:index:")
        labels[r["urn"]] = (f"{top['type'].rsplit(':', 1)[-1]} {top['name']}"
                            if top is not r or not custom else "(stack)")
        depths[r["urn"]] = depth
    return labels, depths


def k8s_target(provider_urn: str) -> str | None:
    if "pulumi:providers:kubernetes::" not in provider_urn:
        return None
    name = provider_urn.rsplit("::", 1)[-1]
    return name[len("k8s-"):] if name.startswith("k8s-") else name


def urn_label(urn: str) -> str:
    """`urn:pulumi:dev::karmada-hub::a$hcloud:index/server:Server::hub-server-0` -> `Server hub-server-0`."""
    parts = str(urn).split("::")
    if len(parts) < 4:
        return str(urn)
    kind = parts[2].split("$")[-1].rsplit(":", 1)[-1]
    return f"{kind} {parts[-1]}"


def resource_label(res: Mapping[str, Any]) -> str:
    """What a reviewer recognises: `Deployment karmada-system/karmada-apiserver` (on `host`), `Server cp-0`."""
    kind = str(res["type"]).rsplit(":", 1)[-1]
    inputs = res.get("inputs") or {}
    if str(res["type"]).startswith("kubernetes:") and isinstance(inputs.get("metadata"), dict):
        meta = inputs["metadata"]
        name = f"{meta['namespace']}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))
        return f"{inputs.get('kind', kind)} {name}"
    if replacement.is_readiness_gate(str(res["type"]), inputs):
        return f"readiness gate {res['name']}"
    if str(res["type"]).startswith("pulumi:providers:"):
        return f"provider {res['name']}"
    shown = inputs.get("name") if isinstance(inputs.get("name"), str) else res["name"]
    return f"{kind} {shown}"


def _classify(res_new: Mapping[str, Any], path: str, providers: Mapping[str, Any]) -> tuple[str, str | None]:
    options = res_new.get("options") or {}
    inputs = res_new.get("inputs") or {}
    ignored = replacement.ignore_changes_match(path, options.get("ignoreChanges"))
    if ignored is not None:
        return "ignored", f"ignoreChanges {ignored}"
    by_provider = replacement.ignored_by_provider(res_new["type"], path, inputs)
    if by_provider is not None:
        return "ignored", by_provider
    provider_inputs = (providers.get(res_new.get("provider") or "") or {}).get("inputs")
    why = replacement.replace_reason(res_new["type"], path, inputs, options, provider_inputs)
    return ("replace", why) if why else ("update", None)


def _whole_vs_per_key(before: Any, after: Any) -> bool:
    """One side redacts a Secret payload whole (`[secret]`, plans of an older hubctl), the other per key."""
    def per_key(v: Any) -> bool:
        return isinstance(v, dict) and all(secret_placeholder(x) is not None for x in v.values())

    return (before == "[secret]" and per_key(after)) or (after == "[secret]" and per_key(before))


def _resource_changes(old: Mapping[str, Any], new: Mapping[str, Any], providers: Mapping[str, Any],
                      notes: set[str] | None = None) -> list[Change]:
    changes: list[Change] = []
    for path, before, after in diff_values(old.get("inputs") or {}, new.get("inputs") or {}):
        if path in ("data", "stringData") and _whole_vs_per_key(before, after):
            if notes is not None:
                notes.add("one plan redacts Secret payloads whole (made by an older hubctl): Secret values are not "
                          "compared, only their keys where both plans show them")
            continue
        effect, why = _classify(new, path, providers)
        changes.append(Change(path, before, after, effect, why))
    for path, before, after in diff_values([urn_label(u) for u in old.get("dependencies") or []],
                                           [urn_label(u) for u in new.get("dependencies") or []], "dependsOn"):
        changes.append(Change(path, before, after, "state", "dependencies are engine state (no provider call)"))
    for path, before, after in diff_values(old.get("options") or {}, new.get("options") or {}, "options"):
        changes.append(Change(path, before, after, "state", "resource options are engine state"))
    if (old.get("provider") or "") != (new.get("provider") or ""):
        # A new provider reference (a default provider's new version, another instance) replaces the resource only
        # when that provider itself is replaced (pulumi step_generator.go providerChanged: DiffConfig decides);
        # that case is the provider cascade below.
        changes.append(Change("provider", urn_label(old.get("provider") or "") or MISSING,
                              urn_label(new.get("provider") or "") or MISSING, "state",
                              "another provider reference; the engine replaces only if that provider is replaced"))
    return changes


def _action(changes: Iterable[Change]) -> str:
    effects = {c.effect for c in changes}
    for action in ("replace", "update", "ignored", "state"):
        if action in effects:
            return action
    return "state"


def _dbr(res: Mapping[str, Any]) -> bool:
    """Named Kubernetes objects are deleted before their replacement is created (pulumi-kubernetes Diff)."""
    if (res.get("options") or {}).get("deleteBeforeReplace"):
        return True
    meta = (res.get("inputs") or {}).get("metadata") or {}
    return str(res["type"]).startswith("kubernetes:") and bool(meta.get("name")) and not meta.get("generateName")


UNIQUE_NAMES = ("hcloud:index/server:Server", "hcloud:index/loadBalancer:LoadBalancer", "hcloud:index/network:Network",
                "hcloud:index/firewall:Firewall", "hcloud:index/placementGroup:PlacementGroup",
                "hcloud:index/sshKey:SshKey")
"""Hetzner names these uniquely per project (pulumi_hcloud docstrings: "must be unique per project")."""


def _create_conflict(old: Mapping[str, Any], new: Mapping[str, Any], delete_first: bool) -> str | None:
    """Pulumi creates a replacement before it deletes the old one; with the same unique name Hetzner refuses it."""
    if delete_first or new["type"] not in UNIQUE_NAMES:
        return None
    name = (new.get("inputs") or {}).get("name")
    if name and name == (old.get("inputs") or {}).get("name"):
        return (f"the replacement is created before the old one is deleted, and Hetzner refuses a second "
                f"{str(new['type']).rsplit(':', 1)[-1]} named `{name}` in the project: set deleteBeforeReplace or "
                "rename it")
    return None


def _collapse(changes: list[ResourceChange], plan: Mapping[str, Any], action: str) -> list[ResourceChange]:
    """A component created or deleted with all its descendants becomes one entry with children."""
    by_urn = {c.urn: c for c in changes if c.action == action}
    parents = {r["urn"]: r.get("parent") or "" for r in plan["resources"]}
    kept: list[ResourceChange] = []
    for change in changes:
        if change.action != action:
            kept.append(change)
            continue
        ancestor = parents.get(change.urn, "")
        absorbed = False
        while ancestor:
            if ancestor in by_urn and not str(by_urn[ancestor].type).startswith(("kubernetes:", "hcloud:")):
                by_urn[ancestor].children.append(change)
                absorbed = True
                break
            ancestor = parents.get(ancestor, "")
        if not absorbed:
            kept.append(change)
    return kept


def diff_plans(old: Mapping[str, Any], new: Mapping[str, Any], old_dir: Path | None = None,
               new_dir: Path | None = None) -> PlanDiff:
    olds = {r["urn"]: r for r in old["resources"]}
    news = {r["urn"]: r for r in new["resources"]}
    old_labels, old_depths = _labels(old)
    new_labels, new_depths = _labels(new)
    providers_new = {u: r for u, r in news.items() if str(r["type"]).startswith("pulumi:providers:")}
    found: dict[str, ResourceChange] = {}
    notes: set[str] = set()

    def entry(urn: str, res: Mapping[str, Any], action: str, labels: Mapping[str, str],
              depths: Mapping[str, int]) -> ResourceChange:
        return ResourceChange(urn=urn, type=str(res["type"]), name=str(res["name"]), component=labels[urn],
                              action=action, target=k8s_target(str(res.get("provider") or "")),
                              label=resource_label(res), depth=depths[urn])

    for urn, res in news.items():
        if urn not in olds:
            found[urn] = entry(urn, res, "create", new_labels, new_depths)
            if (res.get("options") or {}).get("read"):
                found[urn].action = "state"
                found[urn].reasons = ["now read from its cluster (a read creates nothing)"]
    for urn, res in olds.items():
        if urn not in news:
            found[urn] = entry(urn, res, "delete", old_labels, old_depths)
            if (res.get("options") or {}).get("read"):
                found[urn].action = "state"
                found[urn].reasons = ["no longer read (a read resource is forgotten, not deleted)"]
    for urn, res in news.items():
        before = olds.get(urn)
        if before is None or (before.get("inputs") == res.get("inputs") and before.get("options") == res.get("options")
                              and before.get("dependencies") == res.get("dependencies")
                              and before.get("provider") == res.get("provider")):
            continue
        changes = _resource_changes(before, res, providers_new, notes)
        if not changes:
            continue
        change = entry(urn, res, _action(changes), new_labels, new_depths)
        change.changes = changes
        change.reasons = sorted({c.why for c in changes if c.effect == "replace" and c.why})
        found[urn] = change

    _add_cloud_init(found, news, olds, new_labels, new_depths, old_dir, new_dir)
    _cascade_providers(found, news, new_labels, new_depths)
    for change in found.values():
        if change.action == "replace":
            change.delete_before_replace = _dbr(news[change.urn])
            change.create_conflict = _create_conflict(olds[change.urn], news[change.urn], change.delete_before_replace)

    ordered = sorted(found.values(), key=lambda c: (c.component, ACTIONS.index(c.action), c.depth, c.urn))
    ordered = _collapse(ordered, new, "create")
    ordered = _collapse(ordered, old, "delete")
    outputs = [Change(p, a, b) for p, a, b in diff_values(old.get("outputs") or {}, new.get("outputs") or {})]
    deltas, cert_lines, report_notes = _report_deltas(old_dir, new_dir)
    if old.get("stack") != new.get("stack"):
        report_notes.insert(0, f"⚠ these are plans of two different stacks ({old.get('stack')} → {new.get('stack')}): "
                            "every resource's name differs, so this is not what a change to one stack does; diff "
                            "two plans of the same stack")
    old_report, new_report = _read_report(old_dir), _read_report(new_dir)
    epochs = [(r or {}).get("planEpoch") for r in (old_report, new_report)]
    if epochs[0] and epochs[1] and epochs[0] != epochs[1]:
        report_notes.insert(0, f"⚠ the plans were made for different days (base {epochs[0]}, head {epochs[1]}): "
                            "offline certificates start on their plan's day, so every certificate, and whatever "
                            "embeds one, shows as changed. Re-render the head as of the base's day: `hubctl plan "
                            f"{new.get('stack')} --epoch {epochs[0]} --out <dir>`")
    return PlanDiff(stack=str(new.get("stack", "?")), old_resources=len(olds), new_resources=len(news),
                    resources=ordered, outputs=outputs, deltas=deltas, certificates=cert_lines,
                    notes=report_notes + sorted(notes), whatif=whatif_lines(old_report, new_report))


def whatif_lines(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    """What a reviewer wants first on a placement change: where each workload starts, and what each loss now does
    to it, where that differs between the two reports' what-if tables."""
    def rows(report: Mapping[str, Any] | None) -> dict[tuple[str, str, str], Mapping[str, Any]]:
        data = (((report or {}).get("sections") or {}).get("whatif") or {}).get("data") or {}
        found = {}
        for tenant in data.get("tenants") or []:
            for row in [*(tenant.get("initial") or []), *(tenant.get("losses") or [])]:
                if isinstance(row, dict):
                    found[(str(row.get("tenant")), str(row.get("workload")), str(row.get("scenario")))] = row
        return found

    def shown(row: Mapping[str, Any] | None) -> str:
        if row is None:
            return "(absent)"
        where = ", ".join(row.get("clusters") or []) or "-"
        return f"{row.get('outcome')} {where}"

    before, after = rows(old), rows(new)
    lines = []
    for key in [*before, *(k for k in after if k not in before)]:
        a, b = before.get(key), after.get(key)
        if a is not None and b is not None and (a.get("outcome"), a.get("clusters")) == (b.get("outcome"),
                                                                                           b.get("clusters")):
            continue
        tenant, workload, scenario = key
        lines.append(f"{tenant}/{workload}, {scenario}: {shown(a)} → {shown(b)}")
    return lines


def _add_cloud_init(found: dict[str, ResourceChange], news: Mapping[str, Any], olds: Mapping[str, Any],
                    labels: Mapping[str, str], depths: Mapping[str, int], old_dir: Path | None,
                    new_dir: Path | None) -> None:
    """User-data is a secret in plan.json; its files come from the plans' cloud-init/ directories."""
    old_docs, new_docs = _cloud_init(old_dir), _cloud_init(new_dir)
    if not old_docs and not new_docs:
        return
    for urn, res in news.items():
        if res["type"] != "hcloud:index/server:Server":
            continue
        server = (res.get("inputs") or {}).get("name") or res["name"]
        old_res = olds.get(urn)
        if old_res is None:
            continue  # a new server: its whole user-data is new, the plan's cloud-init/ file shows it
        old_server = (old_res.get("inputs") or {}).get("name") or server
        files = cloud_init_diff(old_docs.get(old_server), new_docs.get(server))
        if not files:
            continue
        change = found.get(urn)
        if change is None:
            change = ResourceChange(urn=urn, type=res["type"], name=res["name"], component=labels[urn],
                                    action="state", label=resource_label(res), depth=depths[urn])
            found[urn] = change
        change.files = files
        effect, why = _classify(res, "userData", {})
        if effect == "ignored":
            why = f"{why}: running servers keep their cloud-init; only new servers get it"
        change.changes.append(Change("userData", "[secret]", "[secret]", effect, why))
        change.action = _action(change.changes)
        change.reasons = sorted({c.why for c in change.changes if c.effect == "replace" and c.why})


def _cascade_providers(found: dict[str, ResourceChange], news: Mapping[str, Any], labels: Mapping[str, str],
                       depths: Mapping[str, int]) -> None:
    """A replaced readiness gate leaves the Kubernetes provider's kubeconfig unknown at preview, so the provider
    is replaced, and with it every object it manages (pulumi-kubernetes DiffConfig; the engine's providerChanged)."""
    replaced = {u for u, c in found.items() if c.action == "replace"}
    providers = {}
    for urn, res in news.items():
        if not str(res["type"]).startswith("pulumi:providers:kubernetes") or urn not in news:
            continue
        causes = [d for d in res.get("dependencies") or [] if d in replaced]
        if urn in replaced or causes:
            providers[urn] = causes[0] if causes else None
    for urn, cause in providers.items():
        if urn in found and found[urn].action == "replace":
            continue
        change = found.get(urn) or ResourceChange(urn=urn, type=news[urn]["type"], name=news[urn]["name"],
                                                  component=labels[urn], action="replace",
                                                  label=resource_label(news[urn]), depth=depths[urn])
        change.action = "replace"
        change.cascade_from = cause
        change.reasons = [f"its kubeconfig comes from {cause.rsplit('::', 1)[-1]}, which is replaced, so it is "
                          f"unknown at preview ({replacement.PROVIDER_CASCADE_SOURCE})"]
        found[urn] = change
    for urn, res in news.items():
        provider = res.get("provider") or ""
        if provider not in providers or (urn in found and found[urn].action in ("replace", "create")):
            continue
        change = found.get(urn) or ResourceChange(urn=urn, type=res["type"], name=res["name"],
                                                  component=labels[urn], action="replace",
                                                  target=k8s_target(provider), label=resource_label(res),
                                                  depth=depths[urn])
        change.action = "replace"
        change.cascade_from = provider
        change.reasons = [f"its provider {provider.rsplit('::', 1)[-1]} is replaced"]
        found[urn] = change


# ------------------------------------------------------------------------------------------ reports


def _read_report(plan_dir: Path | None) -> dict[str, Any] | None:
    if plan_dir is None:
        return None
    path = plan_dir / "report.json"
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) and isinstance(value.get("sections"), dict) else None


def _report_deltas(old_dir: Path | None, new_dir: Path | None) -> tuple[list[Delta], list[str], list[str]]:
    old, new = _read_report(old_dir), _read_report(new_dir)
    if old is None or new is None:
        missing = [side for side, rep in (("base", old), ("head", new)) if rep is None]
        note = (f"no report.json in the {' and '.join(missing)} plan (made by an older hubctl?): budget, skew and "
                "certificate deltas are not shown")
        return [], [], [note] if old_dir is not None or new_dir is not None else []
    deltas: list[Delta] = []
    for key, section in new["sections"].items():
        before = (old["sections"].get(key) or {}).get("metrics") or {}
        title = section.get("title", key)
        for name, metric in (section.get("metrics") or {}).items():
            was = before.get(name, {}).get("value", MISSING)
            if was != metric.get("value"):
                deltas.append(Delta(title, name, None if was is MISSING else was, metric.get("value"),
                                    metric.get("unit", ""), metric.get("better", "")))
        for name, metric in before.items():
            if name not in (section.get("metrics") or {}):
                deltas.append(Delta(title, name, metric.get("value"), None, metric.get("unit", "")))
    cert_lines = _certificate_lines((old["sections"].get("certificates") or {}).get("data") or [],
                                    (new["sections"].get("certificates") or {}).get("data") or [])
    return deltas, cert_lines, []


def _certificate_lines(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[str]:
    a = {c["resource"]: c for c in old if isinstance(c, dict) and "resource" in c}
    b = {c["resource"]: c for c in new if isinstance(c, dict) and "resource" in c}
    lines = []
    for name in sorted(set(a) | set(b)):
        x, y = a.get(name), b.get(name)
        if x is None and y is not None:
            lines.append(f"{name}: new, {y['subject']}, valid {y['validityHours']} h until {y['notAfter']}")
        elif y is None and x is not None:
            lines.append(f"{name}: removed ({x['subject']})")
        elif x is not None and y is not None and x.get("fingerprint") != y.get("fingerprint"):
            what = [f"{label} {x.get(k)} → {y.get(k)}" for k, label in
                    (("subject", "subject"), ("sans", "SANs"), ("validityHours", "validity h"),
                     ("notAfter", "expiry"), ("issuer", "issuer")) if x.get(k) != y.get(k)]
            lines.append(f"{name}: reissued ({x['fingerprint']} → {y['fingerprint']})"
                         + (": " + "; ".join(what) if what else ": same subject and validity, new key or signature"))
        elif x is not None and y is not None and x.get("renewFrom") != y.get("renewFrom"):
            # early_renewal_hours changed: an in-place update, the certificate itself stays
            lines.append(f"{name}: pulumi up renews from {x.get('renewFrom')} → {y.get('renewFrom')} "
                         "(same certificate)")
    return lines


# ------------------------------------------------------------------------------------------ entry


def diff_paths(old: Path, new: Path) -> PlanDiff:
    """Diff two plan directories (or plan.json files; their directories hold cloud-init/ and report.json)."""
    from hubctl.commands import read_plan_json

    old_plan = read_plan_json(old)
    new_plan = read_plan_json(new)
    return diff_plans(old_plan, new_plan, old if old.is_dir() else old.parent, new if new.is_dir() else new.parent)


def iter_changes(diff: PlanDiff) -> Iterator[ResourceChange]:
    for r in diff.resources:
        yield r
        yield from r.children

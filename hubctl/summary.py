"""The short summary `hubctl plan` prints: resources per component, endpoints, tables that matter."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from components.config import FleetConfig
from hubctl.plan import Plan, manifests


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


def components_table(plan: Plan) -> str:
    """Resources counted under their top-level component (or `(stack)` for top-level resources)."""
    by_urn = {r.urn: r for r in plan.records}
    counts: Counter[str] = Counter()
    for record in plan.records:
        top = record
        while top.parent and top.parent in by_urn:
            top = by_urn[top.parent]
        label = f"{top.type.rsplit(':', 1)[-1]} {top.name}" if top is not record or not record.custom else "(stack)"
        counts[label] += 1
    return _table(["component", "resources"], [[k, str(v)] for k, v in sorted(counts.items())])


def control_plane_table(plan: Plan) -> str:
    """Component, replicas, image:tag, leader election — from the objects that would be applied."""
    rows = []
    for obj in manifests(plan).get("host", []):
        meta = obj.get("metadata", {})
        if obj.get("kind") not in ("Deployment", "StatefulSet") or meta.get("namespace") != "karmada-system":
            continue
        containers = obj["spec"]["template"]["spec"]["containers"]
        args = [a for c in containers for a in (c.get("args") or []) + (c.get("command") or [])]
        if obj["kind"] == "StatefulSet":
            election = "raft"
        else:
            election = "yes" if any(a in ("--leader-elect=true", "--leader-elect") for a in args) else "no"
        rows.append([meta["name"], str(obj["spec"].get("replicas", 1)), containers[0]["image"], election])
    return _table(["component", "replicas", "image", "leader election"], rows) if rows else ""


def render(plan: Plan, config: FleetConfig, out_dir: Path, files: dict[str, str]) -> str:
    parts = [f"plan {plan.project}/{plan.stack}: {len(plan.records)} resources -> {out_dir}/"]
    parts.append(components_table(plan))
    endpoints = {k: v for k, v in plan.outputs.items()
                 if v != "[secret]" and isinstance(v, str | int) and "\n" not in str(v)}
    if endpoints:
        parts.append(_table(["output", "value"], [[k, str(v)] for k, v in endpoints.items()]))
    cp = control_plane_table(plan)
    if cp:
        parts.append("control plane\n" + cp)
    if config.members:
        from components.operations.budget import failover_budget, format_budget
        from components.operations.skew import format_skew, skew_rows

        parts.append("version skew\n" + format_skew(skew_rows(config)))
        parts.append("failover budget\n" + format_budget(failover_budget(config)))
    if config.members and config.tenants:
        from components.fleet.whatif import fleet_whatif, format_whatif

        parts.append("what-if: one member or region lost\n" + format_whatif(fleet_whatif(config)))
    manifest_files = sorted(f for f in files if f.startswith(("manifests/", "cloud-init/")))
    parts.append("files: plan.json, " + ", ".join(manifest_files))
    return "\n\n".join(parts)


def as_json(plan: Plan, config: FleetConfig, out_dir: Path) -> dict[str, object]:
    """The summary as data (`hubctl plan --json`): resources, plain outputs and the what-if table."""
    from components.fleet.whatif import fleet_whatif

    endpoints = {k: v for k, v in plan.outputs.items()
                 if v != "[secret]" and isinstance(v, str | int) and "\n" not in str(v)}
    return {
        "plan": f"{plan.project}/{plan.stack}",
        "resources": len(plan.records),
        "out": str(out_dir),
        "outputs": endpoints,
        "whatif": fleet_whatif(config).as_dict() if config.members and config.tenants else None,
    }

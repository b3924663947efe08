"""Small plan directories for `hubctl diff` tests, shaped like the real ones (plan.json, cloud-init/, report.json).

Resources are written the way `hubctl plan` writes them (urn, type, name, parent, provider, dependencies, inputs,
options), with URNs built by the engine's rule, real certificates from the plan's own mocks and per-key Secret
placeholders from the plan's own redaction, so a golden diff shows what a reviewer would see on a real PR.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.kube.yamlutil import dump

STACK = "dev"
PROJECT = "karmada-hub"
K8S_PROVIDER = "pulumi:providers:kubernetes"


def urn(type_: str, name: str, parent: str = "") -> str:
    qualified = type_
    if parent:
        parent_type = parent.split("::")[2]
        qualified = f"{parent_type}${type_}"
    return f"urn:pulumi:{STACK}::{PROJECT}::{qualified}::{name}"


@dataclass
class PlanDir:
    """A plan being built: resources by URN, outputs, cloud-init documents, report sections."""

    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    cloud_init: dict[str, dict[str, Any]] = field(default_factory=dict)
    sections: dict[str, Any] | None = None

    def add(self, type_: str, name: str, inputs: dict[str, Any], parent: str = "", provider: str = "",
            dependencies: list[str] | None = None, options: dict[str, Any] | None = None) -> str:
        u = urn(type_, name, parent)
        self.resources[u] = {"urn": u, "type": type_, "name": name, "parent": parent, "provider": provider,
                             "dependencies": sorted(dependencies or []), "inputs": inputs, "options": options or {}}
        return u

    def component(self, kind: str, name: str) -> str:
        return self.add(f"karmada-hub:index:{kind}", name, {})

    def k8s(self, obj: dict[str, Any], parent: str, provider: str, **kw: Any) -> str:
        kind = obj["kind"]
        group = obj["apiVersion"] if "/" in obj["apiVersion"] else f"core/{obj['apiVersion']}"
        meta = obj["metadata"]
        target = provider.rsplit("::", 1)[-1].removeprefix("k8s-")
        name = "-".join(x for x in (target, kind.lower(), meta.get("namespace", ""), meta["name"]) if x)
        return self.add(f"kubernetes:{group}:{kind}", name, obj, parent, provider, **kw)

    def copy(self) -> PlanDir:
        return copy.deepcopy(self)

    def write(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        plan = {"project": PROJECT, "stack": STACK, "resources": [self.resources[u] for u in sorted(self.resources)],
                "outputs": self.outputs}
        (directory / "plan.json").write_text(json.dumps(plan, indent=2, sort_keys=True) + "\n")
        if self.cloud_init:
            (directory / "cloud-init").mkdir(exist_ok=True)
            for server, doc in self.cloud_init.items():
                (directory / "cloud-init" / f"{server}.yaml").write_text("#cloud-config\n" + dump(doc))
        if self.sections is not None:
            report = {"reportVersion": 1, "project": PROJECT, "stack": STACK, "resources": len(self.resources),
                      "files": [], "sections": self.sections}
            (directory / "report.json").write_text(json.dumps(report, indent=2) + "\n")
        return directory


def metric(value: Any, unit: str = "", better: str = "") -> dict[str, Any]:
    return {"value": value, "unit": unit, "better": better}


def budget_section(terms: dict[str, float]) -> dict[str, Any]:
    total = round(sum(terms.values()), 2)
    metrics = {"worst case": metric(total, "s", "lower")} | {k: metric(v, "s", "lower") for k, v in terms.items()}
    return {"title": "failover budget", "metrics": metrics, "data": {"totalSeconds": total}}

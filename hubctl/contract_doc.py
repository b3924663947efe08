"""`python -m hubctl.contract_doc [--write]`: render docs/upstream-contract.md from the contract data.

The contract lives as data beside the code that renders each container (components/*/contract.py,
components/karmada/features.py); tests/contract/ checks every plan against it. This renders the same data as the
reference document, so the doc and the checks have one source; `tests/contract/test_doc.py` fails when the file
is stale (regenerate with `--write`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

from components.karmada import contract as karmada_contract
from components.karmada import features, flags
from components.kube.contract import Contract, Listener, Src
from components.operations.contract import PRECONDITIONS, all_contracts

DOC = Path(__file__).resolve().parent.parent / "docs" / "upstream-contract.md"

INTRO = """# Upstream runtime contract

What every container the program renders needs at run time, and where upstream says so. Schema-valid is not
"works": a binary reads env vars, opens the files its flags name, listens on ports whose paths may or may not be
served (and may need a credential), dials names, calls APIs its identity must be allowed, creates objects of its
own and exits on start-up validations. None of that is visible to a schema.

This file is generated from the contract data (`python -m hubctl.contract_doc --write`); do not edit it by hand.
The data lives beside the code that renders each container — `components/karmada/contract.py`,
`components/traffic/contract.py`, `components/operations/contract.py`, `components/hetzner/contract.py`,
`components/karmada/features.py`, `components/karmada/flags/common.py` (gates) — and `tests/contract/` checks
the rendered plans of dev and of the prod fleet (prod-hub with every region stack planned against its outputs)
against it: every `$(VAR)` defined, every probe on
a served path without a credential, every file a flag names mounted from a volume that has it, every dialled name
resolving to something the plan creates, no object a binary owns also owned by Pulumi, every API verb granted to
the identity that uses it. Each check has a test that mutates a plan and shows it fails.

A source is `repository@tag path symbol`. "stored version" means the file was read in a stored copy, not at the
pinned tag (the repository was too large to fetch); those facts are listed again under "Not confirmed at the
pinned tag".
"""

SOURCES = (
    ("karmada-io/karmada", "v1.18.2", "mirror, `git show v1.18.2:<path>`; its `vendor/` holds controller-runtime "
     "v0.23.1 and k8s.io/apiserver v0.35.3 (the aggregated-apiserver's library)"),
    ("kubernetes/apiserver", "v0.35.2", "mirror; the generic apiserver library of the pinned kube-apiserver / "
     "kube-controller-manager v1.35.4"),
    ("kubernetes/kubernetes", "v1.35.2", "stored file versions only (not fetchable): bootstrap RBAC, kube-apiserver "
     "and KCM options"),
    ("etcd-io/etcd", "v3.6.6", "mirror"),
    ("kubernetes-sigs/external-dns", "v0.22.0", "mirror"),
    ("hetzner/external-dns-hetzner-webhook", "v0.3.4 image", "stored `main.go`; the metrics server in the "
     "pre-transfer repo jooola/external-dns-hetzner-webhook"),
    ("k3s-io/k3s, k3s-io/docs", "v1.34.1+k3s1", "stored versions"),
    ("this checkout", "—", "the `agents/` programs (our own code)"),
)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: Iterable[str], rows: Iterable[Iterable[object]]) -> list[str]:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _paths(listener: Listener) -> str:
    if not listener.served:
        return "nothing"
    parts = []
    for s in listener.served:
        mark = "" if s.anonymous else " (credential)"
        parts.append(f"`{s.path}{'…' if s.subtree else ''}`{mark}")
    return ", ".join(parts)


def _port(listener: Listener) -> str:
    if listener.source_flag is None:
        return listener.default
    kind = "env " if listener.port_from == "env-hostport" else "--"
    return f"{kind}{listener.source_flag} (default `{listener.default or 'none'}`)"


PROBES = Src("kubernetes/kubernetes", "stored version", "pkg/probe/http/http.go", "DoHTTPProbe", pinned=False)


def _accepts(target: Contract, contracts: Iterable[Contract]) -> list[tuple[str, str, str, str, Src]]:
    rows = []
    for c in contracts:
        for conn in c.connections:
            if conn.to == target.key:
                rows.append((c.key, conn.port, conn.protocol, conn.why, conn.source))
    if any(s.anonymous for lis in target.listeners for s in lis.served) or any(
            lis.anonymous_paths for lis in target.listeners):
        rows.append(("kubelet (the node)", "probe ports", "HTTP(S)/TCP",
                     "liveness/readiness/startup probes: no credential, HTTPS without verification, 200-399 is "
                     "success", PROBES))
    return rows


def _section(c: Contract, contracts: tuple[Contract, ...]) -> list[str]:
    lines = [f"### {c.title}", "", f"Upstream: {c.upstream}. Rendered by {c.rendered_by}. Runs in: {c.runs_in}.", ""]
    if c.env:
        lines += ["**Environment it reads**", ""]
        lines += _table(("variable", "required", "why", "source"),
                        ((f"`{e.name}`", "yes" if e.required else "no", e.why, e.source) for e in c.env))
        lines.append("")
    if c.files:
        lines += ["**Files its flags name**", ""]
        rows = []
        for f in c.files:
            name = f"`--{f.flag}`" if f.flag else (f"argument {f.position}" if f.position is not None else
                                                    f"`{f.default}`")
            extra = ", ".join(f"`--{n}` (default `{d}`)" for n, d in f.names)
            rows.append((name, f.mode + (f"; files {extra}" if extra else ""), f.why, f.source))
        lines += _table(("flag", "use", "why", "source"), rows)
        lines.append("")
    if c.listeners:
        lines += ["**Listens on**", ""]
        lines += _table(("listener", "port", "scheme", "serves (`…` = sub-paths too; credential = not for a probe)",
                         "source"),
                        ((f"{lis.name}" + (f": {lis.note}" if lis.note else ""), _port(lis), lis.scheme, _paths(lis),
                          lis.source) for lis in c.listeners))
        lines.append("")
    if c.connections:
        lines += ["**Opens connections to**", ""]
        lines += _table(("to", "port", "protocol", "name from", "why", "source"),
                        ((f"{conn.to}{' (outside the plan)' if conn.external else ''}", conn.port, conn.protocol,
                          conn.via, conn.why, conn.source) for conn in c.connections))
        lines.append("")
    accepts = _accepts(c, contracts)
    if accepts:
        lines += ["**Accepts connections from**", ""]
        lines += _table(("from", "port", "protocol", "why", "source"), accepts)
        lines.append("")
    if c.uses:
        lines += ["**API calls (RBAC its identity needs)**", ""]
        lines += _table(("API", "resource", "verbs", "scope", "credential", "source"),
                        ((u.api, f"{u.group or 'core'}/{u.resource}", ", ".join(u.verbs),
                          (f"namespace {u.namespace}" if u.namespace else "any namespace / cluster")
                          + (f", names {', '.join(u.names)}" if u.names else ""), u.credential, u.source)
                         for u in c.uses))
        lines.append("")
    if c.makes:
        lines += ["**Objects it creates itself**", ""]
        lines += _table(("API", "object", "manages it", "when", "source"),
                        ((m.api, f"{m.kind} {m.namespace + '/' if m.namespace else ''}{m.name}",
                          "yes: Pulumi must not own it" if m.owns else "no: adopts a pre-created one", m.when, m.source)
                         for m in c.makes))
        lines.append("")
    if c.expects:
        lines += ["**Expects to exist**", ""]
        lines += _table(("what", "made by", "source"), ((e.what, e.made_by, e.source) for e in c.expects))
        lines.append("")
    if c.exits:
        lines += ["**Exits at start when**", ""]
        lines += [f"- {f.text} ({f.source})" for f in c.exits]
        lines.append("")
    if c.facts:
        lines += ["**Also**", ""]
        lines += [f"- {f.text} ({f.source})" for f in c.facts]
        lines.append("")
    return lines


def _reachability(contracts: tuple[Contract, ...]) -> list[str]:
    runs = {c.key: c.runs_in for c in contracts}
    rows = [(f"{c.key} ({c.runs_in})", conn.to + (f" ({runs[conn.to]})" if conn.to in runs else " (outside)"),
             conn.port, conn.protocol, conn.via) for c in contracts for conn in c.connections]
    return ["## Reachability", "",
            "Every connection a container opens, from the tables below: what NetworkPolicies must allow, and "
            "nothing more (kubelet's probes come from the node).", "",
            *_table(("from", "to", "port", "protocol", "name from"), rows), ""]


def _gates() -> list[str]:
    rows = [(f"`{name}`", "yes" if name in flags.TENANT_GATES else "no", ", ".join(sorted(readers)),
             f"karmada-io/karmada@v1.18.2 {features.GATE_SOURCES[name]}")
            for name, readers in flags.GATE_READERS.items()]
    fo = [(f"`failover.{key}`", flag, ", ".join(sorted(readers)))
          for key, (readers, flag) in features.FAILOVER_READERS.items()]
    return ["## Fleet-wide settings", "",
            "A gate must reach every binary that reads it, or it is half-effective. The stack that runs the "
            "control plane lists the fleet's gates in `karmada.featureGates`; each binary gets exactly the listed "
            "gates it reads (`flags.gates_for`); an all-in-one stack lists exactly what its tenants use, a region "
            "stack repeats its hub's list (checked against `fleetContract`). A name outside the release's gate set "
            "makes every binary exit; the descheduler has no `--feature-gates` flag at all.", "",
            *_table(("gate", "a tenant option", "read by", "source"), rows), "",
            "Failover flags: the controller-manager runs only in the hub stack and decides for every member; an agent "
            f"computes its Pull member's status with its own flags ({features.FAILOVER_SOURCE}). A region stack's "
            "value for a controller-manager flag must be the hub's.", "",
            *_table(("stack key", "flag", "binaries"), fo), "",
            "Estimators: with `karmada.schedulerEstimators` on, the scheduler and the descheduler dial "
            "`karmada-scheduler-estimator-<cluster>` for every Cluster (the descheduler has no Pull-mode opt-out), so "
            "every member of every stack sets `schedulerEstimator: true`; with it off, none may.", ""]


def _unpinned(contracts: tuple[Contract, ...]) -> list[str]:
    found: dict[str, list[str]] = {}

    def walk(obj: object, label: str) -> None:
        if isinstance(obj, Src):
            if not obj.pinned:
                found.setdefault(str(obj), []).append(label)
        elif isinstance(obj, tuple | list):
            for o in obj:
                walk(o, label)
        elif hasattr(obj, "__dataclass_fields__"):
            for f in obj.__dataclass_fields__:  # type: ignore[attr-defined]
                walk(getattr(obj, f), label)

    for c in contracts:
        walk(c, c.key)
    walk(karmada_contract.SHARED, "shared")
    lines = ["## Not confirmed at the pinned tag", "",
             "Facts read in stored versions of a file, not at the pinned tag (kubernetes/kubernetes and k3s are too "
             "large to fetch; the Hetzner webhook has no fetchable tag):", ""]
    lines += [f"- {src} — used by {', '.join(sorted(set(users)))}" for src, users in sorted(found.items())]
    lines += ["",
              "- The kube-apiserver's `--anonymous-auth` / authentication-config interplay is read in a stored "
              "(>= 1.32) `pkg/kubeapiserver/options/authentication.go`; the config's schema, validation, gates and "
              "exact-path matching are from kubernetes/apiserver v0.35.2 (the pinned library).",
              "- The bootstrap RBAC rules (`system:kube-controller-manager` leases, `system:public-info-viewer`) are "
              "from stored policy.go versions; the program keeps its own lease Role for kube-controller-manager.",
              "- Not run: no check starts the real binaries (the etcd integration test does, for etcd 3.4 only).", ""]
    return lines


def _exceptions() -> list[str]:
    return ["## Objects the program owns although a binary manages them", "",
            *_table(("API", "object", "why"), ((api, f"{kind} {pattern}", why)
                                               for api, kind, pattern, why in karmada_contract.PULUMI_MAY_OWN)), ""]


def _expected(contracts: tuple[Contract, ...]) -> list[str]:
    rows = [(c.key, e.what, e.made_by, e.source) for c in contracts for e in c.expects
            if not e.made_by.startswith(("the plan", "the stack", "karmada-apiserver", "cloud_init", "nobody"))]
    rows += [("the program", e.what, e.made_by, e.source) for e in PRECONDITIONS]
    rows += [(c.key, f"{conn.to}: {conn.via}", "outside the plan", conn.source) for c in contracts
             for conn in c.connections if conn.external]
    return ["## Expected to exist before the first `pulumi up`", "",
            "Nothing in the plan creates these; docs/runbooks/first-deploy.md says how to prepare them.", "",
            *_table(("who needs it", "what", "made by", "source"), rows), ""]


def _shared() -> list[str]:
    return ["## Facts several binaries share", "", *[f"- {f.text} ({f.source})" for f in karmada_contract.SHARED], ""]


def render() -> str:
    contracts = all_contracts()
    lines = [INTRO, "## Sources", "", *_table(("upstream", "pinned", "read"), SOURCES), "", *_shared(), *_gates(),
             *_reachability(contracts), "## Per container", ""]
    for c in contracts:
        lines += _section(c, contracts)
    lines += [*_exceptions(), *_expected(contracts), *_unpinned(contracts)]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hubctl.contract_doc", description=__doc__)
    parser.add_argument("--write", action="store_true", help=f"write {DOC.relative_to(DOC.parents[1])}")
    args = parser.parse_args(argv)
    text = render()
    if args.write:
        DOC.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

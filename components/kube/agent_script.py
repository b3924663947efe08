"""Agent scripts: how a stdlib-only program from `agents/` runs in a pod.

The file is the program, with the helper modules of `agents/` it imports (`import _incluster`, at the top of
the file: `program`). A ConfigMap holds their text, a pinned Python image runs the script from a read-only
mount (Python puts the script's directory first on sys.path, so the helpers beside it import), and a checksum
of all of it on the pod template rolls the pods when the program or a helper changes (a ConfigMap edit alone
would not). Used by every agent: the status refresher, the failover controller, the hub exporter, the etcd
backup upload and defragmentation, the Pull join.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from components.kube.pod_security import container_security_context, pod_security_context
from components.versions import AGENT_PYTHON_IMAGE

AGENTS_DIR = Path(__file__).resolve().parents[2] / "agents"
MOUNT_DIR = "/opt/karmada-hub"
VOLUME = "script"
CHECKSUM_ANNOTATION = "karmada-hub.io/script-sha256"
IMAGE = AGENT_PYTHON_IMAGE
ENV = ({"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},)
"""The mount is read-only, so Python must not try to write bytecode next to the script."""
_HELPER_IMPORT = re.compile(r"^(?:import|from) (_[a-z0-9_]+)\b", re.MULTILINE)
"""A top-level import of an underscore module; it is a helper when `agents/<name>.py` exists (tests/test_layout.py
checks, with `ast`, that every sibling import of an agent is one of these)."""


def source(filename: str) -> str:
    return (AGENTS_DIR / filename).read_text()


def helpers(text: str) -> dict[str, str]:
    """The helper files of `agents/` a script's text imports, and the helpers they import: {file name: text}."""
    found: dict[str, str] = {}
    pending = [text]
    while pending:
        for module in _HELPER_IMPORT.findall(pending.pop()):
            name = f"{module}.py"
            if name not in found and (AGENTS_DIR / name).is_file():
                found[name] = source(name)
                pending.append(found[name])
    return dict(sorted(found.items()))


def program(filename: str, text: str) -> dict[str, str]:
    """What the pod needs of one agent: the script (as `filename`) and its helpers, by file name."""
    files = helpers(text)
    if filename in files:
        raise ValueError(f"{filename} is a helper of itself")
    return {filename: text, **files}


def configmap(metadata: dict[str, Any], filename: str, text: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": program(filename, text)}


def command(filename: str) -> list[str]:
    return ["python3", "-u", f"{MOUNT_DIR}/{filename}"]


def volume(configmap_name: str) -> dict[str, Any]:
    return {"name": VOLUME, "configMap": {"name": configmap_name}}


def mount() -> dict[str, Any]:
    return {"name": VOLUME, "mountPath": MOUNT_DIR, "readOnly": True}


def digest(script: str, helper_files: Mapping[str, str]) -> str:
    """sha256 of the script, then of every helper as NUL, name, NUL, length, NUL, text (sorted by name). Python
    source cannot contain NUL, so the first NUL ends the script and no two programs share a digest; a script
    without helpers hashes to the sha256 of its text alone (what this annotation has always been)."""
    sha = hashlib.sha256(script.encode())
    for name in sorted(helper_files):
        data = helper_files[name].encode()
        sha.update(f"\0{name}\0{len(data)}\0".encode())
        sha.update(data)
    return sha.hexdigest()


def pod_annotations(text: str) -> dict[str, str]:
    """The checksum of the whole program (script and helpers) the pod runs."""
    return {CHECKSUM_ANNOTATION: digest(text, helpers(text))}


# ------------------------------------------------------------------------------------------ documents


def client_cert_secret(metadata: dict[str, Any], ca_pem: str, cert_pem: str, key_pem: str, what: str
                       ) -> dict[str, Any]:
    """The Secret an agent's client certificate is mounted from: `ca.crt` (the server's CA), `tls.crt`, `tls.key`.
    `what` names it in the error when a part is empty."""
    files = {"ca.crt": ca_pem, "tls.crt": cert_pem, "tls.key": key_pem}
    empty = [k for k, v in files.items() if not v]
    if empty:
        raise ValueError(f"{what}: empty {', '.join(empty)}")
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "type": "Opaque",
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in files.items()}}


def container(name: str, filename: str, args: Sequence[str], resources: dict[str, Any], *,
              env: Sequence[dict[str, Any]] = (), mounts: Sequence[dict[str, Any]] = (),
              ports: Sequence[dict[str, Any]] = (), liveness: dict[str, Any] | None = None,
              readiness: dict[str, Any] | None = None, env_from: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """A container running agents/`filename` from the script mount in the pinned image: `ENV` before `env`, the
    script mount before `mounts`, the restricted security context; ports, probes and envFrom only if given."""
    out: dict[str, Any] = {
        "name": name,
        "image": IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "command": command(filename),
        "args": list(args),
        "env": [*ENV, *env],
    }
    if env_from:
        out["envFrom"] = list(env_from)
    if ports:
        out["ports"] = list(ports)
    if liveness is not None:
        out["livenessProbe"] = liveness
    if readiness is not None:
        out["readinessProbe"] = readiness
    out.update(resources=resources, securityContext=container_security_context(), volumeMounts=[mount(), *mounts])
    return out


def pod_template(labels: Mapping[str, str], text: str, containers: Sequence[dict[str, Any]],
                 volumes: Sequence[dict[str, Any]], *, service_account: str | None = None,
                 restart_policy: str | None = None, service_links: bool | None = None,
                 init_containers: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The pod template of a workload running an agent: the program's checksum (`text`: the script), no service
    account token mounted, the agents' pod security context. `volumes` must hold the script volume (`volume`);
    the other fields only if given."""
    spec: dict[str, Any] = {}
    if service_account is not None:
        spec["serviceAccountName"] = service_account
    if restart_policy is not None:
        spec["restartPolicy"] = restart_policy
    spec["automountServiceAccountToken"] = False
    if service_links is not None:
        spec["enableServiceLinks"] = service_links
    spec["securityContext"] = pod_security_context()
    if init_containers:
        spec["initContainers"] = list(init_containers)
    spec.update(containers=list(containers), volumes=list(volumes))
    if not any(v.get("name") == VOLUME and "configMap" in v for v in volumes):
        raise ValueError(f"pod template without the script volume '{VOLUME}'")
    return {"metadata": {"labels": dict(labels), "annotations": pod_annotations(text)}, "spec": spec}


def deployment(metadata: dict[str, Any], selector: Mapping[str, str], replicas: int, template: dict[str, Any]
               ) -> dict[str, Any]:
    """At most one pod per server (required hostname anti-affinity on `selector`), rolled one at a time and
    without surge: with that anti-affinity a surge pod would need a free server (kube/rollouts.py checks it)."""
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": dict(selector)}, "topologyKey": "kubernetes.io/hostname"}]}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": replicas,
            "revisionHistoryLimit": 3,
            "selector": {"matchLabels": dict(selector)},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "template": {**template, "spec": {**template["spec"], "affinity": affinity}},
        },
    }


def cron_job(metadata: dict[str, Any], schedule: str, template: dict[str, Any], *, successful_jobs: int,
             backoff_limit: int, active_deadline_seconds: int) -> dict[str, Any]:
    """A scheduled agent: in UTC, never two runs at once (`Forbid`), a missed run may still start within the
    hour, the last three failed Jobs kept for `kubectl describe`."""
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": metadata,
        "spec": {
            "schedule": schedule,
            "timeZone": "Etc/UTC",
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": 3600,
            "successfulJobsHistoryLimit": successful_jobs,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {"spec": {
                "backoffLimit": backoff_limit,
                "activeDeadlineSeconds": active_deadline_seconds,
                "template": template,
            }},
        },
    }

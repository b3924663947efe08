"""What makes a workload roll when its credentials change, and roll safely.

A pod reads its mounted certificates and kubeconfigs at start (client-go reads a kubeconfig once), so a
renewed Secret changes nothing until the pod restarts. Every workload whose pods mount a Secret (or take
environment from one) therefore carries two annotations on its pod template: the names of exactly those
Secrets and the sha256 of their contents. A re-issued certificate changes the checksum, the template
changes, and the controller rolls the pods.

The rollout must also be able to progress. `rollout_problems` checks a workload's strategy against its
PodDisruptionBudget and the node count: one replica at a time, never more unavailable than the PDB allows,
and no surge pod under required hostname anti-affinity (a surge pod has nowhere to go when every server
already runs one, or when a server is down — the day a certificate renewal meets a lost server).

Plain data in, plain data out; the Pulumi side (values that are Outputs) is `objects.with_secret_checksum`.
"""

from __future__ import annotations

import base64
import copy
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

SECRETS_ANNOTATION = "karmada-hub.io/secrets"
"""Comma-separated, sorted names of the Secrets the pods mount: what the checksum covers."""
CHECKSUM_ANNOTATION = "karmada-hub.io/secrets-sha256"
ELSEWHERE_ANNOTATION = "karmada-hub.io/secrets-written-elsewhere"
"""Comma-separated names of mounted Secrets the component applying the workload does not write, so no checksum
can cover them: a Pull agent's kubeconfig (its join Job writes it in the member; the `karmada-agent-restart`
CronJob rolls the agent when its certificate is renewed) and an estimator's member kubeconfig (the region stack
writes it; it changes only when its reader token is rotated, and the runbook restarts the estimator then)."""
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "CronJob")
HOSTNAME = "kubernetes.io/hostname"


def pod_template(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The pod template of a workload (CronJob: of its Job template); None for any other kind."""
    kind = obj.get("kind")
    if kind not in WORKLOAD_KINDS:
        return None
    spec = obj.get("spec") or {}
    if kind == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    return spec.get("template")


def mounted_secrets(pod_spec: Mapping[str, Any]) -> list[str]:
    """Every Secret a pod reads: secret and projected volumes, `envFrom` and `valueFrom.secretKeyRef`, in
    init and app containers alike. Sorted, without duplicates."""
    names: set[str] = set()
    for volume in pod_spec.get("volumes") or []:
        if "secret" in volume:
            names.add(volume["secret"]["secretName"])
        for source in (volume.get("projected") or {}).get("sources") or []:
            if "secret" in source:
                names.add(source["secret"]["name"])
    for container in [*(pod_spec.get("initContainers") or []), *(pod_spec.get("containers") or [])]:
        for env_from in container.get("envFrom") or []:
            if "secretRef" in env_from:
                names.add(env_from["secretRef"]["name"])
        for env in container.get("env") or []:
            ref = (env.get("valueFrom") or {}).get("secretKeyRef")
            if ref:
                names.add(ref["name"])
    return sorted(names)


def written_elsewhere(template: Mapping[str, Any]) -> list[str]:
    """The mounted Secrets a pod template declares as written elsewhere (ELSEWHERE_ANNOTATION)."""
    value = ((template.get("metadata") or {}).get("annotations") or {}).get(ELSEWHERE_ANNOTATION, "")
    return sorted(n for n in value.split(",") if n)


def checksummed_secrets(template: Mapping[str, Any]) -> list[str]:
    """What the checksum covers: every mounted Secret but those written elsewhere."""
    elsewhere = set(written_elsewhere(template))
    return [n for n in mounted_secrets(template.get("spec") or {}) if n not in elsewhere]


def secret_content(secret: Mapping[str, Any]) -> dict[str, bytes]:
    """What a pod sees of a Secret: `data` decoded, `stringData` on top (as the API server merges them)."""
    content = {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
    content.update({k: str(v).encode() for k, v in (secret.get("stringData") or {}).items()})
    return content


def secrets_checksum(secrets: Mapping[str, Mapping[str, bytes]]) -> str:
    """sha256 over `{secret name: {key: bytes}}`, length-prefixed so no two different sets collide.

    Every set the program checksums contains a private key or a random token, so the digest (which the
    plan prints) reveals nothing guessable."""
    digest = hashlib.sha256(b"karmada-hub secrets v1\n")
    for name in sorted(secrets):
        digest.update(f"{len(name)}:{name}\n".encode())
        for key in sorted(secrets[name]):
            value = secrets[name][key]
            digest.update(f"{len(key)}:{key}:{len(value)}:".encode())
            digest.update(value)
    return digest.hexdigest()


def checksum_of(secret_docs: Iterable[Mapping[str, Any]]) -> str:
    """The checksum of these Secret objects, keyed by their names."""
    return secrets_checksum({doc["metadata"]["name"]: secret_content(doc) for doc in secret_docs})


def require_exact(obj: Mapping[str, Any], names: Iterable[str]) -> list[str]:
    """The workload's mounted Secret names, checked to be exactly `names` (a checksum over fewer Secrets
    would miss a renewal; over more would roll pods for nothing)."""
    template = pod_template(obj)
    if template is None:
        raise ValueError(f"{obj.get('kind')} {obj.get('metadata', {}).get('name')} has no pod template")
    mounted = checksummed_secrets(template)
    given = sorted(set(names))
    if mounted != given:
        raise ValueError(f"{obj['kind']} {obj['metadata']['name']} mounts Secrets {mounted}, checksum given for "
                         f"{given}")
    return mounted


def annotated(obj: Mapping[str, Any], names: Sequence[str], checksum: Any) -> dict[str, Any]:
    """A copy of the workload with the two annotations on its pod template (`checksum` may be an Output)."""
    out = copy.copy(dict(obj))
    out["spec"] = dict(out["spec"])
    holder = out["spec"]
    if out["kind"] == "CronJob":
        holder["jobTemplate"] = dict(holder["jobTemplate"])
        holder["jobTemplate"]["spec"] = dict(holder["jobTemplate"]["spec"])
        holder = holder["jobTemplate"]["spec"]
    template = dict(holder["template"])
    metadata = dict(template.get("metadata") or {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), SECRETS_ANNOTATION: ",".join(names),
                               CHECKSUM_ANNOTATION: checksum}
    template["metadata"] = metadata
    holder["template"] = template
    return out


def with_checksum(obj: Mapping[str, Any], secret_docs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Plain values only: the workload annotated with the checksum of exactly the Secrets it mounts."""
    names = require_exact(obj, [doc["metadata"]["name"] for doc in secret_docs])
    return annotated(obj, names, checksum_of(secret_docs)) if names else dict(obj)


# ------------------------------------------------------------------------------------------- rollouts


def _int_or_percent(value: Any, replicas: int, round_up: bool) -> int:
    if isinstance(value, int | float) and float(value).is_integer():  # the engine's wire has only floats
        return int(value)
    if isinstance(value, str) and value.endswith("%"):
        scaled = int(value[:-1]) * replicas
        return -(-scaled // 100) if round_up else scaled // 100
    raise ValueError(f"not an int or percentage: {value!r}")


def _required_hostname_anti_affinity(pod_spec: Mapping[str, Any]) -> bool:
    terms = (((pod_spec.get("affinity") or {}).get("podAntiAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or [])
    return any(t.get("topologyKey") == HOSTNAME for t in terms)


def pdb_allowed_disruptions(pdb: Mapping[str, Any], replicas: int) -> int:
    """How many pods a PodDisruptionBudget lets go at once when all `replicas` are healthy."""
    spec = pdb.get("spec") or {}
    if "maxUnavailable" in spec:
        return _int_or_percent(spec["maxUnavailable"], replicas, round_up=True)
    return replicas - _int_or_percent(spec.get("minAvailable", 0), replicas, round_up=True)


def rollout_problems(obj: Mapping[str, Any], pdb: Mapping[str, Any] | None, nodes: int | None) -> list[str]:
    """Why a rolling update of this workload would not go one replica at a time within its PDB, or could
    stall (a surge pod that cannot schedule). `nodes`: schedulable nodes, if known. Empty list = fine."""
    kind, name = obj.get("kind"), (obj.get("metadata") or {}).get("name")
    spec = obj.get("spec") or {}
    template = pod_template(obj)
    if template is None or kind == "CronJob":
        return []  # every Job run is a new pod; nothing rolls
    pod = template.get("spec") or {}
    replicas = int(spec.get("replicas", 1))
    where = f"{kind} {name}"
    problems: list[str] = []
    anti = _required_hostname_anti_affinity(pod)
    if anti and nodes is not None and replicas > nodes:
        problems.append(f"{where}: {replicas} replicas with required hostname anti-affinity on {nodes} nodes")
    if kind == "Deployment":
        strategy = spec.get("strategy") or {}
        if strategy.get("type") == "Recreate":
            if replicas != 1:
                problems.append(f"{where}: Recreate takes all {replicas} replicas down at once")
            return problems
        rolling = strategy.get("rollingUpdate")
        if strategy.get("type") != "RollingUpdate" or not rolling or not {"maxSurge", "maxUnavailable"} <= set(rolling):
            problems.append(f"{where}: strategy must be an explicit RollingUpdate with maxSurge and maxUnavailable "
                            "(the defaults, 25%/25%, surge a pod)")
            return problems
        surge = _int_or_percent(rolling["maxSurge"], replicas, round_up=True)
        unavailable = _int_or_percent(rolling["maxUnavailable"], replicas, round_up=False)
        if unavailable > 1 or (unavailable == 0 and surge == 0):
            problems.append(f"{where}: maxUnavailable {unavailable}, maxSurge {surge}: must roll one replica at a time")
        if anti and surge > 0:
            problems.append(f"{where}: maxSurge {surge} with required hostname anti-affinity: the surge pod cannot "
                            "schedule while every server runs a replica or one server is down")
    elif kind in ("StatefulSet", "DaemonSet"):
        update = spec.get("updateStrategy") or {}
        if update.get("type", "RollingUpdate") != "RollingUpdate":
            problems.append(f"{where}: updateStrategy {update.get('type')} does not roll by itself")
        rolling = update.get("rollingUpdate") or {}
        if _int_or_percent(rolling.get("maxUnavailable", 1), replicas, round_up=False) > 1:
            problems.append(f"{where}: rollingUpdate.maxUnavailable above 1")
        if rolling.get("partition"):
            problems.append(f"{where}: a partition keeps pods on the old revision")
        if kind == "DaemonSet" and rolling.get("maxSurge") not in (None, 0):
            problems.append(f"{where}: maxSurge on a DaemonSet runs two pods per node")
    if replicas > 1:
        if pdb is None:
            problems.append(f"{where}: {replicas} replicas and no PodDisruptionBudget")
        elif pdb_allowed_disruptions(pdb, replicas) < 1:
            problems.append(f"{where}: its PodDisruptionBudget allows no disruption, so a drain never finishes")
        elif pdb_allowed_disruptions(pdb, replicas) > 1:
            problems.append(f"{where}: its PodDisruptionBudget lets more than one replica go at once")
    return problems


def pdb_for(obj: Mapping[str, Any], pdbs: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The PodDisruptionBudget in the workload's namespace whose selector matches its pod labels."""
    template = pod_template(obj) or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    namespace = (obj.get("metadata") or {}).get("namespace")
    for pdb in pdbs:
        if (pdb.get("metadata") or {}).get("namespace") != namespace:
            continue
        match = ((pdb.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        if match and all(labels.get(k) == v for k, v in match.items()):
            return pdb
    return None

"""etcd maintenance documents: the defragmentation CronJob on the hub's host cluster.

`agents/etcd_defrag.py` in the pinned Python image, weekly by default (`karmada.etcd.defragSchedule`): it asks
every member for its status, and only when all answer and agree on a leader defragments the members whose
file is large and mostly free, followers first, leader last, one at a time. Compaction is the API servers'
job (and etcd's own `--auto-compaction-*`, flags.etcd_args); the space quota is `--quota-backend-bytes`.

Plain dicts, no Pulumi; the certificate arrives as an argument.
"""

from __future__ import annotations

from typing import Any

from components.karmada import flags, manifests
from components.kube import agent_script
from components.kube.flows import Dial, Workload

NAME = "etcd-defrag"
NAMESPACE = flags.NAMESPACE
SCRIPT_KEY = "etcd_defrag.py"
PKI_SECRET = "etcd-maintenance" + manifests.PKI_SECRET_SUFFIX
MIN_DB_MIB = 100
MIN_FREE_RATIO = 0.5
"""The etcd mixin's fragmentation alert thresholds (etcd v3.6.6 contrib/mixin: in-use below half, above 100 MiB)."""
TIMEOUT_SECONDS = 300

_LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "karmada-hub"}


def _meta(name: str) -> dict[str, Any]:
    return {"name": name, "namespace": NAMESPACE, "labels": dict(_LABELS)}


def member_endpoints(replicas: int, namespace: str = NAMESPACE, cluster_domain: str = flags.CLUSTER_DOMAIN
                     ) -> list[str]:
    """Every member's own client URL (defragmentation is per member; the Service would pick one at random)."""
    return [f"https://{flags.etcd_member_fqdn(n, namespace, cluster_domain)}:{flags.ETCD_CLIENT_PORT}"
            for n in flags.etcd_member_names(replicas)]


def args(replicas: int) -> list[str]:
    return [
        f"--endpoints={','.join(member_endpoints(replicas))}",
        f"--ca-file={flags.PATHS['etcd/ca.crt']}",
        f"--cert-file={flags.PATHS['etcd/maintenance-client.crt']}",
        f"--key-file={flags.PATHS['etcd/maintenance-client.key']}",
        f"--min-db-mib={MIN_DB_MIB}",
        f"--min-free-ratio={MIN_FREE_RATIO}",
        f"--timeout={TIMEOUT_SECONDS}",
    ]


def pki_files(replicas: int) -> list[str]:
    return manifests.pki_files(args(replicas))


def pki_secret(files: dict[str, Any], replicas: int) -> dict[str, Any]:
    missing = sorted(set(pki_files(replicas)) - set(files))
    if missing:
        raise ValueError(f"etcd maintenance secret: missing {', '.join(missing)}")
    return manifests.secret(PKI_SECRET, {manifests.secret_key(f): files[f] for f in pki_files(replicas)},
                            component=NAME)


def script_configmap(source: str) -> dict[str, Any]:
    return agent_script.configmap(_meta(NAME), SCRIPT_KEY, source)


def cron_job(schedule: str, replicas: int, source: str) -> dict[str, Any]:
    """host: `Forbid` (never two at once), no retries (a refusal is a finding, not a flake; the next week runs
    again); a failed run stays visible as a failed Job and as the KarmadaHubEtcdMaintenanceFailed alert."""
    container = agent_script.container(
        "defrag", SCRIPT_KEY, args(replicas),
        {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}}, mounts=[manifests.pki_mount()])
    volumes = [agent_script.volume(NAME), manifests.pki_volume(PKI_SECRET, pki_files(replicas))]
    template = agent_script.pod_template(_LABELS, source, [container], volumes, restart_policy="Never",
                                         service_links=False)
    return agent_script.cron_job(_meta(NAME), schedule, template, successful_jobs=1, backoff_limit=0,
                                 active_deadline_seconds=TIMEOUT_SECONDS * (replicas + 1))


def flows() -> Workload:
    """host: the defragmentation job listens on nothing and dials each etcd member's client port."""
    return Workload(namespace=NAMESPACE, name=NAME, pod_labels={"app.kubernetes.io/name": NAME},
                    dials=(Dial(flags.NAMESPACE, flags.ETCD_SERVICE, "client"),))

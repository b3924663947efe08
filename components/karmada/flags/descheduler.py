"""karmada-descheduler command line (on the hub, beside the scheduler)."""

from __future__ import annotations

from components.karmada.flags.common import (
    ESTIMATOR_PORT,
    KUBECONFIG_PATH,
    PATHS,
    LeaderElection,
)

DESCHEDULER_HEALTH_PORT = 10358
"""`--health-probe-bind-address` default port; the server there serves `/healthz` only (always 200 "ok")."""


def descheduler_args(
    *,
    interval_s: int = 120,
    unschedulable_threshold_s: int = 300,
    estimator_timeout_s: int = 3,
    leader_election: LeaderElection = LeaderElection(),
    verbosity: int = 2,
) -> list[str]:
    """karmada-descheduler at v1.18.2 (`cmd/descheduler/app/options/options.go`).

    It dials every member's scheduler-estimator over mTLS with its own gRPC client cert (the estimators accept any
    client cert of the Karmada CA, `--grpc-client-ca-file`) and verifies their serving certs against the Karmada CA.
    Its lease is always named `karmada-descheduler` (no `--leader-elect-resource-name` flag), and it takes no
    `--feature-gates` flag: passing one would make it exit with "unknown flag"."""
    if interval_s <= 0 or unschedulable_threshold_s <= 0:
        raise ValueError("descheduling interval and unschedulable threshold must be > 0")
    return [
        f"--kubeconfig={KUBECONFIG_PATH}",
        "--metrics-bind-address=$(POD_IP):8080",
        f"--health-probe-bind-address=$(POD_IP):{DESCHEDULER_HEALTH_PORT}",
        *leader_election.args(),
        f"--descheduling-interval={interval_s}s",
        f"--unschedulable-threshold={unschedulable_threshold_s}s",
        f"--scheduler-estimator-ca-file={PATHS['ca.crt']}",
        f"--scheduler-estimator-cert-file={PATHS['descheduler-estimator-client.crt']}",
        f"--scheduler-estimator-key-file={PATHS['descheduler-estimator-client.key']}",
        f"--scheduler-estimator-port={ESTIMATOR_PORT}",
        f"--scheduler-estimator-timeout={estimator_timeout_s}s",
        f"--scheduler-estimator-service-namespace={leader_election.namespace}",
        f"--v={verbosity}",
    ]

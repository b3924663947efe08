"""karmada-scheduler command line (with or without scheduler-estimators)."""

from __future__ import annotations

from collections.abc import Mapping

from components.karmada.flags.common import (
    ESTIMATOR_PORT,
    KUBECONFIG_PATH,
    PATHS,
    LeaderElection,
    check_gates,
    feature_gates_flag,
)


def scheduler_args(
    *,
    enable_estimator: bool,
    feature_gates: Mapping[str, bool] | None = None,
    leader_election: LeaderElection = LeaderElection(),
    estimator_timeout_s: int = 3,
    verbosity: int = 2,
) -> list[str]:
    """karmada-scheduler (ref §2.6). With estimators it dials them over mTLS with its own gRPC
    client cert; without, the estimator flags are left out entirely rather than half-set."""
    args = [
        f"--kubeconfig={KUBECONFIG_PATH}",
        "--metrics-bind-address=$(POD_IP):8080",
        "--health-probe-bind-address=$(POD_IP):10351",
        *leader_election.args(),
        "--leader-elect-resource-name=karmada-scheduler",
    ]
    if enable_estimator:
        args += [
            "--enable-scheduler-estimator=true",
            f"--scheduler-estimator-ca-file={PATHS['ca.crt']}",
            f"--scheduler-estimator-cert-file={PATHS['scheduler-estimator-client.crt']}",
            f"--scheduler-estimator-key-file={PATHS['scheduler-estimator-client.key']}",
            f"--scheduler-estimator-port={ESTIMATOR_PORT}",
            f"--scheduler-estimator-timeout={estimator_timeout_s}s",
            f"--scheduler-estimator-service-namespace={leader_election.namespace}",
        ]
    elif (feature_gates or {}).get("SchedulingOvercommitProtection"):
        raise ValueError("SchedulingOvercommitProtection needs the scheduler estimator (enable_estimator=True)")
    check_gates("karmada-scheduler", feature_gates or {})
    args += feature_gates_flag(feature_gates or {})
    args.append(f"--v={verbosity}")
    return args

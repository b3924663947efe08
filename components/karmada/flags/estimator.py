"""karmada-scheduler-estimator command line (one per member, on the hub)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from components.karmada.flags.common import (
    ESTIMATOR_PORT,
    MEMBER_KUBECONFIG_PATH,
    PATHS,
    check_gates,
    feature_gates_flag,
)


def scheduler_estimator_args(
    cluster_name: str,
    *,
    feature_gates: Mapping[str, bool] | None = None,
    verbosity: int = 2,
) -> list[str]:
    """karmada-scheduler-estimator for one member (runs on the hub, reads the member's API).

    The gRPC port requires client certs from the Karmada CA, so only the scheduler can ask it."""
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,46}[a-z0-9])?", cluster_name):
        raise ValueError(f"cluster name '{cluster_name}' must be a DNS label of at most 48 chars")
    check_gates("karmada-scheduler-estimator", feature_gates or {})
    return [
        f"--kubeconfig={MEMBER_KUBECONFIG_PATH}",
        f"--cluster-name={cluster_name}",
        f"--server-port={ESTIMATOR_PORT}",
        f"--grpc-auth-cert-file={PATHS['scheduler-estimator.crt']}",
        f"--grpc-auth-key-file={PATHS['scheduler-estimator.key']}",
        f"--grpc-client-ca-file={PATHS['ca.crt']}",
        "--metrics-bind-address=$(POD_IP):8080",
        "--health-probe-bind-address=$(POD_IP):10351",
        *feature_gates_flag(feature_gates or {}),
        f"--v={verbosity}",
    ]

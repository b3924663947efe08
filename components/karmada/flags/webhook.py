"""karmada-webhook command line."""

from __future__ import annotations

from collections.abc import Mapping

from components.karmada.flags.common import (
    KUBECONFIG_PATH,
    PKI_DIR,
    QUOTA_GATES,
    WEBHOOK_PORT,
    check_gates,
    feature_gates_flag,
    merge_gates,
)


def webhook_args(
    *,
    allow_no_execute_taint_policy: bool,
    quota_enforcement: bool,
    feature_gates: Mapping[str, bool] | None = None,
    verbosity: int = 2,
) -> list[str]:
    """karmada-webhook (ref §2.8). It enforces FederatedResourceQuota in the ResourceBinding
    validator, so the quota gate must match the controller-manager's or quota is half-enforced."""
    gates = merge_gates(QUOTA_GATES if quota_enforcement else {}, feature_gates or {})
    if not quota_enforcement and gates.get("FederatedQuotaEnforcement"):
        raise ValueError("FederatedQuotaEnforcement=true needs quota_enforcement=True")
    check_gates("karmada-webhook", gates)
    args = [
        f"--kubeconfig={KUBECONFIG_PATH}",
        "--bind-address=0.0.0.0",
        f"--secure-port={WEBHOOK_PORT}",
        f"--cert-dir={PKI_DIR}",
        "--tls-cert-file-name=webhook.crt",
        "--tls-private-key-file-name=webhook.key",
        "--tls-min-version=1.3",
        "--metrics-bind-address=$(POD_IP):8080",
        # No health listener: cmd/webhook adds no healthz/readyz check, so controller-runtime would open the
        # port and answer 404 on every path. The one health endpoint is `/readyz/` on the secure port.
        "--health-probe-bind-address=0",
    ]
    if allow_no_execute_taint_policy:
        args.append("--allow-no-execute-taint-policy=true")
    args += feature_gates_flag(gates)
    args.append(f"--v={verbosity}")
    return args

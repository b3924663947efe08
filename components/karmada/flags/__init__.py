"""Command lines of the Karmada control plane: pure builders for every container's args.

This is the room where flags are decided. The Pulumi components only wrap these lists in
containers (`command` = `COMMANDS[component]`, `args` = the builder's result), mount files at the
paths in `PATHS`, and set the `$(POD_NAME)` / `$(POD_IP)` env vars the args reference. Keeping the
flags here, free of Pulumi, is what lets tests start a real etcd with exactly what the program
renders and check every flag name against what the pinned binaries accept.

One module per component (as Karmada's operator splits `operator/pkg/controlplane`), beside `common` (names,
ports, paths, leader election, failover timing, gate sets) and `table` (the flags each pinned binary accepts,
and the parser that reads an args list back). This package re-exports all of them, so callers write
`flags.etcd_args(...)` and `flags.PATHS` without caring which file a builder lives in.
"""

from components.karmada.flags.agent import (
    agent_args,
)
from components.karmada.flags.apiserver import (
    AuditLog,
    aggregated_apiserver_args,
    karmada_apiserver_args,
)
from components.karmada.flags.common import (
    AGENT_KUBECONFIG_PATH,
    AGGREGATED_APISERVER_PORT,
    APISERVER_PORT,
    APISERVER_SERVICE,
    AUDIT_LOG_PATH,
    AUDIT_POLICY_PATH,
    BINARY,
    CAPI_KUBECONFIG_PATH,
    CLUSTER_DOMAIN,
    CLUSTER_NAMESPACE,
    COMMANDS,
    ENCRYPTION_CONFIG_PATH,
    ESTIMATOR_PORT,
    ETCD_CLIENT_PORT,
    ETCD_CLIENT_SERVICE,
    ETCD_CONFIG_DIR,
    ETCD_CONFIG_FILE,
    ETCD_DATA_DIR,
    ETCD_METRICS_PORT,
    ETCD_PEER_PORT,
    ETCD_SERVICE,
    FAILOVER_GATES,
    KCM_PORT,
    KUBECONFIG_PATH,
    LEADER_ELECTION,
    MEMBER_KUBECONFIG_PATH,
    NAMESPACE,
    PATHS,
    PKI_DIR,
    QUOTA_GATES,
    SERVICE_CLUSTER_IP_RANGE,
    WEBHOOK_PORT,
    FailoverLike,
    FailoverSettings,
    LeaderElection,
    Lease,
    PurgeMode,
    apiserver_url,
    etcd_client_url,
    etcd_member_fqdn,
    etcd_member_names,
    feature_gates_flag,
    merge_gates,
)
from components.karmada.flags.controller_manager import (
    FAILOVER_FLAGS,
    controller_manager_args,
)
from components.karmada.flags.estimator import (
    scheduler_estimator_args,
)
from components.karmada.flags.etcd import (
    ETCD_BACKUP_DIR,
    ETCD_CIPHER_SUITES,
    ETCD_PREPARE_WAIT_SECONDS,
    ETCD_SNAPSHOT_PATH,
    ETCDCTL,
    ETCDCTL_SNAPSHOT_SAVE,
    etcd_args,
    etcd_config_file_args,
    etcd_prepare_args,
    etcdctl_flags,
)
from components.karmada.flags.kube_controller_manager import (
    KCM_CONTROLLERS,
    kube_controller_manager_args,
)
from components.karmada.flags.scheduler import (
    scheduler_args,
)
from components.karmada.flags.table import (
    KNOWN_FLAGS,
    REMOVED_FLAGS,
    env_refs,
    file_paths,
    flag_name,
    flag_names,
    flag_values,
)
from components.karmada.flags.webhook import (
    webhook_args,
)

__all__ = [
    "AGENT_KUBECONFIG_PATH",
    "AGGREGATED_APISERVER_PORT",
    "APISERVER_PORT",
    "APISERVER_SERVICE",
    "AUDIT_LOG_PATH",
    "AUDIT_POLICY_PATH",
    "BINARY",
    "CAPI_KUBECONFIG_PATH",
    "CLUSTER_DOMAIN",
    "CLUSTER_NAMESPACE",
    "COMMANDS",
    "ENCRYPTION_CONFIG_PATH",
    "ESTIMATOR_PORT",
    "ETCDCTL",
    "ETCDCTL_SNAPSHOT_SAVE",
    "ETCD_BACKUP_DIR",
    "ETCD_CIPHER_SUITES",
    "ETCD_CLIENT_PORT",
    "ETCD_CLIENT_SERVICE",
    "ETCD_CONFIG_DIR",
    "ETCD_CONFIG_FILE",
    "ETCD_DATA_DIR",
    "ETCD_METRICS_PORT",
    "ETCD_PEER_PORT",
    "ETCD_PREPARE_WAIT_SECONDS",
    "ETCD_SERVICE",
    "ETCD_SNAPSHOT_PATH",
    "FAILOVER_FLAGS",
    "FAILOVER_GATES",
    "KCM_CONTROLLERS",
    "KCM_PORT",
    "KNOWN_FLAGS",
    "KUBECONFIG_PATH",
    "LEADER_ELECTION",
    "MEMBER_KUBECONFIG_PATH",
    "NAMESPACE",
    "PATHS",
    "PKI_DIR",
    "QUOTA_GATES",
    "REMOVED_FLAGS",
    "SERVICE_CLUSTER_IP_RANGE",
    "WEBHOOK_PORT",
    "AuditLog",
    "FailoverLike",
    "FailoverSettings",
    "LeaderElection",
    "Lease",
    "PurgeMode",
    "agent_args",
    "aggregated_apiserver_args",
    "apiserver_url",
    "controller_manager_args",
    "env_refs",
    "etcd_args",
    "etcd_client_url",
    "etcd_config_file_args",
    "etcd_member_fqdn",
    "etcd_member_names",
    "etcd_prepare_args",
    "etcdctl_flags",
    "feature_gates_flag",
    "file_paths",
    "flag_name",
    "flag_names",
    "flag_values",
    "karmada_apiserver_args",
    "kube_controller_manager_args",
    "merge_gates",
    "scheduler_args",
    "scheduler_estimator_args",
    "webhook_args",
]

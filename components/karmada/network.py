"""The Karmada control plane's network flows on the host cluster: every listener and every dial, as data.

Read from the component command lines this package renders (flags) and the upstream binaries at v1.18.2:
the karmada-apiserver dials etcd, the aggregated apiserver (APIService `v1alpha1.cluster.karmada.io`) and the
webhook (admission and CRD `/convert`); every other component dials only the karmada-apiserver (its
`--kubeconfig`), the aggregated apiserver also etcd, the scheduler and the descheduler each member's estimator
(`pkg/estimator/client` dials `karmada-scheduler-estimator-<cluster>.<ns>.svc:10352`). The same list, as the
contract of each binary, is docs/upstream-contract.md ("Connections"); tests/contract/test_flows.py holds the
two to each other. Estimators dial their
member's API server, outside the host. Health and metrics listeners have no clients here (kubelet probes come
from the pod's node); a monitoring stack adds its scrapes as dials. `components/kube/flows.py` turns these into
NetworkPolicies.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from components.karmada import flags, manifests
from components.karmada.pki_spec import estimator_service_name
from components.kube.flows import Dial, Listener, Workload

NS = flags.NAMESPACE
APISERVER = Dial(NS, "karmada-apiserver", "https")
ETCD_CLIENT = Dial(NS, flags.ETCD_SERVICE, "client")


def _workload(name: str, listeners: Iterable[tuple[str, int]], dials: Iterable[Dial] = (),
              external: dict[str, tuple[str, ...]] | None = None) -> Workload:
    return Workload(namespace=NS, name=name, pod_labels=manifests.selector(name),
                    listeners=tuple(Listener(n, p) for n, p in listeners), dials=tuple(dials),
                    external=external or {})


def estimator_workload(name: str) -> Workload:
    """One member's karmada-scheduler-estimator (`name` = its Service/Deployment name): gRPC for the scheduler and
    descheduler, health and metrics for the node; it dials only its member's API server, outside the host."""
    return _workload(name, [("grpc", flags.ESTIMATOR_PORT), ("metrics", 8080),
                            ("health", manifests.ESTIMATOR_HEALTH_PORT)])


def control_plane_workloads(apiserver_clients: Sequence[str], estimator_members: Sequence[str] = (),
                            descheduler: bool = False, search: bool = False) -> list[Workload]:
    """`apiserver_clients`: CIDRs outside the cluster allowed to reach the karmada-apiserver (the firewall's
    allow-list and the hub's private network, where the API load balancer's private address lives). The
    descheduler, when it runs, dials the karmada-apiserver and every estimator (pkg/descheduler)."""
    estimators = [estimator_service_name(m) for m in sorted(estimator_members)]
    to_estimators = [Dial(NS, e, "grpc") for e in estimators]
    optional = [_workload(manifests.DESCHEDULER, [("metrics", 8080), ("health", flags.DESCHEDULER_HEALTH_PORT)],
                          [APISERVER, *to_estimators])] if descheduler else []
    return [
        _workload(flags.ETCD_SERVICE, [("client", flags.ETCD_CLIENT_PORT), ("peer", flags.ETCD_PEER_PORT),
                                       ("metrics", flags.ETCD_METRICS_PORT)],
                  # raft; and the pod's prepare step asks the other members' peer port (/members) and their
                  # client port (the member API) before etcd starts (agents/etcd_member_prepare.py)
                  [Dial(NS, flags.ETCD_SERVICE, "peer"), ETCD_CLIENT]),
        _workload("karmada-apiserver", [("https", flags.APISERVER_PORT)],
                  [ETCD_CLIENT, Dial(NS, "karmada-aggregated-apiserver", "https"),
                   Dial(NS, "karmada-webhook", "https"),
                   # the search addon's APIService (karmada/addons_docs.py declares karmada-search itself)
                   *([Dial(NS, "karmada-search", "https")] if search else [])],
                  external={"https": tuple(apiserver_clients)}),
        _workload("karmada-aggregated-apiserver", [("https", flags.AGGREGATED_APISERVER_PORT)],
                  [ETCD_CLIENT, APISERVER]),
        _workload("karmada-webhook", [("https", flags.WEBHOOK_PORT), ("metrics", 8080)],
                  [APISERVER]),
        _workload("kube-controller-manager", [("https", flags.KCM_PORT)], [APISERVER]),
        _workload("karmada-scheduler", [("metrics", 8080), ("health", 10351)], [APISERVER, *to_estimators]),
        _workload("karmada-controller-manager", [("metrics", 8080), ("health", 10357)], [APISERVER]),
        *(estimator_workload(e) for e in estimators),
        *optional,
    ]

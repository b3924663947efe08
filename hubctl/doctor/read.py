"""`hubctl doctor`'s reader: one pass over the live fleet with the stack's kubeconfigs, into a `checks.Snapshot`.

The kubeconfigs are the ones `hubctl drill` takes (`--kubeconfigs DIR`: `karmada.kubeconfig`, `hub.kubeconfig`, and
`<member>.kubeconfig` for the members whose own API it should ask), read with the drill's client. Everything is a
GET, but one: the webhook probe is a server-side dry run (`?dryRun=All`) of a PropagationPolicy create, which runs
the admission webhooks and persists nothing. From Secrets only the certificates (`*.crt` keys) are decoded, parsed
for their subject and expiry, and dropped; no key, token or kubeconfig is kept or printed.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from cryptography import x509

from components.karmada import flags
from components.traffic import failover_docs
from hubctl.doctor.checks import Certificate, Expect, Probe, Snapshot
from hubctl.drill.kube import DrillError, Kube, KubeError

NS = flags.NAMESPACE
DNS_NS = failover_docs.NAMESPACE
PROBE_POLICY = "hubctl-doctor-webhook-probe"
CERT_NAMESPACES = (NS, DNS_NS)


def _short(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    return " ".join(text.split())[:160]


class Api(Kube):
    """The drill's kubeconfig client, plus the two requests doctor makes that are not JSON GETs."""

    def text(self, path: str, method: str = "GET", body: Any = None) -> tuple[int, str]:
        """(HTTP status, body text), without raising on an HTTP error status."""
        status, payload = self.raw(method, path, body, accept="text/plain, application/json")
        return status, payload.decode(errors="replace")

    def items(self, path: str) -> list[dict[str, Any]]:
        return list((self.request("GET", path) or {}).get("items") or [])


def probe_readyz(api: Api | None) -> Probe:
    if api is None:
        return Probe(None, "no kubeconfig")
    try:
        status, body = api.text("/readyz?verbose")
    except OSError as err:
        return Probe(False, f"unreachable: {_short(err)}")
    return Probe(status == 200, body if status != 200 else "")


def probe_webhook(api: Api) -> Probe:
    """A dry-run create of a PropagationPolicy in karmada-system: the mutating and validating webhooks must answer
    (failurePolicy Fail), nothing is stored."""
    body = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": PROBE_POLICY, "namespace": NS},
            "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "name": PROBE_POLICY}],
                     "placement": {"clusterAffinity": {"clusterNames": ["hubctl-doctor-none"]}}}}
    try:
        status, text = api.text(f"/apis/policy.karmada.io/v1alpha1/namespaces/{NS}/propagationpolicies?dryRun=All",
                                "POST", body)
    except OSError as err:
        return Probe(False, f"karmada-apiserver unreachable: {_short(err)}")
    if status < 300 or status == 409:  # 409 AlreadyExists: admission ran, then storage refused the dry run's name
        return Probe(True)
    try:
        message = str(json.loads(text).get("message") or text)
    except (ValueError, AttributeError):
        message = text
    return Probe(False, f"HTTP {status}: {' '.join(message.split())[:300]}")


def certificates(secrets: Iterable[dict[str, Any]]) -> list[Certificate]:
    out = []
    for secret in secrets:
        meta = secret.get("metadata") or {}
        for key, value in sorted((secret.get("data") or {}).items()):
            if not key.endswith(".crt"):
                continue
            try:
                cert = x509.load_pem_x509_certificate(base64.b64decode(value))
            except ValueError:
                continue
            out.append(Certificate(f"{meta.get('namespace')}/{meta.get('name')} {key}",
                                   cert.subject.rfc4514_string(), cert.not_valid_after_utc))
    return out


class Reader:
    """One read of the fleet: `snapshot()`. Kubeconfigs that are missing for members are skipped (their own API is
    then not asked); `karmada.kubeconfig` and `hub.kubeconfig` are required."""

    def __init__(self, directory: Path, expect: Expect, timeout: float = 5.0) -> None:
        self.dir = directory
        self.expect = expect
        self.timeout = timeout
        self.apis: list[Api] = []
        self.karmada = self._open("karmada", required=True)
        self.hub = self._open("hub", required=True)
        self.members = {m.name: self._open(m.name, required=False) for m in expect.members}

    def _open(self, name: str, required: bool) -> Api | None:
        path = self.dir / f"{name}.kubeconfig"
        if not path.is_file():
            if required:
                raise DrillError(f"{path}: no such kubeconfig (--kubeconfigs DIR holds karmada.kubeconfig, "
                                 "hub.kubeconfig and <member>.kubeconfig, as for hubctl drill)")
            return None
        api = Api(path, timeout=self.timeout)
        self.apis.append(api)
        return api

    def close(self) -> None:
        for api in self.apis:
            api.close()

    def snapshot(self, now: dt.datetime | None = None) -> Snapshot:
        snap = Snapshot(now=now or dt.datetime.now(dt.UTC))
        k, h = self.karmada, self.hub
        assert k is not None and h is not None
        snap.karmada_readyz = probe_readyz(k)
        snap.host_readyz = probe_readyz(h)
        karmada_up = snap.karmada_readyz.ok is not False or "unreachable" not in snap.karmada_readyz.detail
        host_up = snap.host_readyz.ok is not False or "unreachable" not in snap.host_readyz.detail

        def read(what: str, api: Api, up: bool, fn: Callable[[Api], Any]) -> Any:
            if not up:
                return None  # the API's own probe already says it is unreachable
            try:
                return fn(api)
            except (KubeError, OSError, ValueError) as err:
                snap.errors[what] = _short(err)
                return None

        snap.nodes = read("host nodes", h, host_up, lambda a: a.items("/api/v1/nodes"))
        snap.pods = read("host pods", h, host_up, lambda a: a.items(f"/api/v1/namespaces/{NS}/pods"))
        snap.deployments = read("host deployments", h, host_up,
                                lambda a: a.items(f"/apis/apps/v1/namespaces/{NS}/deployments"))
        snap.certificates = read("host certificates", h, host_up, lambda a: certificates(
            s for ns in CERT_NAMESPACES if ns == NS or self.expect.dns
            for s in a.items(f"/api/v1/namespaces/{ns}/secrets")))
        if self.expect.dns:
            snap.dnsendpoints = read("dnsendpoints", h, host_up, lambda a: a.items(
                f"/apis/externaldns.k8s.io/v1alpha1/namespaces/{DNS_NS}/dnsendpoints"))
            snap.vantage_leases = read("failover vantage leases", h, host_up, lambda a: a.items(
                f"/apis/coordination.k8s.io/v1/namespaces/{DNS_NS}/leases"))
        snap.apiservices = read("apiservices", k, karmada_up,
                                lambda a: a.items("/apis/apiregistration.k8s.io/v1/apiservices"))
        snap.leases = read("leases", k, karmada_up,
                           lambda a: a.items(f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"))
        snap.cluster_leases = read("cluster leases", k, karmada_up, lambda a: a.items(
            f"/apis/coordination.k8s.io/v1/namespaces/{flags.CLUSTER_NAMESPACE}/leases"))
        snap.clusters = read("clusters", k, karmada_up, lambda a: a.items("/apis/cluster.karmada.io/v1alpha1/clusters"))
        snap.bindings = read("bindings", k, karmada_up, lambda a: [
            *a.items("/apis/work.karmada.io/v1alpha2/resourcebindings"),
            *a.items("/apis/work.karmada.io/v1alpha2/clusterresourcebindings")])
        snap.works = read("works", k, karmada_up, lambda a: a.items("/apis/work.karmada.io/v1alpha1/works"))
        snap.quotas = read("quotas", k, karmada_up,
                           lambda a: a.items("/apis/policy.karmada.io/v1alpha1/federatedresourcequotas"))
        snap.webhook = probe_webhook(k) if karmada_up else Probe(None, "karmada-apiserver unreachable")
        for m in self.expect.members:
            api = self.members.get(m.name)
            if api is None:
                continue
            snap.member_api[m.name] = probe_readyz(api)
            if m.sync_mode == "Pull" and snap.member_api[m.name].ok is not False:
                snap.agents[m.name] = read(f"{m.name} karmada-agent", api, True, lambda a: a.get(
                    "/apis/apps/v1/namespaces/karmada-system/deployments/karmada-agent"))
        return snap


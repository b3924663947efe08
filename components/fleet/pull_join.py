"""PullJoin: the one-hour bootstrap token a Pull member joins with, made at apply time and in no stack's state.

A Pulumi dynamic resource whose `create` (never a preview) does, with the stack's own credentials:

1. if the member already holds a `karmada-system/karmada-kubeconfig` for this hub, nothing: the member is joined
   and its agent renews its own certificate. For this hub means: its `server` is `hubUrl`, its CA is `hubCaPem`,
   its client certificate was signed by that CA and has more than a tenth of its life left. A certificate with
   life left is not enough: after a new Karmada CA or a new hub URL the agent is refused (or dials the wrong
   place) until the old certificate runs out, and cannot re-join itself (agents/pull_join.py);
2. otherwise it makes the token's secret half in memory and server-side-applies the hub's
   `kube-system/bootstrap-token-<id>` (authentication only, group
   `system:bootstrappers:karmada:default-cluster-token`, expiring in an hour; the hub's tokencleaner removes it)
   with the writer's identity (a region stack's own, which may write exactly that Secret), and the member's
   `karmada-system/karmada-agent-bootstrap` (token, hub URL, hub CA) with the member's credentials.

The token is neither an input nor an output, so it is in no state, plan or log. The join Job in the member
(agents/pull_join.py) consumes it and deletes the member's copy. A new `hubUrl` or `hubCaPem` replaces the resource
(so `create` checks the member against the new hub), and the Job carries their fingerprint (member_docs.hub_trust),
so it runs again too. `generation` (the member's joinGeneration) is the manual re-join knob (a member rebuilt, its
Secret deleted): a new value replaces the resource, which deletes the old Secrets before making new ones.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
import secrets
import string
from typing import Any

import pulumi
import yaml
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

from components.fleet import member_docs as docs
from components.kube.api_client import KubeApi, secret_path

TOKEN_ALPHABET = string.ascii_lowercase + string.digits
MIN_LIFE_LEFT = 0.1


def new_token_secret() -> str:
    return "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(16))


def joins_to(kubeconfig_text: bytes, hub_url: str, hub_ca_pem: str, now: dt.datetime) -> bool:
    """The agent kubeconfig (JSON, or the YAML certRotation writes back) is one for this hub: one cluster whose
    `server` is `hub_url` and whose CA is `hub_ca_pem`, one user whose client certificate that CA signed and that
    has more than a tenth of its life left."""
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature

    try:
        config = yaml.safe_load(kubeconfig_text) or {}
        (cluster,), (user,) = config.get("clusters") or [], config.get("users") or []
        server = cluster["cluster"]["server"]
        ca_der = _certificates(base64.b64decode(cluster["cluster"]["certificate-authority-data"]))
        cert = x509.load_pem_x509_certificate(base64.b64decode(user["user"]["client-certificate-data"]))
        hub_cas = [x509.load_pem_x509_certificate(p) for p in _pem_blocks(hub_ca_pem.encode())]
    except (ValueError, KeyError, TypeError, AttributeError, yaml.YAMLError):
        return False
    if str(server).rstrip("/") != hub_url.rstrip("/") or not hub_cas or ca_der != _certificates(hub_ca_pem.encode()):
        return False
    signed = False
    for ca in hub_cas:
        try:
            cert.verify_directly_issued_by(ca)
            signed = True
        except (ValueError, TypeError, InvalidSignature):
            continue
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    total = (end - start).total_seconds()
    return signed and total > 0 and (end - now).total_seconds() / total > MIN_LIFE_LEFT


def _pem_blocks(pem: bytes) -> list[bytes]:
    return [m.group(0) for m in re.finditer(rb"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", pem, re.S)]


def _certificates(pem: bytes) -> list[bytes]:
    """The DER of each certificate in a PEM bundle (the same CA compares equal however it is wrapped)."""
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding

    return [x509.load_pem_x509_certificate(b).public_bytes(Encoding.DER) for b in _pem_blocks(pem)]


def member_is_joined(member: KubeApi, now: dt.datetime, hub_url: str, hub_ca_pem: str) -> bool:
    """The member's agent kubeconfig Secret exists and joins it to this hub (`joins_to`)."""
    secret = member.get(secret_path(docs.AGENT_NAMESPACE, docs.AGENT_KUBECONFIG_SECRET))
    encoded = ((secret or {}).get("data") or {}).get(docs.AGENT_KUBECONFIG_KEY)
    if not encoded:
        return False
    try:
        text = base64.b64decode(encoded)
    except ValueError:
        return False
    return joins_to(text, hub_url, hub_ca_pem, now)


def join_once(hub: KubeApi, member: KubeApi, token_id: str, hub_url: str, hub_ca_pem: str,
              now: dt.datetime | None = None, token_secret: str | None = None) -> dict[str, Any]:
    """What `create` does; returns only public facts (the token id and when it expires)."""
    now = now or dt.datetime.now(dt.UTC)
    if member_is_joined(member, now, hub_url, hub_ca_pem):
        return {"tokenId": token_id, "joined": True, "expiresAt": None}
    secret_half = token_secret or new_token_secret()
    expires = (now + dt.timedelta(seconds=docs.TOKEN_TTL_SECONDS)).strftime("%Y-%m-%dT%H:%M:%SZ")
    token_doc = docs.bootstrap_token_secret(token_id, secret_half, expires)
    hub.apply(secret_path("kube-system", token_doc["metadata"]["name"]), token_doc)
    member_doc = docs.agent_bootstrap_secret(f"{token_id}.{secret_half}", hub_url, hub_ca_pem)
    member.apply(secret_path(docs.AGENT_NAMESPACE, docs.AGENT_BOOTSTRAP_SECRET), member_doc)
    return {"tokenId": token_id, "joined": False, "expiresAt": expires}


def forget(hub: KubeApi, member: KubeApi, token_id: str) -> None:
    """What `delete` does: both bootstrap Secrets go, if still there (the token may have expired already)."""
    hub.delete(secret_path("kube-system", f"bootstrap-token-{token_id}"))
    member.delete(secret_path(docs.AGENT_NAMESPACE, docs.AGENT_BOOTSTRAP_SECRET))


_REPLACE_ON = ("cluster", "tokenId", "generation", "hubUrl", "hubCaPem")
"""What makes the member join anew: another member or token, the manual knob, or another hub to trust."""


class _PullJoinProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        facts = join_once(KubeApi.from_kubeconfig(props["writerKubeconfig"]),
                          KubeApi.from_kubeconfig(props["memberKubeconfig"]), props["tokenId"], props["hubUrl"],
                          props["hubCaPem"])
        return CreateResult(id_=f"{props['cluster']}-{props['tokenId']}", outs={**props, **facts})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [k for k in _REPLACE_ON if olds.get(k) != news.get(k)]
        changes = replaces or [k for k in ("writerKubeconfig", "memberKubeconfig") if olds.get(k) != news.get(k)]
        # The token id is fixed per member: the old Secrets must go before the new ones are written.
        return DiffResult(changes=bool(changes), replaces=replaces, delete_before_replace=True)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        """New credentials only (the stack's own): remembered for `delete`, nothing to do in the clusters."""
        return UpdateResult(outs={**news, **{k: olds.get(k) for k in ("joined", "expiresAt")}})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        forget(KubeApi.from_kubeconfig(props["writerKubeconfig"]), KubeApi.from_kubeconfig(props["memberKubeconfig"]),
               props["tokenId"])


class PullJoin(Resource):
    token_id: pulumi.Output[str]

    def __init__(self, name: str, cluster: str, token_id: str, generation: int, hub_url: pulumi.Input[str],
                 hub_ca_pem: pulumi.Input[str], writer_kubeconfig: pulumi.Input[str],
                 member_kubeconfig: pulumi.Input[str], opts: pulumi.ResourceOptions | None = None) -> None:
        if not re.fullmatch(r"[a-z0-9]{6}", token_id):
            raise ValueError(f"token id {token_id!r} is not [a-z0-9]{{6}}")
        super().__init__(
            _PullJoinProvider(), name,
            {"cluster": cluster, "tokenId": token_id, "generation": generation, "hubUrl": hub_url,
             "hubCaPem": hub_ca_pem, "writerKubeconfig": pulumi.Output.secret(writer_kubeconfig),
             "memberKubeconfig": pulumi.Output.secret(member_kubeconfig), "joined": None, "expiresAt": None},
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                additional_secret_outputs=["writerKubeconfig", "memberKubeconfig"])),
        )

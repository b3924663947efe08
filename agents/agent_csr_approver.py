"""Agent CSR approver: a Pull agent's certificate only for the member its bootstrap token was made for.

This runs on the hub's host cluster and talks to the karmada-apiserver; stdlib-only, shipped from a ConfigMap with
`_incluster.py` (components/fleet/csr_approver_docs.py renders it).

Why it exists: Karmada v1.18.2's own approver (karmada-controller-manager `agentcsrapproving`,
pkg/controllers/certificate/approver/agent_csr_approving.go) approves any CSR for `CN=system:karmada:agent:<any>`,
`O=system:karmada:agents` whose requester may `create certificatesigningrequests/clusteragent`, which every
bootstrap token may. So one token, or one region identity that may write one token, became every Pull agent
(security review 2, C1). The hub runs karmada-controller-manager with `--controllers=*,-agentcsrapproving` and
this loop decides instead, like kubelet CSR approvers do for nodes:

- a join: requested by `system:bootstrap:<token id>` in the program's bootstrap group, approved only when that
  token id is the one the hub derived for the member the CN names (`--member=<member>:<token id>`);
- a renewal (the agent's certRotation): requested by the agent itself (`spec.username` equals the CN, in group
  `system:karmada:agents`), approved only for a member this hub still serves;
- the request itself must be exactly an agent's: signer `kubernetes.io/kube-apiserver-client`, subject exactly
  `O=system:karmada:agents, CN=system:karmada:agent:<member>`, no attributes requested (no SANs, no extensions),
  usages `digital signature, client auth` with or without `key encipherment`.

It also deletes each member's bootstrap token an hour after its creation (`creationTimestamp`, which the writer of
the Secret cannot choose), whatever `expiration` it carries: the token's lifetime is the hub's rule, and
tokencleaner's deletion at `expiration` only ever comes earlier.

Anything agent-shaped that fails is denied with the reason (a visible `Denied` condition); any other CSR is left
alone. kube-controller-manager's csrsigning signs what is approved. The CSR is read with a small DER reader (the
subject and whether attributes are present; the API server already verified the request parses and the pinned
image has no crypto library): nothing here trusts anything the requester wrote but those bytes and what the API
server recorded about who asked (`spec.username`, `spec.groups`).
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import logging
import sys
import threading
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from _incluster import ApiError, Client, Health, Response, serve

CSR_PATH = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
TOKEN_PATH = "/api/v1/namespaces/kube-system/secrets/bootstrap-token-{id}"
SIGNER = "kubernetes.io/kube-apiserver-client"
AGENT_PREFIX = "system:karmada:agent:"
AGENT_GROUP = "system:karmada:agents"
BOOTSTRAP_USER_PREFIX = "system:bootstrap:"
BOOTSTRAP_GROUP = "system:bootstrappers:karmada:default-cluster-token"
USAGES = ({"digital signature", "key encipherment", "client auth"}, {"digital signature", "client auth"})
"""What upstream's ValidateAgentCSR accepts (agentRequiredUsages, agentRequiredUsagesNoKeyEncipherment)."""
OID_CN, OID_O = "2.5.4.3", "2.5.4.10"

log = logging.getLogger("agent-csr-approver")


# ------------------------------------------------------------------------------------------------ DER


class DerError(ValueError):
    pass


def _tlv(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, start of content, end of content) of the element at `pos` (single-byte tags, definite lengths)."""
    if pos + 2 > len(data):
        raise DerError("truncated")
    tag, first = data[pos], data[pos + 1]
    pos += 2
    if first < 0x80:
        length = first
    else:
        count = first & 0x7F
        if count == 0 or count > 4 or pos + count > len(data):
            raise DerError("bad length")
        length = int.from_bytes(data[pos:pos + count], "big")
        pos += count
    if pos + length > len(data):
        raise DerError("truncated")
    return tag, pos, pos + length


def _children(data: bytes, start: int, end: int) -> list[tuple[int, int, int]]:
    out, pos = [], start
    while pos < end:
        tag, s, e = _tlv(data, pos)
        out.append((tag, s, e))
        pos = e
    return out


def _oid(raw: bytes) -> str:
    if not raw:
        raise DerError("empty OID")
    parts = [raw[0] // 40, raw[0] % 40] if raw[0] < 80 else [2, raw[0] - 80]
    value = 0
    for byte in raw[1:]:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            parts.append(value)
            value = 0
    return ".".join(str(p) for p in parts)


@dataclass(frozen=True)
class Request:
    subject: tuple[tuple[str, str], ...]
    """Every (OID, value) of the subject, in order."""
    multi_valued: bool
    """Some RDN holds more than one attribute."""
    attributes: int
    """How many attributes the request carries (an extension request is one)."""


def parse_csr(pem_or_der: bytes) -> Request:
    """The subject and attribute count of a PKCS#10 request (RFC 2986), PEM or DER."""
    data = pem_or_der
    if data.lstrip().startswith(b"-----BEGIN"):
        lines = data.decode("ascii", "replace").strip().splitlines()
        if len(lines) < 3 or lines[0] != "-----BEGIN CERTIFICATE REQUEST-----" or \
                lines[-1] != "-----END CERTIFICATE REQUEST-----":
            raise DerError("not one PEM certificate request")
        data = base64.b64decode("".join(lines[1:-1]), validate=True)
    tag, s, e = _tlv(data, 0)
    if tag != 0x30 or e != len(data):
        raise DerError("not a SEQUENCE")
    outer = _children(data, s, e)
    if len(outer) != 3 or outer[0][0] != 0x30:
        raise DerError("not a CertificationRequest")
    info = _children(data, outer[0][1], outer[0][2])
    if len(info) != 4 or info[0][0] != 0x02 or info[1][0] != 0x30 or info[2][0] != 0x30 or info[3][0] != 0xA0:
        raise DerError("not a CertificationRequestInfo")
    subject, multi = [], False
    for set_tag, ss, se in _children(data, info[1][1], info[1][2]):
        if set_tag != 0x31:
            raise DerError("bad RDN")
        atvs = _children(data, ss, se)
        multi = multi or len(atvs) != 1
        for atv_tag, a_s, a_e in atvs:
            parts = _children(data, a_s, a_e)
            if atv_tag != 0x30 or len(parts) != 2 or parts[0][0] != 0x06:
                raise DerError("bad attribute")
            value = data[parts[1][1]:parts[1][2]]
            subject.append((_oid(data[parts[0][1]:parts[0][2]]),
                            value.decode("utf-8") if parts[1][0] == 0x0C else value.decode("latin-1")))
    return Request(subject=tuple(subject), multi_valued=multi,
                   attributes=len(_children(data, info[3][1], info[3][2])))


# ------------------------------------------------------------------------------------------ decisions


@dataclass(frozen=True)
class Decision:
    action: str
    """approve, deny or skip (not ours to decide)."""
    reason: str


def _decided(csr: Mapping[str, Any]) -> bool:
    status = csr.get("status") or {}
    return bool(status.get("certificate")) or any(
        c.get("type") in ("Approved", "Denied", "Failed") for c in status.get("conditions") or [])


def decide(csr: Mapping[str, Any], tokens: Mapping[str, str]) -> Decision:
    """What to do with one CSR object; `tokens` maps each Pull member's bootstrap token id to the member."""
    spec = csr.get("spec") or {}
    if spec.get("signerName") != SIGNER or _decided(csr):
        return Decision("skip", "not a pending client certificate request")
    try:
        req = parse_csr(base64.b64decode(spec.get("request") or ""))
    except (DerError, ValueError) as err:
        return Decision("skip", f"unreadable request ({err})")
    cns = [v for oid, v in req.subject if oid == OID_CN]
    orgs = [v for oid, v in req.subject if oid == OID_O]
    cn = cns[0] if len(cns) == 1 else ""
    if not cn.startswith(AGENT_PREFIX) and AGENT_GROUP not in orgs:
        return Decision("skip", "not an agent's request")
    if req.multi_valued or len(req.subject) != 2 or orgs != [AGENT_GROUP] or not cn.startswith(AGENT_PREFIX):
        return Decision("deny", f"the subject must be exactly O={AGENT_GROUP}, CN={AGENT_PREFIX}<member>")
    if req.attributes:
        return Decision("deny", "an agent's request carries no attributes (no SANs, no extensions)")
    if set(spec.get("usages") or []) not in USAGES:
        return Decision("deny", "usages must be digital signature and client auth (and key encipherment)")
    member = cn[len(AGENT_PREFIX):]
    members = set(tokens.values())
    if member not in members:
        return Decision("deny", f"{member} is no Pull member of this hub")
    user, groups = str(spec.get("username") or ""), set(spec.get("groups") or [])
    if user.startswith(BOOTSTRAP_USER_PREFIX):
        token_id = user[len(BOOTSTRAP_USER_PREFIX):]
        owner = tokens.get(token_id)
        if BOOTSTRAP_GROUP not in groups:
            return Decision("deny", f"bootstrap token {token_id} is not in group {BOOTSTRAP_GROUP}")
        if owner != member:
            whose = f"member {owner}'s" if owner else "no Pull member's"
            return Decision("deny", f"bootstrap token {token_id} is {whose} token, not {member}'s")
        return Decision("approve", f"join of {member} with its own bootstrap token {token_id}")
    if user == cn and AGENT_GROUP in groups:
        return Decision("approve", f"renewal by agent {member} itself")
    return Decision("deny", f"requested by {user or 'nobody'}, neither {member}'s bootstrap token nor its agent")


# -------------------------------------------------------------------------------------------- loop


def _condition(kind: str, reason: str) -> dict[str, Any]:
    return {"type": kind, "status": "True", "reason": "KarmadaHubAgentApprover", "message": reason}


def reconcile(api: Client, tokens: Mapping[str, str]) -> list[tuple[str, Decision]]:
    """One pass over every CSR: the decisions it acted on, by CSR name."""
    acted: list[tuple[str, Decision]] = []
    for csr in api.get(CSR_PATH).get("items", []):
        decision = decide(csr, tokens)
        if decision.action == "skip":
            continue
        name = csr["metadata"]["name"]
        body = dict(csr)
        status = dict(body.get("status") or {})
        status["conditions"] = [*(status.get("conditions") or []),
                                _condition("Approved" if decision.action == "approve" else "Denied", decision.reason)]
        body["status"] = status
        try:
            api.request("PUT", f"{CSR_PATH}/{urllib.parse.quote(name, safe='')}/approval", body)
        except ApiError as err:
            if err.status in (404, 409):  # gone, or another replica decided first: the next pass sees it
                continue
            raise
        log.info("%s %s: %s", "approved" if decision.action == "approve" else "denied", name, decision.reason)
        acted.append((name, decision))
    return acted


def _created(meta: Mapping[str, Any]) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(str(meta.get("creationTimestamp", "")).replace("Z", "+00:00"))
    except ValueError:
        return None


def clean_tokens(api: Client, tokens: Mapping[str, str], max_age: dt.timedelta, now: dt.datetime) -> list[str]:
    """Delete every member's bootstrap-token Secret created more than `max_age` ago; the token ids deleted."""
    deleted = []
    for token_id in sorted(tokens):
        path = TOKEN_PATH.format(id=token_id)
        try:
            secret = api.get(path)
        except ApiError as err:
            if err.status == 404:
                continue
            raise
        created = _created(secret.get("metadata") or {})
        if created is not None and now - created <= max_age:
            continue
        try:
            api.request("DELETE", path)
        except ApiError as err:
            if err.status != 404:
                raise
        log.info("deleted bootstrap token %s of %s (created %s)", token_id, tokens[token_id], created)
        deleted.append(token_id)
    return deleted


def token_map(pairs: Iterable[str]) -> dict[str, str]:
    """`<member>:<token id>` pairs -> {token id: member}."""
    out: dict[str, str] = {}
    for pair in pairs:
        member, sep, token_id = pair.rpartition(":")
        if not sep or not member or len(token_id) != 6 or token_id in out:
            raise ValueError(f"--member {pair!r}: want <member>:<6-character token id>, each token once")
        out[token_id] = member
    return out


def respond(health: Health, path: str) -> Response:
    healthy = path == "/healthz" and health.ok()
    return (200, b"ok\n", None) if healthy else (503, b"stale\n", None)


def run(api: Client, tokens: Mapping[str, str], max_age: dt.timedelta, period: float, health: Health,
        stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            reconcile(api, tokens)
            clean_tokens(api, tokens, max_age, dt.datetime.now(dt.UTC))
            health.mark()
        except (ApiError, OSError, ValueError) as err:
            log.warning("pass failed: %s", err)
        stop.wait(period)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--server", required=True, help="karmada-apiserver URL")
    p.add_argument("--ca-file", required=True)
    p.add_argument("--cert-file", required=True)
    p.add_argument("--key-file", required=True)
    p.add_argument("--member", action="append", default=[], help="<member>:<token id>, once per Pull member")
    p.add_argument("--max-token-seconds", type=int, default=3600,
                   help="delete a member's bootstrap token this long after its creation")
    p.add_argument("--period", type=float, default=5.0, help="seconds between passes")
    p.add_argument("--health-port", type=int, default=8080)
    p.add_argument("--once", action="store_true", help="one pass, then exit (0 when it succeeded)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    tokens = token_map(args.member)
    api = Client(args.server, args.ca_file, cert_file=args.cert_file, key_file=args.key_file)
    max_age = dt.timedelta(seconds=args.max_token_seconds)
    if args.once:
        for name, decision in reconcile(api, tokens):
            print(f"{decision.action} {name}: {decision.reason}")
        for token_id in clean_tokens(api, tokens, max_age, dt.datetime.now(dt.UTC)):
            print(f"deleted bootstrap-token-{token_id}")
        return 0
    health = Health(max_age=3 * args.period + 30)
    serve(lambda path: respond(health, path), args.health_port)
    log.info("approving agent CSRs of %d Pull member(s) at %s every %ss", len(tokens), args.server, args.period)
    run(api, tokens, max_age, args.period, health, threading.Event())
    return 0


if __name__ == "__main__":
    sys.exit(main())

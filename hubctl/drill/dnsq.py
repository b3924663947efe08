"""DNS as the drill sees it: the zone's authoritative servers (recursion off) and a recursive resolver.

The authoritative answer is what external-dns and Hetzner have really published (a DNSEndpoint's
`observedGeneration` only says external-dns *read* it); the recursive answer is what a client gets, caches
included.
"""

from __future__ import annotations

import dns.exception
import dns.flags
import dns.message
import dns.query
import dns.rdatatype
import dns.resolver

from hubctl.drill.kube import DrillError

Server = tuple[str, int]


def parse_server(text: str) -> Server:
    host, _, port = text.rpartition(":") if text.count(":") == 1 else (text, "", "53")
    return (host or text, int(port or 53))


def authoritative_servers(zone: str, override: str | None = None) -> list[Server]:
    """The zone's NS addresses (looked up through the system resolver), or the one given."""
    if override:
        return [parse_server(override)]
    try:
        names = [r.target.to_text() for r in dns.resolver.resolve(zone, "NS")]
        out = []
        for name in sorted(names):
            out += [(a.to_text(), 53) for a in dns.resolver.resolve(name, "A")]
    except dns.exception.DNSException as err:
        raise DrillError(f"cannot find the authoritative servers of {zone}: {err} (pass --nameserver)") from None
    return out


def query(server: Server, name: str, recursive: bool, timeout: float = 2.0) -> tuple[str, ...] | None:
    """Sorted A records of `name`; () for NXDOMAIN/no data; None when the server did not answer."""
    q = dns.message.make_query(name, dns.rdatatype.A)
    if not recursive:
        q.flags &= ~dns.flags.RD
    try:
        r = dns.query.udp(q, server[0], port=server[1], timeout=timeout)
    except (dns.exception.DNSException, OSError):
        return None
    if not recursive and not r.flags & dns.flags.AA:
        return None
    return tuple(sorted(rr.to_text() for rrset in r.answer if rrset.rdtype == dns.rdatatype.A for rr in rrset))


def system_resolver() -> Server:
    try:
        return (dns.resolver.Resolver().nameservers[0], 53)
    except (dns.exception.DNSException, IndexError, OSError):
        raise DrillError("no system resolver configured (pass --resolver)") from None

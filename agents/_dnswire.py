"""DNS on the wire for the failover controller: RFC 2136 UPDATE signed with TSIG (RFC 8945, HMAC-SHA256), SOA
queries and AXFR, over TCP (RFC 7766), in the standard library only.

Not a program of its own: agents/traffic_failover.py imports it (`import _dnswire`) and the agent's ConfigMap
ships it beside the script (components/kube/agent_script.py). Why not dnspython: the agents run from a ConfigMap
in a pinned, unmodified Python image (no pip at start, no image of our own to build and pin), and what is needed
is small: names without compression on the way out, a parser that follows compression pointers on the way in,
four record types (A, NS, SOA, TXT; anything else is kept as raw RDATA), and one MAC. tests/test_dnswire.py checks
every message against dnspython's parser and TSIG verifier, and tests/integration/test_dns_lab.py against Knot.

Everything goes over TCP: an UPDATE never meets UDP truncation or retransmission, and AXFR is TCP-only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import secrets
import socket
import struct
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

TYPES = {"A": 1, "NS": 2, "SOA": 6, "TXT": 16, "AAAA": 28, "AXFR": 252, "ANY": 255, "TSIG": 250}
TYPE_NAMES = {v: k for k, v in TYPES.items()}
CLASS_IN, CLASS_NONE, CLASS_ANY = 1, 254, 255
OPCODE_QUERY, OPCODE_UPDATE = 0, 5
RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED", 6: "YXDOMAIN",
          7: "YXRRSET", 8: "NXRRSET", 9: "NOTAUTH", 10: "NOTZONE", 16: "BADSIG", 17: "BADKEY", 18: "BADTIME"}
HMAC_SHA256 = "hmac-sha256"
FUDGE = 300
"""Seconds of clock difference a TSIG signature tolerates (RFC 8945 §5.2.3 recommends 300)."""


class DnsError(Exception):
    """A DNS exchange failed: the server answered an error rcode (`rcode` set) or the transport/MAC did."""

    def __init__(self, message: str, rcode: int | None = None) -> None:
        super().__init__(message)
        self.rcode = rcode


# ---------------------------------------------------------------------------------------------- names


def fqdn(name: str) -> str:
    return name.rstrip(".").lower() + "."


def encode_name(name: str) -> bytes:
    """A domain name in wire format, lowercased (canonical: RFC 4034 §6.2, which TSIG also requires)."""
    out = b""
    for label in fqdn(name).split(".")[:-1]:
        raw = label.encode("ascii")
        if not 0 < len(raw) < 64:
            raise ValueError(f"bad label {label!r} in {name!r}")
        out += bytes([len(raw)]) + raw
    if len(out) + 1 > 255:
        raise ValueError(f"name too long: {name!r}")
    return out + b"\x00"


def decode_name(msg: bytes, offset: int) -> tuple[str, int]:
    """The name at `offset` (following compression pointers) and the offset after it in the message."""
    labels: list[str] = []
    end = None
    jumps = 0
    while True:
        if offset >= len(msg):
            raise DnsError("truncated name")
        length = msg[offset]
        if length & 0xC0 == 0xC0:
            if end is None:
                end = offset + 2
            offset = ((length & 0x3F) << 8) | msg[offset + 1]
            jumps += 1
            if jumps > 64:
                raise DnsError("compression loop")
            continue
        if length == 0:
            offset += 1
            break
        labels.append(msg[offset + 1:offset + 1 + length].decode("ascii", "replace").lower())
        offset += 1 + length
    return ".".join(labels) + ".", end if end is not None else offset


# -------------------------------------------------------------------------------------------- records


@dataclass(frozen=True, order=True)
class Soa:
    mname: str
    rname: str
    serial: int
    refresh: int
    retry: int
    expire: int
    minimum: int

    def rdata(self) -> bytes:
        return encode_name(self.mname) + encode_name(self.rname) + struct.pack(
            "!IIIII", self.serial & 0xFFFFFFFF, self.refresh, self.retry, self.expire, self.minimum)

    def text(self) -> str:
        return (f"{fqdn(self.mname)} {fqdn(self.rname)} {self.serial} {self.refresh} {self.retry} {self.expire} "
                f"{self.minimum}")


def rdata(rtype: str, value: str) -> bytes:
    """RDATA of one record from its presentation value (A: an address, NS: a name, TXT: one string)."""
    if rtype == "A":
        return ipaddress.IPv4Address(value).packed
    if rtype == "AAAA":
        return ipaddress.IPv6Address(value).packed
    if rtype == "NS":
        return encode_name(value)
    if rtype == "TXT":
        raw = value.encode()
        return b"".join(bytes([len(raw[i:i + 255])]) + raw[i:i + 255] for i in range(0, max(1, len(raw)), 255))
    raise ValueError(f"cannot encode {rtype} records")


def present(rtype: int, msg: bytes, start: int, length: int) -> str:
    """The presentation value of one record's RDATA (names decompressed); unknown types as RFC 3597 hex."""
    data = msg[start:start + length]
    if rtype == TYPES["A"] and length == 4:
        return str(ipaddress.IPv4Address(data))
    if rtype == TYPES["AAAA"] and length == 16:
        return str(ipaddress.IPv6Address(data))
    if rtype == TYPES["NS"]:
        return decode_name(msg, start)[0]
    if rtype == TYPES["SOA"]:
        return parse_soa(msg, start).text()
    if rtype == TYPES["TXT"]:
        parts, i = [], 0
        while i < length:
            parts.append(data[i + 1:i + 1 + data[i]].decode(errors="replace"))
            i += 1 + data[i]
        return "".join(parts)
    return f"\\# {length} {data.hex()}"


def parse_soa(msg: bytes, offset: int) -> Soa:
    mname, offset = decode_name(msg, offset)
    rname, offset = decode_name(msg, offset)
    serial, refresh, retry, expire, minimum = struct.unpack("!IIIII", msg[offset:offset + 20])
    return Soa(mname, rname, serial, refresh, retry, expire, minimum)


def rr(name: str, rtype: int, rclass: int, ttl: int, data: bytes) -> bytes:
    return encode_name(name) + struct.pack("!HHIH", rtype, rclass, ttl, len(data)) + data


@dataclass(frozen=True)
class Record:
    name: str
    rtype: int
    rclass: int
    ttl: int
    value: str
    """Presentation value (see `present`)."""
    rdata_offset: int = 0
    rdata_length: int = 0


@dataclass
class Message:
    raw: bytes
    id: int
    flags: int
    question: list[tuple[str, int, int]] = field(default_factory=list)
    answer: list[Record] = field(default_factory=list)
    authority: list[Record] = field(default_factory=list)
    additional: list[Record] = field(default_factory=list)
    tsig_offset: int | None = None
    """Where the TSIG record starts (it must be the last record)."""

    @property
    def rcode(self) -> int:
        return self.flags & 0xF

    @property
    def opcode(self) -> int:
        return (self.flags >> 11) & 0xF


def parse(raw: bytes) -> Message:
    if len(raw) < 12:
        raise DnsError("short DNS message")
    ident, flags, qd, an, ns, ar = struct.unpack("!HHHHHH", raw[:12])
    msg = Message(raw, ident, flags)
    offset = 12
    for _ in range(qd):
        name, offset = decode_name(raw, offset)
        qtype, qclass = struct.unpack("!HH", raw[offset:offset + 4])
        msg.question.append((name, qtype, qclass))
        offset += 4
    for section, count in ((msg.answer, an), (msg.authority, ns), (msg.additional, ar)):
        for _ in range(count):
            start = offset
            name, offset = decode_name(raw, offset)
            if offset + 10 > len(raw):
                raise DnsError("truncated record")
            rtype, rclass, ttl, length = struct.unpack("!HHIH", raw[offset:offset + 10])
            offset += 10
            if offset + length > len(raw):
                raise DnsError("truncated RDATA")
            if rtype == TYPES["TSIG"]:
                msg.tsig_offset = start
                value = ""
            else:
                value = present(rtype, raw, offset, length)
            section.append(Record(name, rtype, rclass, ttl, value, offset, length))
            offset += length
    return msg


# ----------------------------------------------------------------------------------------------- TSIG


@dataclass(frozen=True)
class TsigKey:
    name: str
    secret: bytes
    algorithm: str = HMAC_SHA256

    @classmethod
    def from_files(cls, name_file: str, secret_file: str) -> TsigKey:
        """The key's name and its base64 secret, each from a file (a mounted Secret's keys)."""
        with open(name_file) as f:
            name = f.read().strip()
        with open(secret_file) as f:
            secret = base64.b64decode(f.read().strip(), validate=True)
        return cls(name, secret)

    def mac(self, data: bytes) -> bytes:
        if self.algorithm != HMAC_SHA256:
            raise ValueError(f"unsupported TSIG algorithm {self.algorithm}")
        return hmac.new(self.secret, data, hashlib.sha256).digest()


def _tsig_variables(key: TsigKey, signed: int, error: int = 0, other: bytes = b"", timers_only: bool = False
                    ) -> bytes:
    timers = struct.pack("!HIH", (signed >> 32) & 0xFFFF, signed & 0xFFFFFFFF, FUDGE)
    if timers_only:
        return timers
    return (encode_name(key.name) + struct.pack("!HI", CLASS_ANY, 0) + encode_name(key.algorithm) + timers
            + struct.pack("!HH", error, len(other)) + other)


def sign(message: bytes, key: TsigKey, signed: int | None = None) -> tuple[bytes, bytes]:
    """`message` with a TSIG record appended (ARCOUNT + 1), and its MAC (to verify the answer with)."""
    signed = int(time.time()) if signed is None else signed
    mac = key.mac(message + _tsig_variables(key, signed))
    ident = struct.unpack("!H", message[:2])[0]
    data = (encode_name(key.algorithm) + struct.pack("!HIH", (signed >> 32) & 0xFFFF, signed & 0xFFFFFFFF, FUDGE)
            + struct.pack("!H", len(mac)) + mac + struct.pack("!HHH", ident, 0, 0))
    arcount = struct.unpack("!H", message[10:12])[0] + 1
    return message[:10] + struct.pack("!H", arcount) + message[12:] + rr(key.name, TYPES["TSIG"], CLASS_ANY, 0,
                                                                         data), mac


@dataclass(frozen=True)
class _Tsig:
    key_name: str
    algorithm: str
    signed: int
    fudge: int
    mac: bytes
    original_id: int
    error: int
    other: bytes


def _read_tsig(msg: Message) -> _Tsig:
    raw = msg.raw
    assert msg.tsig_offset is not None
    key_name, offset = decode_name(raw, msg.tsig_offset)
    offset += 10
    algorithm, offset = decode_name(raw, offset)
    hi, lo, fudge, mac_len = struct.unpack("!HIHH", raw[offset:offset + 10])
    offset += 10
    mac = raw[offset:offset + mac_len]
    offset += mac_len
    original_id, error, other_len = struct.unpack("!HHH", raw[offset:offset + 6])
    other = raw[offset + 6:offset + 6 + other_len]
    return _Tsig(key_name, algorithm, (hi << 32) | lo, fudge, mac, original_id, error, other)


def _unsigned(msg: Message, original_id: int) -> bytes:
    """The message as it was before its TSIG was added: without the record, ARCOUNT - 1, the original ID."""
    assert msg.tsig_offset is not None
    raw = msg.raw
    arcount = struct.unpack("!H", raw[10:12])[0] - 1
    return struct.pack("!H", original_id) + raw[2:10] + struct.pack("!H", arcount) + raw[12:msg.tsig_offset]


def verify(msg: Message, key: TsigKey, request_mac: bytes, *, first: bool = True, pending: bytes = b"",
           now: float | None = None) -> bytes:
    """Check the TSIG of an answer to a request signed with `request_mac` (RFC 8945 §5.3; for the second and
    later messages of a zone transfer `first` is False, `request_mac` is the previous message's MAC and `pending`
    the unsigned messages since). Returns this message's MAC."""
    if msg.tsig_offset is None:
        raise DnsError("the answer is not signed")
    tsig = _read_tsig(msg)
    if fqdn(tsig.key_name) != fqdn(key.name) or fqdn(tsig.algorithm) != fqdn(key.algorithm):
        raise DnsError(f"the answer is signed with another key ({tsig.key_name})")
    if tsig.error:
        raise DnsError(f"TSIG error {RCODES.get(tsig.error, tsig.error)}", tsig.error)
    data = struct.pack("!H", len(request_mac)) + request_mac + pending + _unsigned(msg, tsig.original_id)
    data += _tsig_variables(key, tsig.signed, tsig.error, tsig.other, timers_only=not first)
    if not hmac.compare_digest(key.mac(data), tsig.mac):
        raise DnsError("the answer's TSIG MAC does not verify (BADSIG)", 16)
    if abs((time.time() if now is None else now) - tsig.signed) > tsig.fudge:
        raise DnsError("the answer's TSIG time is outside its fudge (BADTIME)", 18)
    return tsig.mac


# ------------------------------------------------------------------------------------------ messages


def header(ident: int, opcode: int, counts: Sequence[int], rd: bool = False) -> bytes:
    flags = (opcode << 11) | (0x0100 if rd else 0)
    return struct.pack("!HHHHHH", ident, flags, *counts)


def query(name: str, rtype: str, ident: int | None = None) -> bytes:
    ident = secrets.randbits(16) if ident is None else ident
    return header(ident, OPCODE_QUERY, (1, 0, 0, 0)) + encode_name(name) + struct.pack("!HH", TYPES[rtype], CLASS_IN)


@dataclass(frozen=True)
class RRset:
    """Every record of one (name, type) in the zone: what an UPDATE replaces as a whole."""

    name: str
    rtype: str
    ttl: int
    values: tuple[str, ...]

    def key(self) -> tuple[str, str]:
        return fqdn(self.name), self.rtype


def update(zone: str, *, require_soa: Soa | None = None, delete: Iterable[tuple[str, str]] = (),
           add: Iterable[RRset] = (), soa: Soa | None = None, soa_ttl: int = 0, ident: int | None = None) -> bytes:
    """An RFC 2136 UPDATE of `zone`: an optional prerequisite that the zone's SOA is exactly `require_soa`
    (§2.4.2, value-dependent: a server that missed an earlier update refuses with NXRRSET), then the deletions
    of whole RRsets (§2.5.2), the additions, and last the new SOA (§3.4.2.2: a higher serial replaces it)."""
    ident = secrets.randbits(16) if ident is None else ident
    prereq = [rr(zone, TYPES["SOA"], CLASS_IN, 0, require_soa.rdata())] if require_soa is not None else []
    updates = [rr(name, TYPES[rtype], CLASS_ANY, 0, b"") for name, rtype in delete]
    for rrset in add:
        updates += [rr(rrset.name, TYPES[rrset.rtype], CLASS_IN, rrset.ttl, rdata(rrset.rtype, v))
                    for v in rrset.values]
    if soa is not None:
        updates.append(rr(zone, TYPES["SOA"], CLASS_IN, soa_ttl, soa.rdata()))
    zone_section = encode_name(zone) + struct.pack("!HH", TYPES["SOA"], CLASS_IN)
    return (header(ident, OPCODE_UPDATE, (1, len(prereq), len(updates), 0)) + zone_section + b"".join(prereq)
            + b"".join(updates))


# ----------------------------------------------------------------------------------------- transport


def _read_exact(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise DnsError("connection closed mid-message")
        out += chunk
    return out


def _send(sock: socket.socket, wire: bytes) -> None:
    sock.sendall(struct.pack("!H", len(wire)) + wire)


def _receive(sock: socket.socket) -> Message:
    length = struct.unpack("!H", _read_exact(sock, 2))[0]
    return parse(_read_exact(sock, length))


def split_address(address: str, default_port: int = 53) -> tuple[str, int]:
    """`192.0.2.1`, `192.0.2.1:5353`, `[2001:db8::1]:53` -> (host, port)."""
    if address.startswith("["):
        host, _, rest = address[1:].partition("]")
        return host, int(rest.lstrip(":") or default_port)
    if address.count(":") == 1:
        host, port = address.split(":")
        return host, int(port)
    return address, default_port


def exchange(server: str, wire: bytes, timeout: float, key: TsigKey | None = None) -> Message:
    """Send one message over TCP and return the answer (its ID checked, its TSIG verified when `key`)."""
    host, port = split_address(server)
    ident = struct.unpack("!H", wire[:2])[0]
    request_mac = b""
    if key is not None:
        wire, request_mac = sign(wire, key)
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        _send(sock, wire)
        answer = _receive(sock)
    if answer.id != ident:
        raise DnsError("answer ID does not match the request")
    if key is not None:
        if answer.tsig_offset is None and answer.rcode in (5, 9):
            raise DnsError(f"{RCODES.get(answer.rcode)} (unsigned: the server did not accept the key)", answer.rcode)
        verify(answer, key, request_mac)
    return answer


def send_update(server: str, wire: bytes, key: TsigKey, timeout: float) -> None:
    answer = exchange(server, wire, timeout, key)
    if answer.rcode != 0:
        raise DnsError(f"UPDATE refused: {RCODES.get(answer.rcode, answer.rcode)}", answer.rcode)


def soa_of(server: str, zone: str, timeout: float) -> Soa:
    """The zone's SOA as the server answers it (authoritatively); DnsError if it does not."""
    answer = exchange(server, query(zone, "SOA"), timeout)
    if answer.rcode != 0:
        raise DnsError(f"SOA query: {RCODES.get(answer.rcode, answer.rcode)}", answer.rcode)
    if not answer.flags & 0x0400:
        raise DnsError("SOA answer is not authoritative")
    for record in answer.answer:
        if record.rtype == TYPES["SOA"] and fqdn(record.name) == fqdn(zone):
            return parse_soa(answer.raw, record.rdata_offset)
    raise DnsError("no SOA in the answer")


def axfr(server: str, zone: str, key: TsigKey, timeout: float) -> tuple[Soa, dict[tuple[str, str], RRset]]:
    """The whole zone by AXFR (RFC 5936), every message's TSIG verified; (SOA, (name, type) -> RRset)."""
    host, port = split_address(server)
    wire, request_mac = sign(query(zone, "AXFR"), key)
    records: list[Record] = []
    soa: Soa | None = None
    soas = 0
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        _send(sock, wire)
        prior, pending, first = request_mac, b"", True
        while soas < 2:
            msg = _receive(sock)
            if msg.rcode != 0:
                raise DnsError(f"AXFR: {RCODES.get(msg.rcode, msg.rcode)}", msg.rcode)
            if msg.tsig_offset is not None:
                prior = verify(msg, key, prior, first=first, pending=pending)
                pending, first = b"", False
            else:
                if first:
                    raise DnsError("the first AXFR message is not signed")
                pending += msg.raw
            for record in msg.answer:
                if record.rtype == TYPES["SOA"]:
                    soas += 1
                    if soa is None:
                        soa = parse_soa(msg.raw, record.rdata_offset)
                    continue
                records.append(record)
        if pending:
            raise DnsError("the last AXFR message is not signed")
    assert soa is not None
    rrsets: dict[tuple[str, str], RRset] = {}
    for record in records:
        rtype = TYPE_NAMES.get(record.rtype, str(record.rtype))
        k = (fqdn(record.name), rtype)
        old = rrsets.get(k)
        values = (*(old.values if old else ()), record.value)
        rrsets[k] = RRset(k[0], rtype, record.ttl, tuple(sorted(set(values))))
    return soa, rrsets


# ----------------------------------------------------------------------------------------- zone files


def zone_text(zone: str, soa: Soa, soa_ttl: int, rrsets: Iterable[RRset]) -> str:
    """A master file (RFC 1035 §5) of the zone, every owner fully qualified: what the seed hands knotd and what
    the controller's snapshot holds. Only the types this program writes (A, AAAA, NS, TXT)."""
    lines = [f"; zone {fqdn(zone)} serial {soa.serial}, written by karmada-hub",
             f"{fqdn(zone)} {soa_ttl} IN SOA {soa.text()}"]
    for rrset in sorted(rrsets, key=lambda r: (r.key() != (fqdn(zone), "NS"), r.key())):
        for value in rrset.values:
            shown = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' if rrset.rtype == "TXT" else value
            lines.append(f"{fqdn(rrset.name)} {rrset.ttl} IN {rrset.rtype} {shown}")
    return "\n".join(lines) + "\n"


def zone_serial(text: str) -> int | None:
    """The SOA serial of a master file this program or knotd wrote (knotd's dump leaves the class out), or None."""
    for line in text.splitlines():
        tokens = line.split(";", 1)[0].split()
        if "SOA" in tokens:
            at = tokens.index("SOA")
            try:
                return int(tokens[at + 3])
            except (IndexError, ValueError):
                return None
    return None


def serial_newer(a: int, b: int) -> bool:
    """RFC 1982 serial arithmetic: is `a` after `b`?"""
    return a != b and ((a - b) & 0xFFFFFFFF) < 0x80000000

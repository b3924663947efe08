"""agents/_dnswire.py, the failover controller's stdlib DNS: every message it builds read back by dnspython (an
independent implementation), TSIG both ways, and the parser on compressed answers. Against a real Knot in
tests/integration/test_dns_lab.py."""

from __future__ import annotations

import base64
import struct
import time

import dns.message
import dns.name
import dns.opcode
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import dns.tsig
import dns.tsigkeyring
import dns.update
import pytest

from agents import _dnswire as w

ZONE = "dev.example.com"
SECRET = base64.b64encode(bytes(range(32))).decode()
KEY = w.TsigKey("failover.", base64.b64decode(SECRET))
KEYRING = dns.tsigkeyring.from_text({"failover.": ("hmac-sha256", SECRET)})
SOA = w.Soa("ns0-dev.example.com", "hostmaster.example.com", 1700000000, 300, 60, 1209600, 15)


def test_an_update_reads_back_in_dnspython_with_its_tsig_verified() -> None:
    wire = w.update(ZONE, require_soa=SOA, delete=[("shop.dev.example.com", "A")],
                    add=[w.RRset("shop.dev.example.com", "A", 15, ("192.0.2.10", "192.0.2.20"))],
                    soa=w.Soa(**{**SOA.__dict__, "serial": SOA.serial + 1}), ident=4242)
    signed, mac = w.sign(wire, KEY)
    msg = dns.message.from_wire(signed, keyring=KEYRING)  # raises on a bad MAC
    assert isinstance(msg, dns.update.UpdateMessage) and msg.opcode() == dns.opcode.UPDATE and msg.id == 4242
    assert msg.had_tsig and msg.mac == mac
    (zone,) = msg.zone
    assert zone.name == dns.name.from_text(ZONE) and zone.rdtype == dns.rdatatype.SOA
    (prereq,) = msg.prerequisite
    assert prereq.rdclass == dns.rdataclass.IN and prereq.ttl == 0 and prereq[0].serial == SOA.serial
    delete, *adds, soa = msg.update  # dnspython keeps each added record as its own RRset in this section
    assert delete.deleting == dns.rdataclass.ANY and delete.rdtype == dns.rdatatype.A and len(delete) == 0
    assert sorted(r.to_text() for a in adds for r in a) == ["192.0.2.10", "192.0.2.20"]
    assert {a.ttl for a in adds} == {15} and {a.rdclass for a in adds} == {dns.rdataclass.IN}
    assert soa.rdtype == dns.rdatatype.SOA and soa[0].serial == SOA.serial + 1 and soa[0].minimum == 15
    at = signed.index(bytes([192, 0, 2, 10]))
    tampered = signed[:at] + bytes([192, 0, 2, 11]) + signed[at + 4:]  # another address, same MAC
    with pytest.raises(dns.tsig.BadSignature):
        dns.message.from_wire(tampered, keyring=KEYRING)


def test_answers_signed_by_dnspython_verify_and_tampered_ones_do_not() -> None:
    request = dns.update.UpdateMessage(ZONE, keyring=KEYRING, keyname="failover.", keyalgorithm="hmac-sha256")
    request.add("shop", 15, "A", "192.0.2.10")
    request_wire = request.to_wire()
    response = dns.message.make_response(dns.message.from_wire(request_wire, keyring=KEYRING))
    good = w.parse(response.to_wire())
    assert good.rcode == 0 and good.opcode == 5
    assert w.verify(good, KEY, request.mac)
    other = w.TsigKey("failover.", b"x" * 32)
    with pytest.raises(w.DnsError, match="BADSIG"):
        w.verify(good, other, request.mac)
    with pytest.raises(w.DnsError, match="BADTIME"):
        w.verify(good, KEY, request.mac, now=time.time() + 3600)
    with pytest.raises(w.DnsError, match="not signed"):
        w.verify(w.parse(dns.message.make_query(ZONE, "SOA").to_wire()), KEY, request.mac)


def test_the_parser_follows_compression_and_reads_soa_ns_a_txt() -> None:
    q = dns.message.make_query(ZONE, "SOA")
    r = dns.message.make_response(q)
    r.answer.append(dns.rrset.from_text(f"{ZONE}.", 15, "IN", "SOA", SOA.text()))
    r.authority.append(dns.rrset.from_text(f"{ZONE}.", 3600, "IN", "NS", "ns0-dev.example.com.",
                                           "ns1-dev.example.com."))
    r.additional.append(dns.rrset.from_text(f"x.{ZONE}.", 15, "IN", "A", "192.0.2.1"))
    r.additional.append(dns.rrset.from_text(f"t.{ZONE}.", 15, "IN", "TXT", '"hello"'))
    raw = r.to_wire()  # dnspython compresses every repeated suffix
    msg = w.parse(raw)
    assert msg.id == q.id and msg.question == [(f"{ZONE}.", 6, 1)]
    soa = w.parse_soa(raw, msg.answer[0].rdata_offset)
    assert soa.text() == SOA.text() and (soa.mname, soa.serial) == ("ns0-dev.example.com.", SOA.serial)
    assert sorted(r.value for r in msg.authority) == ["ns0-dev.example.com.", "ns1-dev.example.com."]
    assert [(r.name, r.value) for r in msg.additional] == [(f"x.{ZONE}.", "192.0.2.1"), (f"t.{ZONE}.", "hello")]


def test_names_are_canonical_and_bounded() -> None:
    assert w.encode_name("Shop.Dev.Example.COM") == w.encode_name("shop.dev.example.com.")
    with pytest.raises(ValueError):
        w.encode_name("a" * 64 + ".example.com")
    with pytest.raises(w.DnsError, match="loop"):
        w.decode_name(b"\x00" * 12 + b"\xc0\x0c", 12)
    assert w.split_address("[2001:db8::1]:5353") == ("2001:db8::1", 5353)
    assert w.split_address("192.0.2.1") == ("192.0.2.1", 53)
    assert struct.unpack("!H", w.query(ZONE, "SOA", 7)[:2]) == (7,)

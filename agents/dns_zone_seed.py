"""Seed a hub nameserver before knotd starts: its configuration for this server, and the newest copy of the zone.

The init container of the `knot` DaemonSet (components/traffic/nameserver_docs.py). A nameserver must never answer
for the zone before it holds it: a fresh or rebuilt server would otherwise answer NXDOMAIN for every published
name, and resolvers cache that for the zone's negative TTL. So before knotd may start, this program

1. writes knot.conf for this server: the rendered template with `@LISTEN@` replaced by the server's own
   addresses (`--nodes`: node name -> [public, private]; a node it does not know is an error, and the pod does
   not start);
2. looks at every copy of the zone it can get: the server's own zone file (a restart), the failover controller's
   snapshot ConfigMap (mounted, optional), and a TSIG-signed AXFR from each other hub server (their private
   addresses); the copy with the newest SOA serial wins (RFC 1982). Only when there is none at all (a new fleet)
   does it write the base zone (SOA and NS from `--zone-config`, serial 1): the zone is then empty, which is the
   truth. When the winner is not the server's own file, knotd's journal is dropped (its history is of another
   copy) and the file replaced atomically;
3. hands the state directory to knotd's user (`--uid`/`--gid`).

Exit 0: knotd may start (it loads the zone before it answers anything); anything else: it may not.
Standard library only (agents/ rule), with `_dnswire` beside it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
from pathlib import Path

from _dnswire import DnsError, RRset, Soa, TsigKey, axfr, fqdn, serial_newer, zone_serial, zone_text

log = logging.getLogger("dns-zone-seed")


def listen_addresses(entries: list[str]) -> list[str]:
    """`ip` -> `ip@53`; `ip@port` as it is (the tests run several servers on one address)."""
    return [e if "@" in e else f"{e}@53" for e in entries]


def base_zone(config: dict) -> tuple[int, str]:
    soa = config["soa"]
    zone = config["zone"]
    rrsets = [RRset(zone, "NS", int(config["nsTtl"]), tuple(config["ns"]))]
    for s in config.get("static") or []:
        rrsets.append(RRset(s["name"], s["type"], int(s["ttl"]), tuple(s["values"])))
    serial = 1
    text = zone_text(zone, Soa(soa["mname"], soa["rname"], serial, soa["refresh"], soa["retry"], soa["expire"],
                               soa["minimum"]), int(soa["ttl"]), rrsets)
    return serial, text


def from_peer(peer: str, zone: str, key: TsigKey, soa_ttl: int, timeout: float) -> tuple[int, str] | None:
    host, _, port = peer.partition("@")
    try:
        soa, rrsets = axfr(f"{host}:{port or 53}", zone, key, timeout)
    except (DnsError, OSError) as err:
        log.info("no zone from %s: %s", peer, err)
        return None
    return soa.serial, zone_text(zone, soa, soa_ttl, rrsets.values())


def choose(candidates: dict[str, tuple[int, str]]) -> tuple[str, int, str] | None:
    best: tuple[str, int, str] | None = None
    for source, (serial, text) in sorted(candidates.items()):
        if best is None or serial_newer(serial, best[1]):
            best = (source, serial, text)
    return best


def chown_tree(root: Path, uid: int, gid: int) -> None:
    for directory, dirs, files in os.walk(root):
        os.chown(directory, uid, gid)
        for name in (*dirs, *files):
            os.lchown(os.path.join(directory, name), uid, gid)


def seed(args: argparse.Namespace) -> int:
    nodes = json.loads(Path(args.nodes).read_text())
    config = json.loads(Path(args.zone_config).read_text())
    zone = fqdn(config["zone"])
    if args.node not in nodes:
        log.error("node %s is not in %s (known: %s): refusing to start a nameserver without its addresses", args.node,
                  args.nodes, ", ".join(sorted(nodes)))
        return 1
    own = [str(a) for a in nodes[args.node]]
    template = Path(args.template).read_text()
    if "@LISTEN@" not in template:
        log.error("%s has no @LISTEN@ placeholder", args.template)
        return 1
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(template.replace("@LISTEN@", ", ".join(listen_addresses(own))))

    storage = Path(args.storage)
    zone_file = storage / "zones" / f"{zone.rstrip('.')}.zone"
    candidates: dict[str, tuple[int, str]] = {}
    if zone_file.is_file():
        text = zone_file.read_text()
        serial = zone_serial(text)
        if serial is not None:
            candidates["0-local"] = (serial, text)
        else:
            log.warning("%s has no readable SOA; ignoring it", zone_file)
    snapshot = Path(args.snapshot)
    if snapshot.is_file():
        text = snapshot.read_text()
        serial = zone_serial(text)
        if serial is not None:
            candidates["1-snapshot"] = (serial, text)
    key = TsigKey.from_files(args.tsig_name_file, args.tsig_secret_file)
    soa_ttl = int(config["soa"]["ttl"])
    for name, entries in sorted(nodes.items()):
        if name == args.node or not entries:
            continue
        got = from_peer(str(entries[-1]), zone, key, soa_ttl, args.peer_timeout)
        if got is not None:
            candidates[f"2-peer {name}"] = got
    best = choose(candidates)
    if best is None:
        serial, text = base_zone(config)
        best = ("base", serial, text)
        log.info("no copy of %s anywhere (a new fleet): the base zone, serial %d", zone, serial)
    source, serial, text = best
    zone_file.parent.mkdir(parents=True, exist_ok=True)
    if source != "0-local":
        tmp = zone_file.with_suffix(".seed")
        tmp.write_text(text)
        os.replace(tmp, zone_file)
        journal = storage / "journal"
        if journal.exists():
            shutil.rmtree(journal)
        log.info("%s: serial %d from %s (had %s)", zone, serial, source.partition("-")[2] or source,
                 candidates.get("0-local", (None,))[0])
    else:
        log.info("%s: keeping this server's own copy, serial %d", zone, serial)
    chown_tree(storage, args.uid, args.gid)
    chown_tree(out.parent, args.uid, args.gid)
    return 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--template", required=True)
    p.add_argument("--zone-config", required=True)
    p.add_argument("--nodes", required=True)
    p.add_argument("--node", required=True)
    p.add_argument("--snapshot", required=True, help="the snapshot ConfigMap's file (may be absent)")
    p.add_argument("--storage", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--tsig-name-file", required=True)
    p.add_argument("--tsig-secret-file", required=True)
    p.add_argument("--uid", type=int, required=True)
    p.add_argument("--gid", type=int, required=True)
    p.add_argument("--peer-timeout", type=float, default=3.0)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    return seed(parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())

"""`python -m hubctl drill <stack> --yes`: kill one member of the live fleet for real and time every phase.

1. Deploy the probe service (service.py) to the victim and one survivor in another region, through
   karmada-apiserver; wait until both regions serve it through DNS (authoritative answer with both LB addresses,
   both LBs answering for the name).
2. Kill the victim (`--method`, default `poweroff`: see hcloud.py for why not a firewall), then watch, every
   `--poll` seconds: the victim's path failing for clients, its Cluster Ready condition and taints, the probe
   service's ResourceBinding, the survivor's replicas, the failover controller's DNSEndpoint, the authoritative
   answer, the recursive answer, and two clients (one that tries only the first address it got, one that falls
   back to the next like CPython's `socket.create_connection`).
3. Restore the member and time the way back. Ctrl-C, SIGTERM or any failure restores at once (finally).
4. Remove the probe service and write `timeline.json`, `timeline.md` (beside `hubctl budget`) and
   `timeline.svg` to `--out` (default `build/drill/<stack>/<UTC time>/`).

Needs: `--kubeconfigs DIR` with `karmada.kubeconfig`, `hub.kubeconfig`, `<member>.kubeconfig` for the survivor,
and `capi-management.kubeconfig` for a CAPI member with `poweroff`; `HCLOUD_TOKEN` for the member's project.
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.config import CapiCredentials, FleetConfig
from components.operations.budget import FailoverReport, failover_budget, fmt_seconds
from components.traffic import docs as traffic_docs
from components.traffic import failover_docs
from hubctl.drill import dnsq, hcloud, service
from hubctl.drill.command import Command
from hubctl.drill.kube import DrillError, Kube, KubeError
from hubctl.drill.timeline import Phase, Timeline

CLUSTER_PATH = "/apis/cluster.karmada.io/v1alpha1/clusters/{name}"
BINDING_PATH = "/apis/work.karmada.io/v1alpha2/namespaces/{namespace}/resourcebindings/{name}"
DEPLOYMENT_PATH = "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
DNSENDPOINT_PATH = "/apis/externaldns.k8s.io/v1alpha1/namespaces/{namespace}/dnsendpoints/{name}"
REGION_CONFIGMAPS = "/api/v1/namespaces/{namespace}/configmaps?labelSelector={label}"


@dataclass
class Fleet:
    config: FleetConfig
    victim: Any
    survivor: Any
    victim_ip: str
    survivor_ip: str


def fleet_view(repo: Path, stack: str, config: FleetConfig, member: str | None = None) -> tuple[FleetConfig, str]:
    """The fleet a drill of `stack` may kill and survive in, and how messages name it. An all-in-one stack is its
    own fleet. A hub's members live in its region stacks' files (regionStacks), and a region stack's survivors in
    its sibling regions': both resolve to the hub's fleet, every region's members, regions and tenants, with the
    hub's DNS (it runs external-dns) and hub servers (the probers), and the failover values of the victim's region
    stack (the budget the drill checks)."""
    from components.operations.region_intents import region_intents
    from hubctl.commands import load_config

    if config.role == "all-in-one":
        return config, f"stacks/Pulumi.{stack}.yaml"
    hub_stack, hub = stack, config
    if config.role == "region":
        assert config.hub_stack is not None
        hub_stack = config.hub_stack.plan_stack or config.hub_stack.stack.rsplit("/", 1)[-1]
        _, hub = load_config(repo, hub_stack, run_preflight=False)
    intents = region_intents(hub, hub_stack, repo / "stacks")
    members = [m for i in intents for m in i.members]
    victim_region = next((i for i in intents for m in i.members if m.name == member), None)
    own = victim_region.config if victim_region is not None else (config if config.role == "region" else
                                                                   intents[0].config if intents else hub)
    view = own.model_copy(update={
        "members": members, "regions": {i.region: i.config.regions[i.region] for i in intents},
        "tenants": [t for i in intents for t in i.tenants], "dns": hub.dns, "hub": hub.hub,
        "karmada": hub.karmada})
    where = (f"the fleet of stacks/Pulumi.{hub_stack}.yaml (its regionStacks: "
             f"{', '.join(i.stack for i in intents) or 'none'})")
    return view, where


def _pick(config: FleetConfig, member: str | None, survivor: str | None, stack_file: str) -> tuple[Any, Any]:
    if config.dns is None:
        raise DrillError(f"{stack_file}: karmada-hub:dns: the drill measures DNS failover; this stack has no dns "
                         "section")
    by_name = {m.name: m for m in config.members}
    if member is not None and member not in by_name:
        raise DrillError(f"--member {member}: not a member of {stack_file} ({', '.join(by_name)})")
    victim = by_name[member] if member else (config.members[0] if config.members else None)
    if victim is None:
        raise DrillError(f"{stack_file}: karmada-hub:members: the stack has no members to kill")
    others = [m for m in config.members if m.region != victim.region]
    if survivor is not None:
        if survivor not in by_name or by_name[survivor].region == victim.region:
            raise DrillError(f"--survivor {survivor}: must be a member of {stack_file} in another region than "
                             f"{victim.name} ({victim.region})")
        return victim, by_name[survivor]
    if not others:
        raise DrillError(f"{stack_file}: karmada-hub:members: the drill needs a member in a second region besides "
                         f"{victim.region} (DNS failover moves traffic between regions)")
    return victim, others[0]


def http_ok(ip: str, port: int, host: str, timeout: float) -> bool:
    conn = http.client.HTTPConnection(ip, port, timeout=timeout)
    try:
        conn.request("GET", "/", headers={"Host": host, "User-Agent": "karmada-hub-drill"})
        return 200 <= conn.getresponse().status < 400
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def phases(report: FailoverReport, method: str) -> list[Phase]:
    cap = report.capacity
    karmada = method != "lb-detach"

    def upto(*names: str) -> float:
        return sum(cap.term(n).seconds for n in names)

    traffic = report.traffic
    assert traffic is not None
    dnsep = traffic.record_seconds
    # the DNSEndpoint comes back this long before (mode hetzner) or after (self-hosted) the authoritative answer
    record_back = traffic.restore_seconds - traffic.authoritative + traffic.record_seconds
    return [
        Phase("client_fail", "clients fail on the dead region", "kill", "the kill itself"),
        Phase("ready", "Cluster Ready -> False/Unknown", "kill", "capacity: detection", upto("detection"),
              expected=karmada),
        Phase("noschedule", "NoSchedule taint", "kill", "detection + taint", upto("detection", "taint"),
              expected=karmada),
        Phase("noexecute", "NoExecute taint", "kill", "detection + taint", upto("detection", "taint"),
              expected=karmada),
        Phase("binding", "binding moved off the dead member", "kill", "detection + taint + toleration + eviction "
              "queue", upto("detection", "taint", "toleration", "eviction queue"), expected=karmada),
        Phase("survivors", "replicas ready on the survivor", "kill", "capacity RTO (Duplicated: already running)",
              cap.total, expected=karmada),
        Phase("dnsendpoint", "DNSEndpoint without the dead region", "kill", "traffic: detection, decision and the "
              "writes before the DNSEndpoint's", dnsep),
        Phase("authoritative", "authoritative answer without the dead region", "kill",
              "traffic: authoritative", traffic.authoritative),
        Phase("recursive", "recursive answer without the dead region (after TTL)", "kill",
              "traffic RTO (TTL included)", traffic.total),
        Phase("retrying_client", "first success of a client that retries another address", "kill",
              "(no term: the cached answer still holds the survivor)"),
        Phase("first_client", "first success of a client that tries only the first address", "kill",
              "traffic RTO (TTL included)", traffic.total),
        Phase("path_back", "the member answers for the name again", "restore", "(boot; not a term)"),
        Phase("ready_back", "Cluster Ready -> True", "restore", "(Karmada success threshold)", expected=karmada),
        Phase("taints_back", "taints removed", "restore", "", expected=karmada),
        Phase("binding_back", "binding back on the member", "restore", "", expected=karmada),
        Phase("dnsendpoint_back", "DNSEndpoint with the region again", "restore", "traffic restore, to the "
              "DNSEndpoint's write", record_back),
        Phase("authoritative_back", "authoritative answer with the region again", "restore", "traffic restore",
              traffic.restore_seconds),
    ]


class Drill:
    def __init__(self, args: argparse.Namespace, repo: Path, out: Callable[[str], None] | None = None) -> None:
        self.args = args
        self.repo = repo
        self.print = out or (lambda s: print(s, file=sys.stderr, flush=True))
        self.tty = sys.stderr.isatty()
        self.kubes: list[Kube] = []

    # ------------------------------------------------------------------ setup

    def kube(self, name: str) -> Kube:
        k = Kube(Path(self.args.kubeconfigs) / f"{name}.kubeconfig")
        self.kubes.append(k)
        return k

    def say(self, stage: str, text: str) -> None:
        t = time.monotonic() - self.t0 if getattr(self, "t0", None) else 0.0
        self.timeline.events.append((stage, round(t, 3), text))
        self.print(("\r\033[K" if self.tty else "") + f"[{stage} {t:7.1f}s] {text}")

    def region_ips(self, hub: Kube) -> dict[str, str]:
        items = hub.request("GET", REGION_CONFIGMAPS.format(namespace=failover_docs.NAMESPACE,
                                                            label=failover_docs.REGION_LABEL)).get("items", [])
        return {i["metadata"]["labels"][failover_docs.REGION_LABEL]: i["data"][failover_docs.REGION_IP_KEY]
                for i in items}

    # ------------------------------------------------------------------ observation

    def snapshot(self) -> dict[str, Any]:
        a, f = self.args, self.fleet
        s: dict[str, Any] = {}

        def safe(key: str, fn: Callable[[], Any]) -> None:
            try:
                s[key] = fn()
            except (KubeError, OSError, ValueError, KeyError, TypeError):
                s[key] = None

        def cluster() -> tuple[str, list[str]]:
            obj = self.karmada.get(CLUSTER_PATH.format(name=f.victim.name)) or {}
            conds = (obj.get("status") or {}).get("conditions") or []
            ready = next((c.get("status") for c in conds if c.get("type") == "Ready"), "Unknown")
            taints = sorted(f"{t['key']}:{t['effect']}" for t in (obj.get("spec") or {}).get("taints") or [])
            return ready, taints

        def binding() -> list[str] | None:
            rb = self.karmada.get(BINDING_PATH.format(namespace=service.NAMESPACE, name=service.binding_name()))
            return None if rb is None else sorted(c["name"] for c in (rb.get("spec") or {}).get("clusters") or [])

        def survivor_ready() -> bool:
            d = self.survivor_kube.get(DEPLOYMENT_PATH.format(namespace=service.NAMESPACE, name=service.NAME)) or {}
            want = (d.get("spec") or {}).get("replicas") or 1
            return int((d.get("status") or {}).get("readyReplicas") or 0) >= want

        def dnsendpoint() -> tuple[str, ...] | None:
            obj = self.hub.get(DNSENDPOINT_PATH.format(namespace=failover_docs.NAMESPACE, name=self.host))
            if obj is None:
                return None
            return tuple(sorted(t for e in obj["spec"]["endpoints"] for t in e.get("targets") or []))

        port, timeout = a.http_port, a.connect_timeout

        def authoritative() -> None:
            s["authoritative"] = next((r for r in (dnsq.query(ns, self.host, recursive=False)
                                                   for ns in self.nameservers) if r is not None), None)

        def victim_path() -> None:
            s["victim_path"] = http_ok(f.victim_ip, port, self.host, timeout)

        def clients() -> None:
            s["recursive"] = dnsq.query(self.resolver, self.host, recursive=True)
            at["recursive"] = time.monotonic()
            answer = list(s["recursive"] or ())
            answer.sort(key=lambda ip: ip != f.victim_ip)  # the dead region first: the worst order a client can get
            s["first_client"] = bool(answer) and http_ok(answer[0], port, self.host, timeout)
            at["first_client"] = time.monotonic()
            s["retrying_client"] = any(http_ok(ip, port, self.host, timeout) for ip in answer)
            at["retrying_client"] = time.monotonic()

        # Every observation at once, each stamped when it returned: a request to a black-holed region waits for its
        # timeout, and what the others saw must not wait behind it (a serial pass took 6-14 s on the real fleet and
        # stamped a DNS change that much late).
        at: dict[str, float] = {}
        jobs: dict[str, Callable[[], None]] = {
            "cluster": lambda: safe("cluster", cluster), "binding": lambda: safe("binding", binding),
            "survivor_ready": lambda: safe("survivor_ready", survivor_ready),
            "dnsendpoint": lambda: safe("dnsendpoint", dnsendpoint), "authoritative": authoritative,
            "victim_path": victim_path, "clients": clients}

        def stamped(key: str, job: Callable[[], None]) -> None:
            job()
            at.setdefault(key, time.monotonic())

        threads = [threading.Thread(target=stamped, args=item, daemon=True) for item in jobs.items()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        s["_at"] = at
        return s

    def judge(self, stage: str, s: dict[str, Any], t: float) -> None:
        tl, victim_ip, victim = self.timeline, self.fleet.victim_ip, self.fleet.victim.name
        ready, taints = s.get("cluster") or (None, None)
        rb, dnsep, auth, rec = s.get("binding"), s.get("dnsendpoint"), s.get("authoritative"), s.get("recursive")

        seen_at = {k: v - self.stage_start for k, v in (s.get("_at") or {}).items()} if hasattr(
            self, "stage_start") else {}

        def mark(key: str, cond: bool, value: str = "", source: str = "", after: str = "") -> None:
            """`source`: the observation that shows it, whose own time is the phase's (else the pass's end);
            `after`: a phase it cannot precede."""
            at = min(seen_at.get(source or key, t), t)
            if after and tl.phase(after).at is not None:
                at = max(at, tl.phase(after).at or 0.0)
            if cond and tl.mark(key, at, value):
                self.say(stage, f"{tl.phase(key).title} ({value})" if value else tl.phase(key).title)

        if stage == "kill":
            mark("client_fail", not s["victim_path"], f"{victim_ip} fails", "victim_path")
            mark("ready", ready in ("False", "Unknown"), f"Ready={ready}", "cluster")
            mark("noschedule", taints is not None and any(x.endswith(":NoSchedule") for x in taints),
                 ",".join(taints or []), "cluster")
            mark("noexecute", taints is not None and any(x.endswith(":NoExecute") for x in taints),
                 ",".join(taints or []), "cluster")
            mark("binding", rb is not None and victim not in rb, ",".join(rb or []) or "no clusters")
            mark("survivors", tl.phase("binding").at is not None and bool(s.get("survivor_ready")),
                 self.fleet.survivor.name, "survivor_ready", after="binding")
            mark("dnsendpoint", dnsep is not None and bool(dnsep) and victim_ip not in dnsep, ",".join(dnsep or []))
            mark("authoritative", bool(auth) and victim_ip not in auth, ",".join(auth or []))
            mark("recursive", bool(rec) and victim_ip not in rec, ",".join(rec or []))
            if not s["first_client"] and tl.phase("client_fail").at is not None:
                # a failure counts once the dead region is seen failing: a blip before that is not the kill's
                self.first_client_failed = True
            mark("retrying_client", tl.phase("client_fail").at is not None and s["retrying_client"],
                 after="client_fail")
            mark("first_client", self.first_client_failed and s["first_client"], after="client_fail")
        else:
            mark("path_back", s["victim_path"], source="victim_path")
            mark("ready_back", ready == "True", source="cluster")
            mark("taints_back", taints is not None and not any(
                x.split(":")[0] in TAINT_KEYS for x in taints), source="cluster")
            mark("binding_back", rb is not None and victim in rb, ",".join(rb or []), "binding")
            mark("dnsendpoint_back", dnsep is not None and victim_ip in dnsep, ",".join(dnsep or []))
            mark("authoritative_back", auth is not None and victim_ip in auth, ",".join(auth or []))

    def progress(self, stage: str, s: dict[str, Any], t: float) -> None:
        ready, taints = s.get("cluster") or ("?", [])
        by_ip = {self.fleet.victim_ip: self.fleet.victim.region, self.fleet.survivor_ip: self.fleet.survivor.region}

        def regions(ips: Any) -> str:
            return "-" if ips is None else ",".join(by_ip.get(i, i) for i in ips) or "none"

        binding = ",".join(s.get("binding") or [])
        line = (f"[{stage} {t:7.1f}s] Ready={ready} taints={len(taints or [])} binding={binding}"
                f" dnsendpoint={regions(s.get('dnsendpoint'))} auth={regions(s.get('authoritative'))} "
                f"recursive={regions(s.get('recursive'))} client={'ok' if s['first_client'] else 'FAIL'}"
                f"/{'ok' if s['retrying_client'] else 'FAIL'} pending={len(self.timeline.pending(stage))}")
        if self.tty:
            print("\r\033[K" + line, end="", file=sys.stderr, flush=True)
        elif line.split("] ", 1)[1] != getattr(self, "_last_line", ""):
            self._last_line = line.split("] ", 1)[1]
            self.print(line)

    def watch(self, stage: str, start: float, timeout: float, action: Callable[[], None]) -> bool:
        """Run `action` (the kill or the restore) in a thread while observing from the first moment: a Hetzner
        action takes seconds, and the phases it causes must not wait for it to return."""
        errors: list[BaseException] = []

        def act() -> None:
            try:
                action()
            except BaseException as err:  # handed to the main thread below
                errors.append(err)

        worker = threading.Thread(target=act, daemon=True)
        self.worker = worker
        worker.start()
        self.stage_start = start
        while True:
            t = time.monotonic() - start
            s = self.snapshot()
            self.judge(stage, s, time.monotonic() - start)
            self.progress(stage, s, t)
            if errors:
                raise errors[0]
            if not worker.is_alive() and not self.timeline.pending(stage):
                return True
            if t > timeout:
                worker.join(timeout=self.args.connect_timeout)
                if errors:
                    raise errors[0]
                return False
            time.sleep(self.args.poll)

    # ------------------------------------------------------------------ the drill

    def prepare(self) -> None:
        from hubctl.commands import load_config

        a = self.args
        _, config = load_config(self.repo, a.stack)
        config, where = fleet_view(self.repo, a.stack, config, a.member)
        victim, survivor = _pick(config, a.member, a.survivor, where)
        region = config.regions[victim.region]
        if a.method == "firewall" and region.network_id is not None:
            raise DrillError(f"--method firewall cannot kill {victim.name}: regions.{victim.region}.networkId is set, "
                             "so its LB and API reach the servers over the private network, which Hetzner Cloud "
                             "Firewalls do not filter; use --method poweroff (or lb-detach for ingress only)")
        if a.method == "command" and not (a.kill_command and a.restore_command):
            raise DrillError("--method command needs both --kill-command and --restore-command (the drill restores "
                             "the member with the second, also when it stops early)")
        if a.method != "command" and (a.kill_command or a.restore_command):
            raise DrillError(f"--kill-command and --restore-command are for --method command, not {a.method}")
        if not a.yes:
            raise DrillError(f"hubctl drill kills member {victim.name} of {a.stack} for real ({a.method}: "
                             f"{METHOD_KILLS[a.method]}); add --yes to go ahead")
        self.report = failover_budget(config)
        self.host = service.host(config.dns.domain)  # type: ignore[union-attr]
        self.karmada = self.kube("karmada")
        self.hub = self.kube("hub")
        self.survivor_kube = self.kube(survivor.name)
        ips = self.region_ips(self.hub)
        for m in (victim, survivor):
            if m.region not in ips:
                raise DrillError(f"the hub has no traffic-region-{m.region} ConfigMap in {failover_docs.NAMESPACE}: "
                                 f"deploy the stack that owns region {m.region} first")
        self.fleet = Fleet(config, victim, survivor, ips[victim.region], ips[survivor.region])
        self.nameservers = dnsq.authoritative_servers(config.dns.domain, a.nameserver)  # type: ignore[union-attr]
        self.resolver = dnsq.parse_server(a.resolver) if a.resolver else dnsq.system_resolver()
        self.method = self.kill_method(config, victim, region)
        now = dt.datetime.now(dt.UTC)
        self.out_dir = Path(a.out) if a.out else self.repo / "build" / "drill" / a.stack / now.strftime(
            "%Y%m%dT%H%M%SZ")
        self.timeline = Timeline(a.stack, victim.name, survivor.name, a.method, self.host,
                                 started=now.isoformat(timespec="seconds"), phases=phases(self.report, a.method))
        self.first_client_failed = False

    def kill_method(self, config: FleetConfig, victim: Any, region: Any) -> hcloud.KillMethod:
        a = self.args
        log = lambda text: self.say("kill" if not getattr(self, "restoring", False) else "restore", text)  # noqa: E731
        if a.method == "command":
            return Command(a.kill_command, a.restore_command, victim.name, victim.region, log)
        hc = hcloud.Hcloud(a.hcloud_endpoint)
        if isinstance(victim.credentials, CapiCredentials):
            selector = f"{traffic_docs.CAPH_CLUSTER_LABEL_PREFIX}{victim.credentials.cluster}={traffic_docs.CAPH_OWNED}"
        else:
            selector = f"{traffic_docs.MEMBER_SERVER_LABEL}={victim.name}"
        if a.method == "poweroff":
            capi, cluster = None, None
            if isinstance(victim.credentials, CapiCredentials):
                capi = self.kube("capi-management")
                cluster = (victim.credentials.namespace, victim.credentials.cluster)
            return hcloud.PowerOff(hc, selector, capi, cluster, log)
        if a.method == "firewall":
            return hcloud.Firewall(hc, selector, victim.name, log)
        return hcloud.LbDetach(hc, f"fleet-{victim.region}", traffic_docs.member_server_selector(victim),
                               region.network_id is not None, log)

    def deploy(self) -> None:
        f = self.fleet
        self.wait_namespace_gone()
        for obj in service.documents(f.config.dns.domain, f.victim.name, f.survivor.name):  # type: ignore[union-attr]
            self.karmada.apply(obj)
        self.say("setup", f"probe service {service.NAMESPACE}/{service.NAME} ({self.host}) on {f.victim.name} and "
                 f"{f.survivor.name}")

    def wait_namespace_gone(self) -> None:
        """A previous drill's probe namespace still terminating refuses new objects ("is being terminated"): wait
        for it to go, within the settle timeout."""
        path = f"/api/v1/namespaces/{service.NAMESPACE}"
        deadline = time.monotonic() + self.args.settle_timeout
        while True:
            ns = self.karmada.get(path)
            if ns is None or (ns.get("status") or {}).get("phase") != "Terminating":
                return
            if time.monotonic() > deadline:
                raise DrillError(f"namespace {service.NAMESPACE} in the karmada-apiserver is still terminating after "
                                 f"{fmt_seconds(self.args.settle_timeout)} s (a previous drill's): wait, or look at "
                                 "what holds it (kubectl get ns -o yaml)")
            time.sleep(self.args.poll)

    def steady(self) -> None:
        f, deadline = self.fleet, time.monotonic() + self.args.settle_timeout
        want = {f.victim_ip, f.survivor_ip}
        while True:
            s = self.snapshot()
            # the resolver too: an answer it cached from before (a previous drill's) would measure a kill that
            # never reached its clients
            ok = (set(s.get("authoritative") or ()) >= want and set(s.get("recursive") or ()) >= want
                  and s["victim_path"]
                  and http_ok(f.survivor_ip, self.args.http_port, self.host, self.args.connect_timeout)
                  and s.get("binding") is not None and f.victim.name in s["binding"] and s.get("survivor_ready"))
            if ok:
                self.say("setup", f"steady: {self.host} answers from {f.victim.region} and {f.survivor.region}")
                return
            if time.monotonic() > deadline:
                raise DrillError(f"no steady state within {fmt_seconds(self.args.settle_timeout)} s: {self.host} "
                                 f"must resolve to both {', '.join(sorted(want))} on the authoritative servers and "
                                 "through the resolver, and answer through both LBs (is the failover controller "
                                 "running? ingress-nginx on both members?)")
            time.sleep(self.args.poll)

    def cleanup(self) -> None:
        if self.args.keep:
            return
        for obj in reversed(service.documents(self.fleet.config.dns.domain, self.fleet.victim.name,  # type: ignore
                                              self.fleet.survivor.name)):
            try:
                self.karmada.delete(obj)
            except (KubeError, OSError) as err:
                self.say("cleanup", f"could not delete {obj['kind']} {obj['metadata']['name']}: {err}")
        self.say("cleanup", "probe service removed")

    def run(self) -> int:
        a = self.args
        self.prepare()
        budget_timeout = a.timeout or 2 * max(self.report.capacity.total, self.report.traffic.total) + 60  # type: ignore
        killed = deployed = False
        code = 1
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
        try:
            self.deploy()
            deployed = True
            self.steady()
            self.t0 = time.monotonic()
            self.timeline.killed_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            self.say("kill", f"killing {self.fleet.victim.name}: {self.method.kills}")
            killed = True
            done = self.watch("kill", self.t0, budget_timeout, self.method.kill)
            self.restoring = True
            self.t0 = time.monotonic()
            self.timeline.restored_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            back = self.watch("restore", self.t0, budget_timeout, self.method.restore)
            killed = False
            missing = [p.title for p in self.timeline.phases if p.at is None and p.expected]
            self.timeline.outcome = "complete" if done and back else f"timed out waiting for: {'; '.join(missing)}"
            code = 0 if done and back else 1
        except KeyboardInterrupt:
            self.timeline.outcome = "interrupted"
            code = 130
        except (DrillError, hcloud.HcloudError, KubeError, OSError) as err:
            self.timeline.outcome = f"failed: {err}"
            code = 1
        finally:
            signal.signal(signal.SIGTERM, previous)
            worker = getattr(self, "worker", None)
            if worker is not None and worker.is_alive():  # a kill or restore in flight finishes first
                self.say("restore", "waiting for the kill or restore in flight")
                worker.join(timeout=180)
            if killed:
                self.restoring = True
                try:
                    self.method.restore()
                    self.say("restore", "member restored after the drill stopped early")
                except Exception as err:  # report every restore problem, never hide it
                    self.timeline.outcome += f"; RESTORE FAILED: {err} (restore {self.fleet.victim.name} by hand)"
                    code = 1
            if deployed:
                self.cleanup()
            files = self.timeline.write(self.out_dir, self.report)
            if self.tty:
                print(file=sys.stderr)
            self.print(f"drill {self.timeline.outcome}: {', '.join(str(p) for p in files.values())}")
            for k in self.kubes:
                k.close()
        return code


TAINT_KEYS = ("cluster.karmada.io/not-ready", "cluster.karmada.io/unreachable", "fleet.karmada-hub.io/not-ready")
METHOD_KILLS = {"poweroff": hcloud.PowerOff.kills, "firewall": hcloud.Firewall.kills,
                "lb-detach": hcloud.LbDetach.kills, "command": Command.kills}


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(args: argparse.Namespace, repo: Path) -> int:
    """Exit 0 when every phase was seen, 1 on a timeout or failure (outputs still written), 2 on a user error
    before anything was touched, 130 on Ctrl-C."""
    try:
        return Drill(args, repo).run()
    except DrillError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2

"""`hubctl drill`'s command line, apart from the drill itself so building hubctl's parser stays cheap for every
other command (the drill pulls in dnspython and the Hetzner and Kubernetes clients)."""

from __future__ import annotations

import argparse

METHODS = ("poweroff", "firewall", "lb-detach", "command")
"""How the drill kills a member (hubctl/drill/hcloud.py does the Hetzner ones, hubctl/drill/command.py runs the
operator's own commands; docs/runbooks/failover-drill.md)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("stack", help="the stack whose fleet is drilled: dev, the hub (prod-hub) or a region stack "
                   "(prod-fsn1); members of a hub's region stacks are found through its regionStacks")
    p.add_argument("--yes", action="store_true", help="really kill the member (the drill refuses without it)")
    p.add_argument("--member", help="the member to kill (default: the first member in the stack)")
    p.add_argument("--survivor", help="a member in another region that keeps serving (default: the first one)")
    p.add_argument("--method", choices=METHODS, default="poweroff", help="how to kill (default poweroff)")
    p.add_argument("--kill-command", help="with --method command: a shell command that kills the member "
                   "($DRILL_MEMBER, $DRILL_REGION set)")
    p.add_argument("--restore-command", help="with --method command: the shell command that undoes the kill")
    p.add_argument("--kubeconfigs", default=".", help="directory with karmada.kubeconfig, hub.kubeconfig, "
                   "<member>.kubeconfig, capi-management.kubeconfig (default: the current directory)")
    p.add_argument("--out", help="output directory (default build/drill/<stack>/<UTC time>)")
    p.add_argument("--nameserver", help="an authoritative server HOST[:PORT] (default: the zone's NS records)")
    p.add_argument("--resolver", help="a recursive resolver HOST[:PORT] (default: the system resolver)")
    p.add_argument("--hcloud-endpoint", help="Hetzner API base URL (default $HCLOUD_ENDPOINT or the public API)")
    p.add_argument("--http-port", type=int, default=80, help="the port clients use on the regional LBs (80)")
    p.add_argument("--poll", type=float, default=1.0, help="seconds between observations (default 1)")
    p.add_argument("--timeout", type=float, help="seconds to wait for the kill phases, and again for the restore "
                   "phases (default: twice the larger budget clock + 60)")
    p.add_argument("--settle-timeout", type=float, default=600.0, help="seconds to wait for the steady state")
    p.add_argument("--connect-timeout", type=float, default=2.0, help="client connect/response timeout")
    p.add_argument("--keep", action="store_true", help="leave the probe service in place afterwards")

"""Every rendered command line is accepted by its real binary (the pinned upstream build, `make upstream`).

Each container of the dev and prod fleets whose image ships one of the upstream binaries is started with exactly
its rendered args (`$(VAR)` expanded as the kubelet would, with stand-in pod values) and without its volumes: a
binary that got past flag parsing, feature-gate parsing and option validation stops at the first file it opens from
a mount (or is still running after a few seconds); one that did not prints a flag error. Mutating one flag (or one
feature gate) of each binary turns that into the flag error, which is how the test shows it can fail.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from tests.contract.fleet import Container, Fleet
from tests.support.kubelet.images import ImageError, ImageTable
from tests.support.kubelet.pod import SA_MOUNT, expand
from tests.support.tools import require_upstream
from upstream.build import all_binary_names

FLAG_ERROR = re.compile(
    r"unknown flag|unknown shorthand flag|flag provided but not defined|bad flag syntax|flag needs an argument|"
    r"invalid argument \S+ for \S+ flag|unrecognized feature gate|failed to verify flags|"
    r"invalid value .* for flag|Error: .*flag", re.IGNORECASE)
MISSING_FILE = re.compile(r"(?:open|stat|read) (/\S+?):? no such file or directory")
RUNNING_AFTER_S = 6.0


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    why: str


def judge(output: str, returncode: int | None, mount_paths: Iterable[str]) -> Verdict:
    """Accepted: still running after the timeout, or stopped at a file under one of the container's mounts (past
    flags and validation). Refused: a flag or validation error. Anything else is unexplained, so not accepted."""
    flag = FLAG_ERROR.search(output)
    if flag:
        return Verdict(False, f"flag error: {flag.group(0)}")
    if returncode is None:
        return Verdict(True, f"running after {RUNNING_AFTER_S:.0f} s")
    missing = MISSING_FILE.search(output)
    if missing and any(missing.group(1).startswith(p.rstrip("/") + "/") or missing.group(1) == p
                       for p in mount_paths):
        return Verdict(True, f"stopped at its first mounted file {missing.group(1)}")
    tail = " | ".join(line.strip() for line in output.strip().splitlines()[-3:])
    return Verdict(False, f"exit {returncode} without reaching a mounted file: {tail[:400]}")


def pod_env(container: Container) -> dict[str, str]:
    """The container's env as the kubelet would set it, with stand-ins for the pod's own values."""
    pod_name = f"{container.pod.owner.name}-0"
    fields = {"metadata.name": pod_name, "metadata.namespace": container.pod.namespace, "status.podIP": "127.0.0.1",
              "status.hostIP": "127.0.0.1", "spec.nodeName": "node-0", "spec.serviceAccountName": "default"}
    env: dict[str, str] = {}
    for var in container.body.get("env") or []:
        source = var.get("valueFrom") or {}
        if "value" in var:
            env[var["name"]] = expand(str(var["value"]), env)
        elif "fieldRef" in source:
            env[var["name"]] = fields.get(source["fieldRef"]["fieldPath"], "stand-in")
        else:
            env[var["name"]] = "stand-in"
    return env


def argv_of(container: Container, table: ImageTable) -> list[str] | None:
    """The host argv for an upstream binary's container, or None when its image ships none (Python agents...)."""
    env = pod_env(container)
    command = [expand(a, env) for a in container.body.get("command") or []]
    args = [expand(a, env) for a in container.args]
    if any(a.startswith("--config-file=") for a in args) and len(args) > 1:
        # etcd reads the flags its prepare step writes into the config file: run those flags themselves
        args = [a for a in args if not a.startswith("--config-file=")]
    try:
        argv = table.resolve(container.body["image"], command + args if command else [])
    except ImageError:
        return None
    if not any(argv[0].endswith("/" + name) for name in all_binary_names()):
        return None
    return argv if command else [*argv, *args]


def mount_paths(container: Container) -> list[str]:
    """The container's mounts, and the API token's when the pod has the kubelet mount one."""
    paths = [str(m["mountPath"]) for m in container.body.get("volumeMounts") or []]
    if container.pod.spec.get("automountServiceAccountToken", True):
        paths.append(SA_MOUNT)
    return paths


def run(argv: list[str]) -> tuple[str, int | None]:
    """Run with the env every pod gets from the kubelet (the API's Service address) and nothing else."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {"HOME": tmp, "PATH": "/usr/bin:/bin", "KUBERNETES_SERVICE_HOST": "127.0.0.1",
               "KUBERNETES_SERVICE_PORT": "443"}
        try:
            res = subprocess.run(argv, cwd=tmp, env=env, capture_output=True,
                                 text=True, timeout=RUNNING_AFTER_S)
            return res.stdout + res.stderr, res.returncode
        except subprocess.TimeoutExpired as exc:
            out = (exc.stdout or b"") + (exc.stderr or b"")
            return out.decode(errors="replace") if isinstance(out, bytes) else str(out), None


def upstream_containers(fleet: Fleet) -> list[tuple[Container, list[str]]]:
    table = ImageTable.default()
    out = []
    for container in fleet.containers():
        argv = argv_of(container, table)
        if argv is not None:
            out.append((container, argv))
    return out


def test_every_rendered_command_line_is_accepted_by_its_real_binary(fleet: Fleet) -> None:
    require_upstream(*all_binary_names())
    containers = upstream_containers(fleet)
    programs = {argv[0].rsplit("/", 1)[1] for _, argv in containers}
    assert {"kube-apiserver", "kube-controller-manager", "karmada-controller-manager", "karmada-scheduler",
            "karmada-webhook", "karmada-aggregated-apiserver", "etcd", "etcdctl"} <= programs
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda item: run(item[1]), containers))
    refused = []
    for (container, argv), (output, rc) in zip(containers, results, strict=True):
        verdict = judge(output, rc, mount_paths(container))
        if not verdict.accepted:
            refused.append(f"{container.where}: {verdict.why}\n  argv: {' '.join(argv)}")
    assert not refused, "\n".join(refused)


def _mutations(argv: list[str]) -> list[tuple[str, list[str]]]:
    """One renamed flag, and one unknown feature gate where the command line sets gates."""
    out = []
    for i, arg in enumerate(argv[1:], 1):
        if arg.startswith("--") and "=" in arg:
            name, value = arg.split("=", 1)
            out.append((f"{name} renamed", [*argv[:i], f"{name}-mutated={value}", *argv[i + 1:]]))
            break
    for i, arg in enumerate(argv):
        if arg.startswith("--feature-gates="):
            out.append(("an unknown gate", [*argv[:i], "--feature-gates=NoSuchGateInThisRelease=true",
                                             *argv[i + 1:]]))
    return out


def test_a_mutated_flag_is_refused_by_each_binary(dev_fleet: Fleet) -> None:
    require_upstream(*all_binary_names())
    seen: dict[str, tuple[Container, list[str]]] = {}
    for container, argv in upstream_containers(dev_fleet):
        seen.setdefault(argv[0], (container, argv))
    cases = [(container, what, mutated) for container, argv in seen.values() for what, mutated in _mutations(argv)]
    assert len({argv[0] for _, _, argv in cases}) == len(seen) >= 8
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda case: run(case[2]), cases))
    for (container, what, _), (output, rc) in zip(cases, results, strict=True):
        verdict = judge(output, rc, mount_paths(container))
        assert not verdict.accepted and verdict.why.startswith("flag error"), f"{container.where}, {what}: {verdict}"


@pytest.mark.parametrize(("output", "rc", "accepted"), [
    ("E1201 run.go:72] \"command failed\" err=\"open /etc/karmada/pki/a.crt: no such file or directory\"", 1, True),
    ("panic: stat /etc/karmada/config/karmada.config: no such file or directory", 2, True),
    ("Error: unknown flag: --no-such", 1, False),
    ("err=\"unrecognized feature gate: NoSuch\"", 1, False),
    ("open /somewhere/else.crt: no such file or directory", 1, False),
    ("", None, True),
    ("listen tcp 0.0.0.0:443: bind: permission denied", 1, False),
])
def test_the_judge(output: str, rc: int | None, accepted: bool) -> None:
    assert judge(output, rc, ["/etc/karmada/pki", "/etc/karmada/config"]).accepted is accepted

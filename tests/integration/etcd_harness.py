"""A real multi-member etcd cluster on one machine, started with exactly the args the program renders.

Each member runs in its own network namespace, attached by a veth pair to a private bridge, so the
rendered `0.0.0.0` listen URLs work unchanged and every member has its own address. The pod DNS
names (`etcd-N.etcd.<ns>.svc.<domain>`) are mapped to those addresses in `/etc/netns/<ns>/hosts`,
which `ip netns exec` bind-mounts over `/etc/hosts` for that member only. What the harness changes
is explicit and recorded in `EtcdCluster.substitutions`:

1. `$(VAR)` references are expanded from the member's pod env (`POD_NAME=etcd-N`, `POD_IP` = the member's
   address in its namespace), as kubelet does.
2. Container file paths are replaced by temp files, via `path_map` (container path -> `files` key).
3. The data dir (`flags.ETCD_DATA_DIR`) becomes a per-member temp dir, and so does the pod's config
   emptyDir (`flags.ETCD_CONFIG_DIR`), emptied whenever the member (re)starts, like a new pod's.

With `init` (an `InitStep`: the pod's rendered init container) each member runs as its pod does: the init
container with its rendered args first, then etcd with its own rendered args, only if the init container
exited 0 (`pod_launcher.py`). The etcd flags that name the cluster are then read from the init args after `--`.

Nothing else is touched; if any `/etc/karmada` or `/var/lib/etcd` path survives the rewrite the
harness refuses to start, so a new mounted file can't silently go untested. Requires root (netns).
Everything created (namespaces, bridge, veths, /etc/netns entries, processes, temp dirs) is removed
by `close()`, which the context manager always calls.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import http.client
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from components.karmada.flags import ETCD_CONFIG_DIR, ETCD_DATA_DIR, PATHS, flag_values
from components.karmada.pki_spec import CaSpec, CertSpec

DEFAULT_PATH_MAP: Mapping[str, str] = {
    PATHS["etcd/ca.crt"]: "ca.crt",
    PATHS["etcd/server.crt"]: "server.crt",
    PATHS["etcd/server.key"]: "server.key",
    PATHS["etcd/peer.crt"]: "peer.crt",
    PATHS["etcd/peer.key"]: "peer.key",
}
"""Container path in the rendered args -> key of the `files` mapping given to EtcdCluster."""

_CONTAINER_PREFIXES = ("/etc/karmada", "/var/lib/etcd", ETCD_CONFIG_DIR)
LAUNCHER = Path(__file__).with_name("pod_launcher.py")


@dataclass(frozen=True)
class InitStep:
    """A rendered init container, run before etcd in each member's namespace.

    command: the host command standing in for the container's (e.g. the test's Python running the rendered
    ConfigMap's script); args: its rendered args, rewritten like etcd's (env, files, data and config dirs)."""

    command: Sequence[str]
    args: Sequence[str]


class HarnessError(RuntimeError):
    pass


def netns_unavailable_reason() -> str | None:
    """Why this machine can't run the netns harness (None when it can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 `ip` is not installed"
    probe = f"ekprobe{secrets.token_hex(3)}"
    res = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, timeout=10)
    if res.returncode != 0:
        return f"`ip netns add` failed: {res.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=10)
    return None


ETCD = os.environ.get("KARMADA_HUB_ETCD", "/usr/bin/etcd")


def unavailable(reason: str) -> NoReturn:
    """Skip the test on a laptop that can't run the harness; fail it where KARMADA_HUB_REQUIRE_TOOLS=1 (CI)."""
    import pytest

    from tests.support.tools import tools_required

    if tools_required():
        pytest.fail(f"KARMADA_HUB_REQUIRE_TOOLS=1 but {reason}")
    pytest.skip(reason)


def require_harness() -> str:
    """The etcd binary the harness runs, once it is installed and network namespaces can be made here."""
    if not (os.path.exists(ETCD) or shutil.which(ETCD)):
        unavailable(f"etcd binary {ETCD} is not installed (Debian: apt-get install etcd-server)")
    reason = netns_unavailable_reason()
    if reason:
        unavailable(reason)
    return ETCD


def require_etcdctl() -> str:
    found = shutil.which(os.environ.get("KARMADA_HUB_ETCDCTL", "etcdctl"))
    if found is None:
        unavailable("etcdctl is not installed (Debian: apt-get install etcd-client)")
    return found


def expand_env(arg: str, env: Mapping[str, str]) -> str:
    """Kubelet's `$(VAR)` expansion: defined vars are replaced, `$$` escapes, unknown refs stay."""
    def repl(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))

    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", repl, arg)


def _run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(list(cmd), capture_output=True, text=True, timeout=20)
    if check and res.returncode != 0:
        raise HarnessError(f"{' '.join(cmd)} failed: {res.stderr.strip()}")
    return res


def _pick_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.213.0.0/16 that no interface or route on this host uses yet."""
    used: list[ipaddress.IPv4Network] = []
    for line in _run("ip", "-4", "-o", "addr").stdout.splitlines() + _run("ip", "-4", "route").stdout.splitlines():
        for token in re.findall(r"\b\d+\.\d+\.\d+\.\d+(?:/\d+)?\b", line):
            used.append(ipaddress.ip_network(token, strict=False))
    start = secrets.randbelow(256)
    for k in range(256):
        net = ipaddress.ip_network(f"10.213.{(start + k) % 256}.0/24")
        if not any(net.overlaps(u) for u in used):
            return net
    raise HarnessError("no free /24 in 10.213.0.0/16")


@dataclass
class _Member:
    pod_name: str
    args: list[str]
    fqdn: str
    netns: str
    veth: str
    ip: str = ""
    data_dir: Path = Path()
    log_path: Path = Path()
    proc: subprocess.Popen[bytes] | None = None
    run_dir: Path = Path()
    main_args: list[str] = field(default_factory=list)
    init_args: list[str] = field(default_factory=list)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to a fixed IP while verifying the cert against the DNS name the client would dial."""

    def __init__(self, ip: str, port: int, server_hostname: str, context: ssl.SSLContext, timeout: float):
        super().__init__(ip, port, context=context, timeout=timeout)
        self._ip, self._sni = ip, server_hostname
        self._ctx = context

    def connect(self) -> None:
        sock = socket.create_connection((self._ip, self.port), self.timeout)
        self.sock = self._ctx.wrap_socket(sock, server_hostname=self._sni)


@dataclass
class EtcdCluster:
    """Start `len(args_per_member)` etcd members from rendered args.

    files: PEMs keyed as in `path_map` values (default: ca.crt, server.crt, server.key, peer.crt, peer.key).
    client_cert/client_key: a client cert from the same etcd CA, used by the test to talk to members.
    pod_names: the StatefulSet pod names (default etcd-0..N-1), exported to each member as POD_NAME.
    """

    args_per_member: Sequence[Sequence[str]]
    files: Mapping[str, bytes]
    client_cert: bytes
    client_key: bytes
    pod_names: Sequence[str] | None = None
    path_map: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_PATH_MAP))
    etcd_binary: str = "/usr/bin/etcd"
    start_timeout_s: float = 60.0
    service_names: Sequence[str] = ()
    """Extra names (a client Service's DNS names) that every namespace's /etc/hosts maps to the first
    member, the way a Service would route to one live member."""
    init: InitStep | None = None
    """The pod's init container; `args_per_member` are then etcd's own (config-file) args."""
    seed_data_dirs: Mapping[str, Path] = field(default_factory=dict)
    """pod name -> a data directory (with `member/`) the member starts from instead of an empty one: what a
    restore puts on the member's volume."""
    substitutions: list[str] = field(default_factory=list)
    members: list[_Member] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._tag = secrets.token_hex(3)
        self._bridge = f"ekb{self._tag}"
        self._tmp = Path(tempfile.mkdtemp(prefix="etcd-harness-"))
        self._netns_created: list[str] = []
        self._bridge_created = False
        self._ssl: ssl.SSLContext | None = None
        self._net = ipaddress.IPv4Network("10.213.0.0/24")  # replaced by a free subnet in start()

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> EtcdCluster:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        pod_names = list(self.pod_names or [f"etcd-{i}" for i in range(len(self.args_per_member))])
        if len(pod_names) != len(self.args_per_member):
            raise HarnessError("pod_names and args_per_member differ in length")
        pki = self._tmp / "pki"
        pki.mkdir(mode=0o700)
        for key, pem in {**self.files, "client.crt": self.client_cert, "client.key": self.client_key}.items():
            path = pki / key
            path.write_bytes(pem)
            path.chmod(0o600)
        missing = set(self.path_map.values()) - set(self.files)
        if missing:
            raise HarnessError(f"files is missing {sorted(missing)}")

        self._net = _pick_subnet()
        addresses = list(self._net.hosts())[10:]
        for i, (pod, raw) in enumerate(zip(pod_names, self.args_per_member, strict=True)):
            data_dir = self._tmp / "data" / pod
            data_dir.mkdir(parents=True, mode=0o700)
            if pod in self.seed_data_dirs:
                shutil.copytree(Path(self.seed_data_dirs[pod]) / "member", data_dir / "member")
            run_dir = self._tmp / "podconfig" / pod
            run_dir.mkdir(parents=True, mode=0o700)
            pod_ip = str(addresses[i])
            main_args = self._rewrite(list(raw), pod, pki, data_dir, run_dir, pod_ip)
            init_args: list[str] = []
            args = main_args
            if self.init is not None:
                init_args = self._rewrite(list(self.init.args), pod, pki, data_dir, run_dir, pod_ip)
                if "--" not in init_args:
                    raise HarnessError("the init container's args carry no `-- <etcd flags>`")
                args = init_args[init_args.index("--") + 1:]
            values = flag_values(args)
            adv = urlsplit(values["advertise-client-urls"].split(",")[0]).hostname or ""
            self.members.append(_Member(pod_name=pod, args=args, fqdn=adv, netns=f"etcdh-{self._tag}-{i}",
                                        veth=f"ekh{self._tag}{i}", data_dir=data_dir,
                                        log_path=self._tmp / f"{pod}.log", run_dir=run_dir,
                                        main_args=main_args, init_args=init_args))
        self._check_names()
        self._network()
        for m in self.members:
            self._spawn(m)
        self.wait_ready(range(len(self.members)), self.start_timeout_s)

    def close(self) -> None:
        """Tear everything down; safe to call twice and after a partial start."""
        for m in self.members:
            self._kill(m)
        for m in self.members:  # explicit: a namespace held open elsewhere would keep its veth alive
            if m.netns in self._netns_created:
                _run("ip", "link", "del", m.veth, check=False)
        for ns in self._netns_created:
            _run("ip", "netns", "del", ns, check=False)
            shutil.rmtree(f"/etc/netns/{ns}", ignore_errors=True)
        self._netns_created.clear()
        if self._bridge_created:
            _run("ip", "link", "del", self._bridge, check=False)
            self._bridge_created = False
        shutil.rmtree(self._tmp, ignore_errors=True)

    # ------------------------------------------------------------------ setup helpers

    def _rewrite(self, args: list[str], pod: str, pki: Path, data_dir: Path, run_dir: Path,
                 pod_ip: str) -> list[str]:
        out: list[str] = []
        for arg in args:
            new = expand_env(arg, {"POD_NAME": pod, "POD_IP": pod_ip})
            if new != arg:
                refs = " and ".join(v for v in ("$(POD_NAME)", "$(POD_IP)") if v in arg)
                self._note(f"{pod}: {refs} -> the member's own value in {arg.split('=', 1)[0]}")
            if "=" in new:
                name, value = new.split("=", 1)
                if value in self.path_map:
                    self._note(f"{name}: {value} -> <tmp>/pki/{self.path_map[value]}")
                    value = str(pki / self.path_map[value])
                elif value == ETCD_DATA_DIR:
                    self._note(f"{name}: {value} -> <tmp>/data/<pod>")
                    value = str(data_dir)
                elif value.startswith(ETCD_CONFIG_DIR + "/"):
                    self._note(f"{name}: {value} -> <tmp>/podconfig/<pod>/{value[len(ETCD_CONFIG_DIR) + 1:]}")
                    value = str(run_dir / value[len(ETCD_CONFIG_DIR) + 1:])
                new = f"{name}={value}"
            if any(p in new for p in _CONTAINER_PREFIXES):
                raise HarnessError(f"{new!r} still names a container path; add it to path_map")
            out.append(new)
        return out

    def _note(self, text: str) -> None:
        generic = re.sub(r"etcd-\d+", "etcd-N", text)
        if generic not in self.substitutions:
            self.substitutions.append(generic)

    def _check_names(self) -> None:
        """Every host in --initial-cluster must be a member's own advertised name (so /etc/hosts can
        map it), and every member must advertise the peer URL the others expect."""
        by_pod = {m.pod_name: m for m in self.members}
        for m in self.members:
            values = flag_values(m.args)
            initial = dict(item.split("=", 1) for item in values["initial-cluster"].split(","))
            if set(initial) != set(by_pod):
                raise HarnessError(f"{m.pod_name}: --initial-cluster names {sorted(initial)} != pods {sorted(by_pod)}")
            for name, url in initial.items():
                host = urlsplit(url).hostname
                if host != by_pod[name].fqdn:
                    raise HarnessError(f"{name}: initial-cluster host {host} != advertised {by_pod[name].fqdn}")
            if values["initial-advertise-peer-urls"] != initial[m.pod_name]:
                raise HarnessError(f"{m.pod_name}: advertises {values['initial-advertise-peer-urls']}, "
                                   f"cluster expects {initial[m.pod_name]}")

    def _network(self) -> None:
        net = self._net
        hosts = list(net.hosts())
        gateway = hosts[0]
        _run("ip", "link", "add", self._bridge, "type", "bridge")
        self._bridge_created = True
        _run("ip", "addr", "add", f"{gateway}/{net.prefixlen}", "dev", self._bridge)
        _run("ip", "link", "set", self._bridge, "up")
        for i, m in enumerate(self.members):
            m.ip = str(hosts[10 + i])
        hosts_file = "127.0.0.1 localhost\n" + "".join(f"{m.ip} {m.fqdn}\n" for m in self.members)
        hosts_file += "".join(f"{self.members[0].ip} {name}\n" for name in self.service_names)
        for m in self.members:
            _run("ip", "netns", "add", m.netns)
            self._netns_created.append(m.netns)
            etc = Path("/etc/netns") / m.netns
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text(hosts_file)
            _run("ip", "link", "add", m.veth, "type", "veth", "peer", "name", "eth0", "netns", m.netns)
            _run("ip", "link", "set", m.veth, "master", self._bridge, "up")
            _run("ip", "-n", m.netns, "link", "set", "lo", "up")
            _run("ip", "-n", m.netns, "addr", "add", f"{m.ip}/{net.prefixlen}", "dev", "eth0")
            _run("ip", "-n", m.netns, "link", "set", "eth0", "up")
            _run("ip", "-n", m.netns, "route", "add", "default", "via", str(gateway))

    def _spawn(self, m: _Member) -> None:
        log = m.log_path.open("ab")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self._tmp)}
        if self.init is None:
            cmd = [self.etcd_binary, *m.args]
        else:
            # a new pod: a fresh config emptyDir, the init container, then etcd with its own args
            shutil.rmtree(m.run_dir, ignore_errors=True)
            m.run_dir.mkdir(parents=True, mode=0o700)
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            cmd = [sys.executable, str(LAUNCHER), json.dumps([*self.init.command, *m.init_args]), self.etcd_binary,
                   *m.main_args]
        m.proc = subprocess.Popen(["ip", "netns", "exec", m.netns, *cmd], stdout=log,
                                  stderr=subprocess.STDOUT, env=env, start_new_session=True)
        log.close()

    def run_in(self, i: int, *cmd: str, timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run a command in member i's network namespace (its /etc/hosts resolves the cluster's names)."""
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self._tmp), "ETCDCTL_API": "3"}
        return subprocess.run(["ip", "netns", "exec", self.members[i].netns, *cmd], capture_output=True, text=True,
                              timeout=timeout_s, env=env)

    def _kill(self, m: _Member, sig: signal.Signals = signal.SIGKILL) -> None:
        if m.proc is None:
            return
        if m.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(m.proc.pid, sig)
            try:
                m.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(m.proc.pid, signal.SIGKILL)
                m.proc.wait(timeout=10)
        m.proc = None

    # ------------------------------------------------------------------ member control

    def stop(self, i: int) -> None:
        """Hard-kill member i (a node loss, not a graceful pod deletion)."""
        self._kill(self.members[i])

    def restart(self, i: int) -> None:
        """Start member i again with the very same args (its data dir survives unless `wipe`d)."""
        m = self.members[i]
        if m.proc is not None and m.proc.poll() is None:
            raise HarnessError(f"{m.pod_name} is still running")
        self._spawn(m)

    def wipe(self, i: int) -> None:
        """Lose member i's disk: its data dir comes back empty (a replaced server's new local-path volume)."""
        m = self.members[i]
        if self.running(i):
            raise HarnessError(f"{m.pod_name} is still running")
        shutil.rmtree(m.data_dir)
        m.data_dir.mkdir(mode=0o700)

    def running(self, i: int) -> bool:
        p = self.members[i].proc
        return p is not None and p.poll() is None

    def wait_ready(self, indices: Sequence[int] | range, timeout_s: float) -> None:
        """Until each listed member reports a leader and serves a linearizable read."""
        deadline = time.monotonic() + timeout_s
        pending = list(indices)
        last: dict[int, str] = {}
        while pending and time.monotonic() < deadline:
            for i in list(pending):
                if not self.running(i):
                    raise HarnessError(f"{self.members[i].pod_name} exited:\n{self.log_tail(i)}")
                try:
                    if int(self.status(i, timeout_s=2).get("leader", "0")) != 0:
                        self.get(i, "__ready__", timeout_s=2)
                        pending.remove(i)
                except (OSError, HarnessError, http.client.HTTPException) as exc:
                    last[i] = repr(exc)
            time.sleep(0.3)
        if pending:
            detail = "\n".join(f"{self.members[i].pod_name}: {last.get(i)}\n{self.log_tail(i)}" for i in pending)
            raise HarnessError(f"members not ready after {timeout_s}s:\n{detail}")

    def log_tail(self, i: int, lines: int = 30) -> str:
        try:
            return "\n".join(self.members[i].log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "<no log>"

    # ------------------------------------------------------------------ v3 JSON gateway client

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            ca = self.path_map.get(PATHS["etcd/ca.crt"], "ca.crt")
            ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(self._tmp / "pki" / ca))
            ctx.load_cert_chain(str(self._tmp / "pki" / "client.crt"), str(self._tmp / "pki" / "client.key"))
            self._ssl = ctx
        return self._ssl

    def call(self, i: int, path: str, body: dict[str, Any], timeout_s: float = 5.0) -> dict[str, Any]:
        """POST to member i's gRPC gateway over mTLS, verifying its cert for the advertised name."""
        m = self.members[i]
        port = urlsplit(flag_values(m.args)["advertise-client-urls"].split(",")[0]).port or 2379
        conn = _PinnedHTTPSConnection(m.ip, port, m.fqdn, self._context(), timeout_s)
        try:
            conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            payload = resp.read()
        finally:
            conn.close()
        try:
            data = json.loads(payload or b"{}")
        except ValueError:
            raise HarnessError(f"{m.pod_name} {path}: HTTP {resp.status} {payload[:200]!r}") from None
        if resp.status != 200 or "error" in data:
            raise HarnessError(f"{m.pod_name} {path}: HTTP {resp.status} {data}")
        return data

    def status(self, i: int, timeout_s: float = 5.0) -> dict[str, Any]:
        return self.call(i, "/v3/maintenance/status", {}, timeout_s)

    def member_list(self, i: int, timeout_s: float = 5.0) -> list[dict[str, Any]]:
        return list(self.call(i, "/v3/cluster/member/list", {}, timeout_s).get("members", []))

    def put(self, i: int, key: str, value: str, timeout_s: float = 5.0) -> None:
        self.call(i, "/v3/kv/put", {"key": _b64(key), "value": _b64(value)}, timeout_s)

    def get(self, i: int, key: str, timeout_s: float = 5.0, serializable: bool = False) -> str | None:
        data = self.call(i, "/v3/kv/range", {"key": _b64(key), "serializable": serializable}, timeout_s)
        kvs = data.get("kvs") or []
        return base64.b64decode(kvs[0]["value"]).decode() if kvs and "value" in kvs[0] else (
            "" if kvs else None)


def _b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


# ---------------------------------------------------------- test certificates minted from pki_spec


def _pem_key(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _name(cn: str, orgs: tuple[str, ...] = ()) -> x509.Name:
    return x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


RSA_BITS = 3072
"""Key size of the harness's stand-in certificates (upstream's `rsaKeySize`, hack/util.sh)."""
CA_VALIDITY = dt.timedelta(days=3650)
LEAF_VALIDITY = dt.timedelta(days=365)


def mint_ca(spec: CaSpec) -> tuple[x509.Certificate, rsa.RSAPrivateKey]:
    """A self-signed CA from its spec, standing in for what KarmadaPki issues with pulumi_tls."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(_name(spec.common_name)).issuer_name(_name(spec.common_name))
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def mint_leaf(spec: CertSpec, ca: x509.Certificate, ca_key: rsa.RSAPrivateKey) -> tuple[bytes, bytes]:
    """A leaf exactly as the spec says: subject, key usages, EKUs, DNS and IP SANs."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)
    now = dt.datetime.now(dt.UTC)
    ekus = [oid for usage, oid in (("server_auth", ExtendedKeyUsageOID.SERVER_AUTH),
                                   ("client_auth", ExtendedKeyUsageOID.CLIENT_AUTH)) if usage in spec.usages]
    builder = (
        x509.CertificateBuilder().subject_name(_name(spec.common_name, spec.organization)).issuer_name(ca.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + LEAF_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature="digital_signature" in spec.usages,
                                     key_encipherment="key_encipherment" in spec.usages, content_commitment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage(ekus), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
    )
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in spec.dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(a)) for a in spec.ip_addresses]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)

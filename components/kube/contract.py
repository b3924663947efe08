"""The upstream runtime contract as data: what a container needs and offers at run time, each fact sourced.

Schema-valid is not "works": a binary reads env vars, opens files its flags name, listens on ports whose
paths may or may not be served (and may need credentials), dials names, calls APIs its identity must be
allowed, creates objects of its own and exits on start-up validations. This module is the vocabulary for
those facts; the facts themselves live beside the documents that render each container
(`karmada/contract.py`, `traffic/contract.py`, `hetzner/contract.py`, `operations/contract.py`).
`tests/contract/` checks every rendered plan against them, and `docs/upstream-contract.md` is rendered from
them (`hubctl/contract_doc.py`), so the doc and the checks cannot drift apart.

Pure: no Pulumi, no plan access. Where a fact depends on the rendered container (a port from a flag, a name
per Cluster), the contract holds a function of a `View` the checks provide.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol
from urllib.parse import urlsplit

import yaml


@dataclass(frozen=True)
class Src:
    """Where upstream says so: repository, tag (or commit), path, and the function/symbol to re-find it."""

    repo: str
    ref: str
    path: str
    symbol: str = ""
    pinned: bool = True
    """False when read from a stored version of the file, not at the pinned tag (listed as not confirmed)."""

    def __str__(self) -> str:
        at = self.ref if self.pinned else f"{self.ref}, not re-read at the pinned tag"
        return f"{self.repo}@{at} `{self.path}`" + (f" {self.symbol}" if self.symbol else "")


@dataclass(frozen=True)
class Fact:
    """A sentence of the contract with its source (what the doc prints)."""

    text: str
    source: Src


@dataclass(frozen=True)
class Match:
    """How a rendered container is recognised: its command's binary, or the agents/ script it runs (and, for a
    script with subcommands, its first argument), or its image."""

    command: str | None = None
    script: str | None = None
    image: str | None = None
    subcommand: str | None = None

    def matches(self, container: Mapping[str, object]) -> bool:
        command = [str(c) for c in container.get("command") or []]  # type: ignore[attr-defined]
        image = str(container.get("image", ""))
        if self.script is not None:
            args = [str(a) for a in container.get("args") or []]  # type: ignore[attr-defined]
            return any(c.endswith("/" + self.script) for c in command) and (
                self.subcommand is None or args[:1] == [self.subcommand])
        if self.command is not None:
            return bool(command) and command[0].rsplit("/", 1)[-1] == self.command
        return self.image is not None and image.split("@")[0].rsplit(":", 1)[0] == self.image


@dataclass(frozen=True)
class EnvVar:
    """An environment variable the binary itself reads (not one its args reference: every `$(VAR)` must be
    defined, which the checks verify for every container without data)."""

    name: str
    required: bool
    why: str
    source: Src


@dataclass(frozen=True)
class FileFlag:
    """A path a flag (or a positional argument) names, and what the binary does with it."""

    flag: str | None
    mode: Literal["read", "write", "dir"]
    why: str
    source: Src
    default: str | None = None
    """The path used when the flag is absent (None: absent means the file is not used)."""
    names: tuple[tuple[str, str], ...] = ()
    """For a directory flag: (flag, default) of the file names the binary reads inside it."""
    position: int | None = None
    """For a positional argument: its index among the non-flag args."""
    ignore: tuple[str, ...] = ()
    """Values that are not paths (e.g. `-` for stdout)."""


@dataclass(frozen=True)
class Served:
    """A path a listener answers 2xx/3xx on, and whether a credential-less request (a kubelet probe) gets it."""

    path: str
    anonymous: bool
    subtree: bool = False
    """Also `<path>/<anything>` (a ServeMux subtree or an aggregate handler with sub-checks)."""


PortFrom = Literal["hostport", "port", "url", "env-hostport"]


@dataclass(frozen=True)
class Listener:
    """One socket the binary opens. `source_flag` (a flag, or an env var for `env-hostport`) gives its port;
    `default` is the upstream default value of that flag/env."""

    name: str
    scheme: Literal["HTTP", "HTTPS", "GRPC", "TCP", "UDP", "URL"]
    """`URL`: taken from the flag's URL scheme (etcd's listen URLs)."""
    source_flag: str | None
    port_from: PortFrom
    default: str
    served: tuple[Served, ...]
    source: Src
    note: str = ""
    anonymous_paths: Callable[[View], frozenset[str]] | None = field(default=None, compare=False)
    """When which paths are anonymous depends on rendered config (kube-apiserver's authentication config)."""

    def port(self, view: View) -> tuple[int, str] | None:
        """(port, scheme) this listener binds in the rendered container, None when disabled."""
        raw = (view.env(self.source_flag) if self.port_from == "env-hostport" else view.flag(self.source_flag)) \
            if self.source_flag else None
        value = self.default if raw is None else raw
        if value in ("0", ""):
            return None
        if self.port_from == "port":
            return int(value), self.scheme
        if self.port_from == "url":
            first = value.split(",")[0]
            parts = urlsplit(first)
            if parts.port is None:
                return None
            return parts.port, parts.scheme.upper() if self.scheme == "URL" else self.scheme
        port = hostport(value)
        return None if port is None else (port[1], self.scheme)


@dataclass(frozen=True)
class Endpoint:
    """A concrete address a container dials: host, port, and (for Services) the expected TLS scheme."""

    host: str
    port: int
    scheme: str = ""
    path: str = ""


@dataclass(frozen=True)
class Connection:
    """A connection the binary opens. `to` names the component (a contract key) or an outside service; the
    resolver computes the concrete endpoints from the rendered container, for the reachability checks."""

    to: str
    port: str
    protocol: str
    via: str
    why: str
    source: Src
    external: bool = False
    """Outside the plan (member API servers, Hetzner's API, object storage): expected to exist."""
    resolve: Callable[[View], Sequence[Endpoint]] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Use:
    """API calls a client makes: verbs on a resource, in which API server, with which credential."""

    api: Literal["karmada", "member", "host"]
    group: str
    resource: str
    verbs: tuple[str, ...]
    source: Src
    namespace: str | None = None
    """None: any namespace (or cluster-scoped). May hold `<cluster>` (the container's --cluster-name)."""
    names: tuple[str, ...] = ()
    credential: str = "kubeconfig"
    """`kubeconfig` (the file of the component's kubeconfig flag), `serviceaccount` (in-cluster token of the
    pod's service account), `client-cert` (the cert file flag), `bootstrap-token` (key `token` of the Secret its
    `--bootstrap-secret` names, read through its own cluster's API: the kube-apiserver's bootstrap token
    authenticator maps `<id>.<secret>` to user `system:bootstrap:<id>`, groups `system:bootstrappers` and the
    token Secret's `auth-extra-groups`), or `member-admin` (a member's CAPI kubeconfig, not checkable offline)."""


@dataclass(frozen=True)
class Makes:
    """An object the binary creates itself. `owns`: it also updates/deletes it, so Pulumi must not own it;
    otherwise it only creates it when missing and a pre-created one is adopted."""

    api: Literal["karmada", "member", "host"]
    kind: str
    name: str
    owns: bool
    when: str
    source: Src
    namespace: str | None = None


@dataclass(frozen=True)
class Expects:
    """Something that must exist for the binary to work, and who makes it."""

    what: str
    made_by: str
    source: Src


@dataclass(frozen=True)
class Contract:
    """One container's runtime contract."""

    key: str
    title: str
    upstream: str
    """The pinned upstream release, e.g. `karmada-io/karmada v1.18.2`."""
    match: Match
    rendered_by: str
    """Which module renders it (for the doc)."""
    runs_in: str = "host cluster, namespace karmada-system"
    """Where it runs (the reachability table's source/destination)."""
    env: tuple[EnvVar, ...] = ()
    files: tuple[FileFlag, ...] = ()
    listeners: tuple[Listener, ...] = ()
    connections: tuple[Connection, ...] = ()
    uses: tuple[Use, ...] = ()
    makes: tuple[Makes, ...] = ()
    expects: tuple[Expects, ...] = ()
    exits: tuple[Fact, ...] = ()
    facts: tuple[Fact, ...] = ()
    kubeconfig_flags: tuple[str, ...] = ("kubeconfig",)
    """Flags whose file is a kubeconfig (its server is dialled, its credential is the identity)."""


class View(Protocol):
    """What a contract function may ask about one rendered container (tests/contract implements it)."""

    def flag(self, name: str | None) -> str | None: ...
    def env(self, name: str | None) -> str | None: ...
    def file(self, path: str) -> str | None: ...
    def api_secret(self, name: str | None, key: str) -> str | None:
        """A key of a Secret the container reads through its own cluster's API, in its own namespace."""
        ...
    def clusters(self) -> Sequence[tuple[str, str]]: ...
    def objects(self, api: str, kind: str) -> Sequence[Mapping[str, object]]: ...


# ------------------------------------------------------------------------------------------ helpers

_HOSTPORT = re.compile(r"^(?P<host>\[[^]]*]|[^:]*):(?P<port>\d+)$")


def hostport(value: str) -> tuple[str, int] | None:
    """`$(POD_IP):8080` / `:8080` / `0.0.0.0:10357` / `localhost:8888` -> (host, port); `0` -> None."""
    if value in ("0", ""):
        return None
    m = _HOSTPORT.match(value)
    if not m:
        raise ValueError(f"{value!r} is not host:port")
    return m.group("host"), int(m.group("port"))


def url_endpoint(url: str, scheme_default: str = "") -> Endpoint:
    parts = urlsplit(url)
    if not parts.hostname:
        raise ValueError(f"{url!r} has no host")
    default_port = {"https": 443, "http": 80}.get(parts.scheme, 0)
    return Endpoint(parts.hostname, parts.port or default_port, (parts.scheme or scheme_default).upper(),
                    parts.path)


def kubeconfig_server(text: str | None) -> str | None:
    """The server URL of a one-cluster kubeconfig (YAML or JSON), None if unknown."""
    if not text:
        return None
    doc = yaml.safe_load(text)
    clusters = doc.get("clusters") or [] if isinstance(doc, dict) else []
    return clusters[0]["cluster"]["server"] if clusters else None


def from_kubeconfig(flag: str, fallback: str | None = None) -> Callable[[View], Sequence[Endpoint]]:
    """Resolver: the server of the kubeconfig file named by `flag`."""
    def resolve(view: View) -> Sequence[Endpoint]:
        path = view.flag(flag) or fallback
        server = kubeconfig_server(view.file(path)) if path else None
        return [url_endpoint(server)] if server else []
    return resolve


def from_url_flag(flag: str, many: bool = False) -> Callable[[View], Sequence[Endpoint]]:
    """Resolver: the URL(s) a flag names (comma-separated when `many`)."""
    def resolve(view: View) -> Sequence[Endpoint]:
        value = view.flag(flag)
        if not value:
            return []
        return [url_endpoint(u) for u in (value.split(",") if many else [value])]
    return resolve


def substitute(template: str, values: Mapping[str, str]) -> str:
    """`karmada-es-<cluster>` with {"cluster": "a"} -> `karmada-es-a`."""
    return re.sub(r"<([a-z-]+)>", lambda m: values.get(m.group(1), m.group(0)), template)

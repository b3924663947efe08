"""The contract checks: each takes a `Fleet` and returns one line per violation (empty: the plan honours it).

Generic where they can be: `$(VAR)` references need no data at all; probes, files, dials, ownership and RBAC
read the container's contract (components/*/contract.py) and the rendered objects. Each check is shown to fail
on a mutated plan in the test beside it.
"""

from __future__ import annotations

import base64
import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

from components.hetzner import cloud_init
from components.hetzner import contract as k3s_contract
from components.karmada import contract as karmada_contract
from components.kube.contract import Endpoint, FileFlag, Listener, substitute
from tests.contract.fleet import Container, Fleet, Pod, secret_keys, secret_text

KUBELET_ENV = {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}
"""Set by kubelet in every container (Kubernetes 'Container environment'); in-cluster config also needs the token."""


# ------------------------------------------------------------------------------------------- coverage


def check_coverage(fleet: Fleet) -> list[str]:
    """Every rendered container has exactly one contract."""
    out = []
    for c in fleet.containers():
        found = c.contracts()
        if len(found) != 1:
            out.append(f"{c.where}: {len(found)} contracts match (image {c.body.get('image')}, command "
                       f"{c.body.get('command')}); each container needs exactly one")
    return out


# ------------------------------------------------------------------------------------------------ env


def check_env(fleet: Fleet) -> list[str]:
    """Every `$(VAR)` in command/args is defined in the container's env (kubelet leaves others literal), every env
    var the binary requires is set, and every secretKeyRef points at a key the plan creates."""
    out = []
    for c in fleet.containers():
        names = c.env_names()
        text = [*[str(x) for x in c.body.get("command") or []], *c.args]
        for var in sorted({m for t in text for m in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", t)} - names):
            out.append(f"{c.where}: $({var}) in its args, but the container defines no env {var}")
        contract = c.contract
        for need in contract.env if contract else ():
            if not need.required:
                continue
            if need.name in KUBELET_ENV:
                if not has_sa_token(c):
                    out.append(f"{c.where}: needs in-cluster config ({need.name}) but the container mounts no "
                               "service account token")
            elif need.name not in names:
                out.append(f"{c.where}: the binary requires env {need.name} ({need.why}); not set")
        for e in c.body.get("env") or []:
            ref = (e.get("valueFrom") or {}).get("secretKeyRef")
            if ref:
                found = fleet.where(c.pod.api, "Secret", ref["name"], c.pod.namespace)
                if not found or ref["key"] not in secret_keys(found[0].body):
                    out.append(f"{c.where}: env {e['name']} from Secret {ref['name']} key {ref['key']}, which the "
                               "plan does not create")
    return out


# --------------------------------------------------------------------------------------------- probes


def _listening(c: Container) -> list[tuple[Listener, int, str]]:
    contract = c.contract
    out = []
    for listener in contract.listeners if contract else ():
        bound = listener.port(c.view())
        if bound is not None:
            out.append((listener, bound[0], bound[1]))
    return out


def _probe_port(c: Container, port: Any) -> int | None:
    if isinstance(port, int | float):
        return int(port)
    for p in c.body.get("ports") or []:
        if p.get("name") == port:
            return int(p["containerPort"])
    return None


def _serves(listener: Listener, path: str, c: Container) -> tuple[bool, bool]:
    """(served, anonymous) for `path` on `listener`."""
    anonymous_paths = listener.anonymous_paths(c.view()) if listener.anonymous_paths else None
    served, anonymous = False, False
    for s in listener.served:
        if path == s.path or (s.subtree and path.startswith(s.path.rstrip("/") + "/")):
            served = True
            anonymous = anonymous or s.anonymous
    if served and anonymous_paths is not None:
        anonymous = anonymous or "*" in anonymous_paths or path in anonymous_paths
    return served, anonymous


def check_probes(fleet: Fleet) -> list[str]:
    """Every probe targets a port the binary listens on, a path it serves there, the scheme it speaks, and (since
    kubelet sends no credential) a path it serves without authentication."""
    out = []
    for c in fleet.containers():
        if c.contract is None:
            continue
        listening = _listening(c)
        for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
            probe = c.body.get(kind)
            if not probe:
                continue
            action = probe.get("httpGet") or probe.get("tcpSocket") or probe.get("grpc")
            if action is None:  # an exec probe runs a command in the container; it dials no listener of ours
                continue
            port = _probe_port(c, action.get("port"))
            here = [(lis, scheme) for lis, p, scheme in listening if p == port]
            if not here:
                out.append(f"{c.where}: {kind} on port {action.get('port')}, where {c.contract.key} listens on "
                           f"nothing ({', '.join(f'{lis.name} {p}' for lis, p, _ in listening) or 'no listeners'})")
                continue
            if "grpc" in probe:
                out.append(f"{c.where}: {kind} is a gRPC probe; {c.contract.key} registers no gRPC health service")
                continue
            if "httpGet" not in probe:
                continue
            listener, scheme = here[0]
            want = str(action.get("scheme", "HTTP")).upper()
            path = str(action.get("path", "/"))
            if scheme not in ("HTTP", "HTTPS") or scheme != want:
                out.append(f"{c.where}: {kind} speaks {want} to the {listener.name} listener ({port}), which "
                           f"speaks {scheme}")
                continue
            served, anonymous = _serves(listener, path, c)
            if not served:
                out.append(f"{c.where}: {kind} GET {path} on {port}, which {c.contract.key}'s {listener.name} "
                           f"listener does not serve ({', '.join(s.path for s in listener.served) or 'nothing'}; "
                           f"{listener.source})")
            elif not anonymous:
                out.append(f"{c.where}: {kind} GET {path} on {port} needs a credential (kubelet sends none)")
    return out


# ---------------------------------------------------------------------------------------------- files


def _file_paths(c: Container, f: FileFlag) -> list[tuple[str, str]]:
    """(path, mode) the container will touch for one FileFlag; empty when not used."""
    if f.position is not None:
        pos = c.positional
        return [(pos[f.position], f.mode)] if len(pos) > f.position else []
    value = c.flags.get(f.flag) if f.flag else None
    if value is None:
        value = f.default if f.flag is None or f.names else None
    if value is None or value in f.ignore or not value.startswith("/"):
        return []
    if f.names:
        return [(f"{value}/{c.flags.get(flag, default)}", "read") for flag, default in f.names]
    return [(value, f.mode)]


def check_files(fleet: Fleet) -> list[str]:
    """Every file a flag names is mounted at that exact path, from a volume that has that key; written paths are
    on a writable mount (the root file system is read-only)."""
    out = []
    for c in fleet.containers():
        contract = c.contract
        if contract is None or contract.key == k3s_contract.K3S.key:
            continue
        for f in contract.files:
            for path, mode in _file_paths(c, f):
                out += _check_path(c, path, mode, f)
    return out


def _check_path(c: Container, path: str, mode: str, f: FileFlag) -> list[str]:
    found = c.mount_for(path)
    what = f"--{f.flag}" if f.flag else "its argument"
    if found is None:
        if mode == "read":
            return [f"{c.where}: {what} names {path}, which no volume mounts ({f.why})"]
        if (c.body.get("securityContext") or {}).get("readOnlyRootFilesystem"):
            return [f"{c.where}: {what} writes {path} on the read-only root file system"]
        return []
    mount, volume, inner = found
    if mode != "read":
        if mount.get("readOnly") or "secret" in volume or "configMap" in volume:
            return [f"{c.where}: {what} writes {path}, on the read-only mount {mount['mountPath']}"]
        return []
    if "secret" in volume or "configMap" in volume:
        if not inner:
            return [f"{c.where}: {what} names {path}, the mount point itself, not a file in it"]
        source = c.volume_source(volume)
        key = c.volume_key(volume, inner)
        if source is None:
            return [f"{c.where}: {what} names {path}, from a volume whose Secret/ConfigMap the plan does not create"]
        if key is None:
            return [f"{c.where}: {what} names {path}, but volume {volume['name']} ({source.kind} {source.name}) "
                    f"projects no {inner} (items)"]
        if key not in secret_keys(source.body):
            return [f"{c.where}: {what} names {path}, but {source.kind} {source.name} has no key {key}"]
        return []
    if "projected" in volume:
        paths = set()
        for src in volume["projected"].get("sources") or []:
            if "serviceAccountToken" in src:
                paths.add(src["serviceAccountToken"].get("path"))
            for kind in ("configMap", "secret", "downwardAPI"):
                paths |= {i.get("path") for i in (src.get(kind) or {}).get("items") or []}
        if inner not in paths:
            return [f"{c.where}: {what} names {path}, but the projected volume {volume['name']} has no {inner}"]
        return []
    if "emptyDir" in volume:
        writers = [o for o in _pod_containers(c) if o.body is not c.body
                   for g in (o.contract.files if o.contract else ()) for p, m in _file_paths(o, g)
                   if m == "write" and p == path]
        if not writers:
            return [f"{c.where}: {what} reads {path} from an emptyDir nothing in the pod writes"]
    return []


def _pod_containers(c: Container) -> list[Container]:
    return [Container(c.fleet, c.pod, body, init) for body, init in c.pod.containers()]


# ---------------------------------------------------------------------------------------------- dials


def _svc_name(host: str) -> tuple[str, str, str | None] | None:
    """`svc.ns.svc[.cluster.local]` -> (svc, ns, None); `pod.svc.ns.svc.cluster.local` -> (svc, ns, pod)."""
    parts = host.split(".")
    for suffix in (["svc", "cluster", "local"], ["svc"]):
        if parts[-len(suffix):] == suffix:
            head = parts[: -len(suffix)]
            if len(head) == 2:
                return head[0], head[1], None
            if len(head) == 3:
                return head[1], head[2], head[0]
    return None


def _selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _service_backends(fleet: Fleet, api: str, svc: Mapping[str, Any], port: int, pod_name: str | None
                      ) -> tuple[list[Container], int | None, str]:
    """The containers behind `svc`'s port (and the target port number), or a reason why there are none."""
    spec = svc["spec"]
    ns = svc["metadata"]["namespace"]
    entry = next((p for p in spec.get("ports") or [] if int(p["port"]) == port), None)
    if entry is None:
        return [], None, f"Service {ns}/{svc['metadata']['name']} has no port {port}"
    pods = [p for p in fleet.pods() if p.api == api and p.namespace == ns
            and _selects(spec.get("selector") or {}, p.labels)]
    if pod_name is not None:
        pods = [p for p in pods if p.owner.kind == "StatefulSet" and p.owner.body["spec"].get("serviceName")
                == svc["metadata"]["name"] and _ordinal_ok(p, pod_name)]
    if not pods:
        return [], None, f"Service {ns}/{svc['metadata']['name']} selects no pod the plan creates" + (
            f" named {pod_name}" if pod_name else "")
    target = entry.get("targetPort", port)
    backends = []
    number: int | None = None
    for p in pods:
        for body, init in p.containers():
            c = Container(fleet, p, body, init)
            number = _probe_port(c, target) if isinstance(target, str) else int(target)
            backends.append(c)
    return backends, number, ""


def _ordinal_ok(pod: Pod, pod_name: str) -> bool:
    base, _, ordinal = pod_name.rpartition("-")
    return base == pod.owner.name and ordinal.isdigit() and int(ordinal) < int(pod.owner.body["spec"]["replicas"])


def resolve(fleet: Fleet, origin: Container, ep: Endpoint, api: str) -> str:
    """Empty if `ep` reaches a listener the plan creates, else why not."""
    if ep.host in ("localhost", "127.0.0.1", "::1"):
        for other in _pod_containers(origin):
            if any(p == ep.port for _, p, _ in _listening(other)) and other.body is not origin.body:
                return ""
        return f"nothing in its pod listens on localhost:{ep.port}"
    named = _svc_name(ep.host)
    if named is None:
        if fleet.public_endpoint(ep.host, ep.port):
            return ""
        found = fleet.node_port_service(ep.host, ep.port)
        if found is None:
            return (f"no DNS record or load balancer of the plan takes {ep.host}:{ep.port}, nor a NodePort on hub "
                    "servers whose firewall lets it in")
        svc, service_port = found
        return resolve_service(fleet, origin, svc, Endpoint(ep.host, service_port, ep.scheme, ep.path), "host", None)
    name, ns, pod_name = named
    services = fleet.where(api, "Service", name, ns)
    if not services:
        return f"no Service {ns}/{name} in the {api} cluster"
    return resolve_service(fleet, origin, services[0].body, ep, api, pod_name)


def resolve_service(fleet: Fleet, origin: Container, svc: Mapping[str, Any], ep: Endpoint, api: str,
                    pod_name: str | None) -> str:
    """Empty if `svc`'s port `ep.port` reaches a listener (serving `ep.path`) of the pods it selects."""
    name, ns = svc["metadata"]["name"], svc["metadata"]["namespace"]
    if svc["spec"].get("type") == "ExternalName":
        return resolve(fleet, origin, Endpoint(svc["spec"]["externalName"], ep.port, ep.scheme, ep.path), api)
    backends, target, why = _service_backends(fleet, api, svc, ep.port, pod_name)
    if why:
        return why
    listeners = [(c, lis, scheme) for c in backends for lis, p, scheme in _listening(c) if p == target]
    if not listeners:
        return f"Service {ns}/{name}:{ep.port} -> {target}, where no container of its pods listens"
    if ep.path and not any(_serves(lis, ep.path, c)[0] for c, lis, _ in listeners):
        return f"Service {ns}/{name}:{ep.port} -> {target} does not serve {ep.path}"
    return ""


def check_dials(fleet: Fleet) -> list[str]:
    """Every name a component dials resolves to something the plan creates: Services (ports, selected pods that
    listen on the target port and serve the path), per-pod etcd names, localhost sidecars, and the hub's public
    name/address (DNS record + load balancer service, or DNS record + hub servers' firewall + a NodePort
    Service, followed to its pods)."""
    out = []
    for c in fleet.containers():
        contract = c.contract
        if contract is None:
            continue
        api = "host" if c.pod.api == "host" else c.pod.api
        for conn in contract.connections:
            if conn.external or conn.resolve is None:
                continue
            endpoints = conn.resolve(c.view())
            for ep in endpoints:
                why = resolve(fleet, c, ep, api)
                if why:
                    out.append(f"{c.where}: dials {ep.host}:{ep.port}{ep.path} ({conn.via}): {why}")
    return out


# ------------------------------------------------------------------------------------------ ownership


def _instances(pattern: str, c: Container | None, fleet: Fleet) -> list[str]:
    if "<each-cluster>" in pattern:
        return [substitute(pattern, {"each-cluster": n}) for n, _ in fleet.clusters()]
    if "<pull-cluster>" in pattern:
        return [substitute(pattern, {"pull-cluster": n}) for n, mode in fleet.clusters() if mode == "Pull"]
    if "<pull-token-id>" in pattern:  # a Pull member's bootstrap token id (member_docs.token_id)
        from components.fleet.member_docs import token_id

        return [substitute(pattern, {"pull-token-id": token_id(n)}) for n, mode in fleet.clusters() if mode == "Pull"]
    if c is None:
        return [pattern]
    return [substitute(pattern, {"cluster": c.flags.get("cluster-name", "<cluster>")})]


def _api_of(makes_api: str, c: Container) -> str:
    return c.pod.api if makes_api == "member" else makes_api


def check_ownership(fleet: Fleet, exceptions: Sequence[tuple[str, str, str, str]] = karmada_contract.PULUMI_MAY_OWN
                    ) -> list[str]:
    """No object a binary creates and manages itself (`Makes.owns`) is also a Pulumi resource, except the listed,
    reasoned exceptions."""
    allowed = set()
    for api, kind, pattern, _ in exceptions:
        allowed |= {(api, kind, name) for name in _instances(pattern, None, fleet)}
    out = []
    seen: set[tuple[str, str, str | None, str]] = set()
    for c in fleet.containers():
        for m in (c.contract.makes if c.contract else ()):
            if not m.owns:
                continue
            api = _api_of(m.api, c)
            for name in _instances(m.name, c, fleet):
                for o in fleet.where(api, m.kind, None, None):
                    if o.made_by or not fnmatch.fnmatchcase(o.name, name) or (m.namespace is not None and
                                                                 o.namespace != m.namespace):
                        continue
                    key = (api, m.kind, o.namespace, o.name)
                    if key in seen or (api, m.kind, o.name) in allowed:
                        continue
                    seen.add(key)
                    out.append(f"{o.stack}: {api} {m.kind} {o.namespace or ''}/{o.name} is a Pulumi resource, but "
                               f"{c.contract.key} creates it itself ({m.when}; {m.source})")  # type: ignore[union-attr]
    return out


# -------------------------------------------------------------------------------------------- RBAC


def cert_identity(pem: str) -> tuple[str, list[str]]:
    cert = x509.load_pem_x509_certificate(pem.encode())
    cn = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    orgs = [str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    return str(cn[0].value) if cn else "", orgs


SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def token_path(c: Container) -> str:
    """Where the binary reads its service account token: a flag of its contract whose default is the in-cluster
    token (e.g. --host-token-file), else client-go's SA_DIR/token."""
    for f in c.contract.files if c.contract else ():
        if f.default and f.default.endswith("serviceaccount/token"):
            return (c.flags.get(f.flag) if f.flag else None) or f.default
    return f"{SA_DIR}/token"


def has_sa_token(c: Container) -> bool:
    """The service account token where the binary reads it: automounted (SA_DIR), or a projected
    serviceAccountToken volume mounted at that path."""
    path = token_path(c)
    if c.pod.spec.get("automountServiceAccountToken") is not False and path == f"{SA_DIR}/token":
        return True
    found = c.mount_for(path)
    if found is None:
        return False
    _, volume, inner = found
    sources = (volume.get("projected") or {}).get("sources") or []
    return any((src.get("serviceAccountToken") or {}).get("path") == inner for src in sources)


def identity(c: Container, credential: str) -> tuple[str, list[str]] | None:
    """(user, groups) the container's requests carry; None when it cannot be known offline."""
    contract = c.contract
    if credential == "serviceaccount":
        if not has_sa_token(c):
            return "system:anonymous", ["system:unauthenticated"]
        sa = c.pod.spec.get("serviceAccountName", "default")
        return f"system:serviceaccount:{c.pod.namespace}:{sa}", [
            "system:serviceaccounts", f"system:serviceaccounts:{c.pod.namespace}", "system:authenticated"]
    if credential == "bootstrap-token":
        return bootstrap_identity(c)
    if credential == "client-cert":
        flag = next((f.flag for f in (contract.files if contract else ()) if f.flag and f.flag.endswith("cert-file")),
                    "cert-file")
        text = c.file_text(c.flags.get(flag, ""))
        if not text:
            return None
        user, groups = cert_identity(text)
        return user, [*groups, "system:authenticated"]
    if credential == "kubeconfig" and contract is not None and contract.kubeconfig_flags:
        text = c.file_text(c.flags.get(contract.kubeconfig_flags[0], ""))
        if not text:
            return None
        doc = yaml.safe_load(text)
        user = (doc.get("users") or [{}])[0].get("user", {})
        data = user.get("client-certificate-data")
        if not data:
            return None
        name, groups = cert_identity(base64.b64decode(data).decode())
        return name, [*groups, "system:authenticated"]
    return None


def bootstrap_identity(c: Container) -> tuple[str, list[str]] | None:
    """The kube-apiserver's bootstrap token authenticator (k8s.io/cluster-bootstrap token/api types.go) on the
    token the container reads from its `--bootstrap-secret`: the hub's `kube-system/bootstrap-token-<id>` must
    exist, be of the bootstrap type, allow authentication and hold the same secret half."""
    token = c.view().api_secret(c.flags.get("bootstrap-secret"), "token")
    if not token or "." not in token:
        return None
    token_id, _, secret_half = token.partition(".")
    found = c.fleet.where("karmada", "Secret", f"bootstrap-token-{token_id}", "kube-system")
    if not found:
        return None
    body = found[0].body
    if body.get("type") != "bootstrap.kubernetes.io/token" or secret_text(body, "token-secret") != secret_half or \
            secret_text(body, "usage-bootstrap-authentication") != "true":
        return "system:anonymous", ["system:unauthenticated"]
    extra = [g for g in (secret_text(body, "auth-extra-groups") or "").split(",") if g]
    return f"system:bootstrap:{token_id}", ["system:bootstrappers", *extra, "system:authenticated"]


def _rbac_objects(fleet: Fleet, api: str) -> list[Mapping[str, Any]]:
    objs = [o.body for o in fleet.objects if o.api == api and o.kind in
            ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")]
    return [*objs, *karmada_contract.BUILTIN_RBAC] if api == "karmada" else objs


def allowed(rbac: Iterable[Mapping[str, Any]], user: str, groups: Sequence[str], verb: str, group: str,
            resource: str, namespace: str | None, name: str | None) -> bool:
    """RBAC as the authorizer evaluates it: a binding's subject matches, its role has a rule covering the request;
    a RoleBinding grants only in its namespace (never cluster-scoped or all-namespace requests)."""
    rbac = list(rbac)
    roles = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in rbac
             if o["kind"] in ("Role", "ClusterRole")}
    for b in rbac:
        if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(_subject(s, user, groups, b["metadata"].get("namespace")) for s in b.get("subjects") or []):
            continue
        binding_ns = b["metadata"].get("namespace")
        if b["kind"] == "RoleBinding" and namespace != binding_ns:
            continue
        ref = b["roleRef"]
        role = roles.get((ref["kind"], binding_ns if ref["kind"] == "Role" else None, ref["name"]))
        if role is None:
            continue
        for rule in role.get("rules") or []:
            if "nonResourceURLs" in rule:
                continue
            if _covers(rule.get("apiGroups"), group) and _covers(rule.get("resources"), resource) and \
                    _covers(rule.get("verbs"), verb) and (not rule.get("resourceNames") or
                                                         (name is not None and name in rule["resourceNames"])):
                return True
    return False


def _covers(values: Sequence[str] | None, want: str) -> bool:
    return bool(values) and ("*" in values or want in values or
                             (want.count("/") == 1 and f"{want.split('/')[0]}/*" in values))


def _subject(s: Mapping[str, Any], user: str, groups: Sequence[str], binding_ns: str | None) -> bool:
    if s["kind"] == "User":
        return s["name"] == user
    if s["kind"] == "Group":
        return s["name"] in groups
    if s["kind"] == "ServiceAccount":
        return user == f"system:serviceaccount:{s.get('namespace', binding_ns)}:{s['name']}"
    return False


def check_rbac(fleet: Fleet) -> tuple[list[str], list[str]]:
    """Every verb a client uses is granted to its identity by the rendered Roles/ClusterRoles/bindings (and the
    kube-apiserver's bootstrap RBAC). Returns (violations, not checked) — identities that cannot be known
    offline (a member's CAPI admin kubeconfig) are reported, never passed."""
    out, skipped = [], []
    for c in fleet.containers():
        contract = c.contract
        for use in contract.uses if contract else ():
            if use.credential == "member-admin":
                skipped.append(f"{c.where}: {use.api} {use.resource} via the member's CAPI kubeconfig")
                continue
            who = identity(c, use.credential)
            if who is None:
                out.append(f"{c.where}: uses {use.resource} in the {use.api} API, but its identity "
                           f"({use.credential}) cannot be read from the plan")
                continue
            user, groups = who
            api = "karmada" if use.api == "karmada" else c.pod.api
            rbac = _rbac_objects(fleet, api)
            namespaces = _instances(use.namespace, c, fleet) if use.namespace else [None]
            names = [n for pattern in use.names for n in _instances(pattern, c, fleet)] or [None]
            for verb in use.verbs:
                for ns in namespaces:
                    for name in names:
                        if not allowed(rbac, user, groups, verb, use.group, use.resource, ns, name):
                            out.append(f"{c.where}: {user} may not {verb} {use.group or 'core'}/{use.resource}"
                                       f"{f' {name}' if name else ''} in {ns or 'any namespace'} ({use.api} API), "
                                       f"which {contract.key} does ({use.source})")  # type: ignore[union-attr]
    return out, skipped


# ---------------------------------------------------------------------------------------------- k3s


def check_k3s(fleet: Fleet) -> list[str]:
    """Every hub server's k3s config uses only server flag names, names a token file the user-data writes, and the
    first server writes the whole pre-generated CA set."""
    out = []
    for stack, _, inputs in fleet.hcloud:
        user_data = inputs.get("userData")
        if not isinstance(user_data, str) or not user_data.startswith("#cloud-config"):
            continue
        doc = yaml.safe_load(user_data.partition("\n")[2]) or {}
        files = {f["path"]: f for f in doc.get("write_files") or []}
        where = f"{stack}: server {inputs.get('name')}"
        if cloud_init.CONFIG_PATH not in files:
            out.append(f"{where}: no {cloud_init.CONFIG_PATH}")
            continue
        config = yaml.safe_load(files[cloud_init.CONFIG_PATH]["content"]) or {}
        for key in sorted(set(config) - k3s_contract.SERVER_CONFIG_KEYS):
            out.append(f"{where}: config key {key!r} is not a k3s server flag")
        for path in sorted(p for p in files if p.startswith(cloud_init.DROPIN_DIR + "/")):
            for key in sorted(set(yaml.safe_load(files[path]["content"]) or {}) - k3s_contract.SERVER_CONFIG_KEYS):
                out.append(f"{where}: {path} key {key!r} is not a k3s server flag")
        if config.get("token-file") not in files:
            out.append(f"{where}: token-file {config.get('token-file')} is not written by its user-data")
        # k3s starts only after the private address is there (cloud_init.private_net_script), and the first server
        # of a new cluster decides how it starts (cloud_init.join_mode_script) right after: both are ExecStartPre
        # steps of the k3s unit (a failed one fails the start; a failed runcmd line does not stop the next)
        decides = cloud_init.JOIN_MODE_PATH in files
        unit = files.get(cloud_init.UNIT_PATH, {}).get("content", "")
        pre = [line.split("=", 1)[1] for line in unit.splitlines() if line.startswith("ExecStartPre=")]
        if cloud_init.PRIVATE_NET_PATH not in pre or cloud_init.PRIVATE_NET_PATH not in files:
            out.append(f"{where}: k3s may start before its private address is on an interface")
        join_unit = files.get(cloud_init.JOIN_UNIT_DROPIN, {}).get("content", "")
        if decides and f"ExecStartPre={cloud_init.JOIN_MODE_PATH}" not in join_unit.splitlines():
            out.append(f"{where}: writes {cloud_init.JOIN_MODE_PATH} but k3s does not run it before it starts")
        if [cloud_init.JOIN_MODE_PATH] in (doc.get("runcmd") or []):
            out.append(f"{where}: runs {cloud_init.JOIN_MODE_PATH} from runcmd, where a refusal does not stop k3s")
        if decides and ("server" in config or "cluster-init" in config):
            out.append(f"{where}: decides its join mode at boot, but config.yaml already sets it")
        if config.get("cluster-init") or decides:
            missing = [p for p in k3s_contract.REQUIRED_CA_FILES if p not in files]
            if missing:
                out.append(f"{where}: may cluster-init without the pre-generated CA files {missing}")
        elif "server" not in config:
            out.append(f"{where}: neither cluster-init nor server: it would start a cluster of its own")
    return out


ALL_CHECKS = ("coverage", "env", "probes", "files", "dials", "ownership", "rbac", "k3s")

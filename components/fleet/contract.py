"""The runtime contract of the two containers a Pull member runs besides its agent: the join Job and the restart
CronJob, both `agents/pull_join.py` on the pinned Python image (member_docs.join_objects, restart_objects).

The join is what makes the agent's credential: it reads the bootstrap Secret PullJoin wrote, creates a CSR at the
hub with that token and writes Secret `karmada-system/karmada-kubeconfig`, which the agent mounts. That Secret is
not a Pulumi resource (its key is made in the member and is in no state), so the contract checks model it as
the join writes it (tests/contract/fleet.py, with the script's own kubeconfig and subject) and check that the
agent's mount, identity and hub address follow from it.
"""

from __future__ import annotations

from collections.abc import Sequence

from components.fleet import csr_approver_docs as approver
from components.fleet import member_docs as docs
from components.karmada.contract import APISERVER_TO, k, kube
from components.kube.contract import (
    Connection,
    Contract,
    Endpoint,
    EnvVar,
    Expects,
    Fact,
    FileFlag,
    Listener,
    Makes,
    Match,
    Served,
    Src,
    Use,
    View,
    from_url_flag,
    url_endpoint,
)

_SCRIPT = Src("karmada-hub", "this checkout", "agents/pull_join.py", "join")
_APPROVER = Src("karmada-hub", "this checkout", "agents/agent_csr_approver.py", "decide")
_APPROVER_MAIN = Src("karmada-hub", "this checkout", "agents/agent_csr_approver.py", "main")
_RESTART = Src("karmada-hub", "this checkout", "agents/pull_join.py", "restart")
_MEMBER_API = Src("karmada-hub", "this checkout", "agents/pull_join.py", "member_api")
_ROTATION = k("pkg/controllers/certificate/cert_rotation_controller.go", "syncCertRotation")
_TOKEN_AUTH = Src("karmada-io/karmada", "v1.18.2", "vendor/k8s.io/cluster-bootstrap/token/api/types.go",
                  "BootstrapUserPrefix")
_SA_FILES = (
    FileFlag("member-token-file", "read", "the pod's service account token (its member)", _MEMBER_API,
             default="/var/run/secrets/kubernetes.io/serviceaccount/token"),
    FileFlag("member-ca-file", "read", "the member's CA", _MEMBER_API,
             default="/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"),
)
_IN_CLUSTER = EnvVar("KUBERNETES_SERVICE_HOST", True, "the member API when --member-server is empty (in-cluster)",
                     _MEMBER_API)
_MEMBER = Connection("member kube-apiserver", "443", "HTTPS (service account token)", "in-cluster",
                     "its own Secrets (and, for restart, the agent's pods and Deployment)", _MEMBER_API, external=True)


def _hub_from_bootstrap_secret(view: View) -> Sequence[Endpoint]:
    """The `server` of the bootstrap Secret the join reads (PullJoin writes the hub's karmadaApiEndpoint)."""
    server = view.api_secret(view.flag("bootstrap-secret"), "server")
    return [url_endpoint(server)] if server else []


PULL_JOIN = Contract(
    key="pull-join", title="Pull join (agents/pull_join.py join)",
    upstream="this program, on python:3.12 (with the image's openssl)",
    match=Match(script=docs.JOIN_SCRIPT, subcommand="join"),
    rendered_by="components/fleet/member_docs.py join_objects", runs_in="each Pull member, namespace karmada-system",
    env=(_IN_CLUSTER,),
    files=_SA_FILES,
    connections=(
        Connection(APISERVER_TO, "32443", "HTTPS (bootstrap token, hub CA pinned)",
                   "the bootstrap Secret's `server` (the hub's karmadaApiEndpoint: NodePort on the hub servers)",
                   "creates its CSR and polls it until it is signed", _SCRIPT, resolve=_hub_from_bootstrap_secret),
        _MEMBER,
    ),
    uses=(
        Use("member", "", "secrets", ("get",), _SCRIPT, namespace=docs.AGENT_NAMESPACE,
            names=(docs.AGENT_KUBECONFIG_SECRET, docs.AGENT_BOOTSTRAP_SECRET), credential="serviceaccount"),
        Use("member", "", "secrets", ("update",), _SCRIPT, namespace=docs.AGENT_NAMESPACE,
            names=(docs.AGENT_KUBECONFIG_SECRET,), credential="serviceaccount"),
        Use("member", "", "secrets", ("delete",), _SCRIPT, namespace=docs.AGENT_NAMESPACE,
            names=(docs.AGENT_BOOTSTRAP_SECRET,), credential="serviceaccount"),
        Use("member", "", "secrets", ("create",), _SCRIPT, namespace=docs.AGENT_NAMESPACE,
            credential="serviceaccount"),
        Use("karmada", "certificates.k8s.io", "certificatesigningrequests", ("create", "get"),
            Src("karmada-hub", "this checkout", "agents/pull_join.py", "request_certificate"),
            credential="bootstrap-token"),
    ),
    makes=(
        Makes("member", "Secret", docs.AGENT_KUBECONFIG_SECRET, True, "when the member holds no kubeconfig for the "
              "current hub (its server and CA those of the bootstrap Secret, its client certificate verified by "
              "that CA with a tenth of its life left): created (a stale one replaced), key `karmada-kubeconfig`; "
              "afterwards the agent's certRotation rewrites it in place", _SCRIPT, namespace=docs.AGENT_NAMESPACE),
        Makes("karmada", "CertificateSigningRequest", "<cluster>-*", True, "one per join (generateName); "
              "kube-controller-manager's csrcleaner removes it", _SCRIPT),
    ),
    expects=(
        Expects("Secret `karmada-system/karmada-agent-bootstrap` (token, server, ca.crt) and the hub's "
                "`kube-system/bootstrap-token-<id>`, an hour's token", "PullJoin, at apply time (no state)", _SCRIPT),
        Expects("the hub's bootstrap RBAC: the token group may create/get CSRs (system:node-bootstrapper)",
                "the hub stack (member_docs.bootstrap_rbac)", _TOKEN_AUTH),
        Expects("the hub's agent CSR approver (approves only this member's CN for this member's token) and "
                "kube-controller-manager's csrsigning (kubernetes.io/kube-apiserver-client) running",
                "the hub stack (csr_approver_docs.py)", _APPROVER),
        Expects("an `openssl` binary in the image (EC P-256 key and CSR); python:3.12-slim-bookworm installs "
                "`ca-certificates`, which depends on `openssl`", "the pinned image",
                Src("docker-library/python", "23c83c5a", "3.12/slim-bookworm/Dockerfile", pinned=False)),
    ),
    exits=(
        Fact("missing argument (argparse, exit 2); no bootstrap Secret, a Denied/Failed CSR, no certificate within "
             "--timeout, a certificate for another key, an API error (exit 1, one line, never a token or key)",
             _SCRIPT),
    ),
    facts=(
        Fact("the key is made in the pod and leaves it only inside the member's Secret; the CSR asks for CN "
             "`system:karmada:agent:<cluster>`, O `system:karmada:agents`, client auth, --cert-seconds", _SCRIPT),
        Fact("the bootstrap token authenticates as `system:bootstrap:<id>` in groups `system:bootstrappers` and "
             "its `auth-extra-groups`", _TOKEN_AUTH),
        Fact("the bootstrap group's CSR rights are kube-apiserver's built-in system:node-bootstrapper "
             "(create, get, list, watch)", kube("plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go",
                                                "ClusterRoles")),
    ),
    kubeconfig_flags=(),
)

AGENT_RESTART = Contract(
    key="pull-agent-restart", title="Pull agent restart (agents/pull_join.py restart)",
    upstream="this program, on python:3.12 (with the image's openssl)",
    match=Match(script=docs.JOIN_SCRIPT, subcommand="restart"),
    rendered_by="components/fleet/member_docs.py restart_objects", runs_in="each Pull member, namespace karmada-system",
    env=(_IN_CLUSTER,),
    files=_SA_FILES,
    connections=(_MEMBER,),
    uses=(
        Use("member", "", "secrets", ("get",), _RESTART, namespace=docs.AGENT_NAMESPACE,
            names=(docs.AGENT_KUBECONFIG_SECRET,), credential="serviceaccount"),
        Use("member", "", "pods", ("list",), _RESTART, namespace=docs.AGENT_NAMESPACE, credential="serviceaccount"),
        Use("member", "apps", "deployments", ("get", "patch"), _RESTART, namespace=docs.AGENT_NAMESPACE,
            names=(docs.AGENT_NAME,), credential="serviceaccount"),
    ),
    expects=(
        Expects("the agent's kubeconfig Secret", "the join (then the agent's certRotation)", _ROTATION),
    ),
    exits=(
        Fact("missing argument (argparse, exit 2); no kubeconfig Secret or no client certificate in it, an API "
             "error (exit 1)", _RESTART),
    ),
    facts=(
        Fact("the agent reads its kubeconfig only at start and certRotation rewrites the Secret; the restart rolls "
             "the Deployment (a pod-template annotation naming the certificate's notBefore) when a container "
             "started before the new certificate's issue time plus two minutes (kubelet's Secret refresh)",
             _ROTATION),
        Fact("kube-controller-manager backdates a signed certificate: notBefore = issue time - 5 minutes, so the "
             "issue time is notBefore + 5 minutes", Src("kubernetes/kubernetes", "v1.35.4",
                                                           "pkg/controller/certificates/signer/signer.go", "sign")),
    ),
    kubeconfig_flags=(),
)

AGENT_CSR_APPROVER = Contract(
    key="agent-csr-approver", title="agent CSR approver (agents/agent_csr_approver.py)",
    upstream=f"this program, run by {approver.NAME} on python:3.12", match=Match(script=approver.SCRIPT_KEY),
    rendered_by="components/fleet/csr_approver_docs.py", runs_in="host cluster, namespace karmada-system",
    files=(
        FileFlag("ca-file", "read", "the Karmada CA", _APPROVER_MAIN),
        FileFlag("cert-file", "read", f"client certificate (CN {approver.USER})", _APPROVER_MAIN),
        FileFlag("key-file", "read", "its key", _APPROVER_MAIN),
    ),
    listeners=(
        Listener("health", "HTTP", "health-port", "port", "8080", (Served("/healthz", True),), _APPROVER_MAIN,
                 note="200 while the last pass is younger than 3 x period + 30 s, else 503; other paths 503"),
    ),
    connections=(
        Connection("karmada-apiserver", "5443", "HTTPS (client cert)", "--server", "lists CSRs, writes approvals, "
                   "deletes members' bootstrap tokens an hour after creation", _APPROVER_MAIN,
                   resolve=from_url_flag("server")),
    ),
    uses=(
        Use("karmada", "certificates.k8s.io", "certificatesigningrequests", ("list",), _APPROVER,
            credential="client-cert"),
        Use("karmada", "certificates.k8s.io", "certificatesigningrequests/approval", ("update",), _APPROVER,
            credential="client-cert"),
        Use("karmada", "certificates.k8s.io", "signers", ("approve",), _APPROVER, names=(approver.SIGNER,),
            credential="client-cert"),
        Use("karmada", "", "secrets", ("get", "delete"), Src("karmada-hub", "this checkout",
                                                             "agents/agent_csr_approver.py", "clean_tokens"),
            namespace="kube-system", names=("bootstrap-token-<pull-token-id>",),
            credential="client-cert"),
    ),
    expects=(
        Expects("karmada-controller-manager without agentcsrapproving (`--controllers=*,-agentcsrapproving`), so no "
                "other approver decides agent CSRs", "the hub stack (flags/controller_manager.py)",
                k("cmd/controller-manager/app/controllermanager.go", "controllers")),
    ),
    exits=(
        Fact("unknown or missing argument, a malformed --member (argparse/ValueError, exit 2 or 1); unreadable TLS "
             "files; health port bind failure", _APPROVER_MAIN),
    ),
    facts=(
        Fact("approves a join only when spec.username is system:bootstrap:<the token id the hub derived for the CN's "
             "member>, a renewal only when spec.username is the CN itself in group system:karmada:agents; denies "
             "every other agent-shaped CSR with the reason", _APPROVER),
    ),
    kubeconfig_flags=(),
)

CONTRACTS: tuple[Contract, ...] = (PULL_JOIN, AGENT_RESTART, AGENT_CSR_APPROVER)

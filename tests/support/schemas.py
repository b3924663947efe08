"""Schema validators for rendered objects: upstream Karmada CRDs, the aggregated Cluster API, and Kubernetes.

Every object the program renders is checked the way the API server would check it, and a little stricter:
unknown fields are errors (the API server's strict field validation, `kubectl --validate=strict`), because a
misspelt field that the server silently prunes is exactly the bug these tests exist to catch.

- `validate_karmada(obj)`: the `openAPIV3Schema` of the matching served CRD version in the shared upstream
  CRDs (`<repo>/../shared/karmada/crds`, or `$KARMADA_HUB_CRDS_DIR`), turned into a closed JSON schema.
- `validate_cluster(obj)`: `cluster.karmada.io/v1alpha1 Cluster` is served by karmada-aggregated-apiserver,
  so there is no CRD; the schema below is written from the Go types and validation at Karmada v1.18.2.
- `validate_kubernetes(obj, minor)`: kubernetes-validate in strict mode for built-in kinds.
- `validate_any(obj, minor)`: picks one of the above from the object's apiVersion group.

All of them raise `SchemaError` (an AssertionError, so pytest shows it as a failed check) listing every problem.
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import kubernetes_validate
import yaml

from components.karmada.crds import CRDS_DIR_ENV, crds_source_dir

REPO_ROOT = Path(__file__).resolve().parents[2]

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
"""resource.Quantity as the CRDs spell it (controller-gen's pattern for int-or-string quantities)."""

CLUSTER_NAME_MAX = 48
"""`pkg/apis/cluster/validation/validation.go` clusterNameMaxLength: 15 characters are kept for `karmada-es-`."""


class SchemaError(AssertionError):
    """An object does not validate; `errors` holds one line per problem, with the JSON path."""

    def __init__(self, what: str, errors: list[str]) -> None:
        self.errors = errors
        super().__init__(f"{what}: " + "; ".join(errors))


# ------------------------------------------------------------------------------------------- formats

_FORMATS = jsonschema.FormatChecker()


@_FORMATS.checks("int32")
def _int32(value: object) -> bool:
    return not isinstance(value, int) or -(2**31) <= value < 2**31


@_FORMATS.checks("int64")
def _int64(value: object) -> bool:
    return not isinstance(value, int) or -(2**63) <= value < 2**63


@_FORMATS.checks("byte")
def _byte(value: object) -> bool:
    if not isinstance(value, str):
        return True
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


# ---------------------------------------------------------------------------------------- object meta

OBJECT_META: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "namespace": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "ownerReferences": {"type": "array", "items": {"type": "object"}},
    },
}
"""The ObjectMeta fields a rendered object may carry (server-populated ones never belong in a manifest).

`name` is required here because every rendered object sets it explicitly (no generateName)."""


def _meta_errors(meta: Mapping[str, Any], name_rule: str = "subdomain") -> list[str]:
    """Name, namespace, label and annotation rules of apimachinery's ValidateObjectMeta."""
    errors: list[str] = []
    name = meta.get("name")
    if isinstance(name, str):
        if name_rule == "subdomain" and (len(name) > 253 or not DNS1123_SUBDOMAIN.match(name)):
            errors.append(f"metadata.name: '{name}' is not a DNS-1123 subdomain")
        elif name_rule.startswith("label") and not DNS1123_LABEL.match(name):
            errors.append(f"metadata.name: '{name}' is not a DNS-1123 label")
        if name_rule.startswith("label:") and len(name) > int(name_rule.split(":")[1]):
            errors.append(f"metadata.name: '{name}' is longer than {name_rule.split(':')[1]} characters")
        if name_rule == "path" and (name in (".", "..") or "/" in name or "%" in name):
            errors.append(f"metadata.name: '{name}' may not contain '/' or '%' or be '.' / '..'")
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and (len(namespace) > 63 or not DNS1123_LABEL.match(namespace)):
        errors.append(f"metadata.namespace: '{namespace}' is not a DNS-1123 label")
    for key, value in (meta.get("labels") or {}).items():
        if not _is_qualified_name(key):
            errors.append(f"metadata.labels: key '{key}' is not a qualified name")
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
            errors.append(f"metadata.labels[{key}]: '{value}' is not a valid label value")
    for key in meta.get("annotations") or {}:
        if not _is_qualified_name(key):
            errors.append(f"metadata.annotations: key '{key}' is not a qualified name")
    return errors


def _is_qualified_name(key: str) -> bool:
    """Label/annotation key: optional DNS-subdomain prefix (≤253) + '/' + name (≤63)."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(QUALIFIED_NAME.match(name))


def _is_label_value(value: object) -> bool:
    return isinstance(value, str) and len(value) <= 63 and bool(LABEL_VALUE.match(value))


def _schema_errors(schema: Mapping[str, Any], obj: Any) -> list[str]:
    validator = jsonschema.Draft7Validator(schema, format_checker=_FORMATS)
    errors = sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in errors]


def _check_header(obj: Any, what: str) -> None:
    if not isinstance(obj, Mapping):
        raise SchemaError(what, [f"expected a mapping, got {type(obj).__name__}"])
    for field in ("apiVersion", "kind", "metadata"):
        if field not in obj:
            raise SchemaError(what, [f"{field} is required"])


# ---------------------------------------------------------------------------------------------- CRDs


@dataclass(frozen=True)
class _Crd:
    schema: dict[str, Any]
    namespaced: bool
    source: Path


def crds_dir() -> Path:
    """The upstream CRDs, found the way the program finds them offline (`crds.crds_source_dir`: the
    `KARMADA_HUB_CRDS_DIR` override or the workspace's `shared/karmada/crds`; never in the repo)."""
    return crds_source_dir() or REPO_ROOT.parent / "shared" / "karmada" / "crds"


@functools.cache
def _crd_index(root: Path) -> dict[tuple[str, str, str], _Crd]:
    """(group, version, kind) -> closed schema, for every served version of every CRD under `root`."""
    if not root.is_dir():
        raise FileNotFoundError(f"Karmada CRDs not found at {root} (set {CRDS_DIR_ENV})")
    index: dict[tuple[str, str, str], _Crd] = {}
    for path in sorted(root.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc.get("spec") or {}
            if "versions" not in spec:
                continue  # kustomize patches (conversion webhook), not whole CRDs
            for version in spec["versions"]:
                if not version.get("served", False):
                    continue
                schema = closed_schema(version["schema"]["openAPIV3Schema"])
                schema["properties"]["metadata"] = copy.deepcopy(OBJECT_META)
                key = (spec["group"], version["name"], spec["names"]["kind"])
                index[key] = _Crd(schema=schema, namespaced=spec["scope"] == "Namespaced", source=path)
    return index


UPSTREAM_CRDS_ENV = "KARMADA_HUB_UPSTREAM_CRDS_DIR"
UPSTREAM_GROUPS = {"monitoring.coreos.com": "prometheus-operator", "externaldns.k8s.io": "external-dns",
                   "upgrade.cattle.io": "system-upgrade-controller"}
"""API group -> folder of the workspace's `shared/upstream-crds` (see its SOURCE.md), for third-party CRD kinds."""


def upstream_crds_dir() -> Path:
    """`$KARMADA_HUB_UPSTREAM_CRDS_DIR`, or `shared/upstream-crds` beside the workspace's Karmada CRDs (also when
    `KARMADA_HUB_CRDS_DIR` names another Karmada tag's files elsewhere: `crds.upstream_crds_dirs`)."""
    import os

    from components.karmada.crds import upstream_crds_dirs

    override = os.environ.get(UPSTREAM_CRDS_ENV)
    if override:
        return Path(override)
    return next((d for d in upstream_crds_dirs() if d.is_dir()), crds_dir().parent.parent / "upstream-crds")


def validate_upstream(obj: Any) -> None:
    """A third-party CRD kind (Prometheus Operator, DNSEndpoint, SUC Plan) against its upstream CRD, closed."""
    _check_header(obj, "object")
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    what = f"{obj['apiVersion']} {obj['kind']} {obj['metadata'].get('name', '?')}"
    root = upstream_crds_dir() / UPSTREAM_GROUPS[group]
    crd = _crd_index(root).get((group, version, obj["kind"]))
    if crd is None:
        raise SchemaError(what, [f"no served CRD for {group}/{version} {obj['kind']} under {root}"])
    errors = _schema_errors(crd.schema, obj) + _meta_errors(obj["metadata"], "subdomain")
    if crd.namespaced and "namespace" not in obj["metadata"]:
        errors.append("metadata.namespace: required for a namespaced kind (set it explicitly)")
    if errors:
        raise SchemaError(what, errors)


def crd_kinds() -> frozenset[tuple[str, str, str]]:
    """Every (group, version, kind) the shared CRDs serve."""
    return frozenset(_crd_index(crds_dir()))


def closed_schema(node: Any) -> Any:
    """A CRD structural schema as a JSON schema the way the API server enforces it, plus strictness.

    - objects with `properties` (or with none) and no `additionalProperties` are closed: the server would
      prune unknown fields, strict validation rejects them; `x-kubernetes-preserve-unknown-fields` keeps
      them open;
    - `x-kubernetes-int-or-string` accepts an integer or a string (the schema's pattern applies to strings);
    - `nullable: true` also accepts null; descriptions, defaults and other `x-kubernetes-*` markers are
      dropped (CEL `x-kubernetes-validations` are not evaluated here).
    """
    if isinstance(node, list):
        return [closed_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "patternProperties"):
            out[key] = {name: closed_schema(sub) for name, sub in value.items()}
        elif key in ("anyOf", "allOf", "oneOf") or (key in ("items", "additionalProperties", "not")
                                                     and isinstance(value, dict)):
            out[key] = closed_schema(value)
        elif key in ("description", "default", "example", "nullable") or key.startswith("x-kubernetes-"):
            continue
        else:
            out[key] = value
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    if node.get("x-kubernetes-int-or-string") is True:
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if node.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    is_object = node.get("type") == "object" or "properties" in node
    if is_object and "additionalProperties" not in node and not preserve:
        out["additionalProperties"] = False
    return out


def validate_karmada(obj: Any) -> None:
    """Validate against the served CRD version's schema, closed, plus ObjectMeta rules and scope."""
    _check_header(obj, "karmada object")
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    what = f"{obj['apiVersion']} {obj['kind']} {obj['metadata'].get('name', '?')}"
    crd = _crd_index(crds_dir()).get((group, version, obj["kind"]))
    if crd is None:
        raise SchemaError(what, [f"no served CRD for {group}/{version} {obj['kind']} under {crds_dir()}"])
    errors = _schema_errors(crd.schema, obj)
    if isinstance(obj.get("metadata"), Mapping):
        errors += _meta_errors(obj["metadata"], "subdomain")
        has_ns = "namespace" in obj["metadata"]
        if crd.namespaced and not has_ns:
            errors.append("metadata.namespace: required for a namespaced kind (set it explicitly)")
        if not crd.namespaced and has_ns:
            errors.append("metadata.namespace: must not be set on a cluster-scoped kind")
    if errors:
        raise SchemaError(what, errors)


# ------------------------------------------------------------------------------------------- Cluster

_QUANTITY_SCHEMA = {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": QUANTITY}]}

_SECRET_REF = {
    "type": "object",
    "additionalProperties": False,
    "required": ["namespace", "name"],
    "properties": {"namespace": {"type": "string", "minLength": 1}, "name": {"type": "string", "minLength": 1}},
}

CLUSTER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "cluster.karmada.io/v1alpha1"},
        "kind": {"const": "Cluster"},
        "metadata": OBJECT_META,
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["syncMode"],
            "properties": {
                "id": {"type": "string", "maxLength": 128000},
                "syncMode": {"enum": ["Push", "Pull"]},
                "apiEndpoint": {"type": "string"},
                "secretRef": _SECRET_REF,
                "impersonatorSecretRef": _SECRET_REF,
                "insecureSkipTLSVerification": {"type": "boolean"},
                "proxyURL": {"type": "string"},
                "proxyHeader": {"type": "object", "additionalProperties": {"type": "string"}},
                "provider": {"type": "string"},
                "region": {"type": "string"},
                "zone": {"type": "string"},
                "zones": {"type": "array", "items": {"type": "string"}},
                "taints": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["key", "effect"],
                        "properties": {
                            "key": {"type": "string", "minLength": 1},
                            "value": {"type": "string"},
                            "effect": {"enum": ["NoSchedule", "PreferNoSchedule", "NoExecute"]},
                            "timeAdded": {"type": ["string", "null"], "format": "date-time"},
                        },
                    },
                },
                "resourceModels": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["grade", "ranges"],
                        "properties": {
                            "grade": {"type": "integer", "minimum": 0},
                            "ranges": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "required": ["name", "min", "max"],
                                    "properties": {
                                        "name": {"type": "string", "minLength": 1},
                                        "min": _QUANTITY_SCHEMA,
                                        "max": _QUANTITY_SCHEMA,
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
        "status": {"type": "object"},
    },
}
"""`Cluster` as `pkg/apis/cluster/v1alpha1/types.go` at karmada-io/karmada v1.18.2 (commit 0533b555) defines it:
ClusterSpec{id (MaxLength 128000), syncMode (Enum Push;Pull, required), apiEndpoint, secretRef/impersonatorSecretRef
(LocalSecretReference{namespace, name}, both without omitempty), insecureSkipTLSVerification, proxyURL, proxyHeader
(map[string]string), provider, region, zone (deprecated), zones, taints ([]corev1.Taint), resourceModels
([]ResourceModel{grade uint, ranges []{name, min, max Quantity}})}. Status is server-owned and left open."""


def _cluster_semantic_errors(obj: Mapping[str, Any]) -> list[str]:
    """The checks of `pkg/apis/cluster/validation/validation.go` (v1.18.2) the schema cannot express.

    One deliberate tightening: upstream calls ValidateClusterAPIEndpoint with forceHTTPS=false; this project
    requires https because the hub only ever talks TLS to members.
    """
    errors: list[str] = []
    meta = obj.get("metadata") or {}
    errors += _meta_errors(meta, f"label:{CLUSTER_NAME_MAX}")
    if "namespace" in meta:
        errors.append("metadata.namespace: Cluster is cluster-scoped")
    spec = obj.get("spec") or {}
    endpoint = spec.get("apiEndpoint")
    if isinstance(endpoint, str) and endpoint:
        url = urlsplit(endpoint)
        if url.scheme != "https":
            errors.append(f"spec.apiEndpoint: '{endpoint}' must be an https:// URL")
        if not url.hostname:
            errors.append(f"spec.apiEndpoint: '{endpoint}' has no host")
        if url.username is not None or url.password is not None:
            errors.append("spec.apiEndpoint: user information is not permitted in the URL")
        if url.query:
            errors.append("spec.apiEndpoint: query parameters are not permitted in the URL")
        if url.fragment:
            errors.append("spec.apiEndpoint: fragments are not permitted in the URL")
    proxy = spec.get("proxyURL")
    if isinstance(proxy, str) and proxy and urlsplit(proxy).scheme not in ("http", "https", "socks5"):
        errors.append(f"spec.proxyURL: unsupported scheme in '{proxy}' (http, https or socks5)")
    for field in ("provider", "region", "zone"):
        if field in spec and not _is_label_value(spec[field]):
            errors.append(f"spec.{field}: '{spec[field]}' is not a valid label value")
    for zone in spec.get("zones") or []:
        if not _is_label_value(zone):
            errors.append(f"spec.zones: '{zone}' is not a valid label value")
    if spec.get("zone") and spec.get("zones"):
        errors.append("spec: zone and zones cannot co-exist")
    seen: set[tuple[str, str]] = set()
    for taint in spec.get("taints") or []:
        if not isinstance(taint, Mapping):
            continue
        key, effect = str(taint.get("key", "")), str(taint.get("effect", ""))
        if not _is_qualified_name(key):
            errors.append(f"spec.taints: key '{key}' is not a qualified name")
        if "value" in taint and not _is_label_value(taint["value"]):
            errors.append(f"spec.taints[{key}]: value is not a valid label value")
        if (key, effect) in seen:
            errors.append(f"spec.taints: duplicate taint {key}:{effect}")
        seen.add((key, effect))
    return errors


def validate_cluster(obj: Any) -> None:
    """Validate a `cluster.karmada.io/v1alpha1 Cluster` (aggregated API: no CRD) against the Go-derived schema."""
    _check_header(obj, "Cluster")
    what = f"Cluster {obj['metadata'].get('name', '?') if isinstance(obj['metadata'], Mapping) else '?'}"
    errors = _schema_errors(CLUSTER_SCHEMA, obj)
    if isinstance(obj.get("metadata"), Mapping) and isinstance(obj.get("spec", {}), Mapping):
        errors += _cluster_semantic_errors(obj)
    if errors:
        raise SchemaError(what, errors)


RESOURCE_REGISTRY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "search.karmada.io/v1alpha1"},
        "kind": {"const": "ResourceRegistry"},
        "metadata": OBJECT_META,
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["targetCluster", "resourceSelectors"],
            "properties": {
                "targetCluster": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "labelSelector": {"type": "object"},
                        "fieldSelector": {"type": "object"},
                        "clusterNames": {"type": "array", "items": {"type": "string", "minLength": 1}},
                        "exclude": {"type": "array", "items": {"type": "string", "minLength": 1}},
                    },
                },
                "resourceSelectors": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["apiVersion", "kind"],
                        "properties": {"apiVersion": {"type": "string", "minLength": 1},
                                       "kind": {"type": "string", "minLength": 1},
                                       "namespace": {"type": "string"}},
                    },
                },
                "backendStore": {"type": "object"},
            },
        },
        "status": {"type": "object"},
    },
}
"""`ResourceRegistry` as `pkg/apis/search/v1alpha1/searchregistry_types.go` at karmada-io/karmada v1.18.2 defines it
(an aggregated API of karmada-search: no CRD): spec.targetCluster (policy ClusterAffinity{labelSelector,
fieldSelector, clusterNames, exclude}, required), spec.resourceSelectors ([]{apiVersion, kind required; namespace},
required), spec.backendStore (optional, OpenSearch only). Cluster-scoped."""


def validate_resource_registry(obj: Any) -> None:
    """Validate a `search.karmada.io/v1alpha1 ResourceRegistry` (aggregated API: no CRD) against the Go-derived
    schema; it is cluster-scoped."""
    _check_header(obj, "ResourceRegistry")
    meta = obj["metadata"] if isinstance(obj["metadata"], Mapping) else {}
    errors = _schema_errors(RESOURCE_REGISTRY_SCHEMA, obj) + _meta_errors(meta, "subdomain")
    if "namespace" in meta:
        errors.append("metadata.namespace: ResourceRegistry is cluster-scoped")
    if errors:
        raise SchemaError(f"ResourceRegistry {meta.get('name', '?')}", errors)


# ---------------------------------------------------------------------------------------- Kubernetes


def validate_kubernetes(obj: Any, minor: str = "1.34") -> None:
    """kubernetes-validate (strict: unknown fields are errors) for built-in kinds, plus ObjectMeta rules.

    Names are checked as path segments only: RBAC names such as `system:karmada:<cluster>:agent` are legal.
    """
    _check_header(obj, "kubernetes object")
    meta = obj["metadata"]
    what = f"{obj['apiVersion']} {obj['kind']} {meta.get('name', '?') if isinstance(meta, Mapping) else '?'}"
    errors: list[str] = []
    try:
        kubernetes_validate.validate(dict(obj), minor, strict=True)
    except kubernetes_validate.ValidationError as exc:
        path = ".".join(map(str, exc.absolute_path)) or "<root>"
        errors.append(f"{path}: {exc.message}")
    except kubernetes_validate.SchemaNotFoundError as exc:
        errors.append(f"no schema for {obj['apiVersion']} {obj['kind']} in Kubernetes {minor}: {exc}")
    if isinstance(meta, Mapping):
        errors += _schema_errors(OBJECT_META, meta)
        errors += _meta_errors(meta, "path")
    if errors:
        raise SchemaError(what, errors)


def validate_any(obj: Any, minor: str = "1.34") -> None:
    """Dispatch on the apiVersion group: Cluster → Go-derived schema; CRD kinds → CRDs; the rest → Kubernetes."""
    _check_header(obj, "object")
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    if group == "cluster.karmada.io":
        validate_cluster(obj)
    elif group == "search.karmada.io":
        validate_resource_registry(obj)
    elif group in UPSTREAM_GROUPS:
        validate_upstream(obj)
    elif (group, version, obj["kind"]) in crd_kinds() or group.endswith("karmada.io"):
        validate_karmada(obj)
    else:
        validate_kubernetes(obj, minor)

"""`wait_node_ready` (the day-two gate after a hub server was resized) against a real local HTTPS server that,
like k3s, demands the admin client certificate and serves a node and the pods on it.

The node comes back in steps (NotReady, Ready with its etcd pod not Ready, all Ready); the gate returns only
at the last, and a pod that no StatefulSet owns does not hold it up.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from components.hetzner.readiness import NotReady, node_problems, wait_node_ready
from tests.support.httpfake import Handler, LoopbackServer
from tests.support.testpki import Pki, k3s_tls

FAST = {"timeout_seconds": 3.0, "interval_seconds": 0.1, "request_timeout_seconds": 1.0}


def _node(ready: str) -> dict[str, Any]:
    return {"metadata": {"name": "hub-cp-1"}, "status": {"conditions": [
        {"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": ready, "reason": "KubeletReady"}]}}


def _pod(name: str, ready: str, owner: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "karmada-system"}
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": "x"}]
    return {"metadata": meta, "status": {"conditions": [{"type": "Ready", "status": ready}]}}


def test_node_problems() -> None:
    assert node_problems(None, None) == ["the node is not registered"]
    assert node_problems(_node("False"), {"items": []}) == ["node Ready is False (KubeletReady)"]
    etcd_down = {"items": [_pod("etcd-1", "False", "StatefulSet")]}
    assert node_problems(_node("True"), etcd_down) == ["pod karmada-system/etcd-1 is not Ready"]
    other_down = {"items": [_pod("karmada-webhook-x", "False", "ReplicaSet"), _pod("etcd-1", "True", "StatefulSet")]}
    assert node_problems(_node("True"), other_down) == []


@pytest.fixture
def api(pki: Pki, tmp_path: Path) -> Iterator[tuple[str, list[tuple[int, Any, Any]], list[str]]]:
    """A TLS API that answers node and pod GETs from a script of (status, node, pods) steps."""
    steps: list[tuple[int, Any, Any]] = []
    seen: list[str] = []
    state = {"i": 0}

    class NodeApi(Handler):
        def do_GET(self) -> None:  # noqa: N802 - http.server names it
            seen.append(unquote(self.path))
            if self.path.startswith("/api/v1/nodes/"):
                state["i"] += 1  # each poll asks for the node first, then for its pods
            status, node, pods = steps[min(state["i"] - 1, len(steps) - 1)]
            if self.path.startswith("/api/v1/nodes/"):
                body = node
            elif self.path.startswith("/api/v1/pods?fieldSelector="):
                body = pods
            else:
                status, body = 404, {}
            self.reply_json(status, body)

    server = LoopbackServer(NodeApi, k3s_tls(pki, tmp_path))
    try:
        yield server.url, steps, seen
    finally:
        server.close()


def test_waits_until_node_and_its_etcd_pod_are_back(api: Any, pki: Pki) -> None:
    url, steps, seen = api
    steps += [(404, {}, None), (200, _node("False"), {"items": []}),
              (200, _node("True"), {"items": [_pod("etcd-1", "False", "StatefulSet")]}),
              (200, _node("True"), {"items": [_pod("etcd-1", "True", "StatefulSet")]})]
    waited = wait_node_ready(url, "hub-cp-1", pki.server_ca.cert_pem, pki.client.cert_pem, pki.client.key_pem,
                             **FAST)
    assert waited > 0
    assert seen.count("/api/v1/nodes/hub-cp-1") == 4
    assert "/api/v1/pods?fieldSelector=spec.nodeName=hub-cp-1" in seen


def test_gives_up_with_what_is_missing(api: Any, pki: Pki) -> None:
    url, steps, _ = api
    steps.append((200, _node("True"), {"items": [_pod("etcd-1", "False", "StatefulSet")]}))
    with pytest.raises(NotReady, match="node hub-cp-1 is not back within 3s: pod karmada-system/etcd-1 is not Ready"):
        wait_node_ready(url, "hub-cp-1", pki.server_ca.cert_pem, pki.client.cert_pem, pki.client.key_pem, **FAST)

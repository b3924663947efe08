"""The regional load balancer stand-in of the real fleet (tests/support/realfleet/traffic.py): how it answers a
request between the member's death and the health check noticing it. No root, no namespaces: its answer only."""

from __future__ import annotations

import socket
from typing import Any

from tests.support.kubelet.api import Api
from tests.support.realfleet.traffic import RegionalLB


def _lb(port: int, healthy: bool = True, routes: dict[str, bool] | None = None) -> RegionalLB:
    none: Any = None
    return RegionalLB("eu-hel", "198.51.100.86", Api(f"https://127.0.0.1:{port}", ""), none, none,
                      healthy=healthy, routes={"shop.example.com": True} if routes is None else routes)


def test_a_live_target_answers_from_ingress_nginx_s_view_and_a_dead_one_fails_at_once() -> None:
    with socket.socket() as live:
        live.bind(("127.0.0.1", 0))
        live.listen()
        port = live.getsockname()[1]
        assert _lb(port).answer("shop.example.com") == 200
        assert _lb(port).answer("other.example.com") == 503  # no Ingress for it
        assert _lb(port, routes={"shop.example.com": False}).answer("shop.example.com") == 503  # no ready endpoint
        assert _lb(port, healthy=False).answer("shop.example.com") == 503  # no healthy target
        named = _lb(port)  # the member's API by its name, pinned to its address as the fleet's clients do
        named.member_api = Api(f"https://api.member.invalid:{port}", "", pins={"api.member.invalid": "127.0.0.1"})
        assert named.answer("shop.example.com") == 200
    # the member died a moment ago: the health check still says healthy, the request fails (502), not 200
    assert _lb(port).answer("shop.example.com") == 502

"""components/kube/agent_script.py: which files an agent's ConfigMap carries (the script and the helpers of
agents/ it imports) and the checksum that rolls its pods when any of them changes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from components.kube import agent_script
from components.traffic import refresher_docs
from tests.support.tools import REPO

HELPERS = {"status_refresher.py": ["_incluster.py"], "traffic_failover.py": ["_dnswire.py", "_incluster.py"],
           "hub_exporter.py": ["_incluster.py"], "etcd_defrag.py": ["_incluster.py"],
           "dns_zone_seed.py": ["_dnswire.py"], "etcd_backup_upload.py": [], "pull_join.py": []}


@pytest.mark.parametrize("script", HELPERS)
def test_each_agent_ships_exactly_the_helpers_it_imports(script: str) -> None:
    files = agent_script.program(script, agent_script.source(script))
    assert list(files) == [script, *HELPERS[script]]
    assert all(text == (REPO / "agents" / name).read_text() for name, text in files.items())


def test_helpers_are_found_transitively_and_only_at_the_top_of_a_file(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "_a.py").write_text("import json\nfrom _b import x\n")
    (tmp_path / "_b.py").write_text("x = 1\n")
    (tmp_path / "_c.py").write_text("y = 2\n")
    monkeypatch.setattr(agent_script, "AGENTS_DIR", tmp_path)
    script = "import _a\nimport _hashlib\ndef f():\n    import _c\n"
    assert agent_script.program("s.py", script) == {"s.py": script, "_a.py": "import json\nfrom _b import x\n",
                                                     "_b.py": "x = 1\n"}
    assert agent_script.configmap({"name": "s"}, "s.py", script)["data"] == agent_script.program("s.py", script)


def test_a_script_alone_keeps_its_old_checksum_and_a_helper_counts() -> None:
    text = "print('a')\n"
    assert agent_script.pod_annotations(text) == {agent_script.CHECKSUM_ANNOTATION: hashlib.sha256(b"print('a')\n")
                                                  .hexdigest()}
    assert agent_script.digest(text, {"_h.py": "x"}) != agent_script.digest(text, {})
    assert agent_script.digest(text, {"_h.py": "x"}) != agent_script.digest(text, {"_h.py": "y"})
    assert agent_script.digest(text, {"_h.py": "x"}) != agent_script.digest(text, {"_g.py": "x"})
    # text moved across the boundary between script and helper is another program
    assert agent_script.digest("ab", {"_h.py": "c"}) != agent_script.digest("a", {"_h.py": "bc"})


def test_a_helper_change_rolls_the_pods(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = agent_script.source(refresher_docs.SCRIPT_KEY)
    before = refresher_docs.deployment(15, source)["spec"]["template"]["metadata"]["annotations"]
    (tmp_path / "_incluster.py").write_text((REPO / "agents" / "_incluster.py").read_text() + "\n# changed\n")
    monkeypatch.setattr(agent_script, "AGENTS_DIR", tmp_path)
    after = refresher_docs.deployment(15, source)["spec"]["template"]["metadata"]["annotations"]
    key = agent_script.CHECKSUM_ANNOTATION
    assert before[key] != after[key]
    assert refresher_docs.script_configmap(source)["data"]["_incluster.py"].endswith("# changed\n")


# ------------------------------------------------------------------------------------------ documents


def _pod(volumes: list[dict[str, object]] | None = None) -> dict[str, object]:
    container = agent_script.container("x", "x.py", ["--a=1"], {"requests": {"cpu": "1m"}},
                                       env=[{"name": "E", "value": "1"}], mounts=[{"name": "m", "mountPath": "/m"}])
    return agent_script.pod_template({"app": "x"}, "print(1)\n", [container],
                                     volumes if volumes is not None else [agent_script.volume("x")])


def test_an_agent_container_runs_the_script_from_its_mount() -> None:
    (container,) = _pod()["spec"]["containers"]
    assert container["command"] == ["python3", "-u", f"{agent_script.MOUNT_DIR}/x.py"]
    assert container["env"] == [*agent_script.ENV, {"name": "E", "value": "1"}]
    assert container["volumeMounts"][0] == agent_script.mount()
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert not {"ports", "livenessProbe", "readinessProbe", "envFrom"} & set(container)


def test_a_pod_template_without_the_script_volume_is_refused() -> None:
    assert _pod()["spec"]["automountServiceAccountToken"] is False
    with pytest.raises(ValueError, match="without the script volume"):
        _pod([{"name": "script", "emptyDir": {}}])


def test_an_agent_deployment_spreads_and_rolls_within_its_budget() -> None:
    from components.kube import rollouts

    selector = {"app": "x"}
    deploy = agent_script.deployment({"name": "x", "namespace": "n"}, selector, 3, _pod())
    terms = deploy["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms == [{"labelSelector": {"matchLabels": selector}, "topologyKey": "kubernetes.io/hostname"}]
    pdb = {"kind": "PodDisruptionBudget", "metadata": {"name": "x", "namespace": "n"},
           "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector}}}
    assert rollouts.rollout_problems(deploy, pdb, 3) == []


def test_a_client_cert_secret_names_its_empty_parts() -> None:
    secret = agent_script.client_cert_secret({"name": "s"}, "ca", "crt", "key", "my secret")
    assert sorted(secret["data"]) == ["ca.crt", "tls.crt", "tls.key"]
    with pytest.raises(ValueError, match=r"^my secret: empty tls.crt, tls.key$"):
        agent_script.client_cert_secret({"name": "s"}, "ca", "", "", "my secret")

"""What keeps `hubctl plan` linear in the fleet's size without changing a byte of its output.

- the secret scan is one pass per file whatever the number of secrets (`_SecretIndex`), and still finds a
  secret wherever it sits;
- each record is redacted once, however many files and tables show it (`written_inputs`);
- the collector is quiet while the program runs (`quiet_gc`) and restored afterwards;
- the SDK does not walk the Python stack for source positions nobody reads (`no_source_positions`).
"""

from __future__ import annotations

import gc
import random
import string
from typing import Any

import pytest

from hubctl import plan as plan_mod
from hubctl.plan import SecretLeak, _SecretIndex, assert_no_secrets

ALPHABET = string.ascii_letters + string.digits + "+/=-_:. \n"


def _random(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(n))


@pytest.mark.parametrize("length", [8, 20, _SecretIndex.LONG - 1, _SecretIndex.LONG, _SecretIndex.LONG + 1, 64, 227])
def test_secret_index_finds_a_secret_at_every_offset(length: int) -> None:
    rng = random.Random(length)
    secret = _random(rng, length)
    decoys = [_random(rng, rng.randint(8, 300)) for _ in range(50)]
    index = _SecretIndex([secret, *decoys])
    background = _random(rng, 400)
    assert not index.found_in(background)
    for offset in range(len(background) + 1):
        content = background[:offset] + secret + background[offset:]
        assert index.found_in(content), (length, offset)
        damaged = content[:offset + length // 2] + "\x00" + content[offset + length // 2 + 1:]
        assert not index.found_in(damaged), (length, offset)


def test_secret_index_at_the_edges_of_the_text() -> None:
    secret = "s" * 3 + _random(random.Random(7), 200)
    index = _SecretIndex([secret])
    assert index.found_in(secret)
    assert index.found_in("x" + secret) and index.found_in(secret + "x")
    assert not index.found_in(secret[1:]) and not index.found_in(secret[:-1])


def test_assert_no_secrets_names_the_file_with_a_secret() -> None:
    secrets = [_random(random.Random(i), 120) for i in range(200)]
    files = {f"manifests/member-{i}.yaml": _random(random.Random(1000 + i), 3000) for i in range(50)}
    assert_no_secrets(files, secrets)
    files["manifests/member-17.yaml"] += "token: " + secrets[123]
    with pytest.raises(SecretLeak, match="member-17"):
        assert_no_secrets(files, secrets)


def test_each_record_is_redacted_once(rendered_dev: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from components.config import FleetConfig
    from hubctl import summary
    from tests.support.tools import stack_values

    calls: dict[str, int] = {}
    real_kubernetes_object, real_redact = plan_mod.kubernetes_object, plan_mod._redact

    def counting_object(record: Any) -> Any:
        calls[record.urn] = calls.get(record.urn, 0) + 1
        return real_kubernetes_object(record)

    monkeypatch.setattr(plan_mod, "kubernetes_object", counting_object)
    fresh = plan_mod.Plan(project=rendered_dev.project, stack=rendered_dev.stack, records=rendered_dev.records,
                          outputs=rendered_dev.outputs, secret_values=rendered_dev.secret_values)
    files = plan_mod.render_files(fresh)
    raw, secrets = stack_values("dev")
    summary.render(fresh, FleetConfig.from_mapping(raw, "dev", secrets), tmp_path, files)
    assert calls, "no Kubernetes object was rendered"
    assert max(calls.values()) == 1, sorted((n, u) for u, n in calls.items() if n > 1)[:3]
    assert real_redact is plan_mod._redact


def test_quiet_gc_restores_the_collector() -> None:
    before = gc.get_threshold()
    with plan_mod.quiet_gc():
        assert gc.get_threshold() == plan_mod.QUIET_GC_THRESHOLD != before
        assert gc.get_freeze_count() > 0, "what was alive before the run is frozen"
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError), plan_mod.quiet_gc():
        raise RuntimeError("the program failed")
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_no_source_positions_only_while_the_program_runs() -> None:
    from pulumi.runtime import resource as sdk_resource

    original = sdk_resource._get_stack_trace
    with plan_mod.no_source_positions():
        assert sdk_resource._get_stack_trace is not original
        assert len(sdk_resource._get_stack_trace().frames) == 0
    assert sdk_resource._get_stack_trace is original
    with pytest.raises(RuntimeError), plan_mod.no_source_positions():
        raise RuntimeError("the program failed")
    assert sdk_resource._get_stack_trace is original

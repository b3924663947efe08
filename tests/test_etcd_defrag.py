"""The defragmentation job's decisions (agents/etcd_defrag.py) and its rendered CronJob. The run against a real
3-member etcd is in tests/integration/test_etcd_restore.py."""

from __future__ import annotations

from typing import Any

import pytest

from agents import etcd_defrag as d
from components.operations import etcd_maintenance_docs as docs
from tests.support.rendered import find, secret_files

MIB = d.MIB


def member(name: str, member_id: int, leader: int, size_mib: float, in_use_mib: float) -> d.Member:
    return d.Member(f"https://{name}:2379", member_id, leader, int(size_mib * MIB), int(in_use_mib * MIB))


def test_followers_first_leader_last_only_the_fragmented() -> None:
    members = [member("a", 1, 2, 400, 100), member("b", 2, 2, 400, 100), member("c", 3, 2, 400, 300),
               member("d", 4, 2, 50, 1)]
    assert [m.endpoint for m in d.plan(members, 100 * MIB, 0.5)] == ["https://a:2379", "https://b:2379"]
    assert [m.member_id for m in d.plan(members, 10 * MIB, 0.5)] == [1, 4, 2]


@pytest.mark.parametrize("leaders", [(1, 1, 2), (0, 0, 0), (9, 9, 9)])
def test_no_agreed_leader_among_them_means_no_defrag(leaders: tuple[int, int, int]) -> None:
    members = [member(n, i + 1, leader, 400, 1) for i, (n, leader) in enumerate(zip("abc", leaders, strict=True))]
    with pytest.raises(d.DefragError, match="not defragmenting"):
        d.plan(members, MIB, 0.5)


def test_rendered_cron_job(rendered_dev: Any) -> None:
    cron = find(rendered_dev, "host", "CronJob", docs.NAME)
    spec = cron["spec"]["jobTemplate"]["spec"]
    pod = spec["template"]["spec"]
    args = d.parse_args(pod["containers"][0]["args"])
    assert args.endpoints.split(",") == [f"https://etcd-{i}.etcd.karmada-system.svc.cluster.local:2379"
                                         for i in range(3)]
    assert (args.min_db_mib, args.min_free_ratio) == (100, 0.5)
    assert cron["spec"]["schedule"] == "37 3 * * 0" and cron["spec"]["concurrencyPolicy"] == "Forbid"
    assert spec["backoffLimit"] == 0 and spec["activeDeadlineSeconds"] >= 3 * args.timeout
    pki = secret_files(find(rendered_dev, "host", "Secret", docs.PKI_SECRET))
    assert set(pki) == {"etcd-ca.crt", "etcd-maintenance-client.crt", "etcd-maintenance-client.key"}
    mounted = {f"/etc/karmada/pki/{i['path']}" for v in pod["volumes"] if v["name"] == "pki"
               for i in v["secret"]["items"]}
    assert mounted == {args.ca_file, args.cert_file, args.key_file}

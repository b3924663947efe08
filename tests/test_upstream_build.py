"""upstream/build.py: the pins agree with components/versions.py, refusals name the module, the cache is outside."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from components import versions
from tests.support.tools import REPO
from upstream import build


def test_every_wrapper_pins_what_versions_py_says() -> None:
    for bset in build.binary_sets():
        build.check_wrapper(bset)


def test_a_wrapper_pinning_another_version_is_one_line_naming_the_fix(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "kube").mkdir()
    (tmp_path / "kube" / "go.mod").write_text("module x\n\nrequire k8s.io/kubernetes v1.35.2\n")
    monkeypatch.setattr(build, "HERE", tmp_path)
    kube = next(s for s in build.binary_sets() if s.name == "kube")
    with pytest.raises(build.UpstreamError, match=r"pins k8s.io/kubernetes v1.35.2 but components/versions.py "
                                                  r"says v1\.35\.\d+: run `python -m upstream.build --pin`"):
        build.check_wrapper(kube)


def test_versions_come_from_versions_py() -> None:
    sets = {s.name: s for s in build.binary_sets()}
    release = versions.release(versions.KARMADA_VERSION)
    assert sets["kube"].version == release.kube_apiserver
    assert sets["etcd"].version == versions.etcd_release(release.etcd) == "v" + release.etcd.split("-")[0]
    assert sets["karmada"].version == versions.KARMADA_VERSION
    assert sets["kwok"].version == versions.KWOK_VERSION


def test_karmada_is_built_the_way_upstream_builds_it() -> None:
    karmada = next(s for s in build.binary_sets() if s.name == "karmada")
    # karmada-io/karmada v1.18.2 hack/build.sh: CGO off, this tag; hack/util.sh: the version stamp
    assert karmada.tags == "kubernetes_protomessage_one_more_release"
    assert f"-X github.com/karmada-io/karmada/pkg/version.gitVersion={versions.KARMADA_VERSION}" in karmada.ldflags
    assert {f for _, f in karmada.binaries} == {
        "karmada-controller-manager", "karmada-scheduler", "karmada-webhook", "karmada-aggregated-apiserver",
        "karmada-descheduler", "karmada-scheduler-estimator", "karmada-agent", "karmada-search"}
    argv, cwd, env = build._command(karmada, Path("/out"))
    assert env["CGO_ENABLED"] == "0" and argv[:2] == ["go", "build"]
    assert "github.com/karmada-io/karmada/cmd/agent" in argv and cwd == build.HERE / "karmada"


def test_kube_binaries_carry_their_version() -> None:
    kube = next(s for s in build.binary_sets() if s.name == "kube")
    _, minor = versions.minor_of(kube.version)
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        assert f"-X {pkg}.gitVersion={kube.version}" in kube.ldflags
        assert f"-X {pkg}.gitMinor={minor}" in kube.ldflags


def test_a_refused_module_is_named_in_one_line() -> None:
    kube = next(s for s in build.binary_sets() if s.name == "kube")
    output = ("k8s.io/kubernetes/cmd/kube-apiserver/app/options imports\n"
              "\tk8s.io/externaljwt/apis/v1: k8s.io/externaljwt@v0.35.2: reading "
              "https://proxy.golang.org/k8s.io/externaljwt/@v/v0.35.2.zip: 403 Forbidden\n"
              "\tserver response: This module version is not available.\n")
    line = build.explain_failure(kube, output)
    assert "\n" not in line
    assert line.startswith("the Go module proxy refuses k8s.io/externaljwt@v0.35.2 (403 Forbidden)")
    assert "components/versions.py" in line


def test_binary_names() -> None:
    assert build._default_name("go.etcd.io/etcd/server/v3") == "server"
    assert build._default_name("k8s.io/kubernetes/cmd/kubectl") == "kubectl"
    with pytest.raises(KeyError):
        build.binary("kubelet")


def test_the_cache_is_outside_the_checkout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(build.CACHE_ENV, raising=False)
    assert REPO not in build.cache_root().parents
    monkeypatch.setenv(build.CACHE_ENV, str(tmp_path))
    assert build.cache_root() == tmp_path.resolve()


def test_the_only_go_files_are_the_wrappers_go_mod_and_go_sum() -> None:
    tracked = {p.relative_to(REPO).as_posix() for p in REPO.rglob("*")
               if p.is_file() and (p.suffix == ".go" or p.name in ("go.mod", "go.sum", "go.work"))
               and ".venv" not in p.parts and "build" not in p.parts}
    wrappers = {s.wrapper for s in (*build.binary_sets(), build.previous_karmada_set()) if s.wrapper}
    assert wrappers == {"kube", "etcd", "karmada", "karmada-prev"}
    assert tracked == {f"upstream/{w}/go.{f}" for w in wrappers for f in ("mod", "sum")}


def test_the_previous_release_s_source_is_downloaded_and_a_refusal_named(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`make upstream` also fetches the previous Karmada release's module (tests/test_previous_release.py reads its
    installers and CRDs); a proxy refusal is one line naming the module. `go` here is a stand-in script."""
    assert build.SOURCES == (("github.com/karmada-io/karmada", build.PREVIOUS_KARMADA),)
    go = tmp_path / "go"
    go.write_text("#!/bin/sh\necho \"$@\" >> \"$(dirname \"$0\")/calls\"\n"
                  "case \"$4\" in *@v1.17.0) echo '{\"Error\": \"reading https://proxy.golang.org/x: 403 Forbidden\"}';"
                  " exit 1;; esac\necho '{}'\n")
    go.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    build.download_sources(log=io.StringIO())
    assert (tmp_path / "calls").read_text().split() == ["mod", "download", "-json",
                                                        f"github.com/karmada-io/karmada@{build.PREVIOUS_KARMADA}"]
    monkeypatch.setattr(build, "SOURCES", (("github.com/karmada-io/karmada", "v1.17.0"),))
    with pytest.raises(build.UpstreamError) as exc:
        build.download_sources()
    assert str(exc.value) == ("the Go module proxy did not give github.com/karmada-io/karmada@v1.17.0: reading "
                              "https://proxy.golang.org/x: 403 Forbidden")

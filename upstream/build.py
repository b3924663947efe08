"""`make upstream`: build the upstream binaries the tests run, from their Go modules, into a cache outside the repo.

Every version comes from components/versions.py: Kubernetes is the pinned Karmada release's `kube_apiserver` (the
image the hub renders for karmada-apiserver and kube-controller-manager), etcd its `etcd` image tag, Karmada
`KARMADA_VERSION`, kwok `KWOK_VERSION`. Each set of binaries is built the way its upstream builds its releases
(CGO off; Karmada with the `kubernetes_protomessage_one_more_release` tag of karmada-io/karmada v1.18.2
`hack/build.sh` and its version stamp from `hack/util.sh` `util::version_ldflags`; Kubernetes with the `selinux,notest`
tags and the version stamp of kubernetes/kubernetes `hack/lib/golang.sh`, `hack/lib/version.sh`; etcd with the
`GitSHA` stamp of etcd-io/etcd `scripts/build_lib.sh`), all with `-trimpath` so a clone in another folder reuses the
Go build cache, and stripped (`-s -w`) to keep ~1 GB of binaries at ~0.6 GB.

A set lives in `<cache>/<set>-<version>-<key>/` where the key hashes everything that makes its bytes (packages,
tags, ldflags, the Go version, the wrapper's go.sum); `BUILD.json` is written last, so a directory without it is an
interrupted build and is rebuilt. Running again is a check of four stamps: idempotent and quick.

Kubernetes, etcd and Karmada are built through the wrapper modules in this folder: the go.mod files of Kubernetes and
etcd `replace` modules with local paths, which `go install module@version` refuses, and `go install` of Karmada asks
the proxy for the module's version list (for deprecations), which the proxy here refuses (403); inside a module
that requires it, nothing asks for the list. The wrapper selects exactly the versions Karmada's own go.mod lists.
`--pin` rewrites the wrappers for the versions in components/versions.py (the replace block is read from the
pinned k8s.io/kubernetes go.mod, never copied by hand).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from components import versions

HERE = Path(__file__).resolve().parent
CACHE_ENV = "KARMADA_HUB_UPSTREAM_DIR"


def cache_root() -> Path:
    """`$KARMADA_HUB_UPSTREAM_DIR`, else `$XDG_CACHE_HOME/karmada-hub/upstream` (`~/.cache/...`): never the repo."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "karmada-hub" / "upstream"


@dataclass(frozen=True)
class BinarySet:
    """Binaries built together from one module graph."""

    name: str
    module: str
    version: str
    binaries: tuple[tuple[str, str], ...]
    """(package import path, installed file name)."""
    tags: str = ""
    ldflags: tuple[str, ...] = ()
    wrapper: str | None = None
    """Folder under upstream/ holding the go.mod that pins `module` (None: `go install package@version`)."""
    requires: tuple[str, ...] = ()
    """Modules the wrapper requires at `version` (default: `module`)."""
    cold_minutes: str = ""
    """What a cold build took on a 2-core machine (docs/real-fleet.md), shown while it runs."""

    def wrapper_dir(self) -> Path | None:
        return HERE / self.wrapper if self.wrapper else None

    def key(self, go_version: str) -> str:
        wrapper = self.wrapper_dir()
        sums = (wrapper / "go.sum").read_bytes() if wrapper and (wrapper / "go.sum").is_file() else b""
        blob = json.dumps([self.module, self.version, self.binaries, self.tags, self.ldflags, go_version,
                           hashlib.sha256(sums).hexdigest()]).encode()
        return hashlib.sha256(blob).hexdigest()[:10]

    def directory(self, go_version: str) -> Path:
        return cache_root() / f"{self.name}-{self.version}-{self.key(go_version)}"


def _kube_ldflags(version: str) -> tuple[str, ...]:
    major, minor = versions.minor_of(version)
    stamp = {"gitVersion": version, "gitMajor": str(major), "gitMinor": str(minor), "gitTreeState": "clean"}
    return ("-s", "-w", *(f"-X {pkg}.{k}={v}" for pkg in ("k8s.io/component-base/version",
                                                        "k8s.io/client-go/pkg/version") for k, v in stamp.items()))


PREVIOUS_KARMADA = "v1.17.1"
"""The previous Karmada minor's newest patch the Go module proxy serves: the version the upgrade rehearsal
(bench/upgrade_real.py) starts from. v1.17.1, not the newest v1.17 patch upstream tagged: the proxy here answers
403 for github.com/karmada-io/karmada v1.17.0 and v1.17.2..v1.17.5, and serves v1.17.1."""

def _karmada_set(name: str, version: str, wrapper: str) -> BinarySet:
    karmada_pkg = "github.com/karmada-io/karmada/cmd"
    karmada_version_pkg = "github.com/karmada-io/karmada/pkg/version"
    return BinarySet(
        name, "github.com/karmada-io/karmada", version,
        # the seven the hub renders, and the opt-in search addon (cmd/karmada-search). The dashboard addon
        # has none: the proxy refuses karmada-io/dashboard v0.4.0, and v0.3.0 needs
        # github.com/karmada-io/karmada v1.17.0, which it refuses too (403)
        (*((f"{karmada_pkg}/{c}", f"karmada-{c}") for c in
           ("controller-manager", "scheduler", "webhook", "aggregated-apiserver", "descheduler",
            "scheduler-estimator", "agent")), (f"{karmada_pkg}/karmada-search", "karmada-search")),
        tags="kubernetes_protomessage_one_more_release",
        ldflags=("-s", "-w", f"-X {karmada_version_pkg}.gitVersion={version}",
                 f"-X {karmada_version_pkg}.gitTreeState=clean"), wrapper=wrapper, cold_minutes="3-20")


SOURCES = (("github.com/karmada-io/karmada", PREVIOUS_KARMADA),)
"""Module sources the tests read without building them: the previous Karmada release's installers and CRDs
(tests/test_previous_release.py). `make upstream` downloads them into the Go module cache."""


def download_sources(*, log: object = sys.stderr) -> None:
    """`go mod download` each of SOURCES (a check when the module cache holds it)."""
    wrapper = previous_karmada_set().wrapper_dir()
    for module, version in SOURCES:
        proc = subprocess.run(["go", "mod", "download", "-json", f"{module}@{version}"], cwd=wrapper,
                              env=_go_env(), capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            try:
                reason = str(json.loads(proc.stdout).get("Error") or "").strip()
            except ValueError:
                reason = ""
            reason = (reason or proc.stderr.strip() or f"exit {proc.returncode}").splitlines()[0]
            raise UpstreamError(f"the Go module proxy did not give {module}@{version}: {reason}")
        print(f"    {module}@{version}: source in the Go module cache", file=log, flush=True)


def previous_karmada_set() -> BinarySet:
    """The Karmada binaries of PREVIOUS_KARMADA (wrapper upstream/karmada-prev): tests/test_previous_release.py runs
    their `--help` against the previous release's rendered flags, and the upgrade rehearsal starts from them."""
    return _karmada_set("karmada-prev", PREVIOUS_KARMADA, "karmada-prev")


def binary_sets() -> tuple[BinarySet, ...]:
    release = versions.release(versions.KARMADA_VERSION)
    kube = release.kube_apiserver
    etcd = versions.etcd_release(release.etcd)
    karmada = versions.KARMADA_VERSION
    return (
        BinarySet("etcd", "go.etcd.io/etcd/server/v3", etcd,
                  (("go.etcd.io/etcd/server/v3", "etcd"), ("go.etcd.io/etcd/etcdctl/v3", "etcdctl")),
                  ldflags=("-s", "-w", f"-X go.etcd.io/etcd/api/v3/version.GitSHA={etcd}"), wrapper="etcd",
                  requires=("go.etcd.io/etcd/etcdctl/v3", "go.etcd.io/etcd/server/v3"), cold_minutes="1-2"),
        BinarySet("kube", "k8s.io/kubernetes", kube,
                  tuple((f"k8s.io/kubernetes/cmd/{b}", b) for b in
                        ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")),
                  tags="selinux,notest", ldflags=_kube_ldflags(kube), wrapper="kube", cold_minutes="5-40"),
        _karmada_set("karmada", karmada, "karmada"),
        BinarySet("kwok", "sigs.k8s.io/kwok", versions.KWOK_VERSION,
                  (("sigs.k8s.io/kwok/cmd/kwok", "kwok"), ("sigs.k8s.io/kwok/cmd/kwokctl", "kwokctl")),
                  ldflags=("-s", "-w"), cold_minutes="2-8"),
    )


class UpstreamError(Exception):
    """One line for the user; the build stops with exit code 2."""


def go_version() -> str:
    go = shutil.which("go")
    if go is None:
        raise UpstreamError("Go is not installed: the upstream binaries are built with the Go toolchain "
                            "(go 1.25 or newer on PATH)")
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or "unknown"


def binary(name: str, karmada: str | None = None) -> Path | None:
    """Where `name` (e.g. `kube-apiserver`, `karmada-agent`) is installed at the pinned version, or None.
    `karmada=PREVIOUS_KARMADA` asks for a Karmada binary of the `karmada-prev` set instead."""
    try:
        gov = go_version()
    except UpstreamError:
        return None
    if karmada is not None and karmada != versions.KARMADA_VERSION:
        prev = previous_karmada_set()
        if karmada != prev.version or name not in (file for _, file in prev.binaries):
            raise KeyError(f"{name} at Karmada {karmada} is not built here (only {prev.version}, "
                           "`python -m upstream.build --only karmada-prev`)")
        return built(prev, name, gov)
    for bset in binary_sets():
        if name in (file for _, file in bset.binaries):
            return built(bset, name, gov)
    raise KeyError(f"{name} is not one of the upstream binaries ({', '.join(all_binary_names())})")


def built(bset: BinarySet, name: str, gov: str | None = None) -> Path | None:
    """Where `name` of `bset` is installed, or None (not built, or no Go)."""
    if gov is None:
        try:
            gov = go_version()
        except UpstreamError:
            return None
    directory = bset.directory(gov)
    path = directory / name
    return path if (directory / "BUILD.json").is_file() and path.is_file() else None


def all_binary_names() -> list[str]:
    return [file for bset in binary_sets() for _, file in bset.binaries]


_REFUSED = re.compile(r"(?P<module>[\w./~-]+)@(?P<version>v[\w.+-]+): (?:reading|verifying|Get) \S+: "
                      r"(?P<why>\d{3} [\w ]+|[^\n]*not found[^\n]*)")


def explain_failure(bset: BinarySet, output: str) -> str:
    """One line for a failed `go` run: the refused module when the proxy refused one, else the last error."""
    refused = _REFUSED.search(output)
    if refused:
        return (f"the Go module proxy refuses {refused['module']}@{refused['version']} ({refused['why'].strip()}), "
                f"needed for {bset.name} {bset.version}: pin the nearest version it serves in "
                f"components/versions.py (`go list -m -versions {refused['module']}`), then "
                f"`python -m upstream.build --pin`")
    if "missing go.sum entry" in output or "updates to go.mod needed" in output:
        return (f"upstream/{bset.wrapper}/go.mod is out of date for {bset.module} {bset.version}: "
                "run `python -m upstream.build --pin`")
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return f"building {bset.name} {bset.version} failed: {lines[-1] if lines else 'go exited without output'}"


def _required_version(gomod: Path, module: str) -> str | None:
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)} (v\S+)", gomod.read_text(), re.M)
    return match.group(1) if match else None


def check_wrapper(bset: BinarySet) -> None:
    """The wrapper's go.mod must pin what components/versions.py says; otherwise one line says how to fix it."""
    wrapper = bset.wrapper_dir()
    if wrapper is None:
        return
    gomod = wrapper / "go.mod"
    pinned = _required_version(gomod, bset.module) if gomod.is_file() else None
    if pinned != bset.version:
        raise UpstreamError(f"upstream/{bset.wrapper}/go.mod pins {bset.module} {pinned or '(nothing)'} but "
                            f"components/versions.py says {bset.version}: run `python -m upstream.build --pin`")


def _go_env(gobin: Path | None = None) -> dict[str, str]:
    env = dict(os.environ, CGO_ENABLED="0", GOTOOLCHAIN="local", GOFLAGS="-buildvcs=false")
    if gobin is not None:
        env["GOBIN"] = str(gobin)
    return env


def _command(bset: BinarySet, out: Path) -> tuple[list[str], Path, dict[str, str]]:
    flags = ["-trimpath", "-v"]
    if bset.tags:
        flags += ["-tags", bset.tags]
    if bset.ldflags:
        flags += ["-ldflags", " ".join(bset.ldflags)]
    packages = [pkg for pkg, _ in bset.binaries]
    wrapper = bset.wrapper_dir()
    if wrapper is not None:
        return ["go", "build", *flags, "-o", f"{out}/", *packages], wrapper, _go_env()
    return (["go", "install", *flags, *(f"{pkg}@{bset.version}" for pkg in packages)], out,
            _go_env(gobin=out))


class _Progress:
    """Packages compiled and time spent, redrawn on a terminal, a line a minute when piped."""

    def __init__(self, label: str, stream: object = sys.stderr) -> None:
        self.label, self.stream = label, stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.start = self.last = time.monotonic()
        self.packages = 0

    def tick(self, line: str) -> None:
        if line and not line.startswith(("go: ", "#")) and " " not in line.strip():
            self.packages += 1
        now = time.monotonic()
        if self.tty and now - self.last >= 0.5:
            self._write(f"\r  {self.label}: {self.packages} packages, {self._elapsed(now)}\x1b[K")
            self.last = now
        elif not self.tty and now - self.last >= 60:
            self._write(f"  {self.label}: {self.packages} packages, {self._elapsed(now)}\n")
            self.last = now

    def done(self) -> float:
        seconds = time.monotonic() - self.start
        if self.tty:
            self._write("\r\x1b[K")
        return seconds

    def _elapsed(self, now: float) -> str:
        seconds = int(now - self.start)
        return f"{seconds // 60}m{seconds % 60:02d}s"

    def _write(self, text: str) -> None:
        self.stream.write(text)  # type: ignore[attr-defined]
        self.stream.flush()  # type: ignore[attr-defined]


def build_set(bset: BinarySet, gov: str, *, log: object = sys.stderr) -> tuple[Path, float | None]:
    """Install one set unless its stamped directory exists; returns (directory, seconds or None if cached)."""
    final = bset.directory(gov)
    if (final / "BUILD.json").is_file() and all((final / f).is_file() for _, f in bset.binaries):
        return final, None
    check_wrapper(bset)
    final.parent.mkdir(parents=True, exist_ok=True)
    names = ", ".join(f for _, f in bset.binaries)
    print(f"==> {bset.name} {bset.version}: {names} (a cold build takes about {bset.cold_minutes} min on 2 cores)",
          file=log, flush=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{bset.name}-", dir=final.parent))
    tmp.chmod(0o755)
    try:
        argv, cwd, env = _command(bset, tmp)
        progress = _Progress(bset.name, log)
        captured: list[str] = []
        with subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                captured.append(line)
                progress.tick(line.rstrip("\n"))
            rc = proc.wait()
        seconds = progress.done()
        if rc != 0:
            raise UpstreamError(explain_failure(bset, "".join(captured[-200:])))
        for pkg, file in bset.binaries:
            built = tmp / _default_name(pkg)
            if not (tmp / file).is_file() and built.is_file():
                built.rename(tmp / file)
        missing = [f for _, f in bset.binaries if not (tmp / f).is_file()]
        if missing:
            raise UpstreamError(f"building {bset.name} {bset.version} left no {', '.join(missing)}")
        stamp = {"set": bset.name, "module": bset.module, "version": bset.version, "go": gov, "tags": bset.tags,
                 "ldflags": list(bset.ldflags), "binaries": [f for _, f in bset.binaries],
                 "seconds": round(seconds, 1)}
        (tmp / "BUILD.json").write_text(json.dumps(stamp, indent=2) + "\n")
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
        print(f"    {bset.name} {bset.version} built in {seconds / 60:.1f} min -> {final}", file=log, flush=True)
        return final, seconds
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _default_name(package: str) -> str:
    """The file `go build`/`go install` names a main package: its last element, or the one before a `/vN`."""
    parts = package.split("/")
    return parts[-2] if re.fullmatch(r"v\d+", parts[-1]) else parts[-1]


def pin(sets: Sequence[BinarySet] | None = None, log: object = sys.stderr) -> None:
    """Rewrite the wrapper modules for the versions in components/versions.py and tidy them (needs the proxy)."""
    for bset in sets if sets is not None else (*binary_sets(), previous_karmada_set()):
        wrapper = bset.wrapper_dir()
        if wrapper is None:
            continue
        wrapper.mkdir(exist_ok=True)
        text = _wrapper_gomod(bset)
        (wrapper / "go.mod").write_text(text)
        (wrapper / "go.sum").unlink(missing_ok=True)
        result = subprocess.run(["go", "mod", "tidy"], cwd=wrapper, env=_go_env(), capture_output=True, text=True,
                                check=False)
        if result.returncode != 0:
            raise UpstreamError(explain_failure(bset, result.stderr))
        print(f"    upstream/{bset.wrapper}/go.mod pins {bset.module} {bset.version}", file=log)


def _wrapper_gomod(bset: BinarySet) -> str:
    """A wrapper that requires the pinned module(s) and names the binaries as tools; for k8s.io/kubernetes also
    the replace block its staging modules need. `go` and `godebug` lines follow the pinned module's go.mod."""
    download = subprocess.run(["go", "mod", "download", "-json", f"{bset.module}@{bset.version}"],
                              env=_go_env(), capture_output=True, text=True, check=False)
    if download.returncode != 0:
        raise UpstreamError(explain_failure(bset, download.stdout + download.stderr))
    upstream_mod = Path(json.loads(download.stdout)["GoMod"]).read_text()
    go_line = re.search(r"^go (\S+)", upstream_mod, re.M)
    godebug = re.search(r"^godebug .*$", upstream_mod, re.M)
    requires = "".join(f"\t{m} {bset.version}\n" for m in (bset.requires or (bset.module,)))
    text = (f"// Pins {bset.module} to components/versions.py; written by `python -m upstream.build --pin`.\n"
            f"module karmada-hub.invalid/upstream/{bset.wrapper}\n\n"
            f"go {go_line.group(1) if go_line else '1.25.0'}\n\n"
            f"{godebug.group(0) + chr(10) + chr(10) if godebug else ''}"
            f"require (\n{requires})\n\n"
            "tool (\n" + "".join(f"\t{pkg}\n" for pkg, _ in bset.binaries) + ")\n")
    if bset.module != "k8s.io/kubernetes":
        return text
    # k8s.io/kubernetes requires each staging module at v0.0.0 and replaces it with ./staging/src/k8s.io/<m>; the
    # proxy serves them as v0.<minor>.<patch> of the same release (kubernetes/kubernetes#79384).
    staging = sorted(set(re.findall(r"^\s+(k8s\.io/[\w.-]+) v0\.0\.0$", upstream_mod, re.M)))
    _, minor = versions.minor_of(bset.version)
    patch = bset.version.split(".")[2]
    replaces = "".join(f"\t{m} => {m} v0.{minor}.{patch}\n" for m in staging)
    return (f"{text}\n// k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with "
            f"./staging; the proxy\n// serves them as v0.{minor}.x (kubernetes/kubernetes#79384). "
            "Exactly its v0.0.0 requires.\n"
            f"replace (\n{replaces})\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m upstream.build", description=(
        "Build the upstream binaries the tests run (kube-*, kubectl, Karmada, etcd, kwok) at the versions in "
        f"components/versions.py, into {cache_root()} (override with ${CACHE_ENV})."))
    parser.add_argument("--check", action="store_true", help="build nothing: exit 1 when a binary is missing")
    parser.add_argument("--list", action="store_true", help="print where each binary is (missing ones too)")
    parser.add_argument("--only", action="append", default=[], metavar="SET",
                        help="build only this set (etcd, kube, karmada, kwok, karmada-prev: the previous Karmada "
                             "minor); repeatable")
    parser.add_argument("--pin", action="store_true",
                        help="rewrite upstream/*/go.mod for the pinned versions and tidy them (needs the proxy)")
    args = parser.parse_args(argv)
    sets = (*binary_sets(), previous_karmada_set())
    unknown = sorted(set(args.only) - {s.name for s in sets})
    if unknown:
        print(f"error: --only {unknown[0]}: not a set (choose from {', '.join(s.name for s in sets)})",
              file=sys.stderr)
        return 2
    chosen = [s for s in sets if not args.only or s.name in args.only]
    try:
        gov = go_version()
        if args.pin:
            pin([s for s in sets if not args.only or s.name in args.only])
            return 0
        if args.check or args.list:
            missing = []
            for bset in chosen:
                directory = bset.directory(gov)
                for _, file in bset.binaries:
                    present = (directory / "BUILD.json").is_file() and (directory / file).is_file()
                    missing += [] if present else [file]
                    if args.list:
                        print(f"{file:28} {directory / file if present else '(missing)'}")
            if args.check and missing:
                print(f"missing: {', '.join(missing)} (run `make upstream`)", file=sys.stderr)
            return 1 if missing else 0
        started = time.monotonic()
        built = 0
        for bset in chosen:
            _, seconds = build_set(bset, gov)
            built += seconds is not None
        if not args.only:
            download_sources()
        total = time.monotonic() - started
        print(f"upstream binaries ready in {cache_root()} ({built} set(s) built, {total:.0f} s)", file=sys.stderr)
        return 0
    except UpstreamError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: nothing half-built is kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""The toolchain: wrapper modules, the cache, and a missing or too-old Go."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest
from filelock import FileLock

from kbc.errors import (
    BuildError,
    BuildLanesError,
    BuildPrerequisiteError,
    ModuleHashMismatchError,
    ToolMissingError,
    UnknownBinaryError,
)
from kbc.supply import paths
from kbc.supply.lock import load_lock
from kbc.supply.pins import BinarySpec, GoBuild
from kbc.supply.toolchain import STAMP, Toolchain, check_cgo, pin_environment, pinned_download
from kbc.supply.toolchain._gomod import GoMod, Replace, generated_main, parse_gomod, wrapper_gomod

GO = shutil.which("go")
needs_go = pytest.mark.skipif(GO is None, reason="parsing go.mod uses the go command, which is not on PATH")


def fake_build(toolchain: Toolchain, owner: str, fingerprint: str | None = None) -> Path:
    """Put a stand-in binary and build stamp where *owner*'s build would land."""
    directory = toolchain.directory(owner)
    directory.mkdir(parents=True)
    for spec in toolchain.builds[owner].binaries:
        (directory / spec.name).write_text("#!/bin/sh\n")
        (directory / spec.name).chmod(0o755)
    stamp = fingerprint if fingerprint is not None else toolchain._fingerprint(toolchain.builds[owner])
    (directory / STAMP).write_text(json.dumps({"fingerprint": stamp}))
    return directory


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KBC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_wrapper_maps_directory_replacements_and_keeps_the_others() -> None:
    build = GoBuild(
        "k8s.io/kubernetes",
        "v1.99.7",
        (BinarySpec("kube-apiserver", "cmd/kube-apiserver"),),
        {"k8s.io/*": "v0.{minor}.{patch}"},
    )
    upstream = GoMod(
        "k8s.io/kubernetes",
        "1.25.0",
        (("default", "go1.25"),),
        (
            Replace("k8s.io/api", "", "./staging/src/k8s.io/api", ""),
            Replace("github.com/x/y", "v1.0.0", "github.com/x/y", "v1.0.1"),
            Replace("go.etcd.io/etcd", "", "./FORBIDDEN_DEPENDENCY", ""),
        ),
    )
    text, notes = wrapper_gomod(build, upstream, "kbc.local/build/k8s")
    assert "require k8s.io/kubernetes v1.99.7" in text
    assert "\tk8s.io/api => k8s.io/api v0.99.7" in text
    assert "\tgithub.com/x/y v1.0.0 => github.com/x/y v1.0.1" in text
    assert "godebug default=go1.25" in text and "go 1.25.0" in text
    assert "FORBIDDEN" not in text and notes == [
        "dropped directory replacement go.etcd.io/etcd => ./FORBIDDEN_DEPENDENCY"
    ]


def test_generated_main_calls_the_library() -> None:
    text = generated_main("go.etcd.io/etcd/server/v3/etcdmain", "Main(os.Args)")
    assert '"go.etcd.io/etcd/server/v3/etcdmain"' in text and '"os"' in text
    assert "func main() { etcdmain.Main(os.Args) }" in text


@needs_go
def test_parse_gomod_reads_replace_and_godebug(tmp_path: Path) -> None:
    gomod = tmp_path / "go.mod"
    gomod.write_text(
        "module example.com/m\n\ngo 1.25.0\n\ngodebug default=go1.25\n\n"
        "replace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n\ta.b/c v1.0.0 => a.b/c v1.0.2\n)\n"
    )
    assert GO is not None
    parsed = parse_gomod(GO, gomod)
    assert parsed.go == "1.25.0" and parsed.godebug == (("default", "go1.25"),)
    assert parsed.replaces[0].is_directory and not parsed.replaces[1].is_directory


def test_missing_go_says_how_to_get_it(cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.delenv("KBC_GO", raising=False)
    with pytest.raises(ToolMissingError) as info:
        Toolchain(load_lock(), out=io.StringIO()).ensure(["kind"])
    assert "go was not found on PATH" in str(info.value)
    assert "Install Go" in str(info.value)


def test_too_old_go_is_refused_before_building(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if GO is None:
        pytest.skip("needs the go command to download the module's go.mod")
    fake = tmp_path / "go"
    # Answers "go env GOVERSION" with an old version and forwards everything else to the real go.
    fake.write_text(
        f'#!/bin/sh\nif [ "$1 $2" = "env GOVERSION" ]; then echo go1.20.1; exit 0; fi\nexec {GO} "$@"\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("KBC_GO", str(fake))
    with pytest.raises(ToolMissingError, match=r"go >= 1\.\d+.*found go1\.20\.1"):
        Toolchain(load_lock(), out=io.StringIO()).ensure(["kwokctl"])


def test_built_binaries_are_reused_without_running_go(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    toolchain = Toolchain(load_lock(), out=io.StringIO())
    directory = fake_build(toolchain, "kind")
    monkeypatch.setenv("KBC_GO", "/nonexistent/go")  # any attempt to build would fail
    assert toolchain.ensure(["kind"]) == {"kind": directory / "kind"}
    assert [s.built for s in toolchain.status() if s.name == "kind"] == [True]


def test_a_changed_recipe_is_not_fresh(cache: Path) -> None:
    toolchain = Toolchain(load_lock(), out=io.StringIO())
    fake_build(toolchain, "kind", fingerprint="something-else")
    assert [s.built for s in toolchain.status() if s.name == "kind"] == [False]


def test_unknown_binary_name_lists_the_known_ones() -> None:
    with pytest.raises(UnknownBinaryError, match=r"known: .*kube-apiserver"):
        Toolchain(load_lock(), out=io.StringIO()).ensure(["kubectl-nope"])


def test_cli_reports_a_malformed_lock_by_field(tmp_path: Path) -> None:
    bad = tmp_path / "charts-lock.yaml"
    bad.write_text('schemaVersion: 1\nkubernetes: {version: "1.35"}\ntools: {}\ncomponents: {}\n')
    proc = subprocess.run(
        [sys.executable, "-m", "kbc.cli", "--lock", str(bad), "toolchain", "--list"],
        capture_output=True,
        text=True,
        env={**os.environ},
        check=False,
    )
    assert proc.returncode == 1
    assert "kubernetes.version: '1.35' is not a Go module version" in proc.stderr


def test_a_second_run_waits_for_the_first_and_reuses_its_build(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = load_lock()
    out = io.StringIO()
    toolchain = Toolchain(lock, out=out)
    version = lock.tools["kind"].build.version
    (paths.builds_dir() / "kind" / version).mkdir(parents=True)
    first_run = FileLock(str(paths.builds_dir() / "kind" / f"{version}.lock"))
    first_run.acquire()
    monkeypatch.setenv("KBC_GO", "/nonexistent/go")  # the waiting run must not build
    result: dict[str, object] = {}
    waiter = threading.Thread(target=lambda: result.update(toolchain.ensure(["kind"])))
    waiter.start()
    deadline = time.monotonic() + 10
    while "waiting" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "another run is building it; waiting" in out.getvalue()
    assert waiter.is_alive()
    directory = fake_build(toolchain, "kind")  # the first run finishes its build
    first_run.release()
    waiter.join(timeout=10)
    assert result == {"kind": directory / "kind"}


def test_optional_tools_are_built_only_when_named(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``make conformance`` runs ``kbc toolchain``: the test-only tools must not make it wait."""
    lock = load_lock()
    optional = lock.optional_builds()
    assert optional, "the lock marks its test-only tools optional"
    toolchain = Toolchain(lock, out=io.StringIO())
    for owner in toolchain.builds:
        if owner not in optional:
            fake_build(toolchain, owner)
    monkeypatch.setenv("KBC_GO", "/nonexistent/go")  # building an optional tool would fail here
    built = toolchain.ensure()
    owners = {toolchain._owner_of[name] for name in built}
    assert owners == set(toolchain.builds) - optional
    with pytest.raises(ToolMissingError):
        toolchain.ensure([next(s.name for s in toolchain.builds[sorted(optional)[0]].binaries)])


def test_a_cgo_build_whose_c_header_is_missing_names_the_package_to_install() -> None:
    build = GoBuild(
        "example.com/needs-c",
        "v1.0.0",
        (BinarySpec("x", "."),),
        cgo=True,
        needs={"kbc-no-such-header.h": "libkbc-dev"},
    )
    with pytest.raises(BuildPrerequisiteError, match=r"<kbc-no-such-header.h>.*apt-get install libkbc-dev"):
        check_cgo(build, {})
    with pytest.raises(BuildPrerequisiteError, match=r"C compiler 'kbc-no-such-cc'.*apt-get install gcc"):
        check_cgo(build, {"CC": "kbc-no-such-cc"})
    check_cgo(dataclasses.replace(build, needs={"stdio.h": "libc6-dev"}), {})


def test_default_recipe_fields_keep_the_fingerprint_of_binaries_already_built() -> None:
    toolchain = Toolchain(load_lock())
    plain = GoBuild("example.com/m", "v1.0.0", (BinarySpec("x", "."),))
    assert toolchain._fingerprint(plain) == toolchain._fingerprint(
        dataclasses.replace(plain, tags=(), cgo=False)
    )
    assert toolchain._fingerprint(plain) != toolchain._fingerprint(
        dataclasses.replace(plain, tags=("seccomp",))
    )
    tagged = dataclasses.replace(plain, binaries=(BinarySpec("x", ".", tags=("no_grpc",)),))
    assert toolchain._fingerprint(plain) != toolchain._fingerprint(tagged)


def _file_proxy(root: Path, module: str, version: str, files: dict[str, str]) -> None:
    """A module proxy on disk (``GOPROXY=file://…``) serving *module* at *version* with *files*."""
    where = root / module / "@v"
    where.mkdir(parents=True)
    (where / "list").write_text(f"{version}\n")
    (where / f"{version}.info").write_text(json.dumps({"Version": version, "Time": "2026-01-01T00:00:00Z"}))
    (where / f"{version}.mod").write_text(files["go.mod"])
    with zipfile.ZipFile(where / f"{version}.zip", "w") as archive:
        for name, text in files.items():
            archive.writestr(f"{module}@{version}/{name}", text)


@needs_go
def test_a_module_pinned_by_hash_is_verified_against_the_lock_and_a_mismatch_fails_closed(
    tmp_path: Path,
) -> None:
    """``build.sum`` (a DRA driver's): the download is checked against the lock's go.sum lines, never the
    checksum database, and one that differs is refused before anything is built."""
    assert GO is not None
    module, version = "example.com/kbc-pinned", "v1.0.0"
    _file_proxy(
        tmp_path / "proxy",
        module,
        version,
        {"go.mod": f"module {module}\n\ngo 1.22\n", "main.go": "package main\n\nfunc main() {}\n"},
    )
    env = {
        **os.environ,
        "GOPROXY": f"file://{tmp_path / 'proxy'}",
        "GOMODCACHE": str(tmp_path / "modcache"),
        "GOFLAGS": "-modcacherw",
        "GOTOOLCHAIN": "local",
        "GONOSUMDB": "example.com/other",
    }
    first = subprocess.run(
        [GO, "mod", "download", "-json", f"{module}@{version}"],
        env={**env, "GONOSUMDB": module},
        capture_output=True,
        text=True,
        check=True,
    )
    answer = json.loads(first.stdout)
    pinned = GoBuild(
        module, version, (BinarySpec("x", "."),), sum=answer["Sum"], go_mod_sum=answer["GoModSum"]
    )
    info = pinned_download(GO, pinned, env, tmp_path / "ok", tmp_path / "ok.log")
    assert info["Sum"] == pinned.sum and Path(info["Dir"]).is_dir()
    assert (tmp_path / "ok" / "go.sum").read_text().splitlines() == pinned.go_sum_lines()
    assert env["GONOSUMDB"] == "example.com/other", "the caller's environment is left as it was"
    other = dataclasses.replace(pinned, sum="h1:" + "A" * 43 + "=")
    with pytest.raises(ModuleHashMismatchError, match=r"does not match the h1: hash charts-lock.yaml pins"):
        pinned_download(GO, other, env, tmp_path / "bad", tmp_path / "bad.log")
    # Also where nothing is cached yet: the download itself is refused.
    fresh = {**env, "GOMODCACHE": str(tmp_path / "modcache2")}
    with pytest.raises(ModuleHashMismatchError, match="checksum mismatch"):
        pinned_download(GO, other, fresh, tmp_path / "bad2", tmp_path / "bad2.log")


def test_a_pinned_module_is_left_out_of_the_checksum_database_and_nothing_else() -> None:
    build = GoBuild("example.com/m", "v1.0.0", (BinarySpec("x", "."),), sum="h1:" + "A" * 43 + "=")
    env = {"GONOSUMDB": "example.com/private"}
    pin_environment(build, env)
    assert env["GONOSUMDB"] == "example.com/private,example.com/m"
    pin_environment(build, env)
    assert env["GONOSUMDB"] == "example.com/private,example.com/m"
    unpinned: dict[str, str] = {}
    pin_environment(dataclasses.replace(build, sum=""), unpinned)
    assert unpinned == {}
    toolchain = Toolchain(load_lock())
    assert toolchain._fingerprint(dataclasses.replace(build, sum="")) != toolchain._fingerprint(build)


def test_modules_build_two_at_once_and_a_failure_stops_the_other_lane(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    lock = load_lock()
    refused, slow = lock.tools["kind"].build.module, lock.tools["helm"].build.module
    pidfile = tmp_path / "slow.pid"
    fake = tmp_path / "go"
    # kind's module is refused as soon as helm's download runs (at most 10 s on: were the two not built at
    # once, it would be refused alone); helm's download never ends until it is stopped.
    fake.write_text(
        "#!/bin/sh\n"
        f'case "$*" in\n'
        f'  *"{refused}@"*) i=0\n'
        f"    while [ ! -s {pidfile} ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n"
        f'    echo \'{{"Error": "the proxy refused {refused}"}}\'; exit 1;;\n'
        f'  *"{slow}@"*) echo $$ > {pidfile}; exec sleep 60;;\n'
        "esac\nexit 2\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("KBC_GO", str(fake))
    monkeypatch.setenv("KBC_BUILD_LANES", "2")
    out = io.StringIO()
    started = time.monotonic()
    with pytest.raises(BuildError, match=f"the proxy refused {refused}"):
        Toolchain(lock, out=out).ensure(["helm", "kind"])
    assert "building 2 modules, 2 at once" in out.getvalue()
    assert time.monotonic() - started < 30, "the failure stopped the slow lane instead of waiting it out"
    deadline = time.monotonic() + 5
    while not pidfile.is_file() and time.monotonic() < deadline:
        time.sleep(0.05)
    slow_pid = int(pidfile.read_text())
    assert (
        not Path(f"/proc/{slow_pid}").exists() or "Z" in Path(f"/proc/{slow_pid}/stat").read_text().split()[2]
    )


def test_a_bad_number_of_lanes_names_the_variable(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBC_BUILD_LANES", "two")
    monkeypatch.setenv("KBC_GO", "/nonexistent/go")
    with pytest.raises(BuildLanesError, match="KBC_BUILD_LANES='two': give the number of modules"):
        Toolchain(load_lock(), out=io.StringIO()).ensure(["helm", "kind"])

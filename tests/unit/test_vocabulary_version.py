"""The vocabulary says when it changes: ``kbc.__version__`` is pyproject's, CHANGELOG.md has a section
for it in Keep a Changelog's shape naming the pins each release was made against, and a Kueue or
Volcano wait called in the order of before 0.2.0 fails at once naming its signature as it is now."""

from __future__ import annotations

import importlib.metadata
import inspect
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from types import ModuleType
from typing import Any, NoReturn, cast

import pytest

import kbc
from kbc import components
from kbc._signature import namespace_second, shown_signature
from kbc.kube import Kube, Obj
from kbc.kueue import waits as kueue_waits
from kbc.kueue.waits import wait_workload_of
from kbc.supply import paths
from kbc.supply.lock import load_lock
from kbc.volcano import waits as volcano_waits
from kbc.volcano.waits import job_pods, wait_podgroup_of

ROOT = paths.repo_root()
JOB: Obj = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "uid": "u-1"}}


class Untouchable:
    """A kube whose every use fails the test: the check must come before the cluster."""

    def __getattribute__(self, name: str) -> NoReturn:
        pytest.fail(f"the wait used kube.{name} before it checked its arguments")


class Reached(BaseException):
    """Raised by the first use of :class:`Reaching`: the call got past the check to the cluster. A
    BaseException, so that no retry of the wait engine takes it for an API error."""


class Reaching:
    def __getattribute__(self, name: str) -> NoReturn:
        raise Reached(name)


def untouchable() -> Kube:
    return cast(Kube, Untouchable())


def call(wait: Callable[..., object], *args: object, **kwargs: object) -> object:
    """Call *wait* as a scenario written to another signature would: past the type checker."""
    return wait(*args, **kwargs)


def checked_waits() -> list[tuple[str, Callable[..., object]]]:
    """Every public function of the two waits modules whose second parameter is ``namespace``."""
    found = []
    modules: list[ModuleType] = [kueue_waits, volcano_waits]
    for module in modules:
        for name in module.__all__:
            fn = getattr(module, name)
            if list(inspect.signature(fn).parameters)[1:2] == ["namespace"]:
                found.append((f"{module.__name__}.{name}", fn))
    return found


WAITS = checked_waits()


# --- the order of before ------------------------------------------------------------------------


def test_the_order_of_before_names_the_new_signature_before_touching_the_cluster() -> None:
    with pytest.raises(TypeError) as raised:
        call(wait_workload_of, untouchable(), JOB, "ns")
    said = str(raised.value)
    assert said.startswith(
        "wait_workload_of(kube, namespace, *owners, timeout=...): namespace must be a str, "
        "got dict (a Job object?). Since kbatch-conformance 0.2.0 the waits take the namespace second"
    ), said
    assert "write wait_workload_of(kube, 'ns', <Job train>)" in said, said
    assert "CHANGELOG.md" in said, said


def test_a_namespace_given_by_keyword_is_moved_second_in_the_rewritten_call() -> None:
    with pytest.raises(TypeError, match=re.escape("write wait_workload_of(kube, 'ns', <Job train>) where")):
        call(wait_workload_of, untouchable(), JOB, namespace="ns")


@pytest.mark.parametrize(("name", "wait"), WAITS, ids=[name for name, _ in WAITS])
def test_every_wait_taking_the_namespace_second_checks_it(name: str, wait: Callable[..., object]) -> None:
    assert hasattr(wait, "__wrapped__"), f"{name} is not decorated with kbc._signature.namespace_second"
    with pytest.raises(TypeError) as raised:
        call(wait, untouchable(), JOB, "ns")
    said = str(raised.value)
    assert said.startswith(f"{shown_signature(wait)}: namespace must be a str, got dict"), said
    assert "CHANGELOG.md" in said, said


def test_the_wrapped_waits_keep_their_signature() -> None:
    for name, wait in WAITS:
        unwrapped = getattr(wait, "__wrapped__", wait)
        assert inspect.signature(wait) == inspect.signature(unwrapped), name
        assert wait.__doc__ and wait.__doc__ == unwrapped.__doc__, name


def test_an_object_second_and_a_str_third_is_the_namespace_error_where_the_job_goes_third() -> None:
    with pytest.raises(TypeError) as raised:
        call(wait_podgroup_of, untouchable(), JOB, "ns")
    said = str(raised.value)
    assert said.startswith(
        "wait_podgroup_of(kube, namespace, job, *, timeout=...): namespace must be a str, got dict"
    ), said
    assert "write wait_podgroup_of(kube, 'ns', <Job train>)" in said, said


@pytest.mark.parametrize(
    ("wait", "args", "parameter"),
    [
        (wait_podgroup_of, ("ns", "gang"), "job"),
        (volcano_waits.create_vcjob, ("ns", "gang"), "job"),
        (wait_workload_of, ("ns", JOB, "train"), "owners"),
    ],
)
def test_a_name_where_the_api_object_goes_names_the_signature(
    wait: Callable[..., object], args: tuple[object, ...], parameter: str
) -> None:
    with pytest.raises(TypeError) as raised:
        call(wait, untouchable(), *args)
    said = str(raised.value)
    assert said.startswith(f"{shown_signature(wait)}: {parameter} takes the API object itself, got str"), said
    assert "CHANGELOG.md" in said, said


# --- what scenarios write passes ------------------------------------------------------------------


def legitimate_arguments(wait: Callable[..., object]) -> tuple[list[object], dict[str, object]]:
    """Arguments of the types *wait* declares, as a scenario writes them: the namespace second."""
    values: dict[str, object] = {"Obj": JOB, "str": "x", "int": 2, "set[str]": {"x"}, "Sequence[str]": ["x"]}
    args: list[object] = []
    kwargs: dict[str, object] = {}
    for index, p in enumerate(inspect.signature(wait).parameters.values()):
        if index == 0:
            args.append(Reaching())
        elif p.kind is p.VAR_POSITIONAL:
            args.append(values[str(p.annotation)])
        elif p.default is not p.empty:
            continue
        elif str(p.annotation).startswith("Callable"):
            kwargs[p.name] = lambda _obj: None
        elif p.kind is p.KEYWORD_ONLY:
            kwargs[p.name] = values[str(p.annotation)]
        else:
            args.append(values[str(p.annotation)])
    return args, kwargs


@pytest.mark.parametrize(("name", "wait"), WAITS, ids=[name for name, _ in WAITS])
def test_a_call_in_the_order_of_now_goes_on_to_the_cluster(name: str, wait: Callable[..., object]) -> None:
    args, kwargs = legitimate_arguments(wait)
    with pytest.raises(Reached):
        wait(*args, **kwargs)


def test_the_checked_wait_returns_what_the_wait_does() -> None:
    asked: list[tuple[Any, ...]] = []

    class Listing:
        def list(self, *args: Any, **kwargs: Any) -> list[Obj]:
            asked.append((*args, kwargs))
            return [JOB]

    assert job_pods(cast(Kube, Listing()), "ns", "gang") == [JOB]
    assert asked and asked[0][-1]["namespace"] == "ns", asked


def test_the_check_refuses_a_function_without_the_namespace_second() -> None:
    def wait_for(kube: Kube, name: str, namespace: str) -> None:
        """An order of before."""

    with pytest.raises(TypeError, match=re.escape("wait_for(kube, name, namespace): namespace_second needs")):
        namespace_second(wait_for)


# --- the version ------------------------------------------------------------------------------------


def pyproject_version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def test_kbc_version_is_pyproject_s() -> None:
    assert kbc.__version__ == pyproject_version(), (
        f"kbc.__version__ is {kbc.__version__}, pyproject.toml says {pyproject_version()}: "
        "the installed metadata is stale; run `uv sync` (make does it when pyproject.toml changes)"
    )


def test_kbc_version_from_a_checkout_that_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    assert kbc.__version__ == pyproject_version()


def test_importing_kbc_loads_nothing_else() -> None:
    code = "import sys; before = set(sys.modules); import kbc; print(sorted(set(sys.modules) - before))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()
    assert loaded == "['kbc']", loaded


# --- the changelog ----------------------------------------------------------------------------------

CHANGE_TYPES = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
RELEASE = re.compile(r"^## \[(\d+)\.(\d+)\.(\d+)\] - (\d{4}-\d{2}-\d{2})$")


def changelog_sections() -> list[tuple[str, str]]:
    """CHANGELOG.md's ``##`` headings with the text under each, in order."""
    text = (ROOT / "CHANGELOG.md").read_text()
    parts = re.split(r"^(## .*)$", text, flags=re.MULTILINE)
    assert parts[0].startswith("# Changelog\n"), "CHANGELOG.md starts with '# Changelog'"
    return list(zip(parts[1::2], parts[2::2], strict=True))


def test_the_changelog_follows_keep_a_changelog() -> None:
    sections = changelog_sections()
    assert sections and sections[0][0] == "## [Unreleased]", [h for h, _ in sections]
    releases = []
    for heading, _ in sections[1:]:
        match = RELEASE.match(heading)
        assert match, f"{heading!r}: a release is '## [MAJOR.MINOR.PATCH] - YYYY-MM-DD'"
        releases.append((tuple(int(n) for n in match.groups()[:3]), match.group(4)))
    for heading, body in sections:
        kinds = re.findall(r"^### (.*)$", body, flags=re.MULTILINE)
        assert set(kinds) <= CHANGE_TYPES, f"{heading}: {kinds} (Keep a Changelog's are {CHANGE_TYPES})"
        assert len(kinds) == len(set(kinds)), f"{heading}: a kind of change twice: {kinds}"
    assert releases == sorted(releases, reverse=True), f"newest first: {releases}"
    assert len({version for version, _ in releases}) == len(releases), releases


def test_the_newest_release_of_the_changelog_is_the_version() -> None:
    released = [heading for heading, _ in changelog_sections() if RELEASE.match(heading)]
    assert released and released[0].startswith(f"## [{pyproject_version()}] - "), (
        f"pyproject.toml says {pyproject_version()}, CHANGELOG.md's newest release is "
        f"{released[:1]}: move Unreleased's lines under the version when it is bumped"
    )


def test_each_release_names_the_versions_of_its_pins() -> None:
    """Kubernetes, and every component a release names (a component added later is not in an earlier
    release), each with its version; at least one component."""
    lock = load_lock()
    displays = [components.display(name) for name in lock.components]
    for heading, body in changelog_sections():
        if not RELEASE.match(heading):
            continue

        def pinned(name: str, body: str = body) -> bool:
            return re.search(rf"\b{re.escape(name)} v\d+\.\d+\.\d+\b", body, flags=re.IGNORECASE) is not None

        named = [name for name in displays if re.search(rf"\b{re.escape(name)}\b", body)]
        missing = [name for name in ["Kubernetes", *named] if not pinned(name)]
        assert not missing, f"{heading} names no version for {missing}: say what it was released against"
        assert any(pinned(name) for name in displays), f"{heading} names no component's version"

"""One option table: the kbc command and the pytest plugin offer the same options with the same help,
every option has its variable, and a bad value names where it came from."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kbc.cli import commands as cli
from kbc.cli._args import resolved as resolve
from kbc.cluster import options
from kbc.cluster.options import OPTIONS, Option, OptionError
from kbc.supply import paths

ROOT = paths.repo_root()
# argparse and pytest both wrap help to the terminal's width; a wide one keeps each on few lines.
WIDE = {**os.environ, "COLUMNS": "400"}
_OPTION_LINE = re.compile(r"^  (-[-\w]+)")


def helps(text: str) -> dict[str, str]:
    """``--option`` -> its help text, whitespace folded, from argparse's or pytest's --help output."""
    found: dict[str, str] = {}
    current: str | None = None
    for line in text.splitlines():
        match = _OPTION_LINE.match(line)
        if match:
            current = match.group(1).split("=")[0]
            # "--name X, --alias X   help..." or "--name=X   help..."
            rest = re.split(r"\s{2,}", line.strip(), maxsplit=1)
            found[current] = rest[1] if len(rest) > 1 else ""
        elif current is not None and line.startswith(" " * 8) and line.strip():
            found[current] = f"{found[current]} {line.strip()}".strip()
        elif not line.strip():
            current = None
    return {name: " ".join(text.split()) for name, text in found.items()}


def run(*command: str) -> str:
    done = subprocess.run(
        list(command), capture_output=True, text=True, env=WIDE, cwd=ROOT, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def pytest_help() -> dict[str, str]:
    return helps(run(sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"))


def kbc_help(*command: str) -> dict[str, str]:
    return helps(run(sys.executable, "-m", "kbc.cli", *command, "--help"))


def test_every_option_has_one_name_and_its_own_variable() -> None:
    names = [o.name for o in OPTIONS] + [a for o in OPTIONS for a in o.aliases]
    assert len(names) == len(set(names)), names
    variables = [o.env for o in OPTIONS]
    assert len(variables) == len(set(variables)), variables
    assert all(re.fullmatch(r"KBC_[A-Z_]+", v) for v in variables), variables
    assert all(o.where for o in OPTIONS)


@pytest.mark.parametrize(
    "command, where",
    [
        (("cluster", "up"), options.UP),
        (("cluster", "down"), options.DOWN),
        (("lock", "refresh"), options.LOCK),
        (("canary",), options.CANARY),
        ((), options.GLOBAL),
    ],
)
def test_kbc_and_pytest_offer_each_option_with_the_same_help(
    command: tuple[str, ...], where: str, pytest_help: dict[str, str]
) -> None:
    shown = kbc_help(*command)
    ours = {o.name: o for o in options.offered(where)}
    own = {"-h", "--help"}
    strangers = sorted(set(shown) - set(ours) - own)
    assert not strangers, f"kbc {' '.join(command)} offers {strangers}, which the option table does not hold"
    for name, option in ours.items():
        assert name in shown, f"kbc {' '.join(command)} lacks {name}"
        assert f"(${option.env})" in shown[name], f"{name}: its help does not name ${option.env}"
        if options.PYTEST in option.where:
            assert pytest_help.get(name) == shown[name], (
                f"{name} differs:\n  pytest: {pytest_help.get(name)}\n  kbc:    {shown[name]}"
            )


def test_every_pytest_option_of_the_harness_is_in_the_table(pytest_help: dict[str, str]) -> None:
    ours = {o.name for o in options.offered(options.PYTEST)}
    harness = {name for name, text in pytest_help.items() if "($KBC_" in text}
    assert harness == ours
    for name in ours:
        assert f"(${options.BY_NAME[name].env})" in pytest_help[name], name


def test_the_command_line_wins_over_the_variable_and_the_variable_over_the_default() -> None:
    option = options.BY_NAME["--real-nodes"]
    assert option.resolve(None, {}) == 0
    assert option.resolve(None, {"KBC_REAL_NODES": "2"}) == 2
    assert option.resolve(3, {"KBC_REAL_NODES": "2"}) == 3
    mirrors = options.BY_NAME["--mirror"]
    assert mirrors.resolve(None, {"KBC_MIRRORS": "a=b  c=d"}) == ("a=b", "c=d")
    assert mirrors.resolve(["x=y"], {"KBC_MIRRORS": "a=b"}) == ("x=y",)
    keep = options.BY_NAME["--keep-cluster"]
    assert (keep.resolve(None, {}), keep.resolve(None, {"KBC_KEEP_CLUSTER": "yes"})) == (False, True)
    archives = options.BY_NAME["--image-archive"]
    assert archives.resolve(None, {"KBC_IMAGE_ARCHIVES": "a.tar b.tar"}) == (Path("a.tar"), Path("b.tar"))


@pytest.mark.parametrize(
    "name, value, words",
    [
        ("--real-nodes", "two", "$KBC_REAL_NODES='two': expected a whole number"),
        ("--real-nodes", "-1", "$KBC_REAL_NODES='-1': -1 is negative"),
        ("--provider", "kinda", "$KBC_PROVIDER='kinda': 'kinda' is not one of local, kind, existing, auto"),
        ("--keep-cluster", "maybe", "$KBC_KEEP_CLUSTER='maybe': expected 1/true/yes/on or 0/false/no/off"),
    ],
)
def test_a_bad_variable_names_itself(name: str, value: str, words: str) -> None:
    option: Option = options.BY_NAME[name]
    with pytest.raises(OptionError, match=re.escape(words)):
        option.resolve(None, {option.env: value})


def test_kbc_cluster_up_reads_the_variables_the_readme_names(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable, value in {
        "KBC_REAL_NODES": "2",
        "KBC_PROVIDER": "local",
        "KBC_MIRRORS": "registry.k8s.io=127.0.0.1:5000/k8s",
        "KBC_NODE_NAMING": "kind",
        "KBC_CLUSTER_NAME": "from-env",
    }.items():
        monkeypatch.setenv(variable, value)
    resolved = resolve(cli._parser().parse_args(["cluster", "up"]))
    assert (resolved["real_nodes"], resolved["provider"], resolved["node_naming"]) == (2, "local", "kind")
    assert resolved["cluster_name"] == "from-env"
    provider = options.provider_options(resolved)
    assert provider.real_nodes.count == 2 and provider.mirrors[0].target == "127.0.0.1:5000/k8s"
    given = resolve(cli._parser().parse_args(["cluster", "up", "--name", "given", "--real-nodes", "0"]))
    assert (given["cluster_name"], given["real_nodes"]) == ("given", 0)


def test_pytest_refuses_a_bad_variable_with_its_name_not_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "suites"],
        capture_output=True,
        text=True,
        env={**WIDE, "KBC_REAL_NODES": "two"},
        cwd=ROOT,
        check=False,
        timeout=120,
    )
    assert done.returncode == 4, done.stdout + done.stderr
    assert "$KBC_REAL_NODES='two': expected a whole number" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_the_readme_table_names_every_option_with_its_variable() -> None:
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Options") : readme.index("## The suites")]
    rows = [line for line in table.splitlines() if line.startswith("| `--")]
    for option in OPTIONS:
        row = next((r for r in rows if re.search(rf"`{option.name}[` ]", r.split("|")[1])), None)
        assert row is not None, f"README's options table has no row for {option.name}"
        assert f"`{option.env}`" in row, f"README's row for {option.name} does not name ${option.env}: {row}"
    named = {m for row in rows for m in re.findall(r"`(--[a-z-]+)", row.split("|")[1])}
    known = {o.name for o in OPTIONS} | {a for o in OPTIONS for a in o.aliases}
    assert named <= known, f"README names options the table does not hold: {sorted(named - known)}"


@pytest.mark.parametrize(
    ("provider", "given", "environ", "source", "rule"),
    [
        ("kind", "Nightly-1", {}, "--cluster-name", "kind's rule ^[a-z0-9.-]+$"),
        (
            "auto",
            None,
            {"KBC_CLUSTER_NAME": "Nightly-1"},
            "$KBC_CLUSTER_NAME='Nightly-1'",
            "(--provider auto",
        ),
        ("local", "a" * 43, {}, "--cluster-name", "at most 42 characters"),
    ],
)
def test_a_cluster_name_the_provider_refuses_is_refused_when_options_are_read(
    provider: str, given: str | None, environ: dict[str, str], source: str, rule: str
) -> None:
    values = {"provider": provider, "cluster_name": given}
    with pytest.raises(OptionError) as caught:
        options.resolve_all(values.get, options.PYTEST, environ)
    assert str(caught.value).startswith(f"{source}: "), caught.value
    assert "is not a name the" in str(caught.value) and rule in str(caught.value), caught.value


def test_a_name_only_kind_takes_is_taken_for_kind_and_any_for_an_existing_cluster() -> None:
    for provider, name in (("kind", "nightly.1"), ("existing", "Anything_Goes")):
        values = {"provider": provider, "cluster_name": name}
        assert options.resolve_all(values.get, options.PYTEST, {})["cluster_name"] == name


def test_pytest_refuses_a_cluster_name_kind_refuses_before_anything_starts() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--provider",
            "kind",
            "--cluster-name",
            "Nightly-1",
            "-p",
            "no:cacheprovider",
            "suites/test_gang.py",
        ],
        cwd=paths.repo_root(),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "--cluster-name: 'Nightly-1' is not a name the kind provider takes" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "kind create" not in proc.stdout + proc.stderr

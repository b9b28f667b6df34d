"""A component is named in its declaration (``kbc/components/<name>.py``) and in the scenario vocabulary that
speaks its API, nowhere else: every other module of kbc iterates the registry. This test reads each module's
string literals (docstrings aside: prose may name what it explains) and fails on a component's name where
neither the layer nor :data:`ALLOWED` says why it is there.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

from kbc import components
from kbc.supply import paths

ROOT = paths.repo_root()
KBC = ROOT / "fixtures" / "kbc"

# module (relative to fixtures/kbc) -> (the components it may name, why).
ALLOWED: dict[str, tuple[frozenset[str], str]] = {
    **{
        module: (frozenset({"kueue"}), "Kueue's own performance test and the benches around it")
        for module in (
            "cli/_band.py",
            "cli/bench_command.py",
            "cli/bench_perf.py",
            "cli/bench_upgrade.py",
            "plugins/canary_load.py",
            "plugins/canary_scale.py",
            "perf/_live_report.py",
            "perf/_objects.py",
            "perf/_pins.py",
            "perf/_status.py",
            "perf/_summary.py",
        )
    },
    "cli/bench_restart.py": (
        frozenset({"kueue", "jobset"}),
        "Kueue's over-admission after a restart, measured on the canary's state (Kueue and JobSet)",
    ),
    **{
        module: (frozenset({"kueue"}), "the platform twin's Kueue promises")
        for module in (
            "platform/_kind_promise.py",
            "platform/_load.py",
            "platform/_references.py",
            "platform/generate.py",
            "platform/promises.py",
        )
    },
    **{
        module: (frozenset({"volcano"}), "the platform twin's Volcano promises")
        for module in ("platform/_promise.py", "platform/_volcano.py", "platform/_volcano_promises.py")
    },
    "platform/model.py": (frozenset({"kueue", "volcano"}), "the platform twin's Kueue and Volcano promises"),
    "platform/_kinds.py": (frozenset({"trainer"}), "a TrainJob's field spec.trainer, which its probe fills"),
    "report/ai_evidence.py": (
        frozenset({"kueue", "jobset", "volcano", "trainer"}),
        "the AI Conformance evidence names the suites' scenarios by node id",
    ),
    "report/schedulers.py": (
        frozenset({"kueue", "jobset", "volcano"}),
        "the Kueue-or-Volcano table names the two schedulers and cites the suites' scenarios",
    ),
    "plugins/schedulers.py": (
        frozenset({"kueue", "volcano"}),
        "the Kueue-or-Volcano table's file name and Allure keys",
    ),
    "cluster/charts/helm.py": (
        frozenset({"jobset"}),
        "a known upstream issue's URL (kubernetes-sigs/jobset)",
    ),
    "cluster/components.py": (
        frozenset({"kueue"}),
        "examples in the error messages of --values and --config",
    ),
    "cluster/options.py": (frozenset({"kueue"}), "examples in the options' help"),
    "plugins/needs.py": (
        frozenset({"kueue", "volcano"}),
        "the needs marker's help names the settings modules",
    ),
}


def _vocabulary_and_base() -> set[str]:
    """The top-level modules and packages of the scenario vocabulary, the client and the base (from the
    layers contract): they speak the components' own APIs."""
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    layers = contract["layers"]
    start = next(i for i, layer in enumerate(layers) if "kueue" in layer.split(" : "))
    return {name.strip() for layer in layers[start:] for name in layer.split(":")}


def _strings(tree: ast.AST) -> list[str]:
    """The string literals of *tree* that are not docstrings (of a module, class, function or attribute)."""
    docs: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        for statement in body if isinstance(body, list) else []:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                docs.add(id(statement.value))
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


def named_components(path: Path) -> set[str]:
    """The components whose names *path*'s string literals hold, as words (``kueue-manager``, ``kueue``)."""
    pattern = re.compile(
        r"(?<![A-Za-z0-9])(" + "|".join(map(re.escape, components.names())) + r")(?![A-Za-z0-9])"
    )
    return {m for text in _strings(ast.parse(path.read_text())) for m in pattern.findall(text)}


def test_only_declarations_and_the_vocabulary_name_a_component() -> None:
    exempt = _vocabulary_and_base()
    offenders = []
    for path in sorted(KBC.rglob("*.py")):
        module = path.relative_to(KBC).as_posix()
        if module.split("/")[0].removesuffix(".py") in exempt:
            continue
        allowed = ALLOWED.get(module, (frozenset(), ""))[0]
        named = named_components(path) - allowed
        if named:
            offenders.append(f"{module}: {', '.join(sorted(named))}")
    assert not offenders, (
        "modules that name a component outside its declaration (kbc/components) and the scenario vocabulary; "
        "read it from the registry (kbc.components), or add the module to ALLOWED with why:\n  "
        + "\n  ".join(offenders)
    )


def test_every_allowance_is_still_needed() -> None:
    stale = [
        f"{module}: {', '.join(sorted(names - named_components(KBC / module)))}"
        for module, (names, _why) in ALLOWED.items()
        if not (KBC / module).is_file() or names - named_components(KBC / module)
    ]
    assert not stale, "ALLOWED lets modules name components they no longer name:\n  " + "\n  ".join(stale)


def test_the_check_sees_a_name_in_a_string_and_not_in_a_docstring(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""Installs kueue."""\n\nBINARY = "kueue-manager"\n')
    assert named_components(module) == {"kueue"}
    module.write_text('"""Installs kueue."""\n\nBINARY = "manager"\n')
    assert named_components(module) == set()

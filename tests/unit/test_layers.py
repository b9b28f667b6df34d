"""The layers hold: the import contracts pass on the tree, fail on an upward import, no module reaches
into another package's private module, and the three descriptions of the layers (the contract, the
package docstring's map and the README's) say the same; no module is over 500 lines."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import kbc
from kbc.supply import paths

ROOT = paths.repo_root()
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{root / 'fixtures'}{os.pathsep}{root}"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def copy_tree(tmp_path: Path) -> Path:
    for part in ("fixtures", "suites"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_tree_keeps_its_layers(tmp_path: Path) -> None:
    result = lint_imports(copy_tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 kept, 0 broken" in result.stdout, result.stdout


def test_an_upward_import_from_the_vocabulary_breaks_the_contract(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    waits = root / "fixtures" / "kbc" / "kueue" / "waits.py"
    waits.write_text(waits.read_text() + "\nfrom kbc.cluster.providers import LocalProvider  # noqa\n")
    result = lint_imports(root)
    assert result.returncode == 1, result.stdout
    assert "kbc.kueue.waits -> kbc.cluster.providers" in result.stdout, result.stdout


def test_a_suite_importing_a_provider_breaks_the_contract(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    suite = root / "suites" / "test_quota.py"
    suite.write_text(suite.read_text() + "\nfrom kbc.cluster.providers.local import LocalProvider  # noqa\n")
    result = lint_imports(root)
    assert result.returncode == 1, result.stdout
    assert "suites.test_quota -> kbc.cluster.providers.local" in result.stdout, result.stdout


def private_imports_from_outside(path: Path, module: str) -> list[str]:
    """Imports in *path* (module *module*) of a ``_private`` module of another package."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets = (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
        for target in targets:
            parts = target.split(".")
            if parts[0] != "kbc":
                continue
            private = next((i for i, part in enumerate(parts) if part.startswith("_")), None)
            if private is None:
                continue
            owner = ".".join(parts[:private])
            if module != owner and not module.startswith(owner + "."):
                found.append(f"{module} imports {target}")
    return found


def test_no_module_reaches_into_another_package_s_private_module() -> None:
    """The harness and the suites use each package through its public surface (the harness's own
    tests may test a private module directly)."""
    offenders = []
    for top in ("fixtures/kbc", "suites"):
        for path in (ROOT / top).rglob("*.py"):
            relative = path.relative_to(ROOT / "fixtures" if top == "fixtures/kbc" else ROOT)
            module = ".".join(relative.with_suffix("").parts).removesuffix(".__init__")
            offenders += private_imports_from_outside(path, module)
    assert not offenders, "\n".join(offenders)


# A layer's line in a map starts with a branch ("├─", "└─"); "│  +" continues its list of modules.
_LAYER_LINE = re.compile(r"^\s*(?:[├└]─|│\s+\+)\s*(.*)$")
_MODULE = re.compile(r"^([a-z_]+)(?:/|\.py)$")


def map_layers(text: str) -> list[frozenset[str]]:
    """The layers a map lists, top first: module and folder names (``kueue/``, ``jobs.py``) per line."""
    layers: list[frozenset[str]] = []
    for line in text.splitlines():
        match = _LAYER_LINE.match(line)
        if match is None:
            continue
        names = frozenset(m.group(1) for token in match.group(1).split() if (m := _MODULE.match(token)))
        if line.lstrip().startswith("│"):
            layers[-1] |= names
        else:
            layers.append(names)
    return layers


def contract_layers() -> list[frozenset[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c.get("containers") == ["kbc"])
    return [frozenset(name.strip() for name in layer.split(":")) for layer in contract["layers"]]


def readme_map() -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(r"^## Map of the layers\n.*?```text\n(.*?)```", text, re.DOTALL | re.MULTILINE)
    assert match is not None, "README.md has no '## Map of the layers' section with a ```text block"
    return match.group(1)


def test_the_package_map_and_the_readme_map_are_the_import_contract() -> None:
    contract = contract_layers()
    assert map_layers(kbc.__doc__ or "") == contract, (
        "fixtures/kbc/__init__.py's map differs from [tool.importlinter] in pyproject.toml:\n"
        f"map:      {map_layers(kbc.__doc__ or '')}\ncontract: {contract}"
    )
    assert map_layers(readme_map()) == contract, (
        "README.md's map differs from [tool.importlinter] in pyproject.toml:\n"
        f"map:      {map_layers(readme_map())}\ncontract: {contract}"
    )


def test_a_map_that_leaves_out_a_module_differs_from_the_contract() -> None:
    doc = (kbc.__doc__ or "").replace(" gpu.py", "")
    assert map_layers(doc) != contract_layers()
    assert map_layers(doc)[3] == contract_layers()[3] - {"gpu"}


MAX_MODULE_LINES = 500


def test_no_module_of_the_harness_its_suites_or_its_tests_is_over_500_lines() -> None:
    """Issue 26's bound: a module past it holds two things, and the second goes to a module of its own.
    It holds for the scenarios and the project's own tests as for the harness."""
    long = {
        str(path.relative_to(ROOT)): lines
        for folder in ("fixtures", "suites", "tests")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"over {MAX_MODULE_LINES} lines: {long}"

"""The layers hold: the import contracts pass on the tree, fail on an upward import, and no module
reaches into another package's private module."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

from kbc import paths

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
    assert "3 kept, 0 broken" in result.stdout, result.stdout


def test_an_upward_import_from_the_vocabulary_breaks_the_contract(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    waits = root / "fixtures" / "kbc" / "kueue" / "waits.py"
    waits.write_text(waits.read_text() + "\nfrom kbc.providers import LocalProvider  # noqa\n")
    result = lint_imports(root)
    assert result.returncode == 1, result.stdout
    assert "kbc.kueue.waits -> kbc.providers" in result.stdout, result.stdout


def test_a_suite_importing_a_provider_breaks_the_contract(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    suite = root / "suites" / "test_quota.py"
    suite.write_text(suite.read_text() + "\nfrom kbc.providers.local import LocalProvider  # noqa\n")
    result = lint_imports(root)
    assert result.returncode == 1, result.stdout
    assert "suites.test_quota -> kbc.providers.local" in result.stdout, result.stdout


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

"""The component registry (kbc.components): what each declaration must say, in which order components
install, and the lock's entries checked against it."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kbc import components
from kbc.components import Component
from kbc.errors import ComponentDeclarationError, LockFileError
from kbc.supply.lock import parse_lock

KUEUE = components.get("kueue")

_DECLARATION = """
from kbc import components
COMPONENT = components.get("kueue").__class__(
    **{{**{{f: getattr(components.get("kueue"), f) for f in {fields!r}}}, "name": {name!r}, **{extra}}}
)
"""


@pytest.fixture
def package(tmp_path: Path) -> Iterator[tuple[list[str], str]]:
    """An empty package of declarations on sys.path, removed afterwards."""
    name = f"kbc_test_declarations_{id(tmp_path)}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    sys.path.insert(0, str(tmp_path))
    try:
        yield [str(tmp_path / name)], name
    finally:
        sys.path.remove(str(tmp_path))
        for module in [m for m in sys.modules if m.startswith(name)]:
            del sys.modules[module]


def declare(package: tuple[list[str], str], name: str, drop: str = "", **extra: Any) -> None:
    fields = [f.name for f in dataclasses.fields(Component) if f.name not in ("name", drop)]
    text = _DECLARATION.format(fields=fields, name=name, extra=extra or {})
    path = Path(package[0][0]) / f"{name}.py"
    path.write_text(text)
    # A declaration written again within the same second, of the same size, would be read from the
    # bytecode cached for the first (make test caches bytecode: PYTHONPYCACHEPREFIX).
    Path(importlib.util.cache_from_source(str(path))).unlink(missing_ok=True)


def test_the_registry_declares_the_components_in_install_order() -> None:
    assert components.names() == (
        "jobset",
        "kuberay",
        "lws",
        "trainer",
        "trainingoperator",
        "kueue",
        "volcano",
    )
    assert components.configurable() == ("kueue", "volcano")
    assert {s.component for s in components.harness_settings()} == {"kueue", "volcano"}


def test_what_others_wait_for_installs_first_and_the_rest_together() -> None:
    assert components.install_waves(["volcano", "kueue", "jobset"]) == [["jobset"], ["kueue", "volcano"]]
    assert components.install_waves(["kueue"]) == [["kueue"]]
    assert components.install_waves(["volcano", "jobset"]) == [["jobset", "volcano"]]
    assert components.install_order(["volcano", "kueue", "jobset"]) == ["jobset", "kueue", "volcano"]
    # LeaderWorkerSet and Trainer say they go before Kueue (``before``); Kueue's declaration names neither.
    # Trainer comes after JobSet, whose JobSets its TrainJobs run as.
    assert components.install_waves(components.names()) == [
        ["jobset", "kuberay", "lws", "trainingoperator"],
        ["trainer"],
        ["kueue", "volcano"],
    ]
    assert components.install_waves(["lws", "volcano"]) == [["lws", "volcano"]]


def test_a_declaration_missing_a_field_names_the_component_and_the_field(
    package: tuple[list[str], str],
) -> None:
    declare(package, "lacking", drop="readiness")
    with pytest.raises(ComponentDeclarationError) as caught:
        components.load(*package)
    assert caught.value.component == "lacking" and caught.value.field == "readiness", str(caught.value)
    assert "lacking.py" in str(caught.value) and "docs/contributing.md#adding-a-component" in str(
        caught.value
    )


def test_an_empty_field_is_named(package: tuple[list[str], str]) -> None:
    declare(package, "blank", display="")
    with pytest.raises(ComponentDeclarationError, match=r"component blank .*: display is empty"):
        components.load(*package)


def test_a_module_without_a_declaration_is_named(package: tuple[list[str], str]) -> None:
    (Path(package[0][0]) / "nothing.py").write_text("X = 1\n")
    with pytest.raises(ComponentDeclarationError, match=r"component nothing .*: COMPONENT is missing"):
        components.load(*package)


def test_after_must_name_a_declared_component_and_make_no_cycle(package: tuple[list[str], str]) -> None:
    declare(package, "alpha", after=("ghost",), harness_settings=(), config=None)
    with pytest.raises(ComponentDeclarationError, match=r"after names ghost, which no declaration"):
        components.load(*package)
    for module in [m for m in sys.modules if m.startswith(package[1] + ".")]:
        del sys.modules[module]
    declare(package, "alpha", after=("beta",), harness_settings=(), config=None)
    declare(package, "beta", after=("alpha",), harness_settings=(), config=None)
    with pytest.raises(ComponentDeclarationError, match=r"cycle \(alpha -> beta -> alpha\)"):
        components.load(*package)


def test_before_orders_the_other_component_after_it_and_must_name_a_declared_one(
    package: tuple[list[str], str],
) -> None:
    declare(package, "alpha", after=(), harness_settings=(), config=None)
    declare(package, "beta", after=(), before=("alpha",), harness_settings=(), config=None)
    assert list(components.load(*package)) == ["beta", "alpha"]
    for module in [m for m in sys.modules if m.startswith(package[1] + ".")]:
        del sys.modules[module]
    declare(package, "beta", after=(), before=("ghost",), harness_settings=(), config=None)
    with pytest.raises(ComponentDeclarationError, match=r"before names ghost, which no declaration"):
        components.load(*package)


def test_a_capability_marker_is_one_components_and_not_a_components_name(
    package: tuple[list[str], str],
) -> None:
    declare(package, "alpha", harness_settings=(), config=None, capabilities={"beta": "x"})
    declare(package, "beta", harness_settings=(), config=None)
    with pytest.raises(ComponentDeclarationError, match=r"capabilities 'beta' is already the marker of beta"):
        components.load(*package)


def test_a_harness_setting_of_its_own_needs_a_configuration() -> None:
    wrong = dataclasses.replace(KUEUE, config=None)
    with pytest.raises(ComponentDeclarationError, match="harness_settings"):
        components._spec.validate(wrong, "kueue.py")


def test_a_harness_setting_of_another_component_needs_one_that_declares_a_configuration(
    package: tuple[list[str], str],
) -> None:
    fields = [f.name for f in dataclasses.fields(Component) if f.name != "name"]
    setting = "{'harness_settings': (Setting('beta', 'x', {'a': 1}),), 'config': None}"
    text = "from kbc.configuration import Setting\n" + _DECLARATION.format(
        fields=fields, name="alpha", extra=setting
    )
    (Path(package[0][0]) / "alpha.py").write_text(text)
    declare(package, "beta", harness_settings=(), config=None)
    with pytest.raises(ComponentDeclarationError, match=r"setting of 'beta', which declares no config"):
        components.load(*package)


def test_a_lock_entry_for_a_component_the_registry_does_not_know_is_refused(
    lock_data: dict[str, Any], tmp_path: Path
) -> None:
    lock_data["components"]["sparkoperator"] = lock_data["components"]["jobset"]
    with pytest.raises(LockFileError) as caught:
        parse_lock(yaml.safe_dump(lock_data), tmp_path / "charts-lock.yaml")
    assert caught.value.field == "components.sparkoperator"
    assert "kbc/components/sparkoperator.py" in str(caught.value)


def test_unknown_component_names_the_components() -> None:
    with pytest.raises(
        Exception,
        match=r"unknown component 'ray'; the components are jobset, kuberay, lws, trainer, "
        "trainingoperator, kueue, volcano",
    ):
        components.get("ray")


def test_a_name_that_helm_cannot_take_as_a_release_is_refused() -> None:
    wrong = dataclasses.replace(KUEUE, name="training_operator")
    with pytest.raises(
        ComponentDeclarationError, match=r"without '_' \(it is a marker and a Helm release name"
    ):
        components._spec.validate(wrong, "training_operator.py")


def test_a_flags_manager_with_a_webhook_names_its_certificate_s_ca_and_service() -> None:
    operator = components.get("trainingoperator")
    wrong = dataclasses.replace(operator, host=dataclasses.replace(operator.host, ca_name=""))
    with pytest.raises(ComponentDeclarationError, match=r"names its ca_name and its service"):
        components._spec.validate(wrong, "trainingoperator/__init__.py")

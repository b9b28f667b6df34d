"""Failures are filed by their exception's type: two roots, a category per class, and Allure regexes
that match the message Allure records."""

from __future__ import annotations

import re
import traceback

import pytest

from kbc import errors
from kbc.report.categories import BROKEN, FAILED, UNEXPECTED, allure_categories, classify, subclasses


def test_every_error_class_is_under_one_of_the_two_roots() -> None:
    classes = [v for v in vars(errors).values() if isinstance(v, type) and issubclass(v, BaseException)]
    scenario, harness = subclasses(errors.ScenarioFailure), subclasses(errors.HarnessError)
    unfiled = [c.__name__ for c in classes if c not in scenario and c not in harness]
    assert not unfiled, f"kbc.errors classes under neither root: {unfiled}"
    assert not set(scenario) & set(harness)
    assert all(issubclass(c, AssertionError) for c in scenario), "scenario failures are assertion failures"


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (errors.WaitTimeout("x", 1, ""), (FAILED, "Wait timed out (expected state never came)")),
        (errors.WaitGaveUp("x", "y", ""), (FAILED, "Wait gave up (the opposite outcome appeared)")),
        (
            errors.ConsistencyViolation("x", 1, 5, ""),
            (FAILED, "State did not hold for the consistency window"),
        ),
        (errors.ControllerDied("x"), (FAILED, "Controller or control-plane process died")),
        (errors.WrongPool("x"), (FAILED, "Scenario assertion failed")),
        (AssertionError("plain assert"), (FAILED, "Scenario assertion failed")),
        (
            errors.KubeApiError("create", "Pod a", 500, "InternalError", "boom"),
            (BROKEN, "Cluster or harness problem"),
        ),
        (errors.NotEnoughGpus(4, []), (BROKEN, "Cluster or harness problem")),
        (KeyError("bug"), (BROKEN, UNEXPECTED)),
    ],
)
def test_classify_by_type(exc: BaseException, expected: tuple[str, str]) -> None:
    assert classify(exc) == expected


def allure_message(exc: BaseException) -> str:
    """The status message allure-pytest records: ``format_exception_only`` of the exception."""
    return "".join(traceback.format_exception_only(type(exc), exc))


def first_category(message: str, status: str) -> str:
    for category in allure_categories():
        if status in category["matchedStatuses"] and re.fullmatch(
            category.get("messageRegex", r"[\s\S]*"), message
        ):
            return str(category["name"])
    return "(none)"


def test_allure_categories_match_by_type_not_by_words() -> None:
    timed_out = errors.WaitTimeout("Workload x to be admitted", 60, "line one\nline two")
    assert first_category(allure_message(timed_out), FAILED) == timed_out.category
    # A message that merely says "consistency window" is not filed as one.
    words = errors.WaitTimeout("a consistency window to open", 5, "")
    assert first_category(allure_message(words), FAILED) == words.category
    assert first_category(allure_message(AssertionError("x")), FAILED) == "Scenario assertion failed"
    assert first_category(allure_message(errors.ClusterError("gone")), BROKEN) == "Cluster or harness problem"
    assert first_category(allure_message(KeyError("bug")), BROKEN) == UNEXPECTED

"""A component's object the API server timed out on (504) is applied again; another refusal is the answer."""

from __future__ import annotations

from typing import Any

import pytest

from kbc.cluster.providers.local import _install
from kbc.errors import KubeApiError

CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "x"}}


class FakeKube:
    """Answers each apply with the next of *answers*: an exception is raised, anything else is success."""

    def __init__(self, answers: list[object]) -> None:
        self.answers = answers
        self.applied = 0

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        answer = self.answers[self.applied]
        self.applied += 1
        if isinstance(answer, Exception):
            raise answer
        return obj


def timed_out() -> KubeApiError:
    return KubeApiError("apply", "CustomResourceDefinition x", 504, "Timeout", "context deadline exceeded")


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_install, "APPLY_BACKOFF_S", 0.0)


def test_an_apply_the_server_timed_out_on_is_sent_again() -> None:
    kube = FakeKube([timed_out(), "applied"])
    _install._apply_one(kube, CRD)  # type: ignore[arg-type]
    assert kube.applied == 2


def test_an_apply_that_keeps_timing_out_fails_after_its_attempts() -> None:
    kube = FakeKube([timed_out()] * _install.APPLY_ATTEMPTS)
    with pytest.raises(KubeApiError) as raised:
        _install._apply_one(kube, CRD)  # type: ignore[arg-type]
    assert raised.value.status == 504
    assert kube.applied == _install.APPLY_ATTEMPTS


def test_an_apply_refused_otherwise_is_not_sent_again() -> None:
    refused = KubeApiError("apply", "CustomResourceDefinition x", 422, "Invalid", "spec.versions: Required")
    kube = FakeKube([refused, "applied"])
    with pytest.raises(KubeApiError):
        _install._apply_one(kube, CRD)  # type: ignore[arg-type]
    assert kube.applied == 1

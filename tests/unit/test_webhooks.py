"""A webhook's refusal, read from the API server's answer: the words of the webhook named, and where several
webhooks each must refuse an object, whichever the server answered with."""

from __future__ import annotations

from typing import Any

import pytest

from kbc.errors import KubeApiError, NotRefused
from kbc.kube import Kube
from kbc.webhooks import expect_refused_by_one_of, expect_webhook_refusal

TRAINJOB = {"kind": "TrainJob", "metadata": {"name": "on-nothing"}}
KUEUE, TRAINER = "vtrainjob.kb.io", "validator.trainjob.trainer.kubeflow.org"


class _Answers:
    """A client whose dry-run create raises *message* as a 403, or accepts when it is None."""

    def __init__(self, message: str | None) -> None:
        self.message = message

    def create(self, obj: dict[str, Any], namespace: str | None = None, dry_run: bool = False) -> Any:
        assert dry_run
        if self.message is None:
            return obj
        raise KubeApiError("create", "TrainJob on-nothing", 403, "Forbidden", self.message)


def kube(message: str | None) -> Kube:
    return _Answers(message)  # type: ignore[return-value]


def test_either_webhook_s_refusal_is_returned_with_its_name() -> None:
    said = f"admission webhook \"{KUEUE}\" denied the request: runtime 'x' not found"
    assert expect_refused_by_one_of(kube(said), TRAINJOB, webhooks=(TRAINER, KUEUE), why="w") == (
        KUEUE,
        "runtime 'x' not found",
    )


def test_a_refusal_by_another_webhook_or_an_acceptance_is_not_one() -> None:
    other = 'admission webhook "vjob.kb.io" denied the request: no'
    with pytest.raises(NotRefused, match=f"by none of the webhooks {TRAINER}, {KUEUE}"):
        expect_refused_by_one_of(kube(other), TRAINJOB, webhooks=(TRAINER, KUEUE), why="w")
    with pytest.raises(NotRefused, match="the API server accepted TrainJob on-nothing"):
        expect_refused_by_one_of(kube(None), TRAINJOB, webhooks=(TRAINER, KUEUE), why="w")
    with pytest.raises(NotRefused, match=f"but not by webhook {TRAINER}"):
        expect_webhook_refusal(kube(other), TRAINJOB, webhook=TRAINER, why="w")

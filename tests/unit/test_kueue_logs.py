"""Kueue's own words about a job, read from its controller's JSON log lines: each error once, only Kueue's
logs, only lines about that job."""

from __future__ import annotations

import json

from kbc.kueue.logs import said_about


def _line(**fields: str) -> str:
    return json.dumps({"level": "error", "ts": "2026-11-29T09:46:51Z", "logger": "trainjob", **fields})


def test_the_errors_about_one_job_are_quoted_once_each() -> None:
    about = {"namespace": "team", "name": "training", "job": "team/training"}
    logs = {
        "kueue-controller-manager": "\n".join(
            [
                "I1129 plain text that is not JSON",
                _line(msg="Unsuspending job", error="kueue runtime patch not found", **about),
                _line(
                    msg="Reconciler error",
                    error="kueue runtime patch not found",
                    namespace="team",
                    name="training",
                ),
                _line(msg="Unsuspending job", error="kueue runtime patch not found", **about),
                _line(msg="Unsuspending job", error="another job's trouble", namespace="team", name="other"),
                json.dumps({"level": "info", "msg": "Job admitted", **about}),
            ]
        ),
        "trainer-kubeflow-trainer-controller-manager": _line(msg="not Kueue's", error="x", **about),
    }
    assert said_about(logs, "team", "training") == [
        "Unsuspending job: kueue runtime patch not found",
        "Reconciler error: kueue runtime patch not found",
    ]
    assert said_about(logs, "team", "nobody") == []
    assert said_about({}, "team", "training") == []

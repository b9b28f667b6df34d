"""``kbc verify --platform`` on the second example, ``racks-and-dra``: a topology's one-rack promise and a DRA
quota's nominal promise are derived and hold on its twin, and each fails when the twin is sabotaged."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.commands import REPO
from tests.integration.platform_runner import outcomes, verify

pytestmark = pytest.mark.cluster

RACKS_AND_DRA = REPO / "manifests" / "platforms" / "racks-and-dra"
TOPOLOGY = "flavor/racked/topology/topology.kbatch.dev/rack"
DRA_NOMINAL = "inference/dra/example.com/gpu/nominal"


def test_a_topology_and_a_dra_quota_are_derived_and_proven(tmp_path: Path) -> None:
    report = tmp_path / "report"
    done = verify(RACKS_AND_DRA, report)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    found = outcomes(report)
    assert all(p["held"] for p in found.values()), [p for p in found.values() if not p["held"]]
    rack = found[TOPOLOGY]
    assert rack["measures"] == {
        "admitted": 16,
        "domains": 1,
        "admit_seconds": rack["measures"]["admit_seconds"],
        "waited": 24,
    }, rack
    assert 'topology "datacenter" allows to fit only' in rack["did"], rack
    dra = found[DRA_NOMINAL]
    assert "admitted 8" in dra["did"] and "insufficient unused quota for example.com/gpu" in dra["did"], dra


def test_the_topology_promise_fails_when_the_flavor_has_no_topology(tmp_path: Path) -> None:
    report = tmp_path / "report"
    done = verify(
        RACKS_AND_DRA, report, "-k", TOPOLOGY, "-p", "tests.sabotage.platform_flavor_topology_dropped"
    )
    assert done.returncode == 1, done.stdout[-6000:] + done.stderr[-3000:]
    rack = outcomes(report)[TOPOLOGY]
    assert rack["state"] == "fails", rack
    assert "that requires one topology.kbatch.dev/rack" in rack["did"], rack
    assert "was not admitted" in rack["did"], rack


def test_the_dra_quota_promise_fails_when_the_twin_s_quota_is_not_the_platform_s(tmp_path: Path) -> None:
    report = tmp_path / "report"
    done = verify(RACKS_AND_DRA, report, "-k", DRA_NOMINAL, "-p", "tests.sabotage.platform_quota_doubled")
    assert done.returncode == 1, done.stdout[-6000:] + done.stderr[-3000:]
    dra = outcomes(report)[DRA_NOMINAL]
    assert dra["state"] == "fails", dra
    assert "admitted 8, but one more did not wait" in dra["did"], dra

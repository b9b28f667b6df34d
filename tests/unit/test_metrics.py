"""Reading a component's metrics text: samples, a value by labels, and Kueue's pending counts."""

from __future__ import annotations

import re

import pytest

from kbc.kueue.metrics import pending_counts
from kbc.metrics import samples, value

TEXT = """\
# HELP kueue_pending_workloads Number of pending workloads
# TYPE kueue_pending_workloads gauge
kueue_pending_workloads{cluster_queue="fifo-a1",replica_role="standalone",status="active"} 2
kueue_pending_workloads{cluster_queue="fifo-a1",replica_role="standalone",status="inadmissible"} 0
kueue_pending_workloads{cluster_queue="other",replica_role="standalone",status="active"} 7
go_goroutines 153
weird{path="a \\"quoted\\" \\\\ back\\nline"} 1.5e+03 1700000000000
"""


def test_every_sample_is_read_with_its_labels_and_value_and_comments_are_skipped() -> None:
    found = samples(TEXT)
    assert [s.name for s in found] == ["kueue_pending_workloads"] * 3 + ["go_goroutines", "weird"]
    assert found[0].labels == {"cluster_queue": "fifo-a1", "replica_role": "standalone", "status": "active"}
    assert found[3].labels == {} and found[3].value == 153
    assert found[4].labels == {"path": 'a "quoted" \\ back\nline'} and found[4].value == 1500


def test_a_value_is_found_by_a_subset_of_its_labels() -> None:
    assert value(TEXT, "kueue_pending_workloads", cluster_queue="fifo-a1", status="active") == 2
    assert value(TEXT, "kueue_pending_workloads", cluster_queue="absent", status="active") is None


def test_labels_that_match_several_samples_are_refused_naming_them() -> None:
    with pytest.raises(ValueError, match="2 samples of kueue_pending_workloads match"):
        value(TEXT, "kueue_pending_workloads", cluster_queue="fifo-a1")


def test_a_line_that_is_no_sample_is_refused_quoting_it() -> None:
    with pytest.raises(ValueError, match=re.escape("not a Prometheus sample line: '{broken'")):
        samples("{broken")


def test_kueue_s_pending_counts_of_one_cluster_queue() -> None:
    assert pending_counts(TEXT, "fifo-a1") == {"active": 2, "inadmissible": 0}
    assert pending_counts(TEXT, "other") == {"active": 7, "inadmissible": None}

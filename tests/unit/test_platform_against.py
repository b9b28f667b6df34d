"""The behaviour diff of ``kbc verify --against``, ``--against git:REF``, and what review mended."""

from __future__ import annotations

import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from kbc.cli.verify import diff, platform_at
from kbc.errors import PlatformError
from kbc.platform import derive, load_platform
from kbc.platform.promises import (
    BORROW,
)
from tests.unit.platform_helpers import (
    KUEUE,
    NAMESPACE,
    POOL,
    cluster_queue,
    dump,
    flavor,
    load,
    local_queue,
    node,
    queues,
    refused,
    write,
)

# -- the behaviour diff of --against ----------------------------------------------------------------


def outcome(**changes: Any) -> dict[str, Any]:
    """A promise as ``summary.json`` records it."""
    entry: dict[str, Any] = {
        "id": "research/a100/nvidia.com/gpu/borrow",
        "kind": BORROW,
        "team": "team-research/research",
        "cluster_queue": "research",
        "says": "may borrow 8",
        "source": "queues/cluster-queues.yaml, document 1 (line 4)",
        "held": True,
        "broken": False,
        "did": "admitted 24",
        "seconds": 3.2,
        "measures": {"borrowed": 8, "admit_seconds": 0.4},
    }
    return entry | changes


def summary(*entries: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["id"]: e for e in entries}


def test_the_same_behaviour_gives_no_lines() -> None:
    assert diff(summary(outcome()), summary(outcome())) == []
    assert diff({}, {}) == []


def test_a_changed_measure_and_sentence_give_one_line_naming_the_team() -> None:
    after = outcome(says="may borrow 4", measures={"borrowed": 4, "admit_seconds": 0.4})
    [line] = diff(summary(outcome()), summary(after))
    assert line.startswith("~ team-research/research [borrow research/a100/nvidia.com/gpu/borrow]: ")
    assert "says “may borrow 8” → “may borrow 4”" in line
    assert "borrowed 8 → 4" in line


def test_a_promise_that_stops_holding_says_so() -> None:
    [line] = diff(summary(outcome()), summary(outcome(held=False, did="admitted 16")))
    assert "holds → fails" in line
    [back] = diff(summary(outcome(held=False)), summary(outcome()))
    assert "fails → holds" in back


def test_timings_alone_are_not_a_change_of_behaviour() -> None:
    slower = outcome(seconds=9.9, measures={"borrowed": 8, "admit_seconds": 2.5})
    assert diff(summary(outcome()), summary(slower)) == []


def test_a_measure_only_one_side_has_is_shown_as_missing() -> None:
    [line] = diff(summary(outcome()), summary(outcome(measures={"admit_seconds": 0.4, "waited": True})))
    assert "borrowed 8 → -" in line and "waited - → yes" in line


def test_promises_only_one_side_makes_are_new_or_gone() -> None:
    gone = outcome(id="sandbox/quota-zero", team="sandbox/sandbox", says="sandbox has no quota")
    new = outcome(id="flavor/b200", team="(no team)", says="b200 matches nodes", did="ran on b200")
    lines = diff(summary(outcome(), gone), summary(outcome(), new))
    assert lines == [
        "- sandbox/sandbox: promise gone: sandbox has no quota",
        "+ (no team): new promise: b200 matches nodes: ran on b200",
    ]


# -- --against: another directory, or git:REF -------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    identity = [
        "-c",
        "user.name=kbc test",
        "-c",
        "user.email=kbc@example.invalid",
        "-c",
        "commit.gpgsign=false",
    ]
    proc = subprocess.run(["git", *identity, *args], cwd=repo, capture_output=True, text=True, check=True)
    return proc.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A Git repository whose ``platforms/ml`` is committed (tag ``v1``) and then changed twice."""
    top = tmp_path / "repo"
    write(
        top,
        {
            "platforms/ml/nodes.yaml": POOL,
            "platforms/ml/queues.yaml": dump(cluster_queue("a", nominalQuota=4)),
            "README.md": "x\n",
        },
    )
    git(top, "init", "-q")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "first")
    git(top, "tag", "v1")
    write(top, {"platforms/ml/queues.yaml": dump(cluster_queue("a", nominalQuota=8))})
    git(top, "commit", "-q", "-am", "second")
    write(
        top,
        {
            "platforms/ml/queues.yaml": dump(cluster_queue("a", nominalQuota=16)),
            "platforms/ml/new.yaml": NAMESPACE,
        },
    )
    (top / "platforms" / "ml" / "nodes.yaml").unlink()
    return top


def test_a_plain_directory_is_the_platform_itself(tmp_path: Path) -> None:
    other = write(tmp_path / "other", {"nodes.yaml": POOL})
    assert platform_at(str(other), tmp_path, tmp_path / "into") == other
    assert not (tmp_path / "into").exists()
    with pytest.raises(PlatformError, match=r"is not a directory\. Give --against git:REF"):
        platform_at(str(tmp_path / "missing"), tmp_path, tmp_path / "into")


def test_git_ref_extracts_the_directory_as_it_was(repo: Path, tmp_path: Path) -> None:
    directory = repo / "platforms" / "ml"
    head = platform_at("git:HEAD", directory, tmp_path / "head")
    assert head == tmp_path / "head" / "platforms" / "ml"
    assert sorted(p.name for p in head.iterdir()) == ["nodes.yaml", "queues.yaml"]
    assert load_platform(head).cluster_queues["a"].quotas[0].nominal == Decimal(8)
    first = platform_at("git:v1", directory, tmp_path / "v1")
    assert load_platform(first).cluster_queues["a"].quotas[0].nominal == Decimal(4)
    assert not (tmp_path / "v1" / "README.md").exists(), "only the platform directory is extracted"
    assert "nominalQuota: 16" in (directory / "queues.yaml").read_text(), "the work tree is untouched"
    assert not (directory / "nodes.yaml").exists()


def test_git_ref_of_the_repository_root_extracts_it_whole(repo: Path, tmp_path: Path) -> None:
    found = platform_at("git:v1", repo, tmp_path / "into")
    assert (found / "platforms" / "ml" / "nodes.yaml").read_text() == POOL


def test_an_unknown_git_ref_names_gits_message(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(PlatformError) as caught:
        platform_at("git:no-such-ref", repo / "platforms" / "ml", tmp_path / "into")
    assert caught.value.where.startswith("git archive --format=tar no-such-ref -- platforms/ml")
    assert "no-such-ref" in caught.value.problem and "fatal" in caught.value.problem
    assert "needs DIR inside a Git repository that has REF" in str(caught.value)


def test_git_ref_outside_a_repository_is_refused(tmp_path: Path) -> None:
    outside = write(tmp_path / "plain", {"nodes.yaml": POOL})
    with pytest.raises(PlatformError, match="not a git repository") as caught:
        platform_at("git:HEAD", outside, tmp_path / "into")
    assert caught.value.where.startswith("git rev-parse --show-toplevel")


# -- mended after review -----------------------------------------------------------------------------


def test_exported_nodes_never_take_the_name_of_a_node_pool(tmp_path: Path) -> None:
    exported = node("gpu-1", "p4d", "8")
    del exported["metadata"]["labels"]["node.kubernetes.io/instance-type"]
    platform = load(
        tmp_path,
        {"pools.yaml": POOL, "nodes.yaml": dump(exported), "queues.yaml": dump(flavor())},
    )
    assert sorted((p.name, p.count) for p in platform.pools) == [("gpu", 2), ("gpu-2", 1)]


def test_two_node_pools_of_one_name_are_refused(tmp_path: Path) -> None:
    message = refused(tmp_path, {"a.yaml": POOL, "b.yaml": POOL, "queues.yaml": dump(flavor())})
    assert message.startswith(
        "b.yaml, document 1 (line 1): NodePool gpu is defined twice; the first is at a.yaml"
    )


def test_a_boolean_count_is_not_a_number_of_nodes(tmp_path: Path) -> None:
    message = refused(
        tmp_path, {"nodes.yaml": POOL.replace("count: 2", "count: true"), "q.yaml": dump(flavor())}
    )
    assert "spec.count must be a positive whole number" in message


def test_storage_class_and_object_count_keys_are_not_gpu_caps(tmp_path: Path) -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q", "namespace": "ml"},
        "spec": {
            "hard": {
                "gold.storageclass.storage.k8s.io/requests.storage": "500Gi",
                "count/jobs.batch": "10",
                "requests.nvidia.com/gpu": "4",
            }
        },
    }
    platform = queues(tmp_path, flavor(), quota)
    assert [c.key for c in platform.quota_caps] == ["requests.nvidia.com/gpu"]


def test_a_cohort_with_child_cohorts_gets_no_borrow_or_reclaim_promise(tmp_path: Path) -> None:
    child = {
        "apiVersion": KUEUE,
        "kind": "Cohort",
        "metadata": {"name": "child"},
        "spec": {"parentName": "root"},
    }
    platform = queues(
        tmp_path,
        flavor(),
        child,
        cluster_queue("a", cohort="root", nominalQuota=4),
        cluster_queue("b", cohort="child", nominalQuota=8),
        local_queue("a", "a"),
        local_queue("b", "b"),
    )
    kinds = {(p.cluster_queue, p.kind) for p in derive(platform)}
    assert ("a", "borrow") not in kinds and ("b", "borrow") not in kinds, kinds
    assert ("a", "nominal") in kinds and ("b", "nominal") in kinds, kinds


def test_a_promise_that_broke_is_told_from_one_that_failed() -> None:
    [line] = diff(summary(outcome()), summary(outcome(held=False, broken=True)))
    assert "holds → broken" in line

"""The two tiers of the harness's own tests: ``make test`` (the gate CI runs) and ``make test-e2e`` (nightly).

The gate proves every conformance scenario and every sabotage once on the local provider (those its budget
cannot hold are named below, each with why), the local upgrade canary and its failure on a lost workload, and
everything the harness does without Docker; the heavy tier runs what needs kind or the harness's Docker
Engine, the canaries at scale and under load, and the platforms' twins. A test is in the
heavy tier when it takes one of :data:`E2E_FIXTURES`, is in the Docker engine's group, or is named below;
every other test is in the gate. ``tests/conftest.py`` marks the heavy tier's tests ``e2e``, the Makefile
selects ``-m e2e`` and ``-m "not e2e"``, and ``tests/unit/test_tiers.py`` checks that every test the two
tiers can collect runs in exactly one of them.
"""

from __future__ import annotations

import pytest

from tests.xdist_groups import DOCKER_ENGINE

GATE = "gate"
E2E = "e2e"

E2E_FIXTURES = {
    "docker_env": "kind on the harness's Docker Engine (kind, the first run's digests, the kind canary)",
}

_SABOTAGE = "tests/integration/test_sabotages.py::test_the_scenario_fails_with_its_sabotage"
# The gate's budget (20 minutes warm on two cores): the sabotages of the operators' suites (issue 41 lets
# them go to the heavy tier) whose failure is a wait running out, each with a hook the gate already
# proves on the Job gangs' scenarios. Each still runs nightly.
_RECLAIM = "gate budget: cohort_reclaim_never's hook, proven in the gate on the Job's reclaim"
_CONTROL = "gate budget: GPU requests dropped, as gang_control_gangs_fit does in the gate"
_OPERATORS = ("leaderworkerset", "pytorchjob", "rayjob", "trainjob")
_FAR_TOO_HIGH = "gate budget: quota_far_too_high's hook, proven in the gate on the Job gangs' scenario"
_QUOTA_GIVEN = "gate budget: trainjob_quota_given's hook, proven in the gate on the TrainJob"
_TOLERATION = "gate budget: trainjob_flavor_without_toleration's hook, proven in the gate on the TrainJob"
_SLOW_OPERATOR_SABOTAGES = {
    f"{_SABOTAGE}[leaderworkerset_reclaim_never]": _RECLAIM,
    f"{_SABOTAGE}[trainjob_reclaim_never]": _RECLAIM,
    f"{_SABOTAGE}[leaderworkerset_control_groups_fit]": _CONTROL,
    f"{_SABOTAGE}[trainjob_control_jobs_fit]": _CONTROL,
    f"{_SABOTAGE}[pytorchjob_reclaim_never]": _RECLAIM,
    f"{_SABOTAGE}[pytorchjob_control_jobs_fit]": _CONTROL,
    f"{_SABOTAGE}[rayjob_reclaim_never]": _RECLAIM,
    f"{_SABOTAGE}[rayjob_control_jobs_fit]": _CONTROL,
    f"{_SABOTAGE}[controller_trainjob_never_ends]": "gate budget: a TrainJob's completion wait run out",
    **{f"{_SABOTAGE}[{kind}_quota_far_too_high]": _FAR_TOO_HIGH for kind in _OPERATORS},
    # One operator keeps each of the next two hooks in the gate: the TrainJob's.
    **{f"{_SABOTAGE}[{kind}_quota_given]": _QUOTA_GIVEN for kind in _OPERATORS if kind != "trainjob"},
    **{
        f"{_SABOTAGE}[{kind}_flavor_without_toleration]": _TOLERATION
        for kind in _OPERATORS
        if kind != "trainjob"
    },
    "tests/integration/test_pods_ready_can_fail.py::test_an_operator_s_eviction_fails_when_the_timeout_is_"
    "flattened_to_kueues_default": "gate budget: the flattened timeout's Kueue configuration, whose sabotage "
    "on the Job's eviction runs nightly too",
}
# The policies' sabotages (issue 42) whose hook the gate proves on a sibling: most fail by a wait run out,
# at a quarter of its length, or need a cluster configured for them.
_POLICIES = "gate budget: a ClusterQueue's field changed, the hook cohort_reclaim_never proves in the gate"
_LIFECYCLE = "gate budget: a vcjob's policies dropped, as volcano_restart_policy_dropped does in the gate"
_QUEUE_FIELD = "gate budget: a Volcano Queue's field rewritten, as volcano_queue_uncapped does in the gate"
_VCJOB_FIELD = "gate budget: a vcjob's field rewritten, as volcano_restart_policy_dropped does in the gate"
_TOPOLOGY = "gate budget: a vcjob's placement rewritten, as volcano_topology_one_rack does in the gate"
_SLOW_POLICY_SABOTAGES = {
    f"{_SABOTAGE}[queueing_strict]": _POLICIES,
    f"{_SABOTAGE}[preemption_borrow_never]": _POLICIES,
    f"{_SABOTAGE}[preemption_within_lower_priority]": _POLICIES,
    f"{_SABOTAGE}[volcano_abort_policy_dropped]": _LIFECYCLE,
    f"{_SABOTAGE}[volcano_complete_policy_dropped]": _LIFECYCLE,
    f"{_SABOTAGE}[volcano_min_available_all]": "gate budget: a vcjob's minAvailable rewritten, as "
    "volcano_gang_min_one does in the gate",
    f"{_SABOTAGE}_with_volcano_plugin_network_topology_aware[volcano-plugin-network-topology-aware-"
    "volcano_topology_hard]": _TOPOLOGY,
    f"{_SABOTAGE}_with_volcano_plugin_network_topology_aware[volcano-plugin-network-topology-aware-"
    "volcano_topology_soft]": _TOPOLOGY,
    f"{_SABOTAGE}[volcano_equal_weights]": _QUEUE_FIELD,
    f"{_SABOTAGE}[volcano_deserving_weighted]": _QUEUE_FIELD,
    f"{_SABOTAGE}[volcano_priorities_dropped]": _VCJOB_FIELD,
    f"{_SABOTAGE}[volcano_max_retry_raised]": _VCJOB_FIELD,
    f"{_SABOTAGE}[preemption_within_newer_equal]": _POLICIES,
    f"{_SABOTAGE}[preemption_borrow_lower_priority]": _POLICIES,
    f"{_SABOTAGE}[queueing_best_effort]": _POLICIES,
    "tests/integration/test_cohort_can_fail.py::test_priority_preemption_fails_when_the_queue_may_not_"
    "preempt": _POLICIES,
    "tests/integration/test_preemption_can_fail.py::test_the_initial_share_scenario_fails_under_kueues_default_"
    "strategies": "gate budget: fair sharing's preemption strategies changed, as the final share's sabotage "
    "does in the gate",
}
# Kueue configurations that only a sabotage runs: each a cluster of its own for one test.
_OWN_CLUSTER = "gate budget: a Kueue configuration of its own, whose cluster only this sabotage uses"
_PODS_READY = "tests/integration/test_pods_ready_can_fail.py"
_SLOW_CONFIGURATION_SABOTAGES = {
    f"{_PODS_READY}::test_the_eviction_fails_when_the_timeout_is_flattened_to_kueues_default": _OWN_CLUSTER,
    f"{_PODS_READY}::test_the_block_fails_when_admission_is_not_blocked": _OWN_CLUSTER,
}
_CANARY = "tests/integration/test_upgrade_canary.py"
# The gate runs the canary and its failure on a lost workload; the canary's other failures, each a canary of
# its own (old pins installed, state made, upgraded), run nightly.
_CANARY_FAILURES = {
    f"{_CANARY}::test_the_canary_fails_naming_an_integration_the_new_kueue_configuration_drops": "gate "
    "budget: a canary of its own, the training operator built at its old pin",
    f"{_CANARY}::test_the_canary_fails_when_the_crds_are_not_upgraded": "gate budget: a canary of its own",
    f"{_CANARY}::test_the_canary_reports_an_over_admission_as_the_finding": "gate budget: a canary of its "
    "own",
    f"{_CANARY}::test_the_canary_fails_when_a_stored_version_stops_being_served": "gate budget: a canary of "
    "its own",
    f"{_CANARY}::test_a_baseline_that_fails_on_the_old_pins_is_an_expected_failure_and_marked": "gate "
    "budget: a canary of its own",
    f"{_CANARY}::test_a_canary_from_trainer_v2_1_0_records_kueue_s_words_as_a_finding_and_goes_on": "gate "
    "budget: a canary of its own, Trainer built at v2.1.0",
}

# A module's path (every test in it), a node id without parameters (every parametrization of one test), or
# a node id with them (one parametrization).
E2E_TESTS = {
    **_SLOW_OPERATOR_SABOTAGES,
    **_SLOW_POLICY_SABOTAGES,
    **_SLOW_CONFIGURATION_SABOTAGES,
    **_CANARY_FAILURES,
    "tests/integration/test_platform.py": "a twin per platform: a local cluster per misconfiguration",
    "tests/integration/test_platform_racks_and_dra.py": "a twin per platform, with racks and DRA",
    "tests/integration/test_platform_job_kinds.py": "a twin per platform, with the job kinds' operators",
    "tests/integration/test_platform_policies.py": "a twin per platform, with Kueue's and Volcano's policies",
    "tests/integration/test_upgrade_load.py": "the canary under load: 100 queues, 5,000 workloads",
    "tests/integration/test_kueue_perf.py::test_a_run_cancelled_with_sigterm_removes_its_cluster_and_stops_"
    "everything": "Kueue's performance runner on a cluster of its own",
    "tests/integration/test_kueue_perf.py::test_the_canary_at_scale_fails_on_a_kueue_slowed_through_its_"
    "configuration": "the canary at scale, old pins against new",
    "tests/integration/test_kueue_perf.py::test_on_an_existing_cluster_it_measures_its_kueue_and_leaves_only_"
    "what_was_there": "Kueue's performance runner at scale",
    "tests/integration/test_kueue_perf.py::test_a_topology_config_gets_its_kwok_nodes_and_every_gang_a_"
    "topology_assignment": "Kueue's performance runner with topology",
    "tests/integration/test_readme_example.py::test_the_readme_scenario_runs_under_the_canary_from_a_"
    "directory_of_its_own": "a second canary (old pins, then new) for the README's example",
}


def tier_of(item: pytest.Item) -> str:
    """:data:`E2E` or :data:`GATE` for *item*, and never both."""
    return E2E if why_e2e(item) else GATE


def why_e2e(item: pytest.Item) -> str:
    """Why *item* runs in the heavy tier, or ``""`` when it is in the gate."""
    names = set(getattr(item, "fixturenames", ()))
    for fixture, why in E2E_FIXTURES.items():
        if fixture in names:
            return why
    if any(mark.args and mark.args[0] == DOCKER_ENGINE for mark in item.iter_markers("xdist_group")):
        return "starts and stops a Docker Engine of its own"
    path, _, rest = item.nodeid.partition("::")
    function = rest.partition("[")[0]
    return E2E_TESTS.get(item.nodeid) or E2E_TESTS.get(path) or E2E_TESTS.get(f"{path}::{function}", "")


def mark_tiers(items: list[pytest.Item]) -> None:
    """Mark every heavy-tier test ``e2e``, so that ``-m e2e`` and ``-m "not e2e"`` split the tests in two."""
    for item in items:
        if tier_of(item) == E2E:
            item.add_marker(pytest.mark.e2e)

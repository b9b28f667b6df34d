"""CNCF AI Conformance PRODUCT.yaml: the published checklists as data, outcomes to statuses, the plugin."""

from __future__ import annotations

import ast
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from kbc.plugins.ai_conformance import junit_id
from kbc.report.ai_conformance import (
    DESCRIPTIONS,
    IMPLEMENTED,
    NOT_IMPLEMENTED,
    PARTIALLY_IMPLEMENTED,
    STATUSES,
    Outcome,
    Where,
    product_document,
    render,
    summary,
)
from kbc.report.ai_evidence import (
    CLAIMS,
    DRA_SUPPORT,
    EVIDENCE,
    GANG_SCHEDULING,
    POSITIVE,
    ROBUST_CONTROLLER,
    SECURE_ACCELERATOR_ACCESS,
    VOLCANO,
    Evidence,
)

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]

# The categories, ids and levels of cncf/k8s-ai-conformance's docs/AIConformance-<v>.yaml, typed from
# the published files independently of the module's own layout.
_TAIL = {
    "schedulingOrchestration": {
        "gang_scheduling": "MUST",
        "cluster_autoscaling": "MUST",
        "pod_autoscaling": "MUST",
    },
    "observability": {"accelerator_metrics": "MUST", "ai_service_metrics": "MUST"},
    "security": {"secure_accelerator_access": "MUST"},
    "operator": {"robust_controller": "MUST"},
}
_SHARING = {
    "driver_runtime_management": "SHOULD",
    "gpu_sharing": "SHOULD",
    "virtualized_accelerator": "SHOULD",
}
PUBLISHED: dict[str, dict[str, dict[str, str]]] = {
    "1.33": {"accelerators": {"dra_support": "SHOULD"}, "networking": {"ai_inference": "MUST"}, **_TAIL},
    "1.34": {"accelerators": {"dra_support": "MUST"}, "networking": {"ai_inference": "MUST"}, **_TAIL},
    "1.35": {
        "accelerators": {"dra_support": "MUST", **_SHARING},
        "networking": {"ai_inference": "MUST"},
        **_TAIL,
    },
    "1.36": {
        "accelerators": _SHARING,
        "networking": {
            "ai_inference": "MUST",
            "advanced_inference_ingress": "SHOULD",
            "high_performance_networking": "SHOULD",
            "disaggregated_inference": "SHOULD",
        },
        **_TAIL,
    },
}
WHERE = Where("kind", ["kbc"], "v1.34.9", {"JobSet": "v9.0.1", "Kueue": "v9.0.2", "Volcano": "v9.0.3"})
VOLCANO_GANG = "suites.test_volcano.test_gang_binds_no_pod_until_the_whole_gang_fits"
NVIDIA = "suites.test_nvidia_gpu.test_only_a_pod_that_requests_a_gpu_sees_one"
RESTART = "suites.test_controllers.test_a_killed_kueue_comes_back_and_reconciles_what_waits_with_nothing_lost"
PASSING = sorted(
    {r.test for r in EVIDENCE}
    - {VOLCANO_GANG, NVIDIA}
    - {r.test for r in EVIDENCE if r.test.startswith("suites.test_real_nodes.")}
)
"""The evidencing tests make_suites writes as passing."""


def required(requirement: str) -> list[str]:
    return [row.test for row in EVIDENCE if row.requirement == requirement and not row.optional]


def all_passed() -> dict[str, Outcome]:
    """Every required evidencing test passed; the real-node ones skipped, as they do on most clusters."""
    outcomes = {row.test: Outcome("passed") for row in EVIDENCE if not row.optional}
    outcomes.update({row.test: Outcome("skipped", "no real node") for row in EVIDENCE if row.optional})
    return outcomes


def entries(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["id"]: item for items in document["spec"].values() for item in items}


def template_item(document: dict[str, Any], requirement: str) -> dict[str, Any]:
    item = entries(document)[requirement]
    return {k: item[k] for k in ("status", "evidence", "notes")}


LEFT = {"status": "", "evidence": [], "notes": ""}


# -- the published checklists ---------------------------------------------------------------------


@pytest.mark.parametrize("version", list(PUBLISHED))
def test_every_published_entry_is_there_with_its_level_and_empty_answers(version: str) -> None:
    document = product_document({}, Where(kubernetes=f"v{version}.1"))
    assert list(document) == ["metadata", "spec"]
    assert document["metadata"]["kubernetesVersion"] == f"v{version}"
    assert ("k8sConformanceUrl" in document["metadata"]) == (version == "1.35"), document["metadata"]
    assert list(document["spec"]) == list(PUBLISHED[version]), "the categories, in the template's order"
    ids = [item["id"] for items in document["spec"].values() for item in items]
    assert len(ids) == len(set(ids)), ids
    for category, items in document["spec"].items():
        assert {i["id"]: i["level"] for i in items} == PUBLISHED[version][category], category
        assert [i["id"] for i in items] == list(PUBLISHED[version][category]), category
        for item in items:
            assert list(item) == ["id", "description", "level", "status", "evidence", "notes"], item
            assert item["description"] == DESCRIPTIONS[item["id"]] != ""
            assert (item["status"], item["evidence"], item["notes"]) == ("", [], "")


def test_descriptions_are_the_published_text() -> None:
    assert DESCRIPTIONS[GANG_SCHEDULING] == (
        "The platform must allow for the installation and successful operation of at least one gang "
        "scheduling solution that ensures all-or-nothing scheduling for distributed AI workloads (e.g. "
        "Kueue, Volcano, etc.) To be conformant, the vendor must demonstrate that their platform can "
        "successfully run at least one such solution."
    )
    assert DESCRIPTIONS[ROBUST_CONTROLLER] == (
        "The platform must prove that at least one complex AI operator with a CRD (e.g., Ray, Kubeflow) can "
        "be installed and functions reliably. This includes verifying that the operator's pods run "
        "correctly, its webhooks are operational, and its custom resources can be reconciled."
    )
    assert DESCRIPTIONS[SECURE_ACCELERATOR_ACCESS].startswith(
        "Ensure that access to accelerators from within"
    )


def test_each_evidence_row_names_a_test_function_of_the_suites() -> None:
    """A renamed or moved scenario must not leave the table pointing at nothing."""
    for row in EVIDENCE:
        module, _, function = row.test.rpartition(".")
        path = REPO / Path(*module.split(".")).with_suffix(".py")
        assert path.is_file(), f"{row.test}: no {path}"
        defined = {n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)}
        assert function in defined, f"{row.test}: no function {function} in {path}"
    claimed = {claim.requirement for claim in CLAIMS}
    assert (
        {row.requirement for row in EVIDENCE}
        == claimed
        == {
            GANG_SCHEDULING,
            DRA_SUPPORT,
            ROBUST_CONTROLLER,
            SECURE_ACCELERATOR_ACCESS,
        }
    )
    for claim in CLAIMS:
        shown = {(r.solution, s) for r in EVIDENCE if r.requirement == claim.requirement for s in r.shows}
        assert claim.needs <= shown, f"{claim.requirement} needs what no row shows: {claim.needs - shown}"


# -- outcomes to statuses -------------------------------------------------------------------------


def test_everything_passed_is_implemented_with_the_test_ids_as_evidence() -> None:
    document = product_document(all_passed(), WHERE)
    items = entries(document)
    answered = {GANG_SCHEDULING, DRA_SUPPORT, ROBUST_CONTROLLER, SECURE_ACCELERATOR_ACCESS}
    for requirement in answered:
        item = items[requirement]
        assert item["status"] == IMPLEMENTED, item
        assert item["evidence"] == required(requirement), "the tests that ran, in the table's order"
        assert item["status"] in STATUSES
        assert "\n" not in item["notes"] and WHERE.describe() in item["notes"], item["notes"]
    assert "provider kind, cluster kbc, Kubernetes v1.34.9, JobSet v9.0.1" in items[GANG_SCHEDULING]["notes"]
    for requirement in set(items) - answered:
        assert template_item(document, requirement) == LEFT, "not the harness's to answer"
    assert document["metadata"]["vendorName"] == "[Vendor Name]", "the metadata is for a person"
    assert document["metadata"]["kubernetesVersion"] == "v1.34"


DRIVER = "suites.test_dra.test_a_driver_prepares_the_allocated_device_and_the_pod_sees_it"


def test_dra_without_a_driver_preparing_the_device_is_only_partially_implemented() -> None:
    """On the local provider the harness publishes the devices and nothing prepares them: the scheduler's
    allocation is evidenced, the driver's half is not, and the entry says which test skipped and why."""
    why = "the harness publishes these ResourceSlices itself: no kubelet plugin prepares a device"
    outcomes = {**all_passed(), DRIVER: Outcome("skipped", why)}
    item = entries(product_document(outcomes, WHERE))[DRA_SUPPORT]
    assert item["status"] == PARTIALLY_IMPLEMENTED, item
    assert f"{DRIVER} was skipped ({why})" in item["notes"], item["notes"]
    assert DRIVER not in item["evidence"] and item["evidence"], item


def test_a_topology_or_pods_ready_failure_makes_gang_scheduling_not_implemented() -> None:
    """Optional rows cost nothing skipped, but a failure is a verdict like any other."""
    tas = "suites.test_topology.test_a_gang_that_needs_one_rack_lands_in_one_rack"
    outcomes = {**all_passed(), tas: Outcome("failed", "a gang that requires one rack ran in 2 racks")}
    item = entries(product_document(outcomes, WHERE))[GANG_SCHEDULING]
    assert item["status"] == NOT_IMPLEMENTED, item
    assert "ran in 2 racks" in item["notes"], item["notes"]


def test_a_gang_solution_without_a_negative_case_is_only_partially_implemented() -> None:
    positive_only = Evidence(GANG_SCHEDULING, VOLCANO_GANG, VOLCANO, frozenset({POSITIVE}))
    table = [positive_only if row.test == VOLCANO_GANG else row for row in EVIDENCE]
    item = entries(product_document(all_passed(), WHERE, evidence=table))[GANG_SCHEDULING]
    assert item["status"] == PARTIALLY_IMPLEMENTED, item
    assert "no passed test shows a negative case on Volcano" in item["notes"], item["notes"]
    assert VOLCANO_GANG in item["evidence"]


def test_volcano_not_run_leaves_gang_scheduling_partial_and_says_why() -> None:
    outcomes = all_passed()
    del outcomes[VOLCANO_GANG]
    item = entries(product_document(outcomes, WHERE))[GANG_SCHEDULING]
    assert item["status"] == PARTIALLY_IMPLEMENTED, item
    assert f"{VOLCANO_GANG} did not run" in item["notes"], item["notes"]
    assert "no passed test shows a negative case on Volcano" in item["notes"]
    assert "no passed test shows a positive case on Volcano" in item["notes"]
    assert VOLCANO_GANG not in item["evidence"]


def test_a_skipped_negative_control_is_no_evidence() -> None:
    control = "suites.test_gang.test_without_kueue_two_gangs_on_six_gpus_end_partially_placed"
    outcomes = {**all_passed(), control: Outcome("skipped", "fewer than 6 free GPUs")}
    item = entries(product_document(outcomes, WHERE))[GANG_SCHEDULING]
    assert item["status"] == PARTIALLY_IMPLEMENTED
    assert f"{control} was skipped (fewer than 6 free GPUs)" in item["notes"], item["notes"]


def test_a_failed_evidencing_test_is_not_implemented_and_named() -> None:
    outcomes = {**all_passed(), VOLCANO_GANG: Outcome("failed", "WaitGaveUp: PodGroup went Running")}
    items = entries(product_document(outcomes, WHERE))
    item = items[GANG_SCHEDULING]
    assert item["status"] == NOT_IMPLEMENTED, item
    assert VOLCANO_GANG in item["evidence"]
    assert f"{VOLCANO_GANG} failed" in item["notes"], item["notes"]
    assert items[ROBUST_CONTROLLER]["status"] == IMPLEMENTED, "the failure is gang scheduling's only"


def test_a_failed_optional_test_counts_and_a_skipped_one_does_not() -> None:
    real_node = "suites.test_real_nodes.test_a_gang_admitted_whole_meets_and_completes"
    skipped = entries(product_document(all_passed(), WHERE))[GANG_SCHEDULING]
    assert skipped["status"] == IMPLEMENTED and real_node not in skipped["evidence"]
    ran = entries(product_document({**all_passed(), real_node: Outcome("passed")}, WHERE))[GANG_SCHEDULING]
    assert ran["status"] == IMPLEMENTED and real_node in ran["evidence"]
    failed = entries(product_document({**all_passed(), real_node: Outcome("failed")}, WHERE))[GANG_SCHEDULING]
    assert failed["status"] == NOT_IMPLEMENTED


def test_skipped_exclusive_gpu_access_is_left_for_a_person() -> None:
    reason = "no Ready node has GPUs from a device plugin (excluded fake GPU nodes: kwok-gpu-0)"
    outcomes = {**all_passed(), NVIDIA: Outcome("skipped", reason)}
    item = template_item(product_document(outcomes, WHERE), SECURE_ACCELERATOR_ACCESS)
    assert (item["status"], item["evidence"]) == ("", [])
    assert f"{NVIDIA} was skipped ({reason})" in item["notes"] and "Left for a person" in item["notes"]
    del outcomes[NVIDIA]
    assert template_item(product_document(outcomes, WHERE), SECURE_ACCELERATOR_ACCESS) == LEFT, (
        "not collected at all: exactly the template"
    )


def test_every_parametrized_run_is_evidence_and_the_junit_prefix_is_kept() -> None:
    outcomes = {
        f"ci.{test}[{pins}]": Outcome("passed")
        for test in required(GANG_SCHEDULING)
        for pins in ("old", "new")
    }
    item = entries(product_document(outcomes, WHERE, junit_prefix="ci"))[GANG_SCHEDULING]
    assert item["status"] == IMPLEMENTED, item
    assert len(item["evidence"]) == 2 * len(required(GANG_SCHEDULING))
    assert f"ci.{VOLCANO_GANG}[new]" in item["evidence"]
    without = product_document(outcomes, WHERE)
    assert template_item(without, GANG_SCHEDULING) == LEFT, "the ids carry a prefix this run did not give"


def test_a_broken_test_evidences_nothing_and_is_never_a_verdict() -> None:
    # Every gang scenario erred in setup (a cluster name kind refuses): the run proved nothing.
    setup = "ClusterError: kind create cluster failed: 'Nightly-1' is not a valid cluster name"
    outcomes = {**all_passed(), **{t: Outcome("broken", setup) for t in required(GANG_SCHEDULING)}}
    item = entries(product_document(outcomes, WHERE))[GANG_SCHEDULING]
    assert (item["status"], item["evidence"]) == ("", []), "a broken run is no claim either way"
    assert "broke, so it showed nothing" in item["notes"] and "Nightly-1" in item["notes"], item["notes"]
    assert "Left for a person" in item["notes"], item["notes"]
    one = entries(product_document({**all_passed(), VOLCANO_GANG: Outcome("broken", setup)}, WHERE))
    assert one[GANG_SCHEDULING]["status"] == PARTIALLY_IMPLEMENTED, one[GANG_SCHEDULING]
    assert VOLCANO_GANG not in one[GANG_SCHEDULING]["evidence"]


def test_robust_controller_needs_the_refusal_and_the_restart() -> None:
    without = {**all_passed(), RESTART: Outcome("skipped", "cluster not created by the harness")}
    item = entries(product_document(without, WHERE))[ROBUST_CONTROLLER]
    assert item["status"] == PARTIALLY_IMPLEMENTED, item
    assert "no passed test shows a recovery from a killed controller on Kueue" in item["notes"], item["notes"]
    failed = entries(
        product_document({**all_passed(), RESTART: Outcome("failed", "Workloads changed")}, WHERE)
    )
    assert failed[ROBUST_CONTROLLER]["status"] == NOT_IMPLEMENTED
    assert "Workloads changed" in failed[ROBUST_CONTROLLER]["notes"], "the failure, in its words"


MIXES = {
    "all passed": all_passed(),
    "one failed": {**all_passed(), VOLCANO_GANG: Outcome("failed", "bound in part")},
    "one broken": {**all_passed(), RESTART: Outcome("broken", "no cluster")},
    "one skipped": {**all_passed(), RESTART: Outcome("skipped", "existing provider")},
    "all broken": {t: Outcome("broken", "no cluster") for t in all_passed()},
    "all skipped": {t: Outcome("skipped", "no node") for t in all_passed()},
    "parametrized": {f"{t}[new-pins]": o for t, o in all_passed().items()},
}


@pytest.mark.parametrize("outcomes", list(MIXES.values()), ids=list(MIXES))
def test_an_entry_claimed_cites_only_tests_that_ran_and_passed(outcomes: dict[str, Outcome]) -> None:
    for item in entries(product_document(outcomes, WHERE)).values():
        cited = item["evidence"]
        if item["status"] in (IMPLEMENTED, PARTIALLY_IMPLEMENTED):
            assert cited, f"{item['id']} is {item['status']} citing nothing"
            assert all(outcomes[i].result == "passed" for i in cited), (item["id"], cited)
        if item["status"] == NOT_IMPLEMENTED:
            assert any(outcomes[i].result == "failed" for i in cited), (item["id"], cited)
        if item["status"] == "":
            assert not cited, (item["id"], cited)


def test_plain_string_outcomes_are_accepted() -> None:
    outcomes = {test: "passed" for test in required(SECURE_ACCELERATOR_ACCESS)}
    assert entries(product_document(outcomes))[SECURE_ACCELERATOR_ACCESS]["status"] == IMPLEMENTED


@pytest.mark.parametrize(
    ("server", "version", "checklist_has"),
    [
        ("v1.35.2", "v1.35", "dra_support"),
        ("v1.33.0+k3s1", "v1.33", "dra_support"),
        ("v1.40.0", "v1.40", "disaggregated_inference"),
        (None, "v1.36", "disaggregated_inference"),
        ("unknown", "v1.36", "disaggregated_inference"),
    ],
)
def test_the_servers_minor_picks_the_checklist(server: str | None, version: str, checklist_has: str) -> None:
    document = product_document({}, Where(kubernetes=server))
    assert document["metadata"]["kubernetesVersion"] == version
    assert checklist_has in entries(document)
    header = render(document).split("\nmetadata:")[0]
    assert ("No checklist is published for Kubernetes v1.40" in header) == (server == "v1.40.0"), header


def test_render_reads_back_as_the_document_in_the_templates_layout() -> None:
    document = product_document({**all_passed(), NVIDIA: Outcome("skipped", 'a "quoted" reason: x')}, WHERE)
    text = render(document)
    assert yaml.safe_load(text) == document
    lines = text.splitlines()
    assert lines[0] == "# Kubernetes AI Conformance Checklist"
    assert "    - id: gang_scheduling" in lines and "      level: MUST" in lines
    assert "      evidence: []" in lines
    assert f'        - "{VOLCANO_GANG}"' in lines
    assert "docs/AIConformance-1.34.yaml of cncf/k8s-ai-conformance" in text


def test_summary_names_each_evidenced_entry() -> None:
    outcomes = {**all_passed(), NVIDIA: Outcome("skipped")}
    assert summary(product_document(outcomes, WHERE)) == (
        f"gang_scheduling Implemented ({len(required(GANG_SCHEDULING))} tests), "
        f"dra_support Implemented ({len(required(DRA_SUPPORT))} tests), "
        f"robust_controller Implemented ({len(required(ROBUST_CONTROLLER))} tests), "
        "secure_accelerator_access left for a person"
    )


# -- the plugin -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodeid", "prefix", "expected"),
    [
        ("suites/test_gang.py::test_a", None, "suites.test_gang.test_a"),
        ("suites/test_gang.py::test_a[old]", None, "suites.test_gang.test_a[old]"),
        (
            "suites/test_gang.py::test_a[kueue-fair-sharing]",
            "ci",
            "ci.suites.test_gang.test_a[kueue-fair-sharing]",
        ),
        ("suites/test_x.py::TestY::test_z", None, "suites.test_x.TestY.test_z"),
    ],
)
def test_junit_id_is_classname_dot_name(nodeid: str, prefix: str | None, expected: str) -> None:
    assert junit_id(nodeid, prefix) == expected


# The inner session loads the harness plugin as the repository's conftest.py does.
PLUGIN = ("-p", "kbc.plugin", "-p", "no:cacheprovider")


def make_suites(pytester: pytest.Pytester) -> None:
    """Stand-ins for the suites, with the evidencing tests' names: the Volcano gang fails, nvidia skips."""
    modules: dict[str, list[str]] = {}
    for row in EVIDENCE:
        module, _, function = row.test.rpartition(".")
        modules.setdefault(module, [])
        if function not in modules[module]:
            modules[module].append(function)
    for module, functions in modules.items():
        body = ["import pytest", ""]
        for function in functions:
            if f"{module}.{function}" == VOLCANO_GANG:
                body += [f"def {function}():", "    assert False, 'gang bound in part'", ""]
            elif f"{module}.{function}" == NVIDIA or module.endswith("test_real_nodes"):
                body += [f"def {function}():", "    pytest.skip('no such node here')", ""]
            else:
                body += [f"def {function}():", "    pass", ""]
        path = pytester.path / Path(*module.split(".")).with_suffix(".py")
        path.parent.mkdir(exist_ok=True)
        path.write_text("\n".join(body))


def test_plugin_writes_product_yaml_with_junit_ids(pytester: pytest.Pytester) -> None:
    make_suites(pytester)
    reports = pytester.path / "reports"
    junit = reports / "junit.xml"
    result = pytester.runpytest_inprocess(
        *PLUGIN, "--report-dir", str(reports), "--junitxml", str(junit), "suites"
    )
    result.assert_outcomes(passed=len(PASSING), failed=1, skipped=3)
    product = reports / "ai-conformance" / "PRODUCT.yaml"
    document = yaml.safe_load(product.read_text())
    items = entries(document)
    assert items[GANG_SCHEDULING]["status"] == NOT_IMPLEMENTED
    assert items[ROBUST_CONTROLLER]["status"] == IMPLEMENTED
    assert (items[SECURE_ACCELERATOR_ACCESS]["status"], items[SECURE_ACCELERATOR_ACCESS]["evidence"]) == (
        "",
        [],
    )
    cases = ET.parse(junit).getroot().iter("testcase")
    written = {f"{case.get('classname')}.{case.get('name')}" for case in cases}
    evidence = [e for item in items.values() for e in item["evidence"]]
    assert evidence and set(evidence) <= written, "every evidence entry is a testcase of the JUnit report"
    line = f"AI Conformance evidence: {summary(document)} → {product}"
    assert line in (reports / "summary.md").read_text()
    assert line in result.stdout.str()


def test_plugin_claims_nothing_from_scenarios_that_broke_in_setup(pytester: pytest.Pytester) -> None:
    make_suites(pytester)
    # Every scenario errs in setup with the harness's error, as when kind refuses the cluster's name.
    pytester.makeconftest(
        "import pytest\n"
        "from kbc.errors import ClusterError\n"
        "@pytest.fixture(autouse=True)\n"
        "def cluster_of_a_bad_name(request):\n"
        "    raise ClusterError('kind refused the cluster name Nightly-1')\n"
    )
    reports = pytester.path / "reports"
    pytester.runpytest_inprocess(*PLUGIN, "--report-dir", str(reports), "suites")
    items = entries(yaml.safe_load((reports / "ai-conformance" / "PRODUCT.yaml").read_text()))
    said = "broke, so it showed nothing (kbc.errors.ClusterError: kind refused the cluster name Nightly-1)"
    for requirement in (GANG_SCHEDULING, ROBUST_CONTROLLER):
        item = items[requirement]
        assert (item["status"], item["evidence"]) == ("", []), item
        assert said in item["notes"], item["notes"]


def test_plugin_writes_nothing_for_tests_that_evidence_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_own="def test_harness():\n    pass\n")
    reports = pytester.path / "reports"
    result = pytester.runpytest_inprocess(
        "-p", "kbc.plugin", "-p", "no:cacheprovider", "--report-dir", str(reports)
    )
    result.assert_outcomes(passed=1)
    assert not (reports / "ai-conformance").exists()


def test_plugin_writes_nothing_without_a_report_dir(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KBC_REPORT_DIR", raising=False)  # the option's variable would give it one
    make_suites(pytester)
    result = pytester.runpytest_inprocess(*PLUGIN, "suites")
    result.assert_outcomes(passed=len(PASSING), failed=1, skipped=3)
    assert not list(pytester.path.rglob("PRODUCT.yaml"))

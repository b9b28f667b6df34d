"""What the kind tests run and the tools they look with: the scenarios each kind run passes or breaks, the
kind clusters on the harness's engine, and the leftovers a removed cluster must not leave."""

from __future__ import annotations

import os
import subprocess
import threading

from kbc.process import command_lines
from kbc.supply import paths
from tests.integration.commands import kbc

# The representative scenarios the issue names: gang all-or-nothing with its negative control,
# quota-zero, cohort reclaim, the GPU ResourceQuota; and a real-node gang, whose pods really meet.
SCENARIOS = [
    "suites/test_gang.py::test_two_job_gangs_one_runs_whole_the_other_waits_whole",
    "suites/test_gang.py::test_without_kueue_two_gangs_on_six_gpus_end_partially_placed",
    "suites/test_quota.py::test_quota_zero_waits_then_runs_when_quota_is_raised",
    "suites/test_cohort.py::test_lender_reclaims_lent_quota_by_evicting_the_borrower",
    "suites/test_gpu_quota.py::test_pod_over_the_gpu_cap_is_refused_and_one_within_is_admitted",
    "suites/test_real_nodes.py::test_a_gang_admitted_whole_meets_and_completes",
    # Kueue's pod killed without grace: the Deployment's new pod serves its webhooks and takes the Lease.
    "suites/test_controllers.py::test_a_killed_kueue_comes_back_and_reconciles_what_waits_with_nothing_lost",
    "suites/test_controllers.py::test_kueue_webhook_refuses_a_lending_limit_above_the_nominal_quota",
    # GPUs by DRA from the pinned dra-example-driver: kube-scheduler allocates a device its kubelet plugin
    # published, and the plugin prepares it for the container (a pod without a claim sees none).
    "suites/test_dra.py::test_a_claim_is_allocated_a_device_that_a_node_offers",
    "suites/test_dra.py::test_a_driver_prepares_the_allocated_device_and_the_pod_sees_it",
    # Kubeflow Trainer installed by helm in two steps (its runtimes once its webhook answers): a TrainJob
    # admitted whole by Kueue, and one whose real pods run and end, reaching Complete through its JobSet.
    "suites/test_trainjob.py::test_a_trainjob_is_admitted_whole_and_a_second_waits_without_a_pod",
    "suites/test_controllers.py::test_a_trainjob_on_torch_distributed_reaches_complete",
    # KubeRay's pods on the Ray image built from PyPI's wheels: a RayJob's whole cluster runs Ray, admitted
    # whole by Kueue while a second waits without a pod.
    "suites/test_rayjob.py::test_a_rayjob_is_admitted_whole_and_a_second_waits_without_a_pod",
    # Volcano's job lifecycle where containers really exit: a failed pod's `sh -c "sleep 3; exit 1"` and a
    # chief's success reach vc-controller-manager as kubelet reports them (on local, kwok's stages end them).
    "suites/test_volcano_lifecycle.py::test_a_failed_pod_aborts_the_job",
    "suites/test_volcano_lifecycle.py::test_a_completed_chief_completes_the_job",
    "suites/test_volcano_lifecycle.py::test_max_retry_bounds_the_restarts",
]
# The DRA scenario that only a driver's kubelet plugin can pass runs (and is sabotaged) on kind only: on the
# local provider the harness publishes the slices and it skips, so test_dra_can_fail.py cannot break it.
DRA_PREPARED = "suites/test_dra.py::test_a_driver_prepares_the_allocated_device_and_the_pod_sees_it"
DRA_SABOTAGES = {
    # The claim kept from the container: allocated and prepared, but the container is given nothing.
    "dra_claim_kept_from_the_container": ["AssertionError", "was allocated gpu-", "sees no device"],
    # The control given a claim: the pod that should claim nothing sees a device.
    "dra_every_pod_claims_a_device": ["AssertionError", "a pod that claims no device sees {'GPU_DEVICE_"],
}
# Where pods run, a training job's nodes meet at the rendezvous their operator wires (the toolbox's
# /bin/meet): admitted whole they meet; placed in part without Kueue they hang. On the local provider's
# kwok nodes these skip, so they run (and are sabotaged) here.
MEET_TRAINJOB = (
    "suites/test_trainjob.py::test_an_admitted_trainjob_s_nodes_meet_at_the_rendezvous_trainer_wires"
)
HANG_TRAINJOB = "suites/test_trainjob.py::test_without_kueue_partly_placed_trainjobs_hang_at_their_rendezvous"
MEET_PYTORCHJOB = (
    "suites/test_pytorchjob.py::test_an_admitted_pytorchjob_s_nodes_meet_at_the_rendezvous_its_operator_wires"
)
HANG_PYTORCHJOB = (
    "suites/test_pytorchjob.py::test_without_kueue_partly_placed_pytorchjobs_hang_at_their_rendezvous"
)
# Where pods run Ray (the image the harness builds from PyPI's wheels), a RayJob's workers join the head
# KubeRay wires and run its GPU tasks; placed in part without Kueue, the job never starts.
JOIN_RAYJOB = (
    "suites/test_rayjob.py::test_an_admitted_rayjob_s_workers_join_its_head_and_each_runs_a_gpu_task"
)
HANG_RAYJOB = "suites/test_rayjob.py::test_without_kueue_partly_placed_rayjobs_never_start_their_job"
RENDEZVOUS_SABOTAGES = {
    # Every node told it is node 1: nobody hosts the rendezvous, the job never ends.
    MEET_TRAINJOB: ("trainjob_meet_without_a_host", ["kbc.errors.WaitTimeout", "TrainJob meet Complete"]),
    MEET_PYTORCHJOB: (
        "pytorchjob_meet_without_a_host",
        ["kbc.errors.WaitTimeout", "PyTorchJob meet Succeeded"],
    ),
    # The jobs asking for no GPU fit whole, meet and end: nothing is left partly placed to hang.
    HANG_TRAINJOB: (
        "trainjob_control_jobs_fit",
        ["kbc.errors.WaitTimeout", "waiting for both TrainJobs to be partially placed"],
    ),
    HANG_PYTORCHJOB: (
        "pytorchjob_control_jobs_fit",
        ["kbc.errors.WaitTimeout", "waiting for both PyTorchJobs to be partially placed"],
    ),
    # The workers advertise no GPU to Ray: they join, but the job's GPU tasks find nowhere to run.
    JOIN_RAYJOB: (
        "rayjob_join_without_gpus",
        ["kbc.errors.WaitTimeout", "RayJob joins SUCCEEDED and Complete"],
    ),
    HANG_RAYJOB: (
        "rayjob_control_jobs_fit",
        ["kbc.errors.WaitTimeout", "waiting for both RayJobs' clusters to be partially placed"],
    ),
}


class KindClusters:
    """Which kind clusters run on the engine, sampled every 2 s while a run goes on."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.seen: set[str] = set()
        self.most = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="kind-clusters", daemon=True)

    def __enter__(self) -> KindClusters:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(2.0):
            found = docker(self.env, "ps", "--format", '{{.Label "io.x-k8s.kind.cluster"}}')
            running = set(found.stdout.split()) if found.returncode == 0 else set()
            self.seen |= running
            self.most = max(self.most, len(running))


def kbc_in(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``kbc *args`` in *env*, with the time a cold kind cluster of built images may take."""
    return kbc(*args, env=env, timeout=1200)


def docker(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args], env=env, capture_output=True, text=True, check=False, timeout=300
    )


def containers_of(env: dict[str, str], cluster: str) -> list[str]:
    found = docker(
        env, "ps", "-a", "--filter", f"label=io.x-k8s.kind.cluster={cluster}", "--format", "{{.Names}}"
    )
    assert found.returncode == 0, found.stderr
    return found.stdout.split()


def processes_of(cluster: str) -> list[str]:
    """Host processes that name the cluster's folder (its registry, chart repository, log follower)."""
    folder = str(paths.clusters_dir() / f"kind-{cluster}")
    return [f"{pid} {cmd[:160]}" for pid, cmd in command_lines() if folder in cmd and pid != os.getpid()]


def assert_nothing_left(env: dict[str, str], cluster: str) -> None:
    assert containers_of(env, cluster) == [], "kind's node containers are gone"
    assert processes_of(cluster) == [], "the registry, chart repository and log follower are stopped"
    assert not (paths.clusters_dir() / f"kind-{cluster}").exists(), "the cluster's folder is removed"

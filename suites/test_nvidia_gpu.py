"""Real NVIDIA GPUs: a GPU Job queued through Kueue runs on a device-plugin GPU and sees it.

Everything the fake_gpu suite proves stops at the API: a kwok node or a patched kind worker has
``nvidia.com/gpu`` in its status but no device behind it. This smoke test runs only where some Ready
node's GPUs come from a real device plugin (``kbc.gpu.real_gpu_nodes``: every GPU node the harness
made is excluded) and proves the last step: a one-GPU Job admitted by Kueue from a LocalQueue whose
ClusterQueue quotes ``nvidia.com/gpu`` runs the pinned CUDA base image (``charts-lock.yaml``
``testImages.cuda``), ``nvidia-smi -L`` lists the GPU the device plugin handed to it, and the Job
completes. A second scenario proves the access is exclusive: on the same nodes, a pod that asks for
no GPU sees no GPU device node and ``nvidia-smi`` finds no GPU in it, and a one-GPU pod sees exactly
one (a runtime that honours the CUDA images' ``NVIDIA_VISIBLE_DEVICES=all`` for every pod fails it).
Elsewhere both skip and say which fake GPU nodes they excluded.
"""

from __future__ import annotations

import allure
import pytest

from kbc import timeouts
from kbc.gpu import RealGpuNodes, real_gpu_nodes
from kbc.jobs import job_pods, wait_job_complete
from kbc.kube import Kube, Obj, condition
from kbc.kueue import QueueFactory, Queues, wait_admitted, wait_finished, wait_workload_of
from kbc.labels import GPU, HOSTNAME_LABEL, REAL_NODE_LABEL
from kbc.workloads import job

pytestmark = [pytest.mark.nvidia_gpu, pytest.mark.kueue, allure.epic("Kueue"), allure.feature("nvidia_gpu")]

# nvidia-smi -L prints one line per visible GPU: "GPU 0: <name> (UUID: GPU-...)".
FIRST_GPU = "GPU 0:"
# What a pod sees of the GPUs: its /dev/nvidia<N> device nodes on one line, then nvidia-smi's list
# (nvidia-smi itself is only there when the runtime put a GPU's driver files into the container).
SEE_GPUS = (
    'echo "devices:" $(ls /dev | grep -E "^nvidia[0-9]+$"); '
    'if command -v nvidia-smi >/dev/null; then nvidia-smi -L; else echo "no nvidia-smi"; fi; true'
)


@pytest.fixture
def real_gpus(kube: Kube) -> RealGpuNodes:
    """The nodes whose GPUs come from a device plugin; skips (saying what it excluded) when there are none."""
    found = real_gpu_nodes(kube)
    if not found:
        pytest.skip(found.why_none())
    return found


@pytest.fixture
def gpu_queue(real_gpus: RealGpuNodes, make_kueue_queues: QueueFactory) -> Queues:
    """A ClusterQueue quoting one GPU (and a little CPU) for this test's namespace."""
    return make_kueue_queues({"cpu": "1", GPU: "1"})


def smoke_job(
    name: str, queue: str, image: str, nodes: list[str], *, gpus: int = 1, command: list[str] | None = None
) -> Obj:
    """A Job of *gpus* GPUs running *command* (default ``nvidia-smi -L``) in *image*, only on *nodes*."""
    manifest = job(name, gpus=gpus, cpu="100m", queue=queue)
    spec = manifest["spec"]["template"]["spec"]
    spec["containers"][0].update(name="cuda", image=image, command=command or ["nvidia-smi", "-L"])
    # A real node of the local provider keeps other suites' pods off with a taint; this pod belongs there.
    spec["tolerations"] = [{"key": REAL_NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}]
    # Only the real GPU nodes: a cluster may also have fake GPU nodes, where nvidia-smi cannot run.
    spec["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": nodes}]}
                ]
            }
        }
    }
    return manifest


@allure.story("a one-GPU Job queued through Kueue runs nvidia-smi on a device-plugin GPU and completes")
def test_queued_gpu_job_sees_its_gpu(
    kube: Kube, workload_images: dict[str, str], real_gpus: RealGpuNodes, namespace: str, gpu_queue: Queues
) -> None:
    image = workload_images["cuda"]
    with allure.step(
        f"submit a 1-GPU Job running `nvidia-smi -L` in {image} to LocalQueue {gpu_queue.local_queue}"
    ):
        created = kube.create(
            smoke_job("nvidia-smi", gpu_queue.local_queue, image, real_gpus.names), namespace=namespace
        )
        assert created["spec"]["suspend"] is True, "Kueue's webhook suspends a Job that names a LocalQueue"
    with allure.step("Kueue admits it within the ClusterQueue's GPU quota"):
        workload = wait_workload_of(kube, namespace, created)[0]["metadata"]["name"]
        wait_admitted(kube, namespace, workload)
    with allure.step("the Job completes (image pull included) and its Workload finishes Succeeded"):
        wait_job_complete(kube, namespace, "nvidia-smi", timeout=timeouts.IMAGE_PULL)
        (finished,) = wait_finished(kube, namespace, workload)
        assert (condition(finished, "Finished") or {}).get("reason") == "Succeeded", condition(
            finished, "Finished"
        )
    with allure.step(f"its log lists {FIRST_GPU!r}: the container saw the GPU the device plugin gave it"):
        (pod,) = job_pods(kube, namespace, "nvidia-smi")
        log = kube.pod_log(pod["metadata"]["name"], namespace, container="cuda")
        allure.attach(log, name="nvidia-smi -L", attachment_type=allure.attachment_type.TEXT)
        assert FIRST_GPU in log, (
            f"`nvidia-smi -L` on node {pod['spec'].get('nodeName')} should list the GPU "
            "the device plugin gave "
            f"the pod ({FIRST_GPU!r}); its log was:\n{log or '(empty)'}"
        )


def gpus_seen(log: str) -> tuple[list[str], list[str]]:
    """(the /dev/nvidia<N> device nodes, the ``GPU <n>:`` lines of ``nvidia-smi -L``) in a SEE_GPUS log."""
    devices: list[str] = []
    listed: list[str] = []
    for line in log.splitlines():
        if line.startswith("devices:"):
            devices = line.removeprefix("devices:").split()
        elif line.startswith("GPU "):
            listed.append(line)
    return devices, listed


@allure.story("a pod without a GPU request sees no GPU; a one-GPU pod sees exactly one")
def test_only_a_pod_that_requests_a_gpu_sees_one(
    kube: Kube, workload_images: dict[str, str], real_gpus: RealGpuNodes, namespace: str, gpu_queue: Queues
) -> None:
    image = workload_images["cuda"]
    command = ["sh", "-c", SEE_GPUS]
    jobs = {"no-gpu": 0, "one-gpu": 1}
    with allure.step(
        f"submit a Job without a GPU request and a one-GPU Job, both in {image}, to the real GPU nodes"
    ):
        for name, gpus in jobs.items():
            kube.create(
                smoke_job(name, gpu_queue.local_queue, image, real_gpus.names, gpus=gpus, command=command),
                namespace=namespace,
            )
    logs = {}
    with allure.step("both complete, each listing the GPU devices it sees"):
        for name in jobs:
            wait_job_complete(kube, namespace, name, timeout=timeouts.IMAGE_PULL)
            (pod,) = job_pods(kube, namespace, name)
            logs[name] = kube.pod_log(pod["metadata"]["name"], namespace, container="cuda")
            allure.attach(
                logs[name],
                name=f"{name}: devices and nvidia-smi -L",
                attachment_type=allure.attachment_type.TEXT,
            )
            # Without its "devices:" line the probe never ran, and "sees no GPU" would mean nothing.
            assert "devices:" in logs[name], (
                f"Job {name}'s probe did not run in {image} (it needs sh, ls and grep); its log:\n"
                f"{logs[name] or '(empty)'}"
            )
    with allure.step("the pod without a GPU request sees no GPU device and nvidia-smi lists none"):
        devices, listed = gpus_seen(logs["no-gpu"])
        assert not devices and not listed, (
            "a pod that requested no nvidia.com/gpu can reach GPUs "
            f"(devices {devices or 'none'}, nvidia-smi: {listed or 'none'}): the node's container runtime "
            "gives GPUs to pods the device plugin did not allocate them to (e.g. NVIDIA_VISIBLE_DEVICES "
            f"honoured for unprivileged pods); its log:\n{logs['no-gpu']}"
        )
    with allure.step("the one-GPU pod sees exactly one GPU device and nvidia-smi lists exactly one GPU"):
        devices, listed = gpus_seen(logs["one-gpu"])
        assert len(devices) == 1 and len(listed) == 1, (
            f"a pod that requested 1 nvidia.com/gpu sees {len(devices)} GPU device(s) {devices} and "
            f"nvidia-smi lists {len(listed)}: {listed}; its log:\n{logs['one-gpu']}"
        )

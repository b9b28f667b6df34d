"""Real NVIDIA GPUs: a GPU Job queued through Kueue runs on a device-plugin GPU and sees it.

Everything the fake_gpu suite proves stops at the API: a kwok node or a patched kind worker has
``nvidia.com/gpu`` in its status but no device behind it. This smoke test runs only where some Ready
node's GPUs come from a real device plugin (``kbc.gpu.real_gpu_nodes``: every GPU node the harness
made is excluded) and proves the last step: a one-GPU Job admitted by Kueue from a LocalQueue whose
ClusterQueue quotes ``nvidia.com/gpu`` runs the pinned CUDA base image (``charts-lock.yaml``
``testImages.cuda``), ``nvidia-smi -L`` lists the GPU the device plugin handed to it, and the Job
completes. Elsewhere it skips and says which fake GPU nodes it excluded.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import allure
import pytest
from lightkube import Client
from lightkube.resources.core_v1 import Pod

from kbc.gpu import GPU, HOSTNAME_LABEL, RealGpuNodes, pod_spec, real_gpu_nodes
from kbc.kube import condition, is_true, load, wait_for_list, wait_for_object, wait_job_complete
from kbc.kueue import QUEUE_LABEL, Queues, Workload, make_queues, wait_admitted, workload_of
from kbc.lockfile import ChartsLock

pytestmark = [pytest.mark.nvidia_gpu, pytest.mark.kueue, allure.epic("Kueue"), allure.feature("nvidia_gpu")]

# nvidia-smi -L prints one line per visible GPU: "GPU 0: <name> (UUID: GPU-...)".
FIRST_GPU = "GPU 0:"
# An image pull from a public registry dominates; a CUDA base image is ~100 MB.
RUN_TIMEOUT_S = 600


@pytest.fixture
def real_gpus(kube: Client) -> RealGpuNodes:
    """The nodes whose GPUs come from a device plugin; skips (saying what it excluded) when there are none."""
    found = real_gpu_nodes(kube)
    if not found:
        pytest.skip(found.why_none())
    return found


@pytest.fixture
def gpu_queue(kube: Client, real_gpus: RealGpuNodes, namespace: str, unique: str) -> Iterator[Queues]:
    """A ClusterQueue quoting one GPU (and a little CPU) for this test's namespace."""
    yield from make_queues(kube, namespace, unique, {"cpu": "1", GPU: "1"})


def smoke_job(name: str, queue: str, image: str, nodes: list[str]) -> Any:
    spec = pod_spec(gpus=1, cpu="100m", image=image, name="cuda")
    spec["containers"][0]["command"] = ["nvidia-smi", "-L"]
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
    return load(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "labels": {QUEUE_LABEL: queue}},
            "spec": {"completions": 1, "parallelism": 1, "backoffLimit": 0, "template": {"spec": spec}},
        }
    )


@allure.story("a one-GPU Job queued through Kueue runs nvidia-smi on a device-plugin GPU and completes")
def test_queued_gpu_job_sees_its_gpu(
    kube: Client, charts_lock: ChartsLock, real_gpus: RealGpuNodes, namespace: str, gpu_queue: Queues
) -> None:
    image = charts_lock.test_images["cuda"].ref
    with allure.step(
        f"submit a 1-GPU Job running `nvidia-smi -L` in {image} to LocalQueue {gpu_queue.local_queue}"
    ):
        created = kube.create(
            smoke_job("nvidia-smi", gpu_queue.local_queue, image, real_gpus.names), namespace=namespace
        )
        assert created.spec.suspend is True, "Kueue's webhook suspends a Job that names a LocalQueue"
    with allure.step("Kueue admits it within the ClusterQueue's GPU quota"):
        workload = workload_of(kube, created, namespace)
        wait_admitted(kube, workload.metadata.name, namespace, timeout=60)
    with allure.step("the Job completes (image pull included) and its Workload finishes Succeeded"):
        wait_job_complete(kube, "nvidia-smi", namespace, timeout=RUN_TIMEOUT_S)
        finished = wait_for_object(
            kube,
            Workload,
            workload.metadata.name,
            namespace=namespace,
            timeout=60,
            what=f"Workload {workload.metadata.name} to be Finished",
            until=lambda w: is_true(w, "Finished"),
        )
        assert (condition(finished, "Finished") or {}).get("reason") == "Succeeded", condition(
            finished, "Finished"
        )
    with allure.step(f"its pod ran on a real GPU node and its log lists {FIRST_GPU!r}"):
        (pod,) = wait_for_list(
            kube,
            Pod,
            namespace=namespace,
            labels={"job-name": "nvidia-smi"},
            until=lambda pods: len(pods) == 1,
            timeout=30,
            what="the Job's pod",
        )
        assert pod.spec.nodeName in real_gpus.names, (pod.spec.nodeName, real_gpus.names)
        log = "".join(kube.log(pod.metadata.name, namespace=namespace, container="cuda"))
        allure.attach(log, name="nvidia-smi -L", attachment_type=allure.attachment_type.TEXT)
        assert FIRST_GPU in log, (
            f"`nvidia-smi -L` on node {pod.spec.nodeName} should list the GPU the device plugin gave the pod "
            f"({FIRST_GPU!r}); its log was:\n{log or '(empty)'}"
        )

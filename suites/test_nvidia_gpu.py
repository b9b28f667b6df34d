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

import allure
import pytest

from kbc import timeouts
from kbc.gpu import RealGpuNodes, real_gpu_nodes
from kbc.jobs import job_pods, wait_job_complete
from kbc.kube import Kube, Obj, condition
from kbc.kueue import QueueFactory, Queues, wait_admitted, wait_finished, wait_workload_of
from kbc.lockfile import ChartsLock
from kbc.nodepools import GPU, HOSTNAME_LABEL, REAL_NODE_LABEL
from kbc.workloads import job

pytestmark = [pytest.mark.nvidia_gpu, pytest.mark.kueue, allure.epic("Kueue"), allure.feature("nvidia_gpu")]

# nvidia-smi -L prints one line per visible GPU: "GPU 0: <name> (UUID: GPU-...)".
FIRST_GPU = "GPU 0:"


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


def smoke_job(name: str, queue: str, image: str, nodes: list[str]) -> Obj:
    """A one-GPU Job running ``nvidia-smi -L`` in *image*, only on *nodes*."""
    manifest = job(name, gpus=1, cpu="100m", queue=queue)
    spec = manifest["spec"]["template"]["spec"]
    spec["containers"][0].update(name="cuda", image=image, command=["nvidia-smi", "-L"])
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
    kube: Kube, charts_lock: ChartsLock, real_gpus: RealGpuNodes, namespace: str, gpu_queue: Queues
) -> None:
    image = charts_lock.test_images["cuda"].ref
    with allure.step(
        f"submit a 1-GPU Job running `nvidia-smi -L` in {image} to LocalQueue {gpu_queue.local_queue}"
    ):
        created = kube.create(
            smoke_job("nvidia-smi", gpu_queue.local_queue, image, real_gpus.names), namespace=namespace
        )
        assert created["spec"]["suspend"] is True, "Kueue's webhook suspends a Job that names a LocalQueue"
    with allure.step("Kueue admits it within the ClusterQueue's GPU quota"):
        workload = wait_workload_of(kube, created, namespace)["metadata"]["name"]
        wait_admitted(kube, workload, namespace)
    with allure.step("the Job completes (image pull included) and its Workload finishes Succeeded"):
        wait_job_complete(kube, "nvidia-smi", namespace, timeout=timeouts.IMAGE_PULL)
        finished = wait_finished(kube, workload, namespace)
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

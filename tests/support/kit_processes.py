"""Pods for the tests of the kit's kubelets that run containers (scripted and process
mode, zygotes): a task pod with a sidecar, the waits on its log and its end, and the
check that both Kubernetes clients read the statuses written."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from tests.support.event_factory import task_pod
from tests.support.processes import alive

if TYPE_CHECKING:
    from collections.abc import Callable

    from k8s_workloads.testing import FakeCluster
    from k8s_workloads.testing.process_kubelet import ProcessKubelet as _KubeletBase

NS = "airflow"


def task_body(name: str) -> dict[str, Any]:
    """The library's task pod named ``name``, with a sidecar, as a create request (it says
    ``restartPolicy: Never``, as every pod the library builds: it ends)."""
    body = task_pod()
    body["metadata"]["name"] = name
    body["metadata"].pop("resourceVersion")
    body["spec"]["containers"].append({"name": "sidecar", "image": "busybox:1.36"})
    return body


def pod_with(*containers: dict[str, Any], name: str = "p", **spec: Any) -> dict[str, Any]:
    """A task pod whose containers are ``containers``, with ``spec`` fields set."""
    body = task_body(name)
    body["spec"]["containers"] = list(containers)
    body["spec"].update(spec)
    return body


def wait_for(check: Callable[[], Any], *, seconds: float = 60.0) -> Any:
    """What ``check`` answers once it is truthy; fails after ``seconds`` (generous: a
    loaded 2-core machine once took over 20 s to end a forked pod past its deadline)."""
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def ended(cluster: FakeCluster, name: str = "p") -> Callable[[], dict[str, Any] | None]:
    """A check: the pod once it is ``Succeeded`` or ``Failed``, else None."""

    def check() -> dict[str, Any] | None:
        pod = cluster.pod(NS, name)
        phase = None if pod is None else pod["status"].get("phase")
        return pod if phase in {"Succeeded", "Failed"} else None

    return check


def logged(cluster: FakeCluster, text: str, name: str = "p") -> Callable[[], bool]:
    """A check: ``text`` is in the log of the pod's container ``base``."""
    return lambda: text in cluster.pod_log(NS, name, "base")


def delete_running_pod(cluster: FakeCluster, kubelet: _KubeletBase) -> float:
    """Delete the one running pod ``p`` (once it logged "ready") and wait until it is
    gone: the seconds that took, its process checked ended."""
    wait_for(logged(cluster, "ready"))
    (pid,) = kubelet.pids()
    began = time.monotonic()
    cluster.delete_pod(NS, "p")
    wait_for(lambda: cluster.pod(NS, "p") is None)
    took = time.monotonic() - began
    assert not alive(pid)
    return took


def deserialize_in_both_clients(pod: dict[str, Any]) -> None:
    """The pod as both clients' ``V1Pod`` models take it (each raises on a missing
    required field: ``image``, ``imageID``, ``ready``, ``restartCount``, ``exitCode``)."""
    import kubernetes.client  # noqa: PLC0415 - the dev extra
    import kubernetes_asyncio.client  # noqa: PLC0415

    model = kubernetes.client.ApiClient()._ApiClient__deserialize(pod, "V1Pod")  # type: ignore[attr-defined]
    assert model.metadata.name == pod["metadata"]["name"]

    async def deserialize() -> Any:
        async with kubernetes_asyncio.client.ApiClient() as client:
            return client._ApiClient__deserialize(pod, "V1Pod")

    assert asyncio.run(deserialize()).status.phase == pod["status"]["phase"]

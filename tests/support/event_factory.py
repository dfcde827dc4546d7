"""Watch events for tests: real pods from our builders, with the status a cluster sets."""

from __future__ import annotations

import copy
from typing import Any

from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.pods import construct_callback_pod, construct_task_pod

CALLBACK_ID = "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"
VERSION = "3.3.2"
TASK_KEY = TaskInstanceKey("etl", "load", "manual__2026", 2, 3)
"""The workload of :func:`task_pod`."""
CALLBACK_KEY = CallbackKey(CALLBACK_ID)
"""The workload of :func:`callback_pod`."""


def _as_stored(
    pod: dict[str, Any],
    resource_version: str,
    status: dict[str, Any] | None,
    metadata: dict[str, Any],
) -> dict[str, Any]:
    pod["metadata"]["resourceVersion"] = resource_version
    pod["metadata"].update(metadata)
    if status is not None:
        pod["status"] = copy.deepcopy(status)
    return pod


def task_pod(status: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
    pod = construct_task_pod(
        namespace="airflow",
        scheduler_job_id="7",
        pod_id="etl-load-abcd1234",
        dag_id=TASK_KEY.dag_id,
        task_id=TASK_KEY.task_id,
        kube_image="airflow:3.3.2",
        try_number=TASK_KEY.try_number,
        args=["python", "-m", "x"],
        run_id=TASK_KEY.run_id,
        map_index=TASK_KEY.map_index,
        airflow_version=VERSION,
    )
    return _as_stored(pod, "100", status, metadata)


def callback_pod(status: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
    pod = construct_callback_pod(
        callback_id=CALLBACK_KEY.id,
        namespace="airflow",
        scheduler_job_id="7",
        kube_image="airflow:3.3.2",
        args=["python", "-m", "x"],
        dag_id="etl",
        run_id="manual__2026",
        airflow_version=VERSION,
        pod_id="callback-019e9fc6-abcd1234",
    )
    return _as_stored(pod, "200", status, metadata)


def event(kind: str, pod: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "object": pod}


def waiting(name: str, reason: str, message: str | None = None) -> dict[str, Any]:
    state: dict[str, Any] = {"reason": reason}
    if message is not None:
        state["message"] = message
    return {"name": name, "state": {"waiting": state}}


def terminated(name: str, exit_code: int, reason: str | None = None) -> dict[str, Any]:
    state: dict[str, Any] = {"exitCode": exit_code}
    if reason is not None:
        state["reason"] = reason
    return {"name": name, "state": {"terminated": state}}


def kubelet_status(phase: str, state: dict[str, Any] | None = None) -> dict[str, Any]:
    """A pod status as a kubelet writes it, its ``base`` container in ``state`` (with every
    field the kubernetes client's model requires)."""
    status: dict[str, Any] = {"phase": phase}
    if state is not None:
        status["containerStatuses"] = [
            {
                "name": "base",
                "image": "apache/airflow:3.3.2",
                "imageID": "",
                "ready": phase == "Running",
                "restartCount": 0,
                "state": state,
            }
        ]
    return status


RUNNING = kubelet_status("Running", {"running": {}})
SUCCEEDED = kubelet_status("Succeeded", {"terminated": {"exitCode": 0, "reason": "Completed"}})
FAILED = kubelet_status("Failed", {"terminated": {"exitCode": 1, "reason": "Error"}})
OOM_KILLED = kubelet_status("Failed", {"terminated": {"exitCode": 137, "reason": "OOMKilled"}})
PULL_FAILED = kubelet_status(
    "Pending", {"waiting": {"reason": "ErrImagePull", "message": "rpc error: code = NotFound"}}
)
EVICTED: dict[str, Any] = {
    "phase": "Failed",
    "reason": "Evicted",
    "message": "The node was low on resource: memory.",
}

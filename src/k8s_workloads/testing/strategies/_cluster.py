"""Strategies for workload pods as a cluster reports them, and the watch events that carry them.

A pod here is what this library builds for a drawn key (:func:`~k8s_workloads.pods.
construct_pod`, which builds a task's, a callback's or a generic workload's: its
``restartPolicy`` is ``Never``), stored as the API server stores it (``uid``,
``resourceVersion``, ``creationTimestamp``, the defaults of
:mod:`k8s_workloads.testing._defaults`), with the status a kubelet writes at one point of
the pod's life: its :class:`PodFate`. Every status has what
the kubernetes clients' models require (a container status's ``name``, ``image``,
``imageID``, ``ready``, ``restartCount``), so a pod drawn here deserializes into ``V1Pod``
and is read by any executor the way a real cluster's pod would be.
"""

from __future__ import annotations

import datetime
import enum
import hashlib
import random
from typing import TYPE_CHECKING

import attrs
from hypothesis import strategies as st

from k8s_workloads.keys import GenericKey, WorkloadKey
from k8s_workloads.pods.build import construct_pod
from k8s_workloads.states import KubernetesJob
from k8s_workloads.testing._defaults import default_pod
from k8s_workloads.testing.strategies._ids import workload_keys
from k8s_workloads.testing.strategies._manifests import namespaces

if TYPE_CHECKING:
    from k8s_workloads.pods.manifest import Manifest

__all__ = ["ClusterEvent", "ClusterPod", "PodFate", "cluster_events", "cluster_pods"]


class PodFate(enum.Enum):
    """Where a pod is in its life when the cluster reports it."""

    UNSCHEDULED = "unscheduled"
    """Pending: no node fits (``PodScheduled`` False, reason ``Unschedulable``)."""
    CREATING = "creating"
    """Pending on its node: the container is being created (waiting ``ContainerCreating``)."""
    IMAGE_PULL_FAILED = "image_pull_failed"
    """Pending on its node: the image cannot be pulled (waiting ``ErrImagePull``)."""
    IMAGE_PULL_BACK_OFF = "image_pull_back_off"
    """Pending on its node, between pull attempts (waiting ``ImagePullBackOff``)."""
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    """Every container ended with exit code 0 (reason ``Completed``)."""
    FAILED = "failed"
    """A container ended with a non-zero exit code (reason ``Error``)."""
    OOM_KILLED = "oom_killed"
    """A container was killed for its memory (exit code 137, reason ``OOMKilled``)."""
    EVICTED = "evicted"
    """The kubelet evicted the pod (phase ``Failed``, reason ``Evicted``)."""

    @property
    def terminal(self) -> bool:
        """Whether the pod's phase is ``Succeeded`` or ``Failed``: it will not run again."""
        return self in _TERMINAL


_TERMINAL = frozenset({PodFate.SUCCEEDED, PodFate.FAILED, PodFate.OOM_KILLED, PodFate.EVICTED})
_SCHEDULED = frozenset(PodFate) - {PodFate.UNSCHEDULED}
_PHASES = {
    PodFate.UNSCHEDULED: "Pending",
    PodFate.CREATING: "Pending",
    PodFate.IMAGE_PULL_FAILED: "Pending",
    PodFate.IMAGE_PULL_BACK_OFF: "Pending",
    PodFate.RUNNING: "Running",
    PodFate.SUCCEEDED: "Succeeded",
    PodFate.FAILED: "Failed",
    PodFate.OOM_KILLED: "Failed",
    PodFate.EVICTED: "Failed",
}


@attrs.frozen
class ClusterPod:
    """A workload's pod as the API server returns it, and what was drawn to make it."""

    key: WorkloadKey
    fate: PodFate
    manifest: Manifest
    """The pod (a dict in the API's camelCase); a new one per draw, safe to change."""


@attrs.frozen
class ClusterEvent:
    """A watch event about a :class:`ClusterPod`."""

    type: str
    """``ADDED``, ``MODIFIED`` or ``DELETED`` (a graceful deletion of a finished pod)."""
    pod: ClusterPod

    @property
    def event(self) -> Manifest:
        """The event as a watch stream's line decodes: ``{"type": ..., "object": pod}``."""
        return {"type": self.type, "object": self.pod.manifest}


_JOB_IDS: st.SearchStrategy[str | int] = st.one_of(
    st.integers(0, 10**9), st.from_regex(r"[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?", fullmatch=True)
)
_EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
_IMAGES = ["apache/airflow:3.3.2", "apache/airflow:3.3.2-python3.12", "registry.example.com/af:1"]
_ARGS = ["python", "-m", "airflow.sdk.execution_time.execute_workload", "--json-string", "{}"]


def _stamp(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _build(key: WorkloadKey, namespace: str, job_id: str | int, image: str, seed: int) -> Manifest:
    args = ["python", "-m", "my_jobs.run", key.id] if isinstance(key, GenericKey) else _ARGS
    return construct_pod(
        KubernetesJob(key, args),
        namespace=namespace,
        scheduler_job_id=job_id,
        airflow_version="3.3.2",
        kube_image=image,
        rng=random.Random(seed),  # noqa: S311 - a pod name's suffix, not a secret
    )


def _condition(kind: str, *, true: bool, at: str, reason: str | None = None) -> Manifest:
    condition: Manifest = {"type": kind, "status": "True" if true else "False"}
    condition["lastProbeTime"] = None
    condition["lastTransitionTime"] = at
    if reason is not None:
        condition["reason"] = reason
    return condition


def _container_state(fate: PodFate, exit_code: int, started: str, finished: str) -> Manifest:
    if fate is PodFate.CREATING:
        return {"waiting": {"reason": "ContainerCreating"}}
    if fate is PodFate.IMAGE_PULL_FAILED:
        return {
            "waiting": {
                "reason": "ErrImagePull",
                "message": "rpc error: code = NotFound desc = failed to pull and unpack image",
            }
        }
    if fate is PodFate.IMAGE_PULL_BACK_OFF:
        return {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}
    if fate is PodFate.RUNNING:
        return {"running": {"startedAt": started}}
    reason = {PodFate.SUCCEEDED: "Completed", PodFate.OOM_KILLED: "OOMKilled"}.get(fate, "Error")
    code = {PodFate.SUCCEEDED: 0, PodFate.OOM_KILLED: 137}.get(fate, exit_code)
    return {
        "terminated": {
            "exitCode": code,
            "reason": reason,
            "startedAt": started,
            "finishedAt": finished,
            "containerID": "",
        }
    }


def _status(pod: Manifest, fate: PodFate, *, exit_code: int, restarts: int, age: int) -> Manifest:
    """The status a kubelet (or, unscheduled, the scheduler) writes for ``fate``."""
    created = _EPOCH
    started = _stamp(created + datetime.timedelta(seconds=1))
    finished = _stamp(created + datetime.timedelta(seconds=1 + age))
    if fate is PodFate.UNSCHEDULED:
        return {
            "phase": "Pending",
            "conditions": [
                _condition("PodScheduled", true=False, at=started, reason="Unschedulable")
            ],
            "qosClass": "BestEffort",
        }
    uid = pod["metadata"]["uid"]
    running = fate is PodFate.RUNNING
    waiting = fate in {PodFate.CREATING, PodFate.IMAGE_PULL_FAILED, PodFate.IMAGE_PULL_BACK_OFF}
    ready_at = finished if fate.terminal else started
    not_ready = None if running else ("PodCompleted" if fate.terminal else "ContainersNotReady")
    status: Manifest = {
        "phase": _PHASES[fate],
        "hostIP": "10.0.0.1",
        "podIP": f"10.1.{int(_digest(uid)[:2], 16)}.{int(_digest(uid)[2:4], 16)}",
        "startTime": started,
        "qosClass": "BestEffort",
        "conditions": [
            _condition("PodScheduled", true=True, at=started),
            _condition("Initialized", true=True, at=started),
            *(
                _condition(kind, true=running, at=ready_at, reason=not_ready)
                for kind in ("ContainersReady", "Ready")
            ),
        ],
    }
    if fate is PodFate.EVICTED:
        # The kubelet's eviction manager: phase, reason and message; the containers it
        # killed are reported terminated by the status manager.
        status["reason"] = "Evicted"
        status["message"] = "The node was low on resource: memory. Threshold quantity: 100Mi."
    statuses = []
    for container in pod["spec"]["containers"]:
        image = container.get("image") or _IMAGES[0]
        entry: Manifest = {
            "name": container["name"],
            "image": image,
            "imageID": ""
            if waiting
            else f"docker.io/{image.split(':')[0]}@sha256:{_digest(image)}",
            "ready": running,
            "restartCount": restarts,
            "started": running,
            "state": _container_state(fate, exit_code, started, finished),
        }
        if not waiting:
            entry["containerID"] = "containerd://" + _digest(f"{uid}/{container['name']}")
            if "terminated" in entry["state"]:
                entry["state"]["terminated"]["containerID"] = entry["containerID"]
        statuses.append(entry)
    status["containerStatuses"] = statuses
    return status


@st.composite
def cluster_pods(
    draw: st.DrawFn,
    keys: st.SearchStrategy[WorkloadKey] | None = None,
    fates: st.SearchStrategy[PodFate] | None = None,
) -> ClusterPod:
    """A workload's pod, built by this library for a drawn key, at a drawn point of its life.

    ``keys`` defaults to :func:`workload_keys` (tasks and callbacks; :func:`generic_keys`
    for generic workloads' pods, built with no Airflow version), ``fates`` to every
    :class:`PodFate`. The namespace, the owning scheduler job, the image, the exit code of a
    failed container, its restart count and its run time vary too.
    """
    key = draw(keys if keys is not None else workload_keys())
    fate = draw(fates if fates is not None else st.sampled_from(PodFate))
    job_id = draw(_JOB_IDS)
    pod = _build(
        key,
        draw(namespaces),
        job_id,
        draw(st.sampled_from(_IMAGES)),
        draw(st.integers(0, 2**32)),
    )
    default_pod(pod)  # as the API server stores it
    metadata = pod["metadata"]
    metadata["uid"] = str(draw(st.uuids()))
    metadata["resourceVersion"] = str(draw(st.integers(1, 10**9)))
    metadata["creationTimestamp"] = _stamp(_EPOCH)
    if fate in _SCHEDULED:
        pod["spec"]["nodeName"] = draw(st.sampled_from(["node-a", "node-b", "kind-worker"]))
    pod["status"] = _status(
        pod,
        fate,
        exit_code=draw(st.integers(1, 255)),
        restarts=draw(st.integers(0, 3)),
        age=draw(st.integers(1, 86_400)),
    )
    return ClusterPod(key=key, fate=fate, manifest=pod)


@st.composite
def cluster_events(
    draw: st.DrawFn,
    keys: st.SearchStrategy[WorkloadKey] | None = None,
    fates: st.SearchStrategy[PodFate] | None = None,
) -> ClusterEvent:
    """A watch event about a :func:`cluster_pods` pod, as a real API server sends it.

    ``ADDED`` or ``MODIFIED`` at any point of the pod's life; ``DELETED`` only for a pod
    that has finished (an executor deleting what it has read), carrying the
    ``deletionTimestamp`` and ``deletionGracePeriodSeconds`` the API server set.
    """
    pod = draw(cluster_pods(keys, fates))
    kinds = ["ADDED", "MODIFIED", "DELETED"] if pod.fate.terminal else ["ADDED", "MODIFIED"]
    kind = draw(st.sampled_from(kinds))
    if kind == "DELETED":
        metadata = pod.manifest["metadata"]
        metadata["deletionTimestamp"] = _stamp(_EPOCH + datetime.timedelta(days=2))
        metadata["deletionGracePeriodSeconds"] = 0
    return ClusterEvent(type=kind, pod=pod)

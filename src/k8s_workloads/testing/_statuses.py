"""Pod statuses as the kubelet writes them, for the kit's kubelets (scripted and process).

One home for the shapes both kubelets write, so that what a test sees in scripted mode is
what a real process produces. Each builder is pure: the pod, the container states and the
timestamps go in, a ``status`` dict comes out. The shapes follow the kubelet's status
manager (``pkg/kubelet/status/generate.go`` for the pod conditions,
``pkg/kubelet/kubelet_pods.go`` ``convertToAPIContainerStatuses`` for the containers):

* every container status has ``name``, ``image``, ``imageID``, ``ready``,
  ``restartCount``, ``started``, ``state`` and ``lastState`` (the run before, once the
  container restarted: :mod:`k8s_workloads.testing._restarts`) — the fields both
  ``kubernetes`` clients' ``V1ContainerStatus`` models require (a status without
  ``image`` made the provider's watcher raise ``ValueError: Invalid value for image``);
  ``containerID`` once the runtime created the container (not while its image fails to
  pull, then ``imageID`` is ``""``; a new one for each restart);
* the pod conditions ``PodReadyToStartContainers``, ``Initialized``, ``Ready``,
  ``ContainersReady`` and ``PodScheduled``: ``Ready`` False with reason
  ``ContainersNotReady`` (and the unready containers named) while a container is not
  ready, ``PodCompleted`` once the pod is terminal; ``DisruptionTarget`` for an eviction;
* ``hostIP``/``hostIPs``, ``podIP``/``podIPs``, ``startTime`` and ``qosClass``.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from k8s_workloads.pods.manifest import Manifest

__all__ = [
    "HOST_IP",
    "container_id",
    "containers",
    "disruption_target",
    "pod_status",
    "running",
    "terminated",
    "waiting",
]

HOST_IP = "10.0.0.1"
"""The node's address in every status the kit's kubelets write."""

_TERMINAL = frozenset({"Succeeded", "Failed"})


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def container_id(uid: str, name: str, attempt: int = 0) -> str:
    """The runtime's id of the pod's container ``name`` (stable per pod uid); each restart
    (``attempt``, the ``restartCount`` it runs under) is a new container, with a new id."""
    return "containerd://" + _digest(f"{uid}/{name}" + (f"/{attempt}" if attempt else ""))


def containers(pod: Manifest, key: str = "containers") -> list[Manifest]:
    """The pod spec's ``containers`` (or ``initContainers``) that are objects."""
    spec = pod.get("spec")
    found = spec.get(key) if isinstance(spec, dict) else None
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []


def _state(kind: str, fields: Manifest, message: str | None) -> Manifest:
    # A container state of ``kind``: its fields, and ``message`` unless None.
    if message is not None:
        fields["message"] = message
    return {kind: fields}


def running(started: str) -> Manifest:
    """A ``running`` container state."""
    return {"running": {"startedAt": started}}


def waiting(reason: str, message: str | None = None) -> Manifest:
    """A ``waiting`` container state (``ContainerCreating``, ``ErrImagePull``, ...)."""
    return _state("waiting", {"reason": reason}, message)


def terminated(
    uid: str,
    name: str,
    *,
    exit_code: int,
    started: str,
    finished: str,
    reason: str | None = None,
    message: str | None = None,
    attempt: int = 0,
) -> Manifest:
    """A ``terminated`` container state; ``reason`` defaults as the runtime reports it:
    ``Completed`` for exit code 0, ``Error`` otherwise; ``attempt``: the container's
    ``restartCount`` in that run."""
    state: Manifest = {
        "exitCode": exit_code,
        "reason": reason or ("Completed" if exit_code == 0 else "Error"),
        "startedAt": started,
        "finishedAt": finished,
        "containerID": container_id(uid, name, attempt),
    }
    return _state("terminated", state, message or None)  # an empty message is left out


def _container_status(
    container: Manifest,
    uid: str,
    state: Manifest,
    restarts: Mapping[str, tuple[int, Manifest]],
) -> Manifest:
    name = str(container.get("name", ""))
    count, last = restarts.get(name, (0, {}))
    image = str(container.get("image", ""))
    pulled = "waiting" not in state or state["waiting"].get("reason") not in _PULL_FAILURES
    status: Manifest = {
        "name": name,
        "image": image,
        "imageID": f"docker-pullable://{image}@sha256:{_digest(image)}" if pulled else "",
        "ready": "running" in state,
        "restartCount": count,
        "started": "running" in state,
        "state": state,
        "lastState": last,
    }
    if "waiting" not in state:  # the runtime made the container
        status["containerID"] = container_id(uid, name, count)
    return status


_PULL_FAILURES = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName"})


def _condition(kind: str, *, true: bool, at: str, reason: str | None = None) -> Manifest:
    condition: Manifest = {
        "type": kind,
        "status": "True" if true else "False",
        "lastProbeTime": None,
        "lastTransitionTime": at,
    }
    if reason is not None:
        condition["reason"] = reason
    return condition


def _conditions(
    phase: str,
    unready: list[str],
    *,
    started: str,
    at: str,
    disruption: Manifest | None,
    initialized: bool,
) -> list[Manifest]:
    terminal = phase in _TERMINAL
    ready = not unready and not terminal
    why = "PodCompleted" if terminal else (None if ready else "ContainersNotReady")
    found = [
        _condition("PodReadyToStartContainers", true=not terminal, at=started if ready else at),
        _condition(
            "Initialized",
            true=initialized,
            at=started,
            reason=None if initialized else "ContainersNotInitialized",
        ),
        _condition("Ready", true=ready, at=at, reason=why),
        _condition("ContainersReady", true=ready, at=at, reason=why),
        _condition("PodScheduled", true=True, at=started),
    ]
    if why == "ContainersNotReady":
        message = f"containers with unready status: [{' '.join(unready)}]"
        found[2]["message"] = found[3]["message"] = message
    if disruption is not None:
        found.append(disruption)
    return found


def pod_status(
    pod: Manifest,
    uid: str,
    *,
    phase: str,
    states: Sequence[Manifest],
    started: str,
    at: str,
    pod_ip: str,
    reason: str | None = None,
    message: str | None = None,
    disruption: Manifest | None = None,
    init_states: Sequence[Manifest] | None = None,
    restarts: Mapping[str, tuple[int, Manifest]] | None = None,
) -> Manifest:
    """The pod's whole ``status``: ``states`` holds one container state per container of
    the spec, in order; ``init_states`` likewise for the init containers (None: they ran
    to completion at ``started``).

    ``disruption``: a ``DisruptionTarget`` condition to add (an eviction); ``restarts``:
    by container name, its ``restartCount`` and ``lastState`` (a ``terminated`` state:
    the run before this one), for a container that restarted (the others: 0, ``{}``)."""
    restarts = restarts or {}
    statuses = [
        _container_status(container, uid, state, restarts)
        for container, state in zip(containers(pod), states, strict=True)
    ]
    inits = containers(pod, "initContainers")
    if init_states is None:
        init_states = [
            terminated(
                uid, str(container.get("name", "")), exit_code=0, started=started, finished=started
            )
            for container in inits
        ]
    init_statuses = []
    for container, state in zip(inits, init_states, strict=True):
        entry = _container_status(container, uid, state, restarts)
        # An init container that completed counts as ready.
        entry["ready"] = state.get("terminated", {}).get("exitCode") == 0
        init_statuses.append(entry)
    initialized = all(entry["ready"] for entry in init_statuses)
    unready = [status["name"] for status in statuses if not status["ready"]]
    status: Manifest = {
        "phase": phase,
        "conditions": _conditions(
            phase,
            unready,
            started=started,
            at=at,
            disruption=disruption,
            initialized=initialized,
        ),
        "hostIP": HOST_IP,
        "hostIPs": [{"ip": HOST_IP}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": started,
        "qosClass": (pod.get("status") or {}).get("qosClass", "BestEffort"),
        "initContainerStatuses": init_statuses,
        "containerStatuses": statuses,
    }
    if reason is not None:
        status["reason"] = reason
    if message is not None:
        status["message"] = message
    return status


def disruption_target(reason: str, message: str, at: str) -> Manifest:
    """The ``DisruptionTarget`` condition a kubelet adds when it evicts the pod."""
    condition = _condition("DisruptionTarget", true=True, at=at, reason=reason)
    condition["message"] = message
    return condition

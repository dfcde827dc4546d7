"""The kubelet's side of a simulated pod: the ``status`` it writes for each step of the
pod's script (phase, reason, conditions, container states), as a real kubelet writes it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from k8s_workloads.pods.workload import BASE_CONTAINER_NAME
from k8s_workloads.sim.spec import ContainerSpec

if TYPE_CHECKING:
    from collections.abc import Callable

    from k8s_workloads.sim._state import PodRun
    from k8s_workloads.sim.spec import Step

__all__ = ["INIT_CONTAINER_NAME", "container_status", "main_spec", "pod_status"]

INIT_CONTAINER_NAME = "init"


def _compact(values: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


def pod_status(
    run: PodRun, step: Step, phase: str, *, t: int, timestamp: Callable[[int], str], image: str
) -> dict[str, Any]:
    """The pod's ``status`` at tick ``t`` after ``step`` (``run`` keeps when it became
    ready); ``timestamp`` writes a tick as the API server writes a time."""
    stamp = timestamp(t)
    status: dict[str, Any] = {"phase": phase, "qosClass": "BestEffort"}
    reason, message = step.reason, step.message
    if step.evicted:
        reason = reason or "Evicted"
        message = message or "The node was low on resource: memory."
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    ready = phase == "Running" and not step.deleted
    if ready != run.ready:
        run.ready, run.ready_since = ready, t
    since = timestamp(run.ready_since or run.created)
    conditions: list[dict[str, Any]] = [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp},
        {"type": "Initialized", "status": "True", "lastTransitionTime": since},
        {"type": "ContainersReady", "status": str(ready), "lastTransitionTime": since},
        {"type": "Ready", "status": str(ready), "lastTransitionTime": since},
    ]
    if step.evicted:
        conditions.append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "TerminationByKubelet",
                "message": message,
                "lastTransitionTime": stamp,
            }
        )
    status["conditions"] = conditions
    if run.started is not None:
        status["startTime"] = timestamp(run.started)
    main = container_status(BASE_CONTAINER_NAME, image, main_spec(step, phase), stamp)
    if main is not None:
        status["containerStatuses"] = [main]
    init = container_status(INIT_CONTAINER_NAME, image, step.init_container, stamp)
    if init is not None:
        status["initContainerStatuses"] = [init]
    return status


def main_spec(step: Step, phase: str) -> ContainerSpec | None:
    """The main container's state: the step's, or what the phase implies."""
    if step.container != "default":
        return step.container
    if step.evicted:
        return ContainerSpec("terminated", "Error", None, 137)
    defaults = {
        "Pending": ContainerSpec("waiting", "ContainerCreating"),
        "Running": ContainerSpec("running"),
        "Succeeded": ContainerSpec("terminated", "Completed", None, 0),
        "Failed": ContainerSpec("terminated", "Error", None, 1),
    }
    return defaults.get(phase)


def container_status(
    name: str, image: str, spec: ContainerSpec | None, stamp: str
) -> dict[str, Any] | None:
    """One container's status (None: the step shows none), its times ``stamp``."""
    if spec is None:
        return None
    state: dict[str, Any]
    if spec.state == "waiting":
        state = {"waiting": _compact({"reason": spec.reason, "message": spec.message})}
    elif spec.state == "running":
        state = {"running": {"startedAt": stamp}}
    else:
        state = {
            "terminated": _compact(
                {
                    "exitCode": spec.exit_code if spec.exit_code is not None else 0,
                    "reason": spec.reason,
                    "message": spec.message,
                    "startedAt": stamp,
                    "finishedAt": stamp,
                }
            )
        }
    return {
        "name": name,
        "image": image,
        "imageID": "",
        "ready": spec.state == "running",
        "restartCount": 0,
        "started": spec.state == "running",
        "state": state,
    }

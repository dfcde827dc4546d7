"""A pod's status as the failure rules read it: typed, one shape for every reader.

The structs here hold what the rules of :mod:`k8s_workloads.failures` and
:mod:`k8s_workloads.events` read of a pod's ``status`` (phase, reason, message, the
containers' states, the conditions), each field with its API type. A watch line is
decoded straight into them (:mod:`k8s_workloads._watchjson`, the fast path); a manifest
that is any JSON-like mapping (a dict, a ``V1Pod`` made one) is read into them by
:func:`read_status`, which keeps a value of the wrong type out exactly as the readers of
the full decoding always did (a non-string reason reads as absent, a non-integer exit
code as none, a container that is not a mapping as an empty one). So each failure rule
is written once, over these types.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from k8s_workloads._json import as_int, as_list, as_map, as_str

__all__ = [
    "Condition",
    "ContainerState",
    "ContainerStatus",
    "PodStatus",
    "Terminated",
    "Waiting",
    "read_conditions",
    "read_status",
]


class Terminated(msgspec.Struct, gc=False):
    """``state.terminated`` of a container status (what failure details read)."""

    reason: str | None = None
    exitCode: int | None = None  # noqa: N815 - the API's field name
    message: str | None = None


class Waiting(msgspec.Struct, gc=False):
    """``state.waiting`` of a container status."""

    reason: str | None = None
    message: str | None = None


class ContainerState(msgspec.Struct, gc=False):
    """A container's ``state`` or ``lastState``; ``running`` is never read."""

    terminated: Terminated | None = None
    waiting: Waiting | None = None


class ContainerStatus(msgspec.Struct, gc=False):
    """One entry of ``initContainerStatuses``, ``containerStatuses`` or the ephemeral list."""

    name: str | None = None
    state: ContainerState | None = None
    lastState: ContainerState | None = None  # noqa: N815


class Condition(msgspec.Struct, gc=False):
    """One pod condition: classification reads ``DisruptionTarget``."""

    type: str | None = None
    status: str | None = None
    reason: str | None = None


class PodStatus(msgspec.Struct, gc=False):
    """The pod's ``status``, as far as resolution and failure details read it."""

    phase: str | None = None
    reason: str | None = None
    message: str | None = None
    initContainerStatuses: list[ContainerStatus] | None = None  # noqa: N815
    containerStatuses: list[ContainerStatus] | None = None  # noqa: N815
    ephemeralContainerStatuses: list[ContainerStatus] | None = None  # noqa: N815
    conditions: msgspec.Raw = msgspec.Raw()
    """The conditions' JSON, empty when left out: only failure classification reads them
    (:func:`decode_conditions`), so most events never decode them."""


def _state(value: object) -> ContainerState | None:
    if not isinstance(value, Mapping):
        return None
    terminated = value.get("terminated")
    waiting = value.get("waiting")
    return ContainerState(
        terminated=(
            Terminated(
                reason=as_str(terminated.get("reason")),
                exitCode=as_int(terminated.get("exitCode")),
                message=as_str(terminated.get("message")),
            )
            if isinstance(terminated, Mapping)
            else None
        ),
        waiting=(
            Waiting(reason=as_str(waiting.get("reason")), message=as_str(waiting.get("message")))
            if isinstance(waiting, Mapping)
            else None
        ),
    )


def _containers(value: object) -> list[ContainerStatus] | None:
    if not isinstance(value, list):
        return None
    statuses = []
    for container in value:
        entry = as_map(container)
        statuses.append(
            ContainerStatus(
                name=as_str(entry.get("name")),
                state=_state(entry.get("state")),
                lastState=_state(entry.get("lastState")),
            )
        )
    return statuses


def read_status(status: Mapping[str, Any]) -> PodStatus:
    """A manifest's ``status`` (any mapping) as the typed status the rules read.

    A field of the wrong type reads as absent; the conditions are left out (read them with
    :func:`read_conditions`)."""
    return PodStatus(
        phase=as_str(status.get("phase")),
        reason=as_str(status.get("reason")),
        message=as_str(status.get("message")),
        initContainerStatuses=_containers(status.get("initContainerStatuses")),
        containerStatuses=_containers(status.get("containerStatuses")),
        ephemeralContainerStatuses=_containers(status.get("ephemeralContainerStatuses")),
    )


def read_conditions(status: Mapping[str, Any]) -> list[Condition]:
    """A manifest's ``status.conditions`` as typed conditions (odd entries read empty)."""
    conditions = []
    for condition in as_list(status.get("conditions")):
        entry = as_map(condition)
        conditions.append(
            Condition(
                type=as_str(entry.get("type")),
                status=as_str(entry.get("status")),
                reason=as_str(entry.get("reason")),
            )
        )
    return conditions

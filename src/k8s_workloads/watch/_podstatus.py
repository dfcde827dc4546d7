"""A pod's status as the failure rules read it: typed, one shape for every reader.

The structs here hold what the rules of :mod:`k8s_workloads.watch.failures` and
:mod:`k8s_workloads.watch.events` read of a pod's ``status`` (phase, reason, message, the
containers' states, the conditions), each field with its API type. A watch line is
decoded straight into them (:mod:`k8s_workloads.watch.decoding`, the fast path); a manifest
that is any JSON-like mapping (a dict, a ``V1Pod`` made one) is read into them by
:func:`read_status`, which keeps a value of the wrong type out exactly as the readers of
the full decoding always did (a non-string reason reads as absent, a non-integer exit
code as none, a container that is not a mapping as an empty one). So each failure rule
is written once, over these types.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import msgspec

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


_T = TypeVar("_T")


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _state(value: object) -> ContainerState | None:
    # Inlined checks, not calls, and ``type(...) is dict`` before the (slow) ABC check:
    # the dict path reads every container of every event.
    if value is None or (type(value) is not dict and not isinstance(value, Mapping)):
        return None
    terminated = value.get("terminated")
    waiting = value.get("waiting")
    ended = None
    if terminated is not None and (type(terminated) is dict or isinstance(terminated, Mapping)):
        code = terminated.get("exitCode")
        ended = Terminated(
            _text(terminated.get("reason")),
            code if isinstance(code, int) and not isinstance(code, bool) else None,
            _text(terminated.get("message")),
        )
    if waiting is not None and (type(waiting) is dict or isinstance(waiting, Mapping)):
        return ContainerState(
            ended, Waiting(_text(waiting.get("reason")), _text(waiting.get("message")))
        )
    return None if ended is None else ContainerState(ended, None)


def _each(value: object, read: Callable[[Mapping[str, Any]], _T], odd: _T) -> list[_T] | None:
    # A list's entries read one by one (an entry that is no mapping reads as ``odd``);
    # None for anything but a list. ``type(...) is`` first: the ABC check is slow.
    if type(value) is not list:
        if not isinstance(value, list):
            return None
        value = list(value)
    return [
        read(entry) if type(entry) is dict or isinstance(entry, Mapping) else odd for entry in value
    ]


def _container(container: Mapping[str, Any]) -> ContainerStatus:
    return ContainerStatus(
        _text(container.get("name")),
        _state(container.get("state")),
        _state(container.get("lastState")),
    )


def _containers(value: object) -> list[ContainerStatus] | None:
    return _each(value, _container, _NO_CONTAINER)


_NO_CONTAINER = ContainerStatus()
"""What a container status that is not a mapping reads as (structs here are never changed)."""


def read_status(status: Mapping[str, Any]) -> PodStatus:
    """A manifest's ``status`` (any mapping) as the typed status the rules read.

    A field of the wrong type reads as absent; the conditions are left out (read them with
    :func:`read_conditions`)."""
    return PodStatus(
        phase=_text(status.get("phase")),
        reason=_text(status.get("reason")),
        message=_text(status.get("message")),
        initContainerStatuses=_containers(status.get("initContainerStatuses")),
        containerStatuses=_containers(status.get("containerStatuses")),
        ephemeralContainerStatuses=_containers(status.get("ephemeralContainerStatuses")),
    )


def read_conditions(status: Mapping[str, Any]) -> list[Condition]:
    """A manifest's ``status.conditions`` as typed conditions (odd entries read empty)."""
    return _each(status.get("conditions"), _condition, _NO_CONDITION) or []


def _condition(condition: Mapping[str, Any]) -> Condition:
    return Condition(
        _text(condition.get("type")), _text(condition.get("status")), _text(condition.get("reason"))
    )


_NO_CONDITION = Condition()

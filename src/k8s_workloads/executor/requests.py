"""The executor protocol's values: the requests the core hands out, its answers when
there is nothing to start, and the errors of driving it wrong.

A request is one API or database call, or one event to report; the executor performs it
and reports its completion to :class:`~k8s_workloads.executor.core.ExecutorCore`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import attrs

from k8s_workloads.decisions.actions import Decision, DeletePod, EmitEvent, PatchLabels

if TYPE_CHECKING:
    import datetime

    from k8s_workloads.decisions.adoption import AdoptionPlan
    from k8s_workloads.keys import WorkloadKey
    from k8s_workloads.pods.labels import PodSelector
    from k8s_workloads.pods.manifest import Manifest
    from k8s_workloads.states import WorkloadResult

__all__ = [
    "Adoption",
    "CreatePod",
    "DeleteSecret",
    "FailedRelabel",
    "Handled",
    "InvalidStateAnswer",
    "ListPods",
    "NothingToDo",
    "PodChanged",
    "ProtocolError",
    "ReadPod",
    "ReadStates",
    "Request",
    "Waiting",
    "WorkloadAlreadyRunning",
]


class ProtocolError(RuntimeError):
    """The core was driven out of order (an answer missing, or for another request)."""


class InvalidStateAnswer(TypeError):
    """A state given to :meth:`ExecutorCore.states_read` is not the key's kind of state."""


class WorkloadAlreadyRunning(ValueError):
    """:meth:`ExecutorCore.submit` was given a workload the core already runs."""


# --- requests -------------------------------------------------------------------------


def _pod_repr(pod: Mapping[str, Any]) -> str:
    metadata = pod.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return f"<pod {name}>"


@attrs.frozen
class CreatePod:
    """Create ``secret`` (if any), then ``pod`` in ``namespace``: the bodies
    ``create_namespaced_secret`` and ``create_namespaced_pod`` accept.

    The bodies may hold the workload's token, so ``repr`` shows only their names.
    ``resend``: the same pod sent again after a creation whose answer never came (or that
    never left): a Secret of that name already there is the one sent before.
    """

    key: WorkloadKey
    namespace: str
    pod: Manifest = attrs.field(repr=_pod_repr)
    secret: Manifest | None = attrs.field(
        default=None, repr=lambda s: "None" if s is None else "<secret>"
    )
    resend: bool = False

    @property
    def pod_name(self) -> str:
        name: str = self.pod["metadata"]["name"]
        return name


@attrs.frozen
class ReadPod:
    """Read the pod a creation that failed without a clear answer sent (``read_namespaced_pod``):
    answer with :meth:`ExecutorCore.pod_read`, with the pod or None (404)."""

    key: WorkloadKey
    namespace: str
    pod_name: str


@attrs.frozen
class DeleteSecret:
    """Delete the workload Secret of a pod created with a secure payload (404: fine)."""

    name: str
    namespace: str


@attrs.frozen
class ReadStates:
    """Read these workloads' states from Airflow (task instance states and
    ``Callback.state``), in one query; answer with :meth:`ExecutorCore.states_read`."""

    keys: tuple[WorkloadKey, ...]


@attrs.frozen
class ListPods:
    """List pods (``namespace`` None: every namespace) with this selector; answer with
    :meth:`ExecutorCore.pods_listed`, then watch from the list's resource version."""

    namespace: str | None
    selector: PodSelector


@attrs.frozen
class Handled:
    """What the core decided about one thing that happened (for logs and timelines)."""

    key: WorkloadKey
    cause: str
    """``result`` (a watch or re-list result), ``handling failed`` (handling_failed
    decided after a failed call), ``create error`` (the API server answered a creation
    with an error), ``create unsent`` (a creation never reached the API server: the job
    waits, creation pauses), ``create unknown`` (no answer came: the pod is read back),
    ``create confirmed`` (the read back found the pod: created), ``build error`` or
    ``stale`` (see :meth:`ExecutorCore.create_skipped`)."""
    decision: Decision
    result: WorkloadResult | None = None
    pod_name: str | None = None
    """The pod a creation cause is about (None for the others: ``result`` names theirs)."""


@attrs.frozen
class PodChanged:
    """A pod call the API server took (for logs): the pod of ``key`` ``created``,
    ``adopted`` (relabelled for this scheduler by an adoption) or ``deleted`` (a 404
    included: it is gone, as wanted). ``key`` is None for a pod whose workload the core
    does not know (a settled callback's leftover an adoption cleans up)."""

    change: str
    namespace: str
    pod_name: str
    key: WorkloadKey | None


@attrs.frozen
class FailedRelabel:
    """An adopted pod whose relabel the API server refused: a rival scheduler took it
    since the list (the guard's test failed, 422), or it is gone (404: a rival reported
    and deleted it, or someone else deleted it). Its workload is not taken over here,
    and not run again either. A transient failure is no refusal: the core tries the
    relabel again on the next pass (a refusal after it is checked once more as this
    scheduler's: that try may have been applied)."""

    key: WorkloadKey
    namespace: str
    pod_name: str
    error: BaseException


@attrs.frozen
class Adoption:
    """What a driver's ``adopt`` did: listed the adoption's pods, adopted them and
    performed the relabels (:meth:`~k8s_workloads.executor.ExecutorCore.adopt`)."""

    plan: AdoptionPlan
    rerun: tuple[WorkloadKey, ...]
    """Expected workloads to run again: no pod of theirs anywhere, nothing reported for
    them, not held here (tasks: for Airflow to reset; others: submit them again)."""
    failed_relabels: tuple[FailedRelabel, ...] = ()
    """Pods whose relabel was refused: named, neither adopted nor run again."""
    retrying: tuple[WorkloadKey, ...] = ()
    """Workloads whose relabel failed for a transient reason: tried again on the next
    passes (they have a pod: never to run again)."""


@attrs.frozen
class NothingToDo:
    """The pass is over: nothing more to do until ``until`` (None: until something
    happens — an event, a job, the next pass's retries)."""

    until: datetime.datetime | None = None


@attrs.frozen
class Waiting:
    """Requests are in flight and nothing more may start before one of them completes:
    report a completion, then ask :meth:`ExecutorCore.start_request` again."""

    in_flight: int
    until: datetime.datetime | None = None
    """Driven concurrently, something more may start then though nothing completes (a
    creation retried after its delay, creation resuming after a pause): ask again by then,
    with a ``now`` that has reached it. None: only a completion (or an event or a job fed
    meanwhile) changes anything."""


Request: TypeAlias = (
    CreatePod | DeletePod | DeleteSecret | PatchLabels | EmitEvent | ReadStates | ListPods | ReadPod
)
"""What the executor performs: one API or database call, or one event to report."""

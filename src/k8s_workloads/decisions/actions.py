"""Actions: what an executor performs, as values, and :class:`Decision`, the one result shape.

Every planner in the library (:func:`~k8s_workloads.decisions.results.decide`,
:func:`~k8s_workloads.decisions.results.handling_failed`,
:func:`~k8s_workloads.decisions.creation_errors.decide_create_error`,
:func:`~k8s_workloads.decisions.adoption.plan_revocation`, and
:func:`~k8s_workloads.decisions.adoption.plan_adoption` with its own record of what it adopted)
answers with ``actions``, every one of them a thing to perform, in order, and beside them
what the caller keeps: the new attempt bookkeeping, and, said apart from the actions in
``Decision.note``, what is *not* done:

* ``ignored`` (:class:`Ignore`): why the result needs nothing (more);
* ``look_up`` (:class:`LookUpState`): read this state from Airflow, then decide again;
* ``retry`` (:class:`RetryLater`): handle the same result again on a later pass.

So a loop that performs the actions never has to skip one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

import attrs

if TYPE_CHECKING:
    from collections.abc import Mapping

    from k8s_workloads.decisions.attempts import Attempts
    from k8s_workloads.keys import TaskInstanceKey, WorkloadKey
    from k8s_workloads.states import CallbackState, KubernetesJob, TaskInstanceState

__all__ = [
    "Action",
    "Decision",
    "DeletePod",
    "EmitEvent",
    "FreeSlot",
    "Ignore",
    "LookUpState",
    "PatchLabels",
    "RequeueJob",
    "RetryLater",
    "TrackRunning",
    "describe_action",
]


@attrs.frozen
class EmitEvent:
    """Report a workload state to the scheduler (``event_buffer[key] = state, info``)."""

    key: WorkloadKey
    state: TaskInstanceState | CallbackState
    info: str | None = None


@attrs.frozen
class DeletePod:
    """Delete the workload's pod (a 404 means it is gone already: fine)."""

    pod_name: str
    namespace: str


@attrs.frozen
class PatchLabels:
    """Patch labels onto a pod (label-only patches never hit spec immutability, #23885)."""

    pod_name: str
    namespace: str
    labels: Mapping[str, str]
    resource_version: str | None = None
    """Patch only a pod still at this version (``metadata.resourceVersion`` in the patch
    body: the API server answers 409 otherwise). Any change fails it — a status update
    too — so adoption no longer sets it (it sets :attr:`expect`); kept for callers that
    want exactly that."""
    expect: Mapping[str, str] | None = None
    """Labels that must still hold, or the patch does nothing: sent as a JSON patch
    (RFC 6902) whose ``test`` ops come before the changes, so the API server applies all
    or nothing and answers 422 Invalid when a test fails. Adoption expects the dead
    scheduler's ``airflow-worker`` value: of two schedulers taking over one pod only one
    does, and a status update between the list and the patch does not matter."""

    @property
    def conditional(self) -> bool:
        """Whether the patch holds only on a condition (a failed one took nothing)."""
        return self.resource_version is not None or bool(self.expect)


@attrs.frozen
class RequeueJob:
    """Put a job back on the pod-creation queue, optionally not before ``delay`` seconds."""

    job: KubernetesJob[Any]
    reason: str
    delay: float | None = None


@attrs.frozen
class FreeSlot:
    """Remove the key from ``running``: the executor no longer tracks the workload."""

    key: WorkloadKey


@attrs.frozen
class TrackRunning:
    """Add the key to ``running``: the executor now owns the workload again."""

    key: WorkloadKey


Action: TypeAlias = EmitEvent | DeletePod | PatchLabels | RequeueJob | FreeSlot | TrackRunning
"""A thing to perform. Every member of a result's ``actions`` is one."""


# --- what is not an action: said apart, on the result ---------------------------------


@attrs.frozen
class LookUpState:
    """Read the task instance's state from Airflow, then call the decision again with it."""

    key: TaskInstanceKey
    why: str


@attrs.frozen
class Ignore:
    """Nothing (more) to do; ``reason`` says why (a duplicate, a terminal callback …)."""

    reason: str


@attrs.frozen
class RetryLater:
    """Handle the same result again on a later pass (its handling failed; see
    :func:`~k8s_workloads.decisions.results.handling_failed`); pass ``failures`` as
    ``failures_so_far`` then."""

    failures: int
    reason: str


_Note: TypeAlias = "Ignore | LookUpState | RetryLater"


@attrs.frozen
class Decision:
    """The actions to perform, in order, and what the caller keeps.

    ``actions`` are all things to perform. What is not is said apart, in ``note``, and
    read as :attr:`ignored` (why nothing more is done), :attr:`look_up` (read a state,
    then decide again: ``actions`` is empty then) or :attr:`retry` (handle the result
    again later: ``actions`` is empty then).
    """

    actions: tuple[Action, ...]
    attempts: Attempts
    """The bookkeeping to keep once the actions are performed."""
    note: _Note | None = None
    """What is not an action (one field, not three: a decision is made per event)."""

    @property
    def ignored(self) -> Ignore | None:
        """Why nothing (more) is done, if that is so."""
        note = self.note
        return note if isinstance(note, Ignore) else None

    @property
    def look_up(self) -> LookUpState | None:
        """The state to read before deciding again, if one is needed."""
        note = self.note
        return note if isinstance(note, LookUpState) else None

    @property
    def retry(self) -> RetryLater | None:
        """Handle the result again on a later pass, if its handling failed."""
        note = self.note
        return note if isinstance(note, RetryLater) else None

    @property
    def notes(self) -> tuple[_Note, ...]:
        """``note`` as a tuple: empty or one."""
        return () if self.note is None else (self.note,)

    @property
    def reason(self) -> str:
        """A one-line summary of the actions and the note, for timelines and logs."""
        parts = [describe_action(action) for action in self.actions]
        if self.note is not None:
            parts.append(describe_action(self.note))
        return "; ".join(parts) or "nothing to do"


def describe_action(action: Action | Ignore | LookUpState | RetryLater) -> str:
    """One action (or note) as a short phrase (``emit failed``, ``delete pod p`` …)."""
    if isinstance(action, EmitEvent):
        return f"emit {action.state.value}"
    if isinstance(action, DeletePod):
        return f"delete pod {action.pod_name}"
    if isinstance(action, PatchLabels):
        labels = ",".join(f"{k}={v}" for k, v in action.labels.items())
        return f"patch {action.pod_name} {labels}"
    if isinstance(action, RequeueJob):
        return f"requeue ({action.reason})"
    if isinstance(action, FreeSlot):
        return "free slot"
    if isinstance(action, TrackRunning):
        return "track running"
    if isinstance(action, LookUpState):
        return f"look up state ({action.why})"
    if isinstance(action, RetryLater):
        return f"retry later ({action.reason})"
    return f"ignore ({action.reason})"

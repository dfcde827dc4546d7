"""The executor's rules around the decision tables, each with its reason: which results
need their workload's state read first, what a leftover pod of a settled workload gets,
how long a failed pod creation pauses pod creation, and whether a queued task's pod is
still to be created.

The tables (:mod:`~k8s_workloads.decisions.tables`) decide about one result from what the
executor knows; these rules read what only the executor's loop knows (whether a pod is
still in the watch, which pods it cleaned up, its scheduler's id) and are pure as the
tables are. :class:`~k8s_workloads.executor.core.ExecutorCore` and the Airflow executor
call them; neither writes them out again.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Final

from k8s_workloads.decisions.actions import Decision, EmitEvent, Ignore, RequeueJob
from k8s_workloads.decisions.rules import UNKNOWN, _Case, cleanup_actions
from k8s_workloads.keys import RUN_ONCE_KEYS
from k8s_workloads.states import (
    CallbackState,
    ExecutorPseudoState,
    TaskInstanceState,
)

if TYPE_CHECKING:
    from k8s_workloads.config import DecisionConfig
    from k8s_workloads.decisions.attempts import Attempts
    from k8s_workloads.keys import TaskInstanceKey
    from k8s_workloads.states import WorkloadResult

__all__ = [
    "LEFTOVER_STATES",
    "creation_paused_until",
    "leftover_cleanup",
    "stale_task_reason",
    "state_needed",
]

LEFTOVER_STATES: Final = frozenset(
    {
        TaskInstanceState.FAILED,
        TaskInstanceState.SUCCESS,
        ExecutorPseudoState.LOOKUP,
        CallbackState.FAILED,
        CallbackState.SUCCESS,
    }
)
"""The result states of a finished pod: the ones whose leftover pod is cleaned up."""


def state_needed(result: WorkloadResult, decision: Decision, *, read_callback_states: bool) -> bool:
    """Whether the workload's state must be read before ``decision`` (taken without it)
    stands.

    A task decision says so itself (``look_up``). A callback decision that reports an
    event needs the callback's state, because that state guards the never-overwrite rule
    (a terminal callback is never overwritten, reference §7.1) wherever one is reported;
    with ``read_callback_states`` off, callbacks are decided without it. A generic
    workload's, decided by the callback rules, likewise.
    """
    if isinstance(result.key, RUN_ONCE_KEYS):
        return read_callback_states and any(
            isinstance(action, EmitEvent) for action in decision.actions
        )
    return decision.look_up is not None


def leftover_cleanup(
    result: WorkloadResult,
    decision: Decision,
    *,
    running: bool,
    in_watch: bool,
    cleaned: bool,
    attempts: Attempts,
    config: DecisionConfig,
) -> Decision:
    """``decision`` (for ``result``, decided by the tables), or the clean-up of a leftover pod.

    A terminal result of a pod of a workload no longer running (``running`` False) that
    this executor never cleaned up (``cleaned`` False: a second launch adopted beside the
    one that reported, a pod created twice) gets no event, but its pod is cleaned up, or
    it stays in the watch and is read again after every restart. The same pod's repeated
    events do not (no second delete: it is ``cleaned``, or its event is a DELETED one,
    ``in_watch`` False), nor does the pod of a requeued launch (its clean-up came with
    the requeue), nor a result the tables acted on.
    """
    if (
        not in_watch
        or running
        or cleaned
        or result.state not in LEFTOVER_STATES
        or decision.actions
        or decision.look_up is not None
        or _Case(result, running, config, attempts, UNKNOWN).requeued_pod()
    ):
        return decision
    why = Ignore("a leftover pod of a settled workload: cleaned up, nothing reported")
    return Decision(tuple(cleanup_actions(result, config)), decision.attempts, why)


def creation_paused_until(
    decision: Decision, *, now: datetime.datetime, paused_until: datetime.datetime | None
) -> datetime.datetime | None:
    """Until when all pod creation waits after a failed creation decided as ``decision``
    (:func:`~k8s_workloads.decisions.creation_errors.decide_create_error`); None: it
    asks for no pause.

    A requeue with a delay (a 429, a ``Retry-After`` header) pauses every creation not
    handed out yet, as the provider pauses its whole queue, not only the job that failed;
    a pause already longer stays.
    """
    delays = [
        a.delay for a in decision.actions if isinstance(a, RequeueJob) and a.delay is not None
    ]
    if not delays:
        return None
    until = now + datetime.timedelta(seconds=delays[0])
    return until if paused_until is None or until > paused_until else paused_until


def stale_task_reason(
    key: TaskInstanceKey,
    row: tuple[object, object, object] | None,
    *,
    ti_id: str,
    scheduler_id: str | int | None,
) -> str | None:
    """Why a queued task's pod must not be created now, or None to create it.

    ``row`` is the task instance's row as read just before the creation: its state, try
    number and ``queued_by_job_id`` (None: no row). The provider's check that the workload
    still owns its queued row — queued, the same try, by this scheduler: after a delay (a
    429, a quota) it may have been retried, cleared or queued by another scheduler, and
    its pod would run a task instance that is no longer this launch's.
    """
    if row is None:
        return f"task instance {ti_id} no longer exists"
    state, try_number, queued_by = row
    if (
        str(state) == TaskInstanceState.QUEUED.value
        and try_number == key.try_number
        and str(queued_by) == str(scheduler_id)
    ):
        return None
    return (
        f"the task instance moved on (state {state}, try {try_number}, queued by "
        f"{queued_by}; this workload: try {key.try_number}, scheduler {scheduler_id})"
    )

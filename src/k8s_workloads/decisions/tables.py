"""The decision tables: what an executor does with each task or callback result, and
when handling a result keeps failing — one :class:`~k8s_workloads.decisions.rules.Rule`
per row, the reason beside each (h11's way: the table is the code).

For each result the rows about its state are read top to bottom; the first that applies
decides (:mod:`~k8s_workloads.decisions.results` runs them). The rows several tables share
(an adopted pod, a stale launch, a requeued pod's duplicate) are written once, in
:mod:`~k8s_workloads.decisions.rules`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from k8s_workloads.decisions.actions import Decision, EmitEvent, FreeSlot, Ignore, RetryLater
from k8s_workloads.decisions.rules import (
    _ADOPTED_ROWS,
    _COMPLETED,
    _LOOKUP,
    _NOT_RUNNING_DUPLICATE,
    _NOT_RUNNING_VANISHED,
    _STALE_LAUNCH,
    _VANISHED,
    _VANISHED_INFO,
    UNKNOWN,
    KnownState,
    Rule,
    _Case,
    _may_retry,
    _not_running,
    _Outcome,
    _requeue,
    cleanup_actions,
)
from k8s_workloads.states import (
    CALLBACK_TERMINAL_STATES,
    TASK_FINISHED_STATES,
    CallbackState,
    FailureDetails,
    TaskInstanceState,
    state_class_for_key,
)
from k8s_workloads.watch.failures import describe_pod_failure

if TYPE_CHECKING:
    from collections.abc import Callable

    from k8s_workloads.states import WorkloadResult

__all__ = ["CALLBACK_GIVE_UP_RULES", "CALLBACK_RULES", "TASK_GIVE_UP_RULES", "TASK_RULES"]

# --- tasks ----------------------------------------------------------------------------


def _is_pre_execution_failure(
    ti_state: KnownState, details: FailureDetails | None, excluded: frozenset[str]
) -> bool:
    # The task instance never reached RUNNING, so no task code ran (provider PR #69058);
    # an excluded container reason (default "Error") means the process did start.
    if ti_state is not TaskInstanceState.QUEUED:
        return False
    reason = (details or {}).get("container_reason")
    return not (reason and reason in excluded)


def _task_pre_execution(case: _Case) -> bool:
    config, attempt = case.config, case.attempt
    return (
        attempt is not None
        and config.pod_launch_failure_retries != 0
        and _is_pre_execution_failure(
            case.known,
            case.result.failure_details,
            config.pod_launch_failure_excluded_container_reasons,
        )
        and _may_retry(attempt, config.pod_launch_failure_retries)
    )


def _task_requeue(case: _Case) -> Decision:
    assert case.attempt is not None  # noqa: S101 - the row's test says so
    limit = case.config.pod_launch_failure_retries
    return _requeue(case, case.attempt, what="pod failed before the task ran", limit=limit)


def _report_known(case: _Case) -> EmitEvent:
    known = case.known
    assert isinstance(known, TaskInstanceState)  # noqa: S101 - the row's test says so
    return EmitEvent(case.key, known)


# The two rows most results end on: written out, without the helpers' calls.


def _report_read_state(case: _Case) -> Decision:
    key, known = case.key, case.known
    assert isinstance(known, TaskInstanceState)  # noqa: S101 - the row's test says so
    cleanup = cleanup_actions(case.result, case.config)
    return Decision((*cleanup, FreeSlot(key), EmitEvent(key, known)), case.attempts.without(key))


def _failure_info(result: WorkloadResult) -> str:
    """What a failed workload is reported with: its pod, the cause, the container's last
    words (the task's failure details; a callback's ``output``)."""
    return describe_pod_failure(
        result.failure_details, namespace=result.namespace, pod_name=result.pod_name
    )


def _report_task_result(case: _Case) -> Decision:
    key, state, result = case.key, case.state, case.result
    assert isinstance(state, (TaskInstanceState, CallbackState))  # noqa: S101
    info = _failure_info(result) if state is TaskInstanceState.FAILED else None
    cleanup = cleanup_actions(result, case.config)
    return Decision(
        (*cleanup, FreeSlot(key), EmitEvent(key, state, info)), case.attempts.without(key)
    )


_FAILED = TaskInstanceState.FAILED

TASK_RULES: Final[tuple[Rule, ...]] = (
    *_ADOPTED_ROWS,
    Rule(
        [TaskInstanceState.RUNNING],
        when="always",
        then="emit running",
        why="The provider reports every running event.",
        outcome=lambda c: Decision((EmitEvent(c.key, TaskInstanceState.RUNNING),), c.attempts),
    ),
    _STALE_LAUNCH,
    _NOT_RUNNING_VANISHED,
    Rule(
        [_VANISHED],
        when="the task instance state is not read",
        applies=lambda c: c.known is UNKNOWN,
        then="look up the state",
        why="The task process records its own end state: did it get there?",
        outcome=lambda c: c.look_up("did the task finish before its pod vanished?"),
    ),
    Rule(
        [_VANISHED],
        when="the task instance is finished",
        applies=lambda c: c.known in TASK_FINISHED_STATES,
        then="free the slot, emit the state read; drop the attempt record",
        why="The task recorded its end before its pod vanished.",
        outcome=lambda c: c.settled(FreeSlot(c.key), _report_known(c)),
    ),
    Rule(
        [_VANISHED],
        when="otherwise",
        then="free the slot, emit failed; drop the attempt record",
        why="A task that never recorded its end died with its pod.",
        outcome=lambda c: c.settled(FreeSlot(c.key), EmitEvent(c.key, _FAILED, _VANISHED_INFO)),
    ),
    Rule(
        [_COMPLETED],
        when="always",
        then="clean the pod up",
        why="An adopted pod that had Succeeded under a dead scheduler: its task recorded its end.",
        outcome=lambda c: Decision(tuple(c.cleanup()), c.attempts),
    ),
    _NOT_RUNNING_DUPLICATE,
    Rule(
        [_FAILED],
        when="relaunching is on and this pod's failure was requeued",
        applies=lambda c: c.config.pod_launch_failure_retries != 0 and c.requeued_pod(),
        then="ignore",
        why="A later event of a requeued pod (DELETED after MODIFIED) is no new failure.",
        outcome=lambda c: c.ignore("duplicate failure of a pod already requeued"),
        record=True,
    ),
    Rule(
        [_FAILED],
        when="relaunching is on and the task instance state is not read",
        applies=lambda c: c.known is UNKNOWN and c.config.pod_launch_failure_retries != 0,
        then="look up the state",
        why="Whether the pod failed before the task ran is the task instance's state.",
        outcome=lambda c: c.look_up("did the pod fail before the task ran?"),
        record=True,
    ),
    Rule(
        [_FAILED],
        when="the task instance is QUEUED (no task code ran), the container reason is not "
        "excluded and launch retries remain",
        applies=_task_pre_execution,
        then="clean the pod up, requeue the job; count the launch",
        why="The provider's pod-launch-failure requeue (PR #69058).",
        outcome=_task_requeue,
        record=True,
    ),
    Rule(
        [_LOOKUP],
        when="the task instance state is not read",
        applies=lambda c: c.known is UNKNOWN,
        then="look up the state",
        why="A Succeeded pod says the process exited 0; the task instance says how it ended.",
        outcome=lambda c: c.look_up("the pod succeeded"),
    ),
    Rule(
        [_LOOKUP],
        when="no task instance state",
        applies=lambda c: c.known is None,
        then="clean the pod up, free the slot, ignore; drop the attempt record",
        why="The provider emits a None state here (#35888); there is nothing to report.",
        outcome=lambda c: c.settled(
            *c.cleanup(), FreeSlot(c.key), ignored=Ignore("no task instance state to report")
        ),
    ),
    Rule(
        [_LOOKUP],
        when="otherwise",
        then="clean the pod up, free the slot, emit the state read; drop the attempt record",
        why="The task instance's own state is the result.",
        outcome=_report_read_state,
    ),
    Rule(
        None,
        when="otherwise",
        then="clean the pod up, free the slot, emit the state (a failure with its details); "
        "drop the attempt record",
        why="The provider's _change_state.",
        outcome=_report_task_result,
    ),
)
"""The rules for a task result (:func:`decide_task`), top to bottom."""


# --- callbacks ------------------------------------------------------------------------


def _callback_pre_execution(details: FailureDetails | None) -> bool:
    # The callback's container never ran: the pod failed while pending, or its main
    # container is still waiting (image pull, config error).
    details = details or {}
    return (
        details.get("pod_status") == "Pending"
        or details.get("container_state") == "waiting"
        or details.get("container_type") == "init"
    )


def _terminal(case: _Case) -> bool:
    known = case.known
    return isinstance(known, CallbackState) and known in CALLBACK_TERMINAL_STATES


def _keep(case: _Case) -> Ignore:
    known = case.known
    assert isinstance(known, CallbackState)  # noqa: S101 - the row's test says so
    return Ignore(f"callback is already {known.value}: never overwritten")


def _callback_requeues(case: _Case) -> bool:
    config, attempt = case.config, case.attempt
    return (
        attempt is not None
        and config.callback_launch_failure_retries != 0
        and _callback_pre_execution(case.result.failure_details)
        and _may_retry(attempt, config.callback_launch_failure_retries)
    )


def _callback_requeue(case: _Case) -> Decision:
    assert case.attempt is not None  # noqa: S101 - the row's test says so
    limit = case.config.callback_launch_failure_retries
    return _requeue(case, case.attempt, what="callback pod failed before it ran", limit=limit)


_C_FAILED = CallbackState.FAILED
_C_SUCCESS = CallbackState.SUCCESS
_C_RUNNING = CallbackState.RUNNING
_NEVER_OVERWRITTEN = "A callback in a terminal state is never overwritten (reference §7.1)."
_NO_TRANSITION = "Nothing else is ever taken as success."

CALLBACK_RULES: Final[tuple[Rule, ...]] = (
    *_ADOPTED_ROWS,
    _STALE_LAUNCH,
    Rule(
        [_COMPLETED],
        when="the callback is terminal",
        applies=_terminal,
        then="clean the pod up, free the slot if running, ignore; drop the attempt record",
        why=f"{_NEVER_OVERWRITTEN} An adopted, finished pod is never tracked as running: "
        "cleaning it up is the point.",
        outcome=lambda c: c.settled(*c.cleanup(), *c.freed(), ignored=_keep(c)),
    ),
    Rule(
        [_C_SUCCESS, _C_FAILED, _VANISHED],
        when="the callback is terminal and running",
        applies=_terminal,
        then="clean the pod up, free the slot, ignore; drop the attempt record",
        why=f"{_NEVER_OVERWRITTEN} But a finished pod is still cleaned up and its slot freed.",
        outcome=lambda c: c.settled(*c.cleanup(), FreeSlot(c.key), ignored=_keep(c)),
        running=True,
    ),
    Rule(
        [_C_SUCCESS, _C_FAILED, _VANISHED, _C_RUNNING, _LOOKUP, *CallbackState],
        when="the callback is terminal",
        applies=_terminal,
        then="ignore",
        why=_NEVER_OVERWRITTEN,
        outcome=lambda c: Decision((), c.attempts, _keep(c)),
    ),
    _NOT_RUNNING_VANISHED,
    Rule(
        [_VANISHED],
        when="otherwise",
        then="free the slot, emit failed; drop the attempt record",
        why="Nothing says the callback succeeded, so it did not (success is never assumed).",
        outcome=lambda c: c.settled(FreeSlot(c.key), EmitEvent(c.key, _C_FAILED, _VANISHED_INFO)),
    ),
    Rule(
        [_COMPLETED],
        when="otherwise",
        then="clean the pod up, free the slot if running, emit success; drop the attempt record",
        why="A callback pod that Succeeded while no scheduler watched it (adopted after a "
        "restart) exited 0, so the callback succeeded, and nothing else will say so.",
        outcome=lambda c: c.settled(*c.cleanup(), *c.freed(), EmitEvent(c.key, _C_SUCCESS)),
    ),
    Rule(
        [_LOOKUP],
        when="always",
        then="ignore",
        why=f"LOOKUP has no meaning for a callback. {_NO_TRANSITION}",
        outcome=lambda c: c.ignore(f"no callback transition for {c.state}"),
    ),
    _not_running(
        [_C_RUNNING],
        why="A running event of a callback no longer tracked is stale.",
        what="stale event",
    ),
    Rule(
        [_C_RUNNING],
        when="the callback is running already",
        applies=lambda c: c.known is _C_RUNNING,
        then="ignore",
        why="Reported once.",
        outcome=lambda c: c.ignore("callback already running"),
    ),
    Rule(
        [_C_RUNNING],
        when="otherwise",
        then="emit running",
        why="The callback's row says it runs (the provider never does).",
        outcome=lambda c: Decision((EmitEvent(c.key, _C_RUNNING),), c.attempts),
    ),
    _NOT_RUNNING_DUPLICATE,
    Rule(
        [_C_FAILED],
        when="this pod's failure was requeued",
        applies=_Case.requeued_pod,
        then="ignore",
        why="A later event of a requeued pod is no new failure.",
        outcome=lambda c: c.ignore("duplicate failure of a pod already requeued"),
        record=True,
    ),
    Rule(
        [_C_FAILED],
        when="the pod failed before the callback ran and launch retries remain",
        applies=_callback_requeues,
        then="clean the pod up, requeue the job; count the launch",
        why="callback_launch_failure_retries: the callback's code never ran.",
        outcome=_callback_requeue,
        record=True,
    ),
    Rule(
        [_C_FAILED],
        when="otherwise",
        then="clean the pod up, free the slot, emit failed with its details; drop the record",
        why="The callback failed.",
        outcome=lambda c: c.settled(
            *c.cleanup(),
            FreeSlot(c.key),
            EmitEvent(c.key, _C_FAILED, _failure_info(c.result)),
        ),
    ),
    Rule(
        [_C_SUCCESS],
        when="otherwise",
        then="clean the pod up, free the slot, emit success; drop the attempt record",
        why="The callback's pod Succeeded.",
        outcome=lambda c: c.settled(*c.cleanup(), FreeSlot(c.key), EmitEvent(c.key, _C_SUCCESS)),
    ),
    Rule(
        None,
        when="otherwise",
        then="ignore",
        why=f"A queued or pending state from a result. {_NO_TRANSITION}",
        outcome=lambda c: c.ignore(f"no callback transition for {c.state}"),
    ),
)
"""The rules for a callback result (:func:`decide_callback`), top to bottom."""


# --- handling failed ------------------------------------------------------------------


def _retry(case: _Case) -> Decision:
    failures, limit = case.failures, case.config.max_handling_retries
    reason = f"handling failed ({case.error!r}); {failures + 1} of {limit} retries"
    return Decision((), case.attempts, RetryLater(failures + 1, reason))


def _failed_report(case: _Case) -> EmitEvent:
    failed = state_class_for_key(case.key).FAILED
    return EmitEvent(case.key, failed, f"handling the pod's result {case.gave_up()}")


def _give_up(report: Callable[[_Case], EmitEvent | Ignore]) -> _Outcome:
    # The event comes first, then the pod's clean-up (as its own outcome calls for).
    def outcome(case: _Case) -> Decision:
        made = report(case)
        if isinstance(made, Ignore):
            return case.settled(*case.freed(), *case.cleanup(), ignored=made)
        return case.settled(*case.freed(), made, *case.cleanup())

    return outcome


def _known_is_the_result(case: _Case) -> bool:
    known = case.known
    return isinstance(known, TaskInstanceState) and (
        case.state is _LOOKUP or known in TASK_FINISHED_STATES
    )


_GIVE_UP_FIRST: Final = (
    Rule(
        None,
        when="fewer failures than max_handling_retries",
        applies=lambda c: c.failures < c.config.max_handling_retries,
        then="retry on a later pass",
        why="Never inside the same drain loop: that is how the provider can spin forever on "
        "one result (#35888, reference §7.1).",
        outcome=_retry,
    ),
    *_ADOPTED_ROWS,
    _STALE_LAUNCH,
    Rule(
        None,
        when="the pod's failure was requeued",
        applies=lambda c: bool(c.result.pod_name) and c.requeued_pod(),
        then="ignore",
        why="A stale result: the requeued launch decides.",
        outcome=lambda c: c.ignore("duplicate result of a pod already requeued"),
        record=True,
    ),
    Rule(
        [TaskInstanceState.RUNNING, _C_RUNNING],
        when="always",
        then="ignore",
        why="The pod's final event still decides.",
        outcome=lambda c: c.ignore(f"{c.gave_up()}; the pod's final event decides"),
    ),
    Rule(
        None,
        when="not running (and not an adopted Succeeded pod)",
        applies=lambda c: c.state is not _COMPLETED,
        then="ignore",
        why="Settled by another result: nothing to report.",
        outcome=lambda c: c.ignore(f"{c.gave_up()}; {c.key!r} is not running: nothing to report"),
        running=False,
    ),
)

TASK_GIVE_UP_RULES: Final[tuple[Rule, ...]] = (
    *_GIVE_UP_FIRST,
    Rule(
        [_COMPLETED],
        when="always",
        then="free the slot if running, clean the pod up, ignore; drop the attempt record",
        why="An adopted Succeeded task pod only needs cleaning up: its task recorded its end.",
        outcome=_give_up(lambda c: Ignore(f"{c.gave_up()}; the task recorded its own end")),
    ),
    Rule(
        None,
        when="the task instance state was read and is what the decision would report (a "
        "Succeeded pod, a finished task)",
        applies=_known_is_the_result,
        then="free the slot, emit the state read, clean the pod up; drop the attempt record",
        why="The state read is what the decision would have reported.",
        outcome=_give_up(_report_known),
    ),
    Rule(
        None,
        when="otherwise",
        then="free the slot, emit failed, clean the pod up; drop the attempt record",
        why="Handling gave up: the workload is reported FAILED and no longer tracked.",
        outcome=_give_up(_failed_report),
    ),
)
"""The rules when handling a task result keeps failing (:func:`handling_failed`)."""

CALLBACK_GIVE_UP_RULES: Final[tuple[Rule, ...]] = (
    *_GIVE_UP_FIRST,
    Rule(
        None,
        when="the callback is terminal",
        applies=_terminal,
        then="free the slot if running, clean the pod up, ignore; drop the attempt record",
        why=_NEVER_OVERWRITTEN,
        outcome=_give_up(_keep),
    ),
    Rule(
        None,
        when="otherwise",
        then="free the slot if running, emit failed, clean the pod up; drop the attempt record",
        why="Handling gave up: the workload is reported FAILED and no longer tracked.",
        outcome=_give_up(_failed_report),
    ),
)
"""The rules when handling a callback result keeps failing (:func:`handling_failed`)."""

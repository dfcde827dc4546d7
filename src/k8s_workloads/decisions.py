"""What an executor does with each result: the decision rules, as the tables the code runs.

Every function here takes what the executor knows — the result, whether the workload is
still running, the configuration, the immutable attempt bookkeeping — and returns a
:class:`~k8s_workloads.actions.Decision`: the actions to perform, in order, and the new
bookkeeping. The executor performs them (delete the pod, emit the event…); the library
never calls the API or the database. Where a decision needs the workload's state from the
database, it says so in ``Decision.look_up`` instead, and the executor asks again with the
state it read.

The rules are rows of :data:`TASK_RULES`, :data:`CALLBACK_RULES` and the two
``*_GIVE_UP_RULES`` tables (h11's way: the table is the code). Each :class:`Rule` names
the result states it is about, when it applies, what it does and why; the first row that
applies decides. The rows several tables share (an adopted pod, a stale launch, a requeued
pod's duplicate) are written once. :func:`describe_rules` renders the tables for the
documentation, which is tested against them.

Results are dispatched on the key's type before anything task-specific happens, so no
task rule (a task-instance database lookup, a try-number log line) ever sees a callback
key: the crash loop of the callback pull requests (reference §7.1) cannot happen.

Everything in this module depends only on its arguments: the tables are module constants.
The action types live in :mod:`k8s_workloads.actions`, the bookkeeping in
:mod:`k8s_workloads.attempts`, the pod-creation error policy in
:mod:`k8s_workloads.creation_errors` and :class:`~k8s_workloads.config.DecisionConfig` in
:mod:`k8s_workloads.config`; their names are still importable from here (and typed so), as
deprecated aliases: new code imports them from those modules.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Final, TypeAlias

import attrs

from k8s_workloads.actions import (
    Action,
    Decision,
    DeletePod,
    EmitEvent,
    FreeSlot,
    Ignore,
    LookUpState,
    PatchLabels,
    RequeueJob,
    RetryLater,
    describe_action,
)
from k8s_workloads.attempts import Attempt, Attempts
from k8s_workloads.config import DecisionConfig
from k8s_workloads.creation_errors import (
    CreateErrorVerdict,
    _renamed,
    classify_create_error,
    decide_create_error,
    requeue_after_create_error,
)
from k8s_workloads.failures import describe_failure
from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.labels import POD_EXECUTOR_DONE_LABEL, TRUE_LABEL_VALUE
from k8s_workloads.states import (
    CALLBACK_TERMINAL_STATES,
    TASK_FINISHED_STATES,
    CallbackResult,
    CallbackState,
    ExecutorPseudoState,
    FailureDetails,
    TaskInstanceState,
    TaskResult,
    WorkloadResult,
    state_class_for_key,
)

__all__ = [
    "CALLBACK_GIVE_UP_RULES",
    "CALLBACK_RULES",
    "TASK_GIVE_UP_RULES",
    "TASK_RULES",
    "UNKNOWN",
    "Action",
    "Attempt",
    "Attempts",
    "CreateErrorVerdict",
    "Decision",
    "DecisionConfig",
    "DeletePod",
    "EmitEvent",
    "FreeSlot",
    "Ignore",
    "KnownState",
    "LookUpState",
    "PatchLabels",
    "RequeueJob",
    "RetryLater",
    "Rule",
    "StateNotRead",
    "classify_create_error",
    "cleanup_actions",
    "decide",
    "decide_callback",
    "decide_create_error",
    "decide_task",
    "describe_action",
    "describe_rules",
    "handling_failed",
    "requeue_after_create_error",
]


class StateNotRead(enum.Enum):
    """The type of :data:`UNKNOWN`: a workload state that has not been read yet.

    Annotate a variable that starts as :data:`UNKNOWN` and later holds a state read from
    Airflow as :data:`KnownState`; ``known is UNKNOWN`` narrows it.
    """

    UNKNOWN = "unknown"


UNKNOWN: Final = StateNotRead.UNKNOWN
"""The executor has not looked a state up (as opposed to "looked up: no state", None)."""

KnownState: TypeAlias = TaskInstanceState | CallbackState | StateNotRead | None
"""What an executor knows of a workload's state in Airflow: a state, None (read: no row
or no state) or :data:`UNKNOWN` (not read)."""


# --- shared rules ---------------------------------------------------------------------


def cleanup_actions(result: WorkloadResult, config: DecisionConfig) -> list[Action]:
    """What is done with a settled result's pod: deleted (``delete_worker_pods``), except a
    failed one kept for debugging (``delete_worker_pods_on_failure`` off), which is labelled
    done if ``mark_kept_failed_pods_done``; with ``delete_worker_pods`` off, labelled done.
    A vanished pod is gone already; a Succeeded pod is never kept as a failed one."""
    if result.state is ExecutorPseudoState.VANISHED:
        return []
    failed = result.state is TaskInstanceState.FAILED or result.state is CallbackState.FAILED
    done = PatchLabels(
        result.pod_name, result.namespace, {POD_EXECUTOR_DONE_LABEL: TRUE_LABEL_VALUE}
    )
    if not config.delete_worker_pods:
        return [done]
    if failed and not config.delete_worker_pods_on_failure:
        return [done] if config.mark_kept_failed_pods_done else []
    return [DeletePod(result.pod_name, result.namespace)]


class _Case:
    """What a rule reads: the result and everything the caller knows about it."""

    __slots__ = (
        "attempt",
        "attempts",
        "config",
        "error",
        "failures",
        "key",
        "known",
        "result",
        "running",
        "state",
    )

    def __init__(  # noqa: PLR0917 - private, positional for speed
        self,
        result: WorkloadResult,
        running: bool,
        config: DecisionConfig,
        attempts: Attempts,
        known: KnownState,
        error: BaseException | None = None,
        failures: int = 0,
    ) -> None:
        self.result = result
        self.key: WorkloadKey = result.key
        self.state = result.state
        self.running = running
        self.config = config
        self.attempts = attempts
        self.attempt = attempts.get(result.key)
        self.known = known
        self.error = error
        self.failures = failures

    def ignore(self, reason: str) -> Decision:
        return Decision((), self.attempts, Ignore(reason))

    def look_up(self, why: str) -> Decision:
        key = self.key
        assert isinstance(key, TaskInstanceKey)  # noqa: S101 - task rules only
        return Decision((), self.attempts, LookUpState(key, why))

    def settled(self, *actions: Action, ignored: Ignore | None = None) -> Decision:
        """The workload is settled: its attempt record goes."""
        return Decision(actions, self.attempts.without(self.key), ignored)

    def cleanup(self) -> list[Action]:
        return cleanup_actions(self.result, self.config)

    def freed(self) -> tuple[Action, ...]:
        return (FreeSlot(self.key),) if self.running else ()

    def requeued_pod(self) -> bool:
        """Whether this result's pod is one whose failure was requeued (its events are stale)."""
        attempt = self.attempt
        result = self.result
        return attempt is not None and attempt.was_requeued(result.pod_name, result.pod_uid)

    def gave_up(self) -> str:
        return f"gave up after {self.failures + 1} failed attempts ({self.error!r})"


_Test: TypeAlias = Callable[[_Case], bool]
_Outcome: TypeAlias = Callable[[_Case], Decision]
_ResultState: TypeAlias = TaskInstanceState | CallbackState | ExecutorPseudoState


def _always(_: _Case) -> bool:
    return True


@attrs.frozen
class Rule:
    """One row of a decision table: the states it is about, when it applies, what it
    does and why. The first row that applies to a result decides."""

    states: frozenset[_ResultState] | None
    """The result states the row is about; None: any state."""
    when: str
    then: str
    why: str
    applies: _Test = attrs.field(eq=False, repr=False)
    """The rest of ``when``, beyond the state and the two columns below."""
    outcome: _Outcome = attrs.field(eq=False, repr=False)
    running: bool | None = None
    """Only while the key is in ``running`` (True), only while it is not (False), or either."""
    record: bool | None = None
    """Only for a workload with an attempt record (True), or with or without one."""

    def is_about(self, state: _ResultState) -> bool:
        return self.states is None or state in self.states

    def fits(self, state: _ResultState | None, *, running: bool, record: bool) -> bool:
        """Whether the row is looked at for a result of this state (None: any other)."""
        return (
            (self.states is None or (state is not None and state in self.states))
            and self.running in {None, running}
            and self.record in {None, record}
        )


def _rule(
    states: Iterable[_ResultState] | None,
    *,
    when: str,
    applies: _Test = _always,
    then: str,
    why: str,
    outcome: _Outcome,
    running: bool | None = None,
    record: bool | None = None,
) -> Rule:
    """A table row: the states it is about, then by name ``when`` (the text) beside
    ``applies`` (the code for the rest of it), what it does and why."""
    frozen = None if states is None else frozenset(states)
    return Rule(
        frozen, when, then, why, applies=applies, outcome=outcome, running=running, record=record
    )


_ADOPTED = ExecutorPseudoState.ADOPTED
_COMPLETED = ExecutorPseudoState.COMPLETED
_VANISHED = ExecutorPseudoState.VANISHED
_LOOKUP = ExecutorPseudoState.LOOKUP
_VANISHED_INFO = "the pod vanished while the watch was down; its final events were lost"


def _may_retry(attempt: Attempt, limit: int) -> bool:
    return limit == -1 or attempt.attempts < limit


def _requeue(case: _Case, attempt: Attempt, *, what: str, limit: int) -> Decision:
    result = case.result
    pod_name, pod_uid = result.pod_name, result.pod_uid
    updated = attrs.evolve(
        attempt,
        attempts=attempt.attempts + 1,
        requeued_for_pod=pod_name,
        requeued_pods=attempt.requeued_pods | {pod_name},
        requeued_uids=attempt.requeued_uids | ({pod_uid} if pod_uid else set()),
    )
    shown_limit = "unlimited" if limit == -1 else str(limit)
    requeue = RequeueJob(attempt.job, f"{what} (try {updated.attempts} of {shown_limit})")
    return Decision((*case.cleanup(), requeue), case.attempts.with_record(case.key, updated))


# --- rows every table shares ----------------------------------------------------------

_ADOPTED_ROWS: Final = (
    _rule(
        [_ADOPTED],
        when="the pod's failure was requeued (an earlier launch)",
        applies=_Case.requeued_pod,
        then="ignore",
        why="A pod leaves the watch (DELETED, no deletion timestamp) when another scheduler "
        "relabels it, but also when this executor marked a failed pod done and requeued "
        "the workload: that pod's adoption must not free the new launch's slot.",
        outcome=lambda c: c.ignore("a requeued workload's old pod left the watch"),
        record=True,
    ),
    _rule(
        [_ADOPTED],
        when="not running",
        then="ignore; drop the attempt record",
        why="Another scheduler owns the workload now; this one was not tracking it.",
        outcome=lambda c: Decision((), c.attempts.without(c.key), Ignore("adopted, not running")),
        running=False,
    ),
    _rule(
        [_ADOPTED],
        when="otherwise",
        then="free the slot; drop the attempt record",
        why="Another scheduler owns the workload now: it reports the outcome.",
        outcome=lambda c: c.settled(FreeSlot(c.key)),
    ),
)


def _stale_launch(case: _Case) -> bool:
    launch, attempt = case.result.launch, case.attempt
    return launch is not None and attempt is not None and launch < attempt.attempts


_STALE_LAUNCH: Final = _rule(
    [_VANISHED],
    when="the vanished pod was an earlier launch (its result was made before a requeue)",
    applies=_stale_launch,
    then="ignore",
    why="A VANISHED result is made from a re-list; handled late (after a failed pass), the "
    "workload may have been requeued meanwhile and its new pod must not be failed.",
    outcome=lambda c: c.ignore(
        "the vanished pod was an earlier launch: the workload was requeued since"
    ),
    record=True,
)

_NOT_RUNNING_DUPLICATE: Final = _rule(
    None,
    when="not running",
    then="ignore",
    why="A repeated terminal event (MODIFIED then DELETED is normal): no event, and unlike "
    "the provider (§7.3.3) no second delete or patch either.",
    outcome=lambda c: c.ignore(f"{c.key!r} is not running: duplicate result"),
    running=False,
)


_NOT_RUNNING_VANISHED: Final = _rule(
    [_VANISHED],
    when="not running",
    then="ignore",
    why="Settled already (by another result, or never this executor's).",
    outcome=lambda c: c.ignore(f"{c.key!r} is not running"),
    running=False,
)


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


def _report_task_result(case: _Case) -> Decision:
    key, state, result = case.key, case.state, case.result
    assert isinstance(state, (TaskInstanceState, CallbackState))  # noqa: S101
    info = describe_failure(result.failure_details) if state is TaskInstanceState.FAILED else None
    cleanup = cleanup_actions(result, case.config)
    return Decision(
        (*cleanup, FreeSlot(key), EmitEvent(key, state, info)), case.attempts.without(key)
    )


_FAILED = TaskInstanceState.FAILED

TASK_RULES: Final[tuple[Rule, ...]] = (
    *_ADOPTED_ROWS,
    _rule(
        [TaskInstanceState.RUNNING],
        when="always",
        then="emit running",
        why="The provider reports every running event.",
        outcome=lambda c: Decision((EmitEvent(c.key, TaskInstanceState.RUNNING),), c.attempts),
    ),
    _STALE_LAUNCH,
    _NOT_RUNNING_VANISHED,
    _rule(
        [_VANISHED],
        when="the task instance state is not read",
        applies=lambda c: c.known is UNKNOWN,
        then="look up the state",
        why="The task process records its own end state: did it get there?",
        outcome=lambda c: c.look_up("did the task finish before its pod vanished?"),
    ),
    _rule(
        [_VANISHED],
        when="the task instance is finished",
        applies=lambda c: c.known in TASK_FINISHED_STATES,
        then="free the slot, emit the state read; drop the attempt record",
        why="The task recorded its end before its pod vanished.",
        outcome=lambda c: c.settled(FreeSlot(c.key), _report_known(c)),
    ),
    _rule(
        [_VANISHED],
        when="otherwise",
        then="free the slot, emit failed; drop the attempt record",
        why="A task that never recorded its end died with its pod.",
        outcome=lambda c: c.settled(FreeSlot(c.key), EmitEvent(c.key, _FAILED, _VANISHED_INFO)),
    ),
    _rule(
        [_COMPLETED],
        when="always",
        then="clean the pod up",
        why="An adopted pod that had Succeeded under a dead scheduler: its task recorded its end.",
        outcome=lambda c: Decision(tuple(c.cleanup()), c.attempts),
    ),
    _NOT_RUNNING_DUPLICATE,
    _rule(
        [_FAILED],
        when="relaunching is on and this pod's failure was requeued",
        applies=lambda c: c.config.pod_launch_failure_retries != 0 and c.requeued_pod(),
        then="ignore",
        why="A later event of a requeued pod (DELETED after MODIFIED) is no new failure.",
        outcome=lambda c: c.ignore("duplicate failure of a pod already requeued"),
        record=True,
    ),
    _rule(
        [_FAILED],
        when="relaunching is on and the task instance state is not read",
        applies=lambda c: c.known is UNKNOWN and c.config.pod_launch_failure_retries != 0,
        then="look up the state",
        why="Whether the pod failed before the task ran is the task instance's state.",
        outcome=lambda c: c.look_up("did the pod fail before the task ran?"),
        record=True,
    ),
    _rule(
        [_FAILED],
        when="the task instance is QUEUED (no task code ran), the container reason is not "
        "excluded and launch retries remain",
        applies=_task_pre_execution,
        then="clean the pod up, requeue the job; count the launch",
        why="The provider's pod-launch-failure requeue (PR #69058).",
        outcome=_task_requeue,
        record=True,
    ),
    _rule(
        [_LOOKUP],
        when="the task instance state is not read",
        applies=lambda c: c.known is UNKNOWN,
        then="look up the state",
        why="A Succeeded pod says the process exited 0; the task instance says how it ended.",
        outcome=lambda c: c.look_up("the pod succeeded"),
    ),
    _rule(
        [_LOOKUP],
        when="no task instance state",
        applies=lambda c: c.known is None,
        then="clean the pod up, free the slot, ignore; drop the attempt record",
        why="The provider emits a None state here (#35888); there is nothing to report.",
        outcome=lambda c: c.settled(
            *c.cleanup(), FreeSlot(c.key), ignored=Ignore("no task instance state to report")
        ),
    ),
    _rule(
        [_LOOKUP],
        when="otherwise",
        then="clean the pod up, free the slot, emit the state read; drop the attempt record",
        why="The task instance's own state is the result.",
        outcome=_report_read_state,
    ),
    _rule(
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
    _rule(
        [_COMPLETED],
        when="the callback is terminal",
        applies=_terminal,
        then="clean the pod up, free the slot if running, ignore; drop the attempt record",
        why=f"{_NEVER_OVERWRITTEN} An adopted, finished pod is never tracked as running: "
        "cleaning it up is the point.",
        outcome=lambda c: c.settled(*c.cleanup(), *c.freed(), ignored=_keep(c)),
    ),
    _rule(
        [_C_SUCCESS, _C_FAILED, _VANISHED],
        when="the callback is terminal and running",
        applies=_terminal,
        then="clean the pod up, free the slot, ignore; drop the attempt record",
        why=f"{_NEVER_OVERWRITTEN} But a finished pod is still cleaned up and its slot freed.",
        outcome=lambda c: c.settled(*c.cleanup(), FreeSlot(c.key), ignored=_keep(c)),
        running=True,
    ),
    _rule(
        [_C_SUCCESS, _C_FAILED, _VANISHED, _C_RUNNING, _LOOKUP, *CallbackState],
        when="the callback is terminal",
        applies=_terminal,
        then="ignore",
        why=_NEVER_OVERWRITTEN,
        outcome=lambda c: Decision((), c.attempts, _keep(c)),
    ),
    _NOT_RUNNING_VANISHED,
    _rule(
        [_VANISHED],
        when="otherwise",
        then="free the slot, emit failed; drop the attempt record",
        why="Nothing says the callback succeeded, so it did not (success is never assumed).",
        outcome=lambda c: c.settled(FreeSlot(c.key), EmitEvent(c.key, _C_FAILED, _VANISHED_INFO)),
    ),
    _rule(
        [_COMPLETED],
        when="otherwise",
        then="clean the pod up, free the slot if running, emit success; drop the attempt record",
        why="A callback pod that Succeeded while no scheduler watched it (adopted after a "
        "restart) exited 0, so the callback succeeded, and nothing else will say so.",
        outcome=lambda c: c.settled(*c.cleanup(), *c.freed(), EmitEvent(c.key, _C_SUCCESS)),
    ),
    _rule(
        [_LOOKUP],
        when="always",
        then="ignore",
        why=f"LOOKUP has no meaning for a callback. {_NO_TRANSITION}",
        outcome=lambda c: c.ignore(f"no callback transition for {c.state}"),
    ),
    _rule(
        [_C_RUNNING],
        when="not running",
        then="ignore",
        why="A running event of a callback no longer tracked is stale.",
        outcome=lambda c: c.ignore(f"{c.key!r} is not running: stale event"),
        running=False,
    ),
    _rule(
        [_C_RUNNING],
        when="the callback is running already",
        applies=lambda c: c.known is _C_RUNNING,
        then="ignore",
        why="Reported once.",
        outcome=lambda c: c.ignore("callback already running"),
    ),
    _rule(
        [_C_RUNNING],
        when="otherwise",
        then="emit running",
        why="The callback's row says it runs (the provider never does).",
        outcome=lambda c: Decision((EmitEvent(c.key, _C_RUNNING),), c.attempts),
    ),
    _NOT_RUNNING_DUPLICATE,
    _rule(
        [_C_FAILED],
        when="this pod's failure was requeued",
        applies=_Case.requeued_pod,
        then="ignore",
        why="A later event of a requeued pod is no new failure.",
        outcome=lambda c: c.ignore("duplicate failure of a pod already requeued"),
        record=True,
    ),
    _rule(
        [_C_FAILED],
        when="the pod failed before the callback ran and launch retries remain",
        applies=_callback_requeues,
        then="clean the pod up, requeue the job; count the launch",
        why="callback_launch_failure_retries: the callback's code never ran.",
        outcome=_callback_requeue,
        record=True,
    ),
    _rule(
        [_C_FAILED],
        when="otherwise",
        then="clean the pod up, free the slot, emit failed with its details; drop the record",
        why="The callback failed.",
        outcome=lambda c: c.settled(
            *c.cleanup(),
            FreeSlot(c.key),
            EmitEvent(c.key, _C_FAILED, describe_failure(c.result.failure_details)),
        ),
    ),
    _rule(
        [_C_SUCCESS],
        when="otherwise",
        then="clean the pod up, free the slot, emit success; drop the attempt record",
        why="The callback's pod Succeeded.",
        outcome=lambda c: c.settled(*c.cleanup(), FreeSlot(c.key), EmitEvent(c.key, _C_SUCCESS)),
    ),
    _rule(
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
    _rule(
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
    _rule(
        None,
        when="the pod's failure was requeued",
        applies=lambda c: bool(c.result.pod_name) and c.requeued_pod(),
        then="ignore",
        why="A stale result: the requeued launch decides.",
        outcome=lambda c: c.ignore("duplicate result of a pod already requeued"),
        record=True,
    ),
    _rule(
        [TaskInstanceState.RUNNING, _C_RUNNING],
        when="always",
        then="ignore",
        why="The pod's final event still decides.",
        outcome=lambda c: c.ignore(f"{c.gave_up()}; the pod's final event decides"),
    ),
    _rule(
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
    _rule(
        [_COMPLETED],
        when="always",
        then="free the slot if running, clean the pod up, ignore; drop the attempt record",
        why="An adopted Succeeded task pod only needs cleaning up: its task recorded its end.",
        outcome=_give_up(lambda c: Ignore(f"{c.gave_up()}; the task recorded its own end")),
    ),
    _rule(
        None,
        when="the task instance state was read and is what the decision would report (a "
        "Succeeded pod, a finished task)",
        applies=_known_is_the_result,
        then="free the slot, emit the state read, clean the pod up; drop the attempt record",
        why="The state read is what the decision would have reported.",
        outcome=_give_up(_report_known),
    ),
    _rule(
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
    _rule(
        None,
        when="the callback is terminal",
        applies=_terminal,
        then="free the slot if running, clean the pod up, ignore; drop the attempt record",
        why=_NEVER_OVERWRITTEN,
        outcome=_give_up(_keep),
    ),
    _rule(
        None,
        when="otherwise",
        then="free the slot if running, emit failed, clean the pod up; drop the attempt record",
        why="Handling gave up: the workload is reported FAILED and no longer tracked.",
        outcome=_give_up(_failed_report),
    ),
)
"""The rules when handling a callback result keeps failing (:func:`handling_failed`)."""


_STATES: Final = (*TaskInstanceState, *CallbackState, *ExecutorPseudoState)


_Key: TypeAlias = "tuple[_ResultState | None, bool, bool]"
_Rows: TypeAlias = Mapping[_Key, tuple[tuple["_Test | None", "_Outcome"], ...]]


def _by_state(table: tuple[Rule, ...], states: Iterable[_ResultState]) -> _Rows:
    # The rows for each (state, running, has an attempt record), in table order, as
    # (test, outcome) pairs (no test: always): a result is tested only against the rows
    # about it. State None holds the rows for any other state.
    def rows(key: _Key) -> tuple[tuple[_Test | None, _Outcome], ...]:
        state, running, record = key
        return tuple(
            (None if rule.applies is _always else rule.applies, rule.outcome)
            for rule in table
            if rule.fits(state, running=running, record=record)
        )

    keys = [(state, running, record) for state in (*states, None) for running in (True, False)
            for record in (True, False)]  # fmt: skip
    return {key: rows(key) for key in keys}


_TASK_ROWS: Final = _by_state(TASK_RULES, _STATES)
_CALLBACK_ROWS: Final = _by_state(CALLBACK_RULES, _STATES)
_TASK_GIVE_UP_ROWS: Final = _by_state(TASK_GIVE_UP_RULES, _STATES)
_CALLBACK_GIVE_UP_ROWS: Final = _by_state(CALLBACK_GIVE_UP_RULES, _STATES)


def _run(rows: _Rows, case: _Case) -> Decision:
    # The rows of this state (or of any state), running or not, with a record or not: the
    # first that applies decides. Every entry point calls this one function (hot path).
    running, record = bool(case.running), case.attempt is not None
    for applies, outcome in rows.get((case.state, running, record)) or rows[None, running, record]:
        if applies is None or applies(case):
            return outcome(case)
    # Every table ends with a row for any state.
    msg = f"no rule for {case.state}"  # pragma: no cover
    raise AssertionError(msg)  # pragma: no cover


def describe_rules(table: tuple[Rule, ...]) -> str:
    """A decision table as a Markdown table (state, when, then, why), for the docs."""
    lines = ["| result state | when | then | why |", "| --- | --- | --- | --- |"]
    for rule in table:
        states = (
            "any" if rule.states is None else ", ".join(sorted(state.name for state in rule.states))
        )
        lines.append(f"| {states} | {rule.when} | {rule.then} | {rule.why} |")
    return "\n".join(lines)


_TABLES: Final = (
    ("Task results: `decide_task`", "TASK_RULES", TASK_RULES),
    ("Callback results: `decide_callback`", "CALLBACK_RULES", CALLBACK_RULES),
    ("Giving up on a task result: `handling_failed`", "TASK_GIVE_UP_RULES", TASK_GIVE_UP_RULES),
    (
        "Giving up on a callback result: `handling_failed`",
        "CALLBACK_GIVE_UP_RULES",
        CALLBACK_GIVE_UP_RULES,
    ),
)


def _rules_document() -> str:
    # docs/decision-rules.md, generated (scripts/decision_rules.py) and tested against.
    parts = [
        "# Decision rules",
        "",
        (
            "<!-- Generated from k8s_workloads.decisions by scripts/decision_rules.py: "
            "do not edit. -->"
        ),
        "",
        (
            "What the executor does with each result, as the tables the code runs "
            "(`k8s_workloads.decisions`). For each result the rows about its state are read "
            "top to bottom; the first that applies decides. A row's *then* lists the actions, "
            "in order; *ignore* and *look up* are said beside the actions (`Decision.note`), "
            "never among them."
        ),
    ]
    for title, name, table in _TABLES:
        parts += ["", f"## {title}", "", f"`{name}`:", "", describe_rules(table)]
    return "\n".join(parts) + "\n"


# --- the decisions --------------------------------------------------------------------


def decide_task(
    result: TaskResult,
    *,
    running: bool,
    config: DecisionConfig = DecisionConfig(),  # frozen: one shared default is safe
    attempts: Attempts = Attempts(),
    ti_state: TaskInstanceState | StateNotRead | None = UNKNOWN,
) -> Decision:
    """The provider's ``_change_state`` for a task result, as actions (:data:`TASK_RULES`).

    ``running`` says whether the key is in the executor's ``running`` set. ``ti_state`` is
    the task instance's state in the database once looked up (None: no row or no state);
    while it is :data:`UNKNOWN` a decision that needs it sets ``look_up``.
    """
    return _run(_TASK_ROWS, _Case(result, running, config, attempts, ti_state))


def decide_callback(
    result: CallbackResult,
    *,
    running: bool,
    config: DecisionConfig = DecisionConfig(),  # frozen: one shared default is safe
    attempts: Attempts = Attempts(),
    callback_state: CallbackState | StateNotRead | None = UNKNOWN,
) -> Decision:
    """A callback result as actions, with the workload-state rules (:data:`CALLBACK_RULES`).

    When ``callback_state`` (the callback's row in Airflow) is given, only an active
    callback (pending, queued, running) may move to success or failure; a terminal one is
    never overwritten. Without it, success is emitted only for a pod that Succeeded.
    """
    return _run(_CALLBACK_ROWS, _Case(result, running, config, attempts, callback_state))


def decide(
    result: WorkloadResult,
    *,
    running: bool,
    config: DecisionConfig = DecisionConfig(),  # frozen: one shared default is safe
    attempts: Attempts = Attempts(),
    known_state: KnownState = UNKNOWN,
) -> Decision:
    """Dispatch on the result's kind: :func:`decide_callback` or :func:`decide_task`."""
    if isinstance(result, CallbackResult):
        callback_state = known_state if not isinstance(known_state, TaskInstanceState) else UNKNOWN
        return _run(_CALLBACK_ROWS, _Case(result, running, config, attempts, callback_state))
    ti_state = known_state if not isinstance(known_state, CallbackState) else UNKNOWN
    return _run(_TASK_ROWS, _Case(result, running, config, attempts, ti_state))


def handling_failed(
    result: WorkloadResult,
    error: BaseException,
    *,
    running: bool,
    failures_so_far: int,
    attempts: Attempts = Attempts(),
    config: DecisionConfig = DecisionConfig(),  # frozen: one shared default is safe
    known_state: KnownState = UNKNOWN,
) -> Decision:
    """What to do when handling a result raised (a database read or a pod API call failed).

    The rows are :data:`TASK_GIVE_UP_RULES` and :data:`CALLBACK_GIVE_UP_RULES`. Retry it
    on a later pass (``Decision.retry``) — never inside the same drain loop, which is how
    the provider can spin forever on one result (#35888, reference §7.1) — at most
    ``max_handling_retries`` times. The caller keeps ``failures_so_far`` per result
    (``RetryLater.failures``) and passes ``running`` (is the key in ``running`` *now*)
    and, if it read one before the failure, the workload's ``known_state``. Then it gives
    up:

    * a workload no longer running was settled by another result: nothing to report;
    * a stale result (a pod whose failure was requeued, a vanished earlier launch), a
      ``RUNNING`` result (the pod's final event still decides) and an ``ADOPTED`` one (it
      needs no call) are handled as :func:`decide` handles them;
    * a callback known to be terminal is never overwritten; a task whose state was read
      is reported with it where :func:`decide` would (a Succeeded pod, a finished task);
      an adopted ``COMPLETED`` task pod only needs cleaning up (its task recorded its
      own end);
    * otherwise the workload is reported FAILED and no longer tracked.

    The event comes first; the pod clean-up follows (delete or done label, as the pod's
    own outcome calls for: a Succeeded pod is not kept as a failed one), best effort: if
    it fails again, a watch restart shows the pod once more and, the workload no longer
    running, it is ignored as a duplicate.
    """
    rows = _CALLBACK_GIVE_UP_ROWS if isinstance(result.key, CallbackKey) else _TASK_GIVE_UP_ROWS
    case = _Case(result, running, config, attempts, known_state, error, failures_so_far)
    return _run(rows, case)


if TYPE_CHECKING:
    CreateErrorDecision = CreateErrorVerdict
else:

    def __getattr__(name: str) -> object:
        return _renamed(__name__, name)

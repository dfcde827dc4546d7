"""How a decision table is written and read: :class:`Rule`, the case a rule reads, and
the rows several tables share.

A :class:`Rule` names the result states it is about, when it applies (the text beside
the code), what it does and why. The tables themselves are in
:mod:`~k8s_workloads.decisions.tables`; :mod:`~k8s_workloads.decisions.results` runs
them. :data:`UNKNOWN` is what an executor knows of a state it has not read.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final, TypeAlias

import attrs

from k8s_workloads.decisions.actions import (
    Action,
    Decision,
    DeletePod,
    FreeSlot,
    Ignore,
    LookUpState,
    PatchLabels,
    RequeueJob,
)
from k8s_workloads.keys import TaskInstanceKey, WorkloadKey
from k8s_workloads.pods.labels import POD_EXECUTOR_DONE_LABEL, TRUE_LABEL_VALUE
from k8s_workloads.states import (
    CallbackState,
    ExecutorPseudoState,
    TaskInstanceState,
    WorkloadResult,
)

if TYPE_CHECKING:
    from k8s_workloads.config import DecisionConfig
    from k8s_workloads.decisions.attempts import Attempt, Attempts

__all__ = ["UNKNOWN", "KnownState", "Rule", "StateNotRead", "cleanup_actions"]


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


def is_waiting_failure(result: WorkloadResult) -> bool:
    """Whether ``result`` is a failure of a pod that is still Pending (its failure details
    say so): a launch that never started and has not ended."""
    details = result.failure_details
    return details is not None and details.get("pod_status") == "Pending"


def cleanup_actions(result: WorkloadResult, config: DecisionConfig) -> list[Action]:
    """What is done with a settled result's pod: deleted (``delete_worker_pods``), except a
    failed one kept for debugging (``delete_worker_pods_on_failure`` off), which is labelled
    done if ``mark_kept_failed_pods_done``; with ``delete_worker_pods`` off, labelled done.
    A vanished pod is gone already; a Succeeded pod is never kept as a failed one.

    A pod failed while still Pending (a container waiting for a reason that does not pass:
    a failed pull, a bad config) is always deleted: it has not ended, and kept, it would
    start once its cause passes (a registry back) and run the workload a second time."""
    if result.state is ExecutorPseudoState.VANISHED:
        return []
    failed = result.state is TaskInstanceState.FAILED or result.state is CallbackState.FAILED
    if failed and is_waiting_failure(result):
        return [DeletePod(result.pod_name, result.namespace)]
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


def _frozen_states(states: Iterable[_ResultState] | None) -> frozenset[_ResultState] | None:
    return None if states is None else frozenset(states)


@attrs.frozen
class Rule:
    """One row of a decision table: the states it is about, then by name ``when`` (the
    text) beside ``applies`` (the code for the rest of it), what it does and why. The
    first row that applies to a result decides."""

    states: frozenset[_ResultState] | None = attrs.field(converter=_frozen_states)
    """The result states the row is about (any iterable of them is taken); None: any."""
    when: str
    then: str
    why: str
    applies: _Test = attrs.field(default=_always, eq=False, repr=False, kw_only=True)
    """The rest of ``when``, beyond the state and the two columns below."""
    outcome: _Outcome = attrs.field(eq=False, repr=False, kw_only=True)
    running: bool | None = attrs.field(default=None, kw_only=True)
    """Only while the key is in ``running`` (True), only while it is not (False), or either."""
    record: bool | None = attrs.field(default=None, kw_only=True)
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
    Rule(
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
    Rule(
        [_ADOPTED],
        when="not running",
        then="ignore; drop the attempt record",
        why="Another scheduler owns the workload now; this one was not tracking it.",
        outcome=lambda c: Decision((), c.attempts.without(c.key), Ignore("adopted, not running")),
        running=False,
    ),
    Rule(
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


_STALE_LAUNCH: Final = Rule(
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


def _not_running(states: Iterable[_ResultState] | None, *, why: str, what: str = "") -> Rule:
    """The row of a result for a workload this executor does not track (any more): it
    is ignored, saying ``what`` it was."""
    said = f": {what}" if what else ""
    return Rule(
        states,
        when="not running",
        then="ignore",
        why=why,
        outcome=lambda c: c.ignore(f"{c.key!r} is not running{said}"),
        running=False,
    )


_NOT_RUNNING_DUPLICATE: Final = _not_running(
    None,
    why="A repeated terminal event (MODIFIED then DELETED is normal): no event, and unlike "
    "the provider (§7.3.3) no second delete or patch either.",
    what="duplicate result",
)
_NOT_RUNNING_VANISHED: Final = _not_running(
    [_VANISHED], why="Settled already (by another result, or never this executor's)."
)

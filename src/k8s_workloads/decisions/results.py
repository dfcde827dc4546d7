"""What an executor does with each result: :func:`decide` and :func:`handling_failed`.

Every function here takes what the executor knows — the result, whether the workload is
still running, the configuration, the immutable attempt bookkeeping — and returns a
:class:`~k8s_workloads.decisions.actions.Decision`: the actions to perform, in order, and
the new bookkeeping. The executor performs them (delete the pod, emit the event…); the
library never calls the API or the database. Where a decision needs the workload's state
from the database, it says so in ``Decision.look_up`` instead, and the executor asks again
with the state it read.

The rules are the rows of :mod:`~k8s_workloads.decisions.tables`; the first row that
applies decides. :func:`describe_rules` renders the tables for the documentation, which is
tested against them. Results are dispatched on the key's type before anything
task-specific happens, so no task rule (a task-instance database lookup, a try-number log
line) ever sees a callback key: the crash loop of the callback pull requests (reference
§7.1) cannot happen. A generic workload's result (:class:`~k8s_workloads.keys.GenericKey`)
is decided by the callback rules: it runs once and is reported SUCCESS or FAILED, with no
retry by a scheduler; the rows name callbacks, and hold for both. Everything here depends
only on its arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final, TypeAlias

from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.attempts import Attempts
from k8s_workloads.decisions.rules import (
    UNKNOWN,
    KnownState,
    Rule,
    StateNotRead,
    _always,
    _Case,
    _Outcome,
    _ResultState,
    _Test,
)
from k8s_workloads.decisions.tables import (
    CALLBACK_GIVE_UP_RULES,
    CALLBACK_RULES,
    TASK_GIVE_UP_RULES,
    TASK_RULES,
)
from k8s_workloads.keys import RUN_ONCE_KEYS
from k8s_workloads.states import (
    CallbackResult,
    CallbackState,
    ExecutorPseudoState,
    GenericResult,
    TaskInstanceState,
    TaskResult,
    WorkloadResult,
)
from k8s_workloads.watch.failures import describe_fatal_pending_reasons

if TYPE_CHECKING:
    from k8s_workloads.decisions.actions import Decision

__all__ = [
    "decide",
    "decide_callback",
    "decide_task",
    "describe_rules",
    "handling_failed",
]

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
    (
        "Callback and generic workload results: `decide_callback`",
        "CALLBACK_RULES",
        CALLBACK_RULES,
    ),
    ("Giving up on a task result: `handling_failed`", "TASK_GIVE_UP_RULES", TASK_GIVE_UP_RULES),
    (
        "Giving up on a callback or generic workload result: `handling_failed`",
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
    parts += [
        "",
        "## Pending pods that never start: `ResolverConfig.fatal_pending_reasons`",
        "",
        (
            "A Pending pod fails at once (a FAILED result, its waiting reason in the failure "
            "details) when an init container or the first main container waits for one of these "
            "reasons (`k8s_workloads.watch.failures.FATAL_PENDING_REASONS`, the default of "
            "`fatal_pending_reasons`; `pending=PendingPolicy()` replaces it with grace "
            "periods). Unlike the provider's default it has `ImagePullBackOff` and "
            "`ErrImageNeverPull`. An image pull held back by the kubelet's own rate limit "
            "(`pull QPS exceeded`) never fails a pod."
        ),
        "",
        describe_fatal_pending_reasons(),
    ]
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
    result: CallbackResult | GenericResult,
    *,
    running: bool,
    config: DecisionConfig = DecisionConfig(),  # frozen: one shared default is safe
    attempts: Attempts = Attempts(),
    callback_state: CallbackState | StateNotRead | None = UNKNOWN,
) -> Decision:
    """A callback (or generic workload's) result as actions, with the workload-state
    rules (:data:`CALLBACK_RULES`).

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
    """Dispatch on the result's kind: :func:`decide_callback` (callbacks and generic
    workloads) or :func:`decide_task`."""
    if isinstance(result, (CallbackResult, GenericResult)):
        callback_state = known_state if not isinstance(known_state, TaskInstanceState) else UNKNOWN
        return decide_callback(
            result, running=running, config=config, attempts=attempts, callback_state=callback_state
        )
    ti_state = known_state if not isinstance(known_state, CallbackState) else UNKNOWN
    return decide_task(result, running=running, config=config, attempts=attempts, ti_state=ti_state)


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
    rows = _CALLBACK_GIVE_UP_ROWS if isinstance(result.key, RUN_ONCE_KEYS) else _TASK_GIVE_UP_ROWS
    case = _Case(result, running, config, attempts, known_state, error, failures_so_far)
    return _run(rows, case)

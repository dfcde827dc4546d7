"""What an executor does with each result: actions as values, never calls.

Every function here takes what the executor knows — the result, whether the workload is
still running, the configuration, the immutable attempt bookkeeping — and returns a
:class:`Decision`: the actions to perform, in order, and the new bookkeeping. The
executor performs them (delete the pod, emit the event…); the library never calls the
API or the database. Where a decision needs the task instance's state from the database,
it returns a :class:`LookUpState` action instead, and the executor asks again with the
state it read.

Results are dispatched on the key's type before anything task-specific happens, so no
task rule (a task-instance database lookup, a try-number log line) ever sees a callback
key: the crash loop of the callback pull requests (reference §7.1) cannot happen.
"""

from __future__ import annotations

import enum
import json
import types
from collections.abc import Mapping
from typing import Any, Final, TypeAlias, cast

import attrs
import immutables

from k8s_workloads import _config as _checks
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
    KubernetesJob,
    TaskInstanceState,
    TaskResult,
    WorkloadResult,
    state_class_for_key,
)

__all__ = [
    "UNKNOWN",
    "Action",
    "Attempt",
    "Attempts",
    "CreateErrorDecision",
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
    "StateNotRead",
    "classify_create_error",
    "cleanup_actions",
    "decide",
    "decide_callback",
    "decide_task",
    "describe_action",
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


# --- actions --------------------------------------------------------------------------


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
    body: the API server answers 409 otherwise). Adoption sets it, so that of two
    schedulers taking over one pod, only one does."""


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
class LookUpState:
    """Read the task instance's state from Airflow, then call the decision again with it."""

    key: TaskInstanceKey
    why: str


@attrs.frozen
class Ignore:
    """Do nothing; ``reason`` says why (a duplicate, a terminal callback …)."""

    reason: str


@attrs.frozen
class RetryLater:
    """Handle the same result again on a later pass (its handling failed; see
    :func:`handling_failed`); pass ``failures`` as ``failures_so_far`` then."""

    failures: int
    reason: str


Action: TypeAlias = (
    EmitEvent | DeletePod | PatchLabels | RequeueJob | FreeSlot | LookUpState | RetryLater | Ignore
)


# --- bookkeeping ----------------------------------------------------------------------


@attrs.frozen
class Attempt:
    """Pod launches of one workload: the job to requeue and how often it was requeued."""

    job: KubernetesJob[Any]
    attempts: int = 0
    requeued_for_pod: str | None = None
    """The pod whose failure was requeued last (the provider's record)."""
    requeued_pods: frozenset[str] = frozenset()
    """Every pod whose failure was requeued: more events for any of them are stale."""
    requeued_uids: frozenset[str] = frozenset()
    """The uids of those pods, where known: launches can share a pod name, never a uid."""

    def was_requeued(self, pod_name: str | None, pod_uid: str | None = None) -> bool:
        """Whether this pod's failure was already requeued (its later events are stale).

        With the pod's uid, and uids recorded, the uid decides: a new launch under a
        fixed pod name (a fixed ``pod_id`` or an override's ``metadata.name``) is not its
        predecessor. Without one, the name does, as the provider's record does."""
        if pod_uid is not None and self.requeued_uids:
            return pod_uid in self.requeued_uids
        return pod_name == self.requeued_for_pod or pod_name in self.requeued_pods


class Attempts:
    """Immutable attempt records by key; every decision returns the new value.

    A persistent map (``immutables.Map``, a hash array mapped trie): a new value shares
    all but O(log n) of the records of the one it came from, so one write costs well
    under a microsecond at 100,000 records and no write ever copies them all.
    """

    __slots__ = ("_map",)

    _map: immutables.Map[WorkloadKey, Attempt]

    def __init__(self, records: Mapping[WorkloadKey, Attempt] | None = None) -> None:
        base = dict(records) if records else {}
        for key, attempt in base.items():
            if not isinstance(cast("object", attempt), Attempt):
                msg = f"records[{key!r}]: expected an Attempt, got {type(attempt).__name__}"
                raise TypeError(msg)
        object.__setattr__(self, "_map", immutables.Map(base))

    @classmethod
    def _of(cls, records: immutables.Map[WorkloadKey, Attempt]) -> Attempts:
        new = cls.__new__(cls)
        object.__setattr__(new, "_map", records)
        return new

    def __setattr__(self, name: str, value: object) -> None:
        raise attrs.exceptions.FrozenInstanceError

    def __delattr__(self, name: str) -> None:
        raise attrs.exceptions.FrozenInstanceError

    def get(self, key: WorkloadKey) -> Attempt | None:
        return self._map.get(key)

    def __len__(self) -> int:
        return len(self._map)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, (TaskInstanceKey, CallbackKey)) and key in self._map

    @property
    def records(self) -> Mapping[WorkloadKey, Attempt]:
        """Every record, as a read-only mapping (a snapshot: O(n log n), for inspection).

        In the keys' ``repr`` order: the trie's own order follows the hash seed.
        """
        items = sorted(self._map.items(), key=lambda item: repr(item[0]))
        return types.MappingProxyType(dict(items))

    def with_record(self, key: WorkloadKey, attempt: Attempt) -> Attempts:
        return self._of(self._map.set(key, attempt))

    def without(self, key: WorkloadKey) -> Attempts:
        if key not in self._map:
            return self
        return self._of(self._map.delete(key))

    def launched(self, job: KubernetesJob[Any]) -> Attempts:
        """Record a job handed to pod creation (keeps an existing count)."""
        existing = self.get(job.key)
        return self.with_record(job.key, existing or Attempt(job))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Attempts):
            return NotImplemented
        return self._map == other._map

    def __hash__(self) -> int:
        # A mapping's value: compared by content, so not hashable (as a dict).
        msg = "unhashable type: 'Attempts'"
        raise TypeError(msg)

    def __repr__(self) -> str:
        return f"Attempts({dict(self.records)!r})"


@attrs.frozen
class DecisionConfig:
    """The executor options the decisions read; defaults are the provider's.

    Every value is checked here: a wrong one is an :class:`InvalidConfig` naming it."""

    delete_worker_pods: bool = attrs.field(default=True, validator=_checks.boolean)
    delete_worker_pods_on_failure: bool = attrs.field(default=False, validator=_checks.boolean)
    mark_kept_failed_pods_done: bool = attrs.field(default=True, validator=_checks.boolean)
    """Label a failed pod kept for debugging ``airflow_executor_done=True``, so watch
    restarts and adoption stop re-reporting it (the provider leaves it, §7.3.2)."""
    pod_launch_failure_retries: int = attrs.field(default=1, validator=_checks.retries)
    """Requeue a task whose pod failed before the task ran: -1 unlimited, 0 never."""
    pod_launch_failure_excluded_container_reasons: frozenset[str] = attrs.field(
        default=frozenset({"Error"}), validator=_checks.text_set
    )
    callback_launch_failure_retries: int = attrs.field(default=0, validator=_checks.retries)
    """The same for callbacks, counted per callback; 0 (the provider's behaviour) never."""
    task_publish_max_retries: int = attrs.field(default=0, validator=_checks.retries)
    """Pod-creation retries for transient API errors: -1 unlimited, 0 never."""
    max_handling_retries: int = attrs.field(default=3, validator=_checks.count)
    """How often a result whose handling raised is retried before it becomes a failure."""
    max_retry_after_seconds: float = attrs.field(default=600.0, validator=_checks.seconds)
    """The longest pause a ``Retry-After`` header may ask for; a longer one is cut to
    this (the provider honours any value, so a huge one stops pod creation for good)."""


@attrs.frozen
class Decision:
    """The actions to perform, in order, and the bookkeeping to keep."""

    actions: tuple[Action, ...]
    attempts: Attempts

    @property
    def reason(self) -> str:
        """A one-line summary of the actions, for timelines and logs."""
        return "; ".join(describe_action(action) for action in self.actions) or "nothing to do"


def describe_action(action: Action) -> str:
    """One action as a short phrase (``emit failed``, ``delete pod p`` …), for logs."""
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
    if isinstance(action, LookUpState):
        return f"look up state ({action.why})"
    if isinstance(action, RetryLater):
        return f"retry later ({action.reason})"
    return f"ignore ({action.reason})"


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


def _adopted(result: WorkloadResult, *, running: bool, attempts: Attempts) -> Decision:
    # A pod leaves the watch (DELETED, no deletion timestamp) when another scheduler
    # relabels it, but also when this executor marked a failed pod done and requeued the
    # workload: that pod's "adoption" must not free the slot of the new launch.
    attempt = attempts.get(result.key)
    if attempt is not None and attempt.was_requeued(result.pod_name, result.pod_uid):
        return Decision((Ignore("a requeued workload's old pod left the watch"),), attempts)
    if not running:
        return Decision((Ignore("adopted, not running"),), attempts.without(result.key))
    return Decision((FreeSlot(result.key),), attempts.without(result.key))


_VANISHED_INFO = "the pod vanished while the watch was down; its final events were lost"


def _adopted_or_stale(
    result: WorkloadResult, *, running: bool, attempts: Attempts
) -> Decision | None:
    # The rows every result kind shares, before any kind-specific rule.
    if result.state is ExecutorPseudoState.ADOPTED:
        return _adopted(result, running=running, attempts=attempts)
    return _stale_vanished(result, attempts)


def _stale_vanished(result: WorkloadResult, attempts: Attempts) -> Decision | None:
    # A VANISHED result is made from a re-list; handled late (after a failed pass), the
    # workload may have been requeued meanwhile and its new pod must not be failed.
    if result.state is not ExecutorPseudoState.VANISHED or result.launch is None:
        return None
    attempt = attempts.get(result.key)
    if attempt is None or result.launch >= attempt.attempts:
        return None
    why = "the vanished pod was an earlier launch: the workload was requeued since"
    return Decision((Ignore(why),), attempts)


def _vanished_task(
    result: TaskResult,
    *,
    running: bool,
    attempts: Attempts,
    ti_state: TaskInstanceState | StateNotRead | None,
) -> Decision:
    # The task process records its own end state; a task that never got there died with
    # its pod.
    key = result.key
    if not running:
        return Decision((Ignore(f"{key!r} is not running"),), attempts)
    if ti_state is UNKNOWN:
        return Decision(
            (LookUpState(key, "did the task finish before its pod vanished?"),), attempts
        )
    if ti_state in TASK_FINISHED_STATES:
        return Decision((FreeSlot(key), EmitEvent(key, ti_state)), attempts.without(key))
    failed = EmitEvent(key, TaskInstanceState.FAILED, _VANISHED_INFO)
    return Decision((FreeSlot(key), failed), attempts.without(key))


def _may_retry(attempt: Attempt, limit: int) -> bool:
    return limit == -1 or attempt.attempts < limit


def _requeue(
    key: WorkloadKey,
    attempt: Attempt,
    *,
    pod_name: str,
    pod_uid: str | None,
    attempts: Attempts,
    what: str,
    limit: int,
) -> Decision:
    updated = attrs.evolve(
        attempt,
        attempts=attempt.attempts + 1,
        requeued_for_pod=pod_name,
        requeued_pods=attempt.requeued_pods | {pod_name},
        requeued_uids=attempt.requeued_uids | ({pod_uid} if pod_uid else set()),
    )
    shown_limit = "unlimited" if limit == -1 else str(limit)
    return Decision(
        (RequeueJob(attempt.job, f"{what} (try {updated.attempts} of {shown_limit})"),),
        attempts.with_record(key, updated),
    )


# --- tasks ----------------------------------------------------------------------------


def _is_pre_execution_failure(
    ti_state: TaskInstanceState | None, details: FailureDetails | None, excluded: frozenset[str]
) -> bool:
    # The task instance never reached RUNNING, so no task code ran (provider PR #69058);
    # an excluded container reason (default "Error") means the process did start.
    if ti_state is not TaskInstanceState.QUEUED:
        return False
    reason = (details or {}).get("container_reason")
    return not (reason and reason in excluded)


def _pre_execution_requeue(
    result: TaskResult,
    attempt: Attempt,
    attempts: Attempts,
    config: DecisionConfig,
    ti_state: TaskInstanceState | StateNotRead | None,
) -> Decision | None:
    """The provider's pod-launch-failure requeue (PR #69058), or None when it does not apply."""
    if ti_state is UNKNOWN:
        return Decision(
            (LookUpState(result.key, "did the pod fail before the task ran?"),), attempts
        )
    excluded = config.pod_launch_failure_excluded_container_reasons
    if not _is_pre_execution_failure(ti_state, result.failure_details, excluded):
        return None
    if not _may_retry(attempt, config.pod_launch_failure_retries):
        return None
    requeue = _requeue(
        result.key,
        attempt,
        pod_name=result.pod_name,
        pod_uid=result.pod_uid,
        attempts=attempts,
        what="pod failed before the task ran",
        limit=config.pod_launch_failure_retries,
    )
    cleanup = cleanup_actions(result, config)
    return Decision((*cleanup, *requeue.actions), requeue.attempts)


def decide_task(
    result: TaskResult,
    *,
    running: bool,
    config: DecisionConfig = DecisionConfig(),  # frozen: one shared default is safe
    attempts: Attempts = Attempts(),
    ti_state: TaskInstanceState | StateNotRead | None = UNKNOWN,
) -> Decision:
    """The provider's ``_change_state`` for a task result, as actions.

    ``running`` says whether the key is in the executor's ``running`` set. ``ti_state`` is
    the task instance's state in the database once looked up (None: no row or no state);
    while it is :data:`UNKNOWN` a decision that needs it returns :class:`LookUpState`.
    """
    key, state = result.key, result.state
    if state is ExecutorPseudoState.ADOPTED:
        return _adopted(result, running=running, attempts=attempts)
    if state is TaskInstanceState.RUNNING:
        return Decision((EmitEvent(key, TaskInstanceState.RUNNING),), attempts)
    if state is ExecutorPseudoState.VANISHED:
        return _stale_vanished(result, attempts) or _vanished_task(
            result, running=running, attempts=attempts, ti_state=ti_state
        )
    if state is ExecutorPseudoState.COMPLETED:
        # An adopted pod that had Succeeded under a dead scheduler: only clean it up.
        return Decision(tuple(cleanup_actions(result, config)), attempts)
    if not running:
        # A repeated terminal event (MODIFIED then DELETED is normal): no event, and unlike
        # the provider (§7.3.3) no second delete or patch either.
        return Decision((Ignore(f"{key!r} is not running: duplicate result"),), attempts)
    failed = state is TaskInstanceState.FAILED
    attempt = attempts.get(key)
    if failed and attempt is not None and config.pod_launch_failure_retries != 0:
        if attempt.was_requeued(result.pod_name, result.pod_uid):
            return Decision((Ignore("duplicate failure of a pod already requeued"),), attempts)
        requeued = _pre_execution_requeue(result, attempt, attempts, config, ti_state)
        if requeued is not None:
            return requeued
    cleanup = cleanup_actions(result, config)
    if state is ExecutorPseudoState.LOOKUP:
        if ti_state is UNKNOWN:
            return Decision((LookUpState(key, "the pod succeeded"),), attempts)
        if ti_state is None:
            # The provider emits a None state here (#35888); there is nothing to report.
            nothing = Ignore("no task instance state to report")
            return Decision((*cleanup, FreeSlot(key), nothing), attempts.without(key))
        return Decision((*cleanup, FreeSlot(key), EmitEvent(key, ti_state)), attempts.without(key))
    info = describe_failure(result.failure_details) if failed else None
    return Decision((*cleanup, FreeSlot(key), EmitEvent(key, state, info)), attempts.without(key))


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


def _terminal_callback(
    result: CallbackResult,
    callback_state: CallbackState,
    *,
    running: bool,
    attempts: Attempts,
    config: DecisionConfig,
) -> Decision:
    # Never overwritten; but a finished pod is still cleaned up and its slot freed.
    keep = Ignore(f"callback is already {callback_state.value}: never overwritten")
    if result.state is ExecutorPseudoState.COMPLETED:
        # An adopted, finished pod is never tracked as running: cleaning it up is the point.
        freed = (FreeSlot(result.key),) if running else ()
        cleanup = cleanup_actions(result, config)
        return Decision((*cleanup, *freed, keep), attempts.without(result.key))
    finished = result.state in {
        CallbackState.SUCCESS,
        CallbackState.FAILED,
        ExecutorPseudoState.VANISHED,
    }
    if not (finished and running):
        return Decision((keep,), attempts)
    return Decision(
        (*cleanup_actions(result, config), FreeSlot(result.key), keep), attempts.without(result.key)
    )


def _callback_pseudo_state(
    result: CallbackResult, *, running: bool, attempts: Attempts, config: DecisionConfig
) -> Decision:
    key, state = result.key, result.state
    if state is ExecutorPseudoState.VANISHED:
        # Nothing says the callback succeeded, so it did not (success is never assumed).
        if not running:
            return Decision((Ignore(f"{key!r} is not running"),), attempts)
        failed = EmitEvent(key, CallbackState.FAILED, _VANISHED_INFO)
        return Decision((FreeSlot(key), failed), attempts.without(key))
    if state is ExecutorPseudoState.COMPLETED:
        # A callback pod that Succeeded while no scheduler watched it (adopted after a
        # restart): it exited 0, so the callback succeeded, and nothing else will say so.
        cleanup = cleanup_actions(result, config)
        freed = (FreeSlot(key),) if running else ()
        success = EmitEvent(key, CallbackState.SUCCESS)
        return Decision((*cleanup, *freed, success), attempts.without(key))
    # LOOKUP has no meaning for a callback and is never taken as success.
    return Decision((Ignore(f"no callback transition for {state}"),), attempts)


def decide_callback(
    result: CallbackResult,
    *,
    running: bool,
    config: DecisionConfig = DecisionConfig(),  # frozen: one shared default is safe
    attempts: Attempts = Attempts(),
    callback_state: CallbackState | StateNotRead | None = UNKNOWN,
) -> Decision:
    """A callback result as actions, with the workload-state rules.

    When ``callback_state`` (the callback's row in Airflow) is given, only an active
    callback (pending, queued, running) may move to success or failure; a terminal one is
    never overwritten. Without it, success is emitted only for a pod that Succeeded.
    """
    key, state = result.key, result.state
    early = _adopted_or_stale(result, running=running, attempts=attempts)
    if early is not None:
        return early
    if isinstance(callback_state, CallbackState) and callback_state in CALLBACK_TERMINAL_STATES:
        return _terminal_callback(
            result, callback_state, running=running, attempts=attempts, config=config
        )
    if isinstance(state, ExecutorPseudoState):
        return _callback_pseudo_state(result, running=running, attempts=attempts, config=config)
    if state is CallbackState.RUNNING:
        if not running:
            return Decision((Ignore(f"{key!r} is not running: stale event"),), attempts)
        if callback_state is CallbackState.RUNNING:
            return Decision((Ignore("callback already running"),), attempts)
        return Decision((EmitEvent(key, CallbackState.RUNNING),), attempts)
    if not running:
        return Decision((Ignore(f"{key!r} is not running: duplicate result"),), attempts)
    if state is CallbackState.FAILED:
        attempt = attempts.get(key)
        if attempt is not None and attempt.was_requeued(result.pod_name, result.pod_uid):
            return Decision((Ignore("duplicate failure of a pod already requeued"),), attempts)
        cleanup = cleanup_actions(result, config)
        if (
            attempt is not None
            and config.callback_launch_failure_retries != 0
            and _callback_pre_execution(result.failure_details)
            and _may_retry(attempt, config.callback_launch_failure_retries)
        ):
            requeue = _requeue(
                key,
                attempt,
                pod_name=result.pod_name,
                pod_uid=result.pod_uid,
                attempts=attempts,
                what="callback pod failed before it ran",
                limit=config.callback_launch_failure_retries,
            )
            return Decision((*cleanup, *requeue.actions), requeue.attempts)
        emit = EmitEvent(key, CallbackState.FAILED, describe_failure(result.failure_details))
        return Decision((*cleanup, FreeSlot(key), emit), attempts.without(key))
    if state is CallbackState.SUCCESS:
        cleanup = cleanup_actions(result, config)
        return Decision(
            (*cleanup, FreeSlot(key), EmitEvent(key, CallbackState.SUCCESS)), attempts.without(key)
        )
    # Anything else (LOOKUP, a queued/pending state from a result) is never taken as success.
    return Decision((Ignore(f"no callback transition for {state}"),), attempts)


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

    Retry it on a later pass (:class:`RetryLater`) — never inside the same drain loop,
    which is how the provider can spin forever on one result (#35888, reference §7.1) — at
    most ``max_handling_retries`` times. The caller keeps ``failures_so_far`` per result
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
    key = result.key
    if failures_so_far < config.max_handling_retries:
        retry = RetryLater(
            failures_so_far + 1,
            f"handling failed ({error!r}); "
            f"{failures_so_far + 1} of {config.max_handling_retries} retries",
        )
        return Decision((retry,), attempts)
    state = result.state
    gave_up = f"gave up after {failures_so_far + 1} failed attempts ({error!r})"
    early = _adopted_or_stale(result, running=running, attempts=attempts)
    if early is not None:
        return early
    attempt = attempts.get(key)
    if (
        attempt is not None
        and result.pod_name
        and attempt.was_requeued(result.pod_name, result.pod_uid)
    ):
        return Decision((Ignore("duplicate result of a pod already requeued"),), attempts)
    if state is TaskInstanceState.RUNNING or state is CallbackState.RUNNING:
        return Decision((Ignore(f"{gave_up}; the pod's final event decides"),), attempts)
    completed = state is ExecutorPseudoState.COMPLETED
    if not (running or completed):
        return Decision(
            (Ignore(f"{gave_up}; {key!r} is not running: nothing to report"),), attempts
        )
    # The pod is cleaned up as its own outcome says, whatever is reported.
    cleanup = cleanup_actions(result, config)
    freed: tuple[Action, ...] = (FreeSlot(key),) if running else ()
    report: Action
    failed = EmitEvent(key, state_class_for_key(key).FAILED, f"handling the pod's result {gave_up}")
    if isinstance(key, CallbackKey):
        if isinstance(known_state, CallbackState) and known_state in CALLBACK_TERMINAL_STATES:
            report = Ignore(f"callback is already {known_state.value}: never overwritten")
        else:
            report = failed
    elif completed:
        report = Ignore(f"{gave_up}; the task recorded its own end")
    elif isinstance(known_state, TaskInstanceState) and (
        state is ExecutorPseudoState.LOOKUP or known_state in TASK_FINISHED_STATES
    ):
        # The state read is what the decision would have reported.
        report = EmitEvent(key, known_state)
    else:
        report = failed
    return Decision((*freed, report, *cleanup), attempts.without(key))


# --- pod creation errors --------------------------------------------------------------

_TRANSIENT_5XX = frozenset({500, 502, 503, 504})


@attrs.frozen
class CreateErrorDecision:
    """Retry the pod creation (after ``delay`` seconds, if given) or fail the workload."""

    retry: bool
    reason: str
    delay: float | None = None
    """Seconds to pause all pod creation (429 or a ``Retry-After`` header)."""
    message: str = ""


def _error_message(body: object, reason: str | None) -> str:
    # The API server's Status JSON carries "message"; an empty body falls back to the HTTP
    # reason and a body that is not JSON is the message itself (a plain-text 429).
    if body is None or (isinstance(body, (str, bytes)) and not body):
        return reason or ""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, Mapping):
        message = body.get("message")
        return message if isinstance(message, str) else ""
    if isinstance(body, str):
        try:
            parsed = json.loads(body)
        except ValueError:
            return body
        if isinstance(parsed, Mapping):
            message = parsed.get("message")
            return message if isinstance(message, str) else ""
        return body
    return str(body)


def _retry_after(headers: Mapping[str, str] | None) -> int | None:
    if not headers:
        return None
    for name, value in headers.items():
        if name.lower() == "retry-after":
            try:
                seconds = int(value)
            except (TypeError, ValueError):
                return None  # a malformed header is ignored, as the provider does
            return seconds if seconds >= 0 else None
    return None


def classify_create_error(
    status: int | None,
    body: object = None,
    headers: Mapping[str, str] | None = None,
    *,
    reason: str | None = None,
    retries: int = 0,
    config: DecisionConfig = DecisionConfig(),
) -> CreateErrorDecision:
    """Retry or fail after ``create_namespaced_pod`` failed, with the provider's rules.

    ``status`` is the HTTP status, or None for a connection error (reset, DNS, timeout:
    the request may never have arrived). Transient: 403 "exceeded quota", 409 "object has
    been modified", 410 "too old resource version", 429, 500/502/503/504 and connection
    errors — retried while ``retries`` < ``task_publish_max_retries`` (-1: always).
    Everything else (400, a plain 403, 404, 422 …) fails at once.
    """
    message = _error_message(body, reason)
    limit = config.task_publish_max_retries
    can_retry = limit == -1 or retries < limit
    if status is None:
        transient = True
        what = "connection error"
    else:
        transient = (
            (status == 403 and "exceeded quota" in message)
            or (status == 409 and "object has been modified" in message)
            or (status == 410 and "too old resource version" in message)
            or status == 429
            or status in _TRANSIENT_5XX
        )
        what = f"HTTP {status}"
    if not transient:
        return CreateErrorDecision(False, f"{what} is not transient: fail", message=message)
    if not can_retry:
        return CreateErrorDecision(
            False, f"{what} is transient but retries are exhausted ({retries} of {limit})",
            message=message,
        )  # fmt: skip
    delay_seconds = _retry_after(headers)
    if delay_seconds is not None and delay_seconds > config.max_retry_after_seconds:
        delay_seconds = int(config.max_retry_after_seconds)  # compared as ints: no overflow
    delay = float(delay_seconds or 0) if status == 429 or delay_seconds is not None else None
    return CreateErrorDecision(True, f"{what} is transient: retry", delay, message)


def requeue_after_create_error(
    job: KubernetesJob[Any],
    decision: CreateErrorDecision,
    *,
    attempts: Attempts = Attempts(),
) -> Decision:
    """The actions for a :func:`classify_create_error` verdict on ``job``, as a decision.

    A retry requeues the job (after ``decision.delay`` seconds, if given); a failure frees
    the slot, reports the workload FAILED and drops its attempt record.
    """
    if decision.retry:
        return Decision((RequeueJob(job, decision.reason, decision.delay),), attempts)
    info = f"pod creation failed: {decision.reason}: {decision.message}".rstrip(": ")
    failed = EmitEvent(job.key, state_class_for_key(job.key).FAILED, info)
    return Decision((FreeSlot(job.key), failed), attempts.without(job.key))

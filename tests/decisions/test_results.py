"""decide / decide_task / decide_callback, creation errors and handling failures, row by row.

The rows are the provider's ``_change_state`` (reference §5.3), its pre-execution requeue
(§5.4), the callback rules of ``decide_callback``'s docstring and the pod-creation error
table (§5.2); where this library deliberately differs from the provider the test says so.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions import (
    UNKNOWN,
    decide,
    decide_callback,
    decide_task,
    handling_failed,
)
from k8s_workloads.decisions.actions import (
    Decision,
    DeletePod,
    EmitEvent,
    FreeSlot,
    Ignore,
    LookUpState,
    PatchLabels,
    RequeueJob,
    RetryLater,
)
from k8s_workloads.decisions.attempts import Attempt, Attempts
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.states import (
    CALLBACK_TERMINAL_STATES,
    CallbackResult,
    CallbackState,
    ExecutorPseudoState,
    FailureDetails,
    KubernetesJob,
    TaskInstanceState,
    TaskResult,
)
from k8s_workloads.watch.events import resolve_event
from k8s_workloads.watch.resolution import ResolverConfig
from tests.support.decision_cases import (
    CALLBACK_JOB,
    CALLBACK_KEY,
    DONE,
    ERROR,
    EVICTED,
    EXITED_WITH_ERROR,
    GAVE_UP,
    NS,
    OOM_KILLED,
    OTHER_CALLBACK_KEY,
    OTHER_POD,
    OTHER_TASK_KEY,
    POD,
    PULL_FAILED,
    TASK_JOB,
    TASK_KEY,
    any_result,
    callback,
    emitted,
    failed_before_start,
    kinds,
    launched,
    no_pod_calls,
    said,
    task,
)
from tests.support.event_factory import VERSION, callback_pod, event, waiting

# --- decide: dispatch and the rows every workload shares -------------------------------


@pytest.mark.parametrize(
    "result", [task(ExecutorPseudoState.ADOPTED), callback(ExecutorPseudoState.ADOPTED)]
)
def test_adopted_frees_the_slot_only(result: TaskResult | CallbackResult) -> None:
    attempts = launched(KubernetesJob(result.key, ("x",)))
    decision = decide(result, running=True, attempts=attempts)
    assert decision.actions == (FreeSlot(result.key),)
    assert decision.attempts.get(result.key) is None  # another scheduler owns it now

    not_running = decide(result, running=False)
    assert kinds(not_running) == [Ignore]


def test_running_emits_running_and_keeps_the_slot() -> None:
    decision = decide(task(TaskInstanceState.RUNNING), running=True, attempts=launched(TASK_JOB))
    assert decision.actions == (EmitEvent(TASK_KEY, TaskInstanceState.RUNNING),)
    assert decision.attempts == launched(TASK_JOB)


def test_decide_dispatches_callbacks_before_any_task_rule() -> None:
    # A failed callback pod never reaches the task-instance lookup (the §7.1 crash loop),
    # even when the caller hands in a task state by mistake.
    result = callback(CallbackState.FAILED, details=EXITED_WITH_ERROR)
    for known in (UNKNOWN, None, TaskInstanceState.QUEUED, CallbackState.RUNNING):
        decision = decide(
            result,
            running=True,
            attempts=launched(CALLBACK_JOB),
            config=DecisionConfig(pod_launch_failure_retries=-1),
            known_state=known,
        )
        assert decision.look_up is None
        assert emitted(decision) == [
            EmitEvent(
                CALLBACK_KEY,
                CallbackState.FAILED,
                f"Pod {NS}/{POD} failed because of Error (container base, exit code 1)",
            )
        ]


def test_decide_ignores_a_callback_state_handed_in_for_a_task() -> None:
    decision = decide(
        task(ExecutorPseudoState.LOOKUP), running=True, known_state=CallbackState.SUCCESS
    )
    assert said(decision) == (LookUpState(TASK_KEY, "the pod succeeded"),)


# --- cleanup ---------------------------------------------------------------------------

DELETE = DeletePod(POD, NS)
MARK_DONE = PatchLabels(POD, NS, DONE)


@pytest.mark.parametrize(
    ("config", "failed", "cleanup"),
    [
        # delete_worker_pods (default): delete finished pods ...
        (DecisionConfig(), False, [DELETE]),
        # ... but keep a failed one for debugging; unlike the provider (§7.3.2) it is
        # labelled done so watch restarts and adoption stop re-reporting it ...
        (DecisionConfig(), True, [MARK_DONE]),
        # ... unless asked to behave as the provider does.
        (DecisionConfig(mark_kept_failed_pods_done=False), True, []),
        (DecisionConfig(delete_worker_pods_on_failure=True), True, [DELETE]),
        (DecisionConfig(delete_worker_pods_on_failure=True), False, [DELETE]),
        # delete_worker_pods=False: never delete, always label done.
        (DecisionConfig(delete_worker_pods=False), False, [MARK_DONE]),
        (DecisionConfig(delete_worker_pods=False), True, [MARK_DONE]),
        (
            DecisionConfig(delete_worker_pods=False, delete_worker_pods_on_failure=True),
            True,
            [MARK_DONE],
        ),
        (
            DecisionConfig(delete_worker_pods=False, mark_kept_failed_pods_done=False),
            True,
            [MARK_DONE],
        ),
    ],
)
def test_cleanup_of_a_finished_pod(
    config: DecisionConfig, failed: bool, cleanup: list[DeletePod | PatchLabels]
) -> None:
    if failed:
        task_result = task(TaskInstanceState.FAILED, details=EVICTED)
        callback_result = callback(CallbackState.FAILED, details=EVICTED)
        task_event = EmitEvent(
            TASK_KEY, TaskInstanceState.FAILED, f"Pod {NS}/{POD} failed because of Evicted"
        )
        callback_event = EmitEvent(
            CALLBACK_KEY, CallbackState.FAILED, f"Pod {NS}/{POD} failed because of Evicted"
        )
    else:
        task_result = task(ExecutorPseudoState.LOOKUP)
        callback_result = callback(CallbackState.SUCCESS)
        task_event = EmitEvent(TASK_KEY, TaskInstanceState.SUCCESS)
        callback_event = EmitEvent(CALLBACK_KEY, CallbackState.SUCCESS)

    decided = decide(
        task_result, running=True, config=config, known_state=TaskInstanceState.SUCCESS
    )
    assert list(decided.actions) == [*cleanup, FreeSlot(TASK_KEY), task_event]

    decided = decide(callback_result, running=True, config=config)
    assert list(decided.actions) == [*cleanup, FreeSlot(CALLBACK_KEY), callback_event]


@given(
    delete=st.booleans(),
    on_failure=st.booleans(),
    mark_done=st.booleans(),
    reason=st.sampled_from(["ErrImagePull", "ImagePullBackOff", "CreateContainerConfigError"]),
)
def test_a_pod_failed_while_pending_is_deleted_whatever_keeps_failed_pods(
    delete: bool, on_failure: bool, mark_done: bool, reason: str
) -> None:
    # It has not ended: kept (or labelled done), it would start once its cause passes
    # (the registry back) and run the workload a second time.
    config = DecisionConfig(
        delete_worker_pods=delete,
        delete_worker_pods_on_failure=on_failure,
        mark_kept_failed_pods_done=mark_done,
    )
    details: FailureDetails = {**PULL_FAILED, "container_reason": reason}
    for result in (
        task(TaskInstanceState.FAILED, details=details),
        callback(CallbackState.FAILED, details=details),
    ):
        decided = decide(result, running=True, config=config, known_state=None)
        assert decided.actions[0] == DELETE
        assert kinds(decided) == [DeletePod, FreeSlot, EmitEvent]
    # A pod that ended (Failed) is kept as the options say.
    ended = decide(task(TaskInstanceState.FAILED, details=EVICTED), running=True, config=config)
    assert (DELETE in ended.actions) is (delete and on_failure)


@pytest.mark.parametrize(
    "result",
    [
        task(TaskInstanceState.FAILED, details=EVICTED),
        task(TaskInstanceState.SUCCESS),
        task(ExecutorPseudoState.LOOKUP),
        callback(CallbackState.FAILED, details=EVICTED),
        callback(CallbackState.SUCCESS),
    ],
)
def test_terminal_result_for_a_key_not_running_is_ignored_without_pod_calls(
    result: TaskResult | CallbackResult,
) -> None:
    # MODIFIED then DELETED is normal; the provider deletes or patches again on every
    # repeat (§7.3.3). Here: no event, no API call, and no database lookup either.
    config = DecisionConfig(delete_worker_pods=False, pod_launch_failure_retries=-1)
    attempts = launched(KubernetesJob(result.key, ("x",)))
    for known in (UNKNOWN, TaskInstanceState.QUEUED, TaskInstanceState.SUCCESS, None):
        decision = decide(
            result, running=False, config=config, attempts=attempts, known_state=known
        )
        assert kinds(decision) == [Ignore]
        assert decision.attempts == attempts


@pytest.mark.parametrize("running", [False, True])
def test_completed_task_is_cleanup_only(running: bool) -> None:
    # The task process wrote its own final state; the executor only cleans the pod up.
    for known in (UNKNOWN, TaskInstanceState.SUCCESS, None):
        result = task(ExecutorPseudoState.COMPLETED)
        assert decide(result, running=running, known_state=known).actions == (DELETE,)
        kept = decide(result, running=running, config=DecisionConfig(delete_worker_pods=False))
        assert kept.actions == (MARK_DONE,)


@pytest.mark.parametrize("running", [False, True])
@pytest.mark.parametrize(
    "callback_state", [UNKNOWN, None, CallbackState.QUEUED, CallbackState.RUNNING]
)
def test_completed_callback_is_cleaned_up_and_reported(running: bool, callback_state: Any) -> None:
    # Only the executor ever reports a callback's end: a pod that Succeeded while no
    # scheduler watched it must still turn into SUCCESS (else the callback stays active).
    decision = decide_callback(
        callback(ExecutorPseudoState.COMPLETED), running=running, callback_state=callback_state
    )
    freed = [FreeSlot(CALLBACK_KEY)] if running else []
    assert list(decision.actions) == [
        DELETE,
        *freed,
        EmitEvent(CALLBACK_KEY, CallbackState.SUCCESS),
    ]


@pytest.mark.parametrize("running", [False, True])
@pytest.mark.parametrize("terminal", [CallbackState.SUCCESS, CallbackState.FAILED])
def test_completed_callback_already_terminal_is_still_cleaned_up(
    running: bool, terminal: CallbackState
) -> None:
    """An adopted Succeeded pod of a finished callback is cleaned up, not reported.

    Today the pod is left when the key is not running (the usual case after a restart), so
    it stays un-done and is relabelled as COMPLETED again after every restart.
    """
    decision = decide_callback(
        callback(ExecutorPseudoState.COMPLETED), running=running, callback_state=terminal
    )
    assert emitted(decision) == []
    assert DELETE in decision.actions


# --- tasks: results ----------------------------------------------------------------------


def test_succeeded_task_pod_looks_the_state_up_first() -> None:
    decision = decide_task(task(ExecutorPseudoState.LOOKUP), running=True)
    assert said(decision) == (LookUpState(TASK_KEY, "the pod succeeded"),)


@pytest.mark.parametrize(
    "ti_state",
    [TaskInstanceState.SUCCESS, TaskInstanceState.FAILED, TaskInstanceState.UP_FOR_RETRY],
)
def test_succeeded_task_pod_emits_the_looked_up_state(ti_state: TaskInstanceState) -> None:
    attempts = launched(TASK_JOB)
    decision = decide_task(
        task(ExecutorPseudoState.LOOKUP), running=True, attempts=attempts, ti_state=ti_state
    )
    # The pod exited 0, so it is cleaned up as a success whatever the task's state.
    assert decision.actions == (DELETE, FreeSlot(TASK_KEY), EmitEvent(TASK_KEY, ti_state))
    assert decision.attempts.get(TASK_KEY) is None


def test_succeeded_task_pod_without_a_state_emits_nothing() -> None:
    # The provider emits a None state here and the scheduler loops on it (#35888).
    decision = decide_task(task(ExecutorPseudoState.LOOKUP), running=True, ti_state=None)
    assert kinds(decision) == [DeletePod, FreeSlot, Ignore]
    assert emitted(decision) == []


def test_failed_task_emits_failed_with_the_cause() -> None:
    decision = decide_task(task(TaskInstanceState.FAILED, details=OOM_KILLED), running=True)
    assert decision.actions == (
        MARK_DONE,
        FreeSlot(TASK_KEY),
        EmitEvent(
            TASK_KEY,
            TaskInstanceState.FAILED,
            f"Pod {NS}/{POD} failed because of OOMKilled (container base, exit code 137)",
        ),
    )


def test_explicit_success_state_is_emitted_without_a_lookup() -> None:
    decision = decide_task(task(TaskInstanceState.SUCCESS), running=True)
    assert decision.actions == (
        DELETE,
        FreeSlot(TASK_KEY),
        EmitEvent(TASK_KEY, TaskInstanceState.SUCCESS),
    )


failure_details = st.fixed_dictionaries(
    {},
    optional={
        "pod_status": st.none() | st.sampled_from(["Failed", "Pending", "Running"]),
        "pod_reason": st.none() | st.sampled_from(["", "Evicted", "ProviderFailed"]),
        "pod_message": st.none() | st.sampled_from(["", "node lost"]),
        "container_state": st.none() | st.sampled_from(["terminated", "waiting"]),
        "container_reason": st.none() | st.sampled_from(["", "Error", "OOMKilled"]),
        "container_message": st.none() | st.sampled_from(["", "exec format error"]),
        "exit_code": st.none() | st.integers(-1, 255),
        "container_type": st.none() | st.sampled_from(["init", "main"]),
        "container_name": st.none() | st.sampled_from(["", "base", "init-0"]),
    },
)


@given(details=st.none() | failure_details)
def test_failed_info_never_says_because_of_none(details: Any) -> None:
    for result in (
        task(TaskInstanceState.FAILED, details=details),
        callback(CallbackState.FAILED, details=details),
    ):
        (event_,) = emitted(decide(result, running=True))
        assert event_.info
        assert event_.info.startswith(f"Pod {NS}/{POD} failed")
        assert "None" not in event_.info
        assert "because of )" not in event_.info


# --- tasks: pre-execution requeue (§5.4) --------------------------------------------------


def test_pre_execution_check_looks_the_state_up_first() -> None:
    attempts = launched(TASK_JOB)
    decision = decide_task(failed_before_start(), running=True, attempts=attempts)
    assert said(decision) == (LookUpState(TASK_KEY, "did the pod fail before the task ran?"),)
    assert decision.attempts == attempts


def test_pod_that_failed_while_the_task_was_queued_is_requeued() -> None:
    attempts = launched(TASK_JOB)
    decision = decide_task(
        failed_before_start(), running=True, attempts=attempts, ti_state=TaskInstanceState.QUEUED
    )
    # Deleted (it never started, and kept it would start once its image can be
    # pulled), requeued, still running, nothing reported.
    assert decision.actions == (
        DELETE,
        RequeueJob(TASK_JOB, "pod failed before the task ran (try 1 of 1)"),
    )
    assert decision.attempts.get(TASK_KEY) == Attempt(TASK_JOB, 1, POD, frozenset({POD}))


@pytest.mark.parametrize(
    "details",
    [
        PULL_FAILED,
        EVICTED,  # no container reason at all
        OOM_KILLED,  # a container reason that is not excluded
        {"pod_status": "Failed", "container_reason": ""},
    ],
)
def test_any_not_excluded_reason_is_requeued_while_queued(details: FailureDetails) -> None:
    decision = decide_task(
        failed_before_start(details=details),
        running=True,
        attempts=launched(TASK_JOB),
        ti_state=TaskInstanceState.QUEUED,
    )
    assert kinds(decision)[-1] is RequeueJob
    assert emitted(decision) == []


def test_excluded_container_reason_fails() -> None:
    # "Error" means the container ran: the task may have done work, so it is not requeued.
    decision = decide_task(
        failed_before_start(details=EXITED_WITH_ERROR),
        running=True,
        attempts=launched(TASK_JOB),
        ti_state=TaskInstanceState.QUEUED,
    )
    assert kinds(decision) == [PatchLabels, FreeSlot, EmitEvent]
    assert emitted(decision)[0].state is TaskInstanceState.FAILED


def test_excluded_reasons_are_configurable() -> None:
    config = DecisionConfig(pod_launch_failure_excluded_container_reasons=frozenset({"OOMKilled"}))
    for details, requeued in ((OOM_KILLED, False), (EXITED_WITH_ERROR, True)):
        decision = decide_task(
            failed_before_start(details=details),
            running=True,
            config=config,
            attempts=launched(TASK_JOB),
            ti_state=TaskInstanceState.QUEUED,
        )
        assert (kinds(decision)[-1] is RequeueJob) is requeued


@pytest.mark.parametrize(
    "ti_state",
    [TaskInstanceState.RUNNING, TaskInstanceState.FAILED, TaskInstanceState.UP_FOR_RETRY, None],
)
def test_task_that_left_queued_is_not_requeued(ti_state: TaskInstanceState | None) -> None:
    decision = decide_task(
        failed_before_start(), running=True, attempts=launched(TASK_JOB), ti_state=ti_state
    )
    assert kinds(decision) == [DeletePod, FreeSlot, EmitEvent]
    assert emitted(decision)[0].state is TaskInstanceState.FAILED
    assert emitted(decision)[0].info == (
        f"Pod {NS}/{POD} failed because of ErrImagePull (container base)"
    )


def test_second_failed_event_for_the_requeued_pod_is_ignored() -> None:
    first = decide_task(
        failed_before_start(),
        running=True,
        attempts=launched(TASK_JOB),
        ti_state=TaskInstanceState.QUEUED,
    )
    for ti_state in (UNKNOWN, TaskInstanceState.QUEUED, TaskInstanceState.FAILED):
        again = decide_task(
            failed_before_start(), running=True, attempts=first.attempts, ti_state=ti_state
        )
        assert kinds(again) == [Ignore]
        assert no_pod_calls(again)
        assert again.attempts == first.attempts


def test_retries_exhausted_fail() -> None:
    first = decide_task(
        failed_before_start(),
        running=True,
        attempts=launched(TASK_JOB),
        ti_state=TaskInstanceState.QUEUED,
    )
    # The requeued job's new pod fails before the task ran, too: 1 of 1 used, so fail.
    second = failed_before_start(pod=OTHER_POD)
    looked_up = decide_task(second, running=True, attempts=first.attempts)
    assert kinds(looked_up) == [LookUpState]
    final = decide_task(
        second, running=True, attempts=first.attempts, ti_state=TaskInstanceState.QUEUED
    )
    assert final.actions == (
        DeletePod(OTHER_POD, NS),
        FreeSlot(TASK_KEY),
        EmitEvent(
            TASK_KEY,
            TaskInstanceState.FAILED,
            f"Pod {NS}/{OTHER_POD} failed because of ErrImagePull (container base)",
        ),
    )
    assert final.attempts.get(TASK_KEY) is None


def test_unlimited_retries() -> None:
    config = DecisionConfig(pod_launch_failure_retries=-1)
    older = frozenset(f"pod-{number}" for number in range(1, 51))
    attempts = Attempts({TASK_KEY: Attempt(TASK_JOB, 50, "pod-50", older)})
    decision = decide_task(
        failed_before_start(),
        running=True,
        config=config,
        attempts=attempts,
        ti_state=TaskInstanceState.QUEUED,
    )
    assert decision.actions[-1] == RequeueJob(
        TASK_JOB, "pod failed before the task ran (try 51 of unlimited)"
    )
    assert decision.attempts.get(TASK_KEY) == Attempt(TASK_JOB, 51, POD, older | {POD})


def test_more_retries_are_counted() -> None:
    config = DecisionConfig(pod_launch_failure_retries=3)
    attempts = launched(TASK_JOB)
    for number, pod in enumerate(("pod-1", "pod-2", "pod-3"), start=1):
        decision = decide_task(
            failed_before_start(pod=pod),
            running=True,
            config=config,
            attempts=attempts,
            ti_state=TaskInstanceState.QUEUED,
        )
        assert decision.actions[-1] == RequeueJob(
            TASK_JOB, f"pod failed before the task ran (try {number} of 3)"
        )
        attempts = decision.attempts
    final = decide_task(
        failed_before_start(pod="pod-4"),
        running=True,
        config=config,
        attempts=attempts,
        ti_state=TaskInstanceState.QUEUED,
    )
    assert emitted(final)[0].state is TaskInstanceState.FAILED


def test_stale_failure_of_an_earlier_requeued_pod_is_ignored() -> None:
    """A Failed event of pod 1 that arrives after pod 2 was requeued is a duplicate, too.

    Only the last requeued pod is remembered (``requeued_for_pod``), so with more than one
    retry a re-delivered event of an earlier pod (a watch restart re-lists every kept
    failed pod when ``mark_kept_failed_pods_done=False``) fails the task while its third
    pod is on its way, or, with attempts left, creates a second pod for the same try.
    """
    config = DecisionConfig(pod_launch_failure_retries=-1, mark_kept_failed_pods_done=False)
    attempts = launched(TASK_JOB)
    for pod in ("pod-1", "pod-2"):
        attempts = decide_task(
            failed_before_start(pod=pod),
            running=True,
            config=config,
            attempts=attempts,
            ti_state=TaskInstanceState.QUEUED,
        ).attempts
    stale = decide_task(
        failed_before_start(pod="pod-1"),
        running=True,
        config=config,
        attempts=attempts,
        ti_state=TaskInstanceState.QUEUED,
    )
    assert kinds(stale) == [Ignore]


@pytest.mark.parametrize("config", [DecisionConfig(), DecisionConfig(delete_worker_pods=False)])
def test_requeued_pod_leaving_the_watch_keeps_the_slot(config: DecisionConfig) -> None:
    # Labelling the requeued pod done makes it leave the watcher's selection: the API
    # server sends DELETED without a deletion timestamp, which reads as ADOPTED. That
    # must not free the slot (or drop the record) of the job being launched again.
    requeue = decide_task(
        failed_before_start(details=EVICTED),  # Failed: kept, labelled done
        running=True,
        config=config,
        attempts=launched(TASK_JOB),
        ti_state=TaskInstanceState.QUEUED,
    )
    assert requeue.actions[0] == MARK_DONE
    left = decide_task(
        task(ExecutorPseudoState.ADOPTED), running=True, config=config, attempts=requeue.attempts
    )
    assert kinds(left) == [Ignore]
    assert left.attempts == requeue.attempts
    # Another scheduler adopting the new pod does free it.
    adopted = decide_task(
        task(ExecutorPseudoState.ADOPTED, pod=OTHER_POD),
        running=True,
        config=config,
        attempts=requeue.attempts,
    )
    assert adopted.actions == (FreeSlot(TASK_KEY),)


def test_requeue_disabled_fails_without_a_lookup() -> None:
    config = DecisionConfig(pod_launch_failure_retries=0)
    decision = decide_task(
        failed_before_start(), running=True, config=config, attempts=launched(TASK_JOB)
    )
    assert kinds(decision) == [DeletePod, FreeSlot, EmitEvent]


def test_adopted_pod_without_an_attempt_record_fails_normally() -> None:
    # Attempt records live in memory only; a pod adopted after a restart has none.
    decision = decide_task(failed_before_start(), running=True)
    assert kinds(decision) == [DeletePod, FreeSlot, EmitEvent]
    attempts = launched(KubernetesJob(OTHER_TASK_KEY, ("x",)))
    decision = decide_task(failed_before_start(), running=True, attempts=attempts)
    assert kinds(decision) == [DeletePod, FreeSlot, EmitEvent]
    assert decision.attempts == attempts


def test_requeue_cleans_up_with_the_failure_rules() -> None:
    decision = decide_task(
        failed_before_start(),
        running=True,
        config=DecisionConfig(delete_worker_pods_on_failure=True),
        attempts=launched(TASK_JOB),
        ti_state=TaskInstanceState.QUEUED,
    )
    assert kinds(decision) == [DeletePod, RequeueJob]


# --- callbacks ---------------------------------------------------------------------------


@pytest.mark.parametrize("terminal", [CallbackState.SUCCESS, CallbackState.FAILED])
@pytest.mark.parametrize(
    "result",
    [
        callback(CallbackState.SUCCESS),
        callback(CallbackState.FAILED, details=EVICTED),
        callback(CallbackState.RUNNING),
        callback(ExecutorPseudoState.LOOKUP),
    ],
)
@pytest.mark.parametrize("running", [False, True])
def test_terminal_callback_state_is_never_overwritten(
    terminal: CallbackState, result: CallbackResult, running: bool
) -> None:
    decision = decide_callback(
        result, running=running, attempts=launched(CALLBACK_JOB), callback_state=terminal
    )
    assert emitted(decision) == []


@pytest.mark.parametrize(
    "result",
    [callback(CallbackState.SUCCESS), callback(CallbackState.FAILED, details=EVICTED)],
)
def test_terminal_callback_state_still_frees_the_slot_of_a_finished_pod(
    result: CallbackResult,
) -> None:
    """A callback already terminal in Airflow whose pod finishes must not stay running.

    How it happens: handling a callback's RUNNING result keeps failing, so
    ``handling_failed`` reports it FAILED; after a restart ``plan_adoption`` adopts its
    still-running pod (callback pods are always adopted); when the pod finishes the
    terminal state answers Ignore, so the key is never freed nor the pod cleaned up.
    """
    decision = decide_callback(result, running=True, callback_state=CallbackState.FAILED)
    assert emitted(decision) == []
    assert FreeSlot(CALLBACK_KEY) in decision.actions


@pytest.mark.parametrize(
    "active", [CallbackState.PENDING, CallbackState.QUEUED, CallbackState.RUNNING]
)
def test_active_callback_state_may_move(active: CallbackState) -> None:
    attempts = launched(CALLBACK_JOB)
    success = decide_callback(
        callback(CallbackState.SUCCESS), running=True, attempts=attempts, callback_state=active
    )
    assert success.actions == (
        DELETE,
        FreeSlot(CALLBACK_KEY),
        EmitEvent(CALLBACK_KEY, CallbackState.SUCCESS),
    )
    assert success.attempts.get(CALLBACK_KEY) is None
    failure = decide_callback(
        callback(CallbackState.FAILED, details=OOM_KILLED),
        running=True,
        attempts=attempts,
        callback_state=active,
    )
    assert emitted(failure) == [
        EmitEvent(
            CALLBACK_KEY,
            CallbackState.FAILED,
            f"Pod {NS}/{POD} failed because of OOMKilled (container base, exit code 137)",
        )
    ]
    running = decide_callback(callback(CallbackState.RUNNING), running=True, callback_state=active)
    if active is CallbackState.RUNNING:
        assert kinds(running) == [Ignore]
    else:
        assert running.actions == (EmitEvent(CALLBACK_KEY, CallbackState.RUNNING),)


def test_callback_running_without_a_known_state_is_emitted() -> None:
    decision = decide_callback(callback(CallbackState.RUNNING), running=True)
    assert decision.actions == (EmitEvent(CALLBACK_KEY, CallbackState.RUNNING),)


def test_callback_running_for_a_key_not_running_is_not_emitted() -> None:
    """A re-delivered Running event after the callback finished must not report RUNNING.

    Airflow 3.3's scheduler writes whatever callback state an event carries, so without a
    known state this turns a SUCCESS callback back into RUNNING, for good.
    """
    decision = decide_callback(callback(CallbackState.RUNNING), running=False)
    assert emitted(decision) == []


def test_callback_success_without_a_known_state_only_for_a_succeeded_pod() -> None:
    on = ResolverConfig(airflow_version=VERSION)
    succeeded = resolve_event(event("MODIFIED", callback_pod({"phase": "Succeeded"})), config=on)
    result = succeeded.to_result()
    assert isinstance(result, CallbackResult)
    assert emitted(decide(result, running=True)) == [EmitEvent(CALLBACK_KEY, CallbackState.SUCCESS)]
    # No other result of a callback pod is ever taken as success.
    for state in (
        ExecutorPseudoState.LOOKUP,
        CallbackState.PENDING,
        CallbackState.QUEUED,
        CallbackState.SCHEDULED,
    ):
        decision = decide_callback(callback(state), running=True, attempts=launched(CALLBACK_JOB))
        assert kinds(decision) == [Ignore]
        assert decision.attempts == launched(CALLBACK_JOB)


@pytest.mark.parametrize(
    "callback_state",
    [UNKNOWN, None, CallbackState.PENDING, CallbackState.QUEUED, CallbackState.RUNNING],
)
def test_lookup_for_a_callback_never_becomes_success(callback_state: Any) -> None:
    decision = decide_callback(
        callback(ExecutorPseudoState.LOOKUP), running=True, callback_state=callback_state
    )
    assert kinds(decision) == [Ignore]


def callback_failed_before_start(pod: str = POD, key: CallbackKey = CALLBACK_KEY) -> CallbackResult:
    return callback(CallbackState.FAILED, pod=pod, details=PULL_FAILED, key=key)


def test_callback_launch_failure_is_not_retried_by_default() -> None:
    decision = decide_callback(
        callback_failed_before_start(), running=True, attempts=launched(CALLBACK_JOB)
    )
    assert decision.actions == (
        DELETE,
        FreeSlot(CALLBACK_KEY),
        EmitEvent(
            CALLBACK_KEY,
            CallbackState.FAILED,
            f"Pod {NS}/{POD} failed because of ErrImagePull (container base)",
        ),
    )


def test_callback_launch_failure_requeue_is_opt_in_and_counted_per_callback() -> None:
    config = DecisionConfig(callback_launch_failure_retries=1)
    other_job = KubernetesJob(OTHER_CALLBACK_KEY, ("x",))
    attempts = launched(CALLBACK_JOB, other_job)

    first = decide_callback(
        callback_failed_before_start(), running=True, config=config, attempts=attempts
    )
    assert first.actions == (
        DELETE,
        RequeueJob(CALLBACK_JOB, "callback pod failed before it ran (try 1 of 1)"),
    )
    assert first.attempts.get(CALLBACK_KEY) == Attempt(CALLBACK_JOB, 1, POD, frozenset({POD}))

    # The same pod again: a duplicate.
    duplicate = decide_callback(
        callback_failed_before_start(), running=True, config=config, attempts=first.attempts
    )
    assert kinds(duplicate) == [Ignore]
    assert no_pod_calls(duplicate)

    # Another callback has its own budget.
    other = decide_callback(
        callback_failed_before_start(pod="cb-other", key=OTHER_CALLBACK_KEY),
        running=True,
        config=config,
        attempts=first.attempts,
    )
    assert kinds(other)[-1] is RequeueJob

    # The requeued callback's next pod fails, too: its budget is spent.
    second = decide_callback(
        callback_failed_before_start(pod=OTHER_POD),
        running=True,
        config=config,
        attempts=other.attempts,
    )
    assert kinds(second) == [DeletePod, FreeSlot, EmitEvent]
    assert second.attempts.get(CALLBACK_KEY) is None
    assert second.attempts.get(OTHER_CALLBACK_KEY) is not None


def test_callback_failure_after_it_ran_is_not_requeued() -> None:
    config = DecisionConfig(callback_launch_failure_retries=-1)
    for details in (EXITED_WITH_ERROR, OOM_KILLED, EVICTED):
        decision = decide_callback(
            callback(CallbackState.FAILED, details=details),
            running=True,
            config=config,
            attempts=launched(CALLBACK_JOB),
        )
        assert kinds(decision) == [PatchLabels, FreeSlot, EmitEvent]


def test_callback_without_an_attempt_record_fails_normally() -> None:
    config = DecisionConfig(callback_launch_failure_retries=-1)
    decision = decide_callback(callback_failed_before_start(), running=True, config=config)
    assert kinds(decision) == [DeletePod, FreeSlot, EmitEvent]


def test_callback_pending_pod_failure_resolved_from_a_pod_is_requeued() -> None:
    pod = callback_pod({"phase": "Pending", "containerStatuses": [waiting("base", "ErrImagePull")]})
    resolution = resolve_event(
        event("MODIFIED", pod), config=ResolverConfig(airflow_version=VERSION)
    )
    result = resolution.to_result()
    assert isinstance(result, CallbackResult)
    decision = decide(
        result,
        running=True,
        config=DecisionConfig(callback_launch_failure_retries=1),
        attempts=launched(CALLBACK_JOB),
    )
    assert kinds(decision) == [DeletePod, RequeueJob]


# --- vanished pods (a watch gap, plan_relist) -------------------------------------------


def vanished_task(launch: int | None = None) -> TaskResult:
    return TaskResult(TASK_KEY, ExecutorPseudoState.VANISHED, "", "", "", launch=launch)


def vanished_callback(launch: int | None = None) -> CallbackResult:
    return CallbackResult(CALLBACK_KEY, ExecutorPseudoState.VANISHED, "", "", "", launch=launch)


VANISHED_INFO = "the pod vanished while the watch was down; its final events were lost"


def test_vanished_task_asks_whether_the_task_finished_before_its_pod_went() -> None:
    attempts = launched(TASK_JOB)
    decision = decide_task(vanished_task(), running=True, attempts=attempts)
    assert said(decision) == (
        LookUpState(TASK_KEY, "did the task finish before its pod vanished?"),
    )


@pytest.mark.parametrize("ti_state", [TaskInstanceState.SUCCESS, TaskInstanceState.FAILED])
def test_vanished_task_that_finished_reports_its_own_state(ti_state: TaskInstanceState) -> None:
    decision = decide_task(
        vanished_task(), running=True, attempts=launched(TASK_JOB), ti_state=ti_state
    )
    assert decision.actions == (FreeSlot(TASK_KEY), EmitEvent(TASK_KEY, ti_state))
    assert decision.attempts.get(TASK_KEY) is None


@pytest.mark.parametrize("ti_state", [None, TaskInstanceState.QUEUED, TaskInstanceState.RUNNING])
def test_vanished_task_that_never_finished_failed(ti_state: TaskInstanceState | None) -> None:
    decision = decide_task(
        vanished_task(), running=True, attempts=launched(TASK_JOB), ti_state=ti_state
    )
    assert decision.actions == (
        FreeSlot(TASK_KEY),
        EmitEvent(TASK_KEY, TaskInstanceState.FAILED, VANISHED_INFO),
    )
    assert no_pod_calls(decision)  # there is no pod left to clean up


def test_vanished_callback_failed_success_is_never_assumed() -> None:
    decision = decide_callback(vanished_callback(), running=True, attempts=launched(CALLBACK_JOB))
    assert decision.actions == (
        FreeSlot(CALLBACK_KEY),
        EmitEvent(CALLBACK_KEY, CallbackState.FAILED, VANISHED_INFO),
    )


def test_vanished_result_for_a_workload_not_running_is_ignored() -> None:
    for result in (vanished_task(), vanished_callback()):
        decision = decide(result, running=False, known_state=None)
        assert kinds(decision) == [Ignore]
        assert "is not running" in decision.reason


def test_stale_vanished_result_leaves_the_requeued_launch_alone() -> None:
    # Handled late (its first handling failed), after the workload was requeued: the pod
    # that vanished was the earlier launch, and the new one is on its way.
    for job, result, requeue in (
        (TASK_JOB, vanished_task, failed_before_start()),
        (CALLBACK_JOB, vanished_callback, callback(CallbackState.FAILED, details=PULL_FAILED)),
    ):
        config = DecisionConfig(callback_launch_failure_retries=1)
        requeued = decide(
            requeue,
            running=True,
            attempts=launched(job),
            config=config,
            known_state=TaskInstanceState.QUEUED if job is TASK_JOB else CallbackState.QUEUED,
        )
        assert kinds(requeued)[-1] is RequeueJob
        stale = decide(result(launch=0), running=True, attempts=requeued.attempts, config=config)
        assert said(stale) == (
            Ignore("the vanished pod was an earlier launch: the workload was requeued since"),
        )
        assert stale.attempts == requeued.attempts
        # The current launch's own loss is not stale.
        current = decide(result(launch=1), running=True, attempts=requeued.attempts, config=config)
        assert said(current)
        assert current.ignored is None


# --- handling failures -----------------------------------------------------------------


def give_up(
    result: TaskResult | CallbackResult,
    *,
    running: bool = True,
    attempts: Attempts | None = None,
    config: DecisionConfig = DecisionConfig(),
    known_state: Any = UNKNOWN,
) -> Decision:
    if attempts is None:
        attempts = launched(KubernetesJob(result.key, ("x",)))
    return handling_failed(
        result,
        ERROR,
        running=running,
        failures_so_far=config.max_handling_retries,
        attempts=attempts,
        config=config,
        known_state=known_state,
    )


@pytest.mark.parametrize(
    "result", [task(ExecutorPseudoState.LOOKUP), callback(CallbackState.SUCCESS)]
)
def test_handling_failed_is_retried_on_later_passes_then_gives_up(
    result: TaskResult | CallbackResult,
) -> None:
    attempts = launched(KubernetesJob(result.key, ("x",)))
    failures = 0
    for _ in range(3):
        decision = handling_failed(
            result, ERROR, running=True, failures_so_far=failures, attempts=attempts
        )
        (retry,) = said(decision)
        assert isinstance(retry, RetryLater)
        assert retry.failures == failures + 1
        assert f"{failures + 1} of 3 retries" in retry.reason
        assert decision.attempts == attempts
        failures = retry.failures
    final = handling_failed(
        result, ERROR, running=True, failures_so_far=failures, attempts=attempts
    )
    assert final.retry is None
    assert final.attempts.get(result.key) is None


@pytest.mark.parametrize(
    ("result", "failed_state"),
    [
        (task(ExecutorPseudoState.LOOKUP), TaskInstanceState.FAILED),
        (task(TaskInstanceState.FAILED, details=OOM_KILLED), TaskInstanceState.FAILED),
        (callback(CallbackState.SUCCESS), CallbackState.FAILED),
        (callback(CallbackState.FAILED, details=OOM_KILLED), CallbackState.FAILED),
    ],
)
def test_giving_up_reports_failed_then_cleans_the_pod_up(
    result: TaskResult | CallbackResult, failed_state: TaskInstanceState | CallbackState
) -> None:
    # The event first (it cannot fail), then the clean-up the pod's own outcome calls for:
    # a Succeeded pod is deleted, a Failed one kept and labelled done (provider defaults).
    pod_failed = result.state in {TaskInstanceState.FAILED, CallbackState.FAILED}
    cleanup = PatchLabels(POD, NS, DONE) if pod_failed else DeletePod(POD, NS)
    decision = give_up(result)
    assert decision.actions == (
        FreeSlot(result.key),
        EmitEvent(result.key, failed_state, GAVE_UP),
        cleanup,
    )


def test_giving_up_on_a_workload_no_longer_running_reports_nothing() -> None:
    # Session-1 counterexample: SUCCESS was reported, a duplicate's handling kept failing
    # and a second, contradicting FAILED followed.
    for result in (task(ExecutorPseudoState.LOOKUP), callback(CallbackState.FAILED)):
        decision = give_up(result, running=False)
        assert kinds(decision) == [Ignore]
        assert "is not running: nothing to report" in decision.reason


def test_giving_up_never_overwrites_a_terminal_callback() -> None:
    decision = give_up(callback(CallbackState.SUCCESS), known_state=CallbackState.SUCCESS)
    assert said(decision) == (
        FreeSlot(CALLBACK_KEY),
        DeletePod(POD, NS),
        Ignore("callback is already success: never overwritten"),
    )


@pytest.mark.parametrize("ti_state", [TaskInstanceState.SUCCESS, TaskInstanceState.UP_FOR_RETRY])
def test_giving_up_reports_the_task_state_read_for_a_succeeded_pod(
    ti_state: TaskInstanceState,
) -> None:
    # The state was read, as decide reports it for a Succeeded pod; the pod call after it
    # kept failing.
    decision = give_up(task(ExecutorPseudoState.LOOKUP), known_state=ti_state)
    assert decision.actions == (
        FreeSlot(TASK_KEY),
        EmitEvent(TASK_KEY, ti_state),
        DeletePod(POD, NS),
    )


@pytest.mark.parametrize(
    ("result", "ti_state", "reported"),
    [
        (vanished_task(), TaskInstanceState.SKIPPED, TaskInstanceState.SKIPPED),
        (vanished_task(), TaskInstanceState.QUEUED, TaskInstanceState.FAILED),
        (task(TaskInstanceState.FAILED), TaskInstanceState.SUCCESS, TaskInstanceState.SUCCESS),
        (task(TaskInstanceState.FAILED), TaskInstanceState.RUNNING, TaskInstanceState.FAILED),
        (task(ExecutorPseudoState.LOOKUP), None, TaskInstanceState.FAILED),
    ],
)
def test_giving_up_reports_a_finished_task_state_else_failed(
    result: TaskResult, ti_state: TaskInstanceState | None, reported: TaskInstanceState
) -> None:
    decision = give_up(result, known_state=ti_state)
    (event,) = emitted(decision)
    assert event.state is reported


@pytest.mark.parametrize(
    "result", [task(TaskInstanceState.RUNNING), callback(CallbackState.RUNNING)]
)
def test_giving_up_on_a_running_result_keeps_tracking_the_workload(
    result: TaskResult | CallbackResult,
) -> None:
    decision = give_up(result)
    assert kinds(decision) == [Ignore]
    assert "the pod's final event decides" in decision.reason
    assert decision.attempts.get(result.key) is not None


@pytest.mark.parametrize(
    "result", [task(ExecutorPseudoState.ADOPTED), callback(ExecutorPseudoState.ADOPTED)]
)
def test_giving_up_on_an_adopted_result_frees_the_slot_as_decide_does(
    result: TaskResult | CallbackResult,
) -> None:
    assert give_up(result).actions == (FreeSlot(result.key),)
    assert said(give_up(result, running=False)) == (Ignore("adopted, not running"),)


def test_giving_up_on_a_vanished_pod_reports_failed_without_a_pod_call() -> None:
    for result in (vanished_task(), vanished_callback()):
        decision = give_up(result)
        assert kinds(decision) == [FreeSlot, EmitEvent]
        assert no_pod_calls(decision)


def test_giving_up_on_stale_results_leaves_the_new_launch_alone() -> None:
    requeued = decide_task(
        failed_before_start(),
        running=True,
        attempts=launched(TASK_JOB),
        ti_state=TaskInstanceState.QUEUED,
    ).attempts
    old_pod_failure = give_up(failed_before_start(), attempts=requeued)
    assert said(old_pod_failure) == (Ignore("duplicate result of a pod already requeued"),)
    stale = give_up(vanished_task(launch=0), attempts=requeued)
    assert kinds(stale) == [Ignore]
    assert "requeued since" in stale.reason


def test_giving_up_on_a_completed_pod() -> None:
    # A task recorded its own end: only the clean-up is left. A callback's success was
    # never confirmed, so it surfaces as a failure, as every other give-up does.
    completed_task = give_up(task(ExecutorPseudoState.COMPLETED), running=False)
    assert kinds(completed_task) == [DeletePod, Ignore]
    assert "the task recorded its own end" in completed_task.reason
    completed_callback = give_up(callback(ExecutorPseudoState.COMPLETED), running=False)
    assert completed_callback.actions == (
        EmitEvent(CALLBACK_KEY, CallbackState.FAILED, GAVE_UP),
        DeletePod(POD, NS),
    )


def test_handling_failed_bound_is_configurable() -> None:
    config = DecisionConfig(max_handling_retries=0)
    decision = handling_failed(
        task(TaskInstanceState.FAILED),
        RuntimeError("x"),
        running=True,
        failures_so_far=0,
        config=config,
    )
    assert kinds(decision) == [FreeSlot, EmitEvent, PatchLabels]


@given(
    result=any_result,
    running=st.booleans(),
    failures=st.integers(0, 6),
    max_retries=st.integers(0, 4),
    known=st.sampled_from([UNKNOWN, None, *TaskInstanceState, *CallbackState]),
)
def test_handling_failed_is_bounded_and_never_contradicts(
    result: TaskResult | CallbackResult,
    running: bool,
    failures: int,
    max_retries: int,
    known: Any,
) -> None:
    kind = "callback" if isinstance(result, CallbackResult) else "task"
    config = DecisionConfig(max_handling_retries=max_retries)
    decision = handling_failed(
        result,
        ERROR,
        running=running,
        failures_so_far=failures,
        attempts=launched(KubernetesJob(result.key, ("x",))),
        config=config,
        known_state=known,
    )
    retries = [note for note in decision.notes if isinstance(note, RetryLater)]
    events = emitted(decision)
    if failures < max_retries:
        assert said(decision) == tuple(retries)
        assert [retry.failures for retry in retries] == [failures + 1]
        return
    assert not retries, "retries must stop at the bound"
    assert len(events) <= 1
    if events:
        # Something is reported only for a workload this executor still settles ...
        assert running or result.state is ExecutorPseudoState.COMPLETED
        # ... never over a terminal callback, and as the key's own kind of state.
        assert not (kind == "callback" and known in CALLBACK_TERMINAL_STATES)
        assert isinstance(
            events[0].state, CallbackState if kind == "callback" else TaskInstanceState
        )
        assert result.state not in {TaskInstanceState.RUNNING, CallbackState.RUNNING}
    if FreeSlot(result.key) in decision.actions:
        assert running


def test_a_requeued_launch_is_known_by_its_uid_where_there_is_one() -> None:
    job = KubernetesJob(TaskInstanceKey("d", "t", "r", 1), ["run"])
    named = Attempt(job, attempts=1, requeued_for_pod="pod", requeued_pods=frozenset({"pod"}))
    assert named.was_requeued("pod")
    assert named.was_requeued("pod", "uid-2")  # no uid recorded: the name decides
    with_uid = attrs.evolve(named, requeued_uids=frozenset({"uid-1"}))
    assert with_uid.was_requeued("pod", "uid-1")
    assert not with_uid.was_requeued("pod", "uid-2")  # a new launch under the same name
    assert with_uid.was_requeued("pod")  # an event without a uid: by name, as before
    assert not with_uid.was_requeued("other")

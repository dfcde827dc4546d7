"""decide / decide_task / decide_callback, creation errors and handling failures, row by row.

The rows are the provider's ``_change_state`` (reference §5.3), its pre-execution requeue
(§5.4), the callback rules of ``decide_callback``'s docstring and the pod-creation error
table (§5.2); where this library deliberately differs from the provider the test says so.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions import (
    CALLBACK_GIVE_UP_RULES,
    CALLBACK_RULES,
    TASK_GIVE_UP_RULES,
    TASK_RULES,
    UNKNOWN,
    decide,
    decide_callback,
    decide_task,
    describe_rules,
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
    describe_action,
)
from k8s_workloads.decisions.attempts import Attempt, Attempts
from k8s_workloads.decisions.creation_errors import (
    CreateErrorVerdict,
    classify_create_error,
    decide_create_error,
    requeue_after_create_error,
)
from k8s_workloads.decisions.results import _rules_document
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
from k8s_workloads.watch.events import ResolverConfig, resolve_event
from tests.support.event_factory import CALLBACK_ID, VERSION, callback_pod, event, waiting

TASK_KEY = TaskInstanceKey("etl", "load", "manual__2026", 2, 3)
OTHER_TASK_KEY = TaskInstanceKey("etl", "transform", "manual__2026", 1)
CALLBACK_KEY = CallbackKey(CALLBACK_ID)
OTHER_CALLBACK_KEY = CallbackKey("019e9fc6-6f3c-7b9a-9d1e-000000000002")
TASK_JOB = KubernetesJob(TASK_KEY, ("python", "-m", "x"))
CALLBACK_JOB = KubernetesJob(CALLBACK_KEY, ("python", "-m", "x"))
OTHER_JOB = KubernetesJob(OTHER_TASK_KEY, ("python", "-m", "x"))
NS = "airflow"
POD = "etl-load-abcd1234"
OTHER_POD = "etl-load-efgh5678"
DONE = {"airflow_executor_done": "True"}

# What a Pending pod stuck pulling its image resolves to (the pod never ran).
PULL_FAILED: FailureDetails = {
    "pod_status": "Pending",
    "container_state": "waiting",
    "container_reason": "ErrImagePull",
    "container_name": "base",
}
# A main container that started and exited non-zero: the task process did run.
EXITED_WITH_ERROR: FailureDetails = {
    "pod_status": "Failed",
    "pod_reason": None,
    "pod_message": None,
    "container_state": "terminated",
    "container_reason": "Error",
    "exit_code": 1,
    "container_type": "main",
    "container_name": "base",
}
OOM_KILLED: FailureDetails = {
    "pod_status": "Failed",
    "pod_reason": None,
    "pod_message": None,
    "container_state": "terminated",
    "container_reason": "OOMKilled",
    "exit_code": 137,
    "container_type": "main",
    "container_name": "base",
}
EVICTED: FailureDetails = {
    "pod_status": "Failed",
    "pod_reason": "Evicted",
    "pod_message": "The node was low on resource: memory.",
}


def task(
    state: TaskInstanceState | ExecutorPseudoState,
    *,
    pod: str = POD,
    details: FailureDetails | None = None,
    key: TaskInstanceKey = TASK_KEY,
) -> TaskResult:
    return TaskResult(key, state, pod, NS, "100", details)


def callback(
    state: CallbackState | ExecutorPseudoState,
    *,
    pod: str = POD,
    details: FailureDetails | None = None,
    key: CallbackKey = CALLBACK_KEY,
) -> CallbackResult:
    return CallbackResult(key, state, pod, NS, "200", details)


def launched(*jobs: KubernetesJob[Any]) -> Attempts:
    attempts = Attempts()
    for job in jobs:
        attempts = attempts.launched(job)
    return attempts


def emitted(decision: Decision) -> list[EmitEvent]:
    return [action for action in decision.actions if isinstance(action, EmitEvent)]


def kinds(decision: Decision) -> list[type]:
    """The types of the actions, then of what is said apart (ignored, look_up, retry)."""
    return [type(action) for action in (*decision.actions, *decision.notes)]


def said(decision: Decision) -> tuple[object, ...]:
    """The actions, then what is said apart (ignored, look_up, retry)."""
    return (*decision.actions, *decision.notes)


def no_pod_calls(decision: Decision) -> bool:
    return not any(isinstance(a, (DeletePod, PatchLabels)) for a in decision.actions)


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
                "Pod failed because of Error (container base, exit code 1)",
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
        task_event = EmitEvent(TASK_KEY, TaskInstanceState.FAILED, "Pod failed because of Evicted")
        callback_event = EmitEvent(
            CALLBACK_KEY, CallbackState.FAILED, "Pod failed because of Evicted"
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
            "Pod failed because of OOMKilled (container base, exit code 137)",
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
        assert event_.info.startswith("Pod failed")
        assert "None" not in event_.info
        assert "because of )" not in event_.info


# --- tasks: pre-execution requeue (§5.4) --------------------------------------------------


def failed_before_start(*, pod: str = POD, details: FailureDetails = PULL_FAILED) -> TaskResult:
    return task(TaskInstanceState.FAILED, pod=pod, details=details)


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
    # Cleaned up like any failed pod, requeued, still running, nothing reported.
    assert decision.actions == (
        MARK_DONE,
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
    assert kinds(decision) == [PatchLabels, FreeSlot, EmitEvent]
    assert emitted(decision)[0].state is TaskInstanceState.FAILED
    assert emitted(decision)[0].info == ("Pod failed because of ErrImagePull (container base)")


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
        PatchLabels(OTHER_POD, NS, DONE),
        FreeSlot(TASK_KEY),
        EmitEvent(
            TASK_KEY,
            TaskInstanceState.FAILED,
            "Pod failed because of ErrImagePull (container base)",
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
        failed_before_start(),
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
    assert kinds(decision) == [PatchLabels, FreeSlot, EmitEvent]


def test_adopted_pod_without_an_attempt_record_fails_normally() -> None:
    # Attempt records live in memory only; a pod adopted after a restart has none.
    decision = decide_task(failed_before_start(), running=True)
    assert kinds(decision) == [PatchLabels, FreeSlot, EmitEvent]
    attempts = launched(KubernetesJob(OTHER_TASK_KEY, ("x",)))
    decision = decide_task(failed_before_start(), running=True, attempts=attempts)
    assert kinds(decision) == [PatchLabels, FreeSlot, EmitEvent]
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
            "Pod failed because of OOMKilled (container base, exit code 137)",
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
        MARK_DONE,
        FreeSlot(CALLBACK_KEY),
        EmitEvent(
            CALLBACK_KEY,
            CallbackState.FAILED,
            "Pod failed because of ErrImagePull (container base)",
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
        MARK_DONE,
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
    assert kinds(second) == [PatchLabels, FreeSlot, EmitEvent]
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
    assert kinds(decision) == [PatchLabels, FreeSlot, EmitEvent]


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
    assert kinds(decision) == [PatchLabels, RequeueJob]


# --- pod-creation errors (§5.2) ----------------------------------------------------------

RETRYING = DecisionConfig(task_publish_max_retries=3)


def status_body(message: str) -> str:
    return json.dumps(
        {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message}
    )


CREATE_ERRORS = [
    pytest.param(
        403,
        status_body('pods "p" is forbidden: exceeded quota: compute, requested: cpu=2'),
        None,
        True,
        None,
        id="403-exceeded-quota",
    ),
    pytest.param(
        403,
        status_body('pods is forbidden: User "x" cannot create resource "pods"'),
        None,
        False,
        None,
        id="403-plain",
    ),
    pytest.param(
        409,
        status_body(
            'Operation cannot be fulfilled on pods "p": the object has been modified; '
            "please apply your changes to the latest version and try again"
        ),
        None,
        True,
        None,
        id="409-object-modified",
    ),
    pytest.param(409, status_body('pods "p" already exists'), None, False, None, id="409-plain"),
    pytest.param(
        410, status_body("too old resource version: 5 (10)"), None, True, None, id="410-too-old"
    ),
    pytest.param(410, status_body("Gone"), None, False, None, id="410-plain"),
    pytest.param(429, status_body("Too many requests"), None, True, 0.0, id="429-no-header"),
    pytest.param(
        429, status_body("Too many requests"), {"Retry-After": "7"}, True, 7.0, id="429-header"
    ),
    pytest.param(
        429,
        "",
        {"content-type": "text/plain", "retry-after": "3"},
        True,
        3.0,
        id="429-header-lower-case",
    ),
    pytest.param(500, status_body("internal error"), None, True, None, id="500"),
    pytest.param(502, "", None, True, None, id="502"),
    pytest.param(503, "", None, True, None, id="503"),
    pytest.param(503, "", {"Retry-After": "12"}, True, 12.0, id="503-retry-after"),
    pytest.param(504, "", None, True, None, id="504"),
    pytest.param(400, status_body("Pod is invalid"), None, False, None, id="400"),
    pytest.param(404, status_body('namespaces "x" not found'), None, False, None, id="404"),
    pytest.param(422, status_body("Pod is invalid: spec"), None, False, None, id="422"),
    pytest.param(401, "", None, False, None, id="401"),
    pytest.param(None, None, None, True, None, id="connection-error"),
]


@pytest.mark.parametrize(("status", "body", "headers", "retry", "delay"), CREATE_ERRORS)
def test_create_error_table(
    status: int | None,
    body: str | None,
    headers: dict[str, str] | None,
    retry: bool,
    delay: float | None,
) -> None:
    verdict = classify_create_error(status, body, headers, reason="Reason", config=RETRYING)
    assert verdict.retry is retry
    assert verdict.delay == delay
    if retry:
        assert verdict.reason.endswith("is transient: retry")
    else:
        assert verdict.reason.endswith("is not transient: fail")


@pytest.mark.parametrize(("status", "body", "headers", "retry", "delay"), CREATE_ERRORS)
def test_create_errors_are_not_retried_by_default(
    status: int | None,
    body: str | None,
    headers: dict[str, str] | None,
    retry: bool,
    delay: float | None,
) -> None:
    del retry, delay
    verdict = classify_create_error(status, body, headers)
    assert verdict.retry is False
    assert verdict.delay is None


@pytest.mark.parametrize(
    ("body", "reason", "message", "retry"),
    [
        # The API server's Status JSON: its "message".
        (status_body("exceeded quota: q1"), None, "exceeded quota: q1", True),
        (status_body("exceeded quota: q1").encode(), None, "exceeded quota: q1", True),
        # JSON without a message: nothing to match.
        (json.dumps({"kind": "Status"}), "exceeded quota", "", False),
        # An empty body falls back to the HTTP reason.
        ("", "Forbidden", "Forbidden", False),
        (b"", "Forbidden", "Forbidden", False),
        (None, "Forbidden", "Forbidden", False),
        ("", None, "", False),
        # A plain-text body is the message itself.
        ("exceeded quota: q1", "Forbidden", "exceeded quota: q1", True),
        (b"exceeded quota: q1", None, "exceeded quota: q1", True),
        ('"exceeded quota"', None, '"exceeded quota"', True),
        ("[1, 2]", None, "[1, 2]", False),
    ],
)
def test_create_error_body_forms(
    body: object, reason: str | None, message: str, retry: bool
) -> None:
    verdict = classify_create_error(403, body, reason=reason, config=RETRYING)
    assert verdict.message == message
    assert verdict.retry is retry


def test_create_error_body_as_a_deserialised_status_mapping() -> None:
    """A body already parsed to a dict (the code has a Mapping branch for it) is read too.

    ``body in {"", b""}`` hashes the body first, so any dict body raises ``TypeError``
    before the Mapping branch is reached.
    """
    body = {"kind": "Status", "message": "exceeded quota: q1"}
    verdict = classify_create_error(403, body, config=RETRYING)
    assert verdict.retry is True
    assert verdict.message == "exceeded quota: q1"


@pytest.mark.parametrize("value", ["soon", "Wed, 21 Oct 2015 07:28:00 GMT", "", "1.5", "-5"])
def test_malformed_retry_after_is_ignored(value: str) -> None:
    """A malformed ``Retry-After`` is ignored: 429 waits 0 s, 503 gets no delay.

    RFC 9110 ``delay-seconds`` is ``1*DIGIT``, so "-5" is malformed too; today it gives a
    negative delay.
    """
    headers = {"Retry-After": value}
    assert classify_create_error(429, "", headers, config=RETRYING).delay == 0.0
    assert classify_create_error(503, "", headers, config=RETRYING).delay is None


def test_create_error_retries_exhausted_fail() -> None:
    config = DecisionConfig(task_publish_max_retries=2)
    assert classify_create_error(500, "", retries=1, config=config).retry is True
    verdict = classify_create_error(500, "", retries=2, config=config)
    assert verdict == CreateErrorVerdict(
        False, "HTTP 500 is transient but retries are exhausted (2 of 2)", message=""
    )
    connection = classify_create_error(None, retries=2, config=config)
    assert connection.retry is False
    assert "connection error" in connection.reason


def test_create_error_unlimited_retries() -> None:
    config = DecisionConfig(task_publish_max_retries=-1)
    for retries in (0, 1, 10_000):
        assert classify_create_error(429, "", retries=retries, config=config).retry is True
    assert classify_create_error(400, "", retries=0, config=config).retry is False


def test_requeue_after_a_retryable_create_error() -> None:
    attempts = launched(TASK_JOB)
    decision = decide_create_error(
        TASK_JOB, 429, "", {"Retry-After": "5"}, config=RETRYING, attempts=attempts
    )
    assert decision.actions == (RequeueJob(TASK_JOB, "HTTP 429 is transient: retry", 5.0),)
    assert decision.attempts == attempts  # the record stays: the workload goes on


@pytest.mark.parametrize(
    ("job", "state"),
    [(TASK_JOB, TaskInstanceState.FAILED), (CALLBACK_JOB, CallbackState.FAILED)],
)
def test_requeue_after_a_fatal_create_error_fails_the_workload(
    job: KubernetesJob[Any], state: TaskInstanceState | CallbackState
) -> None:
    attempts = launched(job, OTHER_JOB)
    decision = decide_create_error(
        job, 422, status_body("Pod is invalid"), config=RETRYING, attempts=attempts
    )
    assert decision.actions == (
        FreeSlot(job.key),
        EmitEvent(
            job.key, state, "pod creation failed: HTTP 422 is not transient: fail: Pod is invalid"
        ),
    )
    # The workload is finished: its attempt record goes, the others stay.
    assert decision.attempts == launched(OTHER_JOB)
    (_, failed) = decide_create_error(job, 400, "", config=RETRYING).actions
    assert isinstance(failed, EmitEvent)
    assert failed.info == "pod creation failed: HTTP 400 is not transient: fail"


@pytest.mark.parametrize(("status", "body"), [(429, ""), (422, "Pod is invalid"), (None, None)])
def test_the_deprecated_two_step_creation_error_api_gives_the_same_decision(
    status: int | None, body: str | None
) -> None:
    attempts = launched(TASK_JOB, OTHER_JOB)
    verdict = classify_create_error(status, body, config=RETRYING)
    with pytest.warns(DeprecationWarning, match="decide_create_error"):
        old = requeue_after_create_error(TASK_JOB, verdict, attempts=attempts)
    assert old == decide_create_error(TASK_JOB, status, body, config=RETRYING, attempts=attempts)
    with pytest.warns(DeprecationWarning, match="CreateErrorVerdict"):
        from k8s_workloads.decisions import CreateErrorDecision  # noqa: PLC0415
    assert CreateErrorDecision is CreateErrorVerdict


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


ERROR = ConnectionError("database is gone")
GAVE_UP = f"handling the pod's result gave up after 4 failed attempts ({ERROR!r})"


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


any_result = st.one_of(
    st.builds(task, st.sampled_from([*TaskInstanceState, *ExecutorPseudoState])),
    st.builds(callback, st.sampled_from([*CallbackState, *ExecutorPseudoState])),
)


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


def test_decision_reason_summarises_the_actions() -> None:
    decision = decide_task(
        failed_before_start(),
        running=True,
        attempts=launched(TASK_JOB),
        ti_state=TaskInstanceState.QUEUED,
    )
    assert decision.reason == (
        f"patch {POD} airflow_executor_done=True; "
        "requeue (pod failed before the task ran (try 1 of 1))"
    )
    assert Decision((), Attempts()).reason == "nothing to do"


def test_every_action_kind_has_a_phrase() -> None:
    phrases = [
        describe_action(EmitEvent(TASK_KEY, TaskInstanceState.FAILED, "why")),
        describe_action(DeletePod(POD, NS)),
        describe_action(PatchLabels(POD, NS, DONE)),
        describe_action(RequeueJob(TASK_JOB, "pod failed before the task ran")),
        describe_action(FreeSlot(TASK_KEY)),
        describe_action(LookUpState(TASK_KEY, "the pod succeeded")),
        describe_action(RetryLater(2, "handling failed")),
        describe_action(Ignore("duplicate")),
    ]
    assert phrases == [
        "emit failed",
        f"delete pod {POD}",
        f"patch {POD} airflow_executor_done=True",
        "requeue (pod failed before the task ran)",
        "free slot",
        "look up state (the pod succeeded)",
        "retry later (handling failed)",
        "ignore (duplicate)",
    ]


@pytest.mark.parametrize(
    ("value", "delay"),
    [
        ("1" + "0" * 400, 600.0),  # used to raise OverflowError
        ("100000000000000000000", 600.0),  # used to stop pod creation for good
        ("30", 30.0),
        ("1" * 5000, 0.0),  # past Python's digit limit: malformed, ignored (429: no delay)
        ("1e20", 0.0),  # not an integer: ignored, as the provider does
    ],
)
def test_retry_after_is_capped_and_never_raises(value: str, delay: float) -> None:
    verdict = classify_create_error(
        429, "", {"Retry-After": value}, config=DecisionConfig(task_publish_max_retries=1)
    )
    assert verdict.retry
    assert verdict.delay == delay


def test_the_retry_after_cap_is_configurable() -> None:
    config = DecisionConfig(task_publish_max_retries=1, max_retry_after_seconds=5)
    verdict = classify_create_error(503, "", {"Retry-After": "60"}, config=config)
    assert verdict.delay == 5.0


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


# --- the tables the code runs ------------------------------------------------------------

TABLES = {
    "task": TASK_RULES,
    "callback": CALLBACK_RULES,
    "task give-up": TASK_GIVE_UP_RULES,
    "callback give-up": CALLBACK_GIVE_UP_RULES,
}


def test_the_decision_rules_document_is_generated_from_the_tables() -> None:
    document = pathlib.Path(__file__).resolve().parents[2] / "docs" / "decision-rules.md"
    assert document.read_text(encoding="utf-8") == _rules_document(), (
        "docs/decision-rules.md is stale: run scripts/decision_rules.py"
    )
    for table in TABLES.values():
        assert describe_rules(table) in _rules_document()


@pytest.mark.parametrize("name", list(TABLES))
def test_every_table_ends_with_a_row_for_any_state_and_every_row_says_why(name: str) -> None:
    table = TABLES[name]
    last = table[-1]
    assert last.states is None
    assert last.when == "otherwise"
    for rule in table:
        assert rule.when, rule
        assert rule.then, rule
        assert rule.why, rule
        assert "|" not in rule.when + rule.then + rule.why  # one Markdown table cell each
        # The columns the rows are dispatched on are said in the prose the docs print.
        if rule.running is False:
            assert "not running" in rule.when, rule
        if rule.running is True:
            assert "running" in rule.when.replace("not running", ""), rule


ADOPTED_ONLY = frozenset({ExecutorPseudoState.ADOPTED})


def test_shared_rows_are_written_once() -> None:
    adopted = [rule for rule in TASK_RULES if rule.states == ADOPTED_ONLY]
    assert len(adopted) == 3
    for table in TABLES.values():
        rows = [rule for rule in table if rule.states == ADOPTED_ONLY]
        assert all(any(row is shared for shared in adopted) for row in rows)
        assert len(rows) == len(adopted)


def test_a_rows_text_is_its_decision() -> None:
    # The first row about FAILED tasks that applies when not running is the duplicate row:
    # the table, not a second copy of the rule, decides.
    (duplicate,) = [
        rule
        for rule in TASK_RULES
        if rule.is_about(TaskInstanceState.FAILED) and rule.when == "not running"
    ]
    assert duplicate.then == "ignore"
    decision = decide_task(task(TaskInstanceState.FAILED), running=False)
    assert said(decision) == (Ignore(f"{TASK_KEY!r} is not running: duplicate result"),)


@given(result=any_result, running=st.booleans(), known=st.sampled_from([UNKNOWN, None]))
def test_actions_are_all_things_to_perform(
    result: TaskResult | CallbackResult, running: bool, known: Any
) -> None:
    decision = decide(result, running=running, known_state=known)
    performable = (EmitEvent, DeletePod, PatchLabels, RequeueJob, FreeSlot)
    assert all(isinstance(action, performable) for action in decision.actions)
    assert len(decision.notes) <= 1
    if decision.look_up is not None or decision.retry is not None:
        assert decision.actions == ()


@given(
    state=st.sampled_from(list(ExecutorPseudoState)),
    known=st.sampled_from([UNKNOWN, None, *TaskInstanceState]),
)
def test_giving_up_on_a_pseudo_state_reports_what_decide_would(
    state: ExecutorPseudoState, known: Any
) -> None:
    """The give-up rows that mirror decide's (the LOOKUP row "the state read is what the
    decision would report", the adopted, completed and vanished rows) are held against
    decide itself: for every result the watch or a re-list makes with a pseudo state and
    every state read, giving up reports what decide reports, so the tables cannot drift.
    (For a FAILED pod of a task that has finished, giving up reports the state read where
    decide reports FAILED; the scheduler ignores either for a finished task instance.)"""
    result = task(state)
    attempts = launched(KubernetesJob(result.key, ("x",)))
    gave_up = handling_failed(
        result,
        ERROR,
        running=True,
        failures_so_far=0,
        attempts=attempts,
        config=DecisionConfig(max_handling_retries=0),
        known_state=known,
    )
    reported = [event.state for event in emitted(gave_up)]
    if reported == [TaskInstanceState.FAILED] and known is not TaskInstanceState.FAILED:
        return  # the "otherwise" row: giving up fails what decide would still look up
    decided = decide(result, running=True, attempts=attempts, known_state=known)
    if decided.look_up:
        return  # decide asks for the state first; giving up cannot ask
    assert [event.state for event in emitted(decided)] == reported

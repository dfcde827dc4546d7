"""The executor's rules around the tables: which results need a state read, a leftover
pod's clean-up, the pause after a failed creation, the stale check before a creation."""

from __future__ import annotations

import datetime

import pytest

from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.actions import (
    Decision,
    DeletePod,
    EmitEvent,
    FreeSlot,
    Ignore,
    PatchLabels,
    RequeueJob,
)
from k8s_workloads.decisions.attempts import Attempts
from k8s_workloads.decisions.creation_errors import classify_create_error, decide_create_error
from k8s_workloads.decisions.guards import (
    LEFTOVER_STATES,
    creation_paused_until,
    leftover_cleanup,
    stale_task_reason,
    state_needed,
)
from k8s_workloads.decisions.results import decide
from k8s_workloads.states import CallbackState, ExecutorPseudoState, TaskInstanceState
from tests.support.decision_cases import (
    NS,
    POD,
    TASK_JOB,
    TASK_KEY,
    callback,
    failed_before_start,
    launched,
    task,
)

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
NOTHING = Decision((), Attempts())


# --- state_needed ---------------------------------------------------------------------


def test_a_task_needs_its_state_only_where_the_decision_asks() -> None:
    succeeded = task(ExecutorPseudoState.LOOKUP)
    asking = decide(succeeded, running=True)
    assert asking.look_up is not None
    assert state_needed(succeeded, asking, read_callback_states=False)
    running = task(TaskInstanceState.RUNNING)
    assert not state_needed(running, decide(running, running=True), read_callback_states=True)


def test_a_callback_needs_its_state_wherever_an_event_is_reported() -> None:
    succeeded = callback(CallbackState.SUCCESS)
    reporting = decide(succeeded, running=True)
    assert any(isinstance(action, EmitEvent) for action in reporting.actions)
    assert state_needed(succeeded, reporting, read_callback_states=True)
    assert not state_needed(succeeded, reporting, read_callback_states=False)
    adopted = callback(ExecutorPseudoState.ADOPTED)
    assert not state_needed(adopted, decide(adopted, running=True), read_callback_states=True)


# --- leftover_cleanup -----------------------------------------------------------------


def leftover(
    state: TaskInstanceState | ExecutorPseudoState = TaskInstanceState.FAILED,
    *,
    decision: Decision = NOTHING,
    running: bool = False,
    in_watch: bool = True,
    cleaned: bool = False,
    attempts: Attempts = NOTHING.attempts,
    config: DecisionConfig = DecisionConfig(),
) -> Decision:
    return leftover_cleanup(
        task(state),
        decision,
        running=running,
        in_watch=in_watch,
        cleaned=cleaned,
        attempts=attempts,
        config=config,
    )


@pytest.mark.parametrize("state", sorted(LEFTOVER_STATES - set(CallbackState), key=str))
def test_a_leftover_pod_of_a_settled_workload_is_cleaned_up_without_an_event(
    state: TaskInstanceState | ExecutorPseudoState,
) -> None:
    decision = leftover(state, config=DecisionConfig(delete_worker_pods_on_failure=True))
    assert decision.actions == (DeletePod(POD, NS),)
    assert isinstance(decision.ignored, Ignore)
    assert "leftover" in decision.ignored.reason
    kept = leftover(state, config=DecisionConfig(delete_worker_pods=False))
    assert kept.actions == (PatchLabels(POD, NS, {"airflow_executor_done": "True"}),)


@pytest.mark.parametrize(
    "change",
    [
        {"running": True},
        {"in_watch": False},
        {"cleaned": True},
        {"state": TaskInstanceState.RUNNING},
        {"decision": Decision((FreeSlot(TASK_KEY),), Attempts())},
    ],
    ids=["running", "left the watch", "cleaned already", "not finished", "acted on"],
)
def test_no_leftover_clean_up_where_the_pod_is_not_one(change: dict[str, object]) -> None:
    decision = change.pop("decision", NOTHING)
    assert isinstance(decision, Decision)
    assert leftover(decision=decision, **change) is decision  # type: ignore[arg-type]


def test_the_pod_of_a_requeued_launch_is_no_leftover() -> None:
    attempts = launched(TASK_JOB)
    requeued = decide(
        failed_before_start(),
        running=True,
        attempts=attempts,
        known_state=TaskInstanceState.QUEUED,
    )
    assert any(isinstance(action, RequeueJob) for action in requeued.actions)
    later = decide(failed_before_start(), running=False, attempts=requeued.attempts)
    assert (
        leftover_cleanup(
            failed_before_start(),
            later,
            running=False,
            in_watch=True,
            cleaned=False,
            attempts=requeued.attempts,
            config=DecisionConfig(),
        )
        is later
    )


# --- creation_paused_until ------------------------------------------------------------


def test_a_429_pauses_all_creation_for_its_delay() -> None:
    config = DecisionConfig(task_publish_max_retries=3)
    decision = decide_create_error(
        TASK_JOB, classify_create_error(429, "", {"Retry-After": "30"}, config=config)
    )
    until = creation_paused_until(decision, now=NOW, paused_until=None)
    assert until == NOW + datetime.timedelta(seconds=30)
    longer = NOW + datetime.timedelta(minutes=5)
    assert creation_paused_until(decision, now=NOW, paused_until=longer) == longer


def test_a_failure_without_a_delay_asks_for_no_pause() -> None:
    config = DecisionConfig(task_publish_max_retries=3)
    retried = decide_create_error(TASK_JOB, classify_create_error(500, "", config=config))
    assert any(isinstance(action, RequeueJob) for action in retried.actions)
    assert creation_paused_until(retried, now=NOW, paused_until=None) is None
    failed = decide_create_error(TASK_JOB, classify_create_error(422, "", config=config))
    assert creation_paused_until(failed, now=NOW, paused_until=NOW) is None


# --- stale_task_reason ----------------------------------------------------------------


def test_a_task_instance_still_queued_by_this_scheduler_is_not_stale() -> None:
    row = ("queued", TASK_KEY.try_number, 42)
    assert stale_task_reason(TASK_KEY, row, ti_id="ti-1", scheduler_id="42") is None


@pytest.mark.parametrize(
    ("row", "said"),
    [
        (None, "task instance ti-1 no longer exists"),
        (("running", TASK_KEY.try_number, 42), "state running"),
        (("queued", TASK_KEY.try_number + 1, 42), f"try {TASK_KEY.try_number + 1}"),
        (("queued", TASK_KEY.try_number, 7), "queued by 7"),
    ],
    ids=["gone", "moved on", "retried", "another scheduler"],
)
def test_a_task_instance_that_moved_on_is_stale(
    row: tuple[object, object, object] | None, said: str
) -> None:
    reason = stale_task_reason(TASK_KEY, row, ti_id="ti-1", scheduler_id=42)
    assert reason is not None
    assert said in reason

"""The actions and Decision: what a decision says it does (its reason, each action's
phrase), and that every action is a thing to perform."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.decisions import (
    UNKNOWN,
    decide,
    decide_task,
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
from k8s_workloads.decisions.attempts import Attempts
from k8s_workloads.states import (
    CallbackResult,
    TaskInstanceState,
    TaskResult,
)
from tests.support.decision_cases import (
    DONE,
    NS,
    POD,
    TASK_JOB,
    TASK_KEY,
    any_result,
    failed_before_start,
    launched,
)


def test_decision_reason_summarises_the_actions() -> None:
    decision = decide_task(
        failed_before_start(),
        running=True,
        attempts=launched(TASK_JOB),
        ti_state=TaskInstanceState.QUEUED,
    )
    assert decision.reason == (
        f"delete pod {POD}; requeue (pod failed before the task ran (try 1 of 1))"
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

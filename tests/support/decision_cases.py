"""Results, jobs, failure details and helpers the decision tests share."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from k8s_workloads.decisions.actions import (
    Decision,
    DeletePod,
    EmitEvent,
    PatchLabels,
)
from k8s_workloads.decisions.attempts import Attempts
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.states import (
    CallbackResult,
    CallbackState,
    ExecutorPseudoState,
    FailureDetails,
    KubernetesJob,
    TaskInstanceState,
    TaskResult,
)
from tests.support.event_factory import CALLBACK_ID

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


ERROR = ConnectionError("database is gone")
GAVE_UP = f"handling the pod's result gave up after 4 failed attempts ({ERROR!r})"


any_result = st.one_of(
    st.builds(task, st.sampled_from([*TaskInstanceState, *ExecutorPseudoState])),
    st.builds(callback, st.sampled_from([*CallbackState, *ExecutorPseudoState])),
)


def failed_before_start(*, pod: str = POD, details: FailureDetails = PULL_FAILED) -> TaskResult:
    return task(TaskInstanceState.FAILED, pod=pod, details=details)

from __future__ import annotations

import pytest

from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey
from k8s_workloads.states import (
    CALLBACK_ACTIVE_STATES,
    CALLBACK_TERMINAL_STATES,
    TASK_ADOPTABLE_STATES,
    TASK_FINISHED_STATES,
    TASK_UNFINISHED_STATES,
    CallbackResult,
    CallbackState,
    ExecutorPseudoState,
    KubernetesJob,
    KubernetesResult,
    TaskInstanceState,
    TaskResult,
    result_for,
    state_class_for_key,
)

CALLBACK = CallbackKey("019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e")
TASK = TaskInstanceKey("dag", "task", "run")


def test_callback_states_fit_their_database_column() -> None:
    # The values are Airflow's own (tests/compat/test_parity_states.py holds them next to
    # the released ones); the column for callback states is String(10).
    assert max(len(s.value) for s in CallbackState) <= 10


def test_states_of_different_kinds_never_compare_equal() -> None:
    assert CallbackState.FAILED != TaskInstanceState.FAILED  # type: ignore[comparison-overlap]
    assert TaskInstanceState.FAILED != "failed"  # type: ignore[comparison-overlap]
    assert ExecutorPseudoState.ADOPTED != "adopted"  # type: ignore[comparison-overlap]
    assert CallbackState.FAILED.value == TaskInstanceState.FAILED.value == "failed"


def test_groups_partition_the_states() -> None:
    # What each group holds is Airflow's (tests/compat/test_parity_states.py); here, that
    # they split the states as the executor relies on: no state both active and terminal,
    # or both finished and unfinished; every task state (and None) in one of them.
    assert not CALLBACK_ACTIVE_STATES & CALLBACK_TERMINAL_STATES
    assert CallbackState.SCHEDULED not in CALLBACK_ACTIVE_STATES | CALLBACK_TERMINAL_STATES
    assert not TASK_FINISHED_STATES & TASK_UNFINISHED_STATES
    assert set(TaskInstanceState) | {None} == TASK_FINISHED_STATES | TASK_UNFINISHED_STATES
    assert TASK_ADOPTABLE_STATES <= TASK_UNFINISHED_STATES


def test_state_class_for_key() -> None:
    assert state_class_for_key(TASK) is TaskInstanceState
    assert state_class_for_key(CALLBACK) is CallbackState
    with pytest.raises(TypeError, match="Unknown workload key type: tuple"):
        state_class_for_key(TASK.as_tuple())  # type: ignore[call-overload]


def test_records_hold_typed_values() -> None:
    job = KubernetesJob(CALLBACK, ["python", "-m", "x"])
    assert job.command == ("python", "-m", "x")
    assert job.pod_override is None
    result = CallbackResult(CALLBACK, CallbackState.SUCCESS, "pod", "ns", "12")
    assert result.failure_details is None
    task_result = TaskResult(TASK, ExecutorPseudoState.LOOKUP, "pod", "ns", "12")
    assert task_result != result  # type: ignore[comparison-overlap]
    assert isinstance(task_result, KubernetesResult)
    assert isinstance(result, KubernetesResult)


def test_result_for_makes_the_result_class_of_the_keys_kind() -> None:
    task = TaskInstanceKey("d", "t", "r", 1)
    callback = CallbackKey("00000000-0000-0000-0000-000000000001")
    generic = GenericKey("job-1")
    assert result_for(task, TaskInstanceState.FAILED, "p", "ns", "7") == TaskResult(
        task, TaskInstanceState.FAILED, "p", "ns", "7"
    )
    gone = result_for(callback, ExecutorPseudoState.VANISHED, "", "", launch=2)
    assert gone == CallbackResult(callback, ExecutorPseudoState.VANISHED, "", "", "", launch=2)
    assert type(result_for(generic, CallbackState.FAILED, "p", "ns")).__name__ == "GenericResult"
    with pytest.raises(TypeError, match="a task's result cannot be in"):
        result_for(task, CallbackState.FAILED, "p", "ns")
    with pytest.raises(TypeError, match="result cannot be in"):
        result_for(callback, TaskInstanceState.FAILED, "p", "ns")

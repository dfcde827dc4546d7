"""Type-level promises, checked by ``mypy --strict`` in CI (and their runtime halves by pytest).

``assert_type`` fails the mypy run if an inferred type drifts; each ``# type: ignore[code]``
marks a misuse mypy must reject — with ``warn_unused_ignores`` an accepted misuse fails CI.
"""

from __future__ import annotations

from typing_extensions import assert_type

from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.pods.codec import annotations_to_key
from k8s_workloads.states import (
    CallbackResult,
    CallbackState,
    ExecutorPseudoState,
    GenericResult,
    GenericState,
    KubernetesJob,
    TaskInstanceState,
    TaskResult,
    WorkloadResult,
    state_class_for_key,
)

CALLBACK = CallbackKey("019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e")
TASK = TaskInstanceKey("dag", "task", "run")
GENERIC = GenericKey("job-1")


def _results() -> list[WorkloadResult]:
    return [
        TaskResult(TASK, TaskInstanceState.FAILED, "p1", "ns", "1"),
        CallbackResult(CALLBACK, CallbackState.SUCCESS, "p2", "ns", "2"),
        GenericResult(GENERIC, GenericState.FAILED, "p3", "ns", "3"),
    ]


def test_isinstance_narrows_a_result_and_its_state() -> None:
    seen: list[object] = []
    for result in _results():
        if isinstance(result, CallbackResult):
            assert_type(result.key, CallbackKey)
            assert_type(result.state, CallbackState | ExecutorPseudoState)
            seen.append(result.state)
        elif isinstance(result, GenericResult):
            assert_type(result.key, GenericKey)
            assert_type(result.state, GenericState | ExecutorPseudoState)
            seen.append(result.state)
        else:
            assert_type(result, TaskResult)
            assert_type(result.key, TaskInstanceKey)
            assert_type(result.state, TaskInstanceState | ExecutorPseudoState)
            seen.append(result.state)
    assert seen == [TaskInstanceState.FAILED, CallbackState.SUCCESS, GenericState.FAILED]


def test_state_class_for_key_is_overloaded() -> None:
    assert_type(state_class_for_key(TASK), type[TaskInstanceState])
    assert_type(state_class_for_key(CALLBACK), type[CallbackState])
    assert_type(state_class_for_key(GENERIC), type[GenericState])
    assert state_class_for_key(CALLBACK)("running") is CallbackState.RUNNING


def test_jobs_are_generic_in_their_key() -> None:
    job = KubernetesJob(CALLBACK, ("a",))
    assert_type(job, KubernetesJob[CallbackKey])
    assert_type(job.key, CallbackKey)
    assert job.key is CALLBACK


def test_decoding_gives_the_union_to_narrow() -> None:
    key = annotations_to_key({"callback_id": CALLBACK.id}, airflow_version="3.3.0")
    assert_type(key, WorkloadKey)
    assert isinstance(key, CallbackKey)


def test_misuses_mypy_rejects() -> None:
    # A callback result cannot carry a task state, nor a task key.
    bad_state = CallbackResult(CALLBACK, TaskInstanceState.SUCCESS, "p", "ns", "1")  # type: ignore[arg-type]
    bad_key = TaskResult(CALLBACK, TaskInstanceState.SUCCESS, "p", "ns", "1")  # type: ignore[arg-type]
    # A generic result is not a callback's, nor a task's.
    bad_generic = GenericResult(CALLBACK, GenericState.SUCCESS, "p", "ns", "1")  # type: ignore[arg-type]
    # Pseudo-states are not bare strings.
    bad_pseudo = TaskResult(TASK, "adopted", "p", "ns", "1")  # type: ignore[arg-type]
    # At runtime the records are plain containers; the guarantee is static.
    assert [type(r).__name__ for r in (bad_state, bad_key, bad_generic, bad_pseudo)] == [
        "CallbackResult",
        "TaskResult",
        "GenericResult",
        "TaskResult",
    ]

"""How a decision table is written (:mod:`k8s_workloads.decisions.rules`): what is done
with a settled result's pod under each cleanup option, and which results a row is
looked at for."""

from __future__ import annotations

from typing import Any

import pytest

from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.actions import Decision, DeletePod, PatchLabels
from k8s_workloads.decisions.rules import UNKNOWN, Rule, StateNotRead, cleanup_actions
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.pods.labels import POD_EXECUTOR_DONE_LABEL
from k8s_workloads.states import (
    CallbackResult,
    CallbackState,
    ExecutorPseudoState,
    TaskInstanceState,
    TaskResult,
)

_KEY = TaskInstanceKey("etl", "load", "r1")
_DONE = PatchLabels("p", "ns", {POD_EXECUTOR_DONE_LABEL: "True"})
_DELETE = DeletePod("p", "ns")


def _result(state: TaskInstanceState | ExecutorPseudoState) -> TaskResult:
    return TaskResult(_KEY, state, "p", "ns", "1")


@pytest.mark.parametrize(
    ("options", "failed", "succeeded"),
    [
        ({}, [_DONE], [_DELETE]),  # the provider's default keeps a failed pod
        ({"delete_worker_pods_on_failure": True}, [_DELETE], [_DELETE]),
        ({"delete_worker_pods": False}, [_DONE], [_DONE]),
        ({"mark_kept_failed_pods_done": False}, [], [_DELETE]),
    ],
)
def test_a_settled_pod_is_deleted_or_kept_and_labelled_as_the_options_say(
    options: dict[str, Any], failed: list[object], succeeded: list[object]
) -> None:
    config = DecisionConfig(**options)
    assert cleanup_actions(_result(TaskInstanceState.FAILED), config) == failed
    assert cleanup_actions(_result(TaskInstanceState.SUCCESS), config) == succeeded


def test_a_failed_callbacks_pod_is_kept_as_a_failed_tasks_is() -> None:
    config = DecisionConfig(delete_worker_pods_on_failure=False)
    key = CallbackKey("019ea001-0000-7000-8000-0000000000aa")
    result = CallbackResult(key, CallbackState.FAILED, "p", "ns", "1")
    assert cleanup_actions(result, config) == [_DONE]


def test_a_vanished_pod_has_nothing_left_to_clean_up() -> None:
    for config in (DecisionConfig(), DecisionConfig(delete_worker_pods=False)):
        assert cleanup_actions(_result(ExecutorPseudoState.VANISHED), config) == []


def _row(**fits: bool | None) -> Rule:
    def never(_: object) -> Decision:
        raise AssertionError("not run")

    return Rule(
        frozenset({TaskInstanceState.FAILED}),
        "when",
        "then",
        "why",
        applies=lambda _: True,
        outcome=never,
        **fits,
    )


def test_a_row_is_looked_at_only_for_its_states_running_and_record() -> None:
    any_row, running_only, unrecorded = _row(), _row(running=True), _row(record=False)
    failed, success = TaskInstanceState.FAILED, TaskInstanceState.SUCCESS
    assert any_row.is_about(failed)
    assert not any_row.is_about(success)
    assert any_row.fits(failed, running=False, record=True)
    assert not any_row.fits(None, running=False, record=True)  # None: another state
    assert running_only.fits(failed, running=True, record=False)
    assert not running_only.fits(failed, running=False, record=False)
    assert not unrecorded.fits(failed, running=True, record=True)
    assert unrecorded.fits(failed, running=True, record=False)


def test_a_row_for_any_state_is_about_every_state() -> None:
    row = Rule(None, "when", "then", "why", applies=lambda _: True, outcome=lambda _: None)  # type: ignore[arg-type, return-value]
    assert row.is_about(ExecutorPseudoState.LOOKUP)
    assert row.fits(None, running=True, record=True)


def test_unknown_is_apart_from_every_state_and_from_none() -> None:
    assert isinstance(UNKNOWN, StateNotRead)
    assert UNKNOWN is not None
    assert all(state != UNKNOWN for state in (*TaskInstanceState, *CallbackState))

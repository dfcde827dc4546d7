"""The fake Airflow database (:mod:`k8s_workloads.testing.database`)."""

from __future__ import annotations

import pytest

from k8s_workloads.decisions.actions import EmitEvent
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.states import CallbackState, TaskInstanceState
from k8s_workloads.testing import (
    DatabaseUnavailable,
    FakeAirflowDB,
)


def test_the_database_guards_finished_tasks_but_not_callbacks() -> None:
    db = FakeAirflowDB()
    key, callback = (
        TaskInstanceKey("d", "t", "r", 1),
        CallbackKey("019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"),
    )
    db.add_task(key)
    db.add_callback(callback)
    db.task_finished(key, TaskInstanceState.SUCCESS)
    db.record(EmitEvent(key, TaskInstanceState.FAILED))
    assert db.task_states[key] is TaskInstanceState.SUCCESS
    db.record(EmitEvent(callback, CallbackState.SUCCESS))
    db.record(EmitEvent(callback, CallbackState.FAILED))  # Airflow 3.3 writes it anyway
    assert db.callback_states[callback] is CallbackState.FAILED
    assert db.reported(callback) == [CallbackState.SUCCESS, CallbackState.FAILED]
    db.fail_next()
    with pytest.raises(DatabaseUnavailable):
        db.read_states([key])
    assert db.read_states([key, TaskInstanceKey("d", "u", "r", 1)]) == {
        key: TaskInstanceState.SUCCESS,
        TaskInstanceKey("d", "u", "r", 1): None,
    }
    assert db.reads == 2

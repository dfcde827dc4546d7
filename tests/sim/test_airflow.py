"""Airflow's side of the simulated world (:mod:`k8s_workloads.sim._airflow`): the rows the
scheduler queues and claims, what the task process writes for each pod phase, and how the
scheduler applies each executor event to the kit's database, with the anomalies an event
against the database raises."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from k8s_workloads.decisions.actions import EmitEvent
from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey
from k8s_workloads.sim import _airflow
from k8s_workloads.sim._airflow import AirflowRows
from k8s_workloads.sim.spec import Step
from k8s_workloads.states import CallbackState, TaskInstanceState
from k8s_workloads.testing import FakeAirflowDB
from tests.support.sim_world import CALLBACK_ID, callback, run, started, task, texts

if TYPE_CHECKING:
    from k8s_workloads.sim.world import Simulation


def _task_key(sim_key: object) -> TaskInstanceKey:
    assert isinstance(sim_key, TaskInstanceKey)
    return sim_key


def _emit(sim: Simulation, action: EmitEvent) -> None:
    """The world's scheduler processes ``action`` (as the world hands it over)."""
    _airflow.emit(
        action,
        job_id=sim.scheduler.job_id,
        by_key=sim.by_key,
        rows=sim.rows,
        journal=sim.journal,
    )


def test_a_queued_try_moves_its_tasks_row_and_names_the_scheduler_that_queued_it() -> None:
    rows = AirflowRows(FakeAirflowDB())
    first = TaskInstanceKey("d", "t", "r")
    rows.queue(first, 1)
    assert rows.db.task_states[first] is TaskInstanceState.QUEUED
    assert (rows.row_keys[first.primary], rows.queued_by[first]) == (first, 1)
    second = first.with_try_number(2)
    rows.queue(second, 3)
    # Airflow keeps one row per task instance: the first try's is gone with its owner.
    assert first not in rows.db.task_states
    assert first not in rows.queued_by
    assert (rows.row_keys[first.primary], rows.queued_by[second]) == (second, 3)
    callback_key = CallbackKey(CALLBACK_ID)
    rows.queue(callback_key, 3)
    assert rows.db.callback_states[callback_key] is CallbackState.QUEUED
    with pytest.raises(TypeError, match="Airflow's workloads"):
        rows.queue(GenericKey("w"), 3)
    assert GenericKey("w") not in rows.queued_by


def test_a_claim_moves_the_rows_owner_and_skips_a_key_without_a_row() -> None:
    rows = AirflowRows(FakeAirflowDB())
    task_key, callback_key = TaskInstanceKey("d", "t", "r"), CallbackKey(CALLBACK_ID)
    rows.queue(task_key, 1)
    rows.queue(callback_key, 1)
    rows.claim(task_key, 9)
    assert rows.queued_by[task_key] == 9
    rows.claim(task_key.with_try_number(5), 8)  # a later try: the row's key
    assert rows.queued_by[task_key] == 8
    stranger = CallbackKey("019ea001-0000-7000-8000-0000000000bb")
    rows.claim(stranger, 9)
    rows.claim(GenericKey("w"), 9)  # the simulator runs Airflow's workloads only
    assert stranger not in rows.queued_by
    assert GenericKey("w") not in rows.queued_by
    assert rows.queued_by[callback_key] == 1


def test_the_task_process_writes_running_then_success() -> None:
    sim = started()
    pod = next(iter(sim.runs.values()))
    key = _task_key(pod.key)
    _airflow.task_process(sim.rows.db, sim.journal, pod, Step(phase="Running"), "Running")
    assert sim.rows.db.task_states[key] is TaskInstanceState.RUNNING
    _airflow.task_process(sim.rows.db, sim.journal, pod, Step(phase="Succeeded"), "Succeeded")
    assert sim.rows.db.task_states[key] is TaskInstanceState.SUCCESS
    assert [entry.text for entry in sim.journal.timeline if entry.kind == "task"] == [
        "task process sets task d.t try=1 running",
        "task process sets task d.t try=1 success",
    ]


def test_a_deleted_pods_running_phase_and_a_finished_task_write_nothing() -> None:
    sim = started()
    pod = next(iter(sim.runs.values()))
    key = _task_key(pod.key)
    _airflow.task_process(
        sim.rows.db, sim.journal, pod, Step(phase="Running", deleted=True), "Running"
    )
    assert sim.rows.db.task_states[key] is TaskInstanceState.QUEUED
    sim.rows.db.task_states[key] = TaskInstanceState.FAILED
    _airflow.task_process(sim.rows.db, sim.journal, pod, Step(phase="Succeeded"), "Succeeded")
    assert sim.rows.db.task_states[key] is TaskInstanceState.FAILED


def test_the_steps_own_write_wins_and_none_writes_nothing() -> None:
    sim = started()
    pod = next(iter(sim.runs.values()))
    key = _task_key(pod.key)
    _airflow.task_process(sim.rows.db, sim.journal, pod, Step(task=None), "Succeeded")
    assert sim.rows.db.task_states[key] is TaskInstanceState.QUEUED
    _airflow.task_process(
        sim.rows.db, sim.journal, pod, Step(task=TaskInstanceState.UP_FOR_RETRY), "Running"
    )
    assert sim.rows.db.task_states[key] is TaskInstanceState.UP_FOR_RETRY


def test_a_callbacks_pod_and_a_stale_try_have_no_task_process() -> None:
    sim = started(task(), callback())
    runs = {type(run.key): run for run in sim.runs.values()}
    before = dict(sim.rows.db.callback_states)
    _airflow.task_process(
        sim.rows.db, sim.journal, runs[CallbackKey], Step(phase="Running"), "Running"
    )
    assert sim.rows.db.callback_states == before
    task_run = runs[TaskInstanceKey]
    task_run.key = _task_key(task_run.key).with_try_number(2)  # the row is at try 1
    _airflow.task_process(sim.rows.db, sim.journal, task_run, Step(phase="Running"), "Running")
    assert task_run.key not in sim.rows.db.task_states


def test_an_event_for_an_unknown_key_is_an_anomaly() -> None:
    sim = started()
    stranger = TaskInstanceKey("other", "x", "r")
    _emit(sim, EmitEvent(stranger, TaskInstanceState.SUCCESS))
    assert [(anomaly.kind, anomaly.workload) for anomaly in sim.journal.anomalies] == [
        ("unknown_key", None)
    ]


def test_a_final_event_sets_an_unfinished_task_and_a_second_one_is_an_anomaly() -> None:
    sim = started()
    live = sim.live[0]
    key = _task_key(live.key)
    _emit(sim, EmitEvent(key, TaskInstanceState.FAILED, info="OOMKilled"))
    assert sim.rows.db.task_states[key] is TaskInstanceState.FAILED
    assert (live.terminal_events, live.events) == (1, ["t0:failed"])
    assert "OOMKilled" in live.notes
    assert [event.state for event in sim.journal.event_log] == ["failed"]
    _emit(sim, EmitEvent(key, TaskInstanceState.FAILED))
    assert [anomaly.kind for anomaly in sim.journal.anomalies] == ["double_terminal_event"]
    assert sim.journal.anomalies[0].message.endswith("events so far: t0:failed, t0:failed")


def test_a_running_event_only_logs_and_a_stale_try_is_ignored_with_a_note() -> None:
    sim = started()
    live = sim.live[0]
    key = _task_key(live.key)
    _airflow.apply_task_event(sim.rows, sim.journal, key, TaskInstanceState.RUNNING, live)
    assert sim.rows.db.task_states[key] is TaskInstanceState.QUEUED
    _airflow.apply_task_event(
        sim.rows, sim.journal, key.with_try_number(0), TaskInstanceState.FAILED, live
    )
    assert sim.rows.db.task_states[key] is TaskInstanceState.QUEUED
    assert "event for stale try 0 ignored by the scheduler" in live.notes
    assert sim.journal.anomalies == []


def test_an_executor_event_against_the_task_process_is_a_contradiction() -> None:
    sim = started()
    live = sim.live[0]
    key = _task_key(live.key)
    sim.rows.db.task_states[key] = TaskInstanceState.SUCCESS
    _airflow.apply_task_event(sim.rows, sim.journal, key, TaskInstanceState.FAILED, live)
    assert sim.rows.db.task_states[key] is TaskInstanceState.SUCCESS  # not overwritten
    assert [anomaly.kind for anomaly in sim.journal.anomalies] == ["contradicting_event"]
    assert sim.journal.anomalies[0].message.endswith(
        "the executor reports failed for task d.t try=1, which the task process set to success"
    )


def test_an_event_of_the_wrong_kind_or_without_a_row_is_a_bad_event() -> None:
    sim = started(task(), callback())
    task_live, callback_live = sim.live
    _airflow.apply_task_event(
        sim.rows, sim.journal, _task_key(task_live.key), CallbackState.SUCCESS, task_live
    )
    assert isinstance(callback_live.key, CallbackKey)
    _airflow.apply_callback_event(
        sim.rows.db, sim.journal, callback_live.key, TaskInstanceState.SUCCESS, callback_live
    )
    _airflow.apply_callback_event(
        sim.rows.db,
        sim.journal,
        CallbackKey("019ea001-0000-7000-8000-0000000000bb"),
        CallbackState.SUCCESS,
        callback_live,
    )
    assert [anomaly.kind for anomaly in sim.journal.anomalies] == ["bad_event"] * 3


def test_callback_events_are_written_unguarded_and_overwriting_a_final_one_is_an_anomaly() -> None:
    sim = started(callback())
    live = sim.live[0]
    key = live.key
    assert isinstance(key, CallbackKey)
    _airflow.apply_callback_event(sim.rows.db, sim.journal, key, CallbackState.RUNNING, live)
    assert sim.rows.db.callback_states[key] is CallbackState.RUNNING
    _airflow.apply_callback_event(sim.rows.db, sim.journal, key, CallbackState.SUCCESS, live)
    assert sim.journal.anomalies == []
    _airflow.apply_callback_event(sim.rows.db, sim.journal, key, CallbackState.FAILED, live)
    assert sim.rows.db.callback_states[key] is CallbackState.FAILED  # as Airflow 3.3 does
    assert [anomaly.kind for anomaly in sim.journal.anomalies] == ["overwritten_final_state"]


def test_a_whole_run_moves_a_callback_only_by_executor_events() -> None:
    result = run(callback())
    assert texts(result, "task") == []  # no task process writes for a callback
    assert [event.state for event in result.scheduler_events] == ["running", "success"]
    assert result.workload("cb").end_state == "success"

"""Airflow's side of the simulated world (:mod:`k8s_workloads.sim._airflow`): what the task
process writes for each pod phase, and how the scheduler applies each executor event to
the kit's database, with the anomalies an event against the database raises."""

from __future__ import annotations

from k8s_workloads.decisions.actions import EmitEvent
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.sim import _airflow
from k8s_workloads.sim.spec import Step
from k8s_workloads.states import CallbackState, TaskInstanceState
from tests.support.sim_world import callback, run, started, task, texts


def _task_key(sim_key: object) -> TaskInstanceKey:
    assert isinstance(sim_key, TaskInstanceKey)
    return sim_key


def test_the_task_process_writes_running_then_success() -> None:
    sim = started()
    pod = next(iter(sim.runs.values()))
    key = _task_key(pod.key)
    _airflow.task_process(sim, pod, Step(phase="Running"), "Running")
    assert sim.db.task_states[key] is TaskInstanceState.RUNNING
    _airflow.task_process(sim, pod, Step(phase="Succeeded"), "Succeeded")
    assert sim.db.task_states[key] is TaskInstanceState.SUCCESS
    assert [entry.text for entry in sim.timeline if entry.kind == "task"] == [
        "task process sets task d.t try=1 running",
        "task process sets task d.t try=1 success",
    ]


def test_a_deleted_pods_running_phase_and_a_finished_task_write_nothing() -> None:
    sim = started()
    pod = next(iter(sim.runs.values()))
    key = _task_key(pod.key)
    _airflow.task_process(sim, pod, Step(phase="Running", deleted=True), "Running")
    assert sim.db.task_states[key] is TaskInstanceState.QUEUED
    sim.db.task_states[key] = TaskInstanceState.FAILED
    _airflow.task_process(sim, pod, Step(phase="Succeeded"), "Succeeded")
    assert sim.db.task_states[key] is TaskInstanceState.FAILED


def test_the_steps_own_write_wins_and_none_writes_nothing() -> None:
    sim = started()
    pod = next(iter(sim.runs.values()))
    key = _task_key(pod.key)
    _airflow.task_process(sim, pod, Step(task=None), "Succeeded")
    assert sim.db.task_states[key] is TaskInstanceState.QUEUED
    _airflow.task_process(sim, pod, Step(task=TaskInstanceState.UP_FOR_RETRY), "Running")
    assert sim.db.task_states[key] is TaskInstanceState.UP_FOR_RETRY


def test_a_callbacks_pod_and_a_stale_try_have_no_task_process() -> None:
    sim = started(task(), callback())
    runs = {type(run.key): run for run in sim.runs.values()}
    before = dict(sim.db.callback_states)
    _airflow.task_process(sim, runs[CallbackKey], Step(phase="Running"), "Running")
    assert sim.db.callback_states == before
    task_run = runs[TaskInstanceKey]
    task_run.key = _task_key(task_run.key).with_try_number(2)  # the row is at try 1
    _airflow.task_process(sim, task_run, Step(phase="Running"), "Running")
    assert task_run.key not in sim.db.task_states


def test_an_event_for_an_unknown_key_is_an_anomaly() -> None:
    sim = started()
    stranger = TaskInstanceKey("other", "x", "r")
    _airflow.emit(sim, EmitEvent(stranger, TaskInstanceState.SUCCESS))
    assert [(anomaly.kind, anomaly.workload) for anomaly in sim.anomalies] == [
        ("unknown_key", None)
    ]


def test_a_final_event_sets_an_unfinished_task_and_a_second_one_is_an_anomaly() -> None:
    sim = started()
    live = sim.live[0]
    key = _task_key(live.key)
    _airflow.emit(sim, EmitEvent(key, TaskInstanceState.FAILED, info="OOMKilled"))
    assert sim.db.task_states[key] is TaskInstanceState.FAILED
    assert (live.terminal_events, live.events) == (1, ["t0:failed"])
    assert "OOMKilled" in live.notes
    assert [event.state for event in sim.event_log] == ["failed"]
    _airflow.emit(sim, EmitEvent(key, TaskInstanceState.FAILED))
    assert [anomaly.kind for anomaly in sim.anomalies] == ["double_terminal_event"]
    assert sim.anomalies[0].message.endswith("events so far: t0:failed, t0:failed")


def test_a_running_event_only_logs_and_a_stale_try_is_ignored_with_a_note() -> None:
    sim = started()
    live = sim.live[0]
    key = _task_key(live.key)
    _airflow.apply_task_event(sim, key, TaskInstanceState.RUNNING, live)
    assert sim.db.task_states[key] is TaskInstanceState.QUEUED
    _airflow.apply_task_event(sim, key.with_try_number(0), TaskInstanceState.FAILED, live)
    assert sim.db.task_states[key] is TaskInstanceState.QUEUED
    assert "event for stale try 0 ignored by the scheduler" in live.notes
    assert sim.anomalies == []


def test_an_executor_event_against_the_task_process_is_a_contradiction() -> None:
    sim = started()
    live = sim.live[0]
    key = _task_key(live.key)
    sim.db.task_states[key] = TaskInstanceState.SUCCESS
    _airflow.apply_task_event(sim, key, TaskInstanceState.FAILED, live)
    assert sim.db.task_states[key] is TaskInstanceState.SUCCESS  # not overwritten
    assert [anomaly.kind for anomaly in sim.anomalies] == ["contradicting_event"]
    assert sim.anomalies[0].message.endswith(
        "the executor reports failed for task d.t try=1, which the task process set to success"
    )


def test_an_event_of_the_wrong_kind_or_without_a_row_is_a_bad_event() -> None:
    sim = started(task(), callback())
    task_live, callback_live = sim.live
    _airflow.apply_task_event(sim, _task_key(task_live.key), CallbackState.SUCCESS, task_live)
    assert isinstance(callback_live.key, CallbackKey)
    _airflow.apply_callback_event(sim, callback_live.key, TaskInstanceState.SUCCESS, callback_live)
    _airflow.apply_callback_event(
        sim,
        CallbackKey("019ea001-0000-7000-8000-0000000000bb"),
        CallbackState.SUCCESS,
        callback_live,
    )
    assert [anomaly.kind for anomaly in sim.anomalies] == ["bad_event"] * 3


def test_callback_events_are_written_unguarded_and_overwriting_a_final_one_is_an_anomaly() -> None:
    sim = started(callback())
    live = sim.live[0]
    key = live.key
    assert isinstance(key, CallbackKey)
    _airflow.apply_callback_event(sim, key, CallbackState.RUNNING, live)
    assert sim.db.callback_states[key] is CallbackState.RUNNING
    _airflow.apply_callback_event(sim, key, CallbackState.SUCCESS, live)
    assert sim.anomalies == []
    _airflow.apply_callback_event(sim, key, CallbackState.FAILED, live)
    assert sim.db.callback_states[key] is CallbackState.FAILED  # as Airflow 3.3 does
    assert [anomaly.kind for anomaly in sim.anomalies] == ["overwritten_final_state"]


def test_a_whole_run_moves_a_callback_only_by_executor_events() -> None:
    result = run(callback())
    assert texts(result, "task") == []  # no task process writes for a callback
    assert [event.state for event in result.scheduler_events] == ["running", "success"]
    assert result.workload("cb").end_state == "success"

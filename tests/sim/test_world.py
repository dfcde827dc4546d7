"""The simulated world (:mod:`k8s_workloads.sim.world`): what its task process, Airflow
scheduler, kubelet and restarts do, each seen from a small scenario's result.

Each scenario here is written for one behaviour; the bundled scenarios' expected end
states are in ``test_simulate.py``; the world's parts are tested on their own beside it
(``test_airflow.py``, ``test_restart.py``, ...).
"""

from __future__ import annotations

from k8s_workloads.keys import TaskInstanceKey
from k8s_workloads.sim import parse_scenario, simulate
from k8s_workloads.sim.world import Simulation
from k8s_workloads.states import TaskInstanceState
from k8s_workloads.testing import FakeAirflowDB
from tests.support.sim_world import run, scenario_text, task, texts

_RUNS = "{phase: Running}"
_429 = "{status: 429, message: slow down, retry_after: %d}"


def test_the_task_process_writes_running_then_success() -> None:
    result = run(task())
    assert texts(result, "task") == [
        "task process sets task d.t try=1 running",
        "task process sets task d.t try=1 success",
    ]
    assert result.workload("t").end_state == "success"
    assert result.anomalies == ()


def test_a_succeeded_pod_whose_task_wrote_nothing_is_reported_as_the_database_says() -> None:
    result = run(task("{phase: Running, task: none}", "{after: 2, phase: Succeeded, task: none}"))
    assert texts(result, "task") == []
    # A Succeeded pod is looked up: the executor reports the task instance's own state.
    assert [event.state for event in result.scheduler_events] == ["queued"]
    assert result.workload("t").end_state == "queued"
    assert {anomaly.kind for anomaly in result.anomalies} >= {"unfinished"}


def test_an_executor_event_against_the_task_process_is_a_contradiction() -> None:
    result = run(task(_RUNS, "{after: 2, phase: Failed, task: success}"))
    assert result.workload("t").end_state == "success"  # the database is not overwritten
    assert [anomaly.kind for anomaly in result.anomalies] == ["contradicting_event"]
    assert result.anomalies[0].message.endswith(
        "the executor reports failed for task d.t try=1, which the task process set to success"
    )


def test_a_scripted_creation_error_fails_the_create_call_and_is_retried() -> None:
    result = run(task(create_errors=_429 % 2), extra="config:\n  task_publish_max_retries: 1\n")
    errors = texts(result, "create_error")
    assert errors[0].endswith("HTTP 429 'slow down'")
    report = result.workload("t")
    assert (report.end_state, report.launches, len(report.pods)) == ("success", 1, 1)
    create_ticks = [entry.t for entry in result.timeline if entry.kind == "create"]
    error_tick = next(entry.t for entry in result.timeline if entry.kind == "create_error")
    assert create_ticks[0] >= error_tick + 2  # Retry-After is honoured


def test_a_pod_deleted_before_the_executor_deletes_it_is_already_gone() -> None:
    result = run(task(_RUNS, "{after: 2, deleted: true}"))
    assert result.workload("t").end_state == "failed"
    assert result.pods_left == ()  # nothing left behind, whoever deleted it


def test_a_restart_hands_a_running_pod_to_the_next_scheduler() -> None:
    result = run(
        task(_RUNS, "{after: 6, phase: Succeeded}"), extra="restarts:\n  - {at: 3, down: 1}\n"
    )
    report = result.workload("t")
    assert (report.end_state, report.launches, report.terminal_events) == ("success", 1, 1)
    assert "adopted by scheduler 2" in report.notes
    assert result.schedulers == 2
    assert result.restarts == 1


def test_a_task_queued_under_a_dead_scheduler_without_a_pod_gets_the_next_try() -> None:
    result = run(
        task(create_errors=_429 % 5),
        extra="config:\n  task_publish_max_retries: 3\nrestarts:\n  - {at: 1, down: 1}\n",
    )
    resets = texts(result, "reset")
    assert resets == ["reset task d.t try=1: no pod to adopt → rescheduled as try 2"]
    report = result.workload("t")
    assert report.key.endswith("try=2")
    assert report.end_state == "success"


def test_a_410_loses_the_events_in_flight_and_relists() -> None:
    result = run(
        task(_RUNS, "{after: 1, phase: Succeeded, late: 3}"),
        extra="watch_errors:\n  - {at: 3, code: 410}\n",
    )
    watch = texts(result, "watch")
    assert any(
        text.startswith("watch stream broken: 1 events in flight are lost") for text in watch
    )
    assert any(text.startswith("re-list: 1 pods read as ADDED") for text in watch)
    assert result.workload("t").end_state == "success"
    assert result.anomalies == ()


def test_the_database_is_the_kits_and_ends_as_the_report_says() -> None:
    scenario = parse_scenario(scenario_text())
    simulation = Simulation(scenario)
    result = simulation.run()
    assert isinstance(simulation.rows.db, FakeAirflowDB)
    key = TaskInstanceKey("d", "t", scenario.workloads[0].key.run_id)  # type: ignore[union-attr]
    assert simulation.rows.db.state(key) is TaskInstanceState.SUCCESS
    assert result.workload("t").end_state == "success"


def test_without_a_timeline_the_run_ends_the_same() -> None:
    scenario = parse_scenario(scenario_text())
    full = simulate(scenario)
    bare = simulate(scenario, record_timeline=False)
    assert bare.timeline == ()
    assert bare.end_states == full.end_states == {"success": 1}
    assert bare.events_processed == full.events_processed

"""What the simulation keeps while it runs (:mod:`k8s_workloads.sim._state`): the short
forms of keys and decisions on the timeline, the journal of what the run reports, a
workload's notes, and a scheduler's queue of watch events due at later ticks."""

from __future__ import annotations

from k8s_workloads.decisions.actions import Action, DeletePod, EmitEvent, FreeSlot
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.sim import parse_scenario
from k8s_workloads.sim._state import (
    Journal,
    Live,
    Scheduler,
    action_texts,
    describe_key,
    shorten,
)
from k8s_workloads.sim.spec import WorkloadSpec
from k8s_workloads.sim.world import Simulation
from k8s_workloads.states import TaskInstanceState
from tests.support.sim_world import CALLBACK_ID, scenario_text

_KEY = TaskInstanceKey("etl", "load", "manual__1", try_number=2, map_index=3)


def test_a_key_is_described_without_its_run_id() -> None:
    assert describe_key(_KEY) == "task etl.load try=2 map=3"
    assert describe_key(CallbackKey(CALLBACK_ID)) == f"callback {CALLBACK_ID}"


def test_a_reason_names_the_key_by_its_short_description() -> None:
    reason = f"{_KEY!r} is not running; {_KEY!r} again"
    assert (
        shorten(reason, _KEY)
        == "task etl.load try=2 map=3 is not running; task etl.load try=2 map=3 again"
    )
    assert shorten("nothing about it", _KEY) == "nothing about it"


def test_actions_read_as_short_phrases_about_the_key() -> None:
    actions: list[Action] = [
        EmitEvent(_KEY, TaskInstanceState.FAILED),
        DeletePod("p-1", "airflow"),
        FreeSlot(_KEY),
    ]
    assert action_texts(actions, _KEY) == ("emit failed", "delete pod p-1", "free slot")


def test_a_note_is_kept_once() -> None:
    live = Live(WorkloadSpec("t", _KEY), _KEY)
    live.note("adopted")
    live.note("reset")
    live.note("adopted")
    assert live.notes == ["adopted", "reset"]


def test_the_journal_writes_each_entry_at_its_current_tick() -> None:
    journal = Journal()
    live = Live(WorkloadSpec("t", _KEY), _KEY)
    journal.log("queue", "queue it", workload="t")
    journal.t = 3
    journal.anomaly("unfinished", "never ended", live)
    journal.anomaly("timeout", "still busy")
    assert [(entry.t, entry.kind, entry.text, entry.workload) for entry in journal.timeline] == [
        (0, "queue", "queue it", "t")
    ]
    assert [(a.t, a.kind, a.workload) for a in journal.anomalies] == [
        (3, "unfinished", "t"),
        (3, "timeout", None),
    ]
    assert live.notes == ["ANOMALY unfinished"]  # the workload's record says so too


def test_a_journal_without_a_timeline_still_keeps_the_anomalies() -> None:
    journal = Journal(record_timeline=False)
    journal.log("queue", "queue it")
    journal.anomaly("timeout", "still busy")
    assert journal.timeline == []
    assert [anomaly.kind for anomaly in journal.anomalies] == ["timeout"]


def _scheduler() -> tuple[Simulation, Scheduler]:
    sim = Simulation(parse_scenario(scenario_text()))
    core = sim.new_core(4)
    return sim, Scheduler(4, core, sim.start_watch(core))


def test_events_are_due_by_tick_then_in_the_order_they_were_pushed() -> None:
    _, scheduler = _scheduler()
    scheduler.push(5, {"n": "late"})
    scheduler.push(2, {"n": "first"})
    scheduler.push(2, {"n": "second"})
    assert scheduler.pop_due(1) is None
    assert scheduler.pop_due(4) == {"n": "first"}
    assert scheduler.pop_due(4) == {"n": "second"}
    assert scheduler.pop_due(4) is None
    assert scheduler.pop_due(9) == {"n": "late"}


def test_a_stopping_scheduler_drops_what_is_due_then_what_its_watch_holds() -> None:
    sim, scheduler = _scheduler()
    scheduler.push(7, {"n": "b"})
    scheduler.push(3, {"n": "a"})
    pod = {
        "metadata": {"name": "p", "labels": {"airflow-worker": "4"}},
        "spec": {"containers": [{"name": "base", "image": "x"}]},
    }
    sim.cluster.create_pod("airflow", pod)  # an event the watch holds, not yet due
    dropped = scheduler.drop_all()
    assert dropped[:2] == [{"n": "a"}, {"n": "b"}]
    assert [(event["type"], event["object"]["metadata"]["name"]) for event in dropped[2:]] == [
        ("ADDED", "p")
    ]
    assert scheduler.pop_due(100) is None
    assert len(scheduler.watch) == 0


def test_the_schedulers_label_is_its_job_id_as_a_label_value() -> None:
    _, scheduler = _scheduler()
    assert scheduler.label == "4"

"""A new scheduler after a restart (:mod:`k8s_workloads.sim._restart`): it adopts the dead
scheduler's pods and claims their rows (:meth:`~k8s_workloads.sim._airflow.AirflowRows.claim`,
tested in ``test_airflow.py``), resets the task instances nobody adopted to their
next try, and re-queues queued callbacks only under the simulator's assumption."""

from __future__ import annotations

from k8s_workloads.decisions.actions import FreeSlot, TrackRunning
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.sim import _restart
from k8s_workloads.states import CallbackState
from tests.support.sim_world import callback, restarted, started, task


def test_the_next_scheduler_adopts_a_pod_and_claims_its_row() -> None:
    sim = restarted(started())
    (live,) = sim.live
    core = sim.scheduler.core
    assert sim.scheduler.job_id == 2
    assert core.is_running(live.key)
    assert sim.rows.queued_by[live.key] == 2
    assert "adopted by scheduler 2" in live.notes
    adopt_lines = [entry.text for entry in sim.journal.timeline if entry.kind == "adopt"]
    assert adopt_lines[0].startswith("adoption: 1 pods listed, 1 adopted")
    assert adopt_lines[-1] == "track running (task d.t try=1)"


def test_a_task_queued_under_a_dead_scheduler_without_a_pod_gets_the_next_try() -> None:
    sim = restarted(started(create=False))
    (live,) = sim.live
    assert isinstance(live.key, TaskInstanceKey)
    assert live.key.try_number == 2
    assert sim.by_key[live.key] is live
    assert sim.requeues == {sim.t + 1: [live]}
    assert not sim.scheduler.core.is_running(live.key)
    old = live.key.with_try_number(1)
    assert sim.rows.db.task_states[old] is None  # reset; the row moves on when it is queued
    assert old not in sim.rows.queued_by
    assert [entry.text for entry in sim.journal.timeline if entry.kind == "reset"] == [
        "reset task d.t try=1: no pod to adopt → rescheduled as try 2"
    ]


def test_a_queued_callback_without_a_pod_is_requeued_only_under_the_assumption() -> None:
    sim = restarted(started(callback(), create=False))
    (live,) = sim.live
    assert sim.requeues == {sim.t + 1: [live]}
    assert live.key not in sim.rows.queued_by
    assert "re-queued after restart (simulator's reset_orphaned_callbacks)" in live.notes

    kept = restarted(
        started(callback(), extra="config:\n  reset_orphaned_callbacks: false\n", create=False)
    )
    assert kept.requeues == {}
    key = kept.live[0].key
    assert isinstance(key, CallbackKey)
    assert kept.rows.db.callback_states[key] is CallbackState.QUEUED


def test_only_track_running_actions_for_running_keys_count_as_tracked() -> None:
    sim = started(task(), task(id="u"))
    running, other = (live.key for live in sim.live)
    gone = TaskInstanceKey("d", "gone", "r")
    actions = [TrackRunning(running), FreeSlot(other), TrackRunning(gone), "not an action"]
    assert _restart.tracked(sim.scheduler.core, actions) == [running]

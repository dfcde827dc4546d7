"""The simulator's checks on the executor (:mod:`k8s_workloads.sim._checks`): each compares
a decision, a re-list or the end of the run with what only the simulation knows (the
pods that exist, the database, who owns a pod) and reports an anomaly where they differ."""

from __future__ import annotations

from typing import TYPE_CHECKING

from k8s_workloads.decisions.actions import Decision, EmitEvent, FreeSlot, Ignore
from k8s_workloads.executor.requests import Handled
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.pods.labels import AIRFLOW_WORKER_LABEL, POD_EXECUTOR_DONE_LABEL
from k8s_workloads.sim import _checks
from k8s_workloads.states import (
    CallbackResult,
    CallbackState,
    ExecutorPseudoState,
    TaskInstanceState,
    TaskResult,
)
from tests.support.sim_world import callback, started, task

if TYPE_CHECKING:
    from k8s_workloads.decisions.actions import Action
    from k8s_workloads.sim.world import Simulation
    from k8s_workloads.states import WorkloadResult


def _pod_name(sim: Simulation) -> str:
    ((_, name),) = sim.runs
    return name


def _task_result(sim: Simulation, state: TaskInstanceState | ExecutorPseudoState) -> TaskResult:
    key = sim.live[0].key
    assert isinstance(key, TaskInstanceKey)
    return TaskResult(key, state, _pod_name(sim), sim.config.namespace, "1")


def _handled(sim: Simulation, result: WorkloadResult, *actions: Action) -> Handled:
    note = None if actions else Ignore("nothing to do")
    decision = Decision(actions, sim.scheduler.core.attempts, note)
    return Handled(result.key, "result", decision, result)


def _check(sim: Simulation, record: Handled) -> None:
    """Hold ``record`` against the world's ground truth, as the world does after a pass."""
    _checks.check(
        record,
        sched=sim.scheduler,
        by_key=sim.by_key,
        db=sim.rows.db,
        cluster=sim.cluster,
        journal=sim.journal,
    )


def _check_adoption(sim: Simulation, result: WorkloadResult) -> None:
    _checks.check_adoption(
        result, sim.live[0], label=sim.scheduler.label, cluster=sim.cluster, journal=sim.journal
    )


def _kinds(sim: Simulation) -> list[str]:
    return [anomaly.kind for anomaly in sim.journal.anomalies]


def test_a_completed_callback_the_decision_does_not_report_is_an_anomaly() -> None:
    sim = started(callback())
    key = sim.live[0].key
    assert isinstance(key, CallbackKey)
    result = CallbackResult(
        key, ExecutorPseudoState.COMPLETED, _pod_name(sim), sim.config.namespace, "1"
    )
    _check(sim, _handled(sim, result, EmitEvent(key, CallbackState.SUCCESS)))
    assert _kinds(sim) == []
    _check(sim, _handled(sim, result))
    assert _kinds(sim) == ["completed_callback_not_reported"]
    assert "stays queued and never gets SUCCESS" in sim.journal.anomalies[0].message
    assert sim.live[0].completed_by_adoption == {_pod_name(sim)}


def test_ignoring_a_result_of_a_finished_workload_still_running_leaks_its_slot() -> None:
    sim = started()
    live = sim.live[0]
    result = _task_result(sim, TaskInstanceState.FAILED)
    sim.rows.db.task_states[result.key] = TaskInstanceState.FAILED
    live.terminal_events = 1
    _check(sim, _handled(sim, result, FreeSlot(result.key)))
    assert _kinds(sim) == []  # the slot is freed
    _check(sim, _handled(sim, result))
    assert _kinds(sim) == ["slot_leak"]
    assert sim.journal.anomalies[0].message.startswith(
        "task d.t try=1 is in running but already failed"
    )


def test_an_adopted_result_for_a_pod_this_scheduler_still_owns_is_a_false_adoption() -> None:
    sim = started()
    result = _task_result(sim, ExecutorPseudoState.ADOPTED)
    _check(sim, _handled(sim, result, FreeSlot(result.key)))
    assert _kinds(sim) == ["false_adoption"]
    assert "the pod stopped matching the watch selector;" in sim.journal.anomalies[0].message
    assert "the pod is still owned by this scheduler" in sim.journal.anomalies[0].message


def test_a_false_adoption_names_the_done_label_and_a_real_one_passes() -> None:
    sim = started()
    result = _task_result(sim, ExecutorPseudoState.ADOPTED)
    name = _pod_name(sim)
    sim.cluster.patch_pod(
        sim.config.namespace, name, {"metadata": {"labels": {POD_EXECUTOR_DONE_LABEL: "True"}}}
    )
    _check_adoption(sim, result)
    assert f"patched {POD_EXECUTOR_DONE_LABEL}=True on it" in sim.journal.anomalies[0].message
    sim.cluster.patch_pod(
        sim.config.namespace, name, {"metadata": {"labels": {AIRFLOW_WORKER_LABEL: "2"}}}
    )
    _check_adoption(sim, result)
    assert len(sim.journal.anomalies) == 1  # another scheduler owns it: a real adoption


def _resync(sim: Simulation) -> None:
    """Hold the world against its cluster as after a re-list, as the world does."""
    _checks.check_resync(
        sim.scheduler.core,
        cluster=sim.cluster,
        runs=sim.runs,
        by_key=sim.by_key,
        journal=sim.journal,
    )


def test_a_running_key_whose_pod_is_gone_after_a_relist_is_lost() -> None:
    sim = started()
    _resync(sim)
    assert _kinds(sim) == []
    sim.cluster.delete_pod(sim.config.namespace, _pod_name(sim), grace_period_seconds=0)
    _resync(sim)
    assert _kinds(sim) == ["lost_in_resync"]
    assert sim.journal.anomalies[0].workload == "t"


def test_the_end_of_a_run_reports_what_is_left_running_and_unfinished() -> None:
    sim = started(task(fields="expect: success"), task(id="u"))
    done = sim.live[1].key
    assert isinstance(done, TaskInstanceKey)
    sim.rows.db.task_states[done] = TaskInstanceState.SUCCESS
    _checks.final_checks(
        sim.scheduler.core,
        workloads=sim.live,
        by_key=sim.by_key,
        db=sim.rows.db,
        journal=sim.journal,
    )
    assert sorted((anomaly.kind, anomaly.workload) for anomaly in sim.journal.anomalies) == [
        ("left_running", "t"),
        ("left_running", "u"),
        ("unexpected_end_state", "t"),
        ("unfinished", "t"),
    ]
    unexpected = next(a for a in sim.journal.anomalies if a.kind == "unexpected_end_state")
    assert unexpected.message == "task d.t try=1 ended queued, expected success"

"""A new scheduler after a restart, as Airflow runs one: it lists the dead schedulers'
pods, hands the executor what they had queued or running, claims what it adopted, and
resets the task instances nobody adopted (and, as an assumption, queued callbacks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from k8s_workloads.decisions.actions import TrackRunning
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.sim._state import describe_key
from k8s_workloads.states import CALLBACK_TERMINAL_STATES, TASK_ADOPTABLE_STATES, CallbackState

if TYPE_CHECKING:
    from collections.abc import Iterable

    from k8s_workloads.keys import WorkloadKey
    from k8s_workloads.pods.manifest import Manifest
    from k8s_workloads.sim.world import Simulation

__all__ = ["adopt", "claim", "reset_orphans", "tracked"]


def adopt(sim: Simulation) -> None:
    sched = sim.scheduler
    listed: list[Manifest] = []
    for selector in sched.core.adoption_selectors(sim.dead_ids):
        listing = sim.cluster.list_pods(
            sim.config.namespace,
            label_selector=selector.label_selector,
            field_selector=selector.field_selector,
        )
        listed.extend(listing["items"])
    # In name order; a pod in two lists is passed twice: the core counts it once.
    pods = sorted(listed, key=lambda pod: str(pod["metadata"]["name"]))
    dead = set(sim.dead_ids)
    expected = [
        live.key
        for live in sim.live
        if isinstance(live.key, TaskInstanceKey)
        and live.key in sim.db.task_states
        and sim.db.task_states[live.key] in TASK_ADOPTABLE_STATES
        and sim.queued_by.get(live.key) in dead
    ]
    active_callbacks = [
        key
        for key, state in sim.db.callback_states.items()
        if state not in CALLBACK_TERMINAL_STATES
    ]
    plan = sched.core.adopt(
        pods,
        expected_task_keys=expected,
        expected_callback_keys=active_callbacks,
    )
    sim.log(
        "adopt",
        f"adoption: {len({pod['metadata']['name'] for pod in pods})} pods listed, "
        f"{len(plan.adopted)} adopted, "
        f"{len(plan.completed)} completed, {len(plan.skipped)} skipped, "
        f"{len(plan.undecodable)} undecodable; {len(expected)} task instances to adopt",
    )
    for skipped in (*plan.skipped, *plan.undecodable):
        sim.log("adopt", f"left alone: {skipped.reason}", pod=skipped.pod_name)
    sim.sync(why="adoption: Succeeded under a dead scheduler")
    for key in plan.adopted:
        if sched.core.is_running(key):
            claim(sim, key, sched.job_id)
    for key in tracked(sim, plan.actions):
        live = sim.by_key.get(key)
        if live is not None:
            live.note(f"adopted by scheduler {sched.job_id}")
        sim.log(
            "adopt",
            f"track running ({describe_key(key)})",
            workload=live.spec.id if live else None,
        )
    reset_orphans(sim, sched.core.not_adopted(expected), dead)


def tracked(sim: Simulation, actions: Iterable[object]) -> list[WorkloadKey]:
    core = sim.scheduler.core
    return [
        action.key
        for action in actions
        if isinstance(action, TrackRunning) and core.is_running(action.key)
    ]


def claim(sim: Simulation, key: WorkloadKey, job_id: int) -> None:
    row_key: WorkloadKey | None
    if isinstance(key, CallbackKey):
        row_key = key if key in sim.db.callback_states else None
    elif isinstance(key, TaskInstanceKey):
        row_key = sim.row_keys.get(key.primary)
    else:  # the simulator runs Airflow's workloads only
        row_key = None
    if row_key is not None:
        sim.queued_by[row_key] = job_id


def reset_orphans(sim: Simulation, not_adopted: list[TaskInstanceKey], dead: set[int]) -> None:
    for key in not_adopted:
        live = sim.by_key[key]
        row_key = sim.row_keys[key.primary]
        sim.db.task_states[row_key] = None
        sim.queued_by.pop(row_key, None)
        new_key = key.with_try_number(key.try_number + 1)
        live.key = new_key
        sim.by_key[new_key] = live
        sim.requeues.setdefault(sim.t + 1, []).append(live)
        live.note(f"reset: no pod to adopt; rescheduled as try {new_key.try_number}")
        sim.log(
            "reset",
            f"reset {describe_key(key)}: no pod to adopt → rescheduled as try {new_key.try_number}",
            workload=live.spec.id,
        )
    if not sim.config.reset_orphaned_callbacks:
        return
    core = sim.scheduler.core
    for live in sim.live:
        callback_key = live.key
        if not isinstance(callback_key, CallbackKey) or core.is_running(callback_key):
            continue
        if sim.db.callback_states.get(callback_key) is not CallbackState.QUEUED:
            continue
        if sim.queued_by.get(callback_key) not in dead:
            continue
        del sim.queued_by[callback_key]
        sim.requeues.setdefault(sim.t + 1, []).append(live)
        live.note("re-queued after restart (simulator's reset_orphaned_callbacks)")
        sim.log(
            "reset",
            f"re-queue {describe_key(callback_key)}: queued, no pod (assumption: "
            "reset_orphaned_callbacks; Airflow 3.3.2 leaves it queued)",
            workload=live.spec.id,
        )

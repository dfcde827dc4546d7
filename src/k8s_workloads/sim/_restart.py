"""A new scheduler after a restart, as Airflow runs one: it lists the dead schedulers'
pods, hands the executor what they had queued or running (:func:`adopt`), claims what it
adopted (:func:`claim_adopted`), and resets the task instances nobody adopted (and, as an
assumption, queued callbacks: :func:`reset_orphans`).

The simulation runs the executor's pass between the hand-over and the claims; each step
takes the scheduler's executor core, the database's rows and the workloads it reads, and
writes its lines to the run's :class:`~k8s_workloads.sim._state.Journal`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from k8s_workloads.decisions.actions import TrackRunning
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.sim._state import describe_key
from k8s_workloads.states import CALLBACK_TERMINAL_STATES, TASK_ADOPTABLE_STATES, CallbackState

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping, MutableMapping, Sequence

    from k8s_workloads.decisions.adoption import AdoptionPlan
    from k8s_workloads.executor.core import ExecutorCore
    from k8s_workloads.keys import WorkloadKey
    from k8s_workloads.pods.manifest import Manifest
    from k8s_workloads.sim._airflow import AirflowRows
    from k8s_workloads.sim._state import Journal, Live
    from k8s_workloads.testing.cluster import FakeCluster

__all__ = ["adopt", "claim_adopted", "reset_orphans", "tracked"]


def adopt(
    core: ExecutorCore,
    *,
    dead_ids: Sequence[int],
    cluster: FakeCluster,
    namespace: str,
    workloads: Iterable[Live],
    rows: AirflowRows,
    journal: Journal,
) -> tuple[AdoptionPlan, list[TaskInstanceKey]]:
    """Hand ``core`` the pods of the dead schedulers (``dead_ids``) in ``namespace`` and
    the rows queued or running under them: the adoption's plan, and the task instances
    it was told to expect."""
    listed: list[Manifest] = []
    for selector in core.adoption_selectors(dead_ids):
        listing = cluster.list_pods(
            namespace,
            label_selector=selector.label_selector,
            field_selector=selector.field_selector,
        )
        listed.extend(listing["items"])
    # In name order; a pod in two lists is passed twice: the core counts it once.
    pods = sorted(listed, key=lambda pod: str(pod["metadata"]["name"]))
    dead = set(dead_ids)
    expected = [
        live.key
        for live in workloads
        if isinstance(live.key, TaskInstanceKey)
        and live.key in rows.db.task_states
        and rows.db.task_states[live.key] in TASK_ADOPTABLE_STATES
        and rows.queued_by.get(live.key) in dead
    ]
    active_callbacks = [
        key
        for key, state in rows.db.callback_states.items()
        if state not in CALLBACK_TERMINAL_STATES
    ]
    plan = core.adopt(
        pods,
        expected_task_keys=expected,
        expected_callback_keys=active_callbacks,
    )
    journal.log(
        "adopt",
        f"adoption: {len({pod['metadata']['name'] for pod in pods})} pods listed, "
        f"{len(plan.adopted)} adopted, "
        f"{len(plan.completed)} completed, {len(plan.skipped)} skipped, "
        f"{len(plan.undecodable)} undecodable; {len(expected)} task instances to adopt",
    )
    for skipped in (*plan.skipped, *plan.undecodable):
        journal.log("adopt", f"left alone: {skipped.reason}", pod=skipped.pod_name)
    return plan, expected


def claim_adopted(
    plan: AdoptionPlan,
    core: ExecutorCore,
    job_id: int,
    *,
    by_key: Mapping[WorkloadKey, Live],
    rows: AirflowRows,
    journal: Journal,
) -> None:
    """Once the adoption's requests are performed, scheduler ``job_id`` (its executor
    ``core``) claims the rows of what it runs."""
    for key in plan.adopted:
        if core.is_running(key):
            rows.claim(key, job_id)
    for key in tracked(core, plan.actions):
        live = by_key.get(key)
        if live is not None:
            live.note(f"adopted by scheduler {job_id}")
        journal.log(
            "adopt",
            f"track running ({describe_key(key)})",
            workload=live.spec.id if live else None,
        )


def tracked(core: ExecutorCore, actions: Iterable[object]) -> list[WorkloadKey]:
    """The keys of ``actions``' ``TrackRunning`` that ``core`` runs."""
    return [
        action.key
        for action in actions
        if isinstance(action, TrackRunning) and core.is_running(action.key)
    ]


def reset_orphans(
    core: ExecutorCore,
    not_adopted: list[TaskInstanceKey],
    dead: Collection[int],
    *,
    workloads: Iterable[Live],
    by_key: MutableMapping[WorkloadKey, Live],
    rows: AirflowRows,
    journal: Journal,
    callbacks: bool,
) -> list[Live]:
    """Reset the task instances nobody adopted to their next try (``by_key`` learns the
    new key) and, with ``callbacks``, release the callbacks queued under a ``dead``
    scheduler that ``core`` does not run: the workloads to queue again, in order."""
    requeued: list[Live] = []
    for key in not_adopted:
        live = by_key[key]
        row_key = rows.row_keys[key.primary]
        rows.db.task_states[row_key] = None
        rows.queued_by.pop(row_key, None)
        new_key = key.with_try_number(key.try_number + 1)
        live.key = new_key
        by_key[new_key] = live
        requeued.append(live)
        live.note(f"reset: no pod to adopt; rescheduled as try {new_key.try_number}")
        journal.log(
            "reset",
            f"reset {describe_key(key)}: no pod to adopt → rescheduled as try {new_key.try_number}",
            workload=live.spec.id,
        )
    if not callbacks:
        return requeued
    for live in workloads:
        callback_key = live.key
        if not isinstance(callback_key, CallbackKey) or core.is_running(callback_key):
            continue
        if rows.db.callback_states.get(callback_key) is not CallbackState.QUEUED:
            continue
        if rows.queued_by.get(callback_key) not in dead:
            continue
        del rows.queued_by[callback_key]
        requeued.append(live)
        live.note("re-queued after restart (simulator's reset_orphaned_callbacks)")
        journal.log(
            "reset",
            f"re-queue {describe_key(callback_key)}: queued, no pod (assumption: "
            "reset_orphaned_callbacks; Airflow 3.3.2 leaves it queued)",
            workload=live.spec.id,
        )
    return requeued

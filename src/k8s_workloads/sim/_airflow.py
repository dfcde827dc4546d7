"""Airflow's side of the simulated world: its database (the kit's
:class:`~k8s_workloads.testing.FakeAirflowDB`, with the scheduler's bookkeeping:
:class:`AirflowRows`) and what the task process and the scheduler write to it.

The task process writes ``running`` when its pod runs and ``success`` when it succeeds (or
what the step's ``task`` says); the scheduler applies each executor event as Airflow 3.3
does: a final state over an unfinished task instance, callback states unguarded. An
event that contradicts the database, or a second final event, is an anomaly."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey
from k8s_workloads.sim._state import describe_key
from k8s_workloads.sim.report import EmittedEvent
from k8s_workloads.sim.spec import is_terminal
from k8s_workloads.states import CALLBACK_TERMINAL_STATES, CallbackState, TaskInstanceState

if TYPE_CHECKING:
    from collections.abc import Mapping

    from k8s_workloads.decisions.actions import EmitEvent
    from k8s_workloads.keys import WorkloadKey
    from k8s_workloads.sim._state import Journal, Live, PodRun
    from k8s_workloads.sim.spec import Step
    from k8s_workloads.states import WorkloadState
    from k8s_workloads.testing.database import FakeAirflowDB

__all__ = ["AirflowRows", "apply_callback_event", "apply_task_event", "emit", "task_process"]


@dataclasses.dataclass
class AirflowRows:
    """Airflow's database as the simulated scheduler keeps it."""

    db: FakeAirflowDB
    row_keys: dict[tuple[str, str, str | None, int], TaskInstanceKey] = dataclasses.field(
        default_factory=dict
    )
    """The try each task instance's row is at, by its primary key: Airflow keeps one row
    per task instance (its current try); the kit's database keys rows by the whole key."""
    queued_by: dict[WorkloadKey, int] = dataclasses.field(default_factory=dict)
    """The scheduler job that queued (or adopted) each row: what adoption and resets
    read (Airflow's ``queued_by_job_id``)."""

    def queue(self, key: WorkloadKey, job_id: int) -> None:
        """Write the row of a workload scheduler ``job_id`` queues (a task instance's row
        moves on to this try)."""
        if isinstance(key, CallbackKey):
            self.db.add_callback(key)
        elif isinstance(key, GenericKey):
            raise TypeError(f"the simulator runs Airflow's workloads, not {key!r}")
        else:
            old = self.row_keys.pop(key.primary, None)  # the row moves on to this try
            if old is not None:
                del self.db.task_states[old]
                self.queued_by.pop(old, None)
            self.db.add_task(key)
            self.row_keys[key.primary] = key
        self.queued_by[key] = job_id

    def claim(self, key: WorkloadKey, job_id: int) -> None:
        """Scheduler ``job_id`` adopted ``key``: its row (if any) is now that job's."""
        row_key: WorkloadKey | None
        if isinstance(key, CallbackKey):
            row_key = key if key in self.db.callback_states else None
        elif isinstance(key, TaskInstanceKey):
            row_key = self.row_keys.get(key.primary)
        else:  # the simulator runs Airflow's workloads only
            row_key = None
        if row_key is not None:
            self.queued_by[row_key] = job_id


def task_process(db: FakeAirflowDB, journal: Journal, run: PodRun, step: Step, phase: str) -> None:
    """What the pod's task process writes to ``db`` after ``step`` (``phase``: the pod's)."""
    key = run.key
    if not isinstance(key, TaskInstanceKey):
        return
    if key not in db.task_states:
        return  # not its row's try any more
    state = db.task_states[key]
    if step.task != "default":  # the script says what the process writes
        if step.task is None or step.task is state:
            return
        db.task_states[key] = step.task
    elif phase == "Running" and not step.deleted and state is TaskInstanceState.QUEUED:
        db.task_started(key)
    elif phase == "Succeeded" and state in {
        TaskInstanceState.QUEUED,
        TaskInstanceState.RUNNING,
    }:
        db.task_finished(key, TaskInstanceState.SUCCESS)
    else:
        return
    write = db.task_states[key]
    assert write is not None  # noqa: S101 - each branch above wrote a state
    journal.log(
        "task",
        f"task process sets {describe_key(key)} {write.value}",
        pod=run.name,
        workload=run.live.spec.id,
        state=write.value,
    )


def emit(
    action: EmitEvent,
    *,
    job_id: int,
    by_key: Mapping[WorkloadKey, Live],
    rows: AirflowRows,
    journal: Journal,
) -> None:
    """Scheduler ``job_id`` processes the executor's event at once, as Airflow does."""
    live = by_key.get(action.key)
    if live is None:
        journal.anomaly("unknown_key", f"event for an unknown key {action.key!r}")
        return
    live.events.append(f"t{journal.t}:{action.state.value}")
    if journal.record_timeline:
        journal.event_log.append(
            EmittedEvent(
                journal.t,
                job_id,
                live.spec.id,
                describe_key(action.key),
                action.state.value,
                action.info,
            )
        )
    if is_terminal(action.state):
        if action.info:
            live.note(action.info)
        live.terminal_events += 1
        if live.terminal_events == 2:
            journal.anomaly(
                "double_terminal_event",
                f"a second final event ({action.state.value}) for {describe_key(action.key)}"
                f"; events so far: {', '.join(live.events)}",
                live,
            )
    if isinstance(action.key, CallbackKey):
        apply_callback_event(rows.db, journal, action.key, action.state, live)
    elif isinstance(action.key, TaskInstanceKey):
        apply_task_event(rows, journal, action.key, action.state, live)


def apply_callback_event(
    db: FakeAirflowDB, journal: Journal, key: CallbackKey, state: WorkloadState, live: Live
) -> None:
    current = db.callback_states.get(key)
    if current is None or not isinstance(state, CallbackState):
        journal.anomaly("bad_event", f"callback event {state} without a callback row", live)
        return
    # Airflow 3.3's scheduler sets running/success/failed unconditionally.
    if current in CALLBACK_TERMINAL_STATES and state is not current:
        journal.anomaly(
            "overwritten_final_state",
            f"{describe_key(key)} was {current.value}; the event sets {state.value}",
            live,
        )
    if state in {CallbackState.RUNNING, CallbackState.SUCCESS, CallbackState.FAILED}:
        db.callback_states[key] = state


def apply_task_event(
    rows: AirflowRows, journal: Journal, key: TaskInstanceKey, state: WorkloadState, live: Live
) -> None:
    row_key = rows.row_keys.get(key.primary)
    if row_key is None or not isinstance(state, TaskInstanceState):
        journal.anomaly("bad_event", f"task event {state} without a task instance row", live)
        return
    if row_key != key:
        live.note(f"event for stale try {key.try_number} ignored by the scheduler")
        return
    if not is_terminal(state):
        return  # the scheduler only logs running/queued events
    current = rows.db.task_states[key]
    if current in {TaskInstanceState.QUEUED, TaskInstanceState.RUNNING, None}:
        # "executor reports finished although the task says running"
        rows.db.task_states[key] = state
    elif current is not state:
        journal.anomaly(
            "contradicting_event",
            f"the executor reports {state.value} for {describe_key(key)}, "
            f"which the task process set to {current.value}",
            live,
        )

"""Airflow's side of the simulated world: what the task process and the scheduler write
to the database (the kit's :class:`~k8s_workloads.testing.FakeAirflowDB`).

The task process writes ``running`` when its pod runs and ``success`` when it succeeds (or
what the step's ``task`` says); the scheduler applies each executor event as Airflow 3.3
does: a final state over an unfinished task instance, callback states unguarded. An
event that contradicts the database, or a second final event, is an anomaly."""

from __future__ import annotations

from typing import TYPE_CHECKING

from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.sim._state import describe_key
from k8s_workloads.sim.report import EmittedEvent
from k8s_workloads.sim.spec import is_terminal
from k8s_workloads.states import CALLBACK_TERMINAL_STATES, CallbackState, TaskInstanceState

if TYPE_CHECKING:
    from k8s_workloads.decisions.actions import EmitEvent
    from k8s_workloads.sim._state import Live, PodRun
    from k8s_workloads.sim.spec import Step
    from k8s_workloads.sim.world import Simulation
    from k8s_workloads.states import WorkloadState

__all__ = ["apply_callback_event", "apply_task_event", "emit", "task_process"]


def task_process(sim: Simulation, run: PodRun, step: Step, phase: str) -> None:
    key = run.key
    if not isinstance(key, TaskInstanceKey):
        return
    if key not in sim.db.task_states:
        return  # not its row's try any more
    state = sim.db.task_states[key]
    if step.task != "default":  # the script says what the process writes
        if step.task is None or step.task is state:
            return
        sim.db.task_states[key] = step.task
    elif phase == "Running" and not step.deleted and state is TaskInstanceState.QUEUED:
        sim.db.task_started(key)
    elif phase == "Succeeded" and state in {
        TaskInstanceState.QUEUED,
        TaskInstanceState.RUNNING,
    }:
        sim.db.task_finished(key, TaskInstanceState.SUCCESS)
    else:
        return
    write = sim.db.task_states[key]
    assert write is not None  # noqa: S101 - each branch above wrote a state
    sim.log(
        "task",
        f"task process sets {describe_key(key)} {write.value}",
        pod=run.name,
        workload=run.live.spec.id,
        state=write.value,
    )


def emit(sim: Simulation, action: EmitEvent) -> None:
    live = sim.by_key.get(action.key)
    if live is None:
        sim.anomaly("unknown_key", f"event for an unknown key {action.key!r}")
        return
    live.events.append(f"t{sim.t}:{action.state.value}")
    if sim.record_timeline:
        sim.event_log.append(
            EmittedEvent(
                sim.t,
                sim.scheduler.job_id,
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
            sim.anomaly(
                "double_terminal_event",
                f"a second final event ({action.state.value}) for {describe_key(action.key)}"
                f"; events so far: {', '.join(live.events)}",
                live,
            )
    if isinstance(action.key, CallbackKey):
        apply_callback_event(sim, action.key, action.state, live)
    elif isinstance(action.key, TaskInstanceKey):
        apply_task_event(sim, action.key, action.state, live)


def apply_callback_event(
    sim: Simulation, key: CallbackKey, state: WorkloadState, live: Live
) -> None:
    current = sim.db.callback_states.get(key)
    if current is None or not isinstance(state, CallbackState):
        sim.anomaly("bad_event", f"callback event {state} without a callback row", live)
        return
    # Airflow 3.3's scheduler sets running/success/failed unconditionally.
    if current in CALLBACK_TERMINAL_STATES and state is not current:
        sim.anomaly(
            "overwritten_final_state",
            f"{describe_key(key)} was {current.value}; the event sets {state.value}",
            live,
        )
    if state in {CallbackState.RUNNING, CallbackState.SUCCESS, CallbackState.FAILED}:
        sim.db.callback_states[key] = state


def apply_task_event(
    sim: Simulation, key: TaskInstanceKey, state: WorkloadState, live: Live
) -> None:
    row_key = sim.row_keys.get(key.primary)
    if row_key is None or not isinstance(state, TaskInstanceState):
        sim.anomaly("bad_event", f"task event {state} without a task instance row", live)
        return
    if row_key != key:
        live.note(f"event for stale try {key.try_number} ignored by the scheduler")
        return
    if not is_terminal(state):
        return  # the scheduler only logs running/queued events
    current = sim.db.task_states[key]
    if current in {TaskInstanceState.QUEUED, TaskInstanceState.RUNNING, None}:
        # "executor reports finished although the task says running"
        sim.db.task_states[key] = state
    elif current is not state:
        sim.anomaly(
            "contradicting_event",
            f"the executor reports {state.value} for {describe_key(key)}, "
            f"which the task process set to {current.value}",
            live,
        )

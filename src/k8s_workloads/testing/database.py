"""A fake Airflow metadata database: task instance and callback states, and the event
buffer the scheduler reads (and, for an executor with no Airflow, its generic workloads'
states, kept as callbacks' are).

Task instances change state from two sides, as in Airflow: the task process in the pod
(:meth:`FakeAirflowDB.task_started`, :meth:`FakeAirflowDB.task_finished`) and the
scheduler acting on executor events (:meth:`FakeAirflowDB.record`, which writes a
terminal state only over an unfinished task instance). Callback states are written only
from executor events, unguarded, as Airflow 3.3's scheduler does: the executor must not
overwrite a terminal one. Reads can be made to fail with :meth:`FakeAirflowDB.fail_next`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.states import (
    CALLBACK_TERMINAL_STATES,
    TASK_FINISHED_STATES,
    CallbackState,
    TaskInstanceState,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from k8s_workloads.decisions.actions import EmitEvent

__all__ = ["DatabaseUnavailable", "FakeAirflowDB"]


class DatabaseUnavailable(ConnectionError):
    """A database read failed (an outage made with :meth:`FakeAirflowDB.fail_next`)."""


class FakeAirflowDB:
    """Task instance and callback rows, and the executor's reported events, in order."""

    def __init__(self) -> None:
        self.task_states: dict[TaskInstanceKey, TaskInstanceState | None] = {}
        self.callback_states: dict[CallbackKey, CallbackState] = {}
        self.generic_states: dict[GenericKey, CallbackState] = {}
        """Generic workloads' states (:data:`~k8s_workloads.states.GenericState`): written
        from executor events, unguarded, as callbacks' are."""
        self.events: list[EmitEvent] = []
        """Every event the executor reported (the event buffer, never emptied)."""
        self.reads = 0
        """How many state queries were made."""
        self._failures = 0

    # --- rows -------------------------------------------------------------------------

    def add_task(
        self, key: TaskInstanceKey, state: TaskInstanceState | None = TaskInstanceState.QUEUED
    ) -> None:
        self.task_states[key] = state

    def add_callback(self, key: CallbackKey, state: CallbackState = CallbackState.QUEUED) -> None:
        self.callback_states[key] = state

    def add_generic(self, key: GenericKey, state: CallbackState = CallbackState.QUEUED) -> None:
        """A generic workload's row (an executor keeping its workloads' states)."""
        self.generic_states[key] = state

    def state(self, key: WorkloadKey) -> TaskInstanceState | CallbackState | None:
        if isinstance(key, TaskInstanceKey):
            return self.task_states.get(key)
        if isinstance(key, GenericKey):
            return self.generic_states.get(key)
        return self.callback_states.get(key)

    # --- the task process -------------------------------------------------------------

    def task_started(self, key: TaskInstanceKey) -> None:
        """The task process started (QUEUED becomes RUNNING)."""
        if self.task_states.get(key) is TaskInstanceState.QUEUED:
            self.task_states[key] = TaskInstanceState.RUNNING

    def task_finished(self, key: TaskInstanceKey, state: TaskInstanceState) -> None:
        """The task process recorded its own end state."""
        if self.task_states.get(key) not in TASK_FINISHED_STATES:
            self.task_states[key] = state

    # --- the executor's side ----------------------------------------------------------

    def fail_next(self, times: int = 1) -> None:
        """Make the next ``times`` reads fail with :class:`DatabaseUnavailable`."""
        self._failures += times

    def read_states(
        self, keys: Iterable[WorkloadKey]
    ) -> dict[WorkloadKey, TaskInstanceState | CallbackState | None]:
        """One query for every key's state (an absent row reads as None)."""
        self.reads += 1
        if self._failures:
            self._failures -= 1
            raise DatabaseUnavailable("the metadata database is unavailable")
        return {key: self.state(key) for key in keys}

    def record(self, event: EmitEvent) -> None:
        """What the scheduler does with one executor event."""
        self.events.append(event)
        key, state = event.key, event.state
        if isinstance(key, CallbackKey) and isinstance(state, CallbackState):
            self.callback_states[key] = state  # Airflow 3.3 writes it unguarded
        elif isinstance(key, GenericKey) and isinstance(state, CallbackState):
            self.generic_states[key] = state
        elif (
            isinstance(key, TaskInstanceKey)
            and isinstance(state, TaskInstanceState)
            and state in {TaskInstanceState.SUCCESS, TaskInstanceState.FAILED}
            and self.task_states.get(key) not in TASK_FINISHED_STATES
        ):
            self.task_states[key] = state

    def reported(self, key: WorkloadKey) -> list[TaskInstanceState | CallbackState]:
        """The states reported for ``key``, in order."""
        return [event.state for event in self.events if event.key == key]

    def terminal_reports(self, key: WorkloadKey) -> list[EmitEvent]:
        return [
            event
            for event in self.events
            if event.key == key
            and (
                event.state in CALLBACK_TERMINAL_STATES
                or event.state in {TaskInstanceState.SUCCESS, TaskInstanceState.FAILED}
            )
        ]

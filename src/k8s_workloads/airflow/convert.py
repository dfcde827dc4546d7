"""Keys and states between this library's types and Airflow's, both ways.

The library's keys and states are their own types (a ``CallbackState`` never equals a
``TaskInstanceState``); Airflow's are a named tuple, a dataclass and ``str`` enums, whose
callback and task ``"failed"`` are equal. Convert at the executor's boundary, and only
there: Airflow's scheduler silently ignores a library ``CallbackState`` under an Airflow
key, and only logs "Unknown workload key type" for a library ``CallbackKey``.

Every function raises :class:`ConversionError` (a ``TypeError``) naming what it got,
never ``KeyError`` or ``AttributeError``.
"""

from __future__ import annotations

import enum
from typing import overload

from airflow.models.callback import CallbackKey as AirflowCallbackKey
from airflow.models.taskinstancekey import TaskInstanceKey as AirflowTaskInstanceKey
from airflow.utils.state import CallbackState as AirflowCallbackState
from airflow.utils.state import TaskInstanceState as AirflowTaskInstanceState

from k8s_workloads.keys import CallbackKey, GenericKey, InvalidKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.states import CallbackState, TaskInstanceState, state_class_for_key

__all__ = [
    "ConversionError",
    "from_airflow_key",
    "from_airflow_state",
    "to_airflow_key",
    "to_airflow_state",
]


class ConversionError(TypeError):
    """A key or state that has no counterpart on the other side."""


@overload
def to_airflow_key(key: TaskInstanceKey) -> AirflowTaskInstanceKey: ...
@overload
def to_airflow_key(key: CallbackKey) -> AirflowCallbackKey: ...
@overload
def to_airflow_key(key: WorkloadKey) -> AirflowTaskInstanceKey | AirflowCallbackKey: ...
def to_airflow_key(key: WorkloadKey) -> AirflowTaskInstanceKey | AirflowCallbackKey:
    """The Airflow key for a library key (a task key needs its ``run_id``: Airflow 3's do).

    A :class:`~k8s_workloads.keys.GenericKey` has none: :class:`ConversionError` (the Airflow
    executor never submits one, and a generic pod in its watch is not running there).
    """
    if isinstance(key, CallbackKey):
        return AirflowCallbackKey(key.id)
    if isinstance(key, TaskInstanceKey):
        if key.run_id is None:
            raise ConversionError(f"{key!r}: run_id is None; Airflow 3's task keys need one")
        return AirflowTaskInstanceKey(
            key.dag_id, key.task_id, key.run_id, key.try_number, key.map_index
        )
    if isinstance(key, GenericKey):
        raise ConversionError(f"{key!r}: a generic workload has no Airflow key")
    raise ConversionError(f"not a workload key: {type(key).__name__}")


def from_airflow_key(key: object) -> WorkloadKey:
    """The library key for an Airflow ``TaskInstanceKey`` or ``CallbackKey``."""
    try:
        if isinstance(key, AirflowCallbackKey):
            return CallbackKey(key.id)
        if isinstance(key, AirflowTaskInstanceKey):
            return TaskInstanceKey.from_tuple(tuple(key))
    except InvalidKey as error:
        raise ConversionError(f"{key!r}: {error}") from None
    raise ConversionError(f"not an Airflow workload key: {type(key).__name__} {key!r}")


@overload
def to_airflow_state(state: TaskInstanceState) -> AirflowTaskInstanceState: ...
@overload
def to_airflow_state(state: CallbackState) -> AirflowCallbackState: ...
def to_airflow_state(
    state: TaskInstanceState | CallbackState,
) -> AirflowTaskInstanceState | AirflowCallbackState:
    """Airflow's enum member for a library state, of the same kind."""
    if isinstance(state, CallbackState):
        return AirflowCallbackState(state.value)
    if isinstance(state, TaskInstanceState):
        return AirflowTaskInstanceState(state.value)
    raise ConversionError(f"not a workload state: {type(state).__name__} {state!r}")


def from_airflow_state(
    state: str | None, *, key: WorkloadKey
) -> TaskInstanceState | CallbackState | None:
    """The library state of ``key``'s kind for Airflow's ``state`` (None stays None).

    ``state`` may be Airflow's enum member or its text, as a database row holds it. An
    Airflow enum of the other kind (a ``TaskInstanceState`` for a callback) is refused:
    Airflow's enums compare equal across kinds, ours do not.
    """
    if state is None:
        return None
    kind = state_class_for_key(key)
    wrong = AirflowTaskInstanceState if kind is CallbackState else AirflowCallbackState
    if isinstance(state, wrong):
        raise ConversionError(f"{state!r} is not a {kind.__name__} (for {key!r})")
    if not isinstance(state, str):
        raise ConversionError(f"not a state: {type(state).__name__} {state!r}")
    text = state.value if isinstance(state, enum.Enum) else state
    try:
        return kind(text)
    except ValueError:
        raise ConversionError(f"{state!r} is not a {kind.__name__} (for {key!r})") from None

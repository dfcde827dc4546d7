"""The state groups are Airflow's own, read from the installed Airflow.

Runs only where Airflow is importable (``.venv-airflow``); elsewhere it is skipped.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

import pytest

pytest.importorskip("airflow.models.callback", reason="Airflow runs in the Airflow environment")

from k8s_workloads.states import (
    CALLBACK_ACTIVE_STATES,
    CALLBACK_TERMINAL_STATES,
    TASK_FINISHED_STATES,
    TASK_UNFINISHED_STATES,
    CallbackState,
    TaskInstanceState,
)

# Read as Any: the typings/ stubs cover only what the library itself imports.
airflow_callback: Any = import_module("airflow.models.callback")
State: Any = import_module("airflow.utils.state").State

pytestmark = pytest.mark.parity


def _values(states: Any) -> set[str | None]:
    return {None if state is None else str(getattr(state, "value", state)) for state in states}


def test_callback_groups_are_airflows() -> None:
    assert _values(CALLBACK_ACTIVE_STATES) == _values(airflow_callback.ACTIVE_STATES)
    assert _values(CALLBACK_TERMINAL_STATES) == _values(airflow_callback.TERMINAL_STATES)
    assert {state.value for state in CallbackState} == _values(airflow_callback.CallbackState)


def test_task_finished_states_are_airflows() -> None:
    assert _values(TASK_FINISHED_STATES) == _values(State.finished)


def test_task_unfinished_states_are_airflows_for_every_state_we_model() -> None:
    # Airflow 3.1+ also has "awaiting_input" (human-in-the-loop tasks), which
    # TaskInstanceState does not model yet; every state it does model is grouped as
    # Airflow groups it.
    modelled = {state.value for state in TaskInstanceState} | {None}
    assert _values(TASK_UNFINISHED_STATES) == _values(State.unfinished) & modelled

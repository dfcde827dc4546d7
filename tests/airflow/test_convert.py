"""Keys and states to Airflow's own types and back (runs where Airflow is installed)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("airflow.models.callback", reason="Airflow runs in the Airflow environment")

from airflow.models.callback import CallbackKey as AirflowCallbackKey
from airflow.models.taskinstancekey import TaskInstanceKey as AirflowTaskInstanceKey
from airflow.utils.state import CallbackState as AirflowCallbackState
from airflow.utils.state import TaskInstanceState as AirflowTaskInstanceState

from k8s_workloads.airflow import (
    ConversionError,
    from_airflow_key,
    from_airflow_state,
    to_airflow_key,
    to_airflow_state,
)
from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.states import CallbackState, TaskInstanceState

CALLBACK = CallbackKey("019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e")
TASK = TaskInstanceKey("etl", "load", "manual__1", 2, 3)

ids = st.text(st.characters(codec="utf-8"), min_size=1, max_size=20)
task_keys = st.builds(
    TaskInstanceKey,
    dag_id=ids,
    task_id=ids,
    run_id=ids,
    try_number=st.integers(0, 10**6),
    map_index=st.integers(-1, 10**6),
)
callback_keys = st.uuids().map(lambda value: CallbackKey(str(value)))


@given(key=st.one_of(task_keys, callback_keys))
def test_keys_round_trip(key: WorkloadKey) -> None:
    airflow_key = to_airflow_key(key)
    assert from_airflow_key(airflow_key) == key
    if isinstance(key, CallbackKey):
        assert isinstance(airflow_key, AirflowCallbackKey)
        assert str(airflow_key) == key.id
    else:
        assert isinstance(key, TaskInstanceKey)
        assert isinstance(airflow_key, AirflowTaskInstanceKey)
        assert tuple(airflow_key) == key.as_tuple()


@pytest.mark.parametrize("state", [*TaskInstanceState, *CallbackState])
def test_states_round_trip_and_keep_their_kind(state: TaskInstanceState | CallbackState) -> None:
    airflow_state = to_airflow_state(state)
    callback = isinstance(state, CallbackState)
    assert type(airflow_state) is (AirflowCallbackState if callback else AirflowTaskInstanceState)
    key: WorkloadKey = CALLBACK if isinstance(state, CallbackState) else TASK
    assert from_airflow_state(airflow_state, key=key) is state
    assert from_airflow_state(airflow_state.value, key=key) is state  # a database row's text


def test_a_converted_callback_event_is_one_the_scheduler_acts_on() -> None:
    # process_executor_events: isinstance(key, CallbackKey) and state in (RUNNING, FAILED,
    # SUCCESS) with Airflow's classes; the library's own would be logged and dropped.
    key, state = to_airflow_key(CALLBACK), to_airflow_state(CallbackState.FAILED)
    assert isinstance(key, AirflowCallbackKey)
    assert state in (AirflowCallbackState.RUNNING, AirflowCallbackState.FAILED)
    assert not isinstance(CALLBACK, AirflowCallbackKey)


def test_what_has_no_counterpart_is_a_conversion_error() -> None:
    with pytest.raises(ConversionError, match="run_id is None"):
        to_airflow_key(TaskInstanceKey("etl", "load", None, 1))
    with pytest.raises(ConversionError, match="not an Airflow workload key"):
        from_airflow_key(("etl", "load", "r", 1, -1))
    with pytest.raises(ConversionError, match="map_index"):
        from_airflow_key(AirflowTaskInstanceKey("etl", "load", "r", 1, -7))
    with pytest.raises(ConversionError, match=r"not-a-uuid"):
        from_airflow_key(AirflowCallbackKey("not-a-uuid"))
    with pytest.raises(ConversionError, match="is not a CallbackState"):
        from_airflow_state(AirflowTaskInstanceState.FAILED, key=CALLBACK)
    with pytest.raises(ConversionError, match="is not a TaskInstanceState"):
        from_airflow_state("pending", key=TASK)
    with pytest.raises(ConversionError, match="not a state"):
        from_airflow_state(3, key=TASK)  # type: ignore[arg-type]
    with pytest.raises(ConversionError, match="not a workload state"):
        to_airflow_state("failed")  # type: ignore[call-overload]
    assert from_airflow_state(None, key=TASK) is None


def test_importing_the_library_imports_no_airflow() -> None:
    code = "import sys, k8s_workloads, k8s_workloads.airflow; print('airflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

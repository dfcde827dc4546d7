"""The ids and keys strategies (:mod:`k8s_workloads.testing.strategies._ids`) draw what
Airflow holds, and the ``hostile_*`` ones reach past it."""

from __future__ import annotations

import re
import uuid

from hypothesis import find, given, settings

from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey, key_from_json
from k8s_workloads.testing.strategies import (
    airflow_ids,
    callback_keys,
    hostile_ids,
    hostile_run_ids,
    run_ids,
    scheduler_job_ids,
    task_keys,
    workload_keys,
)

# Airflow's KEY_REGEX for dag and task ids: word characters, dots and dashes, up to 250.
_AIRFLOW_ID = re.compile(r"[\w.-]{1,250}")


@given(airflow_ids)
def test_airflow_ids_are_what_airflow_accepts(value: str) -> None:
    assert _AIRFLOW_ID.fullmatch(value)


def test_hostile_ids_reach_past_what_airflow_accepts() -> None:
    assert len(find(hostile_ids, lambda value: len(value) > 250)) > 250
    assert not _AIRFLOW_ID.fullmatch(find(hostile_ids, lambda value: " " in value))


@given(hostile_ids)
def test_hostile_ids_are_never_empty(value: str) -> None:
    assert value


def test_run_ids_include_none_and_generated_ones() -> None:
    assert find(run_ids, lambda value: value == "") == ""
    generated = find(run_ids, lambda value: value.startswith("scheduled__"))
    assert generated.startswith("scheduled__")
    assert len(find(hostile_run_ids, lambda value: len(value) > 250)) > 250


@given(scheduler_job_ids)
def test_scheduler_job_ids_are_integers_or_text(value: str | int) -> None:
    assert isinstance(value, (int, str))
    if isinstance(value, int):
        assert value >= 0


@given(task_keys())
def test_task_keys_are_valid_keys_that_survive_their_json(key: TaskInstanceKey) -> None:
    assert _AIRFLOW_ID.fullmatch(key.dag_id)
    assert _AIRFLOW_ID.fullmatch(key.task_id)
    assert key.try_number >= 0
    assert key.map_index >= -1
    assert key_from_json(key.to_json()) == key


@given(callback_keys())
def test_callback_keys_are_uuids(key: CallbackKey) -> None:
    assert str(uuid.UUID(key.id)) == key.id


def test_workload_keys_draw_both_kinds() -> None:
    seen: set[type[WorkloadKey]] = set()

    @given(workload_keys())
    @settings(max_examples=50)
    def draw(key: WorkloadKey) -> None:
        seen.add(type(key))

    draw()
    assert seen == {TaskInstanceKey, CallbackKey}

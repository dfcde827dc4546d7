"""Resolution, Outcome and ResolverConfig: a resolution's JSON and its result record,
and a config's fields checked and read when it is made."""

from __future__ import annotations

from typing import Any

import pytest

from k8s_workloads.config_checks import InvalidConfig
from k8s_workloads.states import CallbackResult, CallbackState, TaskResult
from k8s_workloads.watch.events import resolve_event
from k8s_workloads.watch.resolution import Outcome, Resolution, ResolverConfig
from tests.support.event_factory import (
    CALLBACK_KEY,
    TASK_KEY,
    VERSION,
    callback_pod,
    event,
    task_pod,
)

ON = ResolverConfig(airflow_version=VERSION)


def both(status: dict[str, Any]) -> tuple[Resolution, Resolution]:
    task = resolve_event(event("MODIFIED", task_pod(status)), config=ON)
    callback = resolve_event(event("MODIFIED", callback_pod(status)), config=ON)
    return task, callback


def test_to_result_is_typed_by_kind() -> None:
    task, callback = both({"phase": "Failed"})
    task_result = task.to_result()
    callback_result = callback.to_result()
    assert isinstance(task_result, TaskResult)
    assert task_result.key == TASK_KEY
    assert isinstance(callback_result, CallbackResult)
    assert callback_result.key == CALLBACK_KEY
    assert callback_result.state is CallbackState.FAILED
    assert (task_result.pod_name, task_result.resource_version) == ("etl-load-abcd1234", "100")
    pending, _ = both({"phase": "Pending"})
    assert pending.to_result() is None


def test_to_json_names_every_field_and_explains_on_request() -> None:
    task, _ = both({"phase": "Failed", "reason": "Evicted"})
    record = task.to_json()
    assert record["outcome"] == "failed"
    assert record["state"] == "failed"
    assert record["key"] == TASK_KEY.to_json()
    assert "failure_details" not in record
    explained = task.to_json(explain=True)
    assert explained["failure_details"]["pod_reason"] == "Evicted"
    assert explained["classification"] is not None
    bare = Resolution(Outcome.MALFORMED, "not a watch event: int").to_json(explain=True)
    assert (bare["key"], bare["state"], bare["classification"]) == (None, None, None)


def test_fatal_pending_reasons_read_a_comma_list_as_the_provider_option() -> None:
    config = ResolverConfig(fatal_pending_reasons="ErrImagePull, InvalidImageName,")
    assert config.fatal_pending_reasons == frozenset({"ErrImagePull", "InvalidImageName"})
    assert ResolverConfig(fatal_pending_reasons=()).fatal_pending_reasons == frozenset()


def test_a_config_value_of_the_wrong_kind_is_an_error_naming_the_field() -> None:
    with pytest.raises(InvalidConfig, match="airflow_version"):
        ResolverConfig(airflow_version="not a version")
    with pytest.raises(InvalidConfig, match="report_callback_running"):
        ResolverConfig(report_callback_running="yes")  # type: ignore[arg-type]

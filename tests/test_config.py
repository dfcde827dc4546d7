"""Configurations are checked when they are made: a wrong value names its field."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads import InvalidConfig
from k8s_workloads.decisions import DecisionConfig
from k8s_workloads.events import ResolverConfig
from k8s_workloads.executor import ExecutorConfig


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("pod_launch_failure_retries", -7),
        ("pod_launch_failure_retries", 1.5),
        ("pod_launch_failure_retries", True),
        ("callback_launch_failure_retries", "2"),
        ("task_publish_max_retries", -2),
        ("max_handling_retries", -1),
        ("max_retry_after_seconds", 0),
        ("max_retry_after_seconds", math.inf),
        ("max_retry_after_seconds", math.nan),
        ("delete_worker_pods", "False"),
        ("mark_kept_failed_pods_done", 1),
        ("pod_launch_failure_excluded_container_reasons", {"Error"}),
        ("pod_launch_failure_excluded_container_reasons", frozenset({3})),
    ],
)
def test_a_bad_decision_option_is_refused_naming_its_field(field: str, value: Any) -> None:
    with pytest.raises(InvalidConfig) as raised:
        DecisionConfig(**{field: value})
    assert raised.value.field == field
    assert str(raised.value).startswith(f"DecisionConfig.{field}: ")
    assert isinstance(raised.value, ValueError)  # the library's errors are ValueErrors


@given(st.integers(min_value=-1, max_value=10**6))
def test_every_retry_budget_from_minus_one_is_accepted(budget: int) -> None:
    config = DecisionConfig(pod_launch_failure_retries=budget, task_publish_max_retries=budget)
    assert config.pod_launch_failure_retries == budget


@given(st.integers(max_value=-2))
def test_every_retry_budget_below_minus_one_is_refused(budget: int) -> None:
    with pytest.raises(InvalidConfig, match="pod_launch_failure_retries"):
        DecisionConfig(pod_launch_failure_retries=budget)


@pytest.mark.parametrize("version", ["three", "", "3.3.x", "1!3.3.0", 3.3])
def test_a_resolver_config_refuses_what_is_not_a_version_at_once(version: Any) -> None:
    # It used to be accepted, and then every callback pod resolved UNDECODABLE.
    with pytest.raises(InvalidConfig) as raised:
        ResolverConfig(airflow_version=version)
    assert raised.value.field == "airflow_version"


@pytest.mark.parametrize("version", [None, "3.3.2", "3.2.0", "3.4.0.dev0", "3.3.2+astro.1"])
def test_a_resolver_config_takes_versions_and_none(version: str | None) -> None:
    assert ResolverConfig(airflow_version=version).airflow_version == version


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("namespace", "Bad NS"),
        ("namespace", ""),
        ("airflow_version", "three"),
        ("creation_batch_size", 0),
        ("secure_payload", "yes"),
    ],
)
def test_a_bad_executor_option_is_refused_naming_its_field(field: str, value: Any) -> None:
    options: dict[str, Any] = {"scheduler_id": "1", "namespace": "airflow"}
    options["airflow_version"] = "3.3.2"
    options[field] = value
    with pytest.raises(InvalidConfig) as raised:
        ExecutorConfig(**options)
    assert raised.value.field == field

"""The decision rules' options (:class:`~k8s_workloads.config.DecisionConfig`): each is
checked when a config is made, a wrong value an :class:`InvalidConfig` naming its field."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads import InvalidConfig
from k8s_workloads.config import DecisionConfig


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


@given(st.integers(min_value=0, max_value=10**6), st.integers(max_value=-1))
def test_handling_retries_are_counts_from_zero(good: int, bad: int) -> None:
    assert DecisionConfig(max_handling_retries=good).max_handling_retries == good
    with pytest.raises(InvalidConfig, match="max_handling_retries"):
        DecisionConfig(max_handling_retries=bad)


@given(
    st.one_of(
        st.floats(max_value=0),
        st.just(math.nan),
        st.just(math.inf),
        st.booleans(),
        st.text(max_size=2),
    )
)
def test_the_retry_after_cap_is_a_finite_positive_number(value: object) -> None:
    with pytest.raises(InvalidConfig, match="max_retry_after_seconds"):
        DecisionConfig(max_retry_after_seconds=value)  # type: ignore[arg-type]

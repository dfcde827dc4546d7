"""The ``to_json`` forms of resolutions, results and failure classifications: plain JSON
that names every field and reads back to the values (keys' own forms: test_keys.py)."""

from __future__ import annotations

import enum
import json
from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.keys import CallbackKey, TaskInstanceKey, key_from_json
from k8s_workloads.states import (
    CallbackResult,
    CallbackState,
    ExecutorPseudoState,
    FailureDetails,
    KubernetesResult,
    TaskInstanceState,
    TaskResult,
)
from k8s_workloads.testing.strategies import callback_keys, task_keys, workload_keys
from k8s_workloads.watch.failures import FailureClassification, FailureKind
from k8s_workloads.watch.resolution import Outcome, Resolution
from tests.support.strategies import hostile_text

_STATES = (TaskInstanceState, CallbackState, ExecutorPseudoState)
# The attribute each JSON name stands for, where the names differ.
_RENAMED = {"event": "event_type", "pod": "pod_name"}

optional_text = st.none() | hostile_text
failure_details: st.SearchStrategy[FailureDetails] = st.fixed_dictionaries(
    {},
    optional={
        "pod_status": optional_text,
        "pod_reason": optional_text,
        "container_message": optional_text,
        "exit_code": st.none() | st.integers(-(2**31), 2**31 - 1),
        "container_type": st.sampled_from([None, "init", "main"]),
    },
)  # type: ignore[assignment]
classifications = st.builds(
    FailureClassification,
    kind=st.sampled_from(FailureKind),
    retryable=st.booleans(),
    reason=optional_text,
    evidence=hostile_text,
)
states = st.one_of(*(st.sampled_from(group) for group in _STATES))
resolutions = st.builds(
    Resolution,
    outcome=st.sampled_from(Outcome),
    reason=hostile_text,
    key=st.none() | workload_keys(),
    state=st.none() | states,
    pod_name=optional_text,
    namespace=optional_text,
    resource_version=optional_text,
    failure_details=st.none() | failure_details,
    classification=st.none() | classifications,
    event_type=st.none() | st.sampled_from(["ADDED", "MODIFIED", "DELETED", "ERROR"]),
    error_code=st.none() | st.integers(100, 599),
    pod_uid=optional_text,
)


def _through_json_text(record: dict[str, Any]) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(json.dumps(record, allow_nan=False))
    return decoded


def _states_named(value: str, group: tuple[type[enum.Enum], ...]) -> set[enum.Enum]:
    """The states of ``group`` whose value is ``value`` (a task and a callback state may
    share one: ``running``)."""
    return {member for enum_type in group for member in enum_type if member.value == value}


@given(resolutions)
def test_a_resolutions_json_names_every_field_and_reads_back(resolution: Resolution) -> None:
    record = _through_json_text(resolution.to_json(explain=True))
    names = {_RENAMED.get(name, name) for name in record}
    assert names == {field.name for field in attrs.fields(Resolution)}
    assert Outcome(record["outcome"]) is resolution.outcome
    key = None if record["key"] is None else key_from_json(record["key"])
    assert key == resolution.key
    if resolution.state is None:
        assert record["state"] is None
    else:
        assert resolution.state in _states_named(record["state"], _STATES)
    for name in ("reason", "pod", "namespace", "resource_version", "event", "error_code"):
        assert record[name] == getattr(resolution, _RENAMED.get(name, name))
    assert record["failure_details"] == resolution.failure_details
    classification = resolution.classification
    if classification is None:
        assert record["classification"] is None
    else:
        read = record["classification"]
        assert FailureClassification(FailureKind(read.pop("kind")), **read) == classification


@given(resolutions)
def test_a_resolutions_short_json_is_the_summary_fields(resolution: Resolution) -> None:
    short = resolution.to_json()
    assert set(short) == {
        "event", "outcome", "state", "key", "pod", "namespace", "resource_version", "reason",
    }  # fmt: skip
    full = resolution.to_json(explain=True)
    assert {name: full[name] for name in short} == short


def _results(kind: Any, keys: Any, states: Any) -> Any:
    """Results of ``kind`` for ``keys`` in ``states`` or a pseudo-state, any text around."""
    return st.builds(
        kind,
        keys,
        states | st.sampled_from(ExecutorPseudoState),
        hostile_text,
        hostile_text,
        hostile_text,
        st.none() | failure_details,
        launch=st.none() | st.integers(0, 10),
        pod_uid=optional_text,
    )


results = st.one_of(
    _results(TaskResult, task_keys(), st.sampled_from(TaskInstanceState)),
    _results(CallbackResult, callback_keys(), st.sampled_from(CallbackState)),
)


@given(results)
def test_a_results_json_reads_back_to_an_equal_result(
    result: TaskResult | CallbackResult,
) -> None:
    record = _through_json_text(result.to_json())
    names = {_RENAMED.get(name, name) for name in record}
    assert names == {field.name for field in attrs.fields(KubernetesResult)}
    key = key_from_json(record.pop("key"))
    group = (CallbackState,) if isinstance(key, CallbackKey) else (TaskInstanceState,)
    (state,) = _states_named(record.pop("state"), (*group, ExecutorPseudoState))
    rebuilt = type(result)(key, state, record.pop("pod"), **record)  # type: ignore[arg-type]
    assert rebuilt == result
    assert isinstance(key, TaskInstanceKey) is isinstance(result, TaskResult)

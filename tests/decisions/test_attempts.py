"""Attempts: an immutable, persistent map of attempt records, checked against a dict model.

Every write returns a new value and leaves every earlier value as it was (executors keep
the old one when performing a decision fails); writes must not copy all records, which
the benchmark measures (benchmarks/bench_decisions.py), not these tests.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.decisions.attempts import Attempt, Attempts
from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.states import KubernetesJob

KEYS: list[WorkloadKey] = [TaskInstanceKey("etl", f"t{i}", "manual__1", 1) for i in range(40)]
KEYS.append(CallbackKey("019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"))


def attempt(key: WorkloadKey, count: int = 0) -> Attempt:
    return Attempt(KubernetesJob(key, ("python", "-m", "x")), count)


operations = st.lists(
    st.tuples(
        st.sampled_from(["with_record", "without", "launched"]),
        st.integers(0, len(KEYS) - 1),
        st.integers(0, 3),
    ),
    max_size=300,
)


def check(value: Attempts, model: dict[WorkloadKey, Attempt]) -> None:
    assert len(value) == len(model)
    assert dict(value.records) == model
    for key in KEYS:
        assert value.get(key) == model.get(key)
        assert (key in value) == (key in model)
    assert value == Attempts(model)


@given(ops=operations)
def test_attempts_behave_as_a_dict_and_every_version_persists(
    ops: list[tuple[str, int, int]],
) -> None:
    value, model = Attempts(), dict[WorkloadKey, Attempt]()
    history: list[tuple[Attempts, dict[WorkloadKey, Attempt]]] = [(value, dict(model))]
    for operation, index, count in ops:
        key = KEYS[index]
        if operation == "with_record":
            value = value.with_record(key, attempt(key, count))
            model[key] = attempt(key, count)
        elif operation == "without":
            value = value.without(key)
            model.pop(key, None)
        else:
            value = value.launched(KubernetesJob(key, ("python", "-m", "x")))
            model.setdefault(key, attempt(key))
        history.append((value, dict(model)))
    check(value, model)
    for old_value, old_model in history[:: max(1, len(history) // 10)]:
        check(old_value, old_model)


def test_without_an_absent_key_returns_the_same_value() -> None:
    value = Attempts({KEYS[0]: attempt(KEYS[0])})
    assert value.without(KEYS[1]) is value


def test_construction_copies_the_mapping() -> None:
    records = {KEYS[0]: attempt(KEYS[0])}
    value = Attempts(records)
    records[KEYS[1]] = attempt(KEYS[1])
    assert len(value) == 1
    assert value.get(KEYS[1]) is None


def test_records_is_read_only() -> None:
    value = Attempts().launched(KubernetesJob(KEYS[0], ("x",)))
    with pytest.raises(TypeError):
        value.records[KEYS[1]] = attempt(KEYS[1])  # type: ignore[index]


def test_attempts_are_frozen_and_unhashable() -> None:
    value = Attempts()
    with pytest.raises(AttributeError):
        value._size = 3
    with pytest.raises(TypeError, match="unhashable"):
        hash(value)


def test_a_record_that_is_not_an_attempt_is_refused_naming_the_key() -> None:
    with pytest.raises(TypeError, match=r"records\[TaskInstanceKey.*expected an Attempt, got int"):
        Attempts({KEYS[0]: 3})  # type: ignore[dict-item]


def test_equality_ignores_how_a_value_was_built() -> None:
    built = Attempts()
    for key in KEYS:
        built = built.launched(KubernetesJob(key, ("python", "-m", "x")))
    for key in KEYS[:20]:
        built = built.without(key)
    assert built == Attempts({key: attempt(key) for key in KEYS[20:]})
    assert built != Attempts({key: attempt(key) for key in KEYS[21:]})
    assert built != {key: attempt(key) for key in KEYS[20:]}
    assert repr(Attempts({KEYS[0]: attempt(KEYS[0])})).startswith("Attempts({TaskInstanceKey(")

"""Label and field selectors (:mod:`k8s_workloads.testing.selectors`) as the API server
reads them, the library's own selectors among them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.pods.labels import (
    completed_pods_adoption_selector,
    live_pods_adoption_selector,
    watcher_selector,
)
from k8s_workloads.testing import (
    FieldSelector,
    InvalidSelector,
    LabelSelector,
)
from tests.support.kit_pods import pod


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("", {}, True),
        ("a=1", {"a": "1"}, True),
        ("a==1", {"a": "1"}, True),
        ("a=1", {"a": "2"}, False),
        ("a!=1", {}, True),  # != matches a pod without the label
        ("a!=1", {"a": "1"}, False),
        ("a", {"a": ""}, True),
        ("a", {}, False),
        ("!a", {}, True),
        ("!a", {"a": "x"}, False),
        ("a in (1, 2)", {"a": "2"}, True),
        ("a in (1,2)", {}, False),
        ("a notin (1,2)", {}, True),
        ("a notin (1,2)", {"a": "1"}, False),
        ("a=1,b!=2", {"a": "1", "b": "3"}, True),
        ("a=1, b!=2", {"a": "1", "b": "2"}, False),
        ("example.com/a=1", {"example.com/a": "1"}, True),
        ("a=", {"a": ""}, True),
    ],
)
def test_label_selectors_match_as_the_api_server(
    selector: str, labels: dict[str, str], expected: bool
) -> None:
    assert LabelSelector.parse(selector).matches(labels) is expected


@pytest.mark.parametrize(
    "selector", ["a=1=2", "a in 1", "=1", "a in (b", "a,,b", "a=b c", "Bad_Key/x=1", "a=-x"]
)
def test_invalid_label_selectors_are_refused(selector: str) -> None:
    with pytest.raises(InvalidSelector, match="label selector"):
        LabelSelector.parse(selector)


def test_field_selectors_take_the_pod_fields_the_api_server_indexes() -> None:
    succeeded = pod("p", {}, "Succeeded")
    assert FieldSelector.parse("status.phase=Succeeded").matches(succeeded)
    assert FieldSelector.parse("status.phase==Succeeded").matches(succeeded)
    assert not FieldSelector.parse("status.phase!=Succeeded").matches(succeeded)
    assert FieldSelector.parse("metadata.name=p,metadata.namespace=airflow").matches(succeeded)
    with pytest.raises(InvalidSelector, match="field label not supported"):
        FieldSelector.parse("metadata.labels=x")
    with pytest.raises(InvalidSelector, match="no operator"):
        FieldSelector.parse("status.phase")


_NAMES = st.sampled_from(["a", "b", "c"])
_VALUES = st.sampled_from(["1", "2", "3"])


@given(
    labels=st.dictionaries(_NAMES, _VALUES),
    requirements=st.lists(
        st.tuples(
            _NAMES,
            st.sampled_from(["=", "!=", "in", "notin", "exists", "!"]),
            st.sets(_VALUES, min_size=1),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_a_selector_matches_when_every_requirement_does(
    labels: dict[str, str], requirements: list[tuple[str, str, set[str]]]
) -> None:
    parts, expected = [], True
    for key, op, values in requirements:
        value = min(values)
        if op == "=":
            parts.append(f"{key}={value}")
            expected &= labels.get(key) == value
        elif op == "!=":
            parts.append(f"{key}!={value}")
            expected &= labels.get(key) != value
        elif op in {"in", "notin"}:
            parts.append(f"{key} {op} ({','.join(sorted(values))})")
            expected &= (labels.get(key) in values) is (op == "in")
        elif op == "exists":
            parts.append(key)
            expected &= key in labels
        else:
            parts.append(f"!{key}")
            expected &= key not in labels
    assert LabelSelector.parse(",".join(parts)).matches(labels) is expected


def test_the_librarys_own_selectors_parse_and_select() -> None:
    mine = {"airflow-worker": "5", "kubernetes_executor": "True"}
    assert LabelSelector.parse(watcher_selector(5).label_selector).matches(mine)
    done = {**mine, "airflow_executor_done": "True"}
    assert not LabelSelector.parse(watcher_selector(5).label_selector).matches(done)
    live = live_pods_adoption_selector(5)
    assert LabelSelector.parse(live.label_selector).matches(mine)
    assert FieldSelector.parse(live.field_selector).matches(pod("p", mine, "Running"))
    completed = completed_pods_adoption_selector(6, [7])
    assert LabelSelector.parse(completed.label_selector).matches(mine)
    assert not LabelSelector.parse(completed.label_selector).matches(
        {**mine, "airflow-worker": "7"}
    )

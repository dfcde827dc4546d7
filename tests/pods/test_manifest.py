"""The cleaning every manifest from outside goes through (:mod:`k8s_workloads.pods.manifest`):
a deep copy without ``None`` entries, whatever JSON-like shape comes in, and a typed error
naming where a value that is not JSON sits."""

from __future__ import annotations

import collections
import types
from typing import Any

import pytest

from k8s_workloads.pods.manifest import PodReconciliationError, clean_manifest, clean_object


def test_the_copy_drops_none_entries_at_every_depth_and_shares_nothing() -> None:
    source: dict[str, Any] = {
        "metadata": {"name": "p", "labels": None},
        "spec": {"containers": [{"name": "base", "image": None, "args": ["a", None]}]},
    }
    cleaned = clean_manifest(source)
    # A None mapping entry means "unset" and goes; a None list item is a value and stays.
    assert cleaned == {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "base", "args": ["a", None]}]},
    }
    cleaned["spec"]["containers"][0]["args"].append("b")
    assert source["spec"]["containers"][0]["args"] == ["a", None]


def test_other_mappings_and_tuples_become_dicts_and_lists() -> None:
    source = types.MappingProxyType(
        {"spec": collections.OrderedDict(containers=({"name": "base", "x": None},))}
    )
    cleaned = clean_manifest(source)
    assert cleaned == {"spec": {"containers": [{"name": "base"}]}}
    assert type(cleaned) is dict
    assert type(cleaned["spec"]) is dict
    assert type(cleaned["spec"]["containers"]) is list


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"spec": {"containers": [{"name": object()}]}}, "pod.spec.containers[0].name"),
        ({"metadata": {"labels": {1: "a"}}}, "pod.metadata.labels"),
        ({"spec": {"volumes": ({"name": b"v"},)}}, "pod.spec.volumes[0].name"),
    ],
)
def test_a_value_that_is_not_json_is_refused_where_it_sits(value: object, where: str) -> None:
    with pytest.raises(PodReconciliationError) as raised:
        clean_manifest(value)
    assert str(raised.value).startswith(f"{where}: ")


def test_the_error_names_the_callers_place() -> None:
    with pytest.raises(PodReconciliationError, match=r"^pod_override\.spec: set is not"):
        clean_manifest({"spec": {1, 2}}, where="pod_override")


@pytest.mark.parametrize("value", [[{"a": 1}], "pod", 3])
def test_an_object_is_required_where_a_pod_or_a_layer_goes(value: object) -> None:
    with pytest.raises(PodReconciliationError, match=r"^template must be an object, got "):
        clean_object(value, where="template")


def test_an_object_is_cleaned_like_any_manifest() -> None:
    assert clean_object({"spec": {"a": None, "b": (1,)}}, where="template") == {"spec": {"b": [1]}}


def test_the_error_is_a_value_error_under_its_public_name() -> None:
    assert issubclass(PodReconciliationError, ValueError)
    assert PodReconciliationError.__module__ == "k8s_workloads.pods.reconcile"

"""Total readers for parsed JSON (:mod:`k8s_workloads.json_values`): a value of the wrong
type reads as absent, never as an error."""

from __future__ import annotations

import types
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.json_values import as_int, as_list, as_map, as_str, as_text, children

_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=10,
)


@given(_JSON)
def test_every_json_value_reads_without_an_error(value: object) -> None:
    assert as_map(value) == (value if isinstance(value, dict) else {})
    assert as_list(value) == (value if isinstance(value, list) else [])
    assert as_text(value) == (value if isinstance(value, str) else "")
    assert as_str(value) == (value if isinstance(value, str) else None)


@pytest.mark.parametrize(("value", "read"), [(3, 3), (True, None), (3.0, None), ("3", None)])
def test_an_integer_is_an_integer_and_never_a_bool(value: object, read: int | None) -> None:
    assert as_int(value) == read


def test_any_mapping_is_a_map_and_anything_else_an_empty_one() -> None:
    proxy = types.MappingProxyType({"a": 1})
    assert as_map(proxy) is proxy
    assert as_map(None) == as_map([("a", 1)]) == as_map("a") == {}


def test_children_are_a_containers_members_and_none_for_a_scalar() -> None:
    assert children({"a": 1}) == [("a", 1)]
    assert children(["x", "y"]) == [(0, "x"), (1, "y")]
    assert children(("x",)) == [(0, "x")]
    assert children("xy") is None
    assert children(None) is None

"""Typed access to a composed YAML document (:mod:`k8s_workloads.sim._reader`): every value
read is checked, every error a :class:`ScenarioError` naming the file, line and field, and
the entries a scenario expands to are counted against their limit."""

from __future__ import annotations

import pytest
import yaml

from k8s_workloads.sim._reader import Reader
from k8s_workloads.sim.spec import ScenarioError, ScenarioTooLarge


def _node(text: str) -> yaml.Node:
    node = yaml.compose(text)
    assert node is not None
    return node


def _error(read: object) -> ScenarioError:
    """The error reading raises (``read`` is a callable taking no argument)."""
    assert callable(read)
    with pytest.raises(ScenarioError) as raised:
        read()
    return raised.value


def test_a_mapping_is_read_by_its_allowed_keys() -> None:
    reader = Reader("s.yaml")
    found = reader.mapping(_node("a: 1\nb: x\n"), "cfg", allowed=("a", "b", "c"), required=("a",))
    assert {name: reader.describe(node) for name, node in found.items()} == {
        "a": "an integer",
        "b": "a string",
    }


def test_an_unknown_key_names_its_line_and_field_and_suggests_the_close_one() -> None:
    node = _node("workers: 1\nmax_tick: 5\n")
    error = _error(
        lambda: Reader("s.yaml").mapping(node, "config", allowed=("workers", "max_ticks"))
    )
    assert (error.source, error.line, error.field) == ("s.yaml", 2, "config.max_tick")
    assert error.problem == (
        "unknown key 'max_tick' (expected one of workers, max_ticks); did you mean 'max_ticks'?"
    )


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ("a: 1\na: 2\n", "m.a", "duplicate key"),
        ("b: 1\n", "m.a", "required key is missing"),
        ("1: x\n", "m", "keys must be strings, got an integer"),
        ("[1]\n", "m", "expected a mapping, got a list"),
    ],
)
def test_a_mapping_that_breaks_a_rule_is_refused(text: str, field: str, problem: str) -> None:
    node = _node(text)
    error = _error(lambda: Reader("s").mapping(node, "m", allowed=("a", "b"), required=("a",)))
    assert (error.field, error.problem) == (field, problem)


@pytest.mark.parametrize(
    ("text", "minimum", "maximum", "problem"),
    [
        ("true", None, None, "expected an integer, got a boolean"),
        ("1.5", None, None, "expected an integer, got a number"),
        ("0", 1, None, "must be at least 1, got 0"),
        ("11", None, 10, "must be at most 10, got 11"),
    ],
)
def test_integers_are_checked_for_type_and_range(
    text: str, minimum: int | None, maximum: int | None, problem: str
) -> None:
    node = _node(text)
    error = _error(lambda: Reader("s").integer(node, "n", minimum=minimum, maximum=maximum))
    assert (error.field, error.problem) == ("n", problem)
    assert Reader("s").integer(_node("7"), "n", minimum=1, maximum=10) == 7


@pytest.mark.parametrize(
    ("text", "positive", "problem"),
    [
        (".nan", False, "expected a finite number"),
        (".inf", False, "expected a finite number"),
        ("-1", False, "must not be negative, got -1"),
        ("0", True, "must be positive, got 0"),
        ("'3'", False, "expected a number, got a string"),
    ],
)
def test_numbers_must_be_finite_and_not_negative(text: str, positive: bool, problem: str) -> None:
    node = _node(text)
    assert _error(lambda: Reader("s").number(node, "x", positive=positive)).problem == problem


def test_numbers_booleans_and_strings_read_as_their_types() -> None:
    reader = Reader("s")
    assert reader.number(_node("2"), "x") == 2.0
    assert isinstance(reader.number(_node("2"), "x"), float)
    assert reader.boolean(_node("false"), "b") is False
    assert reader.string(_node("hello"), "s") == "hello"
    assert reader.optional_string(_node("null"), "s") is None


def test_a_version_written_as_a_number_reads_as_its_text_only_when_lenient() -> None:
    reader = Reader("s")
    assert reader.string(_node("3.3"), "airflow_version", lenient=True) == "3.3"
    error = _error(lambda: reader.string(_node("3.3"), "airflow_version"))
    assert error.problem == "expected a string, got a number"
    assert _error(lambda: reader.string(_node("''"), "s")).problem == "expected a non-empty string"


def test_a_choice_outside_its_options_suggests_the_close_one() -> None:
    reader = Reader("s")
    assert reader.choice(_node("task"), "kind", ("task", "callback"), "kind") == "task"
    error = _error(lambda: reader.choice(_node("tasks"), "kind", ("task", "callback"), "kind"))
    assert (
        error.problem
        == "unknown kind 'tasks' (expected one of task, callback); did you mean 'task'?"
    )
    assert _error(lambda: reader.choice(_node("1"), "kind", ("task",), "kind")).problem == (
        "expected kind (a string), got an integer"
    )


def test_a_lists_mappings_are_read_with_their_index_in_the_field() -> None:
    node = _node("- {a: 1}\n- {a: 2, z: 3}\n")
    reader = Reader("s")
    items = reader.mappings(node, "steps", allowed=("a",))
    where, first = next(items)
    assert (where, list(first)) == ("steps[0]", ["a"])
    error = _error(lambda: next(items))
    assert (error.line, error.field) == (2, "steps[1].z")
    assert reader.entries == 2  # the whole list counted before it is read


def test_entries_past_the_limit_are_a_scenario_too_large() -> None:
    reader = Reader("s", max_entries=3)
    reader.spend(_node("[1, 2]"), "workloads", 2)
    with pytest.raises(ScenarioTooLarge) as raised:
        reader.spend(_node("[1, 2]"), "restarts", 2)
    assert (raised.value.limit, raised.value.field) == ("max_entries", "restarts")
    assert "more than 3 entries" in raised.value.problem

"""Typed access to a composed YAML document: every value read checked, every error a
:class:`~k8s_workloads.sim.spec.ScenarioError` naming the file, line and field, and the
count of entries a scenario expands to kept against its limit."""

from __future__ import annotations

import difflib
import math
from typing import TYPE_CHECKING, NoReturn, TypeAlias

import yaml

from k8s_workloads.display import shown
from k8s_workloads.limits import MAX_SCENARIO_ENTRIES
from k8s_workloads.sim.spec import ScenarioError, ScenarioTooLarge

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

__all__ = ["BOOL", "FLOAT", "INT", "NULL", "STR", "Node", "Reader"]

Node: TypeAlias = yaml.Node
_TAG_NAMES = {
    "tag:yaml.org,2002:str": "a string",
    "tag:yaml.org,2002:int": "an integer",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:bool": "a boolean",
    "tag:yaml.org,2002:null": "null",
    "tag:yaml.org,2002:timestamp": "a timestamp",
}
STR = "tag:yaml.org,2002:str"
INT = "tag:yaml.org,2002:int"
FLOAT = "tag:yaml.org,2002:float"
BOOL = "tag:yaml.org,2002:bool"
NULL = "tag:yaml.org,2002:null"


def _suggest(word: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(options), n=1)
    return f"; did you mean {shown(close[0])}?" if close else ""


class Reader:
    """Typed access to composed YAML nodes; every error names the line and field."""

    def __init__(self, source: str, max_entries: int = MAX_SCENARIO_ENTRIES) -> None:
        self.source = source
        self._constructor = yaml.constructor.SafeConstructor()
        self.max_entries = max_entries
        self.entries = 0
        """Entries read so far: workloads, pod scripts, steps, creation errors, restarts..."""

    def spend(self, node: Node, field: str, count: int) -> None:
        """Count ``count`` more entries (those of the list at ``field``) against the limit."""
        self.entries += count
        if self.entries > self.max_entries:
            raise ScenarioTooLarge(
                self.source,
                node.start_mark.line + 1,
                field,
                f"the scenario expands to more than {self.max_entries:,} entries (workloads, "
                "pod scripts, steps, creation errors, restarts and watch errors, YAML aliases "
                "written out): raise max_entries (simulate --max-entries) if it is meant",
                limit="max_entries",
            )

    def fail(self, node: Node, field: str, problem: str) -> NoReturn:
        raise ScenarioError(self.source, node.start_mark.line + 1, field, problem)

    @staticmethod
    def describe(node: Node) -> str:
        if isinstance(node, yaml.MappingNode):
            return "a mapping"
        if isinstance(node, yaml.SequenceNode):
            return "a list"
        return _TAG_NAMES.get(node.tag, node.tag)

    def mapping(
        self,
        node: Node,
        field: str,
        allowed: Sequence[str],
        required: Sequence[str] = (),
    ) -> dict[str, Node]:
        if not isinstance(node, yaml.MappingNode):
            self.fail(node, field, f"expected a mapping, got {self.describe(node)}")
        found: dict[str, Node] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != STR:
                self.fail(key_node, field, f"keys must be strings, got {self.describe(key_node)}")
            name = str(key_node.value)
            where = f"{field}.{name}" if field else name
            if name not in allowed:
                expected = ", ".join(allowed)
                self.fail(
                    key_node,
                    where,
                    f"unknown key {shown(name)} (expected one of {expected})"
                    + _suggest(name, allowed),
                )
            if name in found:
                self.fail(key_node, where, "duplicate key")
            found[name] = value_node
        for name in required:
            if name not in found:
                self.fail(node, f"{field}.{name}" if field else name, "required key is missing")
        return found

    def sequence(self, node: Node, field: str) -> list[Node]:
        if not isinstance(node, yaml.SequenceNode):
            self.fail(node, field, f"expected a list, got {self.describe(node)}")
        return list(node.value)

    def mappings(
        self, node: Node, field: str, allowed: Sequence[str], required: Sequence[str] = ()
    ) -> Iterator[tuple[str, dict[str, Node]]]:
        """Each mapping of the list at ``field`` with its own field (``field[i]``), read as
        it is reached; the list's length is counted against the limit first."""
        items = self.sequence(node, field)
        self.spend(node, field, len(items))
        for index, item in enumerate(items):
            where = f"{field}[{index}]"
            yield where, self.mapping(item, where, allowed, required)

    def _scalar(self, node: Node, field: str, tags: Sequence[str], what: str) -> object:
        if not isinstance(node, yaml.ScalarNode) or node.tag not in tags:
            self.fail(node, field, f"expected {what}, got {self.describe(node)}")
        return self._constructor.construct_object(node)

    def string(self, node: Node, field: str, *, lenient: bool = False) -> str:
        if lenient and isinstance(node, yaml.ScalarNode) and node.tag in {INT, FLOAT}:
            return str(node.value)  # airflow_version: 3.3 reads as the text "3.3"
        value = self._scalar(node, field, (STR,), "a string")
        if not isinstance(value, str) or not value:
            self.fail(node, field, "expected a non-empty string")
        return value

    def optional_string(self, node: Node, field: str) -> str | None:
        if isinstance(node, yaml.ScalarNode) and node.tag == NULL:
            return None
        return self.string(node, field)

    def integer(
        self, node: Node, field: str, *, minimum: int | None = None, maximum: int | None = None
    ) -> int:
        value = self._scalar(node, field, (INT,), "an integer")
        if not isinstance(value, int):
            self.fail(node, field, "expected an integer")
        if minimum is not None and value < minimum:
            self.fail(node, field, f"must be at least {minimum}, got {value}")
        if maximum is not None and value > maximum:
            self.fail(node, field, f"must be at most {maximum}, got {value}")
        return value

    def number(self, node: Node, field: str, *, positive: bool = False) -> float:
        value = self._scalar(node, field, (INT, FLOAT), "a number")
        if not isinstance(value, (int, float)) or math.isnan(value) or math.isinf(value):
            self.fail(node, field, "expected a finite number")
        if positive and value <= 0:
            self.fail(node, field, f"must be positive, got {value}")
        if value < 0:
            self.fail(node, field, f"must not be negative, got {value}")
        return float(value)

    def boolean(self, node: Node, field: str) -> bool:
        value = self._scalar(node, field, (BOOL,), "true or false")
        if not isinstance(value, bool):
            self.fail(node, field, "expected true or false")
        return value

    def choice(self, node: Node, field: str, options: Sequence[str], what: str) -> str:
        if not isinstance(node, yaml.ScalarNode) or node.tag != STR:
            self.fail(node, field, f"expected {what} (a string), got {self.describe(node)}")
        value = str(node.value)
        if value not in options:
            self.fail(
                node,
                field,
                f"unknown {what} {shown(value)} (expected one of {', '.join(options)})"
                f"{_suggest(value, options)}",
            )
        return value

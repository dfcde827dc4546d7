"""Label and field selectors, matched as the Kubernetes API server matches them.

Label selectors (``k8s.io/apimachinery/pkg/labels``): requirements joined by ``,``, each
``key``, ``!key``, ``key=value``, ``key==value``, ``key!=value``, ``key in (a,b)`` or
``key notin (a,b)``. ``!=`` and ``notin`` also match a pod without the label. Field
selectors (``k8s.io/apimachinery/pkg/fields``) take ``=``, ``==`` and ``!=`` on the
fields the API server indexes for pods; any other field is refused, as it is there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["FieldSelector", "InvalidSelector", "LabelSelector", "Requirement"]


class InvalidSelector(ValueError):
    """A selector the API server would refuse (HTTP 400)."""


# A label key: an optional DNS-1123 prefix and "/", then a name of [A-Za-z0-9_.-].
_KEY = r"(?:[a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_VALUE = r"(?:[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_KEY_RE = re.compile(_KEY)
_VALUE_RE = re.compile(_VALUE)
_REQUIREMENT = re.compile(
    r"\s*(?:!\s*(?P<absent>[^\s!=(),]+)"
    r"|(?P<key>[^\s!=(),]+)\s*(?:(?P<op>!=|==|=)\s*(?P<value>[^\s,()]*)"
    r"|\s+(?P<set>notin|in)\s*\((?P<values>[^()]*)\))?)\s*"
)

# The pod fields the API server accepts in a field selector (pkg/registry/core/pod).
POD_FIELDS = frozenset(
    {
        "metadata.name",
        "metadata.namespace",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    }
)


@attrs.frozen
class Requirement:
    """One requirement: ``op`` is ``in``, ``notin``, ``exists`` or ``!exists``."""

    key: str
    op: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.op == "exists":
            return value is not None
        if self.op == "!exists":
            return value is None
        found = value is not None and value in self.values
        return found if self.op == "in" else not found


def _split(selector: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    start = 0
    for index, char in enumerate(selector):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(selector[start:index])
            start = index + 1
    parts.append(selector[start:])
    return parts


def _check_key(key: str, selector: str) -> str:
    if not _KEY_RE.fullmatch(key) or len(key.rpartition("/")[2]) > 63:
        raise InvalidSelector(f"label selector {selector!r}: invalid label key {key!r}")
    return key


def _check_value(value: str, selector: str) -> str:
    if not _VALUE_RE.fullmatch(value) or len(value) > 63:
        raise InvalidSelector(f"label selector {selector!r}: invalid label value {value!r}")
    return value


def _requirement(part: str, selector: str) -> Requirement:
    match = _REQUIREMENT.fullmatch(part)
    if match is None or not part.strip():
        raise InvalidSelector(f"label selector {selector!r}: cannot parse {part.strip()!r}")
    if match["absent"]:
        return Requirement(_check_key(match["absent"], selector), "!exists")
    key = _check_key(match["key"], selector)
    if match["op"]:
        op = "notin" if match["op"] == "!=" else "in"
        return Requirement(key, op, frozenset({_check_value(match["value"], selector)}))
    if match["set"]:
        values = frozenset(_check_value(v.strip(), selector) for v in match["values"].split(","))
        return Requirement(key, match["set"], values)
    return Requirement(key, "exists")


@attrs.frozen
class LabelSelector:
    """A parsed label selector; the empty selector matches every pod."""

    text: str
    requirements: tuple[Requirement, ...]

    @classmethod
    def parse(cls, selector: str | None) -> LabelSelector:
        """Parse ``selector``; raises :class:`InvalidSelector` where the API server would."""
        text = selector or ""
        if not text.strip():
            return cls(text, ())
        return cls(text, tuple(_requirement(part, text) for part in _split(text)))

    def matches(self, labels: Mapping[str, Any] | None) -> bool:
        found = labels or {}
        return all(requirement.matches(found) for requirement in self.requirements)


def _field(pod: Mapping[str, Any], path: str) -> str:
    value: object = pod
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


@attrs.frozen
class FieldSelector:
    """A parsed pod field selector; the empty selector matches every pod."""

    text: str
    terms: tuple[tuple[str, bool, str], ...]
    """(field, negated, value) for each term."""

    @classmethod
    def parse(cls, selector: str | None) -> FieldSelector:
        text = selector or ""
        if not text.strip():
            return cls(text, ())
        terms = []
        for part in text.split(","):
            op = next((op for op in ("!=", "==", "=") if op in part), None)
            if op is None:
                raise InvalidSelector(f"field selector {text!r}: {part!r} has no operator")
            path, _, value = part.partition(op)
            negate = op == "!="
            path = path.strip()
            if path not in POD_FIELDS:
                raise InvalidSelector(
                    f"field selector {text!r}: field label not supported: {path!r}"
                )
            terms.append((path, negate, value.strip()))
        return cls(text, tuple(terms))

    def matches(self, pod: Mapping[str, Any]) -> bool:
        return all((_field(pod, path) == value) != negate for path, negate, value in self.terms)

"""The Kubernetes 1.37 Pod schema: field types, required fields, no unknown fields.

:mod:`k8s_workloads.pods.validation` holds the naming and size rules that schema validators
miss; this module is the schema itself, as ``kubernetes-validate --strict`` checks it for
Kubernetes 1.37 (the table in ``schema_definitions.py`` is generated from that schema by
``scripts/gen_pod_schema.py``). Where the API server is stricter than the JSON schema, so
is this module: ``int32`` and ``int64`` fields must hold integers in their range (the
schema names the format but does not check it), an integer is never written as ``5.0``
(Go's decoder refuses it), numbers are finite (JSON has no NaN), keys are strings and
values are JSON values (a set, a ``datetime`` or a model object is not one).

:func:`pod_schema_errors` lists every violation, each a :class:`SchemaViolation` naming
its field (``spec.hostNetwork``, ``spec.containers[0].ports[1].containerPort``). The pod
builders check every pod they return; they use ``msgspec`` (already a dependency) to
check and copy the template and ``pod_override`` in one pass, and this module's own walk
only to explain a failure.

Type specs (the table's language): ``string``, ``boolean``, ``int32``, ``int64``,
``number``, ``quantity`` (string or number), ``int-or-string`` (string or int32),
``time`` (a string), ``object`` (any JSON object), ``enum:<value>``, ``[]<spec>`` (a list),
``{}<spec>`` (an object of string keys), or a definition's name; a leading ``?`` allows
null.
"""

from __future__ import annotations

import difflib
import functools
import math
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeGuard, Union

import attrs
import msgspec

from k8s_workloads.display import shown
from k8s_workloads.errors import FieldError
from k8s_workloads.pods.schema_definitions import DEFINITIONS, KUBERNETES_VERSION

if TYPE_CHECKING:
    from k8s_workloads.pods.manifest import Manifest

__all__ = [
    "POD_SCHEMA_VERSION",
    "SchemaViolation",
    "is_pod_schema_valid",
    "pod_schema_errors",
]

POD_SCHEMA_VERSION = KUBERNETES_VERSION
"""The Kubernetes version whose Pod schema this module checks."""

_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
# Strings a layer may give for an integer field (coerced as the provider's loader does):
# ASCII digits only, as the API server writes numbers; int() would also take " 1", "1_0"
# and other scripts' digits.
_DECIMAL = re.compile(r"-?[0-9]{1,20}")
_MAX_VIOLATIONS = 20
_COERCED_INT_BITS = 200
_MAX_FREE_FORM_DEPTH = 64
_KUBERNETES_HINT = (
    " (pass manifests, or use k8s_workloads.adapters.to_manifest for kubernetes objects)"
)


class SchemaViolation(FieldError):
    """A pod manifest breaks the Kubernetes Pod schema; ``field`` names where, e.g.
    ``spec.containers[0].ports[0].containerPort``."""


# --- the table, parsed -------------------------------------------------------------------


@attrs.frozen
class _Node:
    kind: str
    """A scalar kind, ``enum``, ``list``, ``map`` or ``definition``."""
    nullable: bool
    item: _Node | None = None
    """The items of a list, the values of a map."""
    name: str = ""
    """The definition's name, or the enum's one value."""

    @property
    def element(self) -> _Node:
        """The node of a list's items or a map's values (which always have a spec)."""
        assert self.item is not None  # noqa: S101 - set by _node for every list and map
        return self.item


@functools.cache
def _node(spec: str) -> _Node:
    nullable = spec.startswith("?")
    body = spec[1:] if nullable else spec
    if body.startswith("[]"):
        return _Node("list", nullable, _node(body[2:]))
    if body.startswith("{}"):
        return _Node("map", nullable, _node(body[2:]))
    if body.startswith("enum:"):
        return _Node("enum", nullable, name=body[5:])
    if body in DEFINITIONS:
        return _Node("definition", nullable, name=body)
    if body not in _EXPECTED:
        raise ValueError(f"not a type spec: {spec!r}")
    return _Node(body, nullable)


_ROOT = "?Pod"
_EXPECTED = {
    "string": "a string",
    "time": "a string",
    "boolean": "a boolean",
    "int32": "an integer",
    "int64": "an integer",
    "number": "a number",
    "quantity": "a quantity (a string or a number)",
    "int-or-string": "an integer or a string",
    "object": "an object",
    "list": "a list",
    "map": "an object",
    "definition": "an object",
}


def _expected(node: _Node) -> str:
    if node.kind == "enum":
        return repr(node.name)
    return _EXPECTED[node.kind]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return _is_int(value) or (isinstance(value, float) and math.isfinite(value))


def _short_int(value: object) -> bool:
    # str() of an int over 4,300 digits raises; nobody means a 60-digit number as text.
    return isinstance(value, int) and value.bit_length() <= _COERCED_INT_BITS


def _is_str(value: object) -> bool:
    return isinstance(value, str)


_ACCEPTS: dict[str, Callable[[object], bool]] = {
    "string": _is_str,
    "time": _is_str,
    "int-or-string": _is_str,  # an int is checked as an int32
    "boolean": lambda value: isinstance(value, bool),
    "number": _is_number,
    "quantity": lambda value: isinstance(value, str) or _is_number(value),
}


# --- the exact walk: every violation, and the copy a layer gives ---------------------------


class _Walk:
    """One pass over a manifest: its violations and its copy.

    For a *layer* (a template or pod_override, before merging) null means absent, as the
    merge reads it; a missing required field only makes the layer incomplete (the merge
    may fill it); and the provider's unambiguous coercions apply. For a *pod*, it is the
    schema as written.
    """

    def __init__(self, *, layer: bool) -> None:
        self.layer = layer
        self.violations: list[SchemaViolation] = []
        self.hidden = 0
        self.complete = True

    def fail(self, path: str, message: str) -> None:
        if len(self.violations) < _MAX_VIOLATIONS:
            self.violations.append(SchemaViolation(path or "pod", message))
        else:
            self.hidden += 1

    def wrong(self, path: str, node: _Node, value: object) -> None:
        got = type(value).__name__
        if isinstance(value, (str, int, float)):
            got = f"{got} {shown(value)}"
        hint = _KUBERNETES_HINT if type(value).__module__.startswith("kubernetes") else ""
        self.fail(path, f"must be {_expected(node)}, got {got}{hint}")

    def value(self, value: object, node: _Node, path: str) -> object:
        if value is None:
            if not node.nullable:
                self.fail(path, f"must be {_expected(node)}, got null")
            return None
        kind = node.kind
        if kind == "definition":
            return self.definition(value, node, path)
        if kind == "list":
            return self.list(value, node, path)
        if kind == "map":
            return self.map(value, node, path)
        if kind == "object":
            return self.free_form(value, path)
        return self.scalar(value, node, path)

    def scalar(self, value: object, node: _Node, path: str) -> object:
        kind = node.kind
        if kind in _INT_RANGES or (kind == "int-or-string" and _is_int(value)):
            return self.integer(value, _node("int32") if kind == "int-or-string" else node, path)
        if kind == "enum":
            accepted = isinstance(value, str) and value == node.name
        else:
            accepted = _ACCEPTS[kind](value)
        if accepted:
            return value
        # The provider's loader writes str(value): unambiguous for an integer only
        # (``8080`` -> "8080"; a bool would become "True", a float lose its spelling).
        # Nothing is coerced to a boolean: the provider's bool("False,") and
        # bool("false") are both True.
        if self.layer and kind == "string" and _is_int(value) and _short_int(value):
            return str(int(value))  # type: ignore[call-overload]
        self.wrong(path, node, value)
        return value

    def integer(self, value: object, node: _Node, path: str) -> object:
        low, high = _INT_RANGES[node.kind]
        number: int | None = None
        if _is_int(value):
            number = int(value)  # type: ignore[call-overload]
        elif self.layer and isinstance(value, str) and _DECIMAL.fullmatch(value):
            number = int(value)  # the provider's int("600")
        elif self.layer and isinstance(value, float) and value.is_integer():
            number = int(value)  # the provider's int(600.0); 2.5 would lose its half
        if number is None:
            self.wrong(path, node, value)
            return value
        if not low <= number <= high:
            self.fail(path, f"{shown(number)} is out of the {node.kind} range [{low}, {high}]")
        return number

    def is_list(self, value: object) -> TypeGuard[list[Any] | tuple[Any, ...]]:
        # A layer is copied (a tuple becomes a list, as clean_manifest makes it); a pod is
        # taken as it is, and JSON schema knows only lists and dicts.
        return isinstance(value, (list, tuple)) if self.layer else isinstance(value, list)

    def is_object(self, value: object) -> TypeGuard[Mapping[Any, Any]]:
        return isinstance(value, Mapping) if self.layer else isinstance(value, dict)

    def list(self, value: object, node: _Node, path: str) -> object:
        if not self.is_list(value):
            self.wrong(path, node, value)
            return value
        item = node.element
        return [self.value(entry, item, f"{path}[{index}]") for index, entry in enumerate(value)]

    def keys(self, value: Mapping[Any, Any], path: str) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, entry in value.items():
            if not isinstance(key, str):
                self.fail(path, f"keys must be strings, got {type(key).__name__} {shown(key)}")
            elif entry is not None or not self.layer:
                found[key] = entry
        return found

    def map(self, value: object, node: _Node, path: str) -> object:
        if not self.is_object(value):
            self.wrong(path, node, value)
            return value
        item = node.element
        return {
            key: self.value(entry, item, f"{path}[{shown(key)}]")
            for key, entry in self.keys(value, path).items()
        }

    def definition(self, value: object, node: _Node, path: str) -> object:
        if not self.is_object(value):
            self.wrong(path, node, value)
            return value
        properties, required = DEFINITIONS[node.name]
        copied: dict[str, Any] = {}
        prefix = f"{path}." if path else ""
        for key, entry in self.keys(value, path).items():
            spec = properties.get(key)
            if spec is None:
                self.unknown(key, node.name, path)
                continue
            copied[key] = self.value(entry, _node(spec), f"{prefix}{key}")
        for key in required:
            if key not in copied:
                if self.layer:
                    self.complete = False
                else:
                    self.fail(f"{prefix}{key}", "is required")
        return copied

    def unknown(self, key: str, definition: str, path: str) -> None:
        where = f"{path}.{key}" if path else key
        if not key.isidentifier():
            where = f"{path}[{shown(key)}]"
        close = difflib.get_close_matches(key, DEFINITIONS[definition][0], n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        self.fail(
            where, f"unknown field (a Kubernetes {KUBERNETES_VERSION} {definition} has none{hint})"
        )

    def free_form(self, value: object, path: str, depth: int = 0) -> object:
        if depth > _MAX_FREE_FORM_DEPTH:
            self.fail(path, f"nested deeper than {_MAX_FREE_FORM_DEPTH} levels")
            return None
        if self.is_object(value):
            return {
                key: self.free_form(entry, f"{path}[{shown(key)}]", depth + 1)
                for key, entry in self.keys(value, path).items()
            }
        if self.is_list(value):
            return [
                self.free_form(entry, f"{path}[{index}]", depth + 1)
                for index, entry in enumerate(value)
            ]
        if value is None or isinstance(value, (str, bool)) or _is_number(value):
            return value
        self.fail(path, f"must be a JSON value, got {type(value).__name__} {shown(value)}")
        return value


def pod_schema_errors(manifest: object) -> list[SchemaViolation]:
    """Where a pod manifest breaks the Kubernetes 1.37 Pod schema (empty when it passes).

    ``apiVersion`` and ``kind`` may be absent (as in a template); if present they must be
    ``v1`` and ``Pod``. Lists at most 20 violations, then one saying how many more.
    Never raises.
    """
    walk = _Walk(layer=False)
    if not isinstance(manifest, dict):
        walk.wrong("", _node(_ROOT), manifest)
    else:
        walk.value(manifest, _node(_ROOT), "")
    return _with_hidden(walk)


def _with_hidden(walk: _Walk) -> list[SchemaViolation]:
    if walk.hidden:
        return [*walk.violations, SchemaViolation("pod", f"and {walk.hidden} more violations")]
    return walk.violations


# --- the fast path: msgspec, in C ----------------------------------------------------------


def _struct_type(node: _Node, structs: dict[str, Any], *, relaxed: bool) -> Any:  # noqa: ANN401
    kind = node.kind
    result: Any
    if kind == "definition":
        result = _struct(node.name, structs, relaxed=relaxed)
    elif kind == "list":
        result = list[_struct_type(node.element, structs, relaxed=relaxed)]  # type: ignore[misc]
    elif kind == "map":
        result = dict[str, _struct_type(node.element, structs, relaxed=relaxed)]  # type: ignore[misc]
    elif kind == "enum":
        result = Literal[node.name]
    else:
        result = _SCALAR_TYPES[kind]
    return Union[result, None] if node.nullable else result  # noqa: UP007 - built at run time


_INT32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
_INT64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_SCALAR_TYPES: dict[str, Any] = {
    "string": str,
    "time": str,
    "boolean": bool,
    "int32": _INT32,
    "int64": _INT64,
    # msgspec takes an int for a float; NaN cannot pass the copy's round trip (see _fast).
    "number": float,
    "quantity": Union[str, float],  # noqa: UP007
    "int-or-string": Union[_INT32, str],  # noqa: UP007
    "object": dict[str, Any],
}


def _struct(name: str, structs: dict[str, Any], *, relaxed: bool) -> Any:  # noqa: ANN401
    if name in structs:
        return structs[name]
    properties, required = DEFINITIONS[name]
    fields: list[tuple[str, Any, Any]] = []
    for key, spec in properties.items():
        kind = _struct_type(_node(spec), structs, relaxed=relaxed)
        if key in required and not relaxed:
            fields.append((key, kind, msgspec.NODEFAULT))
        else:
            fields.append((key, Union[kind, msgspec.UnsetType], msgspec.UNSET))  # noqa: UP007
    struct = msgspec.defstruct(
        name, fields, kw_only=True, forbid_unknown_fields=True, gc=False, module=__name__
    )
    structs[name] = struct
    return struct


@functools.cache
def _pod_type(*, relaxed: bool) -> Any:  # noqa: ANN401 - a msgspec type built at run time
    """The Pod as the schema has it, or with no field required; built on first use."""
    return _struct_type(_node(_ROOT), {}, relaxed=relaxed)


_ENCODE = msgspec.json.Encoder().encode
_DECODE = msgspec.json.Decoder().decode


# What msgspec raises for a value that is not plain JSON of the expected shape: its own
# errors, and Python's for an unsupported type, a surrogate, a huge int, deep nesting.
_NOT_PLAIN = (msgspec.MsgspecError, TypeError, ValueError, OverflowError, RecursionError)


def _round_trip(value: object, *, nulls: bool) -> Any:  # noqa: ANN401 - a JSON value, or None
    """A copy of ``value`` through JSON, or None unless the copy equals it exactly.

    Equality after a round trip is what proves ``value`` was plain JSON: a set, tuple,
    ``datetime``, NaN (written as null) or non-string key comes back as something else.
    Without ``nulls``, JSON holding ``null`` (or the word in a string) gives None too.
    """
    try:
        text = _ENCODE(value)
        if not nulls and b"null" in text:
            return None
        copied = _DECODE(text)
    except _NOT_PLAIN:  # not plain JSON: the exact walk decides
        return None
    try:
        return copied if copied == value else None
    except Exception:  # noqa: BLE001 - an odd value's __eq__: the exact walk decides
        return None


def _converts(value: object, kind: Any) -> bool:  # noqa: ANN401
    try:
        msgspec.convert(value, kind, strict=True)
    except _NOT_PLAIN:  # a ValidationError, or a value msgspec cannot take: the exact walk
        return False
    return True


def is_pod_schema_valid(manifest: object) -> bool:
    """Whether :func:`pod_schema_errors` finds nothing; fast (msgspec) for valid pods."""
    if (
        _converts(manifest, _pod_type(relaxed=False))
        and _round_trip(manifest, nulls=True) is not None
    ):
        return True
    return not pod_schema_errors(manifest)


def checked_layer(value: object) -> tuple[Manifest, bool, list[SchemaViolation]]:
    """A template or pod_override, checked and copied for merging (for the builders).

    Returns the copy (new dicts, nulls dropped as :func:`~k8s_workloads.pods.reconcile.
    clean_manifest` drops them, the provider's unambiguous coercions applied), whether it
    has every field the schema requires (else the merged pod must be checked whole), and
    the violations (when there are any, the copy is not to be used).
    """
    complete = _converts(value, _pod_type(relaxed=False))
    if complete or _converts(value, _pod_type(relaxed=True)):
        # Null-free plain JSON (the usual template) is copied in C; anything else walks.
        copied = _round_trip(value, nulls=False)
        if type(copied) is dict:
            return copied, complete, []
    walk = _Walk(layer=True)
    if not isinstance(value, Mapping):
        walk.wrong("", _node(_ROOT), value)
        return {}, False, _with_hidden(walk)
    copied = walk.value(value, _node(_ROOT), "")
    return copied, walk.complete, _with_hidden(walk)  # type: ignore[return-value]

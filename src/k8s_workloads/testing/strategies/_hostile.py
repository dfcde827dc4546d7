"""Hostile values (issue 11, item 4): what a broken template, override or mutation hook
may hold, for tests that check every bad input is a clear, typed error.

Names, label keys and values breaking each Kubernetes rule, annotations near and over
the 256 KiB total, values of the wrong JSON type, the :class:`Edit` values that put them
into a valid template or override, and the :class:`HostileHook` values that change a pod
in the ways a ``pod_mutation_hook`` can.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st

from k8s_workloads.testing.strategies._manifests import (
    RESERVED_KEYS,
    _annotation_values,
    dns_labels,
    label_keys,
    label_values,
    templates_and_overrides,
)

if TYPE_CHECKING:
    from k8s_workloads.pods.manifest import Manifest

__all__ = [
    "Edit",
    "HostileHook",
    "hostile_edits",
    "hostile_hooks",
    "hostile_label_keys",
    "hostile_label_values",
    "hostile_names",
    "hostile_templates_and_overrides",
    "huge_annotation_values",
    "wrong_type_values",
]

hostile_names = st.one_of(
    st.sampled_from(
        ["Bad_Name!", "", "-a", "a-", "A", "a..b", "a.-b", "a" * 64, "ß", "a\n", " ", "base"]
    ),
    st.text(max_size=70),
    dns_labels,
)
"""Object names (pods, namespaces, containers) of any text; many break DNS-1123."""

hostile_label_keys = st.one_of(
    label_keys,
    st.sampled_from(
        [
            "bad key!",
            "a/b/c",
            "/x",
            "x/",
            "Example.com/x",
            "example.com/" + "n" * 64,
            "p" * 254 + "/x",
            "-x",
            "x_",
            "",
        ]
    ),
    st.text(max_size=80),
)
"""Label and annotation keys, valid or breaking the key rule in every way it can be."""

hostile_label_values = st.one_of(
    label_values,
    st.sampled_from(["-a", "a-", "x" * 64, "a b", "ü", "a/b"]),
    st.text(max_size=70),
)
"""Label values, valid or not."""

_ANNOTATION_LIMIT = 256 * 1024
huge_annotation_values = st.sampled_from(
    [
        "x" * (_ANNOTATION_LIMIT // 2),
        "x" * (_ANNOTATION_LIMIT - 200),
        "x" * _ANNOTATION_LIMIT,
        "é" * (_ANNOTATION_LIMIT // 2),  # two bytes each: over the limit in bytes only
        "x" * 300_000,
    ]
)
"""Annotation values near and over the 256 KiB total."""

wrong_type_values = st.one_of(
    st.sampled_from(
        ["False,", "false", "600", "8080", "ten", 600.0, 2.5, True, 0, 8080, 2**31, [], {}]
    ),
    st.sampled_from([["a"], {"a": 1}, [{"name": 1}], None, -(2**70), float("nan")]),
    st.text(max_size=5),
    st.integers(),
    st.floats(),
    st.booleans(),
)
"""JSON-ish values of any type, to put where another type belongs."""

# Typed fields a layer or hook may set wrong: where (a path of keys and list indexes, the
# container lists' first item made if missing) and, for a few, the type expected there.
_TYPED_FIELDS: list[tuple[str | int, ...]] = [
    ("spec", "hostNetwork"),
    ("spec", "terminationGracePeriodSeconds"),
    ("spec", "priority"),
    ("spec", "nodeSelector", "pool"),
    ("spec", "tolerations"),
    ("spec", "hostNetwrk"),  # unknown: a typo
    ("spec", "containers", 0, "tty"),
    ("spec", "containers", 0, "command"),
    ("spec", "containers", 0, "env"),
    ("spec", "containers", 0, "imagee"),  # unknown: a typo
    ("spec", "containers", 0, "resources", "limits", "cpu"),
    ("spec", "containers", 0, "ports"),
    ("metadata", "labels", "team"),
    ("metadata", "annotations", "note"),
    ("metadata", "name"),
    ("kind",),
]


def _at(manifest: Manifest, path: tuple[str | int, ...]) -> tuple[Any, str | int]:
    """The container of ``path``'s last step, made as needed (None if a value blocks it)."""
    node: Any = manifest
    for step, following in itertools.pairwise(path):
        if isinstance(node, list) and isinstance(step, int):
            while len(node) <= step:
                node.append({"name": f"c{len(node)}"})
            node = node[step]
        elif isinstance(node, dict):
            if not isinstance(node.get(step), (dict, list)):
                node[step] = [] if isinstance(following, int) else {}
            node = node[step]
        else:
            return None, path[-1]
    return node, path[-1]


@dataclasses.dataclass(frozen=True)
class Edit:
    """One hostile change to a manifest, applied in place (readable in failure reports)."""

    kind: str
    path: tuple[str | int, ...] = ()
    value: Any = None

    def apply(self, manifest: Manifest) -> None:
        if self.kind == "set":
            node, last = _at(manifest, self.path)
            if isinstance(node, dict):
                node[last] = self.value
        elif self.kind == "init-container":
            spec = manifest.setdefault("spec", {})
            if isinstance(spec, dict):
                spec.setdefault("initContainers", []).append({"name": self.value})
        elif self.kind == "drop-name":
            containers, _ = _at(manifest, ("spec", "containers", 1, "name"))
            if isinstance(containers, dict):
                containers.pop("name", None)


@st.composite
def hostile_edits(draw: st.DrawFn) -> list[Edit]:
    """0-2 hostile edits: a bad name, label, annotation, container name or field type."""
    one = st.one_of(
        st.builds(Edit, st.just("set"), st.just(("metadata", "name")), hostile_names),
        st.builds(Edit, st.just("set"), st.just(("metadata", "namespace")), hostile_names),
        st.builds(
            lambda key, value: Edit("set", ("metadata", "labels", key), value),
            hostile_label_keys.filter(lambda key: key not in RESERVED_KEYS),
            hostile_label_values,
        ),
        st.builds(
            lambda key, value: Edit("set", ("metadata", "annotations", key), value),
            hostile_label_keys.filter(lambda key: key not in RESERVED_KEYS),
            st.one_of(_annotation_values, huge_annotation_values),
        ),
        st.builds(Edit, st.just("init-container"), st.just(()), hostile_names),
        st.builds(Edit, st.just("set"), st.sampled_from(_TYPED_FIELDS), wrong_type_values),
        st.just(Edit("drop-name")),
    )
    return draw(st.lists(one, max_size=2))


def _edited(pod: Manifest | None, edits: list[Edit]) -> Manifest | None:
    if not edits:
        return pod
    edited = copy.deepcopy(pod) if pod is not None else {}
    for edit in edits:
        edit.apply(edited)
    return edited


@st.composite
def hostile_templates_and_overrides(
    draw: st.DrawFn,
) -> tuple[Manifest | None, Manifest | None]:
    """:func:`templates_and_overrides` (valid ones), then hostile edits to one of them."""
    template, override = draw(templates_and_overrides(valid=True))
    if draw(st.booleans()):
        return _edited(template, draw(hostile_edits())), override
    return template, _edited(override, draw(hostile_edits()))


@dataclasses.dataclass(frozen=True)
class HostileHook:
    """A mutation hook that applies hostile edits in place, or to a copy it returns."""

    edits: tuple[Edit, ...]
    returns_copy: bool

    def __call__(self, pod: Manifest) -> Manifest | None:
        target = copy.deepcopy(pod) if self.returns_copy else pod
        for edit in self.edits:
            edit.apply(target)
        return target if self.returns_copy else None


hostile_hooks = st.one_of(
    st.none(),
    st.builds(HostileHook, hostile_edits().map(tuple), st.booleans()),
)
"""No hook, or one making 0-2 hostile edits."""

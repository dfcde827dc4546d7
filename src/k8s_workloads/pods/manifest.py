"""Pod manifests: the type, and the cleaning every manifest from outside goes through.

:data:`Manifest` is the one type of a manifest throughout the package: the pod builders,
the merge (:mod:`k8s_workloads.pods.reconcile`), the adapter, the executor's requests and
the test kit name it. :func:`clean_manifest` copies what comes from outside into one; a
value that is not JSON is a
:class:`~k8s_workloads.pods.reconcile.PodReconciliationError`, documented with the merge.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias, cast

from k8s_workloads.display import path_part, shown

__all__ = ["Manifest", "clean_manifest", "clean_object"]

Manifest: TypeAlias = dict[str, Any]
"""A JSON-compatible Kubernetes object in the API server's camelCase, without nulls."""


class PodReconciliationError(ValueError):
    """Pods could not be merged: a field has a shape Kubernetes does not allow."""

    __module__ = "k8s_workloads.pods.reconcile"  # its public home (re-exported there)


class _NotPlainJSON(Exception):
    """A value the fast copy does not handle: take the general, path-reporting copy."""


def _plain_copy(value: object) -> Any:  # noqa: ANN401 - JSON value
    # The hot path: exact dicts, lists and scalars, no per-node path strings. Anything
    # else (other mappings, tuples, bad values) falls back to _general_copy.
    kind = type(value)
    if kind is dict:
        mapping = cast("dict[object, object]", value)
        copied = {key: _plain_copy(item) for key, item in mapping.items() if item is not None}
        if not all(type(key) is str for key in copied):
            raise _NotPlainJSON
        return copied
    if kind is list:
        return [_plain_copy(item) for item in cast("list[object]", value)]
    if kind is str or kind is int or kind is bool or kind is float:
        return value
    raise _NotPlainJSON


def _general_copy(value: object, where: str) -> Any:  # noqa: ANN401 - JSON value
    if isinstance(value, Mapping):
        copied: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise PodReconciliationError(f"{where}: keys must be strings, got {shown(key)}")
            if item is not None:
                copied[key] = _general_copy(item, where + path_part(key))
        return copied
    if isinstance(value, (list, tuple)):
        return [_general_copy(item, f"{where}[{index}]") for index, item in enumerate(value)]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise PodReconciliationError(
        f"{where}: {type(value).__name__} is not a JSON value (pass manifests, or use "
        "k8s_workloads.adapters.to_manifest for kubernetes objects)"
    )


def clean_manifest(value: object, *, where: str = "pod") -> Any:  # noqa: ANN401 - JSON value
    """A deep copy of a JSON-like value with every ``None`` mapping entry dropped.

    Mappings become dicts and tuples become lists; anything that is not JSON-like raises
    :class:`PodReconciliationError` naming where it sits.
    """
    try:
        return _plain_copy(value)
    except _NotPlainJSON:
        return _general_copy(value, where)


def clean_object(value: object, *, where: str) -> Manifest:
    """:func:`clean_manifest` of a value that must be an object (a pod or a layer of one)."""
    cleaned = clean_manifest(value, where=where)
    if not isinstance(cleaned, dict):
        raise PodReconciliationError(f"{where} must be an object, got {type(value).__name__}")
    return cleaned

"""The provider's pod merge rules (``PodGenerator.reconcile_pods``), on plain manifests.

Pods are merged pairwise, later over earlier: template, then the executor's dynamic pod,
then the task's ``pod_override``. The rules are the provider's, quirks included, because
users' templates and overrides were written against them:

* a *client* (later) field wins only where it is truthy, so ``false``, ``0``, ``""``,
  ``[]`` and ``{}`` can never switch off a truthy template value — except that an empty
  *object* (a Kubernetes model such as ``securityContext: {}``) is truthy, as a model
  instance is in Python; only the string maps (labels, annotations, ``nodeSelector``,
  ``overhead``) are falsy when empty;
* labels and annotations are unions, the client winning on a clash;
* main containers merge by **position**; within a pair, ``volumeMounts``, ``env``,
  ``envFrom``, ``ports`` and ``volumeDevices`` are concatenated, template first;
* init containers with the same name merge like that, the rest are appended;
* ``volumes`` are concatenated; nothing is de-duplicated;
* a list field holding a non-list is an error.

Every function returns new dicts for what it merges and never mutates its arguments; a
``None`` value is treated as absent, as the provider's models do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from k8s_workloads.pods.manifest import (
    Manifest,
    PodReconciliationError,
    clean_object,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["PodReconciliationError", "reconcile_pods"]

# Fields typed dict[str, str] in the Kubernetes models: an empty one is falsy. Every other
# object-valued field is a model, truthy even when empty.
_POD_MAPS: frozenset[str] = frozenset()
_METADATA_MAPS = frozenset({"labels", "annotations"})
_SPEC_MAPS = frozenset({"nodeSelector", "overhead"})
_CONTAINER_MAPS: frozenset[str] = frozenset()

_CONTAINER_LISTS = ("volumeMounts", "env", "envFrom", "ports", "volumeDevices")
# The provider concatenates these metadata lists but then discards the result; only its
# check that they are lists has an effect.
_METADATA_CHECKED_LISTS = ("managedFields", "finalizers", "ownerReferences")


def _is_set(value: object, *, is_map: bool) -> bool:
    """The provider's ``if client_value``: models are truthy, maps and lists when non-empty."""
    if isinstance(value, dict):
        return bool(value) or not is_map
    return bool(value)


def _object(value: object, where: str) -> Manifest | None:
    if value is None or isinstance(value, dict):
        return value
    raise PodReconciliationError(f"{where} must be an object, got {type(value).__name__}")


def _fill_unset(merged: Manifest, base: Manifest, maps: frozenset[str]) -> Manifest:
    # merge_objects on two model instances: the client's truthy fields, else the base's.
    # ``merged`` is the caller's copy of the client, completed in place.
    for key, base_value in base.items():
        if not _is_set(merged.get(key), is_map=key in maps):
            merged[key] = base_value
    return merged


def _merge_map(base: object, client: object) -> Any:  # noqa: ANN401
    # merge_objects on two plain dicts (labels, annotations): union, client wins.
    if not base:
        return client
    if not client:
        return base
    if not isinstance(base, dict) or not isinstance(client, dict):
        raise PodReconciliationError("labels and annotations must be objects")
    return {**base, **client}


def _list_field(obj: Manifest, field: str, where: str) -> list[Any] | None:
    value = obj.get(field)
    if value is not None and not isinstance(value, list):
        raise PodReconciliationError(
            f"{where}.{field}: the chosen field must be a list, got {type(value).__name__}"
        )
    return value


def _extend(merged: Manifest, base: Manifest, field: str, where: str) -> None:
    # extend_object_field: base's list then client's, into ``merged`` (the client's copy).
    base_list = _list_field(base, field, where)
    client_list = _list_field(merged, field, where)
    if base_list:
        merged[field] = base_list + client_list if client_list else base_list


def _set_or_drop(merged: Manifest, field: str, value: object) -> None:
    if value is None:
        merged.pop(field, None)
    else:
        merged[field] = value


def _merge_container(base: object, client: object, where: str) -> Manifest:
    base_c = _object(base, where)
    client_c = _object(client, where)
    if base_c is None or client_c is None:
        raise PodReconciliationError(f"{where} must be an object, got null")
    merged = dict(client_c)
    for field in _CONTAINER_LISTS:
        _extend(merged, base_c, field, where)
    return _fill_unset(merged, base_c, _CONTAINER_MAPS)


def _reconcile_containers(base: object, client: object, where: str) -> Any:  # noqa: ANN401
    if not base:
        return client
    if not client:
        return base
    if not isinstance(base, list) or not isinstance(client, list):
        raise PodReconciliationError(f"{where}: the chosen field must be a list")
    paired = min(len(base), len(client))
    merged = [
        _merge_container(base[index], client[index], f"{where}[{index}]") for index in range(paired)
    ]
    return merged + base[paired:] + client[paired:]


def _reconcile_init_containers(base: list[Any], client: list[Any], where: str) -> list[Any]:
    if not all(isinstance(container, dict) for container in client):
        raise PodReconciliationError(f"{where}: containers must be objects")
    by_name: dict[object, Any] = {container.get("name"): container for container in client}
    merged: list[Any] = []
    matched: set[object] = set()
    for index, container in enumerate(base):
        if not isinstance(container, dict):
            raise PodReconciliationError(f"{where}[{index}] must be an object")
        name = container.get("name")
        if name in by_name:
            merged.append(_merge_container(container, by_name[name], f"{where}[{index}]"))
            matched.add(name)
        else:
            merged.append(container)
    merged.extend(c for c in client if c.get("name") not in matched)
    return merged


def _reconcile_specs(base: Manifest | None, client: Manifest | None) -> Manifest | None:
    if base is None or client is None:
        return client if base is None else base
    merged = dict(client)
    containers = _reconcile_containers(
        base.get("containers"), client.get("containers"), "spec.containers"
    )
    _set_or_drop(merged, "containers", containers)
    _extend(merged, base, "initContainers", "spec")
    base_init, client_init = base.get("initContainers"), client.get("initContainers")
    if base_init and client_init:
        merged["initContainers"] = _reconcile_init_containers(
            base_init, client_init, "spec.initContainers"
        )
    _extend(merged, base, "volumes", "spec")
    return _fill_unset(merged, base, _SPEC_MAPS)


def _reconcile_metadata(base: Manifest | None, client: Manifest | None) -> Manifest | None:
    if base is None or client is None:
        return client if base is None else base
    merged = dict(client)
    for field in ("labels", "annotations"):
        _set_or_drop(merged, field, _merge_map(base.get(field), client.get(field)))
    for field in _METADATA_CHECKED_LISTS:
        _list_field(base, field, "metadata")
        _list_field(merged, field, "metadata")
    return _fill_unset(merged, base, _METADATA_MAPS)


def merge_pair(base: Manifest, client: Manifest | None) -> Manifest:
    """One merge step on manifests the caller owns (already cleaned; shared, not copied)."""
    if client is None:
        return base
    merged = dict(client)
    spec = _reconcile_specs(_object(base.get("spec"), "spec"), _object(client.get("spec"), "spec"))
    metadata = _reconcile_metadata(
        _object(base.get("metadata"), "metadata"), _object(client.get("metadata"), "metadata")
    )
    _set_or_drop(merged, "spec", spec)
    _set_or_drop(merged, "metadata", metadata)
    return _fill_unset(merged, base, _POD_MAPS)


def reconcile_pods(base: Mapping[str, Any], client: Mapping[str, Any] | None) -> Manifest:
    """Merge ``client`` over ``base`` with the provider's rules; a new manifest.

    ``client=None`` returns (a copy of) ``base``; so does an empty ``client``. Raises
    :class:`PodReconciliationError` for shapes the provider cannot merge either (a list
    field holding something else, a non-object where an object belongs).
    """
    base_copy = clean_object(base, where="pod")
    if client is None:
        return base_copy
    return merge_pair(base_copy, clean_object(client, where="pod"))

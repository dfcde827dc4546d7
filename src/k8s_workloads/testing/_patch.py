"""PATCH bodies applied as the API server applies them, chosen by content type.

Three kinds, as ``k8s.io/apiserver/pkg/endpoints/handlers/patch.go`` serves them:

* ``application/merge-patch+json``: RFC 7386 (an object merges into an object, ``null``
  removes a key, anything else, lists included, replaces);
* ``application/strategic-merge-patch+json``: the same for maps, and for the pod's lists
  that declare ``patchStrategy: merge`` (``containers`` by ``name``, ``ports`` by
  ``containerPort``, status ``conditions`` by ``type``, ...) element by element, with the
  ``$patch`` (``delete``, ``replace``), ``$retainKeys`` and ``$deleteFromPrimitiveList``
  directives; ``$setElementOrder`` lists are accepted and ignored (order is kept);
* ``application/json-patch+json``: RFC 6902 (``add``, ``remove``, ``replace``, ``move``,
  ``copy``, ``test``) with RFC 6901 pointers.

Pure code over JSON values: :func:`apply_patch` returns a new document or raises
:class:`PatchError` carrying the HTTP code the API server gives (400 for a patch document
it cannot decode, 422 for one that does not apply, 415 for another content type).
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = [
    "JSON_PATCH",
    "MERGE_PATCH",
    "PATCH_TYPES",
    "STRATEGIC_MERGE_PATCH",
    "PatchError",
    "apply_patch",
    "patch_type",
]

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH)
"""The content types this kit applies (server-side apply is not modelled: a 415)."""

_SHORT_NAMES = {"json": JSON_PATCH, "merge": MERGE_PATCH, "strategic": STRATEGIC_MERGE_PATCH}

# The pod's lists with patchStrategy "merge" and their patchMergeKey (k8s.io/api/core/v1
# types.go struct tags), by field name: in a Pod each of these names means one list.
_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
    "env": "name",
    "schedulingGates": "name",
    "resourceClaims": "name",
    "resourceClaimStatuses": "name",
    "ports": "containerPort",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "hostAliases": "ip",
    "podIPs": "ip",
    "hostIPs": "ip",
    "conditions": "type",
    "ownerReferences": "uid",
    "topologySpreadConstraints": "topologyKey",
}
# Lists of scalars with patchStrategy "merge": a patch adds its values (a set union).
_MERGED_SCALAR_LISTS = frozenset({"finalizers"})

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_DELETE_FROM = "$deleteFromPrimitiveList/"
_ELEMENT_ORDER = "$setElementOrder/"


class PatchError(ValueError):
    """A patch the API server refuses: ``code`` is its HTTP status (400, 415 or 422)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def patch_type(content_type: str) -> str:
    """The patch kind a ``Content-Type`` (or a short name: json, merge, strategic) names.

    Parameters (``; charset=utf-8``) are ignored; anything else is a 415.
    """
    kind = content_type.split(";", 1)[0].strip().lower()
    kind = _SHORT_NAMES.get(kind, kind)
    if kind not in PATCH_TYPES:
        raise PatchError(
            415,
            f"the body of the request was in an unknown format - accepted media types "
            f"include: {', '.join(PATCH_TYPES)}",
        )
    return kind


def apply_patch(document: dict[str, Any], patch: object, kind: str) -> dict[str, Any]:
    """``document`` with ``patch`` applied (a new tree; ``document`` is not changed)."""
    kind = patch_type(kind)
    if kind == JSON_PATCH:
        result = _json_patch(copy.deepcopy(document), patch)
    else:
        if not isinstance(patch, dict):
            raise PatchError(400, f"the patch must be a JSON object, got {type(patch).__name__}")
        strategic = kind == STRATEGIC_MERGE_PATCH
        result = _merge(copy.deepcopy(document), patch, strategic=strategic)
    if not isinstance(result, dict):
        raise PatchError(422, "the patched object is not a JSON object")
    return result


# --- RFC 7386 and the strategic merge ----------------------------------------------------


def _merge(target: object, patch: object, *, strategic: bool) -> Any:  # noqa: ANN401
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if strategic and patch.get(_DIRECTIVE) == "replace":
        return {key: value for key, value in patch.items() if key != _DIRECTIVE}
    merged: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if strategic and key.startswith("$"):
            _directive(merged, key, value)
        elif value is None:
            merged.pop(key, None)
        elif strategic and isinstance(value, list) and key in _MERGE_KEYS:
            merged[key] = _merge_list(merged.get(key), value, key)
        elif strategic and isinstance(value, list) and key in _MERGED_SCALAR_LISTS:
            current = merged.get(key)
            old: list[Any] = current if isinstance(current, list) else []
            merged[key] = [*old, *(item for item in value if item not in old)]
        else:
            merged[key] = _merge(merged.get(key), value, strategic=strategic)
    if strategic and _RETAIN_KEYS in patch:
        retain = patch[_RETAIN_KEYS]
        merged = {key: value for key, value in merged.items() if key in retain}
    return merged


def _directive(merged: dict[str, Any], key: str, value: object) -> None:
    if key == _DIRECTIVE:
        if value != "delete":  # "replace" is handled by the caller
            raise PatchError(400, f"unsupported $patch directive {value!r}")
        merged.clear()
    elif key == _RETAIN_KEYS:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise PatchError(400, "$retainKeys must be a list of field names")
    elif key.startswith(_DELETE_FROM):
        field = key[len(_DELETE_FROM) :]
        if not isinstance(value, list):
            raise PatchError(400, f"{key} must be a list")
        old = merged.get(field)
        if isinstance(old, list):
            merged[field] = [item for item in old if item not in value]
    elif key.startswith(_ELEMENT_ORDER):
        if not isinstance(value, list):
            raise PatchError(400, f"{key} must be a list")
    else:
        raise PatchError(400, f"unknown strategic merge patch directive {key!r}")


def _merge_list(target: object, patch: list[Any], field: str) -> list[Any]:
    merge_key = _MERGE_KEYS[field]
    if any(isinstance(item, dict) and item.get(_DIRECTIVE) == "replace" for item in patch):
        return [
            item
            for item in patch
            if not (isinstance(item, dict) and item.get(_DIRECTIVE) == "replace")
        ]
    merged = [copy.deepcopy(item) for item in target] if isinstance(target, list) else []
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise PatchError(
                422, f"{field}: a patch element does not contain the merge key {merge_key!r}"
            )
        found = next(
            (
                index
                for index, old in enumerate(merged)
                if isinstance(old, dict) and old.get(merge_key) == item[merge_key]
            ),
            None,
        )
        if item.get(_DIRECTIVE) == "delete":
            if found is not None:
                del merged[found]
        elif found is None:
            merged.append(_merge({}, item, strategic=True))
        else:
            merged[found] = _merge(merged[found], item, strategic=True)
    return merged


# --- RFC 6902 --------------------------------------------------------------------------------


def _pointer(path: object) -> list[str]:
    # RFC 6901: "" is the whole document; each token has ~1 for '/' and ~0 for '~'.
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise PatchError(422, f"invalid JSON pointer {path!r}")
    if not path:
        return []
    return [token.replace("~1", "/").replace("~0", "~") for token in path[1:].split("/")]


def _index(container: list[Any], token: str, *, append: bool) -> int:
    if append and token == "-":  # noqa: S105 - RFC 6901's "past the end", not a secret
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise PatchError(422, f"invalid array index {token!r}")
    index = int(token)
    if index > len(container) or (not append and index == len(container)):
        raise PatchError(422, f"array index {index} out of bounds")
    return index


def _parent(document: Any, tokens: list[str]) -> Any:  # noqa: ANN401
    node = document
    for token in tokens[:-1]:
        node = _child(node, token)
    return node


def _child(node: object, token: str) -> Any:  # noqa: ANN401
    if isinstance(node, dict):
        if token not in node:
            raise PatchError(422, f"missing value at {token!r}")
        return node[token]
    if isinstance(node, list):
        return node[_index(node, token, append=False)]
    raise PatchError(422, f"cannot walk into a {type(node).__name__} at {token!r}")


def _get(document: object, path: object) -> Any:  # noqa: ANN401
    node = document
    for token in _pointer(path):
        node = _child(node, token)
    return node


def _add(document: Any, path: object, value: object) -> Any:  # noqa: ANN401
    tokens = _pointer(path)
    if not tokens:
        return copy.deepcopy(value)
    parent = _parent(document, tokens)
    if isinstance(parent, dict):
        parent[tokens[-1]] = copy.deepcopy(value)
    elif isinstance(parent, list):
        parent.insert(_index(parent, tokens[-1], append=True), copy.deepcopy(value))
    else:
        raise PatchError(422, f"cannot add to a {type(parent).__name__} at {path!r}")
    return document


def _remove(document: Any, path: object) -> tuple[Any, Any]:  # noqa: ANN401
    tokens = _pointer(path)
    if not tokens:
        raise PatchError(422, "cannot remove the whole document")
    parent = _parent(document, tokens)
    if isinstance(parent, dict):
        if tokens[-1] not in parent:
            raise PatchError(422, f"unable to remove nonexistent key {tokens[-1]!r} at {path!r}")
        return document, parent.pop(tokens[-1])
    if isinstance(parent, list):
        return document, parent.pop(_index(parent, tokens[-1], append=False))
    raise PatchError(422, f"cannot remove from a {type(parent).__name__} at {path!r}")


def _same(left: object, right: object) -> bool:
    # RFC 6902 section 4.6: equal JSON values of the same type (Python's 1 == True is not).
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(_same, left, right))
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return left == right
    return type(left) is type(right) and left == right


def _op_add(document: Any, operation: dict[str, Any]) -> Any:  # noqa: ANN401
    return _add(document, operation.get("path"), operation["value"])


def _op_remove(document: Any, operation: dict[str, Any]) -> Any:  # noqa: ANN401
    return _remove(document, operation.get("path"))[0]


def _op_replace(document: Any, operation: dict[str, Any]) -> Any:  # noqa: ANN401
    path = operation.get("path")
    _get(document, path)  # the value replaced must exist
    if _pointer(path):
        document, _ = _remove(document, path)
    return _add(document, path, operation["value"])


def _op_move(document: Any, operation: dict[str, Any]) -> Any:  # noqa: ANN401
    path, source = operation.get("path"), operation.get("from")
    if isinstance(path, str) and isinstance(source, str) and path.startswith(source + "/"):
        raise PatchError(422, f"cannot move {source!r} into its own child {path!r}")
    document, value = _remove(document, source)
    return _add(document, path, value)


def _op_copy(document: Any, operation: dict[str, Any]) -> Any:  # noqa: ANN401
    value = copy.deepcopy(_get(document, operation.get("from")))
    return _add(document, operation.get("path"), value)


def _op_test(document: Any, operation: dict[str, Any]) -> Any:  # noqa: ANN401
    path = operation.get("path")
    if not _same(_get(document, path), operation["value"]):
        raise PatchError(422, f"testing value {path} failed: test failed")
    return document


_OPERATIONS = {
    "add": _op_add,
    "remove": _op_remove,
    "replace": _op_replace,
    "move": _op_move,
    "copy": _op_copy,
    "test": _op_test,
}


def _json_patch(document: Any, operations: object) -> Any:  # noqa: ANN401
    if not isinstance(operations, list) or not all(isinstance(op, dict) for op in operations):
        raise PatchError(400, "a JSON patch must be a list of operation objects")
    for operation in operations:
        op = operation.get("op")
        apply = _OPERATIONS.get(op) if isinstance(op, str) else None
        if apply is None:
            raise PatchError(422, f"unexpected kind of JSON patch operation: {op!r}")
        if op in {"add", "replace", "test"} and "value" not in operation:
            raise PatchError(422, f"{op} operation at {operation.get('path')!r} has no value")
        document = apply(document, operation)
    return document

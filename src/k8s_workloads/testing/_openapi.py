"""The OpenAPI documents kubectl downloads, built from the library's 1.37 Pod table.

``kubectl create -f`` (validation on) reads ``/openapi/v3`` to learn whether the server
validates fields itself (the ``fieldValidation`` query parameter on the operation) and
``/openapi/v2`` for client-side checks; without them it stops with "failed to download
openapi". These documents describe exactly what the kit serves: pods (with ``status``
and ``log``), Secrets and namespaces, with the Pod's schema taken from
``k8s_workloads.pods.schema_definitions`` (no second copy of it).
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import TYPE_CHECKING

from k8s_workloads.pods.schema_definitions import DEFINITIONS

if TYPE_CHECKING:
    from collections.abc import Callable

    from k8s_workloads.pods.manifest import Manifest

__all__ = ["DOCUMENTS"]

_PREFIX = "io.k8s.api.core.v1."
_SCALARS: dict[str, Manifest] = {
    "string": {"type": "string"},
    "boolean": {"type": "boolean"},
    "int32": {"type": "integer", "format": "int32"},
    "int64": {"type": "integer", "format": "int64"},
    "number": {"type": "number", "format": "double"},
    "quantity": {"x-kubernetes-int-or-string": True},
    "int-or-string": {"x-kubernetes-int-or-string": True},
    "time": {"type": "string", "format": "date-time"},
    "object": {"type": "object"},
}


def _top_level(**properties: Manifest) -> Manifest:
    """A top-level object's schema: ``apiVersion``, ``kind``, ``metadata``, then its own."""
    common = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}}
    return {
        "type": "object",
        "properties": {**common, "metadata": {"$ref": "ObjectMeta"}, **properties},
    }


_SECRET = _top_level(
    data={"type": "object", "additionalProperties": {"type": "string", "format": "byte"}},
    stringData={"type": "object", "additionalProperties": {"type": "string"}},
    type={"type": "string"},
    immutable={"type": "boolean"},
)
_NAMESPACE = _top_level(spec={"type": "object"}, status={"type": "object"})
# (path, kind, verbs by HTTP method): what the server answers (see server.py's routes).
_PATHS = (
    ("/api/v1/namespaces/{namespace}/pods", "Pod", ("get", "post")),
    ("/api/v1/namespaces/{namespace}/pods/{name}", "Pod", ("get", "patch", "delete")),
    ("/api/v1/namespaces/{namespace}/pods/{name}/status", "Pod", ("get", "patch")),
    ("/api/v1/namespaces/{namespace}/pods/{name}/log", "Pod", ("get",)),
    ("/api/v1/pods", "Pod", ("get",)),
    ("/api/v1/namespaces/{namespace}/secrets", "Secret", ("get", "post")),
    ("/api/v1/namespaces/{namespace}/secrets/{name}", "Secret", ("get", "delete")),
    ("/api/v1/namespaces", "Namespace", ("get",)),
    ("/api/v1/namespaces/{name}", "Namespace", ("get",)),
)


def _schema(spec: str, ref: Callable[[str], str]) -> Manifest:
    spec = spec.removeprefix("?")
    if spec.startswith("[]"):
        return {"type": "array", "items": _schema(spec[2:], ref)}
    if spec.startswith("{}"):
        return {"type": "object", "additionalProperties": _schema(spec[2:], ref)}
    if spec.startswith("enum:"):
        return {"type": "string", "enum": [spec[5:]]}
    if spec in _SCALARS:
        return dict(_SCALARS[spec])
    return {"$ref": ref(spec)}


def _definitions(ref: Callable[[str], str]) -> Manifest:
    found: Manifest = {}
    for name, (properties, required) in DEFINITIONS.items():
        schema: Manifest = {
            "type": "object",
            "properties": {key: _schema(spec, ref) for key, spec in properties.items()},
        }
        if required:
            schema["required"] = list(required)
        found[_PREFIX + name] = schema
    for name, schema in (("Secret", _SECRET), ("Namespace", _NAMESPACE)):
        text = json.dumps(schema).replace('"$ref": "ObjectMeta"', f'"$ref": "{ref("ObjectMeta")}"')
        found[_PREFIX + name] = json.loads(text)
    for kind in ("Pod", "Secret", "Namespace"):
        found[_PREFIX + kind]["x-kubernetes-group-version-kind"] = [
            {"group": "", "version": "v1", "kind": kind}
        ]
    return found


def _operation(kind: str, method: str, *, v3: bool) -> Manifest:
    parameters: list[Manifest] = [
        {"name": "dryRun", "in": "query", "schema": {"type": "string"}, "uniqueItems": True},
        {
            "name": "fieldValidation",
            "in": "query",
            "description": "Ignore, Warn or Strict: what to do with unknown fields",
            "schema": {"type": "string"},
            "uniqueItems": True,
        },
    ]
    if not v3:
        for parameter in parameters:
            parameter["type"] = parameter.pop("schema")["type"]
    operation: Manifest = {
        "operationId": f"{method}CoreV1{kind}",
        "x-kubernetes-action": {"get": "get", "post": "post", "patch": "patch"}.get(method, method),
        "x-kubernetes-group-version-kind": {"group": "", "version": "v1", "kind": kind},
        "responses": {"200": {"description": "OK"}},
    }
    if method in {"post", "patch"}:
        operation["parameters"] = parameters
    return operation


def _paths(*, v3: bool) -> Manifest:
    return {
        path: {method: _operation(kind, method, v3=v3) for method in methods}
        for path, kind, methods in _PATHS
    }


def _document(*, v3: bool) -> Manifest:
    """The OpenAPI document of the kit's API: version 2 (``/openapi/v2``) or 3."""
    document: Manifest = {"openapi": "3.0.0"} if v3 else {"swagger": "2.0"}
    document["info"] = {"title": "Kubernetes (k8s_workloads test kit)", "version": "v1.37.0"}
    document["paths"] = _paths(v3=v3)
    if v3:
        schemas = _definitions(lambda name: f"#/components/schemas/{_PREFIX}{name}")
        document["components"] = {"schemas": schemas}
    else:
        document["definitions"] = _definitions(lambda name: f"#/definitions/{_PREFIX}{name}")
    return document


@functools.cache
def _v2() -> Manifest:
    return _document(v3=False)


@functools.cache
def _v3_core() -> Manifest:
    return _document(v3=True)


@functools.cache
def _v3_root() -> Manifest:
    digest = hashlib.sha512(json.dumps(_v3_core(), sort_keys=True).encode()).hexdigest()
    return {"paths": {"api/v1": {"serverRelativeURL": f"/openapi/v3/api/v1?hash={digest.upper()}"}}}


DOCUMENTS: dict[str, Callable[[], Manifest]] = {
    "/openapi/v2": _v2,
    "/openapi/v3": _v3_root,
    "/openapi/v3/api/v1": _v3_core,
}
"""The documents by path, built on first use."""

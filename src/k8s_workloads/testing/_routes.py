"""What a request to the kit's API server asks: its path, its kind, its query options.

The paths the server serves (pods and their subresources, Secrets, namespaces,
``SelfSubjectAccessReview``), the
discovery documents, a request's (verb, resource) as the API server's metrics label it,
and the query and ``DeleteOptions`` values read as the API server reads them (a bad one
is a 400 or a 422 :class:`~k8s_workloads.testing.ApiError`). No I/O: the handler
(:mod:`k8s_workloads.testing.server`) reads the request and writes the answer.
"""

from __future__ import annotations

import re
from typing import Any

from k8s_workloads.testing._access import AUTHORIZATION_GROUP, AUTHORIZATION_RESOURCES, REVIEW_PATH
from k8s_workloads.testing._admission import Cause
from k8s_workloads.testing.errors import ApiError, invalid

__all__ = [
    "DISCOVERY",
    "NAMESPACE_PATH",
    "POD_PATH",
    "SECRET_PATH",
    "STATS_PATH",
    "discovery_document",
    "dry_run_flag",
    "first",
    "grace_seconds",
    "is_watch",
    "not_allowed",
    "page_limit",
    "partial",
    "request_kind",
    "watch_options",
]

STATS_PATH = "/_kit/stats"
"""The kit's own path (no API server has it): ``GET`` answers ``ServerStats.to_json()``."""

POD_PATH = re.compile(
    r"^/api/v1/(?:namespaces/(?P<namespace>[^/]+)/)?pods"
    r"(?:/(?P<name>[^/]+)(?:/(?P<subresource>status|log|binding))?)?$"
)
SECRET_PATH = re.compile(
    r"^/api/v1/(?:namespaces/(?P<namespace>[^/]+)/)?secrets(?:/(?P<name>[^/]+))?$"
)
NAMESPACE_PATH = re.compile(r"^/api/v1/namespaces(?:/(?P<name>[^/]+))?$")

_API_VERSIONS = {
    "kind": "APIVersions",
    "versions": ["v1"],
    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
}
_API_GROUPS = {"kind": "APIGroupList", "apiVersion": "v1", "groups": [AUTHORIZATION_GROUP]}
_VERSION = {
    # Every field of version.Info: the kubernetes 37 client's VersionInfo requires each.
    "major": "1",
    "minor": "37",
    "gitVersion": "v1.37.0-k8s-workloads-fake",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.25.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def _resource(name: str, kind: str, verbs: list[str], *, namespaced: bool = True) -> dict[str, Any]:
    return {
        "name": name,
        "singularName": kind.lower(),
        "namespaced": namespaced,
        "kind": kind,
        "verbs": verbs,
    }


_CORE_RESOURCES = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    # Only what the routes below serve, with the verbs they serve.
    "resources": [
        _resource("pods", "Pod", ["create", "delete", "get", "list", "patch", "watch"])
        | {"shortNames": ["po"], "categories": ["all"]},
        _resource("pods/binding", "Binding", ["create"]),
        _resource("pods/status", "Pod", ["get", "patch"]),
        _resource("pods/log", "Pod", ["get"]),
        _resource("secrets", "Secret", ["create", "delete", "get", "list"]),
        _resource("namespaces", "Namespace", ["get", "list"], namespaced=False)
        | {"shortNames": ["ns"]},
    ],
}


DISCOVERY: dict[str, dict[str, Any]] = {
    "/api": _API_VERSIONS,
    "/apis": _API_GROUPS,
    "/api/v1": _CORE_RESOURCES,
    "/apis/authorization.k8s.io/v1": AUTHORIZATION_RESOURCES,
    "/version": _VERSION,
}


def discovery_document(path: str) -> dict[str, Any] | None:
    """The discovery document at ``path``, with or without its trailing slash (the
    clients' ``VersionApi`` and ``ApisApi`` ask for ``/version/`` and ``/apis/``)."""
    return DISCOVERY.get(path[:-1] if len(path) > 1 and path.endswith("/") else path)


def is_watch(query: dict[str, str]) -> bool:
    return (query.get("watch") or "").lower() in {"true", "1"}


def request_kind(method: str, path: str, query: dict[str, str]) -> tuple[str, str]:
    # (verb, resource) as the API server's request metrics label them: LIST and WATCH
    # apart from GET of one object; a discovery document by its path.
    if match := POD_PATH.match(path):
        resource, name = "pods", match["name"]
        if match["subresource"]:
            resource = f"pods/{match['subresource']}"
    elif match := SECRET_PATH.match(path):
        resource, name = "secrets", match["name"]
    elif match := NAMESPACE_PATH.match(path):
        resource, name = "namespaces", match["name"]
    elif path == REVIEW_PATH:
        return method, "selfsubjectaccessreviews"
    else:
        return method, path if discovery_document(path) is not None else "other"
    if method == "GET" and name is None:
        return "WATCH" if is_watch(query) else "LIST", resource
    return method, resource


def partial(items: list[dict[str, Any]], metadata: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "PartialObjectMetadataList",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "items": [
            {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": item.get("metadata", {}),
            }
            for item in items
        ],
    }


def page_limit(query: dict[str, str]) -> int | None:
    text = query.get("limit") or ""
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ApiError(400, "BadRequest", f"limit: invalid value {text!r}") from None


def dry_run_flag(values: list[str]) -> bool:
    # dryRun: "All" is the only value the API server knows (an empty list: a real write).
    for value in values:
        if value != "All":
            raise ApiError(
                400, "BadRequest", f'dryRun: Unsupported value: "{value}": supported values: "All"'
            )
    return bool(values)


def grace_seconds(value: object) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    raise ApiError(400, "BadRequest", f"gracePeriodSeconds: invalid value {value!r}")


def _flag(value: str | None) -> bool | None:
    return None if value is None else value.lower() in {"true", "1"}


def watch_options(query: dict[str, str]) -> tuple[bool, bool | None]:
    # apimachinery validateWatchOptions: sendInitialEvents needs resourceVersionMatch
    # NotOlderThan and allowWatchBookmarks; resourceVersionMatch needs sendInitialEvents.
    bookmarks = bool(_flag(query.get("allowWatchBookmarks")))
    initial = _flag(query.get("sendInitialEvents"))
    match = query.get("resourceVersionMatch") or ""
    causes = []
    if initial is not None and match != "NotOlderThan":
        causes.append(
            (
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )
        )
    if initial is not None and not bookmarks:
        causes.append(
            (
                "allowWatchBookmarks",
                "sendInitialEvents requires setting allowWatchBookmarks to true",
            )
        )
    if match and initial is None:
        causes.append(
            (
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            )
        )
    if causes:
        raise invalid(
            "ListOptions",
            "",
            [Cause(field, "FieldValueForbidden", f"Forbidden: {why}") for field, why in causes],
        )
    return bookmarks, initial


def first(query: dict[str, list[str]]) -> dict[str, str]:
    return {key: values[0] for key, values in query.items()}


def not_allowed(method: str, resource: str) -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        f"the server does not allow this method on the requested resource ({method} {resource})",
    )

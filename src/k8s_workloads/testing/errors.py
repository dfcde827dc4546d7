"""How the kit's API fails: :class:`ApiError` and the ``Status`` documents it carries, a
call made to fail (:class:`Fault`) and what the kit's calls raise (:data:`FAILURES`).

Every error the API server answers is a ``Status`` document with its HTTP code, a
``reason`` constant and, for a 422, ``details.causes`` naming each invalid field (API
conventions, "Response Status Kind"). Kept apart from the cluster so that the cluster, the
server and the admission rules share one shape.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from k8s_workloads.pods.manifest import Manifest
    from k8s_workloads.testing._admission import Cause

__all__ = ["FAILURES", "ApiError", "Fault", "invalid", "status_document"]


def status_document(
    code: int, reason: str, message: str, details: Mapping[str, Any] | None = None
) -> Manifest:
    """A ``Status`` document, as the API server answers an error."""
    document: Manifest = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        document["details"] = dict(details)
    return document


class ApiError(Exception):
    """An API call failed: the shape of ``kubernetes.client.ApiException``."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str = "",
        *,
        body: str | None = None,
        headers: Mapping[str, str] | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(f"({status}) Reason: {reason}: {message}".rstrip(": "))
        self.status = status
        self.reason = reason
        self.body = (
            body
            if body is not None
            else json.dumps(status_document(status, reason, message, details))
        )
        self.headers = dict(headers or {})


def invalid(kind: str, name: object, causes: Iterable[Cause]) -> ApiError:
    """The 422 ``Invalid`` the API server answers for an object that fails validation:
    ``<Kind> "<name>" is invalid: <field>: <message>, ...`` with one cause per field."""
    listed = list(causes)
    summary = ", ".join(f"{cause.field}: {cause.message}" for cause in listed)
    shown = name if isinstance(name, str) else ""
    return ApiError(
        422,
        "Invalid",
        f'{kind} "{shown}" is invalid: [{summary}]'
        if len(listed) > 1
        else f'{kind} "{shown}" is invalid: {summary}',
        details={
            "name": shown,
            "kind": kind,
            "causes": [cause.to_json() for cause in listed],
        },
    )


FAILURES: tuple[type[BaseException], ...] = (ApiError, OSError)
"""What the kit's calls raise when they fail: API errors, connection resets, database
outages (``DatabaseUnavailable`` is a ``ConnectionError``)."""


@attrs.frozen
class Fault:
    """How a call fails: an HTTP status (None: a connection error — the connection reset,
    or with ``refused`` never made). ``applied``: the call takes effect, then its answer
    is lost (the error is raised after the change, as a connection reset after the
    request was written)."""

    status: int | None
    reason: str = "Failure"
    message: str = ""
    body: str | None = None
    headers: Mapping[str, str] | None = None
    refused: bool = False
    applied: bool = False

    def error(self) -> Exception:
        """The exception this fault raises: an :class:`ApiError`, or a connection error."""
        if self.status is None and self.refused:
            return ConnectionRefusedError(111, "Connection refused")
        if self.status is None:
            return ConnectionResetError(104, "Connection reset by peer")
        return ApiError(
            self.status, self.reason, self.message, body=self.body, headers=self.headers
        )

"""What an API answer means for a request: written once, for every client.

Every client module raises its own errors; they all carry an HTTP ``status`` (the
``kubernetes`` client's ``ApiException``, ``kubernetes_asyncio``'s, the kit's
``ApiError``). The rules below decide, from the request and that status, whether a failed
call is in fact done:

==================================  ======  =========================================
request                             status  meaning
==================================  ======  =========================================
``DeletePod``, ``DeleteSecret``     404     done: it is gone, which is what was wanted
``PatchLabels`` (unconditional)     404     done: a pod that is gone needs no label
``PatchLabels`` (conditional)       404     failed: the adoption took nothing
``PatchLabels`` (``expect``)        422     failed: a ``test`` op failed, someone else
                                            took it (the owner label changed)
``PatchLabels`` (resource version)  409     failed: someone else changed or took it
``ReadPod``                         404     answered: there is no such pod (None)
``CreatePod`` (a resend), Secret    409     done: the first send made the Secret
anything else                       any     failed: the core decides (retry, give up,
                                            read the pod back)
==================================  ======  =========================================

A conditional relabel that failed is never retried: the core drops that pod's adoption
(the scheduler resets the task instance only if no one tracks it).

Which failures are transient (a 429, a 5xx, a connection error) is the core's rule
(:func:`~k8s_workloads.decisions.creation_errors.classify_create_error`); this layer never retries
on its own, so the core's creation pause and retry budgets always apply.

Lists are read in pages of :data:`PAGE_SIZE`; a 410 on a page after the first (the
continue token expired) starts the list again, at most :data:`LIST_RESTARTS` times.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from k8s_workloads.decisions.actions import DeletePod, EmitEvent, PatchLabels
from k8s_workloads.executor.requests import DeleteSecret, ListPods, ReadPod, ReadStates

if TYPE_CHECKING:
    from collections.abc import Mapping

    from k8s_workloads.executor.core import ExecutorCore
    from k8s_workloads.executor.requests import Request

__all__ = [
    "LIST_RESTARTS",
    "PAGE_SIZE",
    "Paging",
    "error_status",
    "failure_is_done",
    "label_patch",
    "report_answer",
    "report_failure",
    "settle",
]

PAGE_SIZE: Final = 500
"""Pods per list page: a namespace of 50,000 pods is a hundred responses, not one."""

LIST_RESTARTS: Final = 3
"""How often a list whose continue token expired is started again before it fails."""


def error_status(error: BaseException) -> int | None:
    """The HTTP status an API error carries, or None (a connection error, anything else)."""
    status = getattr(error, "status", None)
    if isinstance(status, int) and not isinstance(status, bool):
        return status
    return None


def failure_is_done(request: Request, error: BaseException) -> bool:
    """Whether ``request`` failing with ``error`` is in fact done (see the table)."""
    status = error_status(error)
    if status != 404:
        return False
    if isinstance(request, PatchLabels):
        return not request.conditional
    return isinstance(request, (DeletePod, DeleteSecret))


def report_answer(core: ExecutorCore, request: Request, answer: object) -> None:
    """Report ``request``'s success to ``core`` with ``perform``'s answer."""
    if isinstance(request, ReadStates):
        core.states_read(request, answer)  # type: ignore[arg-type]
    elif isinstance(request, ReadPod):
        core.pod_read(request, answer)  # type: ignore[arg-type]
    elif isinstance(request, ListPods):
        pods: list[dict[str, Any]]
        version: str | None
        pods, version = answer  # type: ignore[misc]
        core.pods_listed(request, pods, version)
    else:
        core.request_done(request)


def report_failure(core: ExecutorCore, request: Request, error: BaseException) -> None:
    """Report ``request``'s failure to ``core``, or its success where the policy says a
    failure is done (a 404 on a delete)."""
    if failure_is_done(request, error):
        core.request_done(request)
    else:
        core.request_failed(request, error)


def settle(
    core: ExecutorCore,
    request: Request,
    *,
    answer: object = None,
    error: BaseException | None = None,
    failures: tuple[type[BaseException], ...],
) -> BaseException | None:
    """Report a completed request to ``core``: its answer, or its ``error``. An error of
    none of the ``failures`` types is a bug: the request is still reported failed (so it
    is not left in flight for ever) and the error is returned, for the caller to raise."""
    if error is None:
        report_answer(core, request, answer)
        return None
    if isinstance(error, failures):
        report_failure(core, request, error)
        return None
    if not isinstance(request, EmitEvent):  # an event cannot fail: the bug is all there is
        core.request_failed(request, error)
    return error


def label_patch(request: PatchLabels) -> dict[str, Any] | list[dict[str, Any]]:
    """The patch body for ``request``, in the form every client sends as it should.

    Without :attr:`~k8s_workloads.decisions.actions.PatchLabels.expect`: a merge patch of the
    labels (a dict: the clients send it as a strategic merge patch), conditional on its
    ``resourceVersion`` when it has one (the API server answers 409 if the pod moved on).
    With it: a JSON patch (RFC 6902; a list: the ``kubernetes`` and
    ``kubernetes_asyncio`` clients send ``application/json-patch+json`` for a list body)
    — a ``test`` op per expected label (and on the resource version, if any), then a
    ``replace`` of each tested label and an ``add`` of each other one. The server applies
    all of it or nothing (422 Invalid when a test fails).
    """
    if not request.expect:
        metadata: dict[str, Any] = {"labels": dict(request.labels)}
        if request.resource_version is not None:
            metadata["resourceVersion"] = request.resource_version
        return {"metadata": metadata}
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": _label_path(key), "value": value}
        for key, value in request.expect.items()
    ]
    if request.resource_version is not None:
        ops.append(
            {"op": "test", "path": "/metadata/resourceVersion", "value": request.resource_version}
        )
    for key, value in request.labels.items():
        op = "replace" if key in request.expect else "add"
        ops.append({"op": op, "path": _label_path(key), "value": value})
    return ops


def _label_path(key: str) -> str:
    # A JSON pointer (RFC 6901): "~" and "/" in a label key ("example.com/owner") escaped.
    return "/metadata/labels/" + key.replace("~", "~0").replace("/", "~1")


class Paging:
    """A list read in pages, without I/O: every client's list loop runs it.

    ``query()`` gives the next call's keyword arguments (None: the list is whole), each
    page goes to ``take()``, a failed call to ``expired()`` (True: its continue token
    expired and the list starts again; False: raise it), and ``result`` is every item and
    the list's resource version::

        paging = Paging(request_args, label_selector=selector, page_size=PAGE_SIZE)
        while (query := paging.query()) is not None:
            try:
                paging.take(call(**query))
            except ApiException as error:
                if not paging.expired(error):
                    raise
        pods, version = paging.result
    """

    def __init__(
        self,
        base: Mapping[str, Any],
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int | None = PAGE_SIZE,
    ) -> None:
        self._base = {**base}
        if page_size is not None:  # None: one call, the whole list (the kit's)
            self._base["limit"] = page_size
        if label_selector:
            self._base["label_selector"] = label_selector
        if field_selector:
            self._base["field_selector"] = field_selector
        self._items: list[dict[str, Any]] = []
        self._token: str | None = None
        self._version: str | None = None
        self._done = False
        self._restarts = 0

    def query(self) -> dict[str, Any] | None:
        if self._done:
            return None
        if self._token is None:
            return dict(self._base)
        return {**self._base, "_continue": self._token}

    def take(self, page: Mapping[str, Any]) -> None:
        self._items.extend(page.get("items") or [])
        metadata = page.get("metadata") or {}
        self._token = metadata.get("continue") or None
        if self._token is None:
            self._version = metadata.get("resourceVersion")
            self._done = True

    def expired(self, error: BaseException) -> bool:
        """410 Gone on a later page: the snapshot behind the token was compacted away; a
        new list (a new snapshot) is consistent again, up to ``LIST_RESTARTS`` times."""
        if error_status(error) != 410 or self._token is None or self._restarts >= LIST_RESTARTS:
            return False
        self._restarts += 1
        self._items, self._token = [], None
        return True

    @property
    def result(self) -> tuple[list[dict[str, Any]], str | None]:
        return self._items, self._version

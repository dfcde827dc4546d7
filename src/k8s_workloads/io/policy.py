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
``PatchLabels`` (conditional)       409     failed: someone else changed or took it
anything else                       any     failed: the core decides (retry, give up)
==================================  ======  =========================================

Which failures are transient (a 429, a 5xx, a connection error) is the core's rule
(:func:`~k8s_workloads.creation_errors.classify_create_error`); this layer never retries
on its own, so the core's creation pause and retry budgets always apply.

Lists are read in pages of :data:`PAGE_SIZE`; a 410 on a page after the first (the
continue token expired) starts the list again, at most :data:`LIST_RESTARTS` times.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from k8s_workloads.actions import DeletePod, PatchLabels
from k8s_workloads.executor import DeleteSecret, ListPods, ReadStates

if TYPE_CHECKING:
    from k8s_workloads.executor import ExecutorCore, Request

__all__ = [
    "LIST_RESTARTS",
    "PAGE_SIZE",
    "error_status",
    "failure_is_done",
    "report_answer",
    "report_failure",
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
        return request.resource_version is None
    return isinstance(request, (DeletePod, DeleteSecret))


def report_answer(core: ExecutorCore, request: Request, answer: object) -> None:
    """Report ``request``'s success to ``core`` with ``perform``'s answer."""
    if isinstance(request, ReadStates):
        core.states_read(request, answer)  # type: ignore[arg-type]
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

"""The executor core's private records (a result waiting, a queued job, a work of
actions, a request in flight) and how it reads a failed call's error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import attrs

from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.creation_errors import classify_create_error, is_transport_error
from k8s_workloads.decisions.rules import UNKNOWN, KnownState

if TYPE_CHECKING:
    import datetime
    from collections import deque

    from k8s_workloads.decisions.actions import Action, Decision
    from k8s_workloads.decisions.attempts import Attempt, Attempts
    from k8s_workloads.executor.requests import CreatePod, DeleteSecret, FailedRelabel, Request
    from k8s_workloads.keys import WorkloadKey
    from k8s_workloads.states import KubernetesJob, WorkloadResult


@attrs.define
class _Pending:
    """A result waiting to be handled, with its handling history."""

    result: WorkloadResult
    failures: int = 0
    known: KnownState = UNKNOWN
    """The state read for it before its handling failed (handling_failed reads it)."""
    error: BaseException | None = None
    """Set when its handling failed in this pass: handling_failed decides next."""
    cached: tuple[int, Decision] | None = None
    in_watch: bool = True
    """False for a DELETED event: the pod is leaving the watch (deleted, or labelled out)."""


@attrs.define
class _Queued:
    job: KubernetesJob[Any]
    not_before: datetime.datetime | None = None
    resend: CreatePod | None = None
    """The pod sent before, sent again (same name) instead of a new build."""
    since: datetime.datetime | None = None
    """When its creation was first handed out (a callback's wait is bounded from then)."""
    resends: int = 0
    """Times its pod was sent again after a read back found none: each waits longer."""


@attrs.define(eq=False)
class _ReadBack:
    """A creation that failed with no clear answer, waiting for its pod to be read back.

    Its workload stays busy until the read back decides (:func:`after_read_back`)."""

    entry: _Queued
    request: CreatePod
    parts: _ErrorParts
    """The creation's error."""
    failures: int = 0
    """Read backs that failed: each waits longer before the next."""
    not_before: datetime.datetime | None = None
    revoked: bool = False
    seen: bool = False
    """The watch showed its pod meanwhile: it was created, whatever the read finds."""


_DECISION: Final = "decision"  # a pod-call failure fails the result's handling
_FINAL: Final = "final"  # best effort: failures are ignored
_CLEANED_KEPT: Final = 10_000
_ADOPTION: Final = "adoption"  # a relabel tried again, or named when refused


@attrs.define(eq=False)
class _Work:
    """Actions being performed, in order, and what a failure among them means.

    A work is one workload's: while it is open, no other result of that workload is
    decided and no pod of it is created (``key`` None: a clean-up of a pod only). Works
    of different workloads run side by side; a work's own actions never overlap.
    """

    kind: str
    actions: deque[Action | DeleteSecret]
    pending: _Pending | None = None
    attempts: Attempts | None = None
    """The bookkeeping to keep once every action is done: ``key``'s record in it."""
    completed: WorkloadResult | None = None
    """An adopted Succeeded pod's result, fed to the decisions once it is relabelled."""
    key: WorkloadKey | None = None
    base: Attempt | None = None
    """``key``'s record when the work was decided: kept only if no one changed it since."""
    uncertain: bool = False
    """Its relabel (an adoption's) failed with no clear answer: it may have been applied,
    so a refusal of the next try is checked against this scheduler as the owner."""
    unstored: bool = False
    """Its report (an EmitEvent) is out and a clean-up follows, which waits until the
    report is stored (``confirm_reports``: :meth:`ExecutorCore.reports_stored`)."""
    owner: WorkloadKey | None = None
    """The workload its pod calls are about when ``key`` is None (a clean-up tried
    again, which holds no workload busy): named in :attr:`ExecutorCore.on_pod`."""


@attrs.define
class _AdoptionState:
    """What the core keeps of its adoptions between calls."""

    relabels: list[_Work] = attrs.Factory(list)
    """Adoptions whose relabel failed for a transient reason: tried on the next pass."""
    failed: list[FailedRelabel] = attrs.Factory(list)
    """Relabels refused since :meth:`ExecutorCore.take_failed_relabels` was last called."""
    found: frozenset[WorkloadKey] = frozenset()
    """Keys with a pod in the latest adoption's listing: never run again."""


@attrs.define
class _Relist:
    """The core's re-list: needed after a watch's ERROR, one list a watched namespace,
    handed out one after another; the watches resume from the lists' versions."""

    needed: bool = False
    """An ERROR asked for it, and it has not ended."""
    asked: bool = False
    """Its first list was handed out in this pass (a failed one is asked again next pass)."""
    next: int = 0
    """The watched namespace listed next (its index)."""
    pods: list[Mapping[str, Any]] = attrs.Factory(list)
    """The pods the lists so far answered."""
    versions: dict[str | None, str] = attrs.Factory(dict)
    """Each listed namespace's list version."""
    ended: int = 0
    """Re-lists ended (:attr:`ExecutorCore.relists`)."""

    def restart(self) -> None:
        """Drop the lists so far: the re-list starts again from its first."""
        self.next = 0
        self.pods = []
        self.versions = {}


@attrs.define(eq=False)
class _Flight:
    """A request handed out and not yet reported complete."""

    request: Request
    implicit: bool
    """Handed out by next_request: it has succeeded when the next one is asked for."""
    work: _Work | None = None
    entry: _Queued | None = None
    """A CreatePod's queued job."""
    revoked: bool = False
    """Its workload was revoked while the pod was being created: delete the pod."""
    readback: _ReadBack | None = None
    """A ReadPod's creation being read back."""


def _args_workload(args: list[str]) -> str | None:
    # The Airflow 3 workload argv: ... --json-string <workload JSON>.
    for index, arg in enumerate(args[:-1]):
        if arg == "--json-string":
            return args[index + 1]
    return None


class _ErrorParts(NamedTuple):
    """A failed API call's HTTP ``status`` (None: a connection error), ``body``,
    ``headers`` and ``reason``: what the creation tables read of it."""

    status: int | None
    body: object = None
    headers: Mapping[str, str] | None = None
    reason: str | None = None


def _error_parts(error: BaseException) -> _ErrorParts | None:
    """An API error's status, body, headers and reason; None when it is no API error.

    An error with an HTTP ``status`` (``ApiException`` carries the four as attributes) is
    the API's answer. One without is a connection error (status None: transient by the
    provider's rules) when :func:`is_transport_error` says so: an ``OSError``, or any
    client's connection errors known by their module (urllib3's, aiohttp's
    ``ClientError`` family such as ``ServerDisconnectedError``, ``http.client``'s,
    asyncio's timeout), never importing the client. Anything else (None) is a bug or a
    request the client refused to send.
    """
    status = getattr(error, "status", None)
    if isinstance(status, int) and not isinstance(status, bool):
        headers = getattr(error, "headers", None)
        reason = getattr(error, "reason", None)
        return _ErrorParts(
            status,
            getattr(error, "body", None),
            headers if isinstance(headers, Mapping) else None,
            reason if isinstance(reason, str) else None,
        )
    if is_transport_error(error):
        return _ErrorParts(None, reason=str(error) or type(error).__name__)
    return None


def _transient(error: BaseException) -> bool:
    """Whether a pod call may succeed when tried again: the pod-creation rules'
    transient errors (429, 5xx, a conflict, a connection error; classify_create_error)."""
    parts = _error_parts(error)
    if parts is None:
        return False
    verdict = classify_create_error(
        parts.status, parts.body, parts.headers, reason=parts.reason, config=_ALWAYS_RETRY
    )
    return verdict.retry


_ALWAYS_RETRY = DecisionConfig(task_publish_max_retries=-1)

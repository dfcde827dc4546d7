"""The executor core's state and the bookkeeping of requests in flight and open works,
which every part of the core uses (:mod:`~k8s_workloads.executor.core` builds on it)."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from k8s_workloads.decisions.actions import Action, DeletePod, PatchLabels
from k8s_workloads.decisions.attempts import Attempts
from k8s_workloads.executor._records import (
    _ADOPTION,
    _FINAL,
    _AdoptionState,
    _Flight,
    _Pending,
    _Queued,
    _ReadBack,
    _Relist,
    _Work,
)
from k8s_workloads.executor.requests import (
    CreatePod,
    DeleteSecret,
    Handled,
    ListPods,
    PodChanged,
    ProtocolError,
    ReadStates,
    Request,
)
from k8s_workloads.pods.labels import AIRFLOW_WORKER_LABEL

if TYPE_CHECKING:
    import datetime
    from collections.abc import Callable

    from k8s_workloads.decisions.rules import KnownState
    from k8s_workloads.executor.config import ExecutorConfig
    from k8s_workloads.keys import WorkloadKey
    from k8s_workloads.pods.build import PodTemplate


class _CoreBase:
    """The loop's state, and requests and works opened and closed."""

    on_pod: Callable[[PodChanged], None] | None = None
    """Called when a pod is created, adopted or deleted, as the call's success is reported
    (for logs: one line a pod); set it on the core."""

    def __init__(self, config: ExecutorConfig) -> None:
        self.config = config
        self._prepared_template: PodTemplate | None = None
        self._resolver = config.resolver_config()
        self._running: dict[WorkloadKey, None] = {}  # insertion-ordered: same order every run
        self._attempts = Attempts()
        self._queue: deque[_Queued] = deque()
        self._delayed: list[_Queued] = []  # the queued jobs with a not-before time
        self._create_retries: dict[WorkloadKey, int] = {}
        self._paused_until: datetime.datetime | None = None
        self._unreachable = 0
        """Creations in a row that never reached the API server: the pause doubles with
        each, and while it is above 0 one creation at a time probes."""
        self._resends: dict[WorkloadKey, CreatePod] = {}
        """The pod a creation retried by a decision sends again (RequeueJob takes it)."""
        self._readbacks: deque[_ReadBack] = deque()
        """Creations with no clear answer, waiting for their pod to be read back."""
        self._unresolved: dict[tuple[str, str], _ReadBack] = {}
        """Every creation being read back (waiting or in flight), by its pod."""
        self._results: deque[_Pending] = deque()
        self._backlog: list[_Pending] = []
        self._changes: list[tuple[WorkloadKey, bool]] = []  # (key, now running) since taken
        self._cleanups: list[tuple[DeletePod | PatchLabels, WorkloadKey | None]] = []
        """Clean-ups that failed for a transient reason, tried again on the next pass,
        each with the workload its pod was (for :attr:`on_pod`)."""
        self._cleaned: dict[tuple[str, str], None] = {}
        """Pods this core asked to delete or label done, until they leave the watch (at
        most _CLEANED_KEPT, oldest first out): a second terminal event for one of them is
        a duplicate, for any other pod of a settled workload a leftover to clean up."""
        self._states: dict[WorkloadKey, KnownState] = {}
        self._ready: deque[_Work] = deque()  # open works whose next action may start
        self._parked: deque[tuple[_Work, DeletePod | PatchLabels | DeleteSecret]] = deque()
        """Works whose next request waits for a clean-up slot (max_concurrent_cleanups)."""
        self._open_works = 0  # ready, parked, in flight or waiting for a report's store
        self._unstored: dict[WorkloadKey, _Work] = {}
        """Works whose clean-up waits until their report is stored (confirm_reports)."""
        self._adoption = _AdoptionState()
        self._busy: dict[WorkloadKey, int] = {}  # open works and creations in flight, by key
        self._in_flight: dict[int, _Flight] = {}  # by id() of the request: each an identity
        self._creating = 0  # CreatePods in flight
        self._cleaning = 0  # DeletePods, PatchLabels and DeleteSecrets in flight
        self._reading: ReadStates | None = None
        self._listing: ListPods | None = None
        self._relist = _Relist()
        self._resource_versions: dict[str | None, str] = {}
        """Where each watch (by its namespace; None: every namespace) resumes from."""
        self._pass_over = False
        self._created_this_pass = 0
        self._creation_stopped = False
        self._create_failed: set[WorkloadKey] = set()
        self._now: datetime.datetime | None = None
        self.on_decision: Callable[[Handled], None] | None = None
        """Called with every decision the core takes (for logs and timelines)."""
        self._generation = 0  # bumped whenever running or the attempt records change

    # --- requests in flight -----------------------------------------------------------

    def _flight(self, request: Request, kind: type | None = None) -> _Flight:
        """The flight of ``request``, checked before anything changes."""
        flight = self._in_flight.get(id(request))
        if flight is None or flight.request is not request:
            raise ProtocolError(f"{request!r} is not a request in flight")
        if kind is not None and not isinstance(request, kind):
            raise ProtocolError(f"{request!r} is not a {kind.__name__}")
        return flight

    def _land(self, flight: _Flight) -> None:
        """``flight`` is over (its outcome is applied by the caller)."""
        request = flight.request
        del self._in_flight[id(request)]
        if isinstance(request, CreatePod):
            self._creating -= 1
            self._unbusy(request.key)
        elif isinstance(request, (DeletePod, PatchLabels, DeleteSecret)):
            self._cleaning -= 1
        elif isinstance(request, ReadStates):
            self._reading = None
        elif isinstance(request, ListPods):
            self._listing = None

    def _settled(self, flight: _Flight) -> None:
        """``flight`` succeeded: its work goes on, or its pod's creation counts."""
        request = flight.request
        if isinstance(request, CreatePod):
            self._create_retries.pop(request.key, None)
            self._unreachable = 0
            if flight.revoked:
                gone: deque[Action | DeleteSecret] = deque(
                    [DeletePod(request.pod_name, request.namespace)]
                )
                self._open(_Work(_FINAL, gone), request.key)
        elif flight.work is not None:
            work = flight.work
            if work.unstored and work.key is not None:
                self._unstored[work.key] = work  # reports_stored() lets it go on
            else:
                self._ready.appendleft(work)
        if self.on_pod is not None:  # last: a hook that raises leaves the books whole
            self._pod_changed(flight, self.on_pod)

    @staticmethod
    def _pod_changed(flight: _Flight, report: Callable[[PodChanged], None]) -> None:
        """Tell ``report`` of the pod ``flight`` created, adopted or deleted, if any."""
        request, work = flight.request, flight.work
        owner = None if work is None else work.key or work.owner
        if isinstance(request, CreatePod):
            report(PodChanged("created", request.namespace, request.pod_name, request.key))
        elif isinstance(request, DeletePod):
            report(PodChanged("deleted", request.namespace, request.pod_name, owner))
        elif (
            isinstance(request, PatchLabels)
            and work is not None
            and work.kind == _ADOPTION
            and AIRFLOW_WORKER_LABEL in request.labels
        ):
            report(PodChanged("adopted", request.namespace, request.pod_name, owner))

    def _launch(self, request: Request, *, implicit: bool, **links: Any) -> Request:  # noqa: ANN401
        self._in_flight[id(request)] = _Flight(request, implicit, **links)
        if isinstance(request, CreatePod):
            self._creating += 1
            self._busy[request.key] = self._busy.get(request.key, 0) + 1
        elif isinstance(request, (DeletePod, PatchLabels, DeleteSecret)):
            self._cleaning += 1
        elif isinstance(request, ReadStates):
            self._reading = request
        elif isinstance(request, ListPods):
            self._listing = request
        return request

    def _open(self, work: _Work, key: WorkloadKey | None) -> None:
        """A new work, run after the works before it (or beside them, concurrently)."""
        work.key = key
        if key is not None:
            work.base = self._attempts.get(key)
            self._busy[key] = self._busy.get(key, 0) + 1
        self._open_works += 1
        self._ready.append(work)

    def _close(self, work: _Work) -> None:
        self._open_works -= 1
        if work.key is not None:
            self._unbusy(work.key)

    def _unbusy(self, key: WorkloadKey) -> None:
        count = self._busy[key] - 1
        if count:
            self._busy[key] = count
        else:
            del self._busy[key]

    def _drop_sent(self, request: CreatePod) -> None:
        """A creation sent and not made is dropped: its Secret (the workload's token), made
        first, goes too."""
        if request.secret is not None:
            secret = DeleteSecret(request.secret["metadata"]["name"], request.namespace)
            self._open(_Work(_FINAL, deque([secret])), request.key)

    def _cleanup_slots(self) -> int:
        return self.config.max_concurrent_cleanups

"""ExecutorCore: the whole executor loop as one sans-I/O state machine.

Everything that affects the loop lives here, once: the running set, the attempt records,
the pod-creation queue with its not-before times and the pause after a 429, the per-job
create-retry counts, the backlog of results whose handling failed, each watch's resource
version, the re-list after a 410 and adoption after a restart. The core never calls the
Kubernetes API, the database, the clock or a random source. The executor feeds it what
happened and performs what it asks for — one request at a time, or many in flight — in
the spirit of h11's ``Connection``::

    core = ExecutorCore(ExecutorConfig(scheduler_id="42", namespace="airflow",
                                       airflow_version="3.3.2", kube_image="airflow:3.3.2"))
    core.submit(job)                          # queue_workload / execute_async
    core.feed_event(line, now=now)            # every watch event, as it arrives
    core.run_pass(now, perform, failures=(ApiException, OSError))  # perform: the only I/O

The protocol, in full:

* One at a time: :meth:`ExecutorCore.next_request` hands out the next :data:`Request`; a
  request not reported failed by the time the next one is asked for has succeeded.
* Many in flight: :meth:`ExecutorCore.start_request` hands out requests until it answers
  :class:`Waiting` (report a completion, then ask again) or :class:`NothingToDo`; every
  request is an identity, and its completion is reported for it, in any order, with
  :meth:`ExecutorCore.request_done` or :meth:`ExecutorCore.request_failed`. What must
  stay ordered is not handed out early: one workload's requests follow one another (a
  Secret before its pod, a pod's clean-up after its creation and after its report), a
  state read is answered before the decisions it guards, a re-list runs
  alone. ``max_concurrent_creations`` and ``max_concurrent_cleanups`` bound what is in
  flight; a 429 or ``Retry-After`` pauses the creations not handed out yet.
* :class:`ReadStates`, :class:`ListPods` and :class:`ReadPod` are answered with
  :meth:`ExecutorCore.states_read`, :meth:`ExecutorCore.pods_listed` and
  :meth:`ExecutorCore.pod_read` (one at a time: before the next request).
* A failure is reported with :meth:`ExecutorCore.request_failed` (for pod creation it reads
  ``status``, ``body``, ``headers`` and ``reason`` off the error, as ``ApiException``
  carries them, or take them from :meth:`ExecutorCore.create_failed`). A creation is
  never guessed at: one that never reached the API server leaves its job queued and
  pauses creation; one with no clear answer (a reset, a timeout, a 5xx) is resolved by a
  :class:`ReadPod` of the pod it sent, whose name every resend keeps, so each attempt
  has one pod (:mod:`~k8s_workloads.decisions.creation_errors`).
* :class:`NothingToDo` ends a *pass* (one ``sync()``, or several when a bounded ``sync()``
  leaves requests in flight): results whose handling failed are retried on the next pass,
  never in the same one, and pod creation resumes then — one at a time. Many in flight,
  a failed creation is retried at its own time, within the pass (:class:`Waiting`'s
  ``until`` says when: ask again by then, whatever is still in flight).
* Driving it wrong — a completion for a request never handed out or reported twice, an
  answer of the wrong kind — is a :class:`ProtocolError`, raised before anything changes.

The pure functions (:func:`~k8s_workloads.watch.events.resolve_event`,
:func:`~k8s_workloads.decisions.decide`, :func:`~k8s_workloads.decisions.handling_failed`,
:func:`~k8s_workloads.decisions.adoption.plan_adoption` …) stay the layer underneath, unchanged in
meaning; the core only sequences them.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from k8s_workloads.decisions.actions import DeletePod, EmitEvent, PatchLabels
from k8s_workloads.decisions.adoption import plan_relist
from k8s_workloads.decisions.attempts import Attempt, Attempts
from k8s_workloads.decisions.creation_errors import delivery_of
from k8s_workloads.executor._adopting import _Adopting
from k8s_workloads.executor._creation import _Creation
from k8s_workloads.executor._handling import _Handling
from k8s_workloads.executor._records import _FINAL, _error_parts, _Pending, _Queued, _Work
from k8s_workloads.executor.requests import (
    CreatePod,
    DeleteSecret,
    InvalidStateAnswer,
    ListPods,
    NothingToDo,
    ProtocolError,
    ReadPod,
    ReadStates,
    Request,
    Waiting,
    WorkloadAlreadyRunning,
)
from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.pods.labels import watcher_selector
from k8s_workloads.states import (
    CallbackState,
    KubernetesJob,
    TaskInstanceState,
    state_class_for_key,
)
from k8s_workloads.watch.events import resolve_event, resolve_event_json
from k8s_workloads.watch.resolution import Outcome, Resolution

if TYPE_CHECKING:
    import datetime
    from collections.abc import Callable, Iterable, Mapping

    from k8s_workloads.decisions.rules import KnownState


__all__ = ["ExecutorCore"]

_ANSWERS: dict[type, str] = {
    ReadStates: "states_read",
    ListPods: "pods_listed",
    ReadPod: "pod_read",
}
"""The requests answered with a method of their own, and its name."""


class ExecutorCore(_Handling, _Creation, _Adopting):
    """The executor's loop state and rules; see the module documentation for the protocol."""

    # --- what the core holds (read-only views) ----------------------------------------

    @property
    def running(self) -> tuple[WorkloadKey, ...]:
        """The workloads this executor runs, in the order it took them on."""
        return tuple(self._running)

    def is_running(self, key: WorkloadKey) -> bool:
        return key in self._running

    def take_running_changes(self) -> list[tuple[WorkloadKey, bool]]:
        """Keys the core stopped (False) or started (True, adoption) running since the last
        call, in order, without ``submit``'s: an executor keeping its own running set (as
        Airflow's ``BaseExecutor.running``) applies these, at a cost per change, not per
        workload in flight."""
        changes, self._changes = self._changes, []
        return changes

    @property
    def attempts(self) -> Attempts:
        return self._attempts

    @property
    def queued(self) -> tuple[KubernetesJob[Any], ...]:
        """Jobs waiting for their pod to be created, in creation order."""
        return tuple(entry.job for entry in self._queue)

    @property
    def backlog(self) -> int:
        """Results whose handling failed, waiting for the next pass."""
        return len(self._backlog)

    @property
    def waiting_results(self) -> int:
        return len(self._results)

    @property
    def has_work(self) -> bool:
        """Whether a pass would do anything: results, retries, clean-ups, a re-list or
        jobs are waiting (jobs may still wait for their not-before time)."""
        if self._unstored:  # what waits only for a report's store is no work
            waiting = self._unstored.keys()
            if not any(pending.result.key not in waiting for pending in self._results) and not any(
                entry.job.key not in waiting for entry in self._queue
            ):
                return bool(
                    self._backlog
                    or self._cleanups
                    or self._open_works > len(self._unstored)
                    or self._in_flight
                    or self._readbacks
                    or self._relist.needed
                )
        return bool(
            self._results
            or self._backlog
            or self._cleanups
            or self._open_works > len(self._unstored)
            or self._in_flight
            or self._queue
            or self._readbacks
            or self._relist.needed
        )

    @property
    def in_flight(self) -> tuple[Request, ...]:
        """The requests handed out and not yet reported complete, oldest first."""
        return tuple(flight.request for flight in self._in_flight.values())

    @property
    def watched_namespaces(self) -> tuple[str | None, ...]:
        """The namespace of each watch to run, one stream each (None: one watch of every
        namespace): ``ExecutorConfig.watched_namespaces``."""
        return self.config.watched_namespaces

    def resource_version(self, namespace: str | None = None) -> str | None:
        """Where the watch of ``namespace`` resumes from (None: from now, with the pods
        there are as ADDED events). The core owns these: each watch line it is fed moves
        its watch's, a re-list sets each to its list's, an ERROR clears them all. With one
        watch, ``namespace`` may be left out; a namespace not watched is a ``ValueError``."""
        return self._resource_versions.get(self._watch(namespace))

    @property
    def relists(self) -> int:
        """How many re-lists have ended: a watch stream started before the last one is
        stale (its lines are older than the list), so drop what it still delivers and
        start it again from :meth:`resource_version`."""
        return self._relist.ended

    def _watch(self, namespace: str | None) -> str | None:
        """The watch ``namespace`` names (None: the core's one watch)."""
        watched = self.config.watched_namespaces
        if namespace in watched:
            return namespace
        if namespace is None and len(watched) == 1:
            return watched[0]
        names = ", ".join("every namespace" if name is None else name for name in watched)
        if namespace is None:
            raise ValueError(f"name the watch: the core watches {names}")
        raise ValueError(f"namespace {namespace!r} is not watched (watched: {names})")

    @property
    def is_relisting(self) -> bool:
        """A re-list is needed or under way: do not restart the watch until it is done."""
        return self._relist.needed

    # --- inputs -----------------------------------------------------------------------

    def submit(self, job: KubernetesJob[Any]) -> None:
        """A workload to launch: it runs from now on and its pod joins the creation queue.

        A job no pod could be built from is refused here, before anything changes, naming
        the field: :class:`~k8s_workloads.pods.errors.InvalidJob` (a task or callback job
        with no ``airflow_version`` configured, a ``pod_override`` on a callback job, a
        ``pod_template_file`` with no ``load_template``, args or an image that are not
        text) or :class:`~k8s_workloads.pods.errors.InvalidPod` (a ``pod_override`` that
        breaks the Pod schema or a naming rule); both are ``ValueError``. A job whose pod
        fails only once built (its template file's content, its identity, the mutation
        hook) fails when the core builds it, reported as the workload's failure.
        """
        key = job.key
        if not isinstance(key, (TaskInstanceKey, CallbackKey, GenericKey)):
            raise TypeError(f"job.key must be a workload key, got {type(key).__name__}")
        if key in self._running:
            raise WorkloadAlreadyRunning(f"{key!r} is running already")
        self._check_job(job)
        self._running[key] = None
        self._attempts = self._attempts.with_record(key, Attempt(job))
        self._generation += 1
        self._queue.append(_Queued(job))

    def feed_event(
        self,
        line: str | bytes,
        *,
        now: datetime.datetime | None = None,
        namespace: str | None = None,
    ) -> Resolution:
        """A line of the pod watch of ``namespace`` (None: the core's one watch), as the
        API server sent it: JSON text, ``str`` or ``bytes``.

        Every watch reaches the decisions this one way: the line is decoded only as far
        as the rules read it (:func:`~k8s_workloads.watch.events.resolve_event_json`),
        and its resource version becomes its watch's (:meth:`resource_version`). Returns
        how it was read (for logs); never raises for what the line holds (a line that is
        not JSON is ``MALFORMED``). A 410 or any other ERROR event makes the core ask
        for a re-list (:class:`ListPods`, one a watched namespace). A line that is not
        text, or a namespace not watched, is a ``TypeError`` or ``ValueError``.
        """
        watch = self._watch(namespace)
        if isinstance(line, (bytes, bytearray, memoryview)):
            text = bytes(line).decode("utf-8", "replace")
        elif isinstance(line, str):
            text = line
        else:
            raise TypeError(
                f"feed_event takes a watch line (str or bytes), got {type(line).__name__}: "
                "pass the line as the API server sent it"
            )
        resolution = resolve_event_json(text, config=self._resolver, now=now)
        self._take(resolution, watch)
        return resolution

    def _take(self, resolution: Resolution, watch: str | None) -> None:
        outcome = resolution.outcome
        if outcome in {Outcome.RESYNC, Outcome.WATCH_ERROR}:
            # The provider restarts its watch from "0" after any ERROR event; here the
            # re-list also finds the pods that vanished in the gap.
            self._resource_versions.clear()
            self._relist.needed = True
            return
        if resolution.resource_version:
            self._resource_versions[watch] = resolution.resource_version
        if self._unresolved:  # a creation being read back: the watch saw its pod
            where = (resolution.namespace or "", resolution.pod_name or "")
            record = self._unresolved.get(where)
            if (
                record is not None
                and resolution.key == record.request.key
                and where not in self._cleaned  # not an earlier attempt's, of a fixed name
                and not _earlier_launch(self._attempts.get(record.request.key), resolution)
            ):
                record.seen = True
        result = resolution.to_result()
        if result is not None:
            self._results.append(_Pending(result, in_watch=resolution.event_type != "DELETED"))
        elif resolution.event_type == "DELETED":
            # With a result, the pod is forgotten when that result is handled (see
            # _handle_next): results of it fed before the DELETED event (the MODIFIED one
            # with its deletionTimestamp) are still waiting, and are duplicates.
            self._cleaned.pop((resolution.namespace or "", resolution.pod_name or ""), None)

    def states_read(
        self,
        request: ReadStates,
        states: Mapping[WorkloadKey, TaskInstanceState | CallbackState | None],
    ) -> None:
        """The answer to ``request``: each key's state (missing or None: no row, no state)."""
        flight = self._flight(request, ReadStates)
        answers: dict[WorkloadKey, KnownState] = {}
        for key in request.keys:
            state = states.get(key)
            if state is not None and not isinstance(state, state_class_for_key(key)):
                kind = state_class_for_key(key).__name__
                raise InvalidStateAnswer(
                    f"states[{key!r}]: expected a {kind} or None, got {state!r}"
                )
            answers[key] = state
        self._land(flight)
        self._states.update(answers)

    def pods_listed(
        self,
        request: ListPods,
        pods: Iterable[Mapping[str, Any]],
        resource_version: str | None = None,
    ) -> None:
        """The answer to a re-list's list of one watched namespace: its pods (manifests)
        and the list's version, which that namespace's watch resumes from.

        Once every watched namespace is listed, each listed pod is read as an ``ADDED``
        event (its final events may have been lost), and running workloads whose pods
        are gone from every list become ``VANISHED`` results.
        """
        flight = self._flight(request, ListPods)
        relist = self._relist
        relist.pods.extend(pods)
        if resource_version:
            relist.versions[request.namespace] = resource_version
        self._land(flight)
        relist.next += 1
        if relist.next < len(self.config.watched_namespaces):
            return  # the next namespace's list is handed out next
        listed, versions = relist.pods, relist.versions
        relist.restart()
        # Waiting for their pod: queued, or a creation being read back (not vanished).
        waiting = [entry.job.key for entry in self._queue]
        waiting.extend(record.request.key for record in self._readbacks)
        vanished = plan_relist(
            tuple(self._running),
            listed,
            waiting=waiting,
            attempts=self._attempts,
            airflow_version=self._resolver.airflow_version,
        )
        for pod in listed:
            self._take(
                resolve_event(
                    {"type": "ADDED", "object": pod}, config=self._resolver, now=self._now
                ),
                None,
            )
        for result in vanished:
            self._results.append(_Pending(result))
        self._resource_versions = versions
        relist.ended += 1
        relist.needed = False

    @property
    def unstored_reports(self) -> tuple[WorkloadKey, ...]:
        """Workloads reported whose pod's clean-up waits until the report is stored
        (``confirm_reports``): name them to :meth:`reports_stored` once it is."""
        return tuple(self._unstored)

    def reports_stored(self, keys: Iterable[WorkloadKey]) -> None:
        """The reports of ``keys`` are stored for good: their pods' clean-ups go on (with
        ``confirm_reports``; other keys, and every key without it, are ignored)."""
        for key in keys:
            work = self._unstored.pop(key, None)
            if work is not None:
                work.unstored = False
                self._ready.append(work)

    def request_done(self, request: Request) -> None:
        """``request`` succeeded (driven concurrently: see :meth:`start_request`).

        A :class:`ReadStates` or :class:`ListPods` is answered with :meth:`states_read` or
        :meth:`pods_listed` instead; a request never handed out, or reported already, is a
        :class:`ProtocolError`.
        """
        flight = self._flight(request)
        if isinstance(request, (ReadStates, ListPods, ReadPod)):
            raise ProtocolError(f"answer {request!r} with {_ANSWERS[type(request)]}()")
        self._land(flight)
        self._settled(flight)

    def request_failed(self, request: Request, error: BaseException) -> None:
        """``request`` failed with ``error``: the core decides what that means."""
        flight = self._flight(request)
        if isinstance(request, EmitEvent):
            raise ProtocolError(
                "an EmitEvent cannot fail: write it to the event buffer (the scheduler "
                "reads it); a lost report leaves the workload unreported"
            )
        self._land(flight)
        if isinstance(request, CreatePod):
            parts = _error_parts(error)
            if parts is None:  # neither an answer nor a connection's failure: a bug
                self._create_error(flight, None, None, None, None, fatal=error)
            else:
                self._create_failure(flight, delivery_of(error), parts)
            return
        if isinstance(request, ReadPod):
            assert flight.readback is not None  # noqa: S101 - _read_back_next's
            self._read_back_failed(flight.readback)
            return
        if isinstance(request, ReadStates):
            for pending in self._results:
                if pending.result.key in request.keys and pending.error is None:
                    pending.error = error
            return
        if isinstance(request, ListPods):
            # Still needed: the whole re-list is asked again on the next pass (the
            # lists it had are older than those it will have).
            self._relist.restart()
            return
        work = flight.work
        if work is None:
            return
        if isinstance(request, DeleteSecret):
            self._ready.appendleft(work)  # best effort: the work goes on
        elif isinstance(request, (DeletePod, PatchLabels)):
            self._pod_call_failed(work, request, error)

    # --- the loop ---------------------------------------------------------------------

    def run_pass(
        self,
        now: datetime.datetime,
        perform: Callable[[Request], object],
        *,
        failures: tuple[type[BaseException], ...] = (OSError,),
    ) -> NothingToDo:
        """One pass (one ``sync()``): every request, given to ``perform`` in order.

        An exception of a ``failures`` type raised by ``perform`` is the request's failure,
        handed to :meth:`request_failed`; any other propagates (a bug is not a failed
        call). Pass the errors your calls raise: the kubernetes client's
        ``ApiException``, ``urllib3``'s errors, your database driver's.
        """
        while not isinstance(request := self.next_request(now), NothingToDo):
            try:
                perform(request)
            except failures as error:  # noqa: PERF203 - one try per request, by design
                self.request_failed(request, error)
        return request

    def next_request(self, now: datetime.datetime) -> Request | NothingToDo:
        """The next thing to do, or :class:`NothingToDo` when the pass is over (one request
        at a time: the one handed out before has succeeded unless reported failed)."""
        for flight in list(self._in_flight.values()):
            request = flight.request
            if not flight.implicit:
                raise ProtocolError(
                    f"{request!r} was handed out by start_request(): report its completion "
                    "and keep driving with start_request()"
                )
            if isinstance(request, (ReadStates, ListPods, ReadPod)):
                raise ProtocolError(f"answer {request!r} with {_ANSWERS[type(request)]}() first")
            self._land(flight)
            self._settled(flight)
        following = self._next(now, implicit=True)
        assert not isinstance(following, Waiting)  # noqa: S101 - nothing is in flight
        return following

    def start_request(self, now: datetime.datetime) -> Request | Waiting | NothingToDo:
        """The next request to start while others are in flight (concurrent driving).

        Start every request this hands out, until it answers :class:`Waiting` (wait for a
        completion, report it, ask again) or :class:`NothingToDo` (nothing in flight; the
        pass is over). Report each request's completion, in any order, with
        :meth:`request_done` or :meth:`request_failed` (:meth:`states_read`,
        :meth:`pods_listed`, :meth:`create_failed`, :meth:`create_skipped` for theirs).
        What must stay ordered is not handed out early: a workload's requests one after
        another, a state read answered before the decisions it guards, a re-list alone.
        At most ``max_concurrent_creations`` creations and ``max_concurrent_cleanups``
        clean-ups are in flight at once.
        """
        return self._next(now, implicit=False)

    def _next(self, now: datetime.datetime, *, implicit: bool) -> Request | Waiting | NothingToDo:
        self._now = now
        if self._pass_over:
            self._begin_pass()
        answer = self._step(now, implicit=implicit)
        if isinstance(answer, NothingToDo):
            self._pass_over = True
        return answer

    def _begin_pass(self) -> None:
        self._pass_over = False
        self._states.clear()
        self._created_this_pass = 0
        self._creation_stopped = False
        self._create_failed.clear()
        self._relist.asked = False
        if self._backlog:
            self._results.extendleft(reversed(self._backlog))
            self._backlog = []
        for action, owner in self._cleanups:
            self._open(_Work(_FINAL, deque([action]), owner=owner), None)
        self._cleanups = []
        self._ready.extend(self._adoption.relabels)
        self._adoption.relabels = []

    def _step(self, now: datetime.datetime, *, implicit: bool) -> Request | Waiting | NothingToDo:
        while True:
            request = self._work_request(implicit=implicit)
            if request is not None:
                return request
            if self._listing is not None:
                return Waiting(len(self._in_flight))  # a re-list runs alone
            if self._relist.needed and (not self._relist.asked or self._relist.next):
                if self._in_flight:
                    return Waiting(len(self._in_flight))
                self._relist.asked = True  # once a pass; a re-list's next list goes on
                namespace = self.config.watched_namespaces[self._relist.next]
                listing = ListPods(namespace, watcher_selector(self.config.scheduler_id))
                return self._launch(listing, implicit=implicit)
            if self._results and self._reading is None:
                handled = self._handle_next()
                if isinstance(handled, ReadStates):
                    return self._launch(handled, implicit=implicit)
                if handled:
                    continue
            read_back = self._read_back_next(now, implicit=implicit)
            if read_back is not None:
                return read_back
            created = self._create_next(now, implicit=implicit)
            if created is not None:
                return created
            if self._ready or (self._parked and self._cleaning < self._cleanup_slots()):
                continue  # a job whose pod could not be built fails at once
            if self._in_flight:
                due = self._wake_up()
                return Waiting(len(self._in_flight), due if due is not None and due > now else None)
            return NothingToDo(self._wake_up())


def _earlier_launch(attempt: Attempt | None, resolution: Resolution) -> bool:
    """Whether the watch's pod is a launch of the workload whose failure was requeued
    (kept, under the name every launch shares): not the creation being read back."""
    uid = resolution.pod_uid
    return attempt is not None and uid is not None and uid in attempt.requeued_uids

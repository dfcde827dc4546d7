"""ExecutorCore: the whole executor loop as one sans-I/O state machine.

Everything that affects the loop lives here, once: the running set, the attempt records,
the pod-creation queue with its not-before times and the pause after a 429, the per-job
create-retry counts, the backlog of results whose handling failed, the watch's resource
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
  Secret before its pod, a pod's clean-up after its creation, its event after its
  clean-up), a state read is answered before the decisions it guards, a re-list runs
  alone. ``max_concurrent_creations`` and ``max_concurrent_cleanups`` bound what is in
  flight; a 429 or ``Retry-After`` pauses the creations not handed out yet.
* :class:`ReadStates` and :class:`ListPods` are answered with
  :meth:`ExecutorCore.states_read` and :meth:`ExecutorCore.pods_listed` (one at a time:
  before the next request).
* A failure is reported with :meth:`ExecutorCore.request_failed` (for pod creation it reads
  ``status``, ``body``, ``headers`` and ``reason`` off the error, as ``ApiException``
  carries them, or take them from :meth:`ExecutorCore.create_failed`).
* :class:`NothingToDo` ends a *pass* (one ``sync()``, or several when a bounded ``sync()``
  leaves requests in flight): results whose handling failed are retried on the next pass,
  never in the same one, and pod creation resumes then.
* Driving it wrong — a completion for a request never handed out or reported twice, an
  answer of the wrong kind — is a :class:`ProtocolError`, raised before anything changes.

The pure functions (:func:`~k8s_workloads.watch.events.resolve_event`,
:func:`~k8s_workloads.decisions.decide`, :func:`~k8s_workloads.decisions.handling_failed`,
:func:`~k8s_workloads.decisions.adoption.plan_adoption` …) stay the layer underneath, unchanged in
meaning; the core only sequences them.
"""

from __future__ import annotations

import datetime
import random
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeVar

import attrs

from k8s_workloads import _config as _checks
from k8s_workloads._display import shown
from k8s_workloads.compat import supports_callbacks
from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.actions import (
    Action,
    Decision,
    DeletePod,
    EmitEvent,
    FreeSlot,
    Ignore,
    PatchLabels,
    RequeueJob,
    TrackRunning,
)
from k8s_workloads.decisions.adoption import (
    AdoptionPlan,
    adoption_selectors,
    plan_adoption,
    plan_relist,
    plan_revocation,
)
from k8s_workloads.decisions.attempts import Attempt, Attempts
from k8s_workloads.decisions.creation_errors import classify_create_error, decide_create_error
from k8s_workloads.decisions.results import decide, handling_failed
from k8s_workloads.decisions.rules import UNKNOWN, KnownState, cleanup_actions
from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.labels import (
    AIRFLOW_WORKER_LABEL,
    POD_EXECUTOR_DONE_LABEL,
    PodSelector,
    watcher_selector,
)
from k8s_workloads.payload import (
    attach_secure_payload,
    json_path_command_args,
    secure_workload_payload,
    workload_secret_name,
)
from k8s_workloads.pods import (
    PodTemplate,
    construct_pod,
)
from k8s_workloads.redaction import token_masker
from k8s_workloads.states import (
    CallbackState,
    ExecutorPseudoState,
    KubernetesJob,
    TaskInstanceState,
    WorkloadResult,
    state_class_for_key,
)
from k8s_workloads.validation import is_dns1123_label
from k8s_workloads.watch.events import (
    Outcome,
    Resolution,
    ResolverConfig,
    resolve_event,
    resolve_event_json,
)

if TYPE_CHECKING:
    from k8s_workloads.compat import AirflowVersion, VersionLike
    from k8s_workloads.pods import MutationHook

__all__ = [
    "CreatePod",
    "DeleteSecret",
    "ExecutorConfig",
    "ExecutorCore",
    "Handled",
    "InvalidStateAnswer",
    "ListPods",
    "NothingToDo",
    "ProtocolError",
    "ReadStates",
    "Request",
    "Waiting",
    "WorkloadAlreadyRunning",
]

Manifest: TypeAlias = dict[str, Any]


# --- errors ---------------------------------------------------------------------------


class ProtocolError(RuntimeError):
    """The core was driven out of order (an answer missing, or for another request)."""


class InvalidStateAnswer(TypeError):
    """A state given to :meth:`ExecutorCore.states_read` is not the key's kind of state."""


class WorkloadAlreadyRunning(ValueError):
    """:meth:`ExecutorCore.submit` was given a workload the core already runs."""


# --- requests -------------------------------------------------------------------------


def _pod_repr(pod: Mapping[str, Any]) -> str:
    metadata = pod.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return f"<pod {name}>"


@attrs.frozen
class CreatePod:
    """Create ``secret`` (if any), then ``pod`` in ``namespace``: the bodies
    ``create_namespaced_secret`` and ``create_namespaced_pod`` accept.

    The bodies may hold the workload's token, so ``repr`` shows only their names.
    """

    key: WorkloadKey
    namespace: str
    pod: Manifest = attrs.field(repr=_pod_repr)
    secret: Manifest | None = attrs.field(
        default=None, repr=lambda s: "None" if s is None else "<secret>"
    )

    @property
    def pod_name(self) -> str:
        name: str = self.pod["metadata"]["name"]
        return name


@attrs.frozen
class DeleteSecret:
    """Delete the workload Secret of a pod created with a secure payload (404: fine)."""

    name: str
    namespace: str


@attrs.frozen
class ReadStates:
    """Read these workloads' states from Airflow (task instance states and
    ``Callback.state``), in one query; answer with :meth:`ExecutorCore.states_read`."""

    keys: tuple[WorkloadKey, ...]


@attrs.frozen
class ListPods:
    """List pods (``namespace`` None: every namespace) with this selector; answer with
    :meth:`ExecutorCore.pods_listed`, then watch from the list's resource version."""

    namespace: str | None
    selector: PodSelector


@attrs.frozen
class Handled:
    """What the core decided about one thing that happened (for logs and timelines)."""

    key: WorkloadKey
    cause: str
    """``result`` (a watch or re-list result), ``handling failed`` (handling_failed
    decided after a failed call), ``create error``, ``build error`` or ``stale`` (see
    :meth:`ExecutorCore.create_skipped`)."""
    decision: Decision
    result: WorkloadResult | None = None


@attrs.frozen
class NothingToDo:
    """The pass is over: nothing more to do until ``until`` (None: until something
    happens — an event, a job, the next pass's retries)."""

    until: datetime.datetime | None = None


@attrs.frozen
class Waiting:
    """Requests are in flight and nothing more may start before one of them completes:
    report a completion, then ask :meth:`ExecutorCore.start_request` again."""

    in_flight: int


Request: TypeAlias = (
    CreatePod | DeletePod | DeleteSecret | PatchLabels | EmitEvent | ReadStates | ListPods
)
"""What the executor performs: one API or database call, or one event to report."""


# --- configuration --------------------------------------------------------------------


def _text(value: str | int) -> str:
    return str(value)


def _version(value: VersionLike) -> AirflowVersion:
    return _checks.version("ExecutorConfig", "airflow_version", value)


def _namespace(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    given: object = value  # typed str, but a caller may pass anything
    if not isinstance(given, str) or not is_dns1123_label(given):
        raise _checks.InvalidConfig(
            type(instance).__name__,
            attribute.name,
            f"must be a namespace name (a DNS-1123 label), got {shown(value)}",
        )


@attrs.frozen(eq=False)
class ExecutorConfig:
    """What the core builds pods with and decides by.

    ``pod_template`` is the manifest every pod is merged over (the provider's
    ``pod_template_file``, loaded); a job naming its own ``pod_template_file`` gets
    ``load_template(path)`` (the caller reads files; the core does not), which raises
    ``ValueError`` or ``TypeError`` for a template it cannot give: the job then fails. ``rng`` draws
    pod-name suffixes (a seeded ``random.Random`` makes runs reproducible; None: the
    library's default source). ``creation_batch_size`` pods are created per pass (the
    provider's ``worker_pods_creation_batch_size``, default 1), at most
    ``max_concurrent_creations`` of them in flight at once. With ``secure_payload``
    the workload JSON goes into a Secret instead of the pod's args
    (:mod:`k8s_workloads.payload`). ``read_callback_states`` asks for ``Callback.state``
    before reporting a callback, so a terminal callback is never overwritten.
    """

    scheduler_id: str = attrs.field(converter=_text)
    namespace: str = attrs.field(validator=_namespace)
    airflow_version: AirflowVersion = attrs.field(converter=_version)
    kube_image: str | None = attrs.field(default=None, validator=_checks.optional_text)
    pod_template: Mapping[str, Any] | None = attrs.field(
        default=None, validator=_checks.optional_mapping
    )
    load_template: Callable[[str], Mapping[str, Any]] | None = attrs.field(
        default=None, validator=_checks.optional_callable
    )
    mutation_hook: MutationHook | None = attrs.field(
        default=None, validator=_checks.optional_callable
    )
    decisions: DecisionConfig = attrs.field(
        default=DecisionConfig(), validator=_checks.kind(DecisionConfig)
    )
    resolver: ResolverConfig | None = attrs.field(
        default=None, validator=_checks.kind(ResolverConfig, optional=True)
    )
    """None: the provider's watcher for ``airflow_version``."""
    secure_payload: bool = attrs.field(default=False, validator=_checks.boolean)
    read_callback_states: bool = attrs.field(default=True, validator=_checks.boolean)
    creation_batch_size: int = attrs.field(default=1, validator=_checks.positive)
    max_concurrent_creations: int = attrs.field(default=16, validator=_checks.positive)
    """Pod creations in flight at once when the core is driven concurrently
    (:meth:`ExecutorCore.start_request`); one at a time with :meth:`~ExecutorCore.next_request`."""
    max_concurrent_cleanups: int = attrs.field(default=16, validator=_checks.positive)
    """Pod deletions, label patches and Secret deletions in flight at once (likewise)."""
    watch_all_namespaces: bool = attrs.field(default=False, validator=_checks.boolean)
    rng: random.Random | None = attrs.field(
        default=None, validator=_checks.kind(random.Random, optional=True)
    )

    def resolver_config(self) -> ResolverConfig:
        return self.resolver or ResolverConfig(airflow_version=self.airflow_version)


# --- internal records -----------------------------------------------------------------


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


_DECISION: Final = "decision"  # a pod-call failure fails the result's handling
_FINAL: Final = "final"  # best effort: failures are ignored
_CLEANED_KEPT: Final = 10_000
_LEFTOVER_STATES: Final = frozenset(
    {
        TaskInstanceState.FAILED,
        TaskInstanceState.SUCCESS,
        ExecutorPseudoState.LOOKUP,
        CallbackState.FAILED,
        CallbackState.SUCCESS,
    }
)
_ADOPTION: Final = "adoption"  # a failed relabel drops the pod's adoption
_Key = TypeVar("_Key", TaskInstanceKey, CallbackKey)


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


def _args_workload(args: list[str]) -> str | None:
    # The Airflow 3 workload argv: ... --json-string <workload JSON>.
    for index, arg in enumerate(args[:-1]):
        if arg == "--json-string":
            return args[index + 1]
    return None


def _error_parts(
    error: BaseException,
) -> tuple[int | None, object, Mapping[str, str] | None, str | None] | None:
    """An API error's status, body, headers and reason; None when it is no API error.

    ``ApiException`` carries the four as attributes; an ``OSError`` or a urllib3 error
    (reset, DNS, timeout) is a connection error, transient by the provider's rules.
    """
    status = getattr(error, "status", None)
    if isinstance(status, int) and not isinstance(status, bool):
        headers = getattr(error, "headers", None)
        reason = getattr(error, "reason", None)
        return (
            status,
            getattr(error, "body", None),
            headers if isinstance(headers, Mapping) else None,
            reason if isinstance(reason, str) else None,
        )
    if isinstance(error, OSError) or type(error).__module__.startswith("urllib3"):
        return None, None, None, str(error) or type(error).__name__
    return None


def _transient(error: BaseException) -> bool:
    """Whether a pod call may succeed when tried again: the pod-creation rules'
    transient errors (429, 5xx, a conflict, a connection error; classify_create_error)."""
    parts = _error_parts(error)
    if parts is None:
        return False
    status, body, headers, reason = parts
    verdict = classify_create_error(status, body, headers, reason=reason, config=_ALWAYS_RETRY)
    return verdict.retry


_ALWAYS_RETRY = DecisionConfig(task_publish_max_retries=-1)


# --- the core -------------------------------------------------------------------------


class ExecutorCore:
    """The executor's loop state and rules; see the module documentation for the protocol."""

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
        self._results: deque[_Pending] = deque()
        self._backlog: list[_Pending] = []
        self._changes: list[tuple[WorkloadKey, bool]] = []  # (key, now running) since taken
        self._cleanups: list[DeletePod | PatchLabels] = []
        self._cleaned: dict[tuple[str, str], None] = {}
        """Pods this core asked to delete or label done, until they leave the watch (at
        most _CLEANED_KEPT, oldest first out): a second terminal event for one of them is
        a duplicate, for any other pod of a settled workload a leftover to clean up."""
        self._states: dict[WorkloadKey, KnownState] = {}
        self._ready: deque[_Work] = deque()  # open works whose next action may start
        self._parked: deque[tuple[_Work, DeletePod | PatchLabels | DeleteSecret]] = deque()
        """Works whose next request waits for a clean-up slot (max_concurrent_cleanups)."""
        self._open_works = 0  # ready, parked or in flight
        self._busy: dict[WorkloadKey, int] = {}  # open works and creations in flight, by key
        self._in_flight: dict[int, _Flight] = {}  # by id() of the request: each an identity
        self._creating = 0  # CreatePods in flight
        self._cleaning = 0  # DeletePods, PatchLabels and DeleteSecrets in flight
        self._reading: ReadStates | None = None
        self._listing: ListPods | None = None
        self._resource_version: str | None = None
        self._relist_needed = False
        self._relist_asked = False
        self._pass_over = False
        self._created_this_pass = 0
        self._creation_stopped = False
        self._create_failed: set[WorkloadKey] = set()
        self._now: datetime.datetime | None = None
        self.on_decision: Callable[[Handled], None] | None = None
        """Called with every decision the core takes (for logs and timelines)."""
        self._generation = 0  # bumped whenever running or the attempt records change

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
        return bool(
            self._results
            or self._backlog
            or self._cleanups
            or self._open_works
            or self._in_flight
            or self._queue
            or self._relist_needed
        )

    @property
    def in_flight(self) -> tuple[Request, ...]:
        """The requests handed out and not yet reported complete, oldest first."""
        return tuple(flight.request for flight in self._in_flight.values())

    @property
    def resource_version(self) -> str | None:
        """Watch from here (None: from a fresh list; a 410 resets it)."""
        return self._resource_version

    @property
    def is_relisting(self) -> bool:
        """A re-list is needed or under way: do not restart the watch until it is done."""
        return self._relist_needed

    @property
    def paused_until(self) -> datetime.datetime | None:
        """Pod creation is paused until then (after a 429 or a ``Retry-After``)."""
        return self._paused_until

    def create_retries(self, key: WorkloadKey) -> int:
        """How often the pod creation of ``key`` has been retried since it last succeeded."""
        return self._create_retries.get(key, 0)

    # --- inputs -----------------------------------------------------------------------

    def submit(self, job: KubernetesJob[Any]) -> None:
        """A workload to launch: it runs from now on and its pod joins the creation queue."""
        key = job.key
        if not isinstance(key, (TaskInstanceKey, CallbackKey)):
            raise TypeError(f"job.key must be a workload key, got {type(key).__name__}")
        if key in self._running:
            raise WorkloadAlreadyRunning(f"{key!r} is running already")
        self._running[key] = None
        self._attempts = self._attempts.with_record(key, Attempt(job))
        self._generation += 1
        self._queue.append(_Queued(job))

    def feed_event(self, event: object, *, now: datetime.datetime | None = None) -> Resolution:
        """A watch event: a raw JSON line (``str`` or ``bytes``), a dict or a ``V1Pod`` event.

        Returns how it was read (for logs); never raises. A 410 or any other ERROR event
        makes the core ask for a re-list (:class:`ListPods`).
        """
        if isinstance(event, (bytes, bytearray)):
            event = bytes(event).decode("utf-8", "replace")
        if isinstance(event, str):  # decoded only as far as resolution reads it
            resolution = resolve_event_json(event, config=self._resolver, now=now)
        else:
            resolution = resolve_event(event, config=self._resolver, now=now)
        self._take(resolution)
        return resolution

    def _take(self, resolution: Resolution) -> None:
        outcome = resolution.outcome
        if outcome in {Outcome.RESYNC, Outcome.WATCH_ERROR}:
            # The provider restarts its watch from "0" after any ERROR event; here the
            # re-list also finds the pods that vanished in the gap.
            self._resource_version = None
            self._relist_needed = True
            return
        if resolution.resource_version:
            self._resource_version = resolution.resource_version
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
        """The answer to a re-list: every listed pod (manifests) and the list's version.

        Each listed pod is read as an ``ADDED`` event (its final events may have been
        lost), and running workloads whose pods are gone become ``VANISHED`` results.
        """
        flight = self._flight(request, ListPods)
        listed = list(pods)
        self._land(flight)
        waiting = [entry.job.key for entry in self._queue]
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
                )
            )
        for result in vanished:
            self._results.append(_Pending(result))
        self._resource_version = resource_version or None
        self._relist_needed = False

    def request_done(self, request: Request) -> None:
        """``request`` succeeded (driven concurrently: see :meth:`start_request`).

        A :class:`ReadStates` or :class:`ListPods` is answered with :meth:`states_read` or
        :meth:`pods_listed` instead; a request never handed out, or reported already, is a
        :class:`ProtocolError`.
        """
        flight = self._flight(request)
        if isinstance(request, (ReadStates, ListPods)):
            answer = "states_read" if isinstance(request, ReadStates) else "pods_listed"
            raise ProtocolError(f"answer {request!r} with {answer}()")
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
            if parts is None:
                self._create_error(flight, None, None, None, None, fatal=error)
            else:
                self._create_error(flight, *parts)
            return
        if isinstance(request, ReadStates):
            for pending in self._results:
                if pending.result.key in request.keys and pending.error is None:
                    pending.error = error
            return
        if isinstance(request, ListPods):
            return  # still needed; asked again on the next pass
        work = flight.work
        if work is None:
            return
        if isinstance(request, DeleteSecret):
            self._ready.appendleft(work)  # best effort: the work goes on
        elif isinstance(request, (DeletePod, PatchLabels)):
            self._pod_call_failed(work, request, error)

    def _pod_call_failed(
        self, work: _Work, request: DeletePod | PatchLabels, error: BaseException
    ) -> None:
        # Not cleaned up after all: a later terminal event of the pod is a leftover to
        # clean up again, not a duplicate of a clean-up that happened.
        self._cleaned.pop((request.namespace, request.pod_name), None)
        relabel = isinstance(request, PatchLabels) and AIRFLOW_WORKER_LABEL in request.labels
        if work.kind == _FINAL or (work.kind == _ADOPTION and not relabel):
            # The rest goes on; the clean-up itself is tried again on the next pass while
            # the error is transient, so a finished pod is not left in the watch to be
            # re-read after every restart (an adopted pod's too: it was relabelled, so no
            # other scheduler cleans it up). A refusal (403, 422 …) is final.
            if _transient(error):
                self._cleanups.append(request)
            self._ready.appendleft(work)
            return
        # A failed relabel drops that pod's adoption. A failed pod call of a decision
        # stops it (nothing after it happens) and handling_failed decides about the
        # result at once (a retry waits for the next pass).
        self._close(work)
        pending = work.pending
        if work.kind == _DECISION and pending is not None:
            pending.error = error
            self._results.appendleft(pending)

    def create_failed(
        self,
        request: CreatePod,
        *,
        status: int | None,
        body: object = None,
        headers: Mapping[str, str] | None = None,
        reason: str | None = None,
    ) -> None:
        """Pod creation failed with this HTTP ``status`` (None: a connection error)."""
        flight = self._flight(request, CreatePod)
        self._land(flight)
        self._create_error(flight, status, body, headers, reason)

    def create_skipped(self, request: CreatePod, reason: str) -> None:
        """``request``'s pod was not created, on purpose: the workload is stale (its task
        instance was retried, cleared or queued by another scheduler since it was
        submitted, as the provider checks before each creation). The job is dropped with
        no event and stops running; ``reason`` goes to :attr:`on_decision`."""
        flight = self._flight(request, CreatePod)
        self._land(flight)
        key = request.key
        self._create_retries.pop(key, None)
        decision = Decision((FreeSlot(key),), self._attempts.without(key), Ignore(reason))
        if self.on_decision is not None:
            self.on_decision(Handled(key, "stale", decision))
        self._open(_Work(_FINAL, deque(decision.actions), attempts=decision.attempts), key)

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
            if flight.revoked:
                gone: deque[Action | DeleteSecret] = deque(
                    [DeletePod(request.pod_name, request.namespace)]
                )
                self._open(_Work(_FINAL, gone), request.key)
        elif flight.work is not None:
            self._ready.appendleft(flight.work)

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

    def adopt(
        self,
        pods: Iterable[Mapping[str, Any]],
        *,
        alive_scheduler_ids: Iterable[str | int] = (),
        expected_task_keys: Iterable[TaskInstanceKey] | None = None,
        expected_callback_keys: Iterable[CallbackKey] | None = None,
    ) -> AdoptionPlan:
        """Take over the listed pods of dead schedulers (after a restart).

        ``pods``: every pod of the lists :meth:`adoption_selectors` names, as listed (a
        pod in two lists counts once). Perform the requests that follow; then
        :meth:`not_adopted` gives the keys not taken over: task instances for the
        scheduler to reset, callbacks to run again. A pod whose relabel fails (its owner
        changed: a rival adopted it) is not adopted; a pod without a readable owner label
        or workload is skipped, named in the plan's ``undecodable``.
        """
        plan = plan_adoption(
            pods,
            me=self.config.scheduler_id,
            alive_scheduler_ids=alive_scheduler_ids,
            expected_task_keys=expected_task_keys,
            expected_callback_keys=expected_callback_keys,
            airflow_version=self._resolver.airflow_version,
            config=self.config.decisions,
            running=tuple(self._running),
        )
        completed = {(result.namespace, result.pod_name): result for result in plan.completed}
        groups: list[_Work] = []
        for action in plan.actions:
            if isinstance(action, PatchLabels):
                groups.append(_Work(_ADOPTION, deque([action])))
                groups[-1].completed = completed.get((action.namespace, action.pod_name))
            elif groups:
                groups[-1].actions.append(action)
        for group in groups:
            key = group.completed.key if group.completed is not None else None
            for step in group.actions:
                if isinstance(step, (TrackRunning, FreeSlot, EmitEvent)):
                    key = step.key
            self._open(group, key)
        return plan

    def adoption_selectors(
        self,
        dead_scheduler_ids: Iterable[str | int] = (),
        alive_scheduler_ids: Iterable[str | int] = (),
    ) -> tuple[PodSelector, ...]:
        """The pod lists to make (in each watched namespace) before :meth:`adopt`:
        :func:`~k8s_workloads.decisions.adoption.adoption_selectors` for this scheduler, with the
        callback list when its Airflow runs callbacks (3.3+)."""
        return adoption_selectors(
            self.config.scheduler_id,
            dead_scheduler_ids=dead_scheduler_ids,
            alive_scheduler_ids=alive_scheduler_ids,
            callbacks=supports_callbacks(self._resolver.airflow_version),
        )

    def not_adopted(self, expected: Iterable[_Key]) -> list[_Key]:
        """Expected keys this executor does not run, once the adoption's requests are
        performed: task instances for the scheduler to reset, callbacks for the executor
        to run again (Airflow resets only task instances)."""
        return [key for key in expected if key not in self._running]

    def revoke(self, key: TaskInstanceKey, pods: Iterable[Mapping[str, Any]]) -> None:
        """Stop running a task instance: its queued job is dropped and its pods (this
        scheduler's, listed) are marked revoked, then deleted. No event is reported."""
        self._queue = deque(entry for entry in self._queue if entry.job.key != key)
        self._delayed = [entry for entry in self._delayed if entry.job.key != key]
        self._create_retries.pop(key, None)
        for flight in self._in_flight.values():
            if isinstance(flight.request, CreatePod) and flight.request.key == key:
                flight.revoked = True  # its pod is not among those listed: deleted once made
        decision = plan_revocation(key, pods, me=self.config.scheduler_id, attempts=self._attempts)
        self._attempts = decision.attempts
        self._generation += 1
        self._open(_Work(_FINAL, deque(decision.actions)), key)

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
            if isinstance(request, (ReadStates, ListPods)):
                answer = "states_read" if isinstance(request, ReadStates) else "pods_listed"
                raise ProtocolError(f"answer {request!r} with {answer}() first")
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
        self._relist_asked = False
        if self._backlog:
            self._results.extendleft(reversed(self._backlog))
            self._backlog = []
        for action in self._cleanups:
            self._open(_Work(_FINAL, deque([action])), None)
        self._cleanups = []

    def _step(self, now: datetime.datetime, *, implicit: bool) -> Request | Waiting | NothingToDo:
        while True:
            request = self._work_request(implicit=implicit)
            if request is not None:
                return request
            if self._listing is not None:
                return Waiting(len(self._in_flight))  # a re-list runs alone
            if self._relist_needed and not self._relist_asked:
                if self._in_flight:
                    return Waiting(len(self._in_flight))
                self._relist_asked = True
                namespace = None if self.config.watch_all_namespaces else self.config.namespace
                listing = ListPods(namespace, watcher_selector(self.config.scheduler_id))
                return self._launch(listing, implicit=implicit)
            if self._results and self._reading is None:
                handled = self._handle_next()
                if isinstance(handled, ReadStates):
                    return self._launch(handled, implicit=implicit)
                if handled:
                    continue
            created = self._create_next(now, implicit=implicit)
            if created is not None:
                return created
            if self._ready or (self._parked and self._cleaning < self._cleanup_slots()):
                continue  # a job whose pod could not be built fails at once
            if self._in_flight:
                return Waiting(len(self._in_flight))
            return NothingToDo(self._wake_up())

    def _cleanup_slots(self) -> int:
        return self.config.max_concurrent_cleanups

    def _wake_up(self) -> datetime.datetime | None:
        if not self._queue:
            return None
        # Only jobs with a delay are looked at: a pass costs nothing per queued job.
        times = [entry.not_before for entry in self._delayed if entry.not_before is not None]
        if self._queue and self._paused_until is not None:
            times.append(self._paused_until)
        return min(times) if times else None

    def _work_request(self, *, implicit: bool) -> Request | None:
        """The next request of the first work that has one to start, or None."""
        slots = self._cleanup_slots()
        if self._parked and self._cleaning < slots:
            work, parked = self._parked.popleft()
            return self._launch(parked, implicit=implicit, work=work)
        ready = self._ready
        while ready:
            work = ready.popleft()
            request = self._work_step(work)
            if request is None:
                continue  # the work is done
            if not isinstance(request, EmitEvent) and (self._parked or self._cleaning >= slots):
                self._parked.append((work, request))
                continue
            return self._launch(request, implicit=implicit, work=work)
        return None

    def _work_step(self, work: _Work) -> DeletePod | PatchLabels | EmitEvent | DeleteSecret | None:
        """The next request of ``work``; bookkeeping actions are applied on the way. None:
        the work is done, and closed."""
        while work.actions:
            action = work.actions.popleft()
            if isinstance(action, (DeletePod, PatchLabels, EmitEvent, DeleteSecret)):
                if isinstance(action, DeletePod) or (
                    isinstance(action, PatchLabels) and POD_EXECUTOR_DONE_LABEL in action.labels
                ):
                    self._remember_cleaned(action.namespace, action.pod_name)
                if isinstance(action, DeletePod) and self.config.secure_payload:
                    work.actions.appendleft(
                        DeleteSecret(workload_secret_name(action.pod_name), action.namespace)
                    )
                return action
            self._apply(action)
        self._close(work)
        key = work.key
        if work.attempts is not None:
            if key is None:  # not made by this core: every record is the work's
                self._attempts = work.attempts
                self._generation += 1
            elif self._attempts.get(key) is work.base:  # nobody changed it meanwhile
                record = work.attempts.get(key)
                if record is not work.base:
                    self._attempts = (
                        self._attempts.without(key)
                        if record is None
                        else self._attempts.with_record(key, record)
                    )
                    self._generation += 1
        if work.completed is not None:
            self._results.append(_Pending(work.completed))
        return None

    def _apply(self, action: Action | DeleteSecret) -> None:
        self._generation += 1
        if isinstance(action, FreeSlot):
            if action.key in self._running:
                del self._running[action.key]
                self._changes.append((action.key, False))
            self._create_retries.pop(action.key, None)
        elif isinstance(action, TrackRunning):
            if action.key not in self._running:
                self._running[action.key] = None
                self._changes.append((action.key, True))
        elif isinstance(action, RequeueJob):
            not_before = None
            if action.delay is not None and self._now is not None:
                not_before = self._now + datetime.timedelta(seconds=action.delay)
            entry = _Queued(action.job, not_before)
            self._queue.append(entry)
            if not_before is not None:
                self._delayed.append(entry)
        # Every other action is a request (_work_step hands those out).

    # --- results ----------------------------------------------------------------------

    def _remember_cleaned(self, namespace: str, pod_name: str) -> None:
        cleaned = self._cleaned
        cleaned.pop((namespace, pod_name), None)
        cleaned[namespace, pod_name] = None
        if len(cleaned) > _CLEANED_KEPT:
            del cleaned[next(iter(cleaned))]

    def _leftover(self, pending: _Pending, decision: Decision) -> Decision:
        """A terminal result of a pod of a workload no longer running that this core never
        cleaned up (a second launch adopted beside the one that reported, a pod created
        twice): no event, but the pod is cleaned up, or it stays in the watch and is read
        again after every restart. The same pod's repeated events are not (no second
        delete: it is among the cleaned pods, or its event is a DELETED one)."""
        result = pending.result
        if (
            not pending.in_watch
            or result.key in self._running
            or result.state not in _LEFTOVER_STATES
            or decision.actions
            or decision.look_up is not None
            or (result.namespace, result.pod_name) in self._cleaned
        ):
            return decision
        attempt = self._attempts.get(result.key)
        if attempt is not None and attempt.was_requeued(result.pod_name, result.pod_uid):
            return decision  # a requeued launch's pod: its clean-up came with the requeue
        cleanup = cleanup_actions(result, self.config.decisions)
        why = Ignore("a leftover pod of a settled workload: cleaned up, nothing reported")
        return Decision(tuple(cleanup), decision.attempts, why)

    def _decide_cached(self, pending: _Pending, known: KnownState) -> Decision:
        # The state check and the decision usually meet the same bookkeeping: decide once.
        cached = pending.cached
        if cached is not None and known is UNKNOWN and cached[0] == self._generation:
            return cached[1]
        decision = self._decide(pending.result, known)
        if known is UNKNOWN:
            pending.cached = (self._generation, decision)
        return decision

    def _needs_state(self, pending: _Pending) -> bool:
        result = pending.result
        if result.key in self._states:
            return False
        if isinstance(result.key, CallbackKey) and not self.config.read_callback_states:
            return False
        decision = self._decide_cached(pending, UNKNOWN)
        if isinstance(result.key, CallbackKey):
            # The callback's state guards the never-overwrite rule wherever one is reported.
            return any(isinstance(action, EmitEvent) for action in decision.actions)
        return decision.look_up is not None

    def _decide(self, result: WorkloadResult, known: KnownState) -> Decision:
        return decide(
            result,
            running=result.key in self._running,
            config=self.config.decisions,
            attempts=self._attempts,
            known_state=known,
        )

    def _handle_next(self) -> ReadStates | bool:
        """Decide about the first waiting result whose workload has no open work (False:
        there is none), or ask for the states that decision needs first."""
        results, busy = self._results, self._busy
        index = 0
        if busy:  # a workload's results are decided one after another, never side by side
            for index, waiting in enumerate(results):  # noqa: B007 - the index is the answer
                if waiting.result.key not in busy:
                    break
            else:
                return False
        pending = results[index]
        if pending.error is None and self._needs_state(pending):
            # One read for every waiting result that needs one: one query per pass.
            keys: dict[WorkloadKey, None] = {}
            for other in self._results:
                if (
                    other.error is None
                    and other.result.key not in keys
                    and self._needs_state(other)
                ):
                    keys[other.result.key] = None
            return ReadStates(tuple(keys))
        del results[index]
        result = pending.result
        if not pending.in_watch:
            # The pod left the watch: forgotten in the order its events came, after its
            # earlier results (forgetting it when the DELETED event was fed made the
            # MODIFIED event with the deletionTimestamp, fed just before, a leftover to
            # delete a second time).
            self._cleaned.pop((result.namespace, result.pod_name), None)
        work_pending: _Pending | None = None
        if pending.error is not None:
            decision = handling_failed(
                result,
                pending.error,
                running=result.key in self._running,
                failures_so_far=pending.failures,
                attempts=self._attempts,
                config=self.config.decisions,
                known_state=pending.known,
            )
            retry = decision.retry
            if retry is not None:
                self._backlog.append(
                    _Pending(result, retry.failures, pending.known, in_watch=pending.in_watch)
                )
            kind, cause = _FINAL, "handling failed"
        else:
            known = self._states.get(result.key, UNKNOWN)
            decision = self._leftover(pending, self._decide_cached(pending, known))
            work_pending = _Pending(result, pending.failures, known, in_watch=pending.in_watch)
            kind, cause = _DECISION, "result"
        if self.on_decision is not None:
            self.on_decision(Handled(result.key, cause, decision, result))
        work = _Work(kind, deque(decision.actions), work_pending, decision.attempts)
        self._open(work, result.key)
        return True

    # --- pod creation -----------------------------------------------------------------

    def _create_next(self, now: datetime.datetime, *, implicit: bool) -> Request | None:
        config = self.config
        if (
            self._creation_stopped
            or self._created_this_pass >= config.creation_batch_size
            or self._creating >= config.max_concurrent_creations
        ):
            return None
        if self._paused_until is not None:
            if now < self._paused_until:
                return None
            self._paused_until = None
        while (entry := self._next_due(now)) is not None:
            key = entry.job.key
            attempt = self._attempts.get(key)
            if key not in self._running or attempt is None or attempt.job is not entry.job:
                continue  # revoked or settled meanwhile: drop the job
            self._created_this_pass += 1
            try:
                pod, secret = self._build(entry.job)
            except (ValueError, TypeError) as error:
                # The builders' typed errors (an invalid pod, reconciliation, mutation hook,
                # payload, key, version) and a load_template that cannot give the template.
                # With secure_payload the pod never held the token the builders mask, so
                # the job's command is searched for it too.
                mask = token_masker([list(entry.job.command)])
                info = mask(f"the pod could not be built: {error}")
                self._fail_launch(entry.job, info, "build error")
                return None
            request = CreatePod(key, pod["metadata"]["namespace"], pod, secret)
            return self._launch(request, implicit=implicit, entry=entry)
        return None

    def _next_due(self, now: datetime.datetime) -> _Queued | None:
        """Take the first queued job that may be created now."""
        for index, entry in enumerate(self._queue):
            if entry.not_before is not None and now < entry.not_before:
                continue
            if entry.job.key in self._create_failed:
                continue  # its creation failed in this pass: retried on the next one
            if entry.job.key in self._busy:
                continue  # its workload's last result is still being handled
            del self._queue[index]
            if entry.not_before is not None:
                self._delayed = [other for other in self._delayed if other is not entry]
            return entry
        return None

    def _fail_launch(self, job: KubernetesJob[Any], info: str, cause: str) -> None:
        key = job.key
        failed = EmitEvent(key, state_class_for_key(key).FAILED, info)
        self._create_retries.pop(key, None)
        decision = Decision((FreeSlot(key), failed), self._attempts.without(key))
        if self.on_decision is not None:
            self.on_decision(Handled(key, cause, decision))
        self._open(_Work(_FINAL, deque(decision.actions), attempts=decision.attempts), key)

    def _template(self) -> PodTemplate | Mapping[str, Any] | None:
        """The configured template, prepared on first use (see :class:`PodTemplate`)."""
        if self._prepared_template is None:
            try:
                self._prepared_template = PodTemplate(self.config.pod_template)
            except (ValueError, TypeError):
                # Refused: every job's build raises the builder's own error for it.
                return self.config.pod_template
        return self._prepared_template

    def _build(self, job: KubernetesJob[Any]) -> tuple[Manifest, Manifest | None]:
        config = self.config
        template: PodTemplate | Mapping[str, Any] | None
        if job.pod_template_file is not None:
            if config.load_template is None:
                raise ValueError(
                    f"pod_template_file {job.pod_template_file!r}: no load_template configured"
                )
            # A file's template is read per job (the file may change); the builder keeps
            # its preparation by content.
            template = config.load_template(job.pod_template_file)
        else:
            template = self._template()
        args = list(job.command)
        workload = _args_workload(args) if config.secure_payload else None
        pod = construct_pod(
            job,
            namespace=config.namespace,
            scheduler_job_id=config.scheduler_id,
            airflow_version=config.airflow_version,
            kube_image=config.kube_image,
            base_worker_pod=template,
            args=json_path_command_args() if workload is not None else args,
            mutation_hook=config.mutation_hook,
            rng=config.rng,
        )
        if workload is None:
            return pod, None
        metadata = pod["metadata"]
        payload = secure_workload_payload(
            workload, pod_name=metadata["name"], namespace=metadata["namespace"]
        )
        return attach_secure_payload(pod, payload), payload.secret

    def _create_error(
        self,
        flight: _Flight,
        status: int | None,
        body: object,
        headers: Mapping[str, str] | None,
        reason: str | None,
        *,
        fatal: BaseException | None = None,
    ) -> None:
        request, entry = flight.request, flight.entry
        assert isinstance(request, CreatePod)  # noqa: S101 - _launch's
        assert entry is not None  # noqa: S101
        job, key = entry.job, request.key
        self._create_failed.add(key)
        cleanup: list[DeleteSecret] = []
        if request.secret is not None:
            cleanup.append(DeleteSecret(request.secret["metadata"]["name"], request.namespace))
        if fatal is not None:
            info = f"pod creation failed: {type(fatal).__name__}: {fatal}"
            self._fail_launch(job, info, "create error")
            self._ready[-1].actions.extendleft(cleanup)
            return
        retries = self._create_retries.get(key, 0)
        decision = decide_create_error(
            job,
            status,
            body,
            headers,
            reason=reason,
            retries=retries,
            config=self.config.decisions,
            attempts=self._attempts,
        )
        requeue = next((a for a in decision.actions if isinstance(a, RequeueJob)), None)
        if requeue is not None:
            self._create_retries[key] = retries + 1
            if requeue.delay is not None and self._now is not None:
                # A 429 or a Retry-After pauses all pod creation, as the provider does:
                # the creations not handed out yet wait (those in flight end as they do).
                until = self._now + datetime.timedelta(seconds=requeue.delay)
                if self._paused_until is None or until > self._paused_until:
                    self._paused_until = until
                self._creation_stopped = True
        else:
            self._create_retries.pop(key, None)
        if self.on_decision is not None:
            self.on_decision(Handled(key, "create error", decision))
        work = _Work(_FINAL, deque([*cleanup, *decision.actions]), attempts=decision.attempts)
        self._open(work, key)

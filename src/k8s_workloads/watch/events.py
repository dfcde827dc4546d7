"""Pod watch events to workload states: :func:`resolve_event`.

One watch event in — ``{"type": ..., "object": ...}`` from the API server's watch stream,
``kubectl get pods --watch --output-watch-events -o json`` or the kubernetes client's
``Watch.stream`` — and one :class:`Resolution` out: which workload, which state, why.

The rules for task pods are the provider's watcher (``process_status``), row by row, in
:data:`DECISION_TABLE` order. Callback pods (Airflow 3.3+) are recognised before any task
field is read and resolve to :class:`~k8s_workloads.states.CallbackState` values. The
function is total: whatever the input, it returns a Resolution whose ``outcome`` says
what happened, and never raises. :func:`resolve_event_json` takes the event as JSON text
and gives the Resolution of its full decoding, reading only the fields the rules read.
"""

from __future__ import annotations

import enum
import types
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import attrs
import msgspec

from k8s_workloads import _config as _checks
from k8s_workloads import _models
from k8s_workloads._display import shown
from k8s_workloads._json import as_int
from k8s_workloads._json import as_map as _map
from k8s_workloads._json import as_str as _str
from k8s_workloads.codec import (
    InvalidAnnotations,
    _cached_task_key,
    annotations_to_key,
    is_callback_pod,
)
from k8s_workloads.compat import AirflowVersion, InvalidVersion, VersionLike
from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.labels import KUBERNETES_EXECUTOR_LABEL, POD_REVOKED_LABEL, TRUE_LABEL_VALUE
from k8s_workloads.states import (
    CallbackResult,
    CallbackState,
    ExecutorPseudoState,
    FailureDetails,
    TaskInstanceState,
    TaskResult,
    WorkloadResult,
)
from k8s_workloads.watch import _watchjson
from k8s_workloads.watch._podstatus import Condition, PodStatus, read_conditions, read_status
from k8s_workloads.watch.failures import (
    DEFAULT_FATAL_PENDING_REASONS,
    FailureClassification,
    FailureKind,
    PendingPolicy,
    classify_failure,
    classify_read,
    demystify_pending,
    describe_failure,
    status_disruption,
    status_failure_details,
    status_fatal_waiting,
    status_oom_killed,
)

if TYPE_CHECKING:
    import datetime
    from collections.abc import Callable, Iterable

__all__ = [
    "DECISION_TABLE",
    "Outcome",
    "Resolution",
    "ResolverConfig",
    "resolve_event",
    "resolve_event_json",
]


class Outcome(enum.Enum):
    """What a watch event meant. Only some outcomes carry a workload state."""

    FAILED = "failed"
    SUCCEEDED = "succeeded"
    RUNNING = "running"
    ADOPTED = "adopted"
    """Deleted without a deletion timestamp: another scheduler took the pod over."""
    PENDING = "pending"
    DELETED_BEFORE_START = "deleted_before_start"
    """A Pending pod deleted gracefully; like the provider, no state is reported."""
    REVOKED = "revoked"
    """The executor revoked the pod on purpose; the event is ignored."""
    UNKNOWN_PHASE = "unknown_phase"
    FOREIGN = "foreign"
    """Not a KubernetesExecutor pod (no ``kubernetes_executor=True`` label)."""
    UNDECODABLE = "undecodable"
    """An executor pod whose annotations name no workload (or a callback, gated off)."""
    RESYNC = "resync"
    """ERROR 410 Gone: the resource version expired; list again, then re-watch."""
    WATCH_ERROR = "watch_error"
    BOOKMARK = "bookmark"
    MALFORMED = "malformed"
    """Not a watch event at all."""


def _reason_set(reasons: Iterable[str]) -> frozenset[str]:
    if isinstance(reasons, str):  # a comma list, as the provider's config option
        return frozenset(part.strip() for part in reasons.split(",") if part.strip())
    return frozenset(reasons)


def _airflow_version(value: VersionLike | None) -> AirflowVersion | None:
    return _checks.optional_version("ResolverConfig", "airflow_version", value)


@attrs.frozen
class ResolverConfig:
    """How events are read. The defaults reproduce the provider's watcher."""

    airflow_version: AirflowVersion | None = attrs.field(default=None, converter=_airflow_version)
    """Callback pods resolve only for 3.3+; None treats them as undecodable. Text is parsed
    here, once: one that is not a version is an :class:`InvalidConfig` naming the field."""
    fatal_pending_reasons: frozenset[str] = attrs.field(
        default=DEFAULT_FATAL_PENDING_REASONS, converter=_reason_set, validator=_checks.text_set
    )
    """Waiting reasons that fail a Pending pod at once (provider default); empty disables."""
    pending: PendingPolicy | None = attrs.field(
        default=None, validator=_checks.kind(PendingPolicy, optional=True)
    )
    """Opt-in grace-period reading of Pending pods; replaces ``fatal_pending_reasons``."""
    report_callback_running: bool = attrs.field(default=True, validator=_checks.boolean)
    """Report ``CallbackState.RUNNING`` for running callback pods (upstream never does)."""
    oom_success_is_failure: bool = attrs.field(default=False, validator=_checks.boolean)
    """Fail a Succeeded pod whose container was OOM-killed (Flyte's rule); off by default."""


@attrs.frozen
class Resolution:
    """What one watch event says about one workload."""

    outcome: Outcome
    reason: str
    """One line for humans: why this outcome."""
    key: WorkloadKey | None = None
    state: TaskInstanceState | CallbackState | ExecutorPseudoState | None = None
    """The state to report, or None when the event changes nothing."""
    pod_name: str | None = None
    namespace: str | None = None
    resource_version: str | None = None
    failure_details: FailureDetails | None = None
    classification: FailureClassification | None = None
    event_type: str | None = None
    error_code: int | None = None
    """The HTTP code of an ERROR event."""
    pod_uid: str | None = None
    """The pod's ``metadata.uid``: tells launches that share a pod name apart."""

    def to_json(self, *, explain: bool = False) -> dict[str, Any]:
        """The resolution as a JSON object, as ``k8s-workloads resolve --json`` prints it
        (without its ``line``).

        Always ``event``, ``outcome``, ``state`` (their values), ``key``
        (``key.to_json()``), ``pod``, ``namespace``, ``resource_version`` and ``reason``;
        with ``explain`` also ``error_code``, ``failure_details``, ``classification``
        (``classification.to_json()``) and ``pod_uid``. Absent values are None.
        """
        record: dict[str, Any] = {
            "event": self.event_type,
            "outcome": self.outcome.value,
            "state": None if self.state is None else self.state.value,
            "key": None if self.key is None else self.key.to_json(),
            "pod": self.pod_name,
            "namespace": self.namespace,
            "resource_version": self.resource_version,
            "reason": self.reason,
        }
        if explain:
            details = self.failure_details
            classification = self.classification
            record["error_code"] = self.error_code
            record["failure_details"] = None if details is None else dict(details)
            record["classification"] = None if classification is None else classification.to_json()
            record["pod_uid"] = self.pod_uid
        return record

    def to_result(self) -> WorkloadResult | None:
        """The executor-side result record, or None when there is nothing to report."""
        if self.state is None or self.key is None:
            return None
        where = (self.pod_name or "", self.namespace or "", self.resource_version or "")
        uid = self.pod_uid
        if isinstance(self.key, CallbackKey) and not isinstance(self.state, TaskInstanceState):
            return CallbackResult(self.key, self.state, *where, self.failure_details, pod_uid=uid)
        if isinstance(self.key, TaskInstanceKey) and not isinstance(self.state, CallbackState):
            return TaskResult(self.key, self.state, *where, self.failure_details, pod_uid=uid)
        return None


def _as_manifest(obj: object) -> Mapping[str, Any] | None:
    if isinstance(obj, Mapping):
        return obj
    if obj is None or not hasattr(obj, "to_dict"):
        return None
    # A kubernetes model object (36.x or 37.x): read by the reader the adapter registers.
    reader = _models.reader_for(obj)
    if reader is None:
        return None
    try:
        with warnings.catch_warnings():
            # pydantic (kubernetes 37) warns about the odd values it then serialises anyway.
            warnings.simplefilter("ignore")
            return reader(obj)
    except (TypeError, ValueError, AttributeError, RecursionError):
        # A model object holding values its type does not allow (a set, an object, a
        # structure nested past Python's recursion limit): not a pod this can read.
        return None


def _watch_error(event_type: str, obj: Mapping[str, Any]) -> Resolution:
    code = as_int(obj.get("code"))
    reason = _str(obj.get("reason")) or "unknown"
    message = _str(obj.get("message")) or ""
    if code == 410:
        return Resolution(
            Outcome.RESYNC,
            f"watch expired (410 {reason}): list pods again and watch from the new version",
            event_type=event_type,
            error_code=410,
        )
    return Resolution(
        Outcome.WATCH_ERROR,
        f"Kubernetes failure for {reason} with code {shown(code)} and message: {message}",
        event_type=event_type,
        error_code=code,
    )


def resolve_event(
    event: object,
    *,
    config: ResolverConfig = ResolverConfig(),  # frozen, so one shared default is safe
    now: datetime.datetime | None = None,
) -> Resolution:
    """Resolve one pod watch event; total, never raises.

    ``now`` is only read by the opt-in pending policy (``config.pending``).
    """
    if not isinstance(event, Mapping):
        return Resolution(Outcome.MALFORMED, f"not a watch event: {type(event).__name__}")
    event_type = event.get("type")
    if not isinstance(event_type, str):
        return Resolution(Outcome.MALFORMED, "watch event without a type")
    obj = _as_manifest(event.get("object"))
    if obj is None:
        return Resolution(
            Outcome.MALFORMED, f"{event_type} event without an object", event_type=event_type
        )
    if event_type == "ERROR":
        return _watch_error(event_type, obj)
    metadata = _map(obj.get("metadata"))
    resource_version = _str(metadata.get("resourceVersion"))
    if event_type == "BOOKMARK":
        return Resolution(
            Outcome.BOOKMARK,
            f"bookmark at resource version {resource_version}",
            resource_version=resource_version,
            event_type=event_type,
        )
    if event_type not in {"ADDED", "MODIFIED", "DELETED"}:
        return Resolution(
            Outcome.MALFORMED,
            f"unknown watch event type {shown(event_type)}",
            event_type=event_type,
        )
    return _resolve_pod(event_type, obj, metadata, resource_version, config=config, now=now)


# --- the rules ---------------------------------------------------------------------------
#
# A pod event is read in two steps. First its identity, from the labels and annotations
# alone (:func:`_identify`): a revoked pod, a pod that is not the executor's and one whose
# annotations name no workload stop there. Then the table below, which holds the rows of
# :data:`DECISION_TABLE` after the first as data: the rows every phase shares, then each
# phase's own rows, top to bottom. A row is its condition and result (the documentation:
# ``DECISION_TABLE`` is made from them) and a rule: the Resolution when its
# condition holds, else None. The rules read a pod through :class:`_Pod`, which a decoded
# manifest (:class:`_ManifestPod`) and a typed watch line (:class:`_TypedPod`) both are,
# so both ways of reading an event run the same rows.


class _Pod:
    """One pod event being resolved: what every rule of the table reads."""

    __slots__ = (
        "config",
        "deleting",
        "event_type",
        "key",
        "namespace",
        "now",
        "phase",
        "pod_message",
        "pod_name",
        "pod_reason",
        "pod_uid",
        "resource_version",
    )

    def __init__(  # noqa: PLR0917 - one slot each, on the hot path (attrs adds ~1 µs)
        self,
        event_type: str,
        deleting: bool,
        key: WorkloadKey,
        config: ResolverConfig,
        now: datetime.datetime | None,
        pod_name: str | None,
        namespace: str | None,
        resource_version: str | None,
        pod_uid: str | None,
        phase: object,
        pod_reason: object,
        pod_message: str | None,
    ) -> None:
        self.event_type = event_type
        self.deleting = deleting
        self.key = key
        self.config = config
        self.now = now
        self.pod_name = pod_name
        self.namespace = namespace
        self.resource_version = resource_version
        self.pod_uid = pod_uid
        self.phase = phase
        """``status.phase`` as sent (any JSON value)."""
        self.pod_reason = pod_reason
        """``status.reason`` as sent (any JSON value)."""
        self.pod_message = pod_message

    # What the rows read of the status, beyond phase, reason and message: the failure
    # rules of :mod:`~k8s_workloads.watch.failures`, written once over the typed status each
    # kind of pod gives.

    def manifest(self) -> Mapping[str, Any]:
        """The pod as a manifest dict, for the readers of :mod:`~k8s_workloads.watch.failures`."""
        raise NotImplementedError

    def status(self) -> PodStatus | None:
        """The pod's status, typed (None: the pod has none)."""
        raise NotImplementedError

    def conditions(self) -> list[Condition]:
        """The pod's conditions, typed."""
        raise NotImplementedError

    def oom_killed(self) -> str | None:
        """:func:`~k8s_workloads.watch.failures.oom_killed_container` of this pod."""
        status = self.status()
        return None if status is None else status_oom_killed(status)

    def fatal_waiting(self, reasons: frozenset[str]) -> tuple[str, str] | None:
        """The first fatal waiting reason and its container, as the provider checks them."""
        status = self.status()
        return None if status is None else status_fatal_waiting(status, reasons)

    def failure_details(self) -> FailureDetails | None:
        """:func:`~k8s_workloads.watch.failures.collect_failure_details` of this pod."""
        status = self.status()
        return None if status is None else status_failure_details(status)

    def classify(self, details: FailureDetails) -> FailureClassification:
        """:func:`~k8s_workloads.watch.failures.classify_failure` of this pod, given its details."""
        status = self.status()
        if status is None:
            return classify_read(details, None, None, lambda: None)
        return classify_read(
            details, status_disruption(self.conditions()), status.reason, self.oom_killed
        )

    @property
    def failed_state(self) -> TaskInstanceState | CallbackState:
        if isinstance(self.key, CallbackKey):
            return CallbackState.FAILED
        return TaskInstanceState.FAILED

    def resolution(
        self,
        outcome: Outcome,
        reason: str,
        *,
        state: TaskInstanceState | CallbackState | ExecutorPseudoState | None = None,
        details: FailureDetails | None = None,
        classification: FailureClassification | None = None,
    ) -> Resolution:
        return Resolution(
            outcome,
            reason,
            self.key,
            state,
            self.pod_name,
            self.namespace,
            self.resource_version,
            details,
            classification,
            self.event_type,
            None,
            self.pod_uid,
        )

    def failed(
        self, reason: str, details: FailureDetails | None, classification: FailureClassification
    ) -> Resolution:
        return self.resolution(
            Outcome.FAILED,
            reason,
            state=self.failed_state,
            details=details,
            classification=classification,
        )


class _ManifestPod(_Pod):
    """A pod read from its decoded manifest (``json.loads``, a dict, a ``V1Pod``)."""

    __slots__ = ("_manifest", "_status", "_typed")

    def __init__(  # noqa: PLR0917 - private, on the hot path
        self,
        event_type: str,
        manifest: Mapping[str, Any],
        metadata: Mapping[str, Any],
        key: WorkloadKey,
        config: ResolverConfig,
        now: datetime.datetime | None,
        where: tuple[str | None, str | None, str | None],
    ) -> None:
        status = _map(manifest.get("status"))
        super().__init__(
            event_type,
            metadata.get("deletionTimestamp") is not None,
            key,
            config,
            now,
            *where,
            _str(metadata.get("uid")),
            status.get("phase"),
            status.get("reason"),
            _str(status.get("message")),
        )
        self._manifest = manifest
        self._status = status
        self._typed: PodStatus | None = None

    def manifest(self) -> Mapping[str, Any]:
        return self._manifest

    def status(self) -> PodStatus:
        typed = self._typed
        if typed is None:
            typed = self._typed = read_status(self._status)
        return typed

    def conditions(self) -> list[Condition]:
        return read_conditions(self._status)


class _TypedPod(_Pod):
    """A pod read from a watch line by :func:`~k8s_workloads.watch._watchjson.decode_pod_event`.

    Every field it reads has its API type, so the rules read it as they would read the
    line's full decoding: the readers here are those of :class:`_ManifestPod` without the
    type checks, and ``manifest()`` rebuilds the status for the failure readers.
    """

    __slots__ = ("_status",)

    def __init__(  # noqa: PLR0917 - private, on the hot path
        self,
        event_type: str,
        status: PodStatus | None,
        metadata: _watchjson.PodMetadata,
        key: WorkloadKey,
        config: ResolverConfig,
        now: datetime.datetime | None,
    ) -> None:
        # _Pod.__init__'s slots, set here: one call less per event (the hot path).
        self.event_type = event_type
        self.deleting = metadata.deletionTimestamp is not None
        self.key = key
        self.config = config
        self.now = now
        self.pod_name = metadata.name
        self.namespace = metadata.namespace
        self.resource_version = metadata.resourceVersion
        self.pod_uid = metadata.uid
        if status is None:
            self.phase = self.pod_reason = self.pod_message = None
        else:
            self.phase, self.pod_reason = status.phase, status.reason
            self.pod_message = status.message
        self._status = status

    def manifest(self) -> Mapping[str, Any]:
        if self._status is None:
            return {}
        return {"status": _watchjson.status_as_builtins(self._status)}

    def status(self) -> PodStatus | None:
        return self._status

    def conditions(self) -> list[Condition]:
        status = self._status
        return [] if status is None else _watchjson.decode_conditions(status)


_Rule: TypeAlias = "Callable[[_Pod], Resolution | None]"


@attrs.frozen
class _Row:
    """One row of the table: when, what, and the rule that decides it."""

    condition: str
    result: str
    rule: _Rule


def _deleted_gracefully(pod: _Pod) -> bool:
    # DELETED with a deletion timestamp: the executor (or a user) deleted it on purpose.
    return pod.event_type == "DELETED" and pod.deleting


def _adopted(pod: _Pod) -> Resolution | None:
    if pod.event_type != "DELETED" or pod.deleting:
        return None
    return pod.resolution(
        Outcome.ADOPTED,
        "deleted without a deletion timestamp: adopted by another scheduler",
        state=ExecutorPseudoState.ADOPTED,
    )


def _provider_failed(pod: _Pod) -> Resolution | None:
    if pod.pod_reason != "ProviderFailed":
        return None
    details: FailureDetails = {
        "pod_status": _str(pod.phase),
        "pod_reason": "ProviderFailed",
        "pod_message": pod.pod_message,
    }
    classification = pod.classify(details)
    return pod.failed(describe_failure(details, classification), details, classification)


def _pending_deleted(pod: _Pod) -> Resolution | None:
    if not _deleted_gracefully(pod):
        return None
    return pod.resolution(
        Outcome.DELETED_BEFORE_START, "deleted before it started: nothing to report"
    )


def _pending_fatal(pod: _Pod) -> Resolution | None:
    config = pod.config
    if config.pending is not None:
        verdict = demystify_pending(pod.manifest(), config.pending, pod.now)
        if verdict.failed and verdict.classification is not None:
            return pod.failed(
                f"Pod failed while pending: {verdict.reason}",
                verdict.details,
                verdict.classification,
            )
        return pod.resolution(Outcome.PENDING, verdict.reason)
    if not config.fatal_pending_reasons:
        return None
    fatal = pod.fatal_waiting(config.fatal_pending_reasons)
    if fatal is None:
        return None
    reason, container = fatal
    details: FailureDetails = {
        "pod_status": "Pending",
        "container_state": "waiting",
        "container_reason": reason,
        "container_name": container,
    }
    return pod.failed(
        f"Pod failed because of {reason} (container {container}, while pending)",
        details,
        FailureClassification(FailureKind.APPLICATION, False, reason, f"container {container}"),
    )


def _pending(pod: _Pod) -> Resolution:
    return pod.resolution(Outcome.PENDING, "pending")


def _failed(pod: _Pod) -> Resolution:
    details = pod.failure_details()
    classification = pod.classify(details or {})
    return pod.failed(describe_failure(details, classification), details, classification)


def _succeeded(pod: _Pod) -> Resolution:
    oom = pod.oom_killed()
    if oom is not None and pod.config.oom_success_is_failure:
        details: FailureDetails = {
            "pod_status": "Succeeded",
            "pod_reason": None,
            "pod_message": None,
            "container_reason": "OOMKilled",
            "container_name": oom,
        }
        return pod.failed(
            f"Pod failed because of OOMKilled (container {oom}, although the pod succeeded)",
            details,
            FailureClassification(FailureKind.APPLICATION, False, "OOMKilled", f"container {oom}"),
        )
    # The pod exited 0: a callback has succeeded; a task's state must be read from Airflow.
    state = (
        CallbackState.SUCCESS if isinstance(pod.key, CallbackKey) else ExecutorPseudoState.LOOKUP
    )
    reason = "succeeded" if oom is None else f"succeeded, although container {oom} was OOMKilled"
    return pod.resolution(Outcome.SUCCEEDED, reason, state=state)


def _running_deleted(pod: _Pod) -> Resolution | None:
    if not _deleted_gracefully(pod):
        return None
    details: FailureDetails = {
        "pod_status": "Running",
        "pod_reason": "PodDeleted",
        "pod_message": None,
    }
    classification = classify_failure({}, details, deleted_while_running=True)
    return pod.failed(
        "Pod failed because of PodDeleted (deleted while running)", details, classification
    )


def _running(pod: _Pod) -> Resolution:
    report = isinstance(pod.key, CallbackKey) and pod.config.report_callback_running
    return pod.resolution(
        Outcome.RUNNING, "running", state=CallbackState.RUNNING if report else None
    )


def _other_phase(pod: _Pod) -> Resolution:
    return pod.resolution(Outcome.UNKNOWN_PHASE, f"pod phase {shown(pod.phase)}: nothing to report")


_REVOKED_ROW = (
    "pod has the airflow_pod_revoked label",
    "REVOKED: no state (the executor deleted it)",
)
"""The first row, applied with the pod's identity, before any other (:func:`_identify`)."""

_EVERY_PHASE: tuple[_Row, ...] = (
    _Row("DELETED without deletionTimestamp", "ADOPTED (another scheduler owns it now)", _adopted),
    _Row(
        "status.reason is ProviderFailed",
        "FAILED (virtual kubelet could not run it)",
        _provider_failed,
    ),
)
"""The rows read before the phase, whatever it is."""

_BY_PHASE: dict[str, tuple[_Row, ...]] = {
    "Pending": (
        _Row(
            "Pending, DELETED with deletionTimestamp",
            "DELETED_BEFORE_START: no state",
            _pending_deleted,
        ),
        _Row(
            "Pending, fatal waiting reason",
            "FAILED (init containers, then the first main one)",
            _pending_fatal,
        ),
        _Row("Pending otherwise", "PENDING: no state", _pending),
    ),
    "Failed": (_Row("Failed", "FAILED with failure details", _failed),),
    "Succeeded": (
        _Row(
            "Succeeded",
            "SUCCEEDED: tasks LOOKUP (read the state), callbacks SUCCESS",
            _succeeded,
        ),
    ),
    "Running": (
        _Row(
            "Running, DELETED with deletionTimestamp",
            "FAILED (PodDeleted, infrastructure)",
            _running_deleted,
        ),
        _Row("Running otherwise", "RUNNING: tasks no state, callbacks RUNNING", _running),
    ),
}
"""Each phase's own rows, top to bottom; the last row of each always decides."""

_OTHER_PHASE = _Row("any other phase", "UNKNOWN_PHASE: no state", _other_phase)


def _table() -> tuple[tuple[str, str], ...]:
    """The table the rules run, as (condition, result) rows, in the order they apply."""
    rows = [*_EVERY_PHASE, *(row for rows in _BY_PHASE.values() for row in rows), _OTHER_PHASE]
    return (_REVOKED_ROW, *((row.condition, row.result) for row in rows))


DECISION_TABLE: tuple[tuple[str, str], ...] = _table()
"""The provider's ``process_status`` rows, top to bottom, as :func:`resolve_event` applies
them: (condition, result), read from the rows the rules run (one text, never typed twice)."""


_RULES_BY_PHASE: dict[str, tuple[_Rule, ...]] = {
    phase: tuple(row.rule for row in (*_EVERY_PHASE, *rows)) for phase, rows in _BY_PHASE.items()
}
"""The rules a pod of each phase runs, in order: the table's rows, flattened."""
_OTHER_RULES: tuple[_Rule, ...] = tuple(row.rule for row in (*_EVERY_PHASE, _OTHER_PHASE))


def _apply_rows(pod: _Pod) -> Resolution:
    phase = pod.phase
    rules = _RULES_BY_PHASE.get(phase, _OTHER_RULES) if isinstance(phase, str) else _OTHER_RULES
    for rule in rules:
        resolution = rule(pod)
        if resolution is not None:
            return resolution
    raise AssertionError(f"no row decides phase {phase!r}")  # pragma: no cover - last rows


_NO_LABELS: Mapping[str, Any] = types.MappingProxyType({})


def _identify(
    event_type: str,
    labels: Mapping[str, Any],
    annotations: Mapping[str, Any],
    where: tuple[str | None, str | None, str | None],
    config: ResolverConfig,
) -> WorkloadKey | Resolution:
    """The workload a pod event is about, or the Resolution of a pod that names none."""
    if POD_REVOKED_LABEL in labels:
        outcome, reason = Outcome.REVOKED, "revoked by the executor: ignored"
    elif labels.get(KUBERNETES_EXECUTOR_LABEL) != TRUE_LABEL_VALUE:
        outcome, reason = Outcome.FOREIGN, "not a KubernetesExecutor pod: ignored"
    else:
        try:
            return annotations_to_key(annotations, labels, airflow_version=config.airflow_version)
        except InvalidAnnotations as error:
            kind = "callback pod" if is_callback_pod(annotations, labels) else "pod"
            outcome, reason = Outcome.UNDECODABLE, f"undecodable {kind}: {error}"
        except InvalidVersion as error:
            outcome, reason = Outcome.UNDECODABLE, f"bad airflow_version in the config: {error}"
    pod_name, namespace, resource_version = where
    return Resolution(
        outcome,
        reason,
        pod_name=pod_name,
        namespace=namespace,
        resource_version=resource_version,
        event_type=event_type,
    )


def _resolve_pod(
    event_type: str,
    manifest: Mapping[str, Any],
    metadata: Mapping[str, Any],
    resource_version: str | None,
    *,
    config: ResolverConfig,
    now: datetime.datetime | None,
) -> Resolution:
    where = (_str(metadata.get("name")), _str(metadata.get("namespace")), resource_version)
    labels = _map(metadata.get("labels"))
    annotations = _map(metadata.get("annotations"))
    key = _identify(event_type, labels, annotations, where, config)
    if isinstance(key, Resolution):
        return key
    return _apply_rows(_ManifestPod(event_type, manifest, metadata, key, config, now, where))


# --- from a watch line ----------------------------------------------------------------

_POD_EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED"})


def resolve_event_json(
    text: str | bytes,
    *,
    config: ResolverConfig = ResolverConfig(),  # frozen, so one shared default is safe
    now: datetime.datetime | None = None,
) -> Resolution:
    """Resolve one watch event given as JSON text; total, never raises.

    The same Resolution as ``resolve_event(json.loads(text), config=config, now=now)``,
    field for field, for any text, at a fraction of the cost: a pod event is decoded only
    as far as the rules read it (its type, five metadata fields, the labels and
    annotations the rules read by name, the status fields failure details read; the
    conditions only when a failure is classified), into typed structures, and the rest
    of it (``spec``, ``managedFields``, other labels) is skipped. A text the typed
    decoding cannot take (a field the rules read of an unexpected type, an ERROR or
    BOOKMARK event, anything but a pod) is decoded in full and resolved by
    :func:`resolve_event`. Text that is not JSON is ``MALFORMED`` (``not JSON: ...``).
    """
    if config.pending is None:  # the pending policy reads what the typed pod leaves out
        event = _watchjson.decode_pod_event(text)
        if event is not None:
            event_type, obj = event.type, event.object
            if (
                event_type is not None
                and event_type in _POD_EVENT_TYPES
                and obj is not None
                and obj.metadata is not None
            ):  # resolve_typed_event's checks, inline
                try:
                    return _resolve_typed(event_type, obj, obj.metadata, config, now)
                except _watchjson.UntypedFieldError:
                    pass  # a field read on demand is not of its type: the total path
    try:
        decoded = _watchjson.decode_event(text)
    except (ValueError, RecursionError) as error:
        return Resolution(Outcome.MALFORMED, f"not JSON: {error}")
    return resolve_event(decoded, config=config, now=now)


def resolve_typed_event(
    event: _watchjson.PodEvent | _watchjson.SpecPodEvent,
    *,
    config: ResolverConfig,
    now: datetime.datetime | None,
) -> Resolution | None:
    """The Resolution of a typed pod event, or None when the total path must read it.

    For the library's readers of watch text (:mod:`~k8s_workloads.watch.streams`); None for
    anything but an ADDED, MODIFIED or DELETED event with metadata, under the pending
    policy, which reads fields the typed decoding leaves out, and when a field decoded only
    if a rule reads it (the conditions) does not have its API type.
    """
    event_type, obj = event.type, event.object
    if (
        config.pending is not None
        or event_type is None
        or event_type not in _POD_EVENT_TYPES
        or obj is None
        or obj.metadata is None
    ):
        return None
    try:
        return _resolve_typed(event_type, obj, obj.metadata, config, now)
    except _watchjson.UntypedFieldError:  # a field read on demand is not of its type
        return None


def _resolve_typed(
    event_type: str,
    obj: _watchjson.PodObject,
    metadata: _watchjson.PodMetadata,
    config: ResolverConfig,
    now: datetime.datetime | None,
) -> Resolution:
    key: WorkloadKey | None = _typed_task_key(metadata.labels, metadata.annotations)
    if key is None:
        labels, annotations = metadata.labels, metadata.annotations
        identified = _identify(
            event_type,
            _NO_LABELS if labels is None else labels.as_map(),
            _NO_LABELS if annotations is None else annotations.as_map(),
            (metadata.name, metadata.namespace, metadata.resourceVersion),
            config,
        )
        if isinstance(identified, Resolution):
            return identified
        key = identified
    return _apply_rows(_TypedPod(event_type, obj.status, metadata, key, config, now))


def _typed_task_key(
    labels: _watchjson.PodLabels | None, annotations: _watchjson.PodAnnotations | None
) -> TaskInstanceKey | None:
    # The task pod of nearly every event, as _identify decodes it: not revoked, the
    # executor's, no workload type (so no callback), the four fields a run's task pod
    # has. None for anything else, which _identify reads in full (and explains).
    unset = msgspec.UNSET
    if (
        labels is None
        or annotations is None
        or labels.revoked is not unset
        or labels.executor != TRUE_LABEL_VALUE
        or labels.workload_type is not unset
        or annotations.callback_id is not unset
    ):
        return None
    dag_id, task_id, try_text = annotations.dag_id, annotations.task_id, annotations.try_number
    run_id, map_text = annotations.run_id, annotations.map_index
    if dag_id is unset or task_id is unset or try_text is unset or run_id is unset or not run_id:
        return None
    try:
        map_value = None if map_text is unset else map_text
        return _cached_task_key(dag_id, task_id, try_text, map_value, run_id)
    except InvalidAnnotations:
        return None

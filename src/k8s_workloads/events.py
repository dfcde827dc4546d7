"""Pod watch events to workload states: :func:`resolve_event`.

One watch event in — ``{"type": ..., "object": ...}`` from the API server's watch stream,
``kubectl get pods --watch --output-watch-events -o json`` or the kubernetes client's
``Watch.stream`` — and one :class:`Resolution` out: which workload, which state, why.

The rules for task pods are the provider's watcher (``process_status``), row by row, in
:data:`DECISION_TABLE` order. Callback pods (Airflow 3.3+) are recognised before any task
field is read and resolve to :class:`~k8s_workloads.states.CallbackState` values. The
function is total: whatever the input, it returns a Resolution whose ``outcome`` says
what happened, and never raises.
"""

from __future__ import annotations

import enum
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from k8s_workloads import _config as _checks
from k8s_workloads._display import shown
from k8s_workloads._json import as_int
from k8s_workloads._json import as_list as _list
from k8s_workloads._json import as_map as _map
from k8s_workloads._json import as_str as _str
from k8s_workloads.codec import InvalidAnnotations, annotations_to_key, is_callback_pod
from k8s_workloads.compat import InvalidVersion
from k8s_workloads.failures import (
    DEFAULT_FATAL_PENDING_REASONS,
    FailureClassification,
    FailureKind,
    PendingPolicy,
    classify_failure,
    collect_failure_details,
    demystify_pending,
    describe_failure,
    oom_killed_container,
)
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

if TYPE_CHECKING:
    import datetime
    from collections.abc import Iterable

__all__ = [
    "DECISION_TABLE",
    "Outcome",
    "Resolution",
    "ResolverConfig",
    "resolve_event",
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


DECISION_TABLE: tuple[tuple[str, str], ...] = (
    ("pod has the airflow_pod_revoked label", "REVOKED: no state (the executor deleted it)"),
    ("DELETED without deletionTimestamp", "ADOPTED (another scheduler owns it now)"),
    ("status.reason is ProviderFailed", "FAILED (virtual kubelet could not run it)"),
    ("Pending, DELETED with deletionTimestamp", "DELETED_BEFORE_START: no state"),
    ("Pending, fatal waiting reason", "FAILED (init containers, then the first main one)"),
    ("Pending otherwise", "PENDING: no state"),
    ("Failed", "FAILED with failure details"),
    ("Succeeded", "SUCCEEDED: tasks LOOKUP (read the state), callbacks SUCCESS"),
    ("Running, DELETED with deletionTimestamp", "FAILED (PodDeleted, infrastructure)"),
    ("Running otherwise", "RUNNING: tasks no state, callbacks RUNNING"),
    ("any other phase", "UNKNOWN_PHASE: no state"),
)
"""The provider's ``process_status`` rows, top to bottom, as :func:`resolve_event` applies them."""


def _reason_set(reasons: Iterable[str]) -> frozenset[str]:
    if isinstance(reasons, str):  # a comma list, as the provider's config option
        return frozenset(part.strip() for part in reasons.split(",") if part.strip())
    return frozenset(reasons)


@attrs.frozen
class ResolverConfig:
    """How events are read. The defaults reproduce the provider's watcher."""

    airflow_version: str | None = attrs.field(default=None, validator=_checks.airflow_version)
    """Callback pods resolve only for 3.3+; None treats them as undecodable. Parsed here:
    a text that is not a version is an :class:`InvalidConfig`."""
    fatal_pending_reasons: frozenset[str] = attrs.field(
        default=DEFAULT_FATAL_PENDING_REASONS, converter=_reason_set
    )
    """Waiting reasons that fail a Pending pod at once (provider default); empty disables."""
    pending: PendingPolicy | None = None
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
            record["classification"] = (
                None if classification is None else classification.to_json()
            )
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
    # A kubernetes model object (36.x or 37.x): only now is the adapter, and with it the
    # kubernetes package, imported.
    from k8s_workloads import adapters  # noqa: PLC0415

    try:
        with warnings.catch_warnings():
            # pydantic (kubernetes 37) warns about the odd values it then serialises anyway.
            warnings.simplefilter("ignore")
            return adapters.to_manifest_object(obj)
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


def _fatal_waiting(status: Mapping[str, Any], reasons: frozenset[str]) -> tuple[str, str] | None:
    # The provider checks every init container, then only the first main container.
    candidates = [
        *_list(status.get("initContainerStatuses")),
        *_list(status.get("containerStatuses"))[:1],
    ]
    for container in candidates:
        container_map = _map(container)
        waiting = _map(_map(container_map.get("state")).get("waiting"))
        reason = waiting.get("reason")
        if not isinstance(reason, str) or reason not in reasons:
            continue
        # A registry throttling the kubelet is not a bad image (apache/airflow#37670).
        if reason == "ErrImagePull" and waiting.get("message") == "pull QPS exceeded":
            continue
        return reason, _str(container_map.get("name")) or "unknown"
    return None


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


@attrs.define  # private and never changed; frozen attrs costs ~0.7 µs per event here
class _Pod:
    """One pod event being resolved: what every rule of the table reads."""

    event_type: str
    manifest: Mapping[str, Any]
    status: Mapping[str, Any]
    deleting: bool
    key: WorkloadKey
    config: ResolverConfig
    now: datetime.datetime | None
    pod_name: str | None
    namespace: str | None
    resource_version: str | None
    pod_uid: str | None

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
            key=self.key,
            state=state,
            pod_name=self.pod_name,
            namespace=self.namespace,
            resource_version=self.resource_version,
            failure_details=details,
            classification=classification,
            event_type=self.event_type,
            pod_uid=self.pod_uid,
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


def _resolve_pod(
    event_type: str,
    manifest: Mapping[str, Any],
    metadata: Mapping[str, Any],
    resource_version: str | None,
    *,
    config: ResolverConfig,
    now: datetime.datetime | None,
) -> Resolution:
    pod_name = _str(metadata.get("name"))
    namespace = _str(metadata.get("namespace"))
    labels = _map(metadata.get("labels"))
    annotations = _map(metadata.get("annotations"))

    def skipped(outcome: Outcome, reason: str) -> Resolution:
        return Resolution(
            outcome,
            reason,
            pod_name=pod_name,
            namespace=namespace,
            resource_version=resource_version,
            event_type=event_type,
        )

    if POD_REVOKED_LABEL in labels:
        return skipped(Outcome.REVOKED, "revoked by the executor: ignored")
    if labels.get(KUBERNETES_EXECUTOR_LABEL) != TRUE_LABEL_VALUE:
        return skipped(Outcome.FOREIGN, "not a KubernetesExecutor pod: ignored")
    try:
        key = annotations_to_key(annotations, labels, airflow_version=config.airflow_version)
    except InvalidAnnotations as error:
        kind = "callback pod" if is_callback_pod(annotations, labels) else "pod"
        return skipped(Outcome.UNDECODABLE, f"undecodable {kind}: {error}")
    except InvalidVersion as error:
        return skipped(Outcome.UNDECODABLE, f"bad airflow_version in the config: {error}")
    pod = _Pod(
        event_type=event_type,
        manifest=manifest,
        status=_map(manifest.get("status")),
        deleting=metadata.get("deletionTimestamp") is not None,
        key=key,
        config=config,
        now=now,
        pod_name=pod_name,
        namespace=namespace,
        resource_version=resource_version,
        pod_uid=_str(metadata.get("uid")),
    )
    if event_type == "DELETED" and not pod.deleting:
        return pod.resolution(
            Outcome.ADOPTED,
            "deleted without a deletion timestamp: adopted by another scheduler",
            state=ExecutorPseudoState.ADOPTED,
        )
    if pod.status.get("reason") == "ProviderFailed":
        details: FailureDetails = {
            "pod_status": _str(pod.status.get("phase")),
            "pod_reason": "ProviderFailed",
            "pod_message": _str(pod.status.get("message")),
        }
        classification = classify_failure(manifest, details)
        return pod.failed(describe_failure(details, classification), details, classification)
    phase = pod.status.get("phase")
    handler = _PHASES.get(phase) if isinstance(phase, str) else None
    if handler is None:
        return pod.resolution(Outcome.UNKNOWN_PHASE, f"pod phase {shown(phase)}: nothing to report")
    return handler(pod)


def _resolve_failed(pod: _Pod) -> Resolution:
    details = collect_failure_details(pod.manifest)
    classification = classify_failure(pod.manifest, details)
    return pod.failed(describe_failure(details, classification), details, classification)


def _resolve_running(pod: _Pod) -> Resolution:
    if pod.event_type == "DELETED" and pod.deleting:
        details: FailureDetails = {
            "pod_status": "Running",
            "pod_reason": "PodDeleted",
            "pod_message": None,
        }
        classification = classify_failure(pod.manifest, details, deleted_while_running=True)
        return pod.failed(
            "Pod failed because of PodDeleted (deleted while running)", details, classification
        )
    report = isinstance(pod.key, CallbackKey) and pod.config.report_callback_running
    return pod.resolution(
        Outcome.RUNNING, "running", state=CallbackState.RUNNING if report else None
    )


def _resolve_succeeded(pod: _Pod) -> Resolution:
    oom = oom_killed_container(pod.manifest)
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


def _resolve_pending(pod: _Pod) -> Resolution:
    if pod.event_type == "DELETED" and pod.deleting:
        return pod.resolution(
            Outcome.DELETED_BEFORE_START, "deleted before it started: nothing to report"
        )
    if pod.config.pending is not None:
        verdict = demystify_pending(pod.manifest, pod.config.pending, pod.now)
        if verdict.failed and verdict.classification is not None:
            return pod.failed(
                f"Pod failed while pending: {verdict.reason}",
                verdict.details,
                verdict.classification,
            )
        return pod.resolution(Outcome.PENDING, verdict.reason)
    if pod.config.fatal_pending_reasons:
        fatal = _fatal_waiting(pod.status, pod.config.fatal_pending_reasons)
        if fatal is not None:
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
                FailureClassification(
                    FailureKind.APPLICATION, False, reason, f"container {container}"
                ),
            )
    return pod.resolution(Outcome.PENDING, "pending")


_PHASES = {
    "Pending": _resolve_pending,
    "Failed": _resolve_failed,
    "Succeeded": _resolve_succeeded,
    "Running": _resolve_running,
}
"""Pod phase to the rows of :data:`DECISION_TABLE` that apply to it."""

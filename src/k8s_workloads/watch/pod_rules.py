"""The watcher's rules for one pod event, as rows: the provider's ``process_status``,
top to bottom, and :data:`DECISION_TABLE`, their text, read from the rows the rules run.

A pod event is read in two steps. First its identity, from the labels and annotations
alone (:func:`~k8s_workloads.watch.events.resolve_event` does it): a revoked pod, a pod
that is not the executor's and one whose annotations name no workload stop there. Then
the rows here: the rows every phase shares, then each phase's own rows. A row is its
condition and result (the documentation) and a rule: the Resolution when its condition
holds, else None. The rules read a pod through :class:`_Pod`, which a decoded manifest
(:class:`_ManifestPod`) and a typed watch line (:class:`_TypedPod`) both are, so both
ways of reading an event run the same rows.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, TypeAlias

import attrs

from k8s_workloads.display import shown
from k8s_workloads.json_values import as_map as _map
from k8s_workloads.json_values import as_str as _str
from k8s_workloads.keys import RUN_ONCE_KEYS, WorkloadKey
from k8s_workloads.states import (
    CallbackState,
    ExecutorPseudoState,
    FailureDetails,
    TaskInstanceState,
)
from k8s_workloads.watch import decoding
from k8s_workloads.watch._podstatus import Condition, PodStatus, read_conditions, read_status
from k8s_workloads.watch.failures import (
    FailureClassification,
    FailureKind,
    classify_failure,
    classify_read,
    demystify_pending,
    describe_failure,
    status_disruption,
    status_failure_details,
    status_fatal_waiting,
    status_oom_killed,
)
from k8s_workloads.watch.resolution import Outcome, Resolution, ResolverConfig

if TYPE_CHECKING:
    import datetime
    from collections.abc import Callable, Mapping

__all__ = ["DECISION_TABLE"]


@dataclasses.dataclass(slots=True, eq=False)  # a plain __init__: the hot path (attrs adds ~1 µs)
class _Pod:
    """One pod event being resolved: what every rule of the table reads."""

    event_type: str
    deleting: bool
    key: WorkloadKey
    config: ResolverConfig
    now: datetime.datetime | None
    pod_name: str | None
    namespace: str | None
    resource_version: str | None
    pod_uid: str | None
    phase: object
    """``status.phase`` as sent (any JSON value)."""
    pod_reason: object
    """``status.reason`` as sent (any JSON value)."""
    pod_message: str | None

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
        if isinstance(self.key, RUN_ONCE_KEYS):
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
    """A pod read from a watch line by :func:`~k8s_workloads.watch.decoding.decode_pod_event`.

    Every field it reads has its API type, so the rules read it as they would read the
    line's full decoding: the readers here are those of :class:`_ManifestPod` without the
    type checks, and ``manifest()`` rebuilds the status for the failure readers.
    """

    __slots__ = ("_status",)

    def __init__(  # noqa: PLR0917 - private, on the hot path
        self,
        event_type: str,
        status: PodStatus | None,
        metadata: decoding.PodMetadata,
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
        return {"status": decoding.status_as_builtins(self._status)}

    def status(self) -> PodStatus | None:
        return self._status

    def conditions(self) -> list[Condition]:
        status = self._status
        return [] if status is None else decoding.decode_conditions(status)


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
    # The pod exited 0: a callback (or generic workload) has succeeded; a task's state must
    # be read from Airflow.
    state = (
        CallbackState.SUCCESS if isinstance(pod.key, RUN_ONCE_KEYS) else ExecutorPseudoState.LOOKUP
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
    report = isinstance(pod.key, RUN_ONCE_KEYS) and pod.config.report_callback_running
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
            "SUCCEEDED: tasks LOOKUP (read the state), callbacks and generic workloads SUCCESS",
            _succeeded,
        ),
    ),
    "Running": (
        _Row(
            "Running, DELETED with deletionTimestamp",
            "FAILED (PodDeleted, infrastructure)",
            _running_deleted,
        ),
        _Row(
            "Running otherwise",
            "RUNNING: tasks no state, callbacks and generic workloads RUNNING",
            _running,
        ),
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

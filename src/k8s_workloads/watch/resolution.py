"""What reading one watch event gives: :class:`Resolution` (which workload, which
state, why), its :class:`Outcome`, and :class:`ResolverConfig`, how events are read.

:func:`~k8s_workloads.watch.events.resolve_event` makes them; the executor turns a
Resolution into a result with :meth:`Resolution.to_result`.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

import attrs

from k8s_workloads import config_checks as _checks
from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.states import (
    CallbackResult,
    CallbackState,
    ExecutorPseudoState,
    FailureDetails,
    GenericResult,
    TaskInstanceState,
    TaskResult,
    WorkloadResult,
)
from k8s_workloads.watch.failures import (
    DEFAULT_FATAL_PENDING_REASONS,
    FailureClassification,
    PendingPolicy,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from k8s_workloads.compat import AirflowVersion, VersionLike

__all__ = ["Outcome", "Resolution", "ResolverConfig"]


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
    """Callback pods resolve only for 3.3+; None treats them as undecodable (task and
    generic workloads' pods resolve with or without it: an executor with no Airflow leaves
    it None). Text is parsed here, once: one that is not a version is an
    :class:`InvalidConfig` naming the field."""
    fatal_pending_reasons: frozenset[str] = attrs.field(
        default=DEFAULT_FATAL_PENDING_REASONS, converter=_reason_set, validator=_checks.text_set
    )
    """Waiting reasons that fail a Pending pod at once (provider default); empty disables."""
    pending: PendingPolicy | None = attrs.field(
        default=None, validator=_checks.kind(PendingPolicy, optional=True)
    )
    """Opt-in grace-period reading of Pending pods; replaces ``fatal_pending_reasons``."""
    report_callback_running: bool = attrs.field(default=True, validator=_checks.boolean)
    """Report ``CallbackState.RUNNING`` for running callback pods (upstream never does),
    and for generic workloads' pods."""
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
        if isinstance(self.key, GenericKey) and not isinstance(self.state, TaskInstanceState):
            return GenericResult(self.key, self.state, *where, self.failure_details, pod_uid=uid)
        if isinstance(self.key, TaskInstanceKey) and not isinstance(self.state, CallbackState):
            return TaskResult(self.key, self.state, *where, self.failure_details, pod_uid=uid)
        return None

"""Why a pod failed: failure details, classification, and pending-pod demystification.

:func:`collect_failure_details` follows the provider's ``collect_pod_failure_details``.
:func:`classify_failure` says whether a failure was the infrastructure's (eviction,
preemption, node loss, a deleted pod) or the application's (OOMKilled, a non-zero exit),
reading the ``DisruptionTarget`` pod condition that no reference system reads, and always
keeping the original reason. :func:`demystify_pending` is the opt-in, Flyte-style reading
of a Pending pod with per-reason grace periods; it takes ``now`` and never reads a clock.

Everything here works on pod manifests (camelCase dicts) and is total: odd shapes give
``None`` / "unknown", never an exception.
"""

from __future__ import annotations

import datetime
import enum
from typing import TYPE_CHECKING, Any, Literal

import attrs

from k8s_workloads import config_checks as _checks
from k8s_workloads.display import shown
from k8s_workloads.json_values import as_list as _list
from k8s_workloads.json_values import as_map as _map
from k8s_workloads.json_values import as_str as _str
from k8s_workloads.watch._podstatus import (
    Condition,
    ContainerStatus,
    PodStatus,
    read_conditions,
    read_status,
)
from k8s_workloads.watch.last_words import last_words

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from k8s_workloads.states import FailureDetails

__all__ = [
    "DEFAULT_FATAL_PENDING_REASONS",
    "DISRUPTION_REASONS",
    "FATAL_PENDING_REASONS",
    "INFRASTRUCTURE_POD_REASONS",
    "PROVIDER_FATAL_PENDING_REASONS",
    "FailureClassification",
    "FailureKind",
    "PendingPolicy",
    "PendingVerdict",
    "classify_failure",
    "collect_failure_details",
    "demystify_pending",
    "describe_failure",
    "describe_fatal_pending_reasons",
    "describe_pod_failure",
    "oom_killed_container",
]

FATAL_PENDING_REASONS: tuple[tuple[str, bool, str], ...] = (
    # (the kubelet's waiting reason, whether the provider's default list has it, why the pod
    # never starts). Spelled as the kubelet writes them: pkg/kubelet/images/types.go (the
    # image errors) and pkg/kubelet/container/sync_result.go (CreateContainer*).
    (
        "CreateContainerConfigError",
        True,
        "The container's configuration cannot be made (a missing Secret or ConfigMap key).",
    ),
    ("ErrImagePull", True, "The image could not be pulled."),
    (
        "ImagePullBackOff",
        False,
        (
            "The kubelet waits before pulling a failed image again: where a pod that cannot "
            "pull its image stays (ErrImagePull shows only at each pull), and all a pod "
            "adopted or re-listed then shows."
        ),
    ),
    ("CreateContainerError", True, "The runtime refused to create the container."),
    ("ImageInspectError", True, "The pulled image cannot be read."),
    ("InvalidImageName", True, "The image reference cannot be parsed."),
    (
        "ErrImageNeverPull",
        False,
        "imagePullPolicy Never and the image is not on the node: no pull is ever tried.",
    ),
)
"""The waiting reasons that fail a Pending pod under the default rules, and why.

Left out on purpose: ``CrashLoopBackOff`` (an init container restarted under
``restartPolicy: OnFailure`` or ``Always`` may succeed on a later run, the "wait for a
dependency" pattern; under ``Never``, the executor's, its failure fails the pod instead),
``RegistryUnavailable`` (the registry is down, not the image wrong; the back-off after it is
``ImagePullBackOff`` all the same), ``ContainerCreating`` and ``PodInitializing`` (progress).
An image pull held back by the kubelet's own rate limit (``pull QPS exceeded``) never fails
a pod (:func:`status_fatal_waiting`)."""

DEFAULT_FATAL_PENDING_REASONS: frozenset[str] = frozenset(
    reason for reason, _provider, _why in FATAL_PENDING_REASONS
)
"""The reasons of :data:`FATAL_PENDING_REASONS`: the provider's
``worker_pod_pending_fatal_container_state_reasons`` default and, unlike it,
``ImagePullBackOff`` and ``ErrImageNeverPull``."""

PROVIDER_FATAL_PENDING_REASONS: frozenset[str] = frozenset(
    reason for reason, provider, _why in FATAL_PENDING_REASONS if provider
)
"""The provider's ``worker_pod_pending_fatal_container_state_reasons`` default, as it is."""

_PULL_THROTTLED = "pull QPS exceeded"
"""The kubelet's message when its own pull rate limit (``registryPullQPS``) holds a pull
back: the image may be fine (apache/airflow#37670)."""


def describe_fatal_pending_reasons() -> str:
    """:data:`FATAL_PENDING_REASONS` as a Markdown table (docs/decision-rules.md)."""
    lines = [
        "| waiting reason | provider default | why the pod never starts |",
        "| --- | --- | --- |",
    ]
    lines += [
        f"| {reason} | {'yes' if provider else 'no'} | {why} |"
        for reason, provider, why in FATAL_PENDING_REASONS
    ]
    return "\n".join(lines)


INFRASTRUCTURE_POD_REASONS: frozenset[str] = frozenset(
    {
        "Evicted",  # kubelet node-pressure eviction
        "Preempting",  # preempted by a higher-priority pod
        "NodeShutdown",  # graceful node shutdown (GKE preemption, spot reclaim)
        "NodeLost",  # node controller: the node stopped reporting
        "NodeAffinity",  # kubelet admission rejected the pod before node labels applied
        "UnexpectedAdmissionError",  # kubelet admission failed (device plugin, etc.)
        "Shutdown",
        "Terminated",
        "PodDeleted",  # a running pod deleted by someone else (reported by the resolver)
        "ProviderFailed",  # virtual kubelet could not run the pod
    }
)
"""Pod ``status.reason`` values that mean the infrastructure, not the workload, failed."""

DISRUPTION_REASONS: frozenset[str] = frozenset(
    {
        "PreemptionByScheduler",
        "TerminationByKubelet",
        "EvictionByEvictionAPI",
        "DeletionByTaintManager",
        "DeletionByPodGC",
    }
)
"""Reasons of the ``DisruptionTarget`` pod condition (Kubernetes 1.26+)."""

_APPLICATION_CONTAINER_REASONS = frozenset({"OOMKilled", "Error", "ContainerCannotRun"})


class FailureKind(enum.Enum):
    """Whose fault a failure was."""

    INFRASTRUCTURE = "infrastructure"
    """The cluster's: retrying on healthy capacity should succeed."""
    APPLICATION = "application"
    """The workload's: its own retry policy decides."""
    UNKNOWN = "unknown"
    """No evidence either way."""


@attrs.frozen
class FailureClassification:
    """A failure's kind, whether a retry is likely to help, and the evidence."""

    kind: FailureKind
    retryable: bool
    """True when the failure is not the workload's and a plain retry should fix it."""
    reason: str | None
    """The original reason (``Evicted``, ``OOMKilled``, ``EvictionByEvictionAPI`` …)."""
    evidence: str
    """Where the reason was read: ``pod reason``, ``DisruptionTarget condition`` …"""

    def to_json(self) -> dict[str, Any]:
        """The classification as a JSON object: ``kind`` (its value), ``retryable``,
        ``reason`` and ``evidence``."""
        return {
            "kind": self.kind.value,
            "retryable": self.retryable,
            "reason": self.reason,
            "evidence": self.evidence,
        }


_ContainerType = Literal["init", "main"]

_CONTAINER_LISTS: tuple[tuple[str, _ContainerType], ...] = (
    ("initContainerStatuses", "init"),
    ("containerStatuses", "main"),
)
"""The status lists of the containers a workload runs, init containers first."""


def _status_of(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return _map(_map(pod).get("status"))


def container_failure(
    statuses: Iterable[ContainerStatus] | None, container_type: _ContainerType
) -> FailureDetails | None:
    """The first container that terminated with a non-zero exit code (reason not
    ``Completed``), else the last one waiting, as failure details; None for neither.

    A missing exit code counts as 0, as the provider does."""
    waiting: FailureDetails | None = None
    for container in statuses or ():
        state = container.state
        if state is None:
            continue
        terminated = state.terminated
        if terminated is not None:
            code = terminated.exitCode
            if code and terminated.reason != "Completed":
                return {
                    "container_state": "terminated",
                    "container_reason": terminated.reason,
                    "container_message": terminated.message,
                    "exit_code": code,
                    "container_type": container_type,
                    "container_name": container.name or "unknown",
                }
        elif state.waiting is not None:
            waiting = {
                "container_state": "waiting",
                "container_reason": state.waiting.reason,
                "container_message": state.waiting.message,
                "container_type": container_type,
                "container_name": container.name or "unknown",
            }
    return waiting


def status_failure_details(status: PodStatus) -> FailureDetails | None:
    """:func:`collect_failure_details` of a typed status (the rule's one home)."""
    if status.phase != "Failed":
        return None
    details: FailureDetails = {
        "pod_status": "Failed",
        "pod_reason": status.reason,
        "pod_message": status.message,
    }
    container = container_failure(status.initContainerStatuses, "init")
    if not container:
        container = container_failure(status.containerStatuses, "main")
    if container:
        details.update(container)
    return details


def collect_failure_details(pod: Mapping[str, Any]) -> FailureDetails | None:
    """Failure details of a Failed pod (None for any other phase), as the provider's.

    Pod phase, reason and message; then the first init container that terminated with a
    non-zero exit code (reason not ``Completed``), else the first such main container,
    else the last waiting container of the first list that has one.
    """
    return status_failure_details(read_status(_status_of(pod)))


def status_disruption(conditions: Iterable[Condition]) -> str | None:
    """The reason of a true ``DisruptionTarget`` condition (or ``"DisruptionTarget"``)."""
    for condition in conditions:
        if condition.type == "DisruptionTarget" and condition.status == "True":
            return condition.reason or "DisruptionTarget"
    return None


def oom_killed_container(pod: Mapping[str, Any]) -> str | None:
    """The name of a container the kernel OOM-killed (now or in its last run), if any."""
    return status_oom_killed(read_status(_status_of(pod)))


def status_oom_killed(status: PodStatus) -> str | None:
    """:func:`oom_killed_container` of a typed status (the rule's one home)."""
    for containers in (
        status.initContainerStatuses,
        status.containerStatuses,
        status.ephemeralContainerStatuses,
    ):
        for container in containers or ():
            for state in (container.state, container.lastState):
                terminated = None if state is None else state.terminated
                if terminated is not None and terminated.reason == "OOMKilled":
                    return container.name or "unknown"
    return None


def _pull_throttled(reason: str, message: str | None) -> bool:
    # The provider skips exactly this ErrImagePull message. The back-off after it reads
    # "Back-off pulling image ..." and, where the kubelet appends the pull's error, the cause.
    if reason == "ErrImagePull":
        return message == _PULL_THROTTLED
    return reason == "ImagePullBackOff" and message is not None and _PULL_THROTTLED in message


def status_fatal_waiting(status: PodStatus, reasons: frozenset[str]) -> tuple[str, str] | None:
    """The first container waiting for one of ``reasons``: every init container, then only
    the first main one, as the provider checks. A pull held back by the kubelet's own rate
    limit (``ErrImagePull`` with ``pull QPS exceeded``, apache/airflow#37670, or the
    back-off after it if its message says so) is no bad image. As (reason, container name)."""
    candidates = [*(status.initContainerStatuses or ()), *(status.containerStatuses or ())[:1]]
    for container in candidates:
        state = container.state
        waiting = None if state is None else state.waiting
        if waiting is None or waiting.reason is None or waiting.reason not in reasons:
            continue
        if _pull_throttled(waiting.reason, waiting.message):
            continue
        return waiting.reason, container.name or "unknown"
    return None


def classify_failure(
    pod: Mapping[str, Any],
    details: FailureDetails | None = None,
    *,
    deleted_while_running: bool = False,
) -> FailureClassification:
    """Classify a pod's failure from its status (and details, if already collected).

    In order: a deleted running pod, the ``DisruptionTarget`` condition and an
    infrastructure pod reason are infrastructure (retryable) and win over container
    evidence, as a node that runs out of memory OOM-kills containers it then evicts; an
    OOMKilled container (even in a pod that reports success), ``Error`` or
    ``ContainerCannotRun`` is the application's; anything else is unknown.
    """
    if deleted_while_running:
        return FailureClassification(
            FailureKind.INFRASTRUCTURE, True, "PodDeleted", "deleted while running"
        )
    raw = _status_of(pod)
    status = read_status(raw)
    if details is None:
        details = status_failure_details(status) or {}
    return classify_read(
        details,
        status_disruption(read_conditions(raw)),
        status.reason,
        lambda: status_oom_killed(status),
    )


def classify_read(
    details: FailureDetails,
    disruption: str | None,
    status_reason: str | None,
    oom_killed: Callable[[], str | None],
) -> FailureClassification:
    """:func:`classify_failure` of what it reads of a pod (private to the library).

    ``disruption`` is the reason of a true ``DisruptionTarget`` condition (or
    ``"DisruptionTarget"``), ``status_reason`` the pod's ``status.reason`` if a string,
    ``oom_killed`` gives what :func:`oom_killed_container` would; it is called only when
    the rules get that far. For readers of a pod that is not a manifest dict (the typed
    watch decoding), so both classify by the same rules.
    """
    if disruption is not None:
        return FailureClassification(
            FailureKind.INFRASTRUCTURE, True, disruption, "DisruptionTarget condition"
        )
    pod_reason = details.get("pod_reason") or status_reason
    if pod_reason in INFRASTRUCTURE_POD_REASONS:
        return FailureClassification(FailureKind.INFRASTRUCTURE, True, pod_reason, "pod reason")
    oom = oom_killed()
    if oom is not None:
        return FailureClassification(
            FailureKind.APPLICATION, False, "OOMKilled", f"container {oom}"
        )
    container_reason = details.get("container_reason")
    name = details.get("container_name") or "unknown"
    if container_reason in _APPLICATION_CONTAINER_REASONS:
        return FailureClassification(
            FailureKind.APPLICATION, False, container_reason, f"container {name}"
        )
    if details.get("exit_code"):
        return FailureClassification(
            FailureKind.APPLICATION, False, container_reason, f"container {name} exit code"
        )
    return FailureClassification(
        FailureKind.UNKNOWN, False, pod_reason or container_reason, "no reason recorded"
    )


def describe_failure(
    details: FailureDetails | None,
    classification: FailureClassification | None = None,
    *,
    pod: str | None = None,
    secrets: Iterable[str] = (),
) -> str:
    """One line naming the real cause, never "because of None" (apache/airflow#73164).

    ``Pod failed because of OOMKilled (container base, exit code 137)``; with ``pod``
    (``namespace/name``), ``Pod airflow/etl-load-x1 failed because of ...``. With no
    cause recorded, the pod's message, else the container's last words (``secrets``
    masked in them: :func:`~k8s_workloads.watch.last_words.last_words`).
    """
    details = details or {}
    subject = f"Pod {pod}" if pod else "Pod"
    cause = details.get("pod_reason")
    if not cause and classification is not None and classification.reason:
        # A preempted pod's container exits 143 with reason "Error": name the disruption.
        infrastructure = classification.kind is FailureKind.INFRASTRUCTURE
        if infrastructure or not details.get("container_reason"):
            cause = classification.reason
    cause = cause or details.get("container_reason")
    container = details.get("container_name")
    parts = []
    if container:
        parts.append(f"container {container}")
    if details.get("exit_code") is not None and details.get("container_state") == "terminated":
        parts.append(f"exit code {shown(details.get('exit_code'))}")
    where = f" ({', '.join(parts)})" if parts else ""
    if cause:
        return f"{subject} failed because of {cause}{where}"
    # A container's message may be its log's tail: its last lines, bounded and masked.
    message = details.get("pod_message") or last_words(
        details.get("container_message"), secrets=secrets
    )
    if message:
        return f"{subject} failed: {message}{where}"
    return f"{subject} failed with no reason recorded{where}"


def describe_pod_failure(
    details: FailureDetails | None,
    *,
    namespace: str | None,
    pod_name: str | None,
    classification: FailureClassification | None = None,
    secrets: Iterable[str] = (),
) -> str:
    """What a failed workload is reported with: :func:`describe_failure` naming the pod
    (``namespace/name``), then the failed container's last words — the end of its
    termination message (:func:`~k8s_workloads.watch.last_words.last_words`: a few
    lines, bounded, tokens and ``secrets`` masked)::

        Pod airflow/alerts-cb-x1 failed because of Error (container base, exit code 1):
        File "/opt/airflow/dags/alerts.py", line 4, in notify | AttributeError: ...

    (one line). A container still waiting (a pending pod failed) or none: no last words.
    """
    pod = "/".join(part for part in (namespace, pod_name) if part) if pod_name else None
    secrets = tuple(secrets)  # read twice
    text = describe_failure(details, classification, pod=pod, secrets=secrets)
    details = details or {}
    if details.get("container_state") != "terminated":
        return text
    words = last_words(details.get("container_message"), secrets=secrets)
    if words is None or words in text:
        return text
    return f"{text}: {words}"


# --- pending pods ----------------------------------------------------------------------


@attrs.frozen
class PendingPolicy:
    """How long each kind of stuck Pending pod is given before it is failed.

    Durations are seconds; ``None`` means "never fail for this". The defaults follow
    Flyte's: image pulls and ``CreateContainerError`` get 3 minutes, a bad container
    config or image name fails at once, and a registry rate limit (``429``) is
    infrastructure, never the workload's fault. Each is None or finite seconds from 0;
    anything else is an ``InvalidConfig`` naming it.
    """

    image_pull_grace: float | None = attrs.field(default=180.0, validator=_checks.grace)
    create_container_error_grace: float | None = attrs.field(default=180.0, validator=_checks.grace)
    create_container_config_error_grace: float | None = attrs.field(
        default=0.0, validator=_checks.grace
    )
    unknown_waiting_reason_grace: float | None = attrs.field(default=0.0, validator=_checks.grace)
    pending_timeout: float | None = attrs.field(default=None, validator=_checks.grace)
    """Overall limit from the pod's creation; None (the default) disables it."""


_BENIGN_WAITING = frozenset({"ContainerCreating", "PodInitializing"})
_IMMEDIATELY_FATAL = frozenset({"InvalidImageName", "ErrImageNeverPull", "ImageInspectError"})


@attrs.frozen
class PendingVerdict:
    """What a Pending pod is waiting for, and whether it should be failed now."""

    failed: bool
    reason: str
    """``Unschedulable: 0/3 nodes are available…``, ``ImagePullBackOff: Back-off pulling…``."""
    classification: FailureClassification | None = None
    details: FailureDetails | None = None


def _parse_time(value: object) -> datetime.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=datetime.timezone.utc)


def _waiting_since(
    status: Mapping[str, Any], metadata: Mapping[str, Any]
) -> datetime.datetime | None:
    # The kubelet records no time on a waiting state; the last transition of the readiness
    # conditions is the closest, then the pod's start and creation times.
    for condition in _list(status.get("conditions")):
        condition_map = _map(condition)
        if condition_map.get("type") in ("ContainersReady", "Ready", "Initialized"):
            since = _parse_time(condition_map.get("lastTransitionTime"))
            if since is not None:
                return since
    return _parse_time(status.get("startTime")) or _parse_time(metadata.get("creationTimestamp"))


def _stuck_container(status: Mapping[str, Any]) -> tuple[_ContainerType, str, str, str] | None:
    """The first container (init ones first) waiting for more than being created.

    As (container type, name, waiting reason, waiting message or ``""``).
    """
    for key, container_type in _CONTAINER_LISTS:
        for container in _list(status.get(key)):
            container_map = _map(container)
            waiting = _map(_map(container_map.get("state")).get("waiting"))
            reason = _str(waiting.get("reason"))
            if reason and reason not in _BENIGN_WAITING:
                name = _str(container_map.get("name")) or "unknown"
                return container_type, name, reason, _str(waiting.get("message")) or ""
    return None


def _waited_past(
    grace: float,
    status: Mapping[str, Any],
    metadata: Mapping[str, Any],
    now: datetime.datetime | None,
) -> bool:
    """Whether the pod has waited ``grace`` seconds by ``now`` (never, without ``now``)."""
    if now is None:
        return False
    since = _waiting_since(status, metadata)
    return since is not None and (now - since).total_seconds() >= grace


def _grace_for(reason: str, message: str, policy: PendingPolicy) -> tuple[float | None, bool]:
    """(grace seconds or None for never, whether the cause is the infrastructure's)."""
    if reason in _IMMEDIATELY_FATAL:
        return 0.0, False
    if reason in {"ErrImagePull", "ImagePullBackOff"}:
        # A registry rate limit is the cluster's problem, not a bad image.
        return policy.image_pull_grace, "429" in message or "pull QPS exceeded" in message
    if reason == "CreateContainerError":
        return policy.create_container_error_grace, False
    if reason == "CreateContainerConfigError":
        return policy.create_container_config_error_grace, False
    return policy.unknown_waiting_reason_grace, True


def _text(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return shown(value)


def demystify_pending(
    pod: Mapping[str, Any], policy: PendingPolicy, now: datetime.datetime | None
) -> PendingVerdict:
    """Read a Pending pod: unschedulable, pulling, misconfigured, or stuck past its grace.

    Init containers are checked before main ones. ``Unschedulable`` is reported with its
    message but never fails the pod by itself (the cluster may scale up). Without ``now``
    no grace period can expire: waiting reasons are reported, and only reasons that fail
    at once (grace 0) fail the pod.
    """
    status = _status_of(pod)
    metadata = _map(_map(pod).get("metadata"))
    reason = "Pending"
    if now is not None and now.tzinfo is None:
        # Kubernetes times are UTC; a naive "now" is read as UTC too (never compared raw).
        now = now.replace(tzinfo=datetime.timezone.utc)
    for condition in _list(status.get("conditions")):
        condition_map = _map(condition)
        if condition_map.get("type") == "PodScheduled" and condition_map.get("status") == "False":
            # Any JSON may stand here: a text is shown as it is, anything else as a short
            # repr (a 5,000-digit number or a value nested 1,200 deep cannot be str()-ed).
            cause = _text(condition_map.get("reason")) or "Unschedulable"
            message = _text(condition_map.get("message"))
            reason = f"{cause}: {message}" if message else cause
    stuck = _stuck_container(status)
    if stuck is not None:
        container_type, name, waiting_reason, message = stuck
        reason = (
            f"{waiting_reason}: {message} (container {name})"
            if message
            else f"{waiting_reason} (container {name})"
        )
        grace, infrastructure = _grace_for(waiting_reason, message, policy)
        if grace is not None and (grace <= 0 or _waited_past(grace, status, metadata, now)):
            details: FailureDetails = {
                "pod_status": "Pending",
                "pod_reason": None,
                "pod_message": None,
                "container_state": "waiting",
                "container_reason": waiting_reason,
                "container_message": message or None,
                "container_type": container_type,
                "container_name": name,
            }
            kind = FailureKind.INFRASTRUCTURE if infrastructure else FailureKind.APPLICATION
            suffix = f" after a {grace:g}s grace period" if grace > 0 else ""
            return PendingVerdict(
                True,
                reason + suffix,
                FailureClassification(kind, infrastructure, waiting_reason, f"container {name}"),
                details,
            )
    if policy.pending_timeout is not None and now is not None:
        created = _parse_time(metadata.get("creationTimestamp"))
        if created is not None and (now - created).total_seconds() >= policy.pending_timeout:
            return PendingVerdict(
                True,
                f"PodPendingTimeout: pending for over {policy.pending_timeout:g}s ({reason})",
                FailureClassification(
                    FailureKind.INFRASTRUCTURE, True, "PodPendingTimeout", "pending timeout"
                ),
                {"pod_status": "Pending", "pod_reason": "PodPendingTimeout", "pod_message": reason},
            )
    return PendingVerdict(False, reason)

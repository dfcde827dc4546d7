"""Which of an executor's worker pods are finished and may be deleted: the rules of the
provider's ``airflow kubernetes cleanup-pods``, for every pod the executor made — task,
callback and generic pods alike.

The provider's command selects pods by the task labels (``dag_id``, ``task_id``,
``try_number``, ``airflow_version``), so it never finds a callback's pod: a failed
callback pod kept for debugging stays for ever. Here the executor's own label
(``kubernetes_executor=True``, :data:`EXECUTOR_PODS_SELECTOR`) selects them all, and
:func:`pods_to_clean_up` applies the provider's rules to each: a pod that ended
(``Succeeded``; ``Failed`` with ``restartPolicy: Never``; evicted) at least
``min_completed_minutes`` ago, or ``Pending`` for more than ``min_pending_minutes`` (at
least 5, so that a pod just made is never taken). A pod already being deleted is left
alone. Pure: the caller lists and deletes (``k8s-workloads cleanup-pods``).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

import attrs

from k8s_workloads.json_values import as_list, as_map, as_text
from k8s_workloads.pods.labels import KUBERNETES_EXECUTOR_LABEL, TRUE_LABEL_VALUE

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "EXECUTOR_PODS_SELECTOR",
    "MIN_PENDING_MINUTES",
    "CleanupCandidate",
    "pods_to_clean_up",
]

EXECUTOR_PODS_SELECTOR = f"{KUBERNETES_EXECUTOR_LABEL}={TRUE_LABEL_VALUE}"
"""The label selector of every pod a Kubernetes executor made (tasks and callbacks)."""

MIN_PENDING_MINUTES = 5
"""A smaller ``min_pending_minutes`` is raised to this, as the provider does: a pod just
created is Pending while its image is pulled."""


@attrs.frozen
class CleanupCandidate:
    """A pod to delete, and why (one line an operator reads)."""

    namespace: str
    pod_name: str
    phase: str
    why: str


def _when(value: object) -> datetime.datetime | None:
    text = as_text(value)
    if not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.timezone.utc)


def _completed_at(pod: Mapping[str, Any]) -> datetime.datetime | None:
    """When the pod ended: its containers' last ``finishedAt``, else its conditions' last
    transition, else its creation (the provider's order)."""
    status = as_map(pod.get("status"))
    finished = []
    for field in ("containerStatuses", "initContainerStatuses"):
        for container in as_list(status.get(field)):
            terminated = as_map(as_map(as_map(container).get("state")).get("terminated"))
            moment = _when(terminated.get("finishedAt"))
            if moment is not None:
                finished.append(moment)
    if finished:
        return max(finished)
    moved = [
        moment
        for condition in as_list(status.get("conditions"))
        if (moment := _when(as_map(condition).get("lastTransitionTime"))) is not None
    ]
    if moved:
        return max(moved)
    return _when(as_map(pod.get("metadata")).get("creationTimestamp"))


def pods_to_clean_up(
    pods: Iterable[Mapping[str, Any]],
    *,
    now: datetime.datetime,
    min_pending_minutes: int = 30,
    min_completed_minutes: int = 1,
) -> list[CleanupCandidate]:
    """The ``pods`` (manifests, as listed) to delete at ``now`` by the provider's rules;
    see the module. ``min_completed_minutes`` 0: every ended pod at once."""
    pending_for = datetime.timedelta(minutes=max(min_pending_minutes, MIN_PENDING_MINUTES))
    ended_for = datetime.timedelta(minutes=max(min_completed_minutes, 0))
    chosen: list[CleanupCandidate] = []
    for pod in pods:
        metadata, status = as_map(pod.get("metadata")), as_map(pod.get("status"))
        if metadata.get("deletionTimestamp"):
            continue  # being deleted already
        phase = as_text(status.get("phase")) or "Unknown"
        reason = as_text(status.get("reason")) or ""
        never = as_text(as_map(pod.get("spec")).get("restartPolicy")) == "Never"
        ended = phase == "Succeeded" or (phase == "Failed" and never) or reason == "Evicted"
        why = ""
        if ended:
            completed = _completed_at(pod)
            if completed is not None and (not ended_for or now - completed > ended_for):
                ago = int((now - completed).total_seconds() // 60)
                why = f"{phase}{f' ({reason})' if reason else ''}, ended {ago} min ago"
        elif phase == "Pending":
            created = _when(metadata.get("creationTimestamp"))
            if created is not None and now - created > pending_for:
                why = f"Pending for {int((now - created).total_seconds() // 60)} min"
        if why:
            namespace, name = as_text(metadata.get("namespace")), as_text(metadata.get("name"))
            chosen.append(CleanupCandidate(namespace or "", name or "", phase, why))
    return chosen

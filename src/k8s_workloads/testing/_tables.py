"""Pods as a ``Table``, the server-side printing kubectl asks for (``as=Table``).

``kubectl get pods`` sends ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io`` and
prints the cells the API server computes: NAME, READY, STATUS, RESTARTS, AGE (and, with
``-o wide``, IP and NODE). The rules are those of the pod printer in
``pkg/printers/internalversion/printers.go`` (the STATUS reason from the phase, the
containers' waiting or terminated reasons, ``Terminating`` once deletion started) and
the age is ``duration.HumanDuration``.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from k8s_workloads.pods.manifest import Manifest

__all__ = ["human_duration", "pod_table"]

_COLUMNS = (
    ("Name", "string", "name", 0, "Name must be unique within a namespace."),
    ("Ready", "string", "", 0, "The aggregate readiness state of this pod for accepting traffic."),
    ("Status", "string", "", 0, "The aggregate status of the containers in this pod."),
    (
        "Restarts",
        "string",
        "",
        0,
        "The number of times the containers in this pod have been restarted.",
    ),
    (
        "Age",
        "string",
        "",
        0,
        "CreationTimestamp is the server time when this object was created.",
    ),
    (
        "IP",
        "string",
        "",
        1,
        "IP address allocated to the pod. Routable at least within the cluster.",
    ),
    ("Node", "string", "", 1, "NodeName is a request to schedule this pod onto a specific node."),
)


def human_duration(seconds: float) -> str:
    """A duration as kubectl shows an age (``duration.HumanDuration``): 45s, 3m20s, 5h."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours, days = minutes // 60, minutes // 60 // 24
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years = days // 365
    if hours < 24 * 365 * 8 and days % 365:
        return f"{years}y{days % 365}d"
    return f"{years}y"


def _parse(stamp: object) -> datetime.datetime | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.timezone.utc
        )
    except ValueError:
        return None


def _status(pod: Manifest) -> str:
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or ""
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        waiting, terminated = state.get("waiting") or {}, state.get("terminated")
        if waiting.get("reason"):
            reason = waiting["reason"]
        elif terminated is not None:
            reason = terminated.get("reason") or (
                f"Signal:{terminated['signal']}"
                if terminated.get("signal")
                else f"ExitCode:{terminated.get('exitCode', 0)}"
            )
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return str(reason)


def _row(pod: Manifest, now: datetime.datetime) -> Manifest:
    metadata = pod.get("metadata") or {}
    status = pod.get("status") or {}
    containers = (pod.get("spec") or {}).get("containers") or []
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for container in statuses if container.get("ready"))
    restarts = sum(int(container.get("restartCount") or 0) for container in statuses)
    created = _parse(metadata.get("creationTimestamp"))
    age = "<unknown>" if created is None else human_duration((now - created).total_seconds())
    return {
        "cells": [
            metadata.get("name", ""),
            f"{ready}/{len(containers)}",
            _status(pod),
            str(restarts),
            age,
            status.get("podIP") or "<none>",
            (pod.get("spec") or {}).get("nodeName") or "<none>",
        ],
        "object": {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": metadata,
        },
    }


def pod_table(listing: Manifest, *, now: datetime.datetime) -> Manifest:
    """A ``PodList`` (or a list of one pod) as the ``Table`` the API server answers."""
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(listing.get("metadata") or {}),
        "columnDefinitions": [
            {
                "name": name,
                "type": kind,
                "format": shape,
                "description": description,
                "priority": priority,
            }
            for name, kind, shape, priority, description in _COLUMNS
        ],
        "rows": [_row(pod, now) for pod in listing.get("items") or []],
    }

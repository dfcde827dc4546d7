"""The smallest pods the kit's cluster tests store: a name, labels and a phase; and the
types of the watch events they make."""

from __future__ import annotations

from typing import Any

NS = "airflow"


def pod(name: str, labels: dict[str, str], phase: str = "Pending") -> dict[str, Any]:
    """A valid pod in :data:`NS` with one container, at ``phase``."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"containers": [{"name": "base", "image": "x"}]},
        "status": {"phase": phase},
    }


def types(events: list[dict[str, Any]]) -> list[str]:
    """The events' types, in order (``ADDED``, ``MODIFIED``, ...)."""
    return [event["type"] for event in events]

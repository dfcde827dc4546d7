"""Old path of :mod:`k8s_workloads.pods.codec`, kept for existing code."""

from __future__ import annotations

from k8s_workloads.pods import codec as _owner
from k8s_workloads.pods.codec import *  # noqa: F403 - the public names, listed in the owner

# Names code still takes from here until it imports them from the owner: explicit
# re-exports (``as``), which mypy's strict mode needs.
from k8s_workloads.pods.codec import ANNOTATIONS_READ as ANNOTATIONS_READ  # noqa: PLC0414
from k8s_workloads.pods.codec import _cached_task_key as _cached_task_key  # noqa: PLC0414

__all__ = _owner.__all__

"""Old path of :mod:`k8s_workloads.pods.schema`, kept for existing code."""

from __future__ import annotations

from k8s_workloads.pods import schema as _owner
from k8s_workloads.pods.schema import *  # noqa: F403 - the public names, listed in the owner

# Names code still takes from here until it imports them from the owner: explicit
# re-exports (``as``), which mypy's strict mode needs.
from k8s_workloads.pods.schema import checked_layer as checked_layer  # noqa: PLC0414

__all__ = _owner.__all__

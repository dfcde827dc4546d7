"""Old path of :mod:`k8s_workloads.pods.labels`, kept for existing code."""

from __future__ import annotations

from k8s_workloads.pods import labels as _owner
from k8s_workloads.pods.labels import *  # noqa: F403 - the public names, listed in the owner

__all__ = _owner.__all__

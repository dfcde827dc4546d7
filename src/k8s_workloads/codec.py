"""Old path of :mod:`k8s_workloads.pods.codec`, kept for existing code."""

from __future__ import annotations

from k8s_workloads.pods import codec as _owner
from k8s_workloads.pods.codec import *  # noqa: F403 - the public names, listed in the owner
from k8s_workloads.pods.codec import ANNOTATIONS_READ, _cached_task_key  # noqa: F401 - private names code still takes from here

__all__ = _owner.__all__

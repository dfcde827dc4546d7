"""Old path of :mod:`k8s_workloads.pods.payload`, kept for existing code."""

from __future__ import annotations

from k8s_workloads.pods import payload as _owner
from k8s_workloads.pods.payload import *  # noqa: F403 - the public names, listed in the owner

__all__ = _owner.__all__

"""Old path of :mod:`k8s_workloads.pods.schema`, kept for existing code."""

from __future__ import annotations

from k8s_workloads.pods import schema as _owner
from k8s_workloads.pods.schema import *  # noqa: F403 - the public names, listed in the owner
from k8s_workloads.pods.schema import checked_layer  # noqa: F401 - private names code still takes from here

__all__ = _owner.__all__

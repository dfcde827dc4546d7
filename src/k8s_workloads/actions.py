"""Old path of :mod:`k8s_workloads.decisions.actions`, kept for existing code."""

from k8s_workloads.decisions.actions import *  # noqa: F403

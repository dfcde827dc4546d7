"""Old path of :mod:`k8s_workloads.watch.streams`, kept for existing code."""

from k8s_workloads.watch.streams import *  # noqa: F403

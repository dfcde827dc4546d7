"""Old path of :mod:`k8s_workloads.watch.events`, kept for existing code."""

from k8s_workloads.watch.events import *  # noqa: F403

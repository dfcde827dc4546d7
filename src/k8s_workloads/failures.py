"""Old path of :mod:`k8s_workloads.watch.failures`, kept for existing code."""

from k8s_workloads.watch.failures import *  # noqa: F403

"""Old path of :mod:`k8s_workloads.watch._podstatus`, kept for existing code."""

from k8s_workloads.watch._podstatus import *  # noqa: F403

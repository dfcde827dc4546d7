"""Old path of :mod:`k8s_workloads.decisions.attempts`, kept for existing code."""

from k8s_workloads.decisions.attempts import *  # noqa: F403

"""Old path of :mod:`k8s_workloads.decisions.adoption`, kept for existing code."""

from k8s_workloads.decisions.adoption import *  # noqa: F403

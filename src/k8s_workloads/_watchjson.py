"""Old path of :mod:`k8s_workloads.watch._watchjson`, kept for existing code."""

from k8s_workloads.watch._watchjson import *  # noqa: F403

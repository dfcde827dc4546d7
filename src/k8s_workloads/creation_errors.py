"""Old path of :mod:`k8s_workloads.decisions.creation_errors`, kept for existing code."""

from k8s_workloads.decisions.creation_errors import *  # noqa: F403

TYPE_CHECKING = False
if not TYPE_CHECKING:  # its deprecated names, with their warnings
    from k8s_workloads.decisions.creation_errors import __getattr__  # noqa: F401

"""The base container says why it failed: ``terminationMessagePolicy: FallbackToLogsOnError``.

When a container ends, the kubelet puts what it wrote to its ``terminationMessagePath``
(``/dev/termination-log`` by default) into ``state.terminated.message``. With the API
server's default policy, ``File``, that is all: a workload that fails with a traceback
leaves the message empty, and the executor can only say "exit code 1". With
``FallbackToLogsOnError`` the kubelet, for a container that failed (a non-zero exit) and
wrote no message, takes the tail of its log instead (at most 80 lines and 2048 bytes,
``pkg/kubelet/kuberuntime/kuberuntime_container.go``): the traceback's last lines, which
the executor then reports with the failure (:mod:`k8s_workloads.watch.failures`).

So the builders give the ``base`` container (the workload's, the first) that policy
where the merged template and ``pod_override`` leave it unset (absent or empty); a
policy they set is kept, and so is what a mutation hook, which sees the pod after this,
does with it. The provider builds the pod without one (the API server's ``File``): a
deliberate difference. Other containers (sidecars, init containers) are the template's
and left alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from k8s_workloads.pods.manifest import Manifest

__all__ = ["BASE_TERMINATION_MESSAGE_POLICY"]

BASE_TERMINATION_MESSAGE_POLICY = "FallbackToLogsOnError"
"""The ``terminationMessagePolicy`` the ``base`` container gets when no layer sets one."""

_FIELD = "terminationMessagePolicy"


def _saying_why(pod: Manifest) -> Manifest:
    """``pod`` with :data:`BASE_TERMINATION_MESSAGE_POLICY` on its workload's container,
    unless that container has a policy already (an empty one is none: the API server
    defaults it).

    The workload's container is the first: the layers' first containers merge into it,
    by position, and it is named ``base`` unless a ``pod_override`` renames it. Applied
    where a pod's layers have been merged, by every build path. The pod is the builder's
    own; the container list and the container changed are replaced by copies, never
    changed, in case a layer shares them. Shapes that are not objects and lists are left
    for the checks to refuse.
    """
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return pod
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return pod
    first = containers[0]
    if not isinstance(first, dict) or first.get(_FIELD):
        return pod
    pod["spec"] = {
        **spec,
        "containers": [{**first, _FIELD: BASE_TERMINATION_MESSAGE_POLICY}, *containers[1:]],
    }
    return pod

"""Worker pods never restart: every pod built has ``spec.restartPolicy: Never``.

A worker pod runs one workload once; the executor learns the outcome from the pod's phase,
``Succeeded`` or ``Failed``. With ``Always`` or ``OnFailure`` the kubelet restarts the
container after it exits instead, so the phase never gets there: the workload runs again
behind the scheduler's back, and a deadline callback fires again and again in a pod that
never ends (issue 29). A pod without the field gets the API server's default, ``Always``.
So the builders put ``Never`` on every task and callback pod, whatever the template, the
``pod_override`` or the mutation hook says (the provider passes the template's policy
through: a deliberate difference). :func:`replaced_restart_policy` tells a caller that a
template or override asks for a policy its pods will not have, so it can say so once.

The policy of a container (``restartPolicy: Always`` on an init container makes it a
sidecar) is the container's, and kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from k8s_workloads.json_values import as_map

if TYPE_CHECKING:
    from collections.abc import Mapping

    from k8s_workloads.pods.manifest import Manifest

__all__ = ["WORKER_RESTART_POLICY", "replaced_restart_policy"]

WORKER_RESTART_POLICY = "Never"
"""The ``spec.restartPolicy`` of every worker pod built."""

_FIELD = "restartPolicy"


def replaced_restart_policy(manifest: Mapping[str, object] | None) -> str | None:
    """The ``spec.restartPolicy`` a template or ``pod_override`` asks for that the pods
    built over it will not have (``"Always"``, ``"OnFailure"``), or None when they keep
    it: no manifest, no policy, an empty one (the API server's default) or ``"Never"``.

    A value that is not a string is given as its text. Pure: reads ``manifest`` only.
    """
    policy = as_map(as_map(manifest).get("spec")).get(_FIELD)
    if policy is None or policy in ("", WORKER_RESTART_POLICY):
        return None
    return policy if isinstance(policy, str) else str(policy)


def _never_restarting(pod: Manifest) -> Manifest:
    """``pod`` with ``spec.restartPolicy`` set to :data:`WORKER_RESTART_POLICY`.

    Applied where a pod's layers have been merged and again to what the mutation hook
    returns, by every build path. The pod is the builder's own; its ``spec`` is replaced by
    a copy, never changed, in case a hook returned a spec it shares. A ``spec`` that is not
    an object is left for the checks to refuse.
    """
    spec = pod.get("spec")
    if isinstance(spec, dict) and spec.get(_FIELD) != WORKER_RESTART_POLICY:
        pod["spec"] = {**spec, _FIELD: WORKER_RESTART_POLICY}
    return pod

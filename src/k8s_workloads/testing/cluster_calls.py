"""The core's requests against the test kit's in-memory cluster: the one place that maps
them to :class:`~k8s_workloads.testing.FakeCluster` calls.

The kit's :class:`~k8s_workloads.testing.CoreDriver`, the simulator and the stateful test
perform through :class:`ClusterCalls`; what a failed call means is the shared policy's
(:mod:`k8s_workloads.io.policy`), as for every other client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from k8s_workloads.io.calls import CallPlan, ListsPods
from k8s_workloads.testing.errors import ApiError

if TYPE_CHECKING:
    from k8s_workloads.executor.requests import Request
    from k8s_workloads.io.calls import ApiCall
    from k8s_workloads.testing.cluster import FakeCluster

__all__ = ["ClusterCalls"]


class ClusterCalls(ListsPods):
    """Pod and Secret requests and lists against ``cluster``."""

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster

    def perform(self, request: Request) -> object:
        """Perform a pod or Secret request, or a list (``(pods, resource_version)``, in
        one call); raises as the cluster does (:data:`~k8s_workloads.testing.FAILURES`)."""
        plan = CallPlan(request, page_size=None, client="cluster")
        for call in plan:
            try:
                plan.take(_on_cluster(self.cluster, call))
            except ApiError as error:  # noqa: PERF203 - see CallPlan.recovered
                if not plan.recovered(error):
                    raise
        return plan.result


def _on_cluster(cluster: FakeCluster, call: ApiCall) -> dict[str, Any]:
    """Make ``call`` on the cluster: its methods take the namespace first, and a patch's
    content type as the kubernetes clients pick it for the body (a list, a guarded
    relabel, is a JSON patch: its failed test a 422)."""
    query = call.kwargs
    if call.verb == "list":
        return cluster.list_pods(
            call.namespace,
            label_selector=query.get("label_selector"),
            field_selector=query.get("field_selector"),
            limit=query.get("limit"),
            continue_token=query.get("_continue"),
        )
    method = getattr(cluster, f"{call.verb}_{call.resource}")
    if call.verb == "create":
        return method(call.namespace, call.body)  # type: ignore[no-any-return]
    if call.verb == "patch":
        kind = "json" if isinstance(call.body, list) else "strategic"
        return method(call.namespace, call.name, call.body, patch_type=kind)  # type: ignore[no-any-return]
    return method(call.namespace, call.name)  # type: ignore[no-any-return]

"""The test kit's in-memory cluster: the one place that maps the core's requests to
:class:`~k8s_workloads.testing.FakeCluster` calls.

The kit's :class:`~k8s_workloads.testing.CoreDriver`, the simulator and the stateful test
perform through :class:`ClusterCalls`; what a failed call means is the shared policy's
(:mod:`k8s_workloads.io.policy`), as for every other client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from k8s_workloads.decisions.actions import DeletePod, PatchLabels
from k8s_workloads.executor import CreatePod, DeleteSecret, ListPods, Request
from k8s_workloads.io.policy import label_patch
from k8s_workloads.testing._errors import FAILURES

if TYPE_CHECKING:
    from k8s_workloads.testing.cluster import FakeCluster

__all__ = ["FAILURES", "ClusterCalls"]


class ClusterCalls:
    """Pod and Secret requests and lists against ``cluster``."""

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster

    def perform(self, request: Request) -> object:
        """Perform a pod or Secret request, or a list (``(pods, resource_version)``);
        raises as the cluster does (:data:`FAILURES`)."""
        cluster = self.cluster
        if isinstance(request, CreatePod):
            if request.secret is not None:
                cluster.create_secret(request.namespace, request.secret)
            cluster.create_pod(request.namespace, request.pod)
        elif isinstance(request, DeletePod):
            cluster.delete_pod(request.namespace, request.pod_name)
        elif isinstance(request, DeleteSecret):
            cluster.delete_secret(request.namespace, request.name)
        elif isinstance(request, PatchLabels):
            # The body the kubernetes clients send, by the content type they pick for it:
            # a list (a guarded relabel) is a JSON patch, its failed test a 422.
            patch = label_patch(request)
            cluster.patch_pod(
                request.namespace,
                request.pod_name,
                patch,
                patch_type="json" if isinstance(patch, list) else "strategic",
            )
        elif isinstance(request, ListPods):
            return self.list_pods(
                request.namespace,
                label_selector=request.selector.label_selector,
                field_selector=request.selector.field_selector,
            )
        else:
            raise TypeError(f"{type(request).__name__} is not a cluster call")
        return None

    def list_pods(
        self,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Every pod matching the selectors, and the list's resource version."""
        listing = self.cluster.list_pods(
            namespace, label_selector=label_selector, field_selector=field_selector
        )
        return listing["items"], listing["metadata"]["resourceVersion"]

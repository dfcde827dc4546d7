"""The kit's calls (:mod:`k8s_workloads.testing.cluster_calls`): the core's requests against the
in-memory :class:`~k8s_workloads.testing.FakeCluster`, as the kubernetes clients send them."""

from __future__ import annotations

import pytest

from k8s_workloads.decisions.actions import DeletePod, EmitEvent, PatchLabels
from k8s_workloads.executor import CreatePod, DeleteSecret, ListPods
from k8s_workloads.io.policy import failure_is_done
from k8s_workloads.keys import TaskInstanceKey
from k8s_workloads.pods.labels import PodSelector
from k8s_workloads.states import TaskInstanceState
from k8s_workloads.testing import FAILURES, ApiError, FakeCluster
from k8s_workloads.testing.cluster_calls import ClusterCalls

NS = "airflow"
KEY = TaskInstanceKey("etl", "t", "manual__1", 1)
POD = {
    "metadata": {"name": "p1", "labels": {"a": "b"}},
    "spec": {"containers": [{"name": "base", "image": "busybox"}]},
}


@pytest.fixture
def kit() -> ClusterCalls:
    return ClusterCalls(FakeCluster(namespaces=[NS]))


def test_a_pod_and_its_secret_are_created_and_deleted(kit: ClusterCalls) -> None:
    secret = {"metadata": {"name": "s1"}, "stringData": {"k": "v"}}
    assert kit.perform(CreatePod(KEY, NS, POD, secret)) is None
    assert kit.cluster.pod_names() == ["p1"]
    assert kit.cluster.secret_names() == ["s1"]
    kit.perform(DeletePod("p1", NS))
    kit.perform(DeleteSecret("s1", NS))
    assert kit.cluster.pod_names() == []  # not bound to a node: gone at once
    assert kit.cluster.secret_names() == []
    assert [call for call, _, _ in kit.cluster.calls] == [
        "create_secret",
        "create_pod",
        "delete_pod",
        "delete_secret",
    ]


def test_a_list_is_one_call_with_the_selection_and_its_version(kit: ClusterCalls) -> None:
    kit.perform(CreatePod(KEY, NS, POD, None))
    other = {**POD, "metadata": {"name": "p2", "labels": {"a": "c"}}}
    kit.perform(CreatePod(KEY, NS, other, None))
    pods, version = kit.list_pods(NS, label_selector="a=b")
    assert [pod["metadata"]["name"] for pod in pods] == ["p1"]
    assert version == kit.cluster.resource_version
    listed = kit.perform(ListPods(None, PodSelector("")))
    assert isinstance(listed, tuple)
    assert len(listed[0]) == 2
    assert [call for call, _, _ in kit.cluster.calls].count("list_pods") == 2


def test_a_guarded_relabel_whose_owner_moved_is_a_422_and_failed(kit: ClusterCalls) -> None:
    kit.perform(CreatePod(KEY, NS, POD, None))
    kit.perform(PatchLabels("p1", NS, {"a": "x"}, expect={"a": "b"}))
    assert (kit.cluster.pod(NS, "p1") or {})["metadata"]["labels"]["a"] == "x"
    rival = PatchLabels("p1", NS, {"a": "y"}, expect={"a": "b"})
    with pytest.raises(ApiError) as caught:
        kit.perform(rival)
    assert caught.value.status == 422
    assert not failure_is_done(rival, caught.value)


def test_a_delete_of_a_missing_pod_raises_a_404_the_policy_counts_as_done(
    kit: ClusterCalls,
) -> None:
    with pytest.raises(FAILURES) as caught:
        kit.perform(DeletePod("gone", NS))
    assert failure_is_done(DeletePod("gone", NS), caught.value)


def test_an_event_is_not_a_cluster_call(kit: ClusterCalls) -> None:
    with pytest.raises(TypeError, match="EmitEvent is not a cluster call"):
        kit.perform(EmitEvent(KEY, TaskInstanceState.SUCCESS))

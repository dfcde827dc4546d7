"""The kit cluster's pods (:mod:`k8s_workloads.testing.cluster`): deletions as the pod
registry makes them, patches conditional on a version."""

from __future__ import annotations

import pytest

from k8s_workloads.testing import (
    ApiError,
    FakeCluster,
)
from tests.support.kit_pods import NS, pod, types


def test_deleting_a_pod_sends_modified_with_a_timestamp_then_deleted() -> None:
    # Store.Delete: the graceful update (grace 0 for an unscheduled pod) is written, then
    # the pod deleted.
    cluster = FakeCluster(namespaces=[NS])
    watch = cluster.watch(NS)
    cluster.create_pod(NS, pod("p", {}))
    cluster.delete_pod(NS, "p")
    events = watch.events()
    assert types(events) == ["ADDED", "MODIFIED", "DELETED"]
    assert events[1]["object"]["metadata"]["deletionGracePeriodSeconds"] == 0
    versions = [int(event["object"]["metadata"]["resourceVersion"]) for event in events]
    assert versions == sorted(set(versions))  # every change bumps the version
    with pytest.raises(ApiError) as raised:
        cluster.delete_pod(NS, "p")
    assert raised.value.status == 404


def test_a_patch_conditional_on_a_version_that_moved_on_is_a_409() -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, pod("p", {"airflow-worker": "1"}))
    listed = cluster.resource_version
    cluster.patch_pod_labels(NS, "p", {"airflow-worker": "2"}, listed)  # the first one wins
    with pytest.raises(ApiError) as conflict:
        cluster.patch_pod_labels(NS, "p", {"airflow-worker": "3"}, listed)
    assert conflict.value.status == 409
    stored = cluster.pod(NS, "p")
    assert stored is not None
    assert stored["metadata"]["labels"]["airflow-worker"] == "2"

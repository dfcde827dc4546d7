"""The kit cluster's pods (:mod:`k8s_workloads.testing.cluster`): deletions as the pod
registry makes them, with finalizers, patches conditional on a version."""

from __future__ import annotations

import json
from typing import Any

import pytest

from k8s_workloads.testing import (
    ApiError,
    FakeCluster,
)
from tests.support.kit_clients import Client, fails
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


def test_the_status_subresource_changes_only_status_and_is_its_own_call() -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, pod("p", {"airflow-worker": "1"}))
    change = {"metadata": {"labels": {"airflow-worker": "2"}}, "status": {"phase": "Running"}}
    cluster.patch_pod(NS, "p", change, subresource="status", patch_type="merge")
    stored = cluster.pod(NS, "p")
    assert stored is not None
    assert (stored["metadata"]["labels"]["airflow-worker"], stored["status"]["phase"]) == (
        "1",
        "Running",
    )
    cluster.patch_pod(NS, "p", change, patch_type="merge")  # the pod: all but status
    stored = cluster.pod(NS, "p")
    assert stored is not None
    assert stored["metadata"]["labels"]["airflow-worker"] == "2"
    assert [call for call, _, name in cluster.calls if name == "p"][-2:] == [
        "patch_pod_status",
        "patch_pod",
    ]
    with pytest.raises(ValueError, match="subresource must be None or 'status'"):
        cluster.patch_pod(NS, "p", change, subresource="log")


class _Seeing(FakeCluster):
    """Keeps every pod the ``pod_created`` hook was called with."""

    def __init__(self) -> None:
        super().__init__(namespaces=[NS])
        self.seen: list[dict[str, Any]] = []

    def pod_created(self, pod: dict[str, Any]) -> None:
        self.seen.append(pod)


def test_the_creation_hook_sees_each_pod_stored_as_answered() -> None:
    cluster = _Seeing()
    answer = cluster.create_pod(NS, pod("p", {}))
    cluster.create_pod(NS, pod("dry", {}), dry_run=True)  # not stored: not seen
    with pytest.raises(ApiError):
        cluster.create_pod(NS, pod("p", {}))  # a 409: nothing stored
    assert cluster.seen == [answer]
    assert answer["metadata"]["uid"]  # as stored: uid, version, status filled in


# --- finalizers -------------------------------------------------------------------------


def held(name: str = "p", *finalizers: str) -> dict[str, Any]:
    """A pod held by ``finalizers`` (one of the example's by default)."""
    body = pod(name, {})
    body["metadata"]["finalizers"] = list(finalizers or ["example.com/keep"])
    return body


def test_a_pod_with_finalizers_stays_deleting_until_a_patch_empties_them() -> None:
    # Store.Delete: pending finalizers keep the object, marked deleting (an unscheduled pod:
    # grace 0); Store.Update: an update that leaves none deletes it (errEmptiedFinalizers:
    # the update itself is not written, so DELETED follows the MODIFIED of the delete).
    cluster = FakeCluster(namespaces=[NS])
    watch = cluster.watch(NS)
    cluster.create_pod(NS, held())
    answered = cluster.delete_pod(NS, "p")
    assert answered["metadata"]["deletionTimestamp"]
    assert answered["metadata"]["deletionGracePeriodSeconds"] == 0
    assert cluster.pod_names() == ["p"]
    assert cluster.list_pods(NS)["items"][0]["metadata"]["deletionTimestamp"]
    assert cluster.delete_pod(NS, "p") == cluster.pod(NS, "p")  # again: as it is
    cluster.patch_pod(NS, "p", {"metadata": {"labels": {"team": "data"}}})  # still updatable
    cluster.patch_pod(NS, "p", {"metadata": {"finalizers": None}})
    events = watch.events()
    assert types(events) == ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]
    # The DELETED event carries the object as it was stored, finalizers included.
    assert events[-1]["object"]["metadata"]["finalizers"] == ["example.com/keep"]
    assert cluster.pod(NS, "p") is None
    cluster.create_pod(NS, pod("p", {}))  # the name is free again


def test_no_finalizer_may_be_added_once_deleting() -> None:
    # ValidateObjectMetaUpdate -> ValidateNoNewFinalizers (apimachinery objectmeta.go).
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, held("p", "example.com/a"))
    cluster.patch_pod(NS, "p", {"metadata": {"finalizers": ["example.com/a", "example.com/b"]}})
    cluster.delete_pod(NS, "p")
    with pytest.raises(ApiError) as raised:
        cluster.patch_pod(NS, "p", {"metadata": {"finalizers": ["example.com/a", "example.com/c"]}})
    assert raised.value.status == 422
    (cause,) = json.loads(raised.value.body)["details"]["causes"]
    assert cause == {
        "reason": "FieldValueForbidden",
        "message": "Forbidden: no new finalizers can be added if the object is being deleted, "
        'found new finalizers []string{"example.com/c"}',
        "field": "metadata.finalizers",
    }
    # Removing one of them is allowed (a merge patch replaces the list; a strategic one
    # would merge it: finalizers have patchStrategy "merge"), and the last one's removal
    # deletes the pod.
    merge = "application/merge-patch+json"
    cluster.patch_pod(NS, "p", {"metadata": {"finalizers": ["example.com/b"]}}, patch_type=merge)
    stored = cluster.pod(NS, "p")
    assert stored is not None
    assert stored["metadata"]["finalizers"] == ["example.com/b"]
    cluster.patch_pod(NS, "p", {"metadata": {"finalizers": []}}, patch_type=merge)
    assert cluster.pod(NS, "p") is None


def test_a_finalizer_name_must_be_qualified_or_standard() -> None:
    # ValidateFinalizerName: a qualified name; one without a prefix must be standard.
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, held("a", "kubernetes", "example.com/x"))
    with pytest.raises(ApiError) as raised:
        cluster.create_pod(NS, held("b", "mine"))
    assert raised.value.status == 422
    (cause,) = json.loads(raised.value.body)["details"]["causes"]
    assert cause["field"] == "metadata.finalizers[0]"
    assert "neither a standard finalizer name nor is it fully qualified" in cause["message"]


@pytest.mark.parametrize("finalizers_first", [True, False])
def test_a_graceful_pod_with_finalizers_goes_when_both_are_done(finalizers_first: bool) -> None:
    # ShouldDeleteDuringUpdate deletes only once the grace period is over (0); the kubelet's
    # grace-0 confirmation deletes only once no finalizer is left.
    cluster = FakeCluster(namespaces=[NS])
    uid = cluster.create_pod(NS, held())["metadata"]["uid"]
    cluster.bind_pod(NS, "p", "node-1")
    watch = cluster.watch(NS, resource_version=cluster.resource_version)
    assert cluster.delete_pod(NS, "p")["metadata"]["deletionGracePeriodSeconds"] == 30
    if finalizers_first:
        cluster.patch_pod(NS, "p", {"metadata": {"finalizers": None}})
        assert cluster.pod(NS, "p") is not None  # the grace period is not over
        cluster.finish_deletion(NS, "p", uid=uid)
    else:
        cluster.finish_deletion(NS, "p", uid=uid)
        stored = cluster.pod(NS, "p")
        assert stored is not None  # held by its finalizer
        assert stored["metadata"]["deletionGracePeriodSeconds"] == 0
        cluster.patch_pod(NS, "p", {"metadata": {"finalizers": None}})
    assert cluster.pod(NS, "p") is None
    # The delete, then the patch and the kubelet's (grace 0 written, then deleted); or the
    # kubelet's (held) and the patch (deleted, not written).
    expected = ["MODIFIED", "MODIFIED", "MODIFIED", "DELETED"]
    assert types(watch.events()) == (expected if finalizers_first else expected[1:])


def test_finalizers_over_http_with_the_real_client(client: Client, cluster: FakeCluster) -> None:
    """DELETE answers 200 with the object marked deleting; it stays readable and watched;
    a patch adding a finalizer is 422; one emptying them deletes it (DELETED)."""
    client("create_namespaced_pod", NS, held())
    watch = cluster.watch(NS, resource_version=cluster.resource_version)
    answered = client("delete_namespaced_pod", "p", NS)
    assert answered["kind"] == "Pod"
    assert answered["metadata"]["deletionTimestamp"]
    assert answered["metadata"]["finalizers"] == ["example.com/keep"]
    assert client("read_namespaced_pod", "p", NS)["metadata"]["deletionTimestamp"]
    failure = fails(
        client,
        "patch_namespaced_pod",
        "p",
        NS,
        {"metadata": {"finalizers": ["example.com/keep", "example.com/more"]}},
    )
    assert (failure.status, failure.body["reason"]) == (422, "Invalid")
    assert failure.body["details"]["causes"][0]["field"] == "metadata.finalizers"
    client("patch_namespaced_pod", "p", NS, {"metadata": {"finalizers": None}})
    assert types(watch.events()) == ["MODIFIED", "DELETED"]
    assert fails(client, "read_namespaced_pod", "p", NS).status == 404

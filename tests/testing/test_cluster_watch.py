"""The kit cluster's lists and watches (:mod:`k8s_workloads.testing._cluster_watch`):
what a watch sees and when it ends with a 410, lists in pages from one snapshot, continue
tokens."""

from __future__ import annotations

from typing import Any

import pytest

from k8s_workloads.testing import (
    ApiError,
    FakeCluster,
)
from tests.support.kit_pods import NS, pod, types


def test_a_watch_sees_its_selection_change_as_the_api_server_sends_it() -> None:
    cluster = FakeCluster(namespaces=[NS])
    watch = cluster.watch(NS, label_selector="airflow-worker=1,airflow_executor_done!=True")
    cluster.create_pod(NS, pod("p", {"airflow-worker": "1"}))
    cluster.create_pod(NS, pod("other", {"airflow-worker": "2"}))
    cluster.set_status(NS, "p", {"phase": "Running"})
    cluster.patch_pod_labels(NS, "p", {"airflow_executor_done": "True"})
    events = watch.events()
    assert types(events) == ["ADDED", "MODIFIED", "DELETED"]
    left = events[-1]["object"]["metadata"]
    assert "deletionTimestamp" not in left  # left the selection, was not deleted
    assert "airflow_executor_done" not in left["labels"]  # the last content it selected
    assert int(left["resourceVersion"]) == int(cluster.resource_version)


def test_a_watch_resumes_from_a_version_or_gets_a_410_when_it_is_too_old() -> None:
    cluster = FakeCluster(history=3, namespaces=[NS])
    cluster.create_pod(NS, pod("p", {}))
    version = cluster.resource_version
    cluster.set_status(NS, "p", {"phase": "Running"})
    assert types(cluster.watch(NS, resource_version=version).events()) == ["MODIFIED"]
    for phase in ("Succeeded", "Failed", "Unknown", "Running"):
        cluster.set_status(NS, "p", {"phase": phase})
    expired = cluster.watch(NS, resource_version=version)
    (event,) = expired.events()
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410
    assert expired.closed
    fresh = cluster.watch(NS)  # no version: the current pods as ADDED
    assert types(fresh.events()) == ["ADDED"]


def test_expired_watches_end_with_a_410_and_get_nothing_more() -> None:
    cluster = FakeCluster(namespaces=[NS])
    watch = cluster.watch(NS)
    cluster.expire_watches()
    cluster.create_pod(NS, pod("p", {}))
    (event,) = watch.events()
    assert (event["type"], event["object"]["code"]) == ("ERROR", 410)


def test_a_dropped_watch_ends_without_an_event_and_resumes_from_its_version() -> None:
    cluster = FakeCluster(namespaces=[NS])
    watch = cluster.watch(NS)
    cluster.create_pod(NS, pod("p", {}))
    (added,) = watch.events()
    seen = added["object"]["metadata"]["resourceVersion"]
    cluster.drop_watches()
    assert watch.closed
    cluster.set_status(NS, "p", {"phase": "Running"})
    assert watch.events() == []  # nothing reaches a dropped watch, not even an ERROR
    resumed = cluster.watch(NS, resource_version=seen)
    assert [e["object"]["status"]["phase"] for e in resumed.events()] == ["Running"]


def test_after_compaction_a_watch_from_an_older_version_gets_a_410() -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, pod("p", {}))
    seen = cluster.resource_version
    cluster.set_status(NS, "p", {"phase": "Running"})
    cluster.compact()
    (event,) = cluster.watch(NS, resource_version=seen).events()
    assert (event["type"], event["object"]["code"]) == ("ERROR", 410)
    current = cluster.watch(NS, resource_version=cluster.resource_version)
    assert current.events() == []  # up to date: nothing missed, no 410
    assert not current.closed


def test_a_list_has_the_version_to_watch_from_and_only_the_selection() -> None:
    cluster = FakeCluster(namespaces=[NS, "other"])
    cluster.create_pod(NS, pod("a", {"x": "1"}, "Pending"))
    cluster.create_pod(NS, pod("b", {"x": "2"}))
    cluster.create_pod(
        "other", {**pod("c", {"x": "1"}), "metadata": {"name": "c", "labels": {"x": "1"}}}
    )
    listing = cluster.list_pods(NS, label_selector="x=1")
    assert [item["metadata"]["name"] for item in listing["items"]] == ["a"]
    assert listing["metadata"]["resourceVersion"] == cluster.resource_version
    assert len(cluster.list_pods(None, label_selector="x=1")["items"]) == 2


def names(listing: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in listing["items"]]


def test_a_list_in_pages_reads_one_snapshot_to_the_end() -> None:
    cluster = FakeCluster(namespaces=[NS])
    for name in ["a", "b", "c", "d", "e"]:
        cluster.create_pod(NS, pod(name, {"x": "1"}))
    first = cluster.list_pods(NS, limit=2)
    assert names(first) == ["a", "b"]
    version = first["metadata"]["resourceVersion"]
    assert version == cluster.resource_version
    assert first["metadata"]["remainingItemCount"] == 3
    # Changes after the first page do not show on the next ones.
    cluster.set_status(NS, "c", {"phase": "Running"})
    cluster.remove_pod(NS, "d")
    cluster.create_pod(NS, pod("bb", {"x": "1"}))
    second = cluster.list_pods(NS, limit=2, continue_token=first["metadata"]["continue"])
    assert names(second) == ["c", "d"]
    assert second["items"][0]["status"]["phase"] == "Pending"
    assert second["metadata"]["resourceVersion"] == version
    assert second["metadata"]["remainingItemCount"] == 1
    last = cluster.list_pods(NS, limit=2, continue_token=second["metadata"]["continue"])
    assert names(last) == ["e"]
    assert last["metadata"] == {"resourceVersion": version}  # complete: no continue
    # A new list sees the changes; limit 0 (or none) is no limit, as for the API server.
    assert names(cluster.list_pods(NS, limit=0)) == ["a", "b", "bb", "c", "e"]


def test_a_list_in_pages_with_a_selector_has_no_remaining_count() -> None:
    cluster = FakeCluster(namespaces=[NS])
    for name, value in [("a", "1"), ("b", "2"), ("c", "1"), ("d", "1")]:
        cluster.create_pod(NS, pod(name, {"x": value}))
    first = cluster.list_pods(NS, label_selector="x=1", limit=1)
    assert names(first) == ["a"]
    assert "remainingItemCount" not in first["metadata"]  # unknown with selectors
    token = first["metadata"]["continue"]
    rest = cluster.list_pods(NS, label_selector="x=1", continue_token=token)
    assert names(rest) == ["c", "d"]
    assert len(cluster.calls) == 6  # each page is a call (and can be failed)


def test_continue_tokens_expire_with_their_snapshot() -> None:
    cluster = FakeCluster(list_snapshots=2, namespaces=[NS])
    tokens = []
    for name in ["a", "b", "c", "d"]:
        cluster.create_pod(NS, pod(name, {}))
        tokens.append(cluster.list_pods(NS, limit=1)["metadata"].get("continue"))
    assert tokens[0] is None  # one pod: one page
    # Three snapshots were made, two are kept: the oldest token is expired.
    with pytest.raises(ApiError) as expired:
        cluster.list_pods(NS, continue_token=tokens[1])
    assert (expired.value.status, expired.value.reason) == (410, "Expired")
    assert "continue parameter is too old" in expired.value.body
    assert names(cluster.list_pods(NS, continue_token=tokens[2])) == ["b", "c"]
    assert names(cluster.list_pods(NS, continue_token=tokens[3])) == ["b", "c", "d"]
    cluster.expire_list_continuations()
    with pytest.raises(ApiError) as expired:
        cluster.list_pods(NS, continue_token=tokens[3])
    assert expired.value.status == 410
    fresh = cluster.list_pods(NS, limit=3)["metadata"]["continue"]
    cluster.compact()
    with pytest.raises(ApiError, match="Expired"):
        cluster.list_pods(NS, continue_token=fresh)


@pytest.mark.parametrize("token", ["not base64!", "e30=", "W10=", "eyJ2IjoxfQ==", "YWJj"])
def test_a_continue_token_the_cluster_did_not_make_is_a_400(token: str) -> None:
    cluster = FakeCluster(namespaces=[NS])
    with pytest.raises(ApiError) as raised:
        cluster.list_pods(NS, continue_token=token)
    assert (raised.value.status, raised.value.reason) == (400, "BadRequest")
    assert "invalid continue token" in raised.value.body

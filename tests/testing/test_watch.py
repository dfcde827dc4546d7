"""One watch stream (:mod:`k8s_workloads.testing.watch`): what it selects, and its
events taken in order, as JSON lines, out of order, or ended by an error."""

from __future__ import annotations

import json

from k8s_workloads.testing import FakeCluster, FakeWatch, FieldSelector, LabelSelector
from k8s_workloads.testing.watch import next_bookmark_at


def pod(name: str, namespace: str = "airflow", **labels: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}}


def test_a_watch_selects_by_namespace_labels_and_fields() -> None:
    watch = FakeWatch(
        "airflow", LabelSelector.parse("a=b"), FieldSelector.parse("metadata.name=p1")
    )
    assert watch.selects(pod("p1", a="b"))
    assert not watch.selects(pod("p1", "other", a="b"))
    assert not watch.selects(pod("p1", a="c"))
    assert not watch.selects(pod("p2", a="b"))
    assert not watch.selects(None)
    everywhere = FakeWatch(None, LabelSelector.parse(None), FieldSelector.parse(None))
    assert everywhere.selects(pod("p1", "other"))


def test_events_are_taken_oldest_first_and_can_be_reordered() -> None:
    cluster = FakeCluster(namespaces=["airflow"])
    watch = cluster.watch("airflow", resource_version=cluster.resource_version)
    spec = {"containers": [{"name": "base", "image": "busybox"}]}
    for name in ("p1", "p2", "p3"):
        cluster.create_pod("airflow", {"metadata": {"name": name}, "spec": spec})
    assert len(watch) == 3
    assert [event["object"]["metadata"]["name"] for event in watch.peek()] == ["p1", "p2", "p3"]
    assert watch.drop(1)["object"]["metadata"]["name"] == "p2"
    (line,) = watch.lines(1)
    assert json.loads(line)["object"]["metadata"]["name"] == "p1"
    assert [event["object"]["metadata"]["name"] for event in watch] == ["p3"]
    assert watch.events() == []


def test_an_expired_watch_ends_with_one_error_event_and_takes_nothing_more() -> None:
    cluster = FakeCluster(namespaces=["airflow"])
    watch = cluster.watch("airflow")
    cluster.expire_watches()
    (event,) = watch.events()
    assert (event["type"], event["object"]["code"]) == ("ERROR", 410)
    assert watch.closed
    cluster.create_pod(
        "airflow",
        {"metadata": {"name": "late"}, "spec": {"containers": [{"name": "b", "image": "x"}]}},
    )
    assert watch.events() == []


def test_bookmarks_are_periodic_until_two_seconds_before_the_deadline() -> None:
    # cache_watcher.go nextBookmarkTime: every bookmarkFrequency from now, or 2 s before
    # the deadline if that comes first; none once that moment is past.
    assert next_bookmark_at(100.0, every=60.0, deadline=1000.0) == 160.0
    assert next_bookmark_at(100.0, every=60.0, deadline=130.0) == 128.0
    assert next_bookmark_at(128.0, every=60.0, deadline=130.0) is None
    assert next_bookmark_at(100.0, every=60.0, deadline=101.0) is None
    # What a watch gets in turn: a bookmark every 0.2 s, the last 2 s before a 3 s timeout.
    marks, mark = [], next_bookmark_at(0.0, every=0.2, deadline=3.0)
    while mark is not None:
        marks.append(round(mark, 6))
        mark = next_bookmark_at(mark, every=0.2, deadline=3.0)
    assert marks == [0.2, 0.4, 0.6, 0.8, 1.0]

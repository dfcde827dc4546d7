"""The public test kit: selectors as the API server reads them, the fake cluster's watch
semantics and faults, the fake database."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.decisions.actions import EmitEvent
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.labels import (
    completed_pods_adoption_selector,
    live_pods_adoption_selector,
    watcher_selector,
)
from k8s_workloads.states import CallbackState, TaskInstanceState
from k8s_workloads.testing import (
    ApiError,
    DatabaseUnavailable,
    FakeAirflowDB,
    FakeCluster,
    FieldSelector,
    InvalidSelector,
    LabelSelector,
)

NS = "airflow"


def pod(name: str, labels: dict[str, str], phase: str = "Pending") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"containers": [{"name": "base", "image": "x"}]},
        "status": {"phase": phase},
    }


# --- selectors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("", {}, True),
        ("a=1", {"a": "1"}, True),
        ("a==1", {"a": "1"}, True),
        ("a=1", {"a": "2"}, False),
        ("a!=1", {}, True),  # != matches a pod without the label
        ("a!=1", {"a": "1"}, False),
        ("a", {"a": ""}, True),
        ("a", {}, False),
        ("!a", {}, True),
        ("!a", {"a": "x"}, False),
        ("a in (1, 2)", {"a": "2"}, True),
        ("a in (1,2)", {}, False),
        ("a notin (1,2)", {}, True),
        ("a notin (1,2)", {"a": "1"}, False),
        ("a=1,b!=2", {"a": "1", "b": "3"}, True),
        ("a=1, b!=2", {"a": "1", "b": "2"}, False),
        ("example.com/a=1", {"example.com/a": "1"}, True),
        ("a=", {"a": ""}, True),
    ],
)
def test_label_selectors_match_as_the_api_server(
    selector: str, labels: dict[str, str], expected: bool
) -> None:
    assert LabelSelector.parse(selector).matches(labels) is expected


@pytest.mark.parametrize(
    "selector", ["a=1=2", "a in 1", "=1", "a in (b", "a,,b", "a=b c", "Bad_Key/x=1", "a=-x"]
)
def test_invalid_label_selectors_are_refused(selector: str) -> None:
    with pytest.raises(InvalidSelector, match="label selector"):
        LabelSelector.parse(selector)


def test_field_selectors_take_the_pod_fields_the_api_server_indexes() -> None:
    succeeded = pod("p", {}, "Succeeded")
    assert FieldSelector.parse("status.phase=Succeeded").matches(succeeded)
    assert FieldSelector.parse("status.phase==Succeeded").matches(succeeded)
    assert not FieldSelector.parse("status.phase!=Succeeded").matches(succeeded)
    assert FieldSelector.parse("metadata.name=p,metadata.namespace=airflow").matches(succeeded)
    with pytest.raises(InvalidSelector, match="field label not supported"):
        FieldSelector.parse("metadata.labels=x")
    with pytest.raises(InvalidSelector, match="no operator"):
        FieldSelector.parse("status.phase")


_NAMES = st.sampled_from(["a", "b", "c"])
_VALUES = st.sampled_from(["1", "2", "3"])


@given(
    labels=st.dictionaries(_NAMES, _VALUES),
    requirements=st.lists(
        st.tuples(
            _NAMES,
            st.sampled_from(["=", "!=", "in", "notin", "exists", "!"]),
            st.sets(_VALUES, min_size=1),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_a_selector_matches_when_every_requirement_does(
    labels: dict[str, str], requirements: list[tuple[str, str, set[str]]]
) -> None:
    parts, expected = [], True
    for key, op, values in requirements:
        value = min(values)
        if op == "=":
            parts.append(f"{key}={value}")
            expected &= labels.get(key) == value
        elif op == "!=":
            parts.append(f"{key}!={value}")
            expected &= labels.get(key) != value
        elif op in {"in", "notin"}:
            parts.append(f"{key} {op} ({','.join(sorted(values))})")
            expected &= (labels.get(key) in values) is (op == "in")
        elif op == "exists":
            parts.append(key)
            expected &= key in labels
        else:
            parts.append(f"!{key}")
            expected &= key not in labels
    assert LabelSelector.parse(",".join(parts)).matches(labels) is expected


def test_the_librarys_own_selectors_parse_and_select() -> None:
    mine = {"airflow-worker": "5", "kubernetes_executor": "True"}
    assert LabelSelector.parse(watcher_selector(5).label_selector).matches(mine)
    done = {**mine, "airflow_executor_done": "True"}
    assert not LabelSelector.parse(watcher_selector(5).label_selector).matches(done)
    live = live_pods_adoption_selector(5)
    assert LabelSelector.parse(live.label_selector).matches(mine)
    assert FieldSelector.parse(live.field_selector).matches(pod("p", mine, "Running"))
    completed = completed_pods_adoption_selector(6, [7])
    assert LabelSelector.parse(completed.label_selector).matches(mine)
    assert not LabelSelector.parse(completed.label_selector).matches(
        {**mine, "airflow-worker": "7"}
    )


# --- the cluster -----------------------------------------------------------------------------


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


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


def test_any_call_fails_on_demand_with_the_api_exception_shape() -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.fail_next("create_pod", 429, reason="TooManyRequests", headers={"Retry-After": "3"})
    with pytest.raises(ApiError) as raised:
        cluster.create_pod(NS, pod("p", {}))
    assert (raised.value.status, raised.value.headers) == (429, {"Retry-After": "3"})
    assert '"code": 429' in raised.value.body
    cluster.fail_next("list_pods", None)
    with pytest.raises(ConnectionResetError):
        cluster.list_pods(NS)
    cluster.create_pod(NS, pod("p", {}))  # the fault was used up
    with pytest.raises(ApiError, match="already exists"):
        cluster.create_pod(NS, pod("p", {}))
    with pytest.raises(ValueError, match="call must be one of"):
        cluster.fail_next("reboot")


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


# --- the database ----------------------------------------------------------------------------


def test_the_database_guards_finished_tasks_but_not_callbacks() -> None:
    db = FakeAirflowDB()
    key, callback = (
        TaskInstanceKey("d", "t", "r", 1),
        CallbackKey("019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"),
    )
    db.add_task(key)
    db.add_callback(callback)
    db.task_finished(key, TaskInstanceState.SUCCESS)
    db.record(EmitEvent(key, TaskInstanceState.FAILED))
    assert db.task_states[key] is TaskInstanceState.SUCCESS
    db.record(EmitEvent(callback, CallbackState.SUCCESS))
    db.record(EmitEvent(callback, CallbackState.FAILED))  # Airflow 3.3 writes it anyway
    assert db.callback_states[callback] is CallbackState.FAILED
    assert db.reported(callback) == [CallbackState.SUCCESS, CallbackState.FAILED]
    db.fail_next()
    with pytest.raises(DatabaseUnavailable):
        db.read_states([key])
    assert db.read_states([key, TaskInstanceKey("d", "u", "r", 1)]) == {
        key: TaskInstanceState.SUCCESS,
        TaskInstanceKey("d", "u", "r", 1): None,
    }
    assert db.reads == 2


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

"""The kit's HTTP API server, driven by the real kubernetes client (36.x or 37.x)."""

from __future__ import annotations

import http.client
import itertools
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from k8s_workloads.pods.labels import POD_EXECUTOR_DONE_LABEL, watcher_selector
from k8s_workloads.testing import STATS_PATH, FakeApiServer, FakeCluster, ServerStats
from tests.support.pod_builds import named_task_pod as task_pod

NS = "airflow"
# The client is exercised at run time; kubernetes 36 has no types, 37 wants model objects
# where the executor passes manifests (dicts), which the client accepts.
Served = tuple[FakeCluster, Any, FakeApiServer]
WATCH: Any = k8s_watch
DYNAMIC: Any = DynamicClient


@pytest.fixture
def served() -> Iterator[Served]:
    cluster = FakeCluster(namespaces=[NS])
    with FakeApiServer(cluster, lifetime=60) as server:
        api_client: Any = k8s.ApiClient(k8s.Configuration(host=server.url))
        yield cluster, k8s.CoreV1Api(api_client), server
        api_client.close()


def test_pods_are_created_read_patched_listed_and_deleted_through_the_client(
    served: Served,
) -> None:
    cluster, api, _ = served
    created = api.create_namespaced_pod(NS, task_pod("load"))
    assert created.metadata.name == "load"
    assert created.status.phase == "Pending"
    assert int(created.metadata.resource_version) > 0
    read = api.read_namespaced_pod("load", NS)
    assert read.metadata.annotations["task_id"] == "load"
    patched = api.patch_namespaced_pod("load", NS, {"metadata": {"labels": {"x": "y"}}})
    assert patched.metadata.labels["x"] == "y"
    api.create_namespaced_pod(NS, task_pod("other", owner="8"))
    selected = api.list_namespaced_pod(NS, label_selector="airflow-worker=7")
    assert [pod.metadata.name for pod in selected.items] == ["load"]
    assert selected.metadata.resource_version == cluster.resource_version
    everywhere = api.list_pod_for_all_namespaces(field_selector="metadata.name=other")
    assert [pod.metadata.name for pod in everywhere.items] == ["other"]
    api.delete_namespaced_pod("load", NS)
    assert cluster.pod_names() == ["other"]
    with pytest.raises(ApiException) as missing:
        api.read_namespaced_pod("load", NS)
    assert missing.value.status == 404


def test_faults_reach_the_client_as_api_exceptions_with_their_headers(
    served: Served,
) -> None:
    cluster, api, _ = served
    cluster.fail_next("create_pod", 429, reason="TooManyRequests", headers={"Retry-After": "4"})
    with pytest.raises(ApiException) as raised:
        api.create_namespaced_pod(NS, task_pod("load"))
    error: Any = raised.value
    assert error.status == 429
    assert error.headers["Retry-After"] == "4"
    assert "TooManyRequests" in error.body
    api.create_namespaced_pod(NS, task_pod("load"))
    with pytest.raises(ApiException) as conflict:
        api.create_namespaced_pod(NS, task_pod("load"))
    assert conflict.value.status == 409
    with pytest.raises(ApiException) as bad:
        api.list_namespaced_pod(NS, label_selector="a in b")
    assert bad.value.status == 400


def test_the_watch_helper_streams_events_for_its_selector(
    served: Served,
) -> None:
    cluster, api, _ = served
    api.create_namespaced_pod(NS, task_pod("load"))
    version = api.list_namespaced_pod(NS).metadata.resource_version
    selector = watcher_selector("7").label_selector

    def changes() -> None:
        time.sleep(0.05)
        cluster.set_status(NS, "load", {"phase": "Running"})
        cluster.patch_pod_labels(NS, "load", {POD_EXECUTOR_DONE_LABEL: "True"})

    worker = threading.Thread(target=changes)
    worker.start()
    seen = []
    for event in WATCH.Watch().stream(
        api.list_namespaced_pod,
        NS,
        label_selector=selector,
        resource_version=version,
        timeout_seconds=2,
    ):
        seen.append((event["type"], event["object"].status.phase))
        if len(seen) == 2:
            break
    worker.join()
    # Leaving the selection (the done label) arrives as DELETED, as from the API server.
    assert seen == [("MODIFIED", "Running"), ("DELETED", "Running")]


def test_a_watch_from_a_compacted_version_gets_a_410(
    served: Served,
) -> None:
    cluster, api, _ = served
    api.create_namespaced_pod(NS, task_pod("load"))
    for phase in ["Running"] * 3:
        cluster.set_status(NS, "load", {"phase": phase})
    cluster._history.clear()  # etcd compacted everything
    response = api.list_namespaced_pod(
        NS, watch=True, resource_version="1", timeout_seconds=2, _preload_content=False
    )
    lines = [line for line in response.read().decode().splitlines() if line]
    (event,) = [json.loads(line) for line in lines]
    assert (event["type"], event["object"]["code"]) == ("ERROR", 410)


def test_the_dynamic_client_discovers_pods_and_lists_metadata_only(
    served: Served,
) -> None:
    _, api, _ = served
    api.create_namespaced_pod(NS, task_pod("load"))
    dynamic = DYNAMIC(api.api_client)
    pods = dynamic.resources.get(api_version="v1", kind="Pod")
    listing = dynamic.get(
        resource=pods,
        namespace=NS,
        header_params={
            "Accept": "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
        },
    )
    (item,) = listing.items
    assert item.metadata.name == "load"
    assert item.kind == "PartialObjectMetadata"


def test_the_server_stops_by_itself_and_binds_to_loopback() -> None:
    server = FakeApiServer(FakeCluster(namespaces=[NS]), lifetime=0.2).start()
    assert server.url.startswith("http://127.0.0.1:")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            k8s.CoreV1Api(k8s.ApiClient(k8s.Configuration(host=server.url))).list_namespaced_pod(
                NS, _request_timeout=0.5
            )
        except Exception:  # noqa: BLE001 - refused once it stopped, as wanted
            break
        time.sleep(0.1)
    else:
        pytest.fail("the server did not stop after its lifetime")
    server.stop()  # twice is fine


def server_address(api: Any) -> str:
    host: str = api.api_client.configuration.host
    return host.removeprefix("http://")


def _exchange(
    connection: http.client.HTTPConnection, method: str, path: str, body: object = None
) -> tuple[int, Any]:
    payload = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} if payload is not None else {}
    connection.request(method, path, body=payload, headers=headers)
    response = connection.getresponse()
    raw = response.read()
    assert response.getheader("Content-Type") == "application/json", raw
    return response.status, json.loads(raw)


def test_one_kept_alive_connection_serves_every_answer_including_errors_with_bodies(
    served: Served,
) -> None:
    cluster, _, server = served
    connection = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=10)
    try:
        assert _exchange(connection, "GET", "/version")[0] == 200
        socket_used = connection.sock
        pods = f"/api/v1/namespaces/{NS}/pods"
        answers = [
            # A 404 for a POST whose body the route never needed.
            _exchange(connection, "POST", "/api/v1/nowhere", {"spec": "x" * 5000}),
            # A method http.server has no handler for: 501, its body read all the same.
            _exchange(connection, "PUT", f"{pods}/load", task_pod("load")),
            _exchange(connection, "POST", f"{pods}/load", task_pod("load")),  # 405
            _exchange(connection, "POST", pods, [1, 2]),  # not an object: 400
            _exchange(connection, "POST", pods, "text"),
            _exchange(connection, "PATCH", f"{pods}/load", [1]),  # 422, never a crash
            _exchange(connection, "POST", pods, task_pod("load")),
            _exchange(connection, "DELETE", f"{pods}/load", [1]),  # DeleteOptions not an object
            _exchange(connection, "DELETE", f"{pods}/load", {"gracePeriodSeconds": 0}),
        ]
        codes = [code for code, _ in answers]
        assert codes == [404, 405, 405, 400, 400, 415, 201, 400, 200]
        assert all(document["kind"] == "Status" for code, document in answers if code >= 400)
        assert answers[3][1]["reason"] == "BadRequest"
        for _ in range(50):
            code, listing = _exchange(connection, "GET", pods)
            assert (code, listing["items"]) == (200, [])
        # http.client reconnects silently when the server closes: the same socket proves
        # every answer came over the one connection.
        assert connection.sock is socket_used
    finally:
        connection.close()
    assert server.stats.connections == 1
    assert cluster.pod_names() == []
    assert server.delete_options == [((NS, "load"), {"gracePeriodSeconds": 0})]


def test_the_client_lists_in_pages_of_one_snapshot(served: Served) -> None:
    cluster, api, _ = served
    for name in ["a", "b", "c"]:
        api.create_namespaced_pod(NS, task_pod(name))
    first = api.list_namespaced_pod(NS, limit=2)
    assert [pod.metadata.name for pod in first.items] == ["a", "b"]
    assert first.metadata.remaining_item_count == 1
    cluster.set_status(NS, "c", {"phase": "Running"})
    rest = api.list_namespaced_pod(NS, limit=2, _continue=first.metadata._continue)
    assert [(pod.metadata.name, pod.status.phase) for pod in rest.items] == [("c", "Pending")]
    assert rest.metadata.resource_version == first.metadata.resource_version
    assert rest.metadata._continue is None
    # Metadata-only lists page the same way.
    connection = http.client.HTTPConnection(server_address(api), timeout=10)
    connection.request(
        "GET",
        f"/api/v1/namespaces/{NS}/pods?limit=1",
        headers={"Accept": "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"},
    )
    partial = json.loads(connection.getresponse().read())
    connection.close()
    assert partial["kind"] == "PartialObjectMetadataList"
    assert partial["metadata"]["remainingItemCount"] == 2
    assert [item["metadata"]["name"] for item in partial["items"]] == ["a"]


def test_an_expired_or_malformed_continue_token_is_refused(served: Served) -> None:
    cluster, api, _ = served
    for name in ["a", "b"]:
        api.create_namespaced_pod(NS, task_pod(name))
    token = api.list_pod_for_all_namespaces(limit=1).metadata._continue
    cluster.expire_list_continuations()
    with pytest.raises(ApiException) as expired:
        api.list_pod_for_all_namespaces(limit=1, _continue=token)
    assert expired.value.status == 410
    status = json.loads(str(expired.value.body))
    assert (status["kind"], status["reason"]) == ("Status", "Expired")
    assert status["message"].startswith("The provided continue parameter is too old")
    with pytest.raises(ApiException) as malformed:
        api.list_namespaced_pod(NS, _continue="garbage")
    assert malformed.value.status == 400
    connection = http.client.HTTPConnection(server_address(api), timeout=10)
    assert _exchange(connection, "GET", "/api/v1/pods?limit=many")[0] == 400
    connection.close()


def test_the_kubernetes_client_keeps_one_connection_through_errors_and_deletes(
    served: Served,
) -> None:
    cluster, api, server = served
    api.create_namespaced_pod(NS, task_pod("load"))
    with pytest.raises(ApiException) as missing:
        api.read_namespaced_pod("missing", NS)
    assert missing.value.status == 404
    api.delete_namespaced_pod("load", NS, body=k8s.V1DeleteOptions(grace_period_seconds=0))
    for number in range(30):
        api.create_namespaced_pod(NS, task_pod(f"pod-{number}"))
    assert len(api.list_namespaced_pod(NS).items) == 30
    stats = server.stats
    assert stats.connections == 1
    assert dict(stats.requests) == {
        "DELETE pods": 1,
        "GET pods": 1,
        "LIST pods": 1,
        "POST pods": 31,
    }
    assert server.delete_options == [((NS, "load"), {"gracePeriodSeconds": 0})]
    assert len(cluster.pod_names()) == 30


def test_stats_count_requests_by_verb_and_resource_and_over_http(served: Served) -> None:
    cluster, api, server = served
    for name in ["a", "b"]:
        api.create_namespaced_pod(NS, task_pod(name))
    api.patch_namespaced_pod("a", NS, {"metadata": {"labels": {"x": "y"}}})
    api.delete_namespaced_pod("b", NS)
    api.list_namespaced_pod(NS, limit=1)
    api.list_pod_for_all_namespaces()
    cluster.compact()  # so the watch ends at once, with its 410
    api.list_namespaced_pod(NS, watch=True, resource_version="1", _preload_content=False).read()
    expected = {"DELETE pods": 1, "LIST pods": 2, "PATCH pods": 1, "POST pods": 2, "WATCH pods": 1}
    stats = server.stats
    assert dict(stats.requests) == expected
    assert (stats.count("LIST", "pods"), stats.count("GET", "secrets")) == (2, 0)
    # One request at a time, and watches are never held as in flight.
    assert (stats.max_in_flight, stats.max_in_flight_creations) == (1, 1)
    connection = http.client.HTTPConnection(server_address(api), timeout=10)
    code, document = _exchange(connection, "GET", STATS_PATH)
    connection.close()
    over_http = ServerStats.from_json(document)
    assert code == 200
    assert over_http.requests == stats.requests  # reading the stats is no API call
    assert over_http.connections == server.stats.connections >= 2


def test_concurrent_creations_are_seen_in_flight_together() -> None:
    cluster = FakeCluster(namespaces=[NS])
    # The latency holds each creation in flight, so that the threads' requests overlap.
    with FakeApiServer(cluster, lifetime=60, latency=0.2) as server:
        start = threading.Barrier(4)

        def create(name: str) -> None:
            api_client: Any = k8s.ApiClient(k8s.Configuration(host=server.url))
            api: Any = k8s.CoreV1Api(api_client)
            start.wait()
            api.create_namespaced_pod(NS, task_pod(name))
            api_client.close()

        workers = [threading.Thread(target=create, args=(f"pod-{n}",)) for n in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        stats = server.stats
    assert len(cluster.pod_names()) == 4
    assert stats.count("POST", "pods") == 4
    assert stats.max_in_flight_creations >= 2
    assert stats.max_in_flight >= stats.max_in_flight_creations
    assert stats.connections == 4


def test_bookmarks_come_every_bookmark_seconds_while_other_events_flow() -> None:
    """The watch cache sends a watch's bookmarks on a schedule, not when it is idle
    (cacher.go requeues a watcher after each bookmark): here a change every 20 ms never
    leaves the watch idle, and bookmarks come all the same, each at the newest version."""
    cluster = FakeCluster(namespaces=[NS])
    with FakeApiServer(cluster, lifetime=60, bookmark_seconds=0.2) as server:
        api_client: Any = k8s.ApiClient(k8s.Configuration(host=server.url))
        api: Any = k8s.CoreV1Api(api_client)
        api.create_namespaced_pod(NS, task_pod("load"))
        version = cluster.resource_version
        done = threading.Event()

        def churn() -> None:
            for number in range(100_000):
                if done.wait(0.02):
                    return
                cluster.patch_pod_labels(NS, "load", {"n": str(number)})

        worker = threading.Thread(target=churn)
        worker.start()
        response = api.list_namespaced_pod(
            NS,
            watch=True,
            allow_watch_bookmarks=True,
            resource_version=version,
            timeout_seconds=10,
            _preload_content=False,
        )
        seen: list[tuple[str, int]] = []
        try:
            for line in response:  # the stream's lines, as they arrive
                event = json.loads(line)
                seen.append((event["type"], int(event["object"]["metadata"]["resourceVersion"])))
                if [kind for kind, _ in seen].count("BOOKMARK") == 3:
                    break
        finally:
            done.set()
            worker.join()
            response.release_conn()
            api_client.close()
    kinds = [kind for kind, _ in seen]
    first, last = kinds.index("BOOKMARK"), len(kinds) - 1
    assert "MODIFIED" in kinds[first:last]  # events flowed between the bookmarks
    for (_, before), (_, version_seen) in itertools.pairwise(seen):
        assert version_seen >= before  # a bookmark carries the newest version
    assert kinds.count("BOOKMARK") == 3

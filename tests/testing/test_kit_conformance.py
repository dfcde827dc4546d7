"""The kit's API server against what a real one answers, through real clients.

Each test is one behaviour, run with the sync ``kubernetes`` client and with
``kubernetes_asyncio`` (the ``client`` fixture), checking the exact status code and the
fields a real API server returns; each docstring names the rule it follows (the API
conventions in kubernetes/community, the API concepts page, or the registry code in
kubernetes/kubernetes). kubectl has its own file, ``tests/testing/test_kit_kubectl.py``.
"""

from __future__ import annotations

import base64
import http.client
import json
from typing import Any

import pytest

from k8s_workloads.testing import FakeApiServer, FakeCluster
from tests.support.kit_clients import Client, Failure, fails

NS = "airflow"


def pod(name: str = "p", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "x"}},
        "spec": {"containers": [{"name": "base", "image": "busybox"}], **spec},
    }


def causes(failure: Failure) -> list[tuple[str, str]]:
    return [(cause["field"], cause["reason"]) for cause in failure.body["details"]["causes"]]


# --- PATCH by content type --------------------------------------------------------------


def test_a_dict_body_is_a_strategic_merge_patch(client: Client, cluster: FakeCluster) -> None:
    """The clients send a dict as application/strategic-merge-patch+json; maps merge, null
    removes a key, and ``containers`` merge by ``name`` (k8s.io/api core/v1 types.go:
    ``patchStrategy:"merge" patchMergeKey:"name"``)."""
    client("create_namespaced_pod", NS, pod())
    patched = client(
        "patch_namespaced_pod",
        "p",
        NS,
        {
            "metadata": {"labels": {"app": None, "team": "data"}},
            "spec": {"containers": [{"name": "base", "image": "busybox:2"}]},
        },
    )
    assert patched["metadata"]["labels"] == {"team": "data"}
    (base,) = patched["spec"]["containers"]
    # The image changed; what the server defaulted at create (imagePullPolicy Always for
    # "busybox", no tag) is stored and stays.
    assert (base["name"], base["image"], base["imagePullPolicy"]) == ("base", "busybox:2", "Always")
    stored = cluster.pod(NS, "p")
    assert stored is not None
    assert stored["metadata"]["labels"] == {"team": "data"}


def test_a_list_body_is_a_json_patch_with_test(client: Client) -> None:
    """A list is sent as application/json-patch+json (RFC 6902); a failed ``test`` fails
    the whole patch with 422 (apiserver handlers/patch.go) and nothing changes."""
    client("create_namespaced_pod", NS, pod())
    patched = client(
        "patch_namespaced_pod",
        "p",
        NS,
        [
            {"op": "test", "path": "/metadata/labels/app", "value": "x"},
            {"op": "add", "path": "/metadata/labels/owner~1id", "value": "7"},
            {"op": "copy", "from": "/metadata/labels/app", "path": "/metadata/labels/copy"},
            {"op": "remove", "path": "/metadata/labels/app"},
        ],
    )
    assert patched["metadata"]["labels"] == {"owner/id": "7", "copy": "x"}
    failure = fails(
        client,
        "patch_namespaced_pod",
        "p",
        NS,
        [
            {"op": "replace", "path": "/metadata/labels/copy", "value": "y"},
            {"op": "test", "path": "/metadata/labels/copy", "value": "x"},
        ],
    )
    assert (failure.status, failure.body["reason"]) == (422, "Invalid")
    failure = fails(
        client, "patch_namespaced_pod", "p", NS, [{"op": "remove", "path": "/nowhere/at/all"}]
    )
    assert failure.status == 422
    assert client("read_namespaced_pod", "p", NS)["metadata"]["labels"]["copy"] == "x"


def test_a_merge_patch_replaces_lists(cluster: FakeCluster) -> None:
    """application/merge-patch+json is RFC 7386: a list in the patch replaces the list
    (no merge keys), so a container list without the image is refused (422)."""
    cluster.create_pod(NS, pod())
    with pytest.raises(Exception) as raised:
        cluster.patch_pod(
            NS,
            "p",
            {"spec": {"containers": [{"name": "base"}]}},
            patch_type="application/merge-patch+json",
        )
    assert getattr(raised.value, "status", None) == 422
    patched = cluster.patch_pod(
        NS, "p", {"metadata": {"annotations": {"a": "1"}}}, patch_type="merge"
    )
    assert patched["metadata"]["annotations"] == {"a": "1"}


def test_an_unsupported_patch_type_is_415(cluster: FakeCluster) -> None:
    """A PATCH in a media type the server does not accept is 415 UnsupportedMediaType
    (apiserver handlers/patch.go: the accepted patch types)."""
    cluster.create_pod(NS, pod())
    with FakeApiServer(cluster, lifetime=30) as server:
        connection = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=10)
        connection.request(
            "PATCH",
            f"/api/v1/namespaces/{NS}/pods/p",
            body=b"{}",
            headers={"Content-Type": "application/xml"},
        )
        response = connection.getresponse()
        document = json.loads(response.read())
        connection.close()
    assert (response.status, document["reason"]) == (415, "UnsupportedMediaType")


def test_a_patch_of_an_immutable_field_is_422(client: Client) -> None:
    """The pod strategy's ValidateUpdate: only images, activeDeadlineSeconds, tolerations
    (additions) and terminationGracePeriodSeconds may change in a pod's spec; anything else
    is 422 Invalid with the cause on ``spec`` (FieldValueForbidden)."""
    client("create_namespaced_pod", NS, pod())
    failure = fails(client, "patch_namespaced_pod", "p", NS, {"spec": {"restartPolicy": "Never"}})
    assert failure.status == 422
    assert causes(failure) == [("spec", "FieldValueForbidden")]
    failure = fails(client, "patch_namespaced_pod", "p", NS, {"metadata": {"name": "q"}})
    assert failure.status == 422
    assert causes(failure) == [("metadata.name", "FieldValueInvalid")]


def test_a_strict_patch_with_an_unknown_field_is_400(client: Client) -> None:
    """fieldValidation=Strict applies to patches too (API concepts, "Field validation"):
    an unknown field is a 400 and nothing changes; by default it is dropped."""
    client("create_namespaced_pod", NS, pod())
    unknown = [{"op": "add", "path": "/spec/bogus", "value": 1}]
    failure = fails(client, "patch_namespaced_pod", "p", NS, unknown, field_validation="Strict")
    assert (failure.status, failure.body["reason"]) == (400, "BadRequest")
    assert 'unknown field "spec.bogus"' in failure.body["message"]
    patched = client("patch_namespaced_pod", "p", NS, unknown)
    assert "bogus" not in patched["spec"]


def test_a_patch_at_a_stale_resource_version_is_409(client: Client) -> None:
    """Optimistic concurrency (API conventions, "Concurrency Control and Consistency"): a
    patch carrying a resourceVersion other than the object's is 409 Conflict."""
    created = client("create_namespaced_pod", NS, pod())
    version = created["metadata"]["resourceVersion"]
    client("patch_namespaced_pod", "p", NS, {"metadata": {"labels": {"a": "1"}}})
    failure = fails(
        client,
        "patch_namespaced_pod",
        "p",
        NS,
        {"metadata": {"resourceVersion": version, "labels": {"a": "2"}}},
    )
    assert (failure.status, failure.body["reason"]) == (409, "Conflict")


def test_the_status_subresource_changes_only_status(client: Client) -> None:
    """``pods/status`` (the kubelet's write path): the status strategy keeps the stored
    spec and metadata and takes only ``status``; the main resource ignores ``status``."""
    client("create_namespaced_pod", NS, pod())
    patched = client(
        "patch_namespaced_pod_status",
        "p",
        NS,
        {"status": {"phase": "Running"}, "metadata": {"labels": {"ignored": "1"}}},
    )
    assert patched["status"]["phase"] == "Running"
    assert "ignored" not in patched["metadata"]["labels"]
    again = client("patch_namespaced_pod", "p", NS, {"status": {"phase": "Failed"}})
    assert again["status"]["phase"] == "Running"
    assert client("read_namespaced_pod_status", "p", NS)["status"]["phase"] == "Running"


# --- deletion ---------------------------------------------------------------------------


def test_an_unscheduled_pod_is_deleted_at_once(client: Client, cluster: FakeCluster) -> None:
    """The pod strategy's CheckGracefulDelete gives a pod with no spec.nodeName grace 0;
    Store.Delete writes that graceful update (MODIFIED: deletionTimestamp now,
    deletionGracePeriodSeconds 0) and deletes the pod at once (DELETED, same timestamp):
    gone, the name free again."""
    client("create_namespaced_pod", NS, pod())
    watch = cluster.watch(NS, resource_version=cluster.resource_version)
    client("delete_namespaced_pod", "p", NS)
    events = watch.events()
    assert [event["type"] for event in events] == ["MODIFIED", "DELETED"]
    last = events[1]["object"]["metadata"]
    assert last["deletionGracePeriodSeconds"] == 0
    assert last["deletionTimestamp"] == events[0]["object"]["metadata"]["deletionTimestamp"]
    assert fails(client, "read_namespaced_pod", "p", NS).status == 404
    client("create_namespaced_pod", NS, pod())


def test_a_bound_pod_terminates_gracefully_until_the_kubelet_confirms(
    client: Client, cluster: FakeCluster
) -> None:
    """Graceful deletion (API concepts, "Graceful termination"; registry rest.BeforeDelete):
    a bound pod gets deletionTimestamp (now + grace) and deletionGracePeriodSeconds, one
    MODIFIED, stays readable, its name taken (409 AlreadyExists), until the kubelet's
    confirmation (a grace-0 delete with the uid precondition: MODIFIED, DELETED)."""
    created = client("create_namespaced_pod", NS, pod(terminationGracePeriodSeconds=45))
    cluster.bind_pod(NS, "p", "node-1")
    watch = cluster.watch(NS, resource_version=cluster.resource_version)
    answered = client("delete_namespaced_pod", "p", NS)
    assert answered["metadata"]["deletionGracePeriodSeconds"] == 45
    assert answered["metadata"]["deletionTimestamp"]
    assert client("read_namespaced_pod", "p", NS)["metadata"]["deletionGracePeriodSeconds"] == 45
    failure = fails(client, "create_namespaced_pod", NS, pod())
    assert (failure.status, failure.body["reason"]) == (409, "AlreadyExists")
    shorter = client("delete_namespaced_pod", "p", NS, grace_period_seconds=5)
    assert shorter["metadata"]["deletionGracePeriodSeconds"] == 5
    cluster.finish_deletion(NS, "p", uid=created["metadata"]["uid"])
    kinds = [event["type"] for event in watch.events()]
    assert kinds == ["MODIFIED", "MODIFIED", "MODIFIED", "DELETED"]  # delete, shorter, kubelet
    assert fails(client, "read_namespaced_pod", "p", NS).status == 404


def test_grace_zero_and_terminal_pods_go_at_once(client: Client, cluster: FakeCluster) -> None:
    """CheckGracefulTermination: gracePeriodSeconds 0, or a Succeeded/Failed pod, is
    deleted at once even when bound."""
    for name in ("a", "b"):
        client("create_namespaced_pod", NS, pod(name))
        cluster.bind_pod(NS, name, "node-1")
    cluster.set_status(NS, "b", {"phase": "Succeeded"})
    client("delete_namespaced_pod", "a", NS, grace_period_seconds=0)
    client("delete_namespaced_pod", "b", NS)
    assert cluster.pod_names() == []


def test_delete_preconditions_that_do_not_match_are_409(client: Client) -> None:
    """DeleteOptions.preconditions (uid, resourceVersion): a mismatch is 409 Conflict and
    the pod stays."""
    client("create_namespaced_pod", NS, pod())
    failure = fails(
        client,
        "delete_namespaced_pod",
        "p",
        NS,
        body={"preconditions": {"uid": "not-the-uid"}},
    )
    assert (failure.status, failure.body["reason"]) == (409, "Conflict")
    assert "Precondition failed: UID" in failure.body["message"]
    failure = fails(
        client, "delete_namespaced_pod", "p", NS, body={"preconditions": {"resourceVersion": "1"}}
    )
    assert failure.status == 409
    assert client("read_namespaced_pod", "p", NS)["metadata"]["name"] == "p"


def test_delete_does_not_use_up_read_faults(client: Client, cluster: FakeCluster) -> None:
    """A fault meant for ``read_pod`` is for the next read, not for a DELETE (which the
    server answers from its own read)."""
    client("create_namespaced_pod", NS, pod())
    cluster.fail_next("read_pod", 503)
    client("delete_namespaced_pod", "p", NS)
    client("create_namespaced_pod", NS, pod())
    assert fails(client, "read_namespaced_pod", "p", NS).status == 503


# --- logs, Secrets, namespaces ----------------------------------------------------------


def test_pod_logs_are_served_per_container(client: Client, cluster: FakeCluster) -> None:
    """``pods/{name}/log``: the container's output as text; a pod of several containers
    needs ``container`` (400 otherwise, as the API server answers)."""
    client("create_namespaced_pod", NS, pod())
    cluster.append_log(NS, "p", "base", "line 1\n")
    cluster.append_log(NS, "p", "base", "line 2\n")
    assert client.text("read_namespaced_pod_log", "p", NS) == "line 1\nline 2\n"
    with pytest.raises(Failure) as raised:
        client.text("read_namespaced_pod_log", "p", NS, container="nope")
    assert raised.value.status == 400


def test_secrets_are_stored_as_the_api_stores_them(client: Client) -> None:
    """Secrets (core/v1 Secret): stringData is merged into base64 data and never returned;
    type defaults to Opaque; uid, resourceVersion and creationTimestamp are set; list."""
    made = client(
        "create_namespaced_secret",
        NS,
        {"metadata": {"name": "s"}, "stringData": {"token": "abc"}, "data": {"x": "eA=="}},
    )
    assert made["data"] == {"x": "eA==", "token": base64.b64encode(b"abc").decode()}
    assert "stringData" not in made
    assert made["type"] == "Opaque"
    assert {"uid", "resourceVersion", "creationTimestamp"} <= set(made["metadata"])
    listed = client("list_namespaced_secret", NS)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["s"]
    assert client("read_namespaced_secret", "s", NS)["data"] == made["data"]


def test_a_pod_in_a_namespace_that_does_not_exist_is_404(client: Client) -> None:
    """The NamespaceLifecycle admission plugin: creating in a missing namespace is 404
    NotFound naming the namespace; listing there answers an empty list."""
    failure = fails(client, "create_namespaced_pod", "nowhere", pod())
    assert (failure.status, failure.body["details"]["kind"]) == (404, "namespaces")
    assert client("list_namespaced_pod", "nowhere")["items"] == []
    names = [item["metadata"]["name"] for item in client("list_namespace")["items"]]
    assert names == [NS, "default"]


# --- watches ----------------------------------------------------------------------------


def test_an_injected_410_arrives_in_the_stream(client: Client, cluster: FakeCluster) -> None:
    """An expired resource version does not fail the watch request: HTTP 200 and one ERROR
    event carrying a 410 Expired Status, then the end of the stream (API concepts,
    "Efficient detection of changes"; the watch cache)."""
    cluster.fail_next("watch", 410, reason="Expired", message="too old resource version: 1")
    status, events = client.stream(NS, timeout_seconds=5)
    assert status == 200
    assert [event["type"] for event in events] == ["ERROR"]
    assert events[0]["object"]["code"] == 410
    assert events[0]["object"]["reason"] == "Expired"
    cluster.fail_next("watch", 403, reason="Forbidden")
    # Where a real server fails the request itself (authorization), the HTTP status says so.
    status, answer = client.stream(NS, timeout_seconds=5)
    assert (status, answer[0]["reason"]) == (403, "Forbidden")


def test_send_initial_events_ends_with_the_annotated_bookmark(
    client: Client, cluster: FakeCluster
) -> None:
    """sendInitialEvents=true with resourceVersionMatch=NotOlderThan and bookmarks: an
    ADDED per existing pod, then a BOOKMARK annotated k8s.io/initial-events-end: "true"
    (API concepts, "Streaming lists"); without the required options: 422."""
    for name in ("a", "b"):
        cluster.create_pod(NS, pod(name))
    status, events = client.stream(
        NS,
        timeout_seconds=1,
        allow_watch_bookmarks=True,
        send_initial_events=True,
        resource_version_match="NotOlderThan",
    )
    assert status == 200
    assert [event["type"] for event in events[:3]] == ["ADDED", "ADDED", "BOOKMARK"]
    mark = events[2]["object"]["metadata"]
    assert mark["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert mark["resourceVersion"] == cluster.resource_version
    status, answer = client.stream(NS, timeout_seconds=1, send_initial_events=True)
    assert (status, answer[0]["reason"]) == (422, "Invalid")
    fields = {cause["field"] for cause in answer[0]["details"]["causes"]}
    assert fields == {"resourceVersionMatch", "allowWatchBookmarks"}


@pytest.mark.parametrize("server_options", [{"bookmark_seconds": 0.2}])
def test_bookmarks_only_when_allowed(client: Client, cluster: FakeCluster) -> None:
    """allowWatchBookmarks=true: an idle watch gets BOOKMARK events carrying only the
    resource version, every bookmark_seconds until 2 s before its timeout; without it,
    none (API concepts, "Watch bookmarks"; the cacher's nextBookmarkTime)."""
    cluster.create_pod(NS, pod())
    version = cluster.resource_version
    status, events = client.stream(
        NS, timeout_seconds=3, allow_watch_bookmarks=True, resource_version=version
    )
    assert status == 200
    assert len(events) >= 2
    assert {event["type"] for event in events} == {"BOOKMARK"}
    assert all(event["object"]["metadata"] == {"resourceVersion": version} for event in events)
    status, events = client.stream(NS, timeout_seconds=3, resource_version=version)
    assert (status, events) == (200, [])


# --- validation and malformed requests --------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"metadata": {"name": "Bad_Name!"}}, "metadata.name"),
        ({"metadata": {"name": "UPPER"}}, "metadata.name"),
        ({"metadata": {"name": "x" * 254}}, "metadata.name"),
        (
            {"metadata": {"name": "p", "labels": {"run_id": "manual__2026-06-07T01:50:23+00:00"}}},
            "metadata.labels['run_id']",
        ),
        ({"metadata": {"name": "p", "labels": {"Bad Key": "x"}}}, "metadata.labels['Bad Key']"),
        (
            {"metadata": {"name": "p", "annotations": {"a": "x" * 262_144}}},
            "metadata.annotations",
        ),
        ({"spec": {"containers": [{"name": "base"}]}}, "spec.containers[0].image"),
        ({"spec": {"containers": []}}, "spec.containers"),
        ({"spec": None}, "spec.containers"),
    ],
    ids=[
        "underscore",
        "upper",
        "254 long",
        "run_id",
        "key",
        "annotations",
        "image",
        "none",
        "spec",
    ],
)
def test_an_invalid_pod_is_422_with_the_field(
    client: Client, change: dict[str, Any], field: str
) -> None:
    """Validation (pkg/apis/core/validation ValidatePodCreate; API conventions, "Naming"):
    422 Invalid, one cause per invalid field naming it; nothing is stored."""
    body = pod() | change
    if body["spec"] is None:
        del body["spec"]
    failure = fails(client, "create_namespaced_pod", NS, body)
    assert (failure.status, failure.body["reason"]) == (422, "Invalid")
    assert field in [cause["field"] for cause in failure.body["details"]["causes"]]
    assert failure.body["details"]["kind"] == "Pod"
    assert client("list_namespaced_pod", NS)["items"] == []


def _post(cluster: FakeCluster, body: object, query: str = "") -> tuple[int, Any, Any]:
    # Raw HTTP: kubernetes 37's models refuse such bodies before sending them.
    with FakeApiServer(cluster, lifetime=30) as server:
        connection = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=10)
        connection.request(
            "POST",
            f"/api/v1/namespaces/{NS}/pods{query}",
            body=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        response = connection.getresponse()
        document = json.loads(response.read())
        connection.close()
    return response.status, document, response.headers


def test_a_body_that_cannot_be_a_pod_is_400(cluster: FakeCluster) -> None:
    """Decoding (apiserver handlers/create.go, transformDecodeError): a body of another
    kind, or a value of the wrong type, "cannot be handled as a Pod": 400 BadRequest;
    ``[1, 2]`` for an object too."""
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    status, document, _ = _post(cluster, secret)
    assert (status, document["reason"]) == (400, "BadRequest")
    assert "cannot be handled as a Pod" in document["message"]
    assert _post(cluster, pod(hostNetwork="yes"))[0] == 400
    assert _post(cluster, [1, 2])[0] == 400
    assert cluster.pod_names() == []


def test_field_validation_strict_warn_and_ignore(cluster: FakeCluster) -> None:
    """fieldValidation (API concepts, "Field validation"): Strict refuses an unknown field
    (400); Warn stores the pod without it and says so in a ``Warning: 299`` header; Ignore
    and the default drop it silently; another value is a 400."""
    body = pod() | {"bogus": 1}
    status, document, _ = _post(cluster, body, "?fieldValidation=Strict")
    assert status == 400
    assert 'unknown field "bogus"' in document["message"]
    status, document, headers = _post(cluster, body, "?fieldValidation=Warn")
    assert status == 201
    assert "bogus" not in document
    assert headers["Warning"] == '299 - "unknown field \\"bogus\\""'
    status, document, headers = _post(cluster, pod("q") | {"bogus": 1})
    assert (status, "bogus" in document, headers["Warning"]) == (201, False, None)
    assert _post(cluster, pod("r"), "?fieldValidation=Sometimes")[0] == 400


def test_dry_run_answers_and_stores_nothing(client: Client, cluster: FakeCluster) -> None:
    """dryRun=All on create, patch and delete (API concepts, "Dry-run"): validated and
    answered as if done; nothing stored, no watch event."""
    client("create_namespaced_pod", NS, pod("kept"))
    watch = cluster.watch(NS, resource_version=cluster.resource_version)
    made = client("create_namespaced_pod", NS, pod(), dry_run="All")
    assert made["metadata"]["name"] == "p"
    patched = client(
        "patch_namespaced_pod", "kept", NS, {"metadata": {"labels": {"x": "1"}}}, dry_run="All"
    )
    assert patched["metadata"]["labels"]["x"] == "1"
    client("delete_namespaced_pod", "kept", NS, dry_run="All")
    assert cluster.pod_names() == ["kept"]
    stored = cluster.pod(NS, "kept")
    assert stored is not None
    assert "x" not in stored["metadata"]["labels"]
    assert watch.events() == []
    assert fails(client, "create_namespaced_pod", NS, pod("Bad!"), dry_run="All").status == 422


def test_an_unexpected_error_is_a_500_and_the_server_keeps_serving(
    client: Client, cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug inside the kit is a 500 InternalError Status, never a dropped connection;
    the next request is served."""
    client("create_namespaced_pod", NS, pod())

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(cluster, "read_pod", broken)
    failure = fails(client, "read_namespaced_pod", "p", NS)
    assert (failure.status, failure.body["reason"]) == (500, "InternalError")
    assert len(client("list_namespaced_pod", NS)["items"]) == 1


def test_discovery_lists_only_what_is_served(cluster: FakeCluster) -> None:
    """Discovery (/api/v1) lists each served resource with the verbs served: no update
    (PUT is a 405), pods/status get and patch, pods/log get."""
    with FakeApiServer(cluster, lifetime=30) as server:
        connection = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=10)
        connection.request("GET", "/api/v1")
        resources = json.loads(connection.getresponse().read())["resources"]
        connection.request("PUT", f"/api/v1/namespaces/{NS}/pods/p", body=b"{}")
        refused = connection.getresponse()
        refused.read()
        connection.close()
    verbs = {resource["name"]: sorted(resource["verbs"]) for resource in resources}
    assert verbs == {
        "pods": ["create", "delete", "get", "list", "patch", "watch"],
        "pods/binding": ["create"],
        "pods/status": ["get", "patch"],
        "pods/log": ["get"],
        "secrets": ["create", "delete", "get", "list"],
        "namespaces": ["get", "list"],
    }
    assert refused.status == 405


def test_the_clock_is_injectable() -> None:
    """Timestamps come from the cluster's clock: real time by default, ``clock=`` or
    ``now=`` for tests."""
    import datetime  # noqa: PLC0415

    moment = datetime.datetime(2030, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc)
    ticking = FakeCluster(namespaces=[NS], clock=lambda: moment)
    made = ticking.create_pod(NS, pod())
    assert made["metadata"]["creationTimestamp"] == "2030-05-06T07:08:09Z"
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    real = FakeCluster(namespaces=[NS]).create_pod(NS, pod())["metadata"]["creationTimestamp"]
    stamp = datetime.datetime.strptime(real, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc
    )
    assert before <= stamp <= datetime.datetime.now(datetime.timezone.utc)

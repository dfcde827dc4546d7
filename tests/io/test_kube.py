"""The ``kubernetes`` client's calls (:mod:`k8s_workloads.io.kube`) against the kit's
API server: lists in pages, the connection pool, a Secret before its pod."""

from __future__ import annotations

import logging
import socket
from typing import Any

import pytest
from kubernetes import client as k8s
from urllib3.exceptions import NewConnectionError, ReadTimeoutError

from k8s_workloads.executor import CreatePod, ReadPod
from k8s_workloads.io.kube import FAILURES, KubeCalls
from k8s_workloads.keys import TaskInstanceKey
from tests.support.io_world import NS, SPEC, Served
from tests.support.silent_server import SilentServer


def test_lists_are_read_in_pages_and_an_expired_token_starts_again(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(12):
        served.cluster.create_pod(
            NS, {"metadata": {"name": f"p{number}", "labels": {"a": "b"}}, "spec": SPEC}
        )
    calls = KubeCalls(served.api, page_size=5)
    pods, version = calls.list_pods(NS, label_selector="a=b")
    assert sorted(pod["metadata"]["name"] for pod in pods) == sorted(
        f"p{number}" for number in range(12)
    )
    assert version == served.cluster.resource_version
    assert served.server.stats.count("LIST", "pods") == 3

    pages = 0
    original = served.api.list_namespaced_pod

    def expiring(*args: Any, **kwargs: Any) -> Any:
        nonlocal pages
        pages += 1
        if pages == 2:  # the snapshot behind the first page's token is compacted away
            served.cluster.expire_list_continuations()
        return original(*args, **kwargs)

    monkeypatch.setattr(served.api, "list_namespaced_pod", expiring)
    pods, _ = calls.list_pods(NS, label_selector="a=b")
    assert len(pods) == 12
    assert pages == 2 + 3  # one page, the 410, then a whole new list


def test_a_list_that_keeps_expiring_fails(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    for number in range(6):
        served.cluster.create_pod(NS, {"metadata": {"name": f"p{number}"}, "spec": SPEC})
    calls = KubeCalls(served.api, page_size=2)
    original = served.api.list_namespaced_pod

    def expiring(*args: Any, **kwargs: Any) -> Any:
        served.cluster.expire_list_continuations()
        return original(*args, **kwargs)

    monkeypatch.setattr(served.api, "list_namespaced_pod", expiring)
    with pytest.raises(FAILURES) as caught:
        calls.list_pods(NS)
    assert getattr(caught.value, "status", None) == 410


def test_the_connection_pool_is_sized_to_the_calls_in_flight(served: Served) -> None:
    KubeCalls(served.api, pool_size=40)
    pool = served.api.api_client.rest_client.pool_manager.connection_pool_kw
    assert pool["maxsize"] == 40
    assert pool["block"] is True  # a call beyond the pool waits: never a 41st connection


def test_a_secret_is_created_before_its_pod_in_one_call(served: Served) -> None:
    calls = KubeCalls(served.api)
    secret = {"metadata": {"name": "s1"}, "stringData": {"a": "b"}}
    pod = {"metadata": {"name": "p1"}, "spec": {"containers": [{"name": "base"}]}}
    key = TaskInstanceKey("etl", "t", "manual__1", 1)
    served.cluster.fail_next("create_pod", 500)
    with pytest.raises(FAILURES):
        calls.perform(CreatePod(key, NS, pod, secret))
    assert served.cluster.secret(NS, "s1") is not None  # made first; the core deletes it
    assert served.cluster.pods() == []


def test_a_read_back_answers_the_pod_or_none_and_a_resend_keeps_its_secret(
    served: Served,
) -> None:
    calls = KubeCalls(served.api)
    key = TaskInstanceKey("etl", "t", "manual__1", 1)
    secret = {"metadata": {"name": "s2"}, "stringData": {"a": "b"}}
    pod = {"metadata": {"name": "p2"}, "spec": SPEC}
    assert calls.perform(ReadPod(key, NS, "p2")) is None  # a 404 is an answer: no pod
    served.cluster.fail_next("create_pod", None)  # the Secret is made, the pod is not
    with pytest.raises(FAILURES):
        calls.perform(CreatePod(key, NS, pod, secret))
    with pytest.raises(FAILURES):  # a first send meets the Secret: that is no resend
        calls.perform(CreatePod(key, NS, pod, secret))
    calls.perform(CreatePod(key, NS, pod, secret, resend=True))
    read = calls.perform(ReadPod(key, NS, "p2"))
    assert isinstance(read, dict)
    assert read["metadata"]["name"] == "p2"
    assert read["metadata"]["uid"] == served.cluster.pod(NS, "p2")["metadata"]["uid"]  # type: ignore[index]
    served.cluster.fail_next("read_pod", 503)
    with pytest.raises(FAILURES):  # any other failure is the core's
        calls.perform(ReadPod(key, NS, "p2"))


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # closed again: a connection to it is refused


def test_the_client_does_not_retry_on_its_own_nor_warn_per_attempt(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # urllib3 would try a refused connection four times, with a Retrying warning each:
    # retries are the core's (its creation pause and budgets), errors reach it as they are.
    url = f"http://127.0.0.1:{_closed_port()}"
    api = k8s.CoreV1Api(k8s.ApiClient(k8s.Configuration(host=url)))
    calls = KubeCalls(api)
    assert api.api_client.configuration.retries is False
    with caplog.at_level(logging.DEBUG, "urllib3"), pytest.raises(NewConnectionError):
        calls.list_pods(NS)
    urllib3_lines = [r.getMessage() for r in caplog.records if r.name.startswith("urllib3")]
    assert len(urllib3_lines) == 1  # one connection tried ...
    assert urllib3_lines[0].startswith("Starting new HTTP connection")  # ... and no Retrying


def test_a_call_without_an_answer_fails_at_its_read_timeout() -> None:
    with SilentServer() as silent:
        api = k8s.CoreV1Api(k8s.ApiClient(k8s.Configuration(host=silent.url)))
        calls = KubeCalls(api, request_args={"_request_timeout": (5, 0.2)})
        pod = {"metadata": {"name": "p1"}, "spec": SPEC}
        with pytest.raises(ReadTimeoutError):
            calls.perform(CreatePod(TaskInstanceKey("etl", "t", "manual__1", 1), NS, pod))
        assert silent.accepted >= 1  # it was sent, and never answered

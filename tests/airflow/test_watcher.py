"""k8s_workloads.airflow._watcher: the executor's watch thread, against a scripted API.

The watcher needs no Airflow (it is given an API client, a label selector, a queue and a
logger), so these tests run in every environment: each response is a list of chunks as
urllib3 streams them, cut anywhere, even inside a line.
"""

from __future__ import annotations

import json
import logging
import queue
import random
import threading
import time
import types
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kubernetes.client.exceptions import ApiException

from k8s_workloads.airflow._watcher import _Watcher, describe_failure, watch_backoff
from k8s_workloads.pods.labels import watcher_selector
from k8s_workloads.testing import FakeApiServer, FakeCluster

if TYPE_CHECKING:
    import pytest

NS = "airflow"
HOST = "https://kit.example:6443"
SELECTOR = watcher_selector("7").label_selector


def _line(kind: str, name: str, version: str) -> bytes:
    pod = {"metadata": {"name": name, "namespace": NS, "resourceVersion": version}}
    return json.dumps({"type": kind, "object": pod}).encode() + b"\n"


class _Response:
    """A watch response: its chunks, then the end of the stream (or, ``hold``, none)."""

    def __init__(self, chunks: list[bytes], *, hold: bool = False) -> None:
        self.chunks = chunks
        self.hold = hold
        self.released = False
        self.shut = threading.Event()

    def stream(self, amt: Any = None, decode_content: bool = True) -> Iterator[bytes]:  # noqa: ARG002
        yield from self.chunks
        if self.hold:  # an idle watch: nothing comes until the stream is shut down
            self.shut.wait(10)

    def shutdown(self) -> None:
        self.shut.set()

    def release_conn(self) -> None:
        self.released = True


class _Api:
    """``list_namespaced_pod`` / ``list_pod_for_all_namespaces`` answering from a script:
    a response, or an exception to raise."""

    def __init__(self, *answers: _Response | Exception) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str | None, dict[str, Any]]] = []
        self.asked = threading.Semaphore(0)
        self.api_client = types.SimpleNamespace(configuration=types.SimpleNamespace(host=HOST))

    def _answer(self, namespace: str | None, kwargs: dict[str, Any]) -> _Response:
        self.calls.append((namespace, kwargs))
        self.asked.release()
        answer = self.answers.pop(0) if self.answers else _Response([], hold=True)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def list_namespaced_pod(self, namespace: str, **kwargs: Any) -> _Response:
        return self._answer(namespace, kwargs)

    def list_pod_for_all_namespaces(self, **kwargs: Any) -> _Response:
        return self._answer(None, kwargs)


def _watcher(api: _Api, namespace: str | None = NS) -> tuple[_Watcher, queue.SimpleQueue[object]]:
    events: queue.SimpleQueue[object] = queue.SimpleQueue()
    watcher = _Watcher(
        api,
        namespace,
        events,
        label_selector=SELECTOR,
        log=logging.getLogger("test_watcher"),
        connect_timeout=3.0,
        rng=random.Random(1),
    )
    return watcher, events


def _drain(events: queue.SimpleQueue[object]) -> list[object]:
    out = []
    while not events.empty():
        out.append(events.get_nowait())
    return out


def test_lines_cut_across_chunks_arrive_whole_in_order_and_the_version_is_kept() -> None:
    text = (
        _line("ADDED", "a", "11") + b"\n" + _line("MODIFIED", "a", "12") + _line("ADDED", "b", "13")
    )
    chunks = [text[:7], text[7:60], text[60:61], text[61:]]  # cut inside lines
    response = _Response(chunks)
    api = _Api(response)
    watcher, events = _watcher(api)
    watcher._stream()
    got = _drain(events)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in got] == [  # type: ignore[index]
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("ADDED", "b"),
    ]
    assert watcher.resource_version == "13"
    assert response.released  # the connection goes back to the pool
    ((namespace, kwargs),) = api.calls
    assert namespace == NS
    assert kwargs["label_selector"] == "airflow-worker=7,airflow_executor_done!=True"
    assert kwargs["watch"] is True
    assert "resource_version" not in kwargs  # the first watch starts from now


def test_the_next_watch_resumes_from_the_last_version_seen() -> None:
    api = _Api(_Response([_line("ADDED", "a", "21")]), _Response([]))
    watcher, _ = _watcher(api)
    watcher._stream()
    watcher._stream()
    assert api.calls[1][1]["resource_version"] == "21"


def test_an_error_event_ends_the_stream_and_the_next_watch_starts_afresh() -> None:
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}
    after = _line("ADDED", "late", "99")
    api = _Api(
        _Response([_line("ADDED", "a", "31"), json.dumps(gone).encode() + b"\n", after]),
        _Response([]),
    )
    watcher, events = _watcher(api)
    watcher._stream()
    got = _drain(events)
    assert [e["type"] for e in got] == ["ADDED", "ERROR"]  # type: ignore[index]
    assert watcher.resource_version is None  # the core re-lists; nothing read past it
    assert not watcher.restart.is_set()  # consumed by the stream it ended
    watcher._stream()
    assert "resource_version" not in api.calls[1][1]


def test_text_that_is_not_json_is_passed_on_for_the_core_to_report() -> None:
    api = _Api(_Response([b"{not json\n", b"   \n", _line("ADDED", "a", "41")]))
    watcher, events = _watcher(api)
    watcher._stream()
    got = _drain(events)
    assert got[0] == "{not json"  # blank lines are no events
    assert len(got) == 2
    assert watcher.resource_version == "41"


def test_every_namespace_is_watched_with_one_call() -> None:
    api = _Api(_Response([_line("ADDED", "a", "51")]))
    watcher, _ = _watcher(api, namespace=None)
    watcher._stream()
    assert api.calls[0][0] is None  # list_pod_for_all_namespaces
    assert watcher.name == "k8s-workloads-watcher-all"


def test_the_thread_restarts_a_failed_watch_and_stop_ends_an_idle_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    idle = _Response([_line("ADDED", "a", "61")], hold=True)
    api = _Api(ConnectionError("connection refused"), idle)
    watcher, events = _watcher(api)
    watcher.first_backoff = 0.01
    with caplog.at_level(logging.DEBUG, logger="test_watcher"):
        watcher.start()
        try:
            for _ in range(2):  # the failed call, then (after the backoff) the idle watch
                assert api.asked.acquire(timeout=10)
            assert events.get(timeout=10)["object"]["metadata"]["name"] == "a"  # type: ignore[index]
        finally:
            watcher.stop(timeout=5)
    assert not watcher.is_alive()
    assert idle.shut.is_set()  # the open stream was shut down, not waited out
    assert idle.released
    assert len(api.calls) == 2  # stopped: no watch after the idle one
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.getMessage().startswith(
        f"The pod watch of namespace {NS} at {HOST} failed: ConnectionError: connection refused;"
    )
    assert warning.exc_info is None  # one line: the traceback only at debug level
    assert any(r.levelno == logging.DEBUG and r.exc_info for r in caplog.records)
    (info,) = [r for r in caplog.records if r.levelno == logging.INFO]
    assert info.getMessage() == (
        f"The pod watch of namespace {NS} at {HOST} is established again after 1 failed attempts"
    )


def test_a_watch_asks_for_bookmarks_a_random_server_timeout_and_a_read_timeout() -> None:
    api = _Api(*(_Response([]) for _ in range(20)))
    watcher, _ = _watcher(api)
    watcher.read_timeout = 7.0
    for _ in range(20):
        watcher._stream()
    timeouts = {kwargs["timeout_seconds"] for _, kwargs in api.calls}
    assert all(300 <= seconds < 600 for seconds in timeouts)  # client-go's reflector: 5-10 min
    assert len(timeouts) > 1  # spread: many schedulers' watches do not end together
    for _, kwargs in api.calls:
        assert kwargs["allow_watch_bookmarks"] is True
        assert kwargs["_request_timeout"] == (3.0, 7.0)  # (connect, read)
    again, _ = _watcher(_Api(*(_Response([]) for _ in range(20))))
    for _ in range(20):
        again._stream()
    assert [k["timeout_seconds"] for _, k in again.api.calls] == [
        k["timeout_seconds"] for _, k in api.calls
    ]  # seeded: the same


def test_a_bookmark_moves_the_version_the_next_watch_resumes_from() -> None:
    bookmark = {
        "type": "BOOKMARK",
        "object": {"kind": "Pod", "metadata": {"resourceVersion": "77"}},
    }
    api = _Api(
        _Response([_line("ADDED", "a", "71"), json.dumps(bookmark).encode() + b"\n"]), _Response([])
    )
    watcher, events = _watcher(api)
    watcher._stream()
    assert watcher.resource_version == "77"
    assert [e["type"] for e in _drain(events)] == ["ADDED", "BOOKMARK"]  # type: ignore[index]
    watcher._stream()
    assert api.calls[1][1]["resource_version"] == "77"


def test_the_backoff_doubles_from_1_to_30_seconds_with_jitter() -> None:
    rng = random.Random(3)
    delays = [watch_backoff(failures, rng) for failures in range(1, 9)]
    bases = [1, 2, 4, 8, 16, 30, 30, 30]
    for delay, base in zip(delays, bases, strict=True):
        assert base <= delay <= base * 1.25
    assert (
        len({round(delay / base, 6) for delay, base in zip(delays, bases, strict=True)}) > 1
    )  # jittered
    assert watch_backoff(10_000, rng) <= 30 * 1.25  # no overflow however long it fails


def test_failures_back_off_and_a_stream_that_delivers_resets_the_backoff() -> None:
    failed = ConnectionError("refused")
    api = _Api(failed, failed, failed, _Response([_line("ADDED", "a", "81")]), failed)
    watcher, _ = _watcher(api)
    waits: list[float] = []

    def wait(timeout: float | None = None) -> bool:
        assert timeout is not None
        waits.append(timeout)
        if len(waits) == 4:
            watcher.stopping.set()
        return watcher.stopping.is_set()

    watcher.stopping.wait = wait  # type: ignore[method-assign]
    watcher.run()
    # three failures: 1, 2, 4 s (each up to a quarter more); the next stream delivered a
    # line and ended: at once again; its failure starts from 1 s again
    assert [int(w) for w in waits] == [1, 2, 4, 1]


def test_an_api_error_is_one_line_with_its_status_and_message() -> None:
    error = ApiException(status=403, reason="Forbidden")
    error.body = json.dumps({"kind": "Status", "message": "pods is forbidden:\n no"})
    assert describe_failure(error) == "ApiException: HTTP 403 Forbidden: pods is forbidden: no"
    assert describe_failure(ValueError("")) == "ValueError"


# --- against the kit's API server, with the real client ----------------------------------


def _kit_watcher(
    server: FakeApiServer, read_timeout: float
) -> tuple[_Watcher, queue.SimpleQueue[object]]:
    from kubernetes import client as k8s  # noqa: PLC0415

    api = k8s.CoreV1Api(k8s.ApiClient(k8s.Configuration(host=server.url)))
    events: queue.SimpleQueue[object] = queue.SimpleQueue()
    log = logging.getLogger("test_watcher")
    watcher = _Watcher(api, NS, events, label_selector=SELECTOR, log=log, rng=random.Random(5))
    watcher.read_timeout = read_timeout
    watched = api.list_namespaced_pod
    versions: list[str | None] = []
    api.versions = versions  # type: ignore[attr-defined]

    def watch(namespace: str, **kwargs: Any) -> Any:
        versions.append(kwargs.get("resource_version"))
        return watched(namespace, **kwargs)

    api.list_namespaced_pod = watch  # type: ignore[method-assign,assignment]
    return watcher, events


def _running_pod(cluster: FakeCluster, name: str) -> None:
    labels = {"airflow-worker": "7", "kubernetes_executor": "True"}
    spec = {"containers": [{"name": "base", "image": "apache/airflow:3.3.2"}]}
    cluster.create_pod(NS, {"metadata": {"name": name, "labels": labels}, "spec": spec})


def _next_pod_event(events: queue.SimpleQueue[object], timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        event: Any = events.get(timeout=max(0.01, deadline - time.monotonic()))
        if event["type"] != "BOOKMARK":
            return event


def test_a_silent_watch_is_replaced_and_resumes_from_the_last_version(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # No bookmarks (their interval far beyond the read timeout): the connection is silent,
    # as one a load balancer dropped is.
    cluster = FakeCluster(namespaces=[NS])
    with FakeApiServer(cluster, lifetime=120, bookmark_seconds=1000) as server:
        watcher, events = _kit_watcher(server, read_timeout=1.0)
        watcher.first_backoff = 0.05
        with caplog.at_level(logging.INFO, logger="test_watcher"):
            watcher.start()
            try:
                _running_pod(cluster, "a")
                assert _next_pod_event(events, 30)["object"]["metadata"]["name"] == "a"
                started = time.monotonic()
                while server.stats.count("WATCH", "pods") < 2:  # replaced
                    assert time.monotonic() - started < 60, "a silent watch was kept"
                    time.sleep(0.05)
                _running_pod(cluster, "b")  # seen by the new watch, and "a" not again
                assert _next_pod_event(events, 30)["object"]["metadata"]["name"] == "b"
                first, second = watcher.api.versions[:2]
                assert first is None  # from now
                assert second is not None  # from the last version seen (a bookmark's too)
            finally:
                watcher.stop(timeout=5)
    timed_out = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert timed_out
    assert all("ReadTimeoutError" in line and server.url in line for line in timed_out)


def test_a_healthy_idle_watch_with_bookmarks_is_never_torn_down() -> None:
    cluster = FakeCluster(namespaces=[NS])
    with FakeApiServer(cluster, lifetime=120, bookmark_seconds=0.2) as server:
        watcher, events = _kit_watcher(server, read_timeout=1.0)
        watcher.start()
        try:
            bookmarks = 0
            while bookmarks < 15:  # 3 s of bookmarks, three read timeouts
                event: Any = events.get(timeout=30)
                bookmarks += event["type"] == "BOOKMARK"
            assert server.stats.count("WATCH", "pods") == 1
        finally:
            watcher.stop(timeout=5)

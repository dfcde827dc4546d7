"""k8s_workloads.airflow._watcher: the executor's watch thread, against a scripted API.

The watcher needs no Airflow (it is given an API client, a label selector, a queue and a
logger), so these tests run in every environment: each response is a list of chunks as
urllib3 streams them, cut anywhere, even inside a line.
"""

from __future__ import annotations

import datetime
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

from k8s_workloads.airflow._watcher import _Resume, _Watcher, _WatchFeed
from k8s_workloads.executor.config import ExecutorConfig
from k8s_workloads.executor.core import ExecutorCore
from k8s_workloads.executor.requests import ListPods
from k8s_workloads.io.watching import RELIST_WAIT_SECONDS, describe_failure, watch_backoff
from k8s_workloads.pods.labels import watcher_selector
from k8s_workloads.testing import FakeApiServer, FakeCluster

if TYPE_CHECKING:
    import pytest

    from k8s_workloads.watch.resolution import Resolution

NS = "airflow"
HOST = "https://kit.example:6443"
SELECTOR = watcher_selector("7").label_selector
NOW = datetime.datetime(2026, 12, 8, tzinfo=datetime.timezone.utc)


def _line(kind: str, name: str, version: str) -> bytes:
    pod = {"metadata": {"name": name, "namespace": NS, "resourceVersion": version}}
    return json.dumps({"type": kind, "object": pod}).encode() + b"\n"


class _Response:
    """A watch response: its chunks, then the end of the stream (or, ``hold``, none)."""

    def __init__(self, chunks: list[bytes], *, hold: bool = False) -> None:
        self.chunks = chunks
        self.hold = hold
        self.released = self.closed = False
        self.shut = threading.Event()

    def stream(self, amt: Any = None, decode_content: bool = True) -> Iterator[bytes]:  # noqa: ARG002
        yield from self.chunks
        if self.hold:  # an idle watch: nothing comes until the stream is shut down
            self.shut.wait(10)

    def shutdown(self) -> None:
        self.shut.set()

    def release_conn(self) -> None:
        self.released = True

    def close(self) -> None:
        self.closed = True


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


def _watcher(
    api: _Api,
    namespace: str | None = NS,
    *,
    events: queue.SimpleQueue[object] | None = None,
    resource_version: str | None = None,
) -> tuple[_Watcher, queue.SimpleQueue[object]]:
    events = queue.SimpleQueue() if events is None else events
    watcher = _Watcher(
        api,
        namespace,
        events,
        label_selector=SELECTOR,
        log=logging.getLogger("test_watcher"),
        connect_timeout=3.0,
        rng=random.Random(1),
        resource_version=resource_version,
    )
    return watcher, events


def _drain(events: queue.SimpleQueue[object]) -> list[object]:
    out = []
    while not events.empty():
        out.append(events.get_nowait())
    return out


class _AnsweringQueue(queue.SimpleQueue[object]):
    """A queue whose every resume ask is answered at once, from ``version``."""

    version: str | None = None

    def put(self, item: object, block: bool = True, timeout: float | None = None) -> None:
        if isinstance(item, _Resume):
            item.answer(self.version, 0)
        else:
            super().put(item, block, timeout)


def test_lines_cut_across_chunks_arrive_whole_in_order_as_they_came() -> None:
    lines = [_line("ADDED", "a", "11"), _line("MODIFIED", "a", "12"), _line("ADDED", "b", "13")]
    text = lines[0] + b"\n" + lines[1] + lines[2]
    chunks = [text[:7], text[7:60], text[60:61], text[61:]]  # cut inside lines
    response = _Response(chunks)
    api = _Api(response)
    watcher, events = _watcher(api)
    watcher._stream()
    # Not decoded here: the core decodes each line (its one path) and keeps the version.
    assert _drain(events) == [(NS, 0, line.rstrip(b"\n")) for line in lines]
    assert response.released  # the connection goes back to the pool
    ((namespace, kwargs),) = api.calls
    assert namespace == NS
    assert kwargs["label_selector"] == "airflow-worker=7,airflow_executor_done!=True"
    assert kwargs["watch"] is True
    assert "resource_version" not in kwargs  # the first watch starts from now


def test_a_stream_starts_from_the_version_it_was_given() -> None:
    api = _Api(_Response([_line("ADDED", "a", "21")]))
    watcher, _ = _watcher(api, resource_version="20")
    watcher._stream()
    assert api.calls[0][1]["resource_version"] == "20"


def test_an_error_line_and_text_that_is_not_json_go_on_for_the_core_to_read() -> None:
    gone = json.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 410}}).encode()
    api = _Api(_Response([b"{not json\n", b"   \n", gone + b"\n"]))
    watcher, events = _watcher(api)
    watcher._stream()
    assert _drain(events) == [(NS, 0, b"{not json"), (NS, 0, gone)]  # blank lines: no events


def test_the_next_stream_asks_where_from_and_starts_there() -> None:
    api = _Api(_Response([_line("ADDED", "a", "31")]), _Response([_line("ADDED", "b", "40")]))
    watcher, events = _watcher(api)
    watcher.start()
    try:
        assert events.get(timeout=10) == (NS, 0, _line("ADDED", "a", "31").rstrip())
        ask = events.get(timeout=10)  # the stream ended: where from?
        assert isinstance(ask, _Resume)
        assert ask.namespace == NS
        assert api.asked.acquire(timeout=10)
        assert not api.asked.acquire(timeout=0.3)  # no stream until it is answered
        watcher.newest_relists = 2  # as sync() sets it: a re-list ended, then the answer
        ask.answer("39", 2)
        assert events.get(timeout=10) == (NS, 2, _line("ADDED", "b", "40").rstrip())
        assert api.calls[1][1]["resource_version"] == "39"
        assert not watcher.outdated  # the answered stream is not ended
    finally:
        watcher.stop(timeout=5)
    assert not watcher.is_alive()


def test_a_watcher_waiting_for_its_answer_stops() -> None:
    api = _Api(_Response([]))
    watcher, events = _watcher(api)
    watcher.start()
    assert isinstance(events.get(timeout=10), _Resume)
    watcher.stop(timeout=5)
    assert not watcher.is_alive()


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
    events = _AnsweringQueue()
    events.version = "60"
    watcher, _ = _watcher(api, events=events)
    watcher.first_backoff = 0.01
    with caplog.at_level(logging.DEBUG, logger="test_watcher"):
        watcher.start()
        try:
            for _ in range(2):  # the failed call, then (after the backoff) the idle watch
                assert api.asked.acquire(timeout=10)
            assert events.get(timeout=10) == (NS, 0, _line("ADDED", "a", "61").rstrip())
            assert api.calls[1][1]["resource_version"] == "60"  # the answer's
        finally:
            watcher.stop(timeout=5)
    assert not watcher.is_alive()
    assert idle.shut.is_set()  # the open stream was shut down, not waited out
    assert (idle.closed, idle.released) == (True, False)  # shut down: not pooled again
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
    watcher, _ = _watcher(api, events=_AnsweringQueue())
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


# --- the feed: the watchers' lines to the core, on the scheduler's thread -----------------


def _feed_of_two() -> tuple[_WatchFeed, ExecutorCore, list[_Watcher], queue.SimpleQueue[object]]:
    core = ExecutorCore(ExecutorConfig.generic("7", "a", watch_namespaces=["a", "b"]))
    events: queue.SimpleQueue[object] = queue.SimpleQueue()
    watchers = [_watcher(_Api(), name, events=events)[0] for name in ("a", "b")]
    return _WatchFeed(core, events, watchers), core, watchers, events


def _mark(version: str) -> bytes:
    return json.dumps(
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": version}}}
    ).encode()


def test_the_feed_gives_each_line_to_the_core_with_its_watchs_namespace() -> None:
    feed, core, _, events = _feed_of_two()
    events.put(("a", 0, _mark("5")))
    events.put(("b", 0, _mark("9")))
    feed.feed(NOW)
    assert (core.resource_version("a"), core.resource_version("b")) == ("5", "9")


def test_after_a_relist_the_streams_end_and_their_older_lines_are_dropped() -> None:
    feed, core, watchers, events = _feed_of_two()
    events.put(("a", 0, json.dumps({"type": "ERROR", "object": {"code": 410}}).encode()))
    feed.feed(NOW)
    ask = _Resume("a")  # a's stream ended with the ERROR
    events.put(ask)
    feed.feed(NOW)
    feed.resume()
    assert not ask.wait(_stopped())  # not answered while the re-list is under way
    for version in ("20", "21"):
        listing = core.start_request(NOW)
        assert isinstance(listing, ListPods)
        core.pods_listed(listing, [], version)
    events.put(("b", 0, _mark("8")))  # b's stream, from before the re-list
    feed.feed(NOW)
    assert core.resource_version("b") == "21"  # dropped: the list is newer
    feed.resume()
    assert all(watcher.outdated for watcher in watchers)  # every stream ends
    assert ask.wait(_stopped())
    assert (ask.version, ask.relists) == ("20", 1)  # a's own list, and the count
    events.put(("a", 1, _mark("22")))  # the new stream's lines go on
    feed.feed(NOW)
    assert core.resource_version("a") == "22"


def test_a_relist_ended_between_the_answer_and_its_stream_ends_that_stream() -> None:
    # sync() answers the ask (re-lists 0); before the watcher thread goes on, the next
    # sync() ends a re-list (1). The stream it then opens is older than that list: it
    # ends before it is read, and the watcher asks again (nothing lost in between).
    api = _Api(_Response([]), _Response([_mark("5") + b"\n"], hold=True), _Response([]))
    answers = iter([("4", 0), ("9", 1)])

    class Racing(queue.SimpleQueue[object]):
        def put(self, item: object, block: bool = True, timeout: float | None = None) -> None:
            if isinstance(item, _Resume):
                version, relists = next(answers, ("9", 1))
                item.answer(version, relists)
                watcher.newest_relists = 1  # the next sync(): the re-list ended
            super().put(item, block, timeout)

    watcher, events = _watcher(api, events=Racing())
    watcher.start()
    try:
        for _ in range(3):  # the first stream, the stale one, then anew
            assert api.asked.acquire(timeout=10)
    finally:
        watcher.stop(timeout=5)
    assert [kwargs.get("resource_version") for _, kwargs in api.calls][:3] == [None, "4", "9"]
    lines = [item for item in _drain(events) if not isinstance(item, _Resume)]
    assert lines == []  # the stale stream's bookmark was not put on the queue


def test_a_relist_shuts_an_idle_stale_stream_down_at_once() -> None:
    feed, core, watchers, _ = _feed_of_two()
    idle = _Response([], hold=True)
    watchers[0].response = idle  # a's stream, open and silent
    core.feed_event(json.dumps({"type": "ERROR", "object": {"code": 410}}), namespace="a")
    for version in ("20", "21"):
        listing = core.start_request(NOW)
        assert isinstance(listing, ListPods)
        core.pods_listed(listing, [], version)
    feed.resume()
    assert idle.shut.is_set()  # not left until its next line (a minute of bookmarks)


def test_a_watcher_waits_for_a_relist_at_most_its_bound_then_watches_from_now() -> None:
    feed, core, _, events = _feed_of_two()
    core.feed_event(_mark("5"), namespace="b")
    core.feed_event(json.dumps({"type": "ERROR", "object": {"code": 410}}), namespace="a")
    patient, waited = _Resume("b"), _Resume("b")
    waited.asked -= RELIST_WAIT_SECONDS + 1  # its lists keep failing: no watch for ever
    events.put(patient)
    events.put(waited)
    feed.feed(NOW)
    feed.resume()
    assert not patient.wait(_stopped())
    assert waited.wait(_stopped())
    assert (waited.version, waited.relists) == (None, 0)  # from now, until the re-list
    assert feed.asks == [patient]


def test_a_410_answer_to_the_watch_call_is_an_error_line_for_the_core() -> None:
    gone = ApiException(status=410, reason="Gone")
    gone.body = json.dumps({"kind": "Status", "code": 410, "message": "too old"})
    api = _Api(gone)

    class Stopping(queue.SimpleQueue[object]):
        def put(self, item: object, block: bool = True, timeout: float | None = None) -> None:
            if isinstance(item, _Resume):  # asked where from: the test ends here
                watcher.stopping.set()
                item.answer(None, 0)
            else:
                super().put(item, block, timeout)

    events = Stopping()
    watcher, _ = _watcher(api, events=events, resource_version="3")
    waits: list[float | None] = []
    real_wait = watcher.stopping.wait

    def wait(timeout: float | None = None) -> bool:
        waits.append(timeout)
        return real_wait(0)

    watcher.stopping.wait = wait  # type: ignore[method-assign]
    watcher.run()
    (line,) = _drain(events)
    expected = json.dumps({"type": "ERROR", "object": json.loads(gone.body)}).encode()
    assert line == (NS, 0, expected)
    core = ExecutorCore(ExecutorConfig.generic("7", NS))
    core.feed_event(expected, namespace=NS)
    assert core.is_relisting  # not the same version again and again
    assert waits == []  # no backoff: the re-list is what it waits for


def _stopped() -> threading.Event:
    stopped = threading.Event()
    stopped.set()  # wait() looks once, then gives up
    return stopped


# --- against the kit's API server, with the real client ----------------------------------


class _Kit:
    """A watcher of the kit's server fed to a real core as the executor's ``sync()``
    does (:class:`_WatchFeed`), the lines it fed kept decoded in ``fed``."""

    def __init__(self, server: FakeApiServer, read_timeout: float) -> None:
        from kubernetes import client as k8s  # noqa: PLC0415

        api = k8s.CoreV1Api(k8s.ApiClient(k8s.Configuration(host=server.url)))
        self.versions: list[str | None] = []
        watched = api.list_namespaced_pod

        def watch(namespace: str, **kwargs: Any) -> Any:
            self.versions.append(kwargs.get("resource_version"))
            return watched(namespace, **kwargs)

        api.list_namespaced_pod = watch  # type: ignore[method-assign,assignment]
        self.core = ExecutorCore(ExecutorConfig.generic("7", NS))
        events: queue.SimpleQueue[object] = queue.SimpleQueue()
        log = logging.getLogger("test_watcher")
        self.watcher = _Watcher(api, NS, events, label_selector=SELECTOR, log=log)
        self.watcher.read_timeout = read_timeout
        self.feed = _WatchFeed(self.core, events, [self.watcher])
        self.fed: list[Any] = []
        feed_event = self.core.feed_event

        def spied(line: str | bytes, **kwargs: Any) -> Resolution:
            self.fed.append(json.loads(line))
            return feed_event(line, **kwargs)

        self.core.feed_event = spied  # type: ignore[method-assign]

    def next_event(self, timeout: float, *, kind: str | None = None) -> Any:
        """The next event fed (not a bookmark; ``kind`` only), syncing as the executor."""
        deadline = time.monotonic() + timeout
        while True:
            self.feed.feed(NOW)
            self.feed.resume()
            while self.fed:
                event = self.fed.pop(0)
                if event["type"] != "BOOKMARK" if kind is None else event["type"] == kind:
                    return event
            assert time.monotonic() < deadline, "no event fed"
            time.sleep(0.02)


def _running_pod(cluster: FakeCluster, name: str) -> None:
    labels = {"airflow-worker": "7", "kubernetes_executor": "True"}
    spec = {"containers": [{"name": "base", "image": "apache/airflow:3.3.2"}]}
    cluster.create_pod(NS, {"metadata": {"name": name, "labels": labels}, "spec": spec})


def test_a_silent_watch_is_replaced_and_resumes_from_the_cores_version(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # No bookmarks (their interval far beyond the read timeout): the connection is silent,
    # as one a load balancer dropped is.
    cluster = FakeCluster(namespaces=[NS])
    with FakeApiServer(cluster, lifetime=120, bookmark_seconds=1000) as server:
        kit = _Kit(server, read_timeout=1.0)
        kit.watcher.first_backoff = 0.05
        with caplog.at_level(logging.INFO, logger="test_watcher"):
            kit.watcher.start()
            try:
                _running_pod(cluster, "a")
                assert kit.next_event(30)["object"]["metadata"]["name"] == "a"
                seen = kit.core.resource_version(NS)
                assert seen is not None  # the core keeps the version of what it was fed
                started = time.monotonic()
                while server.stats.count("WATCH", "pods") < 2:  # replaced
                    assert time.monotonic() - started < 60, "a silent watch was kept"
                    kit.feed.feed(NOW)
                    kit.feed.resume()  # the watcher asked where from: answered
                    time.sleep(0.05)
                _running_pod(cluster, "b")  # seen by the new watch, and "a" not again
                assert kit.next_event(30)["object"]["metadata"]["name"] == "b"
                assert kit.versions[:2] == [None, seen]  # from now, then from the core's
            finally:
                kit.watcher.stop(timeout=5)
    timed_out = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert timed_out
    assert all("ReadTimeoutError" in line and server.url in line for line in timed_out)


def test_a_healthy_idle_watch_with_bookmarks_is_never_torn_down() -> None:
    cluster = FakeCluster(namespaces=[NS])
    with FakeApiServer(cluster, lifetime=120, bookmark_seconds=0.2) as server:
        kit = _Kit(server, read_timeout=1.0)
        kit.watcher.start()
        try:
            for _ in range(15):  # 3 s of bookmarks, three read timeouts
                bookmark = kit.next_event(30, kind="BOOKMARK")
            # A bookmark moves the core's version: a new stream would start from it.
            assert (
                kit.core.resource_version(NS) == bookmark["object"]["metadata"]["resourceVersion"]
            )
            assert server.stats.count("WATCH", "pods") == 1
        finally:
            kit.watcher.stop(timeout=5)


def test_an_unread_stale_stream_does_not_go_back_to_the_shared_pool() -> None:
    # The early return of an outdated stream left its connection unread; released,
    # urllib3 pooled it (the socket is not readable yet) and the next call of the pool
    # was written on a connection whose watch response was still going.
    import http.server  # noqa: PLC0415

    import urllib3  # noqa: PLC0415

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            if self.path.startswith("/watch"):
                self.send_response(200)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.flush()
                time.sleep(3)  # an idle watch
                self.wfile.write(b"0\r\n\r\n")
                return
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    pool = urllib3.HTTPConnectionPool("127.0.0.1", server.server_address[1], maxsize=1)

    class Api(_Api):
        def list_namespaced_pod(self, namespace: str, **kwargs: Any) -> Any:  # noqa: ARG002
            return pool.request("GET", "/watch", preload_content=False)

    watcher, _ = _watcher(Api())
    watcher.newest_relists = 1  # a re-list ended between the answer and the call
    try:
        watcher._stream()
        answer = pool.request("GET", "/ok", timeout=1.0, retries=False)
        assert answer.data == b"ok"
    finally:
        server.shutdown()
        server.server_close()
        pool.close()

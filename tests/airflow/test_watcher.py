"""k8s_workloads.airflow._watcher: the executor's watch thread, against a scripted API.

The watcher needs no Airflow (only the executor's ``log``, ``scheduler_job_id`` and
``kube_client``), so these tests run in every environment: each response is a list of
chunks as urllib3 streams them, cut anywhere, even inside a line.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import types
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from k8s_workloads.airflow._watcher import _Watcher

if TYPE_CHECKING:
    import pytest

NS = "airflow"


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
    executor: Any = types.SimpleNamespace(
        scheduler_job_id="7", kube_client=api, log=logging.getLogger("test_watcher")
    )
    events: queue.SimpleQueue[object] = queue.SimpleQueue()
    return _Watcher(executor, namespace, events), events


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
    with caplog.at_level(logging.ERROR, logger="test_watcher"):
        watcher.start()
        try:
            for _ in range(2):  # the failed call, then (a second later) the idle watch
                assert api.asked.acquire(timeout=10)
            assert events.get(timeout=10)["object"]["metadata"]["name"] == "a"  # type: ignore[index]
        finally:
            watcher.stop(timeout=5)
    assert not watcher.is_alive()
    assert idle.shut.is_set()  # the open stream was shut down, not waited out
    assert idle.released
    assert "The pod watch failed; restarting it" in caplog.text
    assert len(api.calls) == 2  # stopped: no watch after the idle one

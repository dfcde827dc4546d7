"""The HTTP side of the kit's API server (:mod:`k8s_workloads.testing._http`), under a
handler whose route only echoes what it read: bodies read once before any answer, every
error a ``Status`` document, the kept-alive connection usable after each, calls counted.

The routes of the real server are tested through the kubernetes client in
``test_server.py``."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from k8s_workloads.testing._http import HttpServer, JsonHandler
from k8s_workloads.testing.stats import StatsRecorder


class _Echo(JsonHandler):
    """Answers what it read; ``/bug`` raises as a bug of the kit would, ``/reset`` asks
    for a connection reset."""

    def _route(self, method: str, path: str, query: dict[str, list[str]]) -> None:
        if path == "/bug":
            raise KeyError("spec")
        if path == "/reset":
            raise ConnectionResetError
        self._send_json(200, {"method": method, "path": path, "query": query, "body": self._body()})


@pytest.fixture
def server() -> Iterator[HttpServer]:
    served = HttpServer(("127.0.0.1", 0), _Echo)
    served.latency = 0.0
    served.stopping = threading.Event()
    served.stats = StatsRecorder()
    thread = threading.Thread(target=served.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield served
    finally:
        served.shutdown()
        served.server_close()
        thread.join(timeout=10)


def _connect(server: HttpServer) -> http.client.HTTPConnection:
    host, port = server.server_address[:2]
    return http.client.HTTPConnection(str(host), int(port), timeout=10)


def _ask(
    connection: http.client.HTTPConnection,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    assert response.getheader("Content-Type") == "application/json"
    return response.status, json.loads(response.read())


def test_the_route_reads_the_path_every_query_value_and_the_json_body(server: HttpServer) -> None:
    connection = _connect(server)
    try:
        code, echoed = _ask(connection, "POST", "/api/v1/x?a=1&a=2&b=", b'{"k": [1]}')
    finally:
        connection.close()
    assert code == 200
    assert echoed == {
        "method": "POST",
        "path": "/api/v1/x",
        "query": {"a": ["1", "2"], "b": [""]},
        "body": {"k": [1]},
    }


def test_errors_are_status_documents_on_the_same_kept_alive_connection(server: HttpServer) -> None:
    connection = _connect(server)
    try:
        answers = [
            _ask(connection, "POST", "/x", b"{not json"),
            _ask(connection, "OPTIONS", "/x", b'{"a": 1}'),  # no do_OPTIONS: 501
            _ask(connection, "GET", "/bug"),
            _ask(connection, "GET", "/x"),
        ]
        socket_used = connection.sock
        assert _ask(connection, "GET", "/x")[0] == 200
        assert connection.sock is socket_used  # http.client would reconnect silently
    finally:
        connection.close()
    assert [code for code, _ in answers] == [400, 501, 500, 200]
    bad, unknown, bug = (document for _, document in answers[:3])
    assert (bad["kind"], bad["reason"], bad["message"]) == (
        "Status",
        "BadRequest",
        "the request body is not JSON",
    )
    assert unknown["reason"] == "NotImplemented"
    assert (bug["reason"], bug["message"]) == ("InternalError", "KeyError: 'spec'")
    assert server.stats.snapshot().connections == 1


def test_a_length_that_is_not_a_number_is_refused_and_the_connection_closed(
    server: HttpServer,
) -> None:
    host, port = server.server_address[:2]
    with socket.create_connection((str(host), int(port)), timeout=10) as raw:
        raw.sendall(b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: many\r\n\r\n")
        answer = b""
        while chunk := raw.recv(65536):  # the server closes: the read ends
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert json.loads(body)["message"] == "the Content-Length header is not a length"


def test_a_reset_fault_closes_the_connection_without_an_answer(server: HttpServer) -> None:
    connection = _connect(server)
    try:
        connection.request("GET", "/reset")
        with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
            connection.getresponse()
    finally:
        connection.close()


def test_api_calls_are_counted_by_verb_and_resource(server: HttpServer) -> None:
    connection = _connect(server)
    try:
        _ask(connection, "GET", "/api/v1/namespaces/ns/pods")
        _ask(connection, "POST", "/api/v1/namespaces/ns/pods", b"{}")
        _ask(connection, "GET", "/api/v1/namespaces/ns/pods/p")
    finally:
        connection.close()
    stats = server.stats.snapshot()
    assert [
        stats.count(*kind) for kind in [("LIST", "pods"), ("POST", "pods"), ("GET", "pods")]
    ] == [1, 1, 1]


def test_the_serve_loop_outlives_a_refusal_and_serves_on_the_same_port(
    server: HttpServer,
) -> None:
    host, port = server.server_address[:2]
    connection = _connect(server)
    try:
        assert _ask(connection, "GET", "/x")[0] == 200
        server.refuse(None)
        assert server.refusing
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((str(host), int(port)), timeout=10).close()
        server.listen_again()
        connection.close()  # a new connection, to the listener made again
        assert _ask(connection, "GET", "/x")[0] == 200
    finally:
        connection.close()
    assert server.server_address[:2] == (host, port)
    assert server.stats.snapshot().connections == 2

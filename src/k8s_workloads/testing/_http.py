"""The HTTP side of the kit's API server: a threaded server on 127.0.0.1 and a request
handler that answers JSON as a client over a kept-alive connection wants it.

:class:`JsonHandler` reads each request body once before any answer (errors included, so
the connection stays usable), writes each answer in one write with ``TCP_NODELAY`` (no
~40 ms delayed-ACK stall), counts and delays API calls (:class:`ServerStats`), and turns
an :class:`~k8s_workloads.testing.ApiError` (or a bug of the kit) into a ``Status``
answer. What each path means is the subclass's ``_route``
(:mod:`k8s_workloads.testing.server`).
"""

from __future__ import annotations

import http.server
import json
import sys
import urllib.parse
from typing import TYPE_CHECKING, Any

from k8s_workloads.testing._errors import ApiError, status_document
from k8s_workloads.testing._routes import STATS_PATH, first, request_kind
from k8s_workloads.testing.selectors import InvalidSelector

if TYPE_CHECKING:
    import threading
    from collections.abc import Callable

    from k8s_workloads.testing.cluster import FakeCluster
    from k8s_workloads.testing.stats import StatsRecorder

__all__ = ["HttpServer", "JsonHandler"]


def _nothing() -> None:
    pass


class JsonHandler(http.server.BaseHTTPRequestHandler):
    """Reads a request, answers JSON; ``_route`` (the subclass's) decides what."""

    server: HttpServer
    protocol_version = "HTTP/1.1"
    _end_in_flight: Callable[[], None] = staticmethod(_nothing)
    # Without TCP_NODELAY a small answer waits for the client's delayed ACK (~40 ms on
    # Linux) whenever it follows another write on the connection.
    disable_nagle_algorithm = True
    _raw: bytes | None = None  # this request's body, once read
    _warnings: tuple[str, ...] = ()  # Warning headers for this request's answer
    _subresource: str | None = None  # status, log or binding, for a pod's subresource

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002, ANN401
        pass  # quiet: tests read the cluster's call log instead

    # --- plumbing -------------------------------------------------------------------

    def _send_json(
        self, code: int, document: object, headers: dict[str, str] | None = None
    ) -> None:
        # Status line, headers and body in one write: one segment for a small answer, so
        # the client never waits on a delayed ACK between the headers and the body.
        body = json.dumps(document).encode()
        phrase = self.responses.get(code, ("",))[0]
        lines = [
            f"{self.protocol_version} {code} {phrase}",
            f"Server: {self.version_string()}",
            f"Date: {self.date_time_string()}",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
            *(f"{name}: {value}" for name, value in (headers or {}).items()),
            *(f"Warning: 299 - {json.dumps(text)}" for text in self._warnings),
        ]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "strict")
        self._end_in_flight()
        self.wfile.write(head if self.command == "HEAD" else head + body)

    def _send_text(self, code: int, text: str) -> None:
        # pods/log answers plain text, as the kubelet streams it through the API server.
        body = text.encode()
        lines = [
            f"{self.protocol_version} {code} {self.responses.get(code, ('',))[0]}",
            f"Server: {self.version_string()}",
            f"Date: {self.date_time_string()}",
            "Content-Type: text/plain",
            f"Content-Length: {len(body)}",
        ]
        self._end_in_flight()
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)

    def _send_error(self, error: ApiError) -> None:
        try:
            document = json.loads(error.body)
        except ValueError:
            document = status_document(error.status, error.reason, error.body)
        self._send_json(error.status, document, dict(error.headers))

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # http.server's own answers (501 for a method it has no do_ for, 400 for a bad
        # request line) as Status documents; the body is read first, so that a kept-alive
        # connection stays usable after them.
        if self.close_connection or not hasattr(self, "headers"):
            super().send_error(code, message, explain)
            return
        self._drain()
        reason = "NotImplemented" if code == 501 else "BadRequest"
        self._send_error(ApiError(code, reason, message or explain or ""))

    def _drain(self) -> None:
        # The request body, read once, before any answer: what is left unread would be
        # taken for the next request on the connection.
        if self._raw is not None:
            return
        self._raw = b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self.close_connection = True  # not sent by the kubernetes client: give up on it
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True
            raise ApiError(400, "BadRequest", "the Content-Length header is not a length")
        self._raw = self.rfile.read(length) if length else b""

    def _body(self) -> Any:  # noqa: ANN401 - a JSON document
        raw = self._raw or b""
        try:
            return json.loads(raw or b"null")
        except ValueError:
            raise ApiError(400, "BadRequest", "the request body is not JSON") from None

    def _object(self, kind: str) -> dict[str, Any]:
        # A body that must be one JSON object (a manifest), as the API server decodes it
        # into a struct: anything else is a 400, never a crash further on.
        body = self._body()
        if not isinstance(body, dict):
            raise ApiError(
                400,
                "BadRequest",
                f"the request body must be a JSON object ({kind}), got {type(body).__name__}",
            )
        return body

    def _options(self) -> dict[str, Any] | None:
        # DeleteOptions: optional, but an object when sent.
        return None if self._body() is None else self._object("DeleteOptions")

    def _query(self) -> tuple[str, dict[str, list[str]]]:
        parsed = urllib.parse.urlsplit(self.path)
        query: dict[str, list[str]] = {}
        for key, value in urllib.parse.parse_qsl(parsed.query, keep_blank_values=True):
            query.setdefault(key, []).append(value)
        return parsed.path, query

    def _handle(self, method: str) -> None:
        path, query = self._query()
        if path == STATS_PATH:  # the kit's, not an API call: neither counted nor delayed
            self._answer(method, path, query, delay=0.0)
            return
        verb, resource = request_kind(method, path, first(query))
        if verb == "WATCH":  # long-running: counted, never held as in flight
            self.server.stats.counted(verb, resource)
            self._answer(method, path, query, delay=self.server.latency)
            return
        # Under way until its answer is written: ended just before (see _send_json), so a
        # client reading the answer and sending its next request is never counted twice.
        self._end_in_flight = self.server.stats.begin(verb, resource)
        try:
            self._answer(method, path, query, delay=self.server.latency)
        finally:
            self._end_in_flight()
            self._end_in_flight = _nothing

    def _answer(self, method: str, path: str, query: dict[str, list[str]], *, delay: float) -> None:
        try:
            self._drain()
            if delay:
                self.server.stopping.wait(delay)
            self._route(method, path, query)
        except ApiError as error:
            self._send_error(error)
        except InvalidSelector as error:
            self._send_error(ApiError(400, "BadRequest", str(error)))
        except ConnectionResetError:
            # A fault asked for a connection reset: close without an answer.
            self.close_connection = True
            self.connection.close()
        except (BrokenPipeError, ConnectionAbortedError):
            self.close_connection = True  # the client went away mid-answer
        except Exception as error:  # noqa: BLE001 - a bug of the fake is an answer, not a hang
            self._send_error(ApiError(500, "InternalError", f"{type(error).__name__}: {error}"))

    def handle_one_request(self) -> None:
        self._raw = None
        self._warnings = ()
        super().handle_one_request()

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def _route(self, method: str, path: str, query: dict[str, list[str]]) -> None:
        raise NotImplementedError

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class HttpServer(http.server.ThreadingHTTPServer):
    """Serves on daemon threads; what the handlers share is set on it."""

    daemon_threads = True
    # socketserver's listen backlog is 5: a client opening its pool's connections at once
    # (16 creations in flight) could be refused, where an API server queues them.
    request_queue_size = 128
    cluster: FakeCluster
    lifetime: float
    latency: float
    stopping: threading.Event
    stats: StatsRecorder
    delete_options: list[tuple[tuple[str, str], Any]]
    bookmark_seconds: float

    def process_request(self, request: Any, client_address: Any) -> None:  # noqa: ANN401
        self.stats.connected()  # each accepted TCP connection, before its thread starts
        super().process_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:  # noqa: ANN401
        # A client closing its kept-alive connection is not an error of the server's.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

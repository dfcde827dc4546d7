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

import contextlib
import http.server
import json
import selectors
import socket
import sys
import threading
import urllib.parse
from typing import TYPE_CHECKING, Any

from k8s_workloads.testing._connections import Connection, ConnectionCut, Connections
from k8s_workloads.testing._routes import STATS_PATH, first, request_kind
from k8s_workloads.testing.errors import ApiError, status_document
from k8s_workloads.testing.selectors import InvalidSelector

if TYPE_CHECKING:
    from collections.abc import Callable

    from k8s_workloads.testing._access import Access
    from k8s_workloads.testing._rates import FaultDraws
    from k8s_workloads.testing.cluster import FakeCluster
    from k8s_workloads.testing.stats import StatsRecorder

__all__ = ["HttpServer", "JsonHandler"]


_LISTEN_RETRY_SECONDS = 0.05


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
    _kind: tuple[str, str] = ("", "")  # this request's (verb, resource)
    _dry_run = False  # this request asked for dryRun
    _connection: Connection

    def setup(self) -> None:
        super().setup()
        self._connection = self.server.connections.of(self.request)

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
        self._lose_answer(code)
        self._write(head if self.command == "HEAD" else head + body)

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
        self._write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)

    def _write(self, data: bytes) -> None:
        # Every byte the server sends goes through here: a stalled connection holds it, a
        # reset one never sends it (ConnectionCut). A reset by the client is the client
        # gone (ConnectionAbortedError), told apart from the kit's own resets.
        self._hold()
        try:
            self.wfile.write(data)
        except ConnectionResetError as error:
            raise ConnectionAbortedError(*error.args) from error

    def flush_headers(self) -> None:
        # http.server's buffered headers (a watch's, http.server's own errors), written
        # as every answer is.
        buffered = getattr(self, "_headers_buffer", None)
        if buffered:
            self._write(b"".join(buffered))
        self._headers_buffer: list[bytes] = []

    def _hold(self) -> None:
        """Wait while this connection is stalled; :class:`ConnectionCut` once it is reset."""
        self._connection.proceed(self.server.stopping)

    def _lose_answer(self, code: int) -> None:
        # drop_next_create_answer: a creation that was stored loses its answer, the
        # connection reset after the write, as when an API server restarts between the
        # two. A creation that failed, or a dry run, is answered.
        verb, resource = self._kind
        if verb != "POST" or not 200 <= code < 300 or self._dry_run:
            return
        if self.server.take_drop(resource):
            self.server.stats.faulted("answers_dropped")
            raise ConnectionCut

    def _fault_drawn(self) -> None:
        # A fault rate's fault, after the latency and before the cluster: the call is
        # answered with its status, or its connection reset, and nothing is applied.
        draws = self.server.fault_draws
        drawn = None if draws is None else draws.draw(*self._kind)
        if drawn is not None:
            fault, answer = drawn
            verb, resource = self._kind
            self.server.stats.served(f"{verb} {resource} {answer}")
            raise fault.error()

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
        # A request on a stalled connection never reaches the server: it waits here until
        # the stall resets the connection.
        self._hold()
        path, query = self._query()
        self._dry_run = bool(query.get("dryRun"))
        if path == STATS_PATH:  # the kit's, not an API call: neither counted nor delayed
            self._answer(method, path, query, delay=0.0)
            return
        verb, resource = request_kind(method, path, first(query))
        self._kind = (verb, resource)
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
                self._connection.pause(delay, self.server.stopping)
            self._hold()
            self._fault_drawn()
            self._route(method, path, query)
        except ApiError as error:
            self._send_error(error)
        except InvalidSelector as error:
            self._send_error(ApiError(400, "BadRequest", str(error)))
        except (ConnectionResetError, ConnectionRefusedError):
            # A fault asked for a connection error (a fail_next fault without a status, a
            # lost answer, a reset of the server's connections): no answer, an RST. A
            # fail_next fault "refused" meets a connection made already: the nearest is a
            # reset before the call was applied (refuse_connections refuses new ones).
            self.close_connection = True
            self.server.connections.reset(self._connection)
        except (BrokenPipeError, ConnectionAbortedError):
            self.close_connection = True  # the client went away mid-answer
        except Exception as error:  # noqa: BLE001 - a bug of the fake is an answer, not a hang
            self._send_error(ApiError(500, "InternalError", f"{type(error).__name__}: {error}"))

    def handle_one_request(self) -> None:
        self._raw = None
        self._warnings = ()
        self._kind = ("", "")
        self._dry_run = False
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
        self._write(f"{len(data):x}\r\n".encode() + data + b"\r\n")


class HttpServer(http.server.ThreadingHTTPServer):
    """Serves on daemon threads; what the handlers share is set on it.

    It keeps its open connections (:class:`~k8s_workloads.testing._connections.Connections`)
    and can reset them, stall them, lose an answer, or stop listening for a while and
    listen again on the same port (:meth:`refuse`): its serve loop follows the listening
    socket it has, and waits while it has none.
    """

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
    fault_draws: FaultDraws | None = None
    access: Access

    def __init__(
        self, address: tuple[str, int], handler: type[http.server.BaseHTTPRequestHandler]
    ) -> None:
        super().__init__(address, handler)
        self.connections = Connections(on_reset=lambda: self.stats.faulted("connections_reset"))
        self._listening: socket.socket | None = self.socket
        self._changed = threading.Condition()  # guards the listener, the timers, the drops
        self._quit = False
        self._loop_done = threading.Event()
        self._loop_done.set()
        self._closed = False
        self._timers: list[threading.Timer] = []
        self._refusal = 0  # numbers the refusals: only the last one's timer listens again
        self._drops: dict[str, int] = {}
        # Wakes the serve loop's select when the listener changes or the server stops (a
        # closed socket leaves an epoll set without waking it).
        self._wake_reader, self._wake_writer = socket.socketpair()
        for end in (self._wake_reader, self._wake_writer):
            end.setblocking(False)

    # --- serving ----------------------------------------------------------------------

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        # socketserver's loop selects on one socket for ever; this one follows the socket
        # it listens on (none while refusing, a new one after), so it outlives a refusal.
        self._loop_done.clear()
        watched: socket.socket | None = None
        selector: selectors.BaseSelector | None = None
        try:
            while True:
                with self._changed:
                    if self._quit:
                        break
                    if self._listening is None:
                        self._changed.wait(poll_interval)
                        continue
                    listener = self._listening
                if listener is not watched:
                    if selector is not None:
                        selector.close()
                    selector = selectors.DefaultSelector()
                    selector.register(listener, selectors.EVENT_READ)
                    selector.register(self._wake_reader, selectors.EVENT_READ)
                    watched = listener
                assert selector is not None  # noqa: S101 - set with watched
                ready = {key.fileobj for key, _ in selector.select(poll_interval)}
                if self._wake_reader in ready:
                    with contextlib.suppress(OSError):
                        while self._wake_reader.recv(4096):
                            pass
                if listener in ready and not self._quit:
                    self._accept()
        finally:
            if selector is not None:
                selector.close()
            self._loop_done.set()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # full: the loop has a wake-up to read already
            self._wake_writer.send(b"\0")

    def _accept(self) -> None:
        # socketserver's _handle_request_noblock: a failed accept (the listener closed by
        # a refusal meanwhile) is no error.
        try:
            request, client_address = self.get_request()
        except OSError:
            return
        try:
            self.process_request(request, client_address)
        except Exception:  # noqa: BLE001 - as socketserver: reported, the loop goes on
            self.handle_error(request, client_address)
            self.shutdown_request(request)

    def shutdown(self) -> None:
        with self._changed:
            self._quit = True
            self._changed.notify_all()
        self._wake()
        self._loop_done.wait()

    def server_close(self) -> None:
        """Stop listening for good: faults end (held connections are reset), idle
        connections end cleanly."""
        with self._changed:
            self._closed = True
            self._quit = True
            timers, self._timers = self._timers, []
            self._changed.notify_all()
        for timer in timers:
            timer.cancel()
            if timer is not threading.current_thread():
                timer.join()
        self.connections.reset_stalled()
        self.connections.end_all()
        super().server_close()
        for end in (self._wake_reader, self._wake_writer):
            end.close()

    # --- faults -----------------------------------------------------------------------

    def refuse(self, seconds: float | None) -> None:
        """Close the listening socket (a connection attempt is refused by the system) and
        listen again on the same port after ``seconds`` (None: at :meth:`listen_again`); a
        refusal under way is replaced."""
        with self._changed:
            if self._closed:
                return
            if self._listening is not None:
                self._listening = None
                self.socket.close()  # the connections not accepted yet get an RST
                self._wake()
            self._refusal += 1
            refusal = self._refusal
            if seconds is not None:
                self._later(seconds, lambda: self._listen_again(refusal))

    def listen_again(self) -> None:
        """End the refusal under way, if any, now."""
        with self._changed:
            refusal = self._refusal
        self._listen_again(refusal)

    @property
    def refusing(self) -> bool:
        """True while the server does not listen (:meth:`refuse`)."""
        with self._changed:
            return self._listening is None and not self._closed

    def _listen_again(self, refusal: int) -> None:
        listener = socket.socket(self.address_family, self.socket_type)
        with self._changed:
            if self._closed or self._listening is not None or refusal != self._refusal:
                listener.close()  # stopped, or a later refusal decides when
                return
            try:
                # SO_REUSEADDR: the port's connections reset a moment ago may linger in
                # TIME_WAIT; nothing else listens on it, so the bind succeeds.
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                listener.bind(self.server_address)
                listener.listen(self.request_queue_size)
            except OSError:
                listener.close()  # another socket took the port meanwhile: try again soon
                self._later(_LISTEN_RETRY_SECONDS, lambda: self._listen_again(refusal))
                return
            self.socket = self._listening = listener
            self._changed.notify_all()

    def stall(self, seconds: float | None) -> int:
        """Hold every connection open now (:meth:`Connections.stall_all`) until ``seconds``
        pass (None: until :meth:`unstall` or the server stops), then reset them; how many
        are held."""
        held = self.connections.stall_all()
        if seconds is not None and held:
            self._later(seconds, lambda: self._release(held))
        return len(held)

    def unstall(self) -> int:
        """End every stall now: the held connections are reset; how many were."""
        return self.connections.reset_stalled()

    def _release(self, held: list[Connection]) -> None:
        for connection in held:
            self.connections.reset(connection)

    def drop_answers(self, resource: str, times: int) -> None:
        """Lose the answers of the next ``times`` creations of ``resource`` that are stored
        (:meth:`JsonHandler._send_json` asks :meth:`take_drop`)."""
        with self._changed:
            self._drops[resource] = self._drops.get(resource, 0) + times

    def take_drop(self, resource: str) -> bool:
        """True (once per armed drop) if this creation's answer is to be lost."""
        with self._changed:
            left = self._drops.get(resource, 0)
            if not left:
                return False
            self._drops[resource] = left - 1
            return True

    def _later(self, seconds: float, action: Callable[[], None]) -> None:
        # A daemon timer, cancelled and joined when the server closes (started under the
        # lock, so that server_close never finds one it cannot join yet).
        timer = threading.Timer(seconds, action)
        timer.daemon = True
        timer.name = "k8s-workloads-fake-api-fault"
        with self._changed:
            if self._closed:
                return
            self._timers = [each for each in self._timers if each.is_alive()]
            self._timers.append(timer)
            timer.start()

    def process_request(self, request: Any, client_address: Any) -> None:  # noqa: ANN401
        self.stats.connected()  # each accepted TCP connection, before its thread starts
        self.connections.opened(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:  # noqa: ANN401
        self.connections.close(request)

    def handle_error(self, request: Any, client_address: Any) -> None:  # noqa: ANN401
        # A client closing its kept-alive connection is not an error of the server's.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

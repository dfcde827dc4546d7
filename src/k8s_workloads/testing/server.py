"""A :class:`FakeCluster` served over HTTP on 127.0.0.1, for the real kubernetes client.

Where no API server can run, this stands in at the lowest level the client uses: HTTP.
The real ``kubernetes.client.CoreV1Api``, the watch helper (``kubernetes.watch.Watch``)
and the dynamic client run against it unchanged::

    cluster = FakeCluster()
    with FakeApiServer(cluster) as server:
        api = kubernetes.client.CoreV1Api(
            kubernetes.client.ApiClient(kubernetes.client.Configuration(host=server.url))
        )
        api.create_namespaced_pod("airflow", pod)

What it serves, as a Kubernetes 1.37 API server does: the discovery documents (``/api``,
``/apis``, ``/api/v1`` listing only what is served, ``/version``) and the OpenAPI v2 and
v3 documents kubectl reads; pods — create (validated: 422 with causes, 400 for a body it
cannot decode; ``fieldValidation``; ``dryRun``), read, list (in pages with ``limit`` and
``continue``, read from one snapshot; an expired token is a 410 ``Expired``; a
metadata-only list for ``as=PartialObjectMetadataList``, a ``Table`` for ``as=Table``),
watch (selectors, ``resourceVersion``, ``timeoutSeconds``, ``allowWatchBookmarks``,
``sendInitialEvents``), patch by content type (merge, strategic merge, JSON patch; 415
for another), delete (graceful, ``DeleteOptions`` with preconditions and
``gracePeriodSeconds``), ``pods/status`` (get, patch), ``pods/log``, ``pods/binding`` —
in one namespace or all; Secrets — create, read, list, delete; namespaces — read, list.
Errors are ``Status`` documents with their code (and ``Retry-After`` where a fault gives
one); a fault made with :meth:`FakeCluster.fail_next` fails the matching call (a watch's
410 or 500 in the stream, as an ``ERROR`` event). A watch streams JSON lines and ends at
its ``timeoutSeconds``, after an ``ERROR``, or when the server stops.

As a client wants it over a kept-alive connection: ``TCP_NODELAY`` and each answer in one
write (no ~40 ms delayed-ACK stall), and every request body read before the answer, errors
included. ``latency`` seconds pass before each API call is answered. What it served is
counted (:attr:`FakeApiServer.stats`, and ``GET /_kit/stats`` over HTTP): connections,
requests by verb and resource, the most requests and pod creations in flight at once.

The server binds to 127.0.0.1 only, runs its requests on daemon threads, and stops by
itself after ``lifetime`` seconds (default 600) if the test forgets to.

In its own process, with a :class:`~k8s_workloads.testing.Kubelet` if asked::

    python -m k8s_workloads.testing.server --port 0 --latency 0.02 --lifetime 600 --kubelet 1

prints its URL as the first line of stdout and serves until its lifetime ends, its stdin
is closed, or it gets SIGTERM or SIGINT; then it exits 0 (a bad argument: one line on
stderr, exit 2). Its namespaces are ``default`` and each ``--namespace NAME`` (default:
``airflow``).
"""

from __future__ import annotations

import http.server
import json
import re
import sys
import threading
import time
import urllib.parse
from typing import TYPE_CHECKING, Any

from k8s_workloads import _config as _checks
from k8s_workloads.testing import _openapi, _tables
from k8s_workloads.testing._admission import Cause
from k8s_workloads.testing._errors import ApiError, invalid, status_document
from k8s_workloads.testing.cluster import FakeCluster
from k8s_workloads.testing.selectors import InvalidSelector
from k8s_workloads.testing.stats import ServerStats, StatsRecorder

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

__all__ = ["STATS_PATH", "FakeApiServer"]

STATS_PATH = "/_kit/stats"
"""The kit's own path (no API server has it): ``GET`` answers ``ServerStats.to_json()``."""

_POD_PATH = re.compile(
    r"^/api/v1/(?:namespaces/(?P<namespace>[^/]+)/)?pods"
    r"(?:/(?P<name>[^/]+)(?:/(?P<subresource>status|log|binding))?)?$"
)
_SECRET_PATH = re.compile(
    r"^/api/v1/(?:namespaces/(?P<namespace>[^/]+)/)?secrets(?:/(?P<name>[^/]+))?$"
)
_NAMESPACE_PATH = re.compile(r"^/api/v1/namespaces(?:/(?P<name>[^/]+))?$")
_WATCH_POLL_SECONDS = 0.005

_API_VERSIONS = {
    "kind": "APIVersions",
    "versions": ["v1"],
    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
}
_API_GROUPS = {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
_VERSION = {
    "major": "1",
    "minor": "37",
    "gitVersion": "v1.37.0-k8s-workloads-fake",
    "platform": "linux/amd64",
}


def _resource(name: str, kind: str, verbs: list[str], *, namespaced: bool = True) -> dict[str, Any]:
    return {
        "name": name,
        "singularName": kind.lower(),
        "namespaced": namespaced,
        "kind": kind,
        "verbs": verbs,
    }


_CORE_RESOURCES = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    # Only what the routes below serve, with the verbs they serve.
    "resources": [
        _resource("pods", "Pod", ["create", "delete", "get", "list", "patch", "watch"])
        | {"shortNames": ["po"], "categories": ["all"]},
        _resource("pods/binding", "Binding", ["create"]),
        _resource("pods/status", "Pod", ["get", "patch"]),
        _resource("pods/log", "Pod", ["get"]),
        _resource("secrets", "Secret", ["create", "delete", "get", "list"]),
        _resource("namespaces", "Namespace", ["get", "list"], namespaced=False)
        | {"shortNames": ["ns"]},
    ],
}


_DISCOVERY = {
    "/api": _API_VERSIONS,
    "/apis": _API_GROUPS,
    "/api/v1": _CORE_RESOURCES,
    "/version": _VERSION,
}


def _is_watch(query: dict[str, str]) -> bool:
    return (query.get("watch") or "").lower() in {"true", "1"}


def _request_kind(method: str, path: str, query: dict[str, str]) -> tuple[str, str]:
    # (verb, resource) as the API server's request metrics label them: LIST and WATCH
    # apart from GET of one object; a discovery document by its path.
    if match := _POD_PATH.match(path):
        resource, name = "pods", match["name"]
        if match["subresource"]:
            resource = f"pods/{match['subresource']}"
    elif match := _SECRET_PATH.match(path):
        resource, name = "secrets", match["name"]
    elif match := _NAMESPACE_PATH.match(path):
        resource, name = "namespaces", match["name"]
    else:
        return method, path if path in _DISCOVERY else "other"
    if method == "GET" and name is None:
        return "WATCH" if _is_watch(query) else "LIST", resource
    return method, resource


def _partial(items: list[dict[str, Any]], metadata: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "PartialObjectMetadataList",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "items": [
            {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": item.get("metadata", {}),
            }
            for item in items
        ],
    }


def _limit(query: dict[str, str]) -> int | None:
    text = query.get("limit") or ""
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ApiError(400, "BadRequest", f"limit: invalid value {text!r}") from None


def _dry_run(values: list[str]) -> bool:
    # dryRun: "All" is the only value the API server knows (an empty list: a real write).
    for value in values:
        if value != "All":
            raise ApiError(
                400, "BadRequest", f'dryRun: Unsupported value: "{value}": supported values: "All"'
            )
    return bool(values)


def _grace(value: object) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    raise ApiError(400, "BadRequest", f"gracePeriodSeconds: invalid value {value!r}")


def _flag(value: str | None) -> bool | None:
    return None if value is None else value.lower() in {"true", "1"}


def _watch_options(query: dict[str, str]) -> tuple[bool, bool | None]:
    # apimachinery validateWatchOptions: sendInitialEvents needs resourceVersionMatch
    # NotOlderThan and allowWatchBookmarks; resourceVersionMatch needs sendInitialEvents.
    bookmarks = bool(_flag(query.get("allowWatchBookmarks")))
    initial = _flag(query.get("sendInitialEvents"))
    match = query.get("resourceVersionMatch") or ""
    causes = []
    if initial is not None and match != "NotOlderThan":
        causes.append(
            (
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )
        )
    if initial is not None and not bookmarks:
        causes.append(
            (
                "allowWatchBookmarks",
                "sendInitialEvents requires setting allowWatchBookmarks to true",
            )
        )
    if match and initial is None:
        causes.append(
            (
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            )
        )
    if causes:
        raise invalid(
            "ListOptions",
            "",
            [Cause(field, "FieldValueForbidden", f"Forbidden: {why}") for field, why in causes],
        )
    return bookmarks, initial


def _first(query: dict[str, list[str]]) -> dict[str, str]:
    return {key: values[0] for key, values in query.items()}


def _not_allowed(method: str, resource: str) -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        f"the server does not allow this method on the requested resource ({method} {resource})",
    )


def _nothing() -> None:
    pass


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
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
        verb, resource = _request_kind(method, path, _first(query))
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

    # --- routes ---------------------------------------------------------------------

    def _route(self, method: str, path: str, query: dict[str, list[str]]) -> None:
        if method == "GET" and path in _DISCOVERY:
            self._send_json(200, _DISCOVERY[path])
            return
        if method == "GET" and path in _openapi.DOCUMENTS:
            self._send_json(200, _openapi.DOCUMENTS[path]())
            return
        if method == "GET" and path == STATS_PATH:
            self._send_json(200, self.server.stats.snapshot().to_json())
            return
        if match := _POD_PATH.match(path):
            self._subresource = match["subresource"]
            self._pods(method, match["namespace"], match["name"], query)
            return
        if match := _SECRET_PATH.match(path):
            self._secrets(method, match["namespace"], match["name"], query)
            return
        if match := _NAMESPACE_PATH.match(path):
            self._namespaces(method, match["name"])
            return
        raise ApiError(404, "NotFound", f"the server could not find the requested resource {path}")

    def _pods(
        self, method: str, namespace: str | None, name: str | None, query: dict[str, list[str]]
    ) -> None:
        if name is None:
            self._pod_collection(method, namespace, query)
        elif namespace is None:
            raise ApiError(404, "NotFound", "pods by name need a namespace")
        else:
            self._pod(method, namespace, name, query)

    def _pod_collection(
        self, method: str, namespace: str | None, query: dict[str, list[str]]
    ) -> None:
        cluster = self.server.cluster
        one = _first(query)
        if method == "POST" and namespace is not None:
            pod, warnings = cluster.create_pod_answer(
                namespace,
                self._object("Pod"),
                dry_run=_dry_run(query.get("dryRun", [])),
                field_validation=one.get("fieldValidation"),
            )
            self._warnings = tuple(warnings)
            self._send_json(201, pod)
        elif method == "GET" and _is_watch(one):
            self._watch(namespace, one)
        elif method == "GET":
            listing = cluster.list_pods(
                namespace,
                label_selector=one.get("labelSelector"),
                field_selector=one.get("fieldSelector"),
                limit=_limit(one),
                continue_token=one.get("continue") or None,
            )
            self._send_list(listing)
        else:
            raise _not_allowed(method, "pods")

    def _send_list(self, listing: dict[str, Any]) -> None:
        accept = self.headers.get("Accept") or ""
        if "as=PartialObjectMetadataList" in accept:
            self._send_json(200, _partial(listing["items"], listing["metadata"]))
        elif "as=Table" in accept:
            self._send_json(200, _tables.pod_table(listing, now=self.server.cluster.now))
        else:
            self._send_json(200, listing)

    def _pod(self, method: str, namespace: str, name: str, query: dict[str, list[str]]) -> None:
        cluster = self.server.cluster
        dry_run = _dry_run(query.get("dryRun", []))
        subresource = self._subresource
        content_type = self.headers.get("Content-Type") or ""
        if subresource == "log" and method == "GET":
            text = cluster.pod_log(namespace, name, _first(query).get("container"))
            self._send_text(200, text)
        elif subresource == "binding" and method == "POST":
            target = self._object("Binding").get("target") or {}
            cluster.bind_pod(namespace, name, str(target.get("name") or ""))
            self._send_json(201, {"kind": "Status", "apiVersion": "v1", "status": "Success"})
        elif subresource == "status" and method == "GET":
            self._send_json(200, cluster.read_pod(namespace, name))
        elif method == "PATCH" and subresource in {None, "status"}:
            # The pod, or its status subresource (what a kubelet patches): one rule each.
            patch = cluster.patch_pod if subresource is None else cluster.patch_pod_status
            patched = patch(
                namespace,
                name,
                self._body(),
                patch_type=content_type,
                dry_run=dry_run,
                field_validation=_first(query).get("fieldValidation"),
            )
            self._send_json(200, patched)
        elif subresource is not None:
            raise _not_allowed(method, f"pods/{subresource}")
        elif method == "GET":
            pod = cluster.read_pod(namespace, name)
            if "as=Table" in (self.headers.get("Accept") or ""):
                version = cluster.resource_version
                listing = {"metadata": {"resourceVersion": version}, "items": [pod]}
                self._send_json(200, _tables.pod_table(listing, now=cluster.now))
            else:
                self._send_json(200, pod)
        elif method == "DELETE":
            options = self._options() or {}
            self.server.delete_options.append(((namespace, name), self._options()))
            one = _first(query)
            dry = dry_run or _dry_run(list(options.get("dryRun") or []))
            pod = cluster.delete_pod(
                namespace,
                name,
                grace_period_seconds=_grace(
                    options.get("gracePeriodSeconds", one.get("gracePeriodSeconds"))
                ),
                preconditions=options.get("preconditions") or None,
                dry_run=dry,
                propagation_policy=options.get("propagationPolicy") or one.get("propagationPolicy"),
            )
            self._send_json(200, pod)
        else:
            raise _not_allowed(method, "pods")

    def _secrets(
        self, method: str, namespace: str | None, name: str | None, query: dict[str, list[str]]
    ) -> None:
        cluster = self.server.cluster
        dry_run = _dry_run(query.get("dryRun", []))
        if name is None and method == "GET":
            self._send_json(200, cluster.list_secrets(namespace))
        elif namespace is None:
            raise _not_allowed(method, "secrets")
        elif name is None and method == "POST":
            secret = cluster.create_secret(
                namespace,
                self._object("Secret"),
                dry_run=dry_run,
                field_validation=_first(query).get("fieldValidation"),
            )
            self._send_json(201, secret)
        elif name is not None and method == "GET":
            self._send_json(200, cluster.read_secret(namespace, name))
        elif name is not None and method == "DELETE":
            options = self._options() or {}
            dry = dry_run or _dry_run(list(options.get("dryRun") or []))
            cluster.delete_secret(namespace, name, dry_run=dry)
            document = status_document(200, "", "") | {
                "status": "Success",
                "details": {"name": name, "kind": "secrets"},
            }
            del document["message"], document["reason"]
            self._send_json(200, document)
        else:
            raise _not_allowed(method, "secrets")

    def _namespaces(self, method: str, name: str | None) -> None:
        cluster = self.server.cluster
        if method != "GET":
            raise _not_allowed(method, "namespaces")
        if name is None:
            items = cluster.namespaces()
            self._send_json(
                200,
                {
                    "kind": "NamespaceList",
                    "apiVersion": "v1",
                    "metadata": {"resourceVersion": cluster.resource_version},
                    "items": items,
                },
            )
        else:
            self._send_json(200, cluster.read_namespace(name))

    def _watch(self, namespace: str | None, query: dict[str, str]) -> None:
        bookmarks, initial = _watch_options(query)
        try:
            timeout = float(query.get("timeoutSeconds") or 0) or self.server.lifetime
        except ValueError:
            raise ApiError(400, "BadRequest", "timeoutSeconds: not a number") from None
        cluster = self.server.cluster
        version = query.get("resourceVersion") or None
        if initial is False and version is None:
            version = cluster.resource_version  # no initial events: from now on
        watch = cluster.watch(
            namespace,
            label_selector=query.get("labelSelector"),
            field_selector=query.get("fieldSelector"),
            resource_version=version,
            allow_bookmarks=bookmarks,
            send_initial_events=bool(initial),
        )
        deadline = time.monotonic() + timeout
        idle_since = time.monotonic()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while not self.server.stopping.is_set() and time.monotonic() < deadline:
                lines = watch.lines()
                for line in lines:
                    self._chunk((line + "\n").encode())
                if watch.closed and not len(watch):
                    break
                if lines:
                    idle_since = time.monotonic()
                elif bookmarks and time.monotonic() - idle_since >= self.server.bookmark_seconds:
                    cluster.send_bookmarks(watch)
                    idle_since = time.monotonic()
                else:
                    time.sleep(_WATCH_POLL_SECONDS)
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away
        finally:
            cluster.stop_watch(watch)
            self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class _Server(http.server.ThreadingHTTPServer):
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


class FakeApiServer:
    """Serve ``cluster`` on ``http://127.0.0.1:<port>`` until stopped (a context manager).

    ``latency`` seconds pass before every API call is answered (once at the start of a
    watch, never between its lines), as a remote API server's round trip would take. A
    watch with ``allowWatchBookmarks`` gets a ``BOOKMARK`` after ``bookmark_seconds``
    without events (a real server: about a minute).

    Thread-safe: requests are served on daemon threads against the cluster's lock; an
    unexpected error inside the kit is answered as a 500 ``Status`` and the server keeps
    serving.
    """

    def __init__(
        self,
        cluster: FakeCluster,
        *,
        port: int = 0,
        lifetime: float = 600.0,
        latency: float = 0.0,
        bookmark_seconds: float = 1.0,
    ) -> None:
        _checks.check(self, "cluster", _checks.kind(FakeCluster), cluster)
        _checks.check(self, "bookmark_seconds", _checks.seconds, bookmark_seconds)
        _checks.check(self, "port", _checks.port, port)
        _checks.check(self, "lifetime", _checks.seconds, lifetime)
        _checks.check(self, "latency", _checks.delay, latency)
        self.cluster = cluster
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.cluster = cluster
        self._server.lifetime = lifetime
        self._server.latency = float(latency)
        self._server.stats = StatsRecorder()
        self._server.stopping = threading.Event()
        self._server.delete_options = []
        self._server.bookmark_seconds = float(bookmark_seconds)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="k8s-workloads-fake-api", daemon=True
        )
        self._timer = threading.Timer(lifetime, self.stop)
        self._timer.daemon = True
        self._started = False

    @property
    def delete_options(self) -> list[tuple[tuple[str, str], Any]]:
        """Each pod deleted through the server, ``((namespace, name), body)``: the
        ``DeleteOptions`` document the client sent, or None."""
        return list(self._server.delete_options)

    @property
    def stats(self) -> ServerStats:
        """What the server has served so far: connections, requests by verb and resource,
        the most requests (and pod creations) under way at once."""
        return self._server.stats.snapshot()

    @property
    def url(self) -> str:
        """The base URL: ``Configuration(host=server.url)``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def stopped(self) -> bool:
        """True once :meth:`stop` ran (by the test, or when the lifetime ended)."""
        return self._server.stopping.is_set()

    def start(self) -> FakeApiServer:
        if not self._started:
            self._started = True
            self._thread.start()
            self._timer.start()
        return self

    def stop(self) -> None:
        """Stop serving: open watches end, the port is released. Safe to call twice."""
        if self._server.stopping.is_set():
            return
        self._server.stopping.set()
        self._timer.cancel()
        if self._started:
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    def __enter__(self) -> FakeApiServer:  # noqa: PYI034 - no typing.Self on Python 3.10
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


if __name__ == "__main__":
    from k8s_workloads.testing._process import main

    sys.exit(main())

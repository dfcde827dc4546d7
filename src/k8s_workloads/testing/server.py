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
watch (selectors, ``resourceVersion``, ``timeoutSeconds``, ``allowWatchBookmarks`` with a
``BOOKMARK`` every ``bookmark_seconds`` and 2 s before the timeout, ``sendInitialEvents``),
patch by content type (merge, strategic merge, JSON patch; 415 for another), delete
(graceful, ``DeleteOptions`` with preconditions and ``gracePeriodSeconds``),
``pods/status`` (get, patch), ``pods/log``, ``pods/binding`` — in one namespace or all;
Secrets — create, read, list, delete; namespaces — read, list; ``SelfSubjectAccessReview``
(``authorization.k8s.io/v1``, what ``kubectl auth can-i`` asks). A bearer token required
(401) and verbs denied as RBAC denies them (403) on request (``token=``, ``denied=``).
Errors are ``Status`` documents with their code (and ``Retry-After`` where a fault gives
one); a fault made with :meth:`FakeCluster.fail_next` fails the matching call (a watch's
410 or 500 in the stream, as an ``ERROR`` event). A watch streams JSON lines and ends at
its ``timeoutSeconds``, after an ``ERROR``, or when the server stops.

Network faults, as a client meets them when an API server restarts or a load balancer
misbehaves (the cluster keeps its state through all of them, as etcd does):
:meth:`FakeApiServer.reset_connections` resets every open connection (an RST: idle ones in
the client's pool, requests under way, watches); :meth:`~FakeApiServer.refuse_connections`
does so and refuses new connections (``ECONNREFUSED``) for a while, then listens again on
the same port; :meth:`~FakeApiServer.stall` holds the connections open now (no answer, no
watch bytes) until it resets them; :meth:`~FakeApiServer.drop_next_create_answer` stores a
creation and resets its connection instead of answering. A :class:`FaultRate`
(``faults=``) fails a share of the calls at random, seeded: with a status, or by a reset.
They compose with :meth:`FakeCluster.fail_next`, and are counted in the stats.

As a client wants it over a kept-alive connection: ``TCP_NODELAY`` and each answer in one
write (no ~40 ms delayed-ACK stall), and every request body read before the answer, errors
included. ``latency`` seconds pass before each API call is answered. What it served is
counted (:attr:`FakeApiServer.stats`, and ``GET /_kit/stats`` over HTTP): connections,
requests by verb and resource, the most requests and pod creations in flight at once, and
the faults (connections reset, answers dropped, stalls, refusals).

The server binds to 127.0.0.1 only, runs its requests on daemon threads, and stops by
itself after ``lifetime`` seconds (default 600) if the test forgets to.

In its own process, with a :class:`~k8s_workloads.testing.Kubelet` if asked::

    python -m k8s_workloads.testing.server --port 0 --latency 0.02 --lifetime 600 --kubelet 1

prints its URL as the first line of stdout and serves until its lifetime ends, its stdin
is closed, or it gets SIGTERM or SIGINT; then it exits 0 (a bad argument: one line on
stderr, exit 2). Its namespaces are ``default`` and each ``--namespace NAME`` (default:
``airflow``); ``--bookmark-seconds`` is ``bookmark_seconds``.

The HTTP side (one write per answer, bodies read before answers, counting, delays, the
serve loop that outlives a refusal) is :mod:`~k8s_workloads.testing._http`; the
connections and what a fault does to them, :mod:`~k8s_workloads.testing._connections`;
what a path and a query ask, :mod:`~k8s_workloads.testing._routes`; this module, what
each route answers.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from k8s_workloads import config_checks as _checks
from k8s_workloads.testing import _openapi, _tables
from k8s_workloads.testing._access import REVIEW_PATH, Access, Denied, check_token
from k8s_workloads.testing._http import HttpServer, JsonHandler
from k8s_workloads.testing._rates import FaultDraws, FaultRate
from k8s_workloads.testing._routes import (
    NAMESPACE_PATH,
    POD_PATH,
    SECRET_PATH,
    STATS_PATH,
    discovery_document,
    dry_run_flag,
    first,
    grace_seconds,
    is_watch,
    not_allowed,
    page_limit,
    partial,
    watch_options,
)
from k8s_workloads.testing._service import Service
from k8s_workloads.testing.cluster import FakeCluster
from k8s_workloads.testing.errors import ApiError, status_document
from k8s_workloads.testing.stats import ServerStats, StatsRecorder
from k8s_workloads.testing.watch import DEFAULT_BOOKMARK_SECONDS, next_bookmark_at

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["FakeApiServer"]

CREATED = frozenset({"pods", "secrets", "pods/binding"})
"""The resources the server creates (``POST``): what :meth:`FakeApiServer.drop_next_create_answer`
takes."""

_WATCH_POLL_SECONDS = 0.005


class _Handler(JsonHandler):
    """The API's routes: pods (and their subresources), Secrets, namespaces, discovery."""

    def _route(self, method: str, path: str, query: dict[str, list[str]]) -> None:
        access = self.server.access
        if path != STATS_PATH:  # the kit's own path: no API server has it
            access.authenticate(self.headers.get("Authorization"))
        if method == "GET" and (document := discovery_document(path)) is not None:
            self._send_json(200, document)
            return
        if method == "GET" and path in _openapi.DOCUMENTS:
            self._send_json(200, _openapi.DOCUMENTS[path]())
            return
        if method == "GET" and path == STATS_PATH:
            self._send_json(200, self.server.stats.snapshot().to_json())
            return
        if path == REVIEW_PATH:
            if method != "POST":
                raise not_allowed(method, "selfsubjectaccessreviews")
            self._send_json(201, access.review(self._object("SelfSubjectAccessReview")))
            return
        verb, resource = self._kind
        if match := POD_PATH.match(path):
            access.authorize(verb, resource, match["namespace"], match["name"])
            self._subresource = match["subresource"]
            self._pods(method, match["namespace"], match["name"], query)
            return
        if match := SECRET_PATH.match(path):
            access.authorize(verb, resource, match["namespace"], match["name"])
            self._secrets(method, match["namespace"], match["name"], query)
            return
        if match := NAMESPACE_PATH.match(path):
            access.authorize(verb, resource, None, match["name"])
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
        one = first(query)
        if method == "POST" and namespace is not None:
            pod, warnings = cluster.create_pod_answer(
                namespace,
                self._object("Pod"),
                dry_run=dry_run_flag(query.get("dryRun", [])),
                field_validation=one.get("fieldValidation"),
            )
            self._warnings = tuple(warnings)
            self._send_json(201, pod)
        elif method == "GET" and is_watch(one):
            self._watch(namespace, one)
        elif method == "GET":
            listing = cluster.list_pods(
                namespace,
                label_selector=one.get("labelSelector"),
                field_selector=one.get("fieldSelector"),
                limit=page_limit(one),
                continue_token=one.get("continue") or None,
            )
            self._send_list(listing)
        else:
            raise not_allowed(method, "pods")

    def _send_list(self, listing: dict[str, Any]) -> None:
        accept = self.headers.get("Accept") or ""
        if "as=PartialObjectMetadataList" in accept:
            self._send_json(200, partial(listing["items"], listing["metadata"]))
        elif "as=Table" in accept:
            self._send_json(200, _tables.pod_table(listing, now=self.server.cluster.now))
        else:
            self._send_json(200, listing)

    def _pod(self, method: str, namespace: str, name: str, query: dict[str, list[str]]) -> None:
        cluster = self.server.cluster
        dry_run = dry_run_flag(query.get("dryRun", []))
        subresource = self._subresource
        content_type = self.headers.get("Content-Type") or ""
        if subresource == "log" and method == "GET":
            text = cluster.pod_log(namespace, name, first(query).get("container"))
            self._send_text(200, text)
        elif subresource == "binding" and method == "POST":
            target = self._object("Binding").get("target") or {}
            cluster.bind_pod(namespace, name, str(target.get("name") or ""))
            self._send_json(201, {"kind": "Status", "apiVersion": "v1", "status": "Success"})
        elif subresource == "status" and method == "GET":
            self._send_json(200, cluster.read_pod(namespace, name))
        elif method == "PATCH" and subresource in {None, "status"}:
            # The pod, or its status subresource (what a kubelet patches): one rule each.
            patched = cluster.patch_pod(
                namespace,
                name,
                self._body(),
                subresource=subresource,
                patch_type=content_type,
                dry_run=dry_run,
                field_validation=first(query).get("fieldValidation"),
            )
            self._send_json(200, patched)
        elif subresource is not None:
            raise not_allowed(method, f"pods/{subresource}")
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
            one = first(query)
            dry = dry_run or dry_run_flag(list(options.get("dryRun") or []))
            pod = cluster.delete_pod(
                namespace,
                name,
                grace_period_seconds=grace_seconds(
                    options.get("gracePeriodSeconds", one.get("gracePeriodSeconds"))
                ),
                preconditions=options.get("preconditions") or None,
                dry_run=dry,
                propagation_policy=options.get("propagationPolicy") or one.get("propagationPolicy"),
            )
            self._send_json(200, pod)
        else:
            raise not_allowed(method, "pods")

    def _secrets(
        self, method: str, namespace: str | None, name: str | None, query: dict[str, list[str]]
    ) -> None:
        cluster = self.server.cluster
        dry_run = dry_run_flag(query.get("dryRun", []))
        if name is None and method == "GET":
            self._send_json(200, cluster.list_secrets(namespace))
        elif namespace is None:
            raise not_allowed(method, "secrets")
        elif name is None and method == "POST":
            secret = cluster.create_secret(
                namespace,
                self._object("Secret"),
                dry_run=dry_run,
                field_validation=first(query).get("fieldValidation"),
            )
            self._send_json(201, secret)
        elif name is not None and method == "GET":
            self._send_json(200, cluster.read_secret(namespace, name))
        elif name is not None and method == "DELETE":
            options = self._options() or {}
            dry = dry_run or dry_run_flag(list(options.get("dryRun") or []))
            cluster.delete_secret(namespace, name, dry_run=dry)
            document = status_document(200, "", "") | {
                "status": "Success",
                "details": {"name": name, "kind": "secrets"},
            }
            del document["message"], document["reason"]
            self._send_json(200, document)
        else:
            raise not_allowed(method, "secrets")

    def _namespaces(self, method: str, name: str | None) -> None:
        cluster = self.server.cluster
        if method != "GET":
            raise not_allowed(method, "namespaces")
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
        bookmarks, initial = watch_options(query)
        try:
            timeout = float(query.get("timeoutSeconds") or 0) or self.server.lifetime
        except ValueError:
            raise ApiError(400, "BadRequest", "timeoutSeconds: not a number") from None
        # The deadline is set before the watch starts, as the request's context is.
        deadline = time.monotonic() + timeout
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
        every = self.server.bookmark_seconds
        mark = next_bookmark_at(time.monotonic(), every=every, deadline=deadline)
        if not bookmarks:
            mark = None
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while not self.server.stopping.is_set() and time.monotonic() < deadline:
                self._hold()  # stalled: no events taken, no bytes; reset: the stream ends
                lines = watch.lines()
                for line in lines:
                    self._chunk((line + "\n").encode())
                if watch.closed and not len(watch):
                    break
                now = time.monotonic()
                if mark is not None and now >= mark:
                    cluster.send_bookmarks(watch)
                    mark = next_bookmark_at(now, every=every, deadline=deadline)
                elif not lines:
                    time.sleep(_WATCH_POLL_SECONDS)
            self._chunk(b"")
        except (BrokenPipeError, ConnectionAbortedError):
            pass  # the client went away (a reset by the kit goes on up: an RST, no end)
        finally:
            cluster.stop_watch(watch)
            self.close_connection = True


class FakeApiServer(Service):
    """Serve ``cluster`` on ``http://127.0.0.1:<port>`` until stopped (a context manager).

    ``latency`` seconds pass before every API call is answered (once at the start of a
    watch, never between its lines), as a remote API server's round trip would take. A
    watch with ``allowWatchBookmarks`` gets a ``BOOKMARK`` (only
    ``metadata.resourceVersion``) every ``bookmark_seconds`` whether or not other events
    flowed, and one 2 s before its ``timeoutSeconds`` ends, as the watch cache sends them
    (default 60 s, the cacher's ``defaultBookmarkFrequency``; a test passes less).

    Who may call it: with ``token``, every request must carry ``Authorization: Bearer
    <token>`` (else a 401 ``Unauthorized``, as with anonymous requests off); each
    :class:`Denied` of ``denied`` refuses a verb (a 403 ``Forbidden``, and
    ``allowed: false`` from a ``SelfSubjectAccessReview``), every other verb is allowed.

    Network faults: :meth:`reset_connections`, :meth:`refuse_connections`,
    :meth:`stall`, :meth:`drop_next_create_answer` (see each). ``faults``, a
    :class:`FaultRate`, fails that share of the API calls (a status, or a reset),
    counted in ``stats.faults_served``.

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
        bookmark_seconds: float = DEFAULT_BOOKMARK_SECONDS,
        faults: FaultRate | None = None,
        token: str | None = None,
        denied: Iterable[Denied] = (),
    ) -> None:
        _checks.check(self, "cluster", _checks.kind(FakeCluster), cluster)
        _checks.check(self, "token", check_token, token)
        denied = tuple(denied)
        for rule in denied:
            _checks.check(self, "denied", _checks.kind(Denied), rule)
        _checks.check(self, "faults", _checks.kind(FaultRate, optional=True), faults)
        _checks.check(self, "bookmark_seconds", _checks.seconds, bookmark_seconds)
        _checks.check(self, "port", _checks.port, port)
        _checks.check(self, "lifetime", _checks.seconds, lifetime)
        _checks.check(self, "latency", _checks.delay, latency)
        self.cluster = cluster
        self._server = HttpServer(("127.0.0.1", port), _Handler)
        self._server.cluster = cluster
        self._server.lifetime = lifetime
        self._server.latency = float(latency)
        self._server.stats = StatsRecorder()
        self._server.stopping = threading.Event()
        self._server.delete_options = []
        self._server.bookmark_seconds = float(bookmark_seconds)
        self._server.fault_draws = None if faults is None else FaultDraws(faults)
        self._server.access = Access(token, denied)
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

    # --- network faults ---------------------------------------------------------------
    # The cluster keeps its state through all of them, as etcd does through an API server
    # restart. They compose with FakeCluster.fail_next: a fault armed there answers (or
    # resets) the call it meets, whatever connection carried it.

    def reset_connections(self) -> int:
        """Reset every open connection (an RST), as an API server restart does: one idle
        in the client's pool, one with a request under way (never answered; whether the
        request was applied depends on how far it got), a watch (its stream ends without
        the closing chunk). The server goes on listening. How many were reset."""
        return self._server.connections.reset_all()

    def refuse_connections(self, seconds: float | None = None) -> None:
        """An API server restart: reset every open connection, and refuse new ones (the
        client sees ``ECONNREFUSED``: urllib3's ``NewConnectionError``, aiohttp's
        ``ClientConnectorError``) for ``seconds`` (None: until :meth:`accept_connections`),
        then listen again on the same port and serve the same cluster. A refusal under way
        is replaced. Returns at once; :attr:`refusing` tells when the window is over. The
        attempts refused are not counted: nothing listens, the system refuses them."""
        if seconds is not None:
            _checks.check(self, "seconds", _checks.seconds, seconds)
        if self.stopped:
            return
        self._server.stats.faulted("refusals")
        self._server.refuse(seconds)
        self._server.connections.reset_all()

    def accept_connections(self) -> None:
        """End a :meth:`refuse_connections` window now: listen again on the same port."""
        self._server.listen_again()

    @property
    def refusing(self) -> bool:
        """True during a :meth:`refuse_connections` window."""
        return self._server.refusing

    def stall(self, seconds: float | None = None) -> int:
        """A load balancer stall: the connections open now forward nothing — a request
        sent on one never reaches the cluster, one under way gets no answer, a watch gets
        no bytes — for ``seconds`` (None: until :meth:`unstall` or :meth:`stop`), then
        they are reset (an RST), as a load balancer drops a flow it held. Connections made
        meanwhile are served: a client that gives up on its call (a read timeout) and
        reconnects gets through; one that waits on its kept-alive connection without a
        read timeout waits for the whole stall, the silent connection a client must guard
        against. How many connections are held (one held already stays with its stall)."""
        if seconds is not None:
            _checks.check(self, "seconds", _checks.seconds, seconds)
        if self.stopped:
            return 0
        self._server.stats.faulted("stalls")
        return self._server.stall(seconds)

    def unstall(self) -> int:
        """End every stall now: the held connections are reset. How many were."""
        return self._server.unstall()

    def drop_next_create_answer(self, resource: str = "pods", *, times: int = 1) -> None:
        """Lose the answers of the next ``times`` creations of ``resource`` (``pods``,
        ``secrets``, ``pods/binding``) that are stored: the object exists (a watch sees it,
        a read finds it), but the connection is reset after the write instead of answered,
        so the client gets a connection error after its request was sent, as when an API
        server restarts between the two. A creation that fails (a fault armed with
        :meth:`FakeCluster.fail_next`, a 409, a 422) or a ``dryRun`` is answered and
        leaves the drop armed."""
        if resource not in CREATED:
            raise ValueError(f"resource must be one of {sorted(CREATED)}, got {resource!r}")
        _checks.check(self, "times", _checks.positive, times)
        self._server.drop_answers(resource, times)

    def start(self) -> FakeApiServer:
        if not self._started:
            self._started = True
            self._thread.start()
            self._timer.start()
        return self

    def stop(self) -> None:
        """Stop serving: open watches end, idle connections are closed, connections a
        stall holds are reset, the port is released. Safe to call twice."""
        if self._server.stopping.is_set():
            return
        self._server.unstall()  # before stopping: a held request is never answered
        self._server.stopping.set()
        self._timer.cancel()
        if self._started:
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()


if __name__ == "__main__":
    from k8s_workloads.testing._process import main

    sys.exit(main())

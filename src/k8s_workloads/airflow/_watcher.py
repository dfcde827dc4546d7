"""The executor's watcher thread: one namespace's pod watch (or every namespace's) read
as JSON lines, decoded once and put on a queue for ``sync()`` to feed to the core; it
restarts when the stream ends and resumes from the last version it saw.

It is given what it uses, never the executor: the API client, the label selector of the
pods it watches, the queue and a logger.

A watch never waits for ever, and an outage is a few lines: the rules are
:mod:`k8s_workloads.io.watching`'s, shared with the event loop's watch
(:class:`~k8s_workloads.io.aio.AsyncWatch`).
"""

from __future__ import annotations

import contextlib
import random
import threading
from typing import TYPE_CHECKING, Any

from k8s_workloads.io.watching import (
    BACKOFF_FIRST_SECONDS,
    BACKOFF_MOST_SECONDS,
    WATCH_READ_TIMEOUT_SECONDS,
    WatchRestarts,
    describe_failure,
    server_address,
    watch_backoff,
    watch_seconds,
)
from k8s_workloads.watch.decoding import decode_event

if TYPE_CHECKING:
    import logging
    import queue
    from collections.abc import Callable

__all__ = ["WATCH_READ_TIMEOUT_SECONDS", "_Watcher", "describe_failure", "watch_backoff"]


class _Watcher(threading.Thread):
    """Reads one namespace's pod watch (None: every namespace's) as JSON lines onto
    ``events``; restarts when the stream ends, backing off when it fails.

    ``api``: the ``CoreV1Api`` it watches with; ``label_selector``: the pods it watches
    (``pods.labels.watcher_selector``'s); ``log``: where restarts and outages are told;
    ``connect_timeout``: seconds to connect (``api_request_timeout``'s first);
    ``rng``: the randomness of the watch timeouts and the backoff (seed it in tests);
    ``on_restart``: told of each restart, ``failed`` or not (the executor's metrics).
    """

    read_timeout: float = WATCH_READ_TIMEOUT_SECONDS
    """Seconds without a line before the connection is replaced (set lower in tests)."""
    first_backoff: float = BACKOFF_FIRST_SECONDS
    most_backoff: float = BACKOFF_MOST_SECONDS

    def __init__(
        self,
        api: Any,  # noqa: ANN401 - a CoreV1Api of either client
        namespace: str | None,
        events: queue.SimpleQueue[object],
        *,
        label_selector: str,
        log: logging.Logger | logging.LoggerAdapter[Any],
        connect_timeout: float = 10.0,
        rng: random.Random | None = None,
        on_restart: Callable[..., None] | None = None,
    ) -> None:
        super().__init__(name=f"k8s-workloads-watcher-{namespace or 'all'}", daemon=True)
        self.api = api
        self.label_selector = label_selector
        self.log = log
        self.namespace = namespace
        self.events = events
        self.connect_timeout = connect_timeout
        self.rng = rng or random.Random()  # noqa: S311 - spreading restarts, not secrets
        self.stopping = threading.Event()
        self.resource_version: str | None = None
        self.restart = threading.Event()
        """Set by ``sync()`` after a re-list: watch again from ``resource_version``."""
        self.response: Any = None
        self.restarts = WatchRestarts(self.rng)
        self.delivered = False
        """Whether the current stream delivered a line (a bookmark counts)."""
        self.on_restart = on_restart
        """Called as ``on_restart(failed=...)`` each time the watch is started again."""

    def stop(self, timeout: float) -> None:
        """Stop reading: the open stream is shut down, so an idle watch ends at once."""
        self.shut_down()
        self.join(timeout=timeout)

    def shut_down(self) -> None:
        """Ask the thread to stop and shut its open stream down (see :meth:`stop`)."""
        self.stopping.set()
        response = self.response
        shutdown = getattr(response, "shutdown", None)  # urllib3 2.3+
        if shutdown is not None:
            with contextlib.suppress(Exception):
                shutdown()

    @property
    def _where(self) -> str:
        scope = "every namespace" if self.namespace is None else f"namespace {self.namespace}"
        return f"The pod watch of {scope} at {server_address(self.api)}"

    def run(self) -> None:
        while not self.stopping.is_set():
            self.delivered = False
            error: Exception | None = None
            try:
                self._stream()
            except Exception as caught:  # noqa: BLE001 - the thread's boundary: it must not die
                if self.stopping.is_set():
                    return  # the stream was shut down by stop()
                error = caught
            delay = self.restarts.ended(
                self.log,
                self._where,
                delivered=self.delivered,
                error=error,
                first=self.first_backoff,
                most=self.most_backoff,
            )
            if self.stopping.is_set():
                return
            if self.on_restart is not None:
                self.on_restart(failed=error is not None)
            if delay is not None:
                self.stopping.wait(delay)

    def _stream(self) -> None:
        api = self.api
        kwargs: dict[str, Any] = {
            "label_selector": self.label_selector,
            "watch": True,
            "allow_watch_bookmarks": True,
            "timeout_seconds": watch_seconds(self.rng),
            "_request_timeout": (self.connect_timeout, self.read_timeout),
            "_preload_content": False,
        }
        if self.resource_version:
            kwargs["resource_version"] = self.resource_version
        if self.namespace is None:
            response = api.list_pod_for_all_namespaces(**kwargs)
        else:
            response = api.list_namespaced_pod(self.namespace, **kwargs)
        self.response = response
        self.restarts.established(self.log, self._where)
        try:
            buffer = b""
            for chunk in response.stream(amt=None, decode_content=True):
                if self.stopping.is_set() or self.restart.is_set():
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        self.delivered = True
                        self._take(line.decode("utf-8", "replace"))
        finally:
            self.response = None
            response.release_conn()
        if self.restart.is_set():
            self.restart.clear()

    def _take(self, line: str) -> None:
        # Decoded here, once, on the watcher's thread (only what resolution reads); the
        # core takes the decoded event (a BOOKMARK too: it moves the core's version).
        # Text that is not JSON goes on as it is, and the core reports it.
        try:
            event = decode_event(line)
        except (ValueError, RecursionError):
            self.events.put(line)
            return
        self.events.put(event)
        if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
            return
        obj = event["object"]
        if event.get("type") == "ERROR":
            # A 410 (or any ERROR): the stream ends; the core asks for a re-list.
            self.resource_version = None
            self.restart.set()
            return
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if isinstance(version, str):
            self.resource_version = version

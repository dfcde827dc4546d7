"""The executor's watcher thread: one namespace's pod watch (or every namespace's) read
as JSON lines, decoded once and put on the executor's queue for ``sync()`` to feed to the
core; it restarts when the stream ends and resumes from the last version it saw.

A watch never waits for ever, and an outage is a few lines:

* it asks for bookmarks (``allowWatchBookmarks``): the API server's watch cache sends an
  idle watch a ``BOOKMARK`` about every minute, which moves the version it resumes from;
* the server ends it after a time picked at random in 5-10 minutes, as client-go's
  reflector does, so the watches of many schedulers do not all restart at once;
* a connection on which no line came for :attr:`_Watcher.read_timeout` (90 s, longer than
  the bookmark interval) is given up and replaced: a load balancer that dropped it
  silently cannot hang the watch, and a healthy idle one is never torn down;
* a failed watch is tried again after 1 s, doubling to 30 s, each with up to a quarter
  more at random; back to 1 s once a stream delivers a line. Each failure is one warning
  naming the API server and the error (its traceback at debug level), and the watch
  established again after failures is one info line.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
from typing import TYPE_CHECKING, Any

from k8s_workloads.pods.labels import watcher_selector
from k8s_workloads.watch._watchjson import decode_event

if TYPE_CHECKING:
    import queue

    from k8s_workloads.airflow.executor import KubernetesExecutor

__all__ = ["WATCH_READ_TIMEOUT_SECONDS", "_Watcher", "describe_failure", "watch_backoff"]

WATCH_SECONDS_LEAST = 300
"""The shortest server-side timeout of a watch (``timeoutSeconds``); each watch asks for
between this and twice this, at random (client-go's reflector: ``minWatchTimeout``)."""

WATCH_READ_TIMEOUT_SECONDS = 90.0
"""How long a watch connection may stay silent before it is replaced. Longer than the
interval of the API server's bookmarks to an idle watch (about a minute: the watch
cache's), so only a dead connection reaches it; short enough that one is replaced within
two minutes."""

BACKOFF_FIRST_SECONDS = 1.0
BACKOFF_MOST_SECONDS = 30.0
_JITTER = 0.25
"""A restart waits up to this share more, at random: schedulers that lost one API
server at once do not come back to it at once."""


def watch_backoff(
    failures: int,
    rng: random.Random,
    *,
    first: float = BACKOFF_FIRST_SECONDS,
    most: float = BACKOFF_MOST_SECONDS,
) -> float:
    """Seconds to wait before watching again after ``failures`` failures in a row (from
    1): ``first``, doubling up to ``most``, each with up to a quarter more at random."""
    base = min(most, first * 2.0 ** min(failures - 1, 62))
    return base * (1.0 + _JITTER * rng.random())


def describe_failure(error: BaseException) -> str:
    """A failed call in one line: the type and the message (an ``ApiException``'s status,
    reason and the ``Status`` message, not its headers and body over several lines)."""
    status = getattr(error, "status", None)
    if isinstance(status, int) and not isinstance(status, bool):
        text = f"HTTP {status} {getattr(error, 'reason', '') or ''}".rstrip()
        body = getattr(error, "body", None)
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            message = json.loads(body or "").get("message")
            if isinstance(message, str) and message:
                text += f": {message}"
    else:
        text = str(error)
    first_line = " ".join(text.split())
    return f"{type(error).__name__}: {first_line}" if first_line else type(error).__name__


def server_address(api: Any) -> str:  # noqa: ANN401 - a CoreV1Api
    """The API server ``api`` calls (its client configuration's host)."""
    host = getattr(getattr(getattr(api, "api_client", None), "configuration", None), "host", None)
    return host if isinstance(host, str) and host else "the API server"


class _Watcher(threading.Thread):
    """Reads one namespace's pod watch (None: every namespace's) as JSON lines onto the
    executor's queue; restarts when the stream ends, backing off when it fails.

    ``connect_timeout``: seconds to connect (``api_request_timeout``'s first);
    ``rng``: the randomness of the watch timeouts and the backoff (seed it in tests).
    """

    read_timeout: float = WATCH_READ_TIMEOUT_SECONDS
    """Seconds without a line before the connection is replaced (set lower in tests)."""
    first_backoff: float = BACKOFF_FIRST_SECONDS
    most_backoff: float = BACKOFF_MOST_SECONDS

    def __init__(
        self,
        executor: KubernetesExecutor,
        namespace: str | None,
        events: queue.SimpleQueue[object],
        *,
        connect_timeout: float = 10.0,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__(name=f"k8s-workloads-watcher-{namespace or 'all'}", daemon=True)
        self.executor = executor
        self.namespace = namespace
        self.events = events
        self.connect_timeout = connect_timeout
        self.rng = rng or random.Random()  # noqa: S311 - spreading restarts, not secrets
        self.stopping = threading.Event()
        self.resource_version: str | None = None
        self.restart = threading.Event()
        """Set by ``sync()`` after a re-list: watch again from ``resource_version``."""
        self.response: Any = None
        self.failures = 0
        """Failed watches since a stream last delivered a line (the backoff's count)."""
        self.warned = 0
        """Failures warned of since the watch was last established."""
        self.delivered = False
        """Whether the current stream delivered a line (a bookmark counts)."""

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
        return f"The pod watch of {scope} at {server_address(self.executor.kube_client)}"

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
            if self.delivered:
                self.failures = 0
                if error is None:
                    continue  # ended by the server (its timeout, an ERROR): watch again
            self.failures += 1
            delay = watch_backoff(
                self.failures, self.rng, first=self.first_backoff, most=self.most_backoff
            )
            log = self.executor.log
            if error is None:  # ended at once with nothing: not a failure to shout about
                log.debug("%s ended without a line; watching again in %.1f s", self._where, delay)
            else:
                self.warned += 1
                log.warning(
                    "%s failed: %s; watching again in %.1f s",
                    self._where,
                    describe_failure(error),
                    delay,
                )
                log.debug("The pod watch's failure", exc_info=error)
            self.stopping.wait(delay)

    def _stream(self) -> None:
        executor = self.executor
        selector = watcher_selector(executor.scheduler_job_id or "")
        api = executor.kube_client
        kwargs: dict[str, Any] = {
            "label_selector": selector.label_selector,
            "watch": True,
            "allow_watch_bookmarks": True,
            "timeout_seconds": int(WATCH_SECONDS_LEAST * (1.0 + self.rng.random())),
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
        if self.warned:
            executor.log.info(
                "%s is established again after %d failed attempts", self._where, self.warned
            )
            self.warned = 0
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

"""The executor's watcher thread: one namespace's pod watch (or every namespace's) read
as JSON lines, put on a queue as they came for ``sync()`` to feed to the core. When the
stream ends it asks, on the same queue, where to start again: the core owns each watch's
resource version, and ``sync()`` answers with it (after a re-list, the list's).

It is given what it uses, never the executor: the API client, the label selector of the
pods it watches, the queue and a logger.

A watch never waits for ever, and an outage is a few lines: the rules are
:mod:`k8s_workloads.io.watching`'s, shared with the event loop's watch
(:class:`~k8s_workloads.io.aio.AsyncWatch`).
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol, cast

from k8s_workloads.io.watching import RELIST_WAIT_SECONDS, PodWatch, expired_event
from k8s_workloads.watch.resolution import Outcome

if TYPE_CHECKING:
    import datetime
    import logging
    import random
    from collections.abc import Callable, Sequence

    from k8s_workloads.executor.core import ExecutorCore
    from k8s_workloads.keys import WorkloadKey

__all__ = ["_Resume", "_WatchFeed", "_Watcher"]

_ANSWER_POLL_SECONDS = 0.2
"""How often a watcher waiting for its resume answer looks whether it is stopping."""


class _Resume:
    """A watcher's question, put on the queue when it is to watch again: where from.

    ``sync()`` answers it (:meth:`answer`) with the core's resource version of the
    watcher's namespace and the core's re-list count, once no re-list is under way (or
    after :data:`RELIST_WAIT_SECONDS`). The
    lines of a stream carry the count it started with: those of a stream from before
    the last re-list are older than the list, and ``sync()`` drops them.
    """

    def __init__(self, namespace: str | None) -> None:
        self.namespace = namespace
        self.asked = time.monotonic()
        self.version: str | None = None
        self.relists = 0
        self._answered = threading.Event()

    def answer(self, version: str | None, relists: int) -> None:
        self.version, self.relists = version, relists
        self._answered.set()

    def wait(self, stopping: threading.Event) -> bool:
        """Wait for the answer; False if the watcher was stopped first."""
        while not self._answered.wait(_ANSWER_POLL_SECONDS):
            if stopping.is_set():
                return False
        return True


class _Watcher(threading.Thread, PodWatch):
    """Reads one namespace's pod watch (None: every namespace's) as JSON lines onto
    ``events``; restarts when the stream ends, backing off when it fails.

    ``api``: the ``CoreV1Api`` it watches with; ``label_selector``: the pods it watches
    (``pods.labels.watcher_selector``'s); ``log``: where restarts and outages are told;
    ``connect_timeout``: seconds to connect (``api_request_timeout``'s first);
    ``rng``: the randomness of the watch timeouts and the backoff (seed it in tests);
    ``on_restart``: told of each restart, ``failed`` or not (the executor's metrics);
    ``resource_version`` and ``relists``: where the first stream starts (the core's, at
    start). Each line goes on ``events`` as ``(namespace, relists, line)``, the bytes as
    they came; a :class:`_Resume` before each stream but the first.
    """

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
        resource_version: str | None = None,
        relists: int = 0,
    ) -> None:
        threading.Thread.__init__(
            self, name=f"k8s-workloads-watcher-{namespace or 'all'}", daemon=True
        )
        PodWatch.__init__(self, api, namespace, log=log, connect_timeout=connect_timeout, rng=rng)
        self.label_selector = label_selector
        self.events = events
        self.stopping = threading.Event()
        self.resource_version = resource_version
        """Where the current stream started (the core's answer)."""
        self.relists = relists
        """The core's re-list count the current stream started with."""
        self.newest_relists = relists
        """The core's re-list count as ``sync()`` last saw it: a stream started with an
        older one is older than the lists, and ends (a count, not a flag: no signal is
        lost between an answer and the stream it starts)."""
        self.response: Any = None
        self._response_lock = threading.Lock()
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
        self.interrupt()

    def interrupt(self) -> None:
        """Shut the open stream down, if any (an idle one ends at once). Under the lock
        the stream is let go under: never the socket of a connection given back."""
        with self._response_lock:
            shutdown = getattr(self.response, "shutdown", None)  # urllib3 2.3+
            if shutdown is not None:
                with contextlib.suppress(Exception):
                    shutdown()

    @property
    def outdated(self) -> bool:
        """Whether the stream started before the core's last re-list ended."""
        return self.newest_relists != self.relists

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
            if self.outdated:  # ended for a re-list (shut down, or at its next line)
                error, self.delivered = None, True  # not a failure: watch again at once
            elif getattr(error, "status", None) == 410:
                self._expired(error)
                error, self.delivered = None, True
            delay = self.ended(delivered=self.delivered, error=error)
            if self.stopping.is_set():
                return
            if self.on_restart is not None:
                self.on_restart(failed=error is not None)
            if delay is not None:
                self.stopping.wait(delay)
            if not self._resume():
                return

    def _expired(self, error: Exception | None) -> None:
        """The watch call itself was answered 410 (the version is gone): the ``ERROR``
        event a stream would carry, put on the queue for the core to re-list."""
        line = expired_event(getattr(error, "body", None))
        self.events.put((self.namespace, self.relists, line))

    def _resume(self) -> bool:
        """Ask ``sync()`` where to start again and wait for its answer (False: stopped)."""
        ask = _Resume(self.namespace)
        self.events.put(ask)
        if not ask.wait(self.stopping):
            return False
        self.resource_version, self.relists = ask.version, ask.relists
        return True

    def _stream(self) -> None:
        api = self.api
        kwargs = self.watch_arguments(self.label_selector, None, self.resource_version)
        if self.namespace is None:
            response = api.list_pod_for_all_namespaces(**kwargs)
        else:
            response = api.list_namespaced_pod(self.namespace, **kwargs)
        self.response = response  # before the look below: sync() interrupts what it sees
        self.established()
        ended = False  # read to its end: its connection may serve another call
        try:
            buffer = b""
            if self.outdated:  # a re-list ended since the answer: watch again from it
                return
            for chunk in response.stream(amt=None, decode_content=True):
                if self.stopping.is_set() or self.outdated:
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                namespace, relists, events = self.namespace, self.relists, self.events
                for line in lines:
                    if line.strip():
                        self.delivered = True
                        # The line as it came: the core decodes it (the one path) and
                        # keeps its version; an ERROR ends the stream server-side.
                        events.put((namespace, relists, line))
            else:  # the server ended it, not a shutdown of ours (its socket is gone)
                ended = not (self.stopping.is_set() or self.outdated)
        finally:
            with self._response_lock:
                self.response = None
                if ended:
                    response.release_conn()
                else:  # still open on the server: never back to the pool the calls share
                    response.close()


class _RunningMeasure(Protocol):
    """What measures the time from a workload's intake to its pod's Running (metrics)."""

    @property
    def timing_running(self) -> bool: ...

    def running(self, key: WorkloadKey | None) -> None: ...


class _WatchFeed:
    """What joins the watchers to the core, on the scheduler's thread (``sync()``).

    :meth:`feed` gives the core every line the watchers put on ``events``, as it came,
    with the namespace of its watch: the core decodes it (its one path to decisions) and
    keeps each watch's resource version. A line of a stream started before the core's
    last re-list is older than the list and is dropped. :meth:`resume`, after the pass,
    ends every stream once a re-list has ended (an idle one is shut down at once), and
    answers the watchers that asked where to watch again (:class:`_Resume`) with the
    core's version of their namespace, once no re-list is under way, or after
    :data:`RELIST_WAIT_SECONDS` (then from now). ``measure`` is told of each Running pod
    while it times any.
    """

    def __init__(
        self,
        core: ExecutorCore,
        events: queue.SimpleQueue[object],
        watchers: Sequence[_Watcher],
        measure: _RunningMeasure | None = None,
    ) -> None:
        self.core = core
        self.events = events
        self.watchers = watchers
        self.measure = measure
        self.asks: list[_Resume] = []
        """Watchers waiting to know where to watch again."""
        self.relists = core.relists
        """The core's re-list count the watchers' streams were last ended for."""

    def feed(self, now: datetime.datetime) -> None:
        """Feed the core every line that arrived; keep the resume asks for :meth:`resume`."""
        core, events, measure = self.core, self.events, self.measure
        timing = measure if measure is not None and measure.timing_running else None
        with contextlib.suppress(queue.Empty):
            while True:
                item = events.get_nowait()
                if isinstance(item, _Resume):
                    self.asks.append(item)
                    continue
                namespace, relists, line = cast("tuple[str | None, int, bytes]", item)
                if relists != core.relists:
                    continue  # its watcher restarts from the list's version
                resolution = core.feed_event(line, now=now, namespace=namespace)
                if timing is not None and resolution.outcome is Outcome.RUNNING:
                    timing.running(resolution.key)

    def resume(self) -> None:
        """End the streams older than the core's last re-list; answer the asks."""
        core = self.core
        relists = core.relists
        if relists != self.relists:
            self.relists = relists
            for watcher in self.watchers:
                watcher.newest_relists = relists  # first: a stream it starts next is stale
                watcher.interrupt()
        if not self.asks:
            return
        # A watch waits for a re-list under way, so that it starts from the list; not
        # for ever: one whose lists keep failing does not blind every watch. After the
        # wait it watches from the core's version of its namespace (gone with the ERROR:
        # from now; or the last line fed since), and from its list's once it ends.
        waited = time.monotonic() - RELIST_WAIT_SECONDS
        waiting: list[_Resume] = []
        for ask in self.asks:
            if core.is_relisting and ask.asked > waited:
                waiting.append(ask)
            else:
                ask.answer(core.resource_version(ask.namespace), relists)
        self.asks = waiting

"""One watch stream of the kit's cluster, and the changes it is fed from.

:class:`FakeWatch` holds the events that have arrived for one watch (its namespace and
selectors), as the API server's watch cache would send them; the cluster pushes shared
snapshots into it under its lock, and the test (or the HTTP server) takes them out.
"""

from __future__ import annotations

import json
from collections import deque
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from collections.abc import Iterator

    from k8s_workloads.pods.manifest import Manifest
    from k8s_workloads.testing.selectors import FieldSelector, LabelSelector

__all__ = [
    "BOOKMARK_BEFORE_TIMEOUT_SECONDS",
    "DEFAULT_BOOKMARK_SECONDS",
    "FakeWatch",
    "next_bookmark_at",
]

DEFAULT_BOOKMARK_SECONDS = 60.0
"""How often the watch cache sends a ``BOOKMARK`` to a watch that allows them: the
cacher's ``defaultBookmarkFrequency = time.Minute`` (kubernetes/kubernetes,
``staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go``)."""

BOOKMARK_BEFORE_TIMEOUT_SECONDS = 2.0
"""The last ``BOOKMARK`` comes this long before the watch's own timeout ends
(``cache_watcher.go``: "right before the watcher timeout - for now we simply set it 2s
before the deadline")."""


def next_bookmark_at(now: float, *, every: float, deadline: float) -> float | None:
    """When a watch that allows bookmarks gets its next ``BOOKMARK`` (same clock as
    ``now``): ``every`` seconds from ``now``, or 2 s before the watch's ``deadline`` if that
    comes first; None once that moment is past (the watch gets no more).

    The watch cache's rule (``cacheWatcher.nextBookmarkTime`` in kubernetes/kubernetes
    ``staging/src/k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go``): asked when the
    watch starts and again after each bookmark (``Cacher.finishDispatching`` requeues the
    watcher), so bookmarks are periodic whether or not the watch had other events. The
    cacher checks its buckets about once a second (a jittered 1 s timer, 1 s buckets), so a
    real bookmark may come up to a second either side; the kit's comes on time.
    """
    mark = min(now + every, deadline - BOOKMARK_BEFORE_TIMEOUT_SECONDS)
    # Upstream "if heartbeatTime.Before(now)": none. Not after now here, so that the
    # bookmark sent 2 s before the deadline is the last one.
    return None if mark <= now else mark


def _copy(value: Manifest) -> Manifest:
    # Plain JSON values only: several times faster than copy.deepcopy.
    copied: Manifest = json.loads(json.dumps(value))
    return copied


@attrs.define
class _Change:
    version: int
    before: Manifest | None
    after: Manifest
    deleted: bool


class FakeWatch:
    """One watch stream; read what has arrived with :meth:`events` or :meth:`lines`."""

    def __init__(self, namespace: str | None, labels: LabelSelector, fields: FieldSelector) -> None:
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self._events: deque[Manifest] = deque()
        self.bookmarks = False
        """True if ``BOOKMARK`` events may be sent (``allowWatchBookmarks``)."""
        self.closed = False
        """True once the stream ended (a 410): start a new watch."""

    def selects(self, pod: Manifest | None) -> bool:
        if pod is None:
            return False
        metadata = pod["metadata"]
        if self.namespace is not None and metadata.get("namespace") != self.namespace:
            return False
        return self.labels.matches(metadata.get("labels")) and self.fields.matches(pod)

    def _push(self, event: Manifest) -> None:
        if not self.closed:
            self._events.append(event)

    def _end(self, status: Manifest | None) -> None:
        if not self.closed:
            if status is not None:
                self._events.append({"type": "ERROR", "object": status})
            self.closed = True

    def __len__(self) -> int:
        return len(self._events)

    def _take(self, limit: int | None) -> list[Manifest]:
        count = len(self._events) if limit is None else min(limit, len(self._events))
        return [self._events.popleft() for _ in range(count)]

    def events(self, limit: int | None = None, *, copy: bool = True) -> list[Manifest]:
        """The events that have arrived (at most ``limit``), oldest first, as dicts.

        ``copy=False`` gives the cluster's own snapshots, shared by every watch and the
        history (no copy per event): read them, never change them.
        """
        taken = self._take(limit)
        return [_copy(event) for event in taken] if copy else taken

    def lines(self, limit: int | None = None) -> list[str]:
        """The same as JSON lines, as the API server streams them."""
        return [json.dumps(event, separators=(",", ":")) for event in self._take(limit)]

    def peek(self) -> tuple[Manifest, ...]:
        """The waiting events, not taken (shared snapshots: read only)."""
        return tuple(self._events)

    def drop(self, index: int) -> Manifest:
        """Take one waiting event out of order (to reorder or lose it in a test)."""
        event = self._events[index]
        del self._events[index]
        return _copy(event)

    def __iter__(self) -> Iterator[Manifest]:
        while self._events:
            yield _copy(self._events.popleft())

"""The kit cluster's lists and watches: pods listed in pages from a snapshot, watches fed
every change, bookmarks, and the 410s of an expired history.

Every change a pod goes through reaches :meth:`ClusterWatches._changed`: it keeps the
change in the history (for watches from a resource version) and sends it to each open
watch whose selectors it concerns (``ADDED``, ``MODIFIED``, ``DELETED``; a pod that
stops matching is sent as ``DELETED``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from k8s_workloads.testing import _paging
from k8s_workloads.testing._cluster_store import ClusterStore, locked, not_found
from k8s_workloads.testing.errors import ApiError, status_document
from k8s_workloads.testing.selectors import FieldSelector, LabelSelector
from k8s_workloads.testing.watch import FakeWatch, _Change, _copy

if TYPE_CHECKING:
    from k8s_workloads.pods.manifest import Manifest

__all__ = ["ClusterWatches"]

_IN_STREAM_STATUSES = frozenset({410, 500})


class ClusterWatches(ClusterStore):
    """The list and watch calls of :class:`~k8s_workloads.testing.FakeCluster`, and the
    change feed its writes go through."""

    @locked
    def list_pods(
        self,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> Manifest:
        """``list_namespaced_pod`` / ``list_pod_for_all_namespaces``: a ``PodList``.

        With ``limit`` (above 0), at most that many items and, when more remain,
        ``metadata.continue``: pass it back as ``continue_token`` for the next page, read
        from the same snapshot (same ``resourceVersion``; later changes do not show).
        ``metadata.remainingItemCount`` comes with it for a list without selectors; with
        selectors the API server leaves it unset (the count is unknown), and so does this.
        A token whose snapshot is gone (:meth:`expire_list_continuations`, :meth:`compact`,
        or more than ``list_snapshots`` newer ones) is a 410 ``Expired``; one this cluster
        did not make, a 400.
        """
        labels = LabelSelector.parse(label_selector)
        fields = FieldSelector.parse(field_selector)
        self._call("list_pods", namespace or "", label_selector or "")
        probe = FakeWatch(namespace, labels, fields)
        after: tuple[str, str] | None = None
        if continue_token:
            try:
                version, after = _paging.decode_continue(continue_token)
                snapshot = self._lists.recall(version)
            except _paging.InvalidContinue as error:
                raise ApiError(400, "BadRequest", str(error)) from None
            except _paging.ExpiredContinue as error:
                raise ApiError(410, "Expired", str(error)) from None
        else:
            version = self._version
            snapshot = tuple(sorted(self._snapshots.items()))
        items, last, remaining = _paging.page(
            snapshot, probe.selects, after=after, limit=limit if limit and limit > 0 else None
        )
        metadata: Manifest = {"resourceVersion": str(version)}
        if last is not None:
            self._lists.remember(version, snapshot)
            metadata["continue"] = _paging.encode_continue(version, last)
            if not label_selector and not field_selector:
                metadata["remainingItemCount"] = remaining
        return {
            "kind": "PodList",
            "apiVersion": "v1",
            "metadata": metadata,
            "items": [_copy(pod) for pod in items],
        }

    @locked
    def expire_list_continuations(self) -> None:
        """Forget every list snapshot: each ``continue`` token given so far gets a 410
        ``Expired``, as once etcd compacted its revision."""
        self._lists.clear()

    @locked
    def watch(
        self,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        allow_bookmarks: bool = False,
        send_initial_events: bool = False,
    ) -> FakeWatch:
        """A watch of the selected pods from ``resource_version``.

        None or ``"0"``: every selected pod now, as ``ADDED``, then its changes. A version
        within the kept history: every change after it. An older one: the watch ends at
        once with an ``ERROR`` event carrying a 410 ``Expired`` Status, as the watch cache
        answers (the request itself succeeds). ``send_initial_events`` (with
        ``resourceVersionMatch=NotOlderThan``): the ``ADDED`` events, then a ``BOOKMARK``
        annotated ``k8s.io/initial-events-end: "true"``, whatever the version.
        ``allow_bookmarks``: :meth:`send_bookmarks` reaches this watch.

        A fault (:meth:`fail_next`) with status 410 or 500 ends the watch the same way,
        in the stream, as a storage error does on a real server; any other status fails
        the request itself (an :class:`ApiError`: 429, 503, 403, ...).
        """
        labels = LabelSelector.parse(label_selector)
        fields = FieldSelector.parse(field_selector)
        watch = FakeWatch(namespace, labels, fields)
        watch.bookmarks = allow_bookmarks
        try:
            self._call("watch", namespace or "", label_selector or "")
        except ApiError as error:
            if error.status not in _IN_STREAM_STATUSES:
                raise
            watch._end(json.loads(error.body))  # noqa: SLF001
            return watch
        if send_initial_events or resource_version in {None, "", "0"}:
            for where in sorted(self._snapshots):
                pod = self._snapshots[where]
                if watch.selects(pod):
                    watch._push({"type": "ADDED", "object": pod})  # noqa: SLF001
            if send_initial_events:
                watch._push(self._bookmark(initial_events_end=True))  # noqa: SLF001
        else:
            try:
                since = int(str(resource_version))
            except ValueError:
                raise ApiError(
                    400, "BadRequest", f"invalid resource version {resource_version!r}"
                ) from None
            oldest = self._history[0].version if self._history else self._version + 1
            if since < self._version and since < oldest - 1:
                watch._end(status_document(410, "Expired", f"too old resource version: {since}"))  # noqa: SLF001
                return watch
            for change in self._history:
                if change.version > since:
                    self._send(watch, change)
        self._watches.append(watch)
        return watch

    def _bookmark(self, *, initial_events_end: bool = False) -> Manifest:
        metadata: Manifest = {"resourceVersion": self.resource_version}
        if initial_events_end:
            metadata["annotations"] = {"k8s.io/initial-events-end": "true"}
        return {
            "type": "BOOKMARK",
            "object": {"kind": "Pod", "apiVersion": "v1", "metadata": metadata},
        }

    @locked
    def send_bookmarks(self, watch: FakeWatch | None = None) -> None:
        """A ``BOOKMARK`` at the current resource version to ``watch`` (default: every open
        watch) if it allows them. The HTTP server sends them as the watch cache does: every
        ``bookmark_seconds`` (a minute by default) and 2 s before the watch's timeout
        (:func:`~k8s_workloads.testing.watch.next_bookmark_at`)."""
        for each in self._watches if watch is None else [watch]:
            if each.bookmarks and not each.closed:
                each._push(self._bookmark())  # noqa: SLF001

    @locked
    def read_pod(self, namespace: str, name: str) -> Manifest:
        """``read_namespaced_pod``: a copy of the pod, or a 404 :class:`ApiError`."""
        self._call("read_pod", namespace, name)
        snapshot = self._snapshots.get((namespace, name))
        if snapshot is None:
            raise not_found("pods", name)
        return _copy(snapshot)

    @locked
    def stop_watch(self, watch: FakeWatch) -> None:
        """The client closed ``watch``: no more events go to it."""
        watch.closed = True
        self._watches = [other for other in self._watches if other is not watch]

    @locked
    def expire_watches(self) -> None:
        """End every open watch with a 410 ``ERROR`` event (the watch cache moved on)."""
        for watch in self._watches:
            watch._end(status_document(410, "Expired", "too old resource version"))  # noqa: SLF001
        self._watches = []

    @locked
    def drop_watches(self) -> None:
        """End every open watch with no event, as a lost connection or a watch timeout does:
        the client resumes from the last version it saw."""
        for watch in self._watches:
            watch._end(None)  # noqa: SLF001
        self._watches = []

    @locked
    def compact(self) -> None:
        """Forget the kept history, as etcd compaction does: a watch from any version
        before now gets a 410, and so does every list ``continue`` token."""
        self._history.clear()
        self._lists.clear()

    def _changed(self, where: tuple[str, str], pod: Manifest, *, deleted: bool = False) -> None:
        # One copy per change: the snapshot that the history, every watch event and
        # the next change's "before" share; nothing ever changes a snapshot.
        before = self._snapshots.get(where)
        after = _copy(pod)
        if deleted:
            self._snapshots.pop(where, None)
        else:
            self._snapshots[where] = after
        change = _Change(self._version, before, after, deleted)
        self._history.append(change)
        self._watches = [watch for watch in self._watches if not watch.closed]
        for watch in self._watches:
            self._send(watch, change)

    @staticmethod
    def _send(watch: FakeWatch, change: _Change) -> None:
        was = watch.selects(change.before)
        now = watch.selects(change.after)
        if change.deleted:
            if was:
                watch._push({"type": "DELETED", "object": change.after})  # noqa: SLF001
        elif was and now:
            watch._push({"type": "MODIFIED", "object": change.after})  # noqa: SLF001
        elif now:
            watch._push({"type": "ADDED", "object": change.after})  # noqa: SLF001
        elif was and change.before is not None:
            # Leaving the selection: DELETED with the last content the watch selected and
            # the new version (no deletionTimestamp).
            last = _copy(change.before)
            last["metadata"]["resourceVersion"] = str(change.version)
            watch._push({"type": "DELETED", "object": last})  # noqa: SLF001

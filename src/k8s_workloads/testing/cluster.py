"""A fake Kubernetes cluster: pods, Secrets, watches, and faults on demand.

It keeps pods as manifests and answers the calls an executor makes the way the API
server does: every change bumps ``resourceVersion``; a watch streams ``ADDED``,
``MODIFIED`` and ``DELETED`` for its selectors (a pod that stops matching, say after a
label patch, is sent as ``DELETED`` without a ``deletionTimestamp``); a deletion is a
``MODIFIED`` with the timestamp, then ``DELETED``; a watch from a version older than the
kept history, or one expired with :meth:`FakeCluster.expire_watches`, ends with an
``ERROR`` event carrying a 410 Status. Any call can be made to fail with
:meth:`FakeCluster.fail_next`; failures are :class:`ApiError`, shaped like
``kubernetes.client.ApiException`` (``status``, ``reason``, ``body``, ``headers``), or a
``ConnectionResetError`` for a connection error.

The kubelet is the test's part: move pods along with :meth:`FakeCluster.set_status`, or
let :class:`~k8s_workloads.testing.Kubelet` run them.
"""

from __future__ import annotations

import datetime
import functools
import json
import threading
from collections import deque
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from k8s_workloads import _config as _checks
from k8s_workloads.testing import _paging
from k8s_workloads.testing.selectors import FieldSelector, LabelSelector

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

__all__ = ["FAILURES", "ApiError", "FakeCluster", "FakeWatch", "Fault"]

Manifest = dict[str, Any]

_EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)

CALLS = frozenset(
    {
        "create_pod",
        "create_secret",
        "delete_pod",
        "delete_secret",
        "patch_pod",
        "list_pods",
        "read_pod",
        "watch",
    }
)
"""The calls :meth:`FakeCluster.fail_next` can fail."""


class ApiError(Exception):
    """An API call failed: the shape of ``kubernetes.client.ApiException``."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str = "",
        *,
        body: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(f"({status}) Reason: {reason}: {message}".rstrip(": "))
        self.status = status
        self.reason = reason
        self.body = (
            body
            if body is not None
            else json.dumps(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "message": message,
                    "reason": reason,
                    "code": status,
                }
            )
        )
        self.headers = dict(headers or {})


FAILURES: tuple[type[BaseException], ...] = (ApiError, OSError)
"""What the kit's calls raise when they fail: API errors, connection resets, database
outages (``DatabaseUnavailable`` is a ``ConnectionError``)."""


@attrs.frozen
class Fault:
    """How a call fails: an HTTP status (None: the connection is reset)."""

    status: int | None
    reason: str = "Failure"
    message: str = ""
    body: str | None = None
    headers: Mapping[str, str] | None = None

    def error(self) -> Exception:
        if self.status is None:
            return ConnectionResetError(104, "Connection reset by peer")
        return ApiError(
            self.status, self.reason, self.message, body=self.body, headers=self.headers
        )


def _copy(value: Manifest) -> Manifest:
    # Plain JSON values only: several times faster than copy.deepcopy.
    copied: Manifest = json.loads(json.dumps(value))
    return copied


def status_document(code: int, reason: str, message: str) -> Manifest:
    """A ``Status`` document, as the API server answers an error."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


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


F = TypeVar("F", bound="Callable[..., Any]")


def _locked(method: F) -> F:
    # One lock per cluster: the HTTP server (k8s_workloads.testing.server) serves it from
    # several threads while the test changes it.
    @functools.wraps(method)
    def wrapper(self: FakeCluster, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
        with self._lock:
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class FakeCluster:
    """Pods and Secrets by namespace and name, a resource version, watches and faults.

    ``history`` changes are kept for watches that start from a resource version; one
    older than that gets a 410, as after etcd compaction. A list in pages reads one
    snapshot; the newest ``list_snapshots`` are kept, an older one's ``continue`` token
    gets a 410. Timestamps come from ``now`` (a settable attribute; the cluster never
    reads a clock).
    """

    def __init__(
        self,
        *,
        history: int = 10_000,
        now: datetime.datetime = _EPOCH,
        list_snapshots: int = 16,
    ) -> None:
        _checks.check(self, "history", _checks.positive, history)
        _checks.check(self, "now", _checks.kind(datetime.datetime), now)
        _checks.check(self, "list_snapshots", _checks.positive, list_snapshots)
        self.now = now
        self._lock = threading.RLock()
        self._pods: dict[tuple[str, str], Manifest] = {}
        self._snapshots: dict[tuple[str, str], Manifest] = {}
        self._secrets: dict[tuple[str, str], Manifest] = {}
        self._version = 0
        self._uid = 0
        self._history: deque[_Change] = deque(maxlen=history)
        self._lists = _paging.Snapshots(list_snapshots)
        self._watches: list[FakeWatch] = []
        self._faults: dict[str, deque[Fault]] = {}
        self.calls: list[tuple[str, str, str]] = []
        """Every call made: (call, namespace, name or selector)."""

    # --- faults -----------------------------------------------------------------------

    @_locked
    def fail_next(
        self,
        call: str,
        status: int | None = 500,
        *,
        reason: str = "Failure",
        message: str = "",
        body: str | None = None,
        headers: Mapping[str, str] | None = None,
        times: int = 1,
    ) -> None:
        """Make the next ``times`` calls of ``call`` fail (see :data:`CALLS`)."""
        if call not in CALLS:
            raise ValueError(f"call must be one of {sorted(CALLS)}, got {call!r}")
        fault = Fault(status, reason, message, body, headers)
        self._faults.setdefault(call, deque()).extend([fault] * times)

    def _call(self, call: str, namespace: str, what: str) -> None:
        self.calls.append((call, namespace, what))
        faults = self._faults.get(call)
        if faults:
            raise faults.popleft().error()

    # --- state ------------------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        return str(self._version)

    def _bump(self) -> str:
        self._version += 1
        return str(self._version)

    def _timestamp(self) -> str:
        return self.now.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    @_locked
    def pod(self, namespace: str, name: str, *, copy: bool = True) -> Manifest | None:
        """A copy of the pod, or None (``copy=False``: the shared snapshot, read only)."""
        snapshot = self._snapshots.get((namespace, name))
        if snapshot is None or not copy:
            return snapshot
        return _copy(snapshot)

    @_locked
    def pods(self, *, copy: bool = True) -> list[Manifest]:
        """Every pod, by namespace and name (``copy=False``: shared snapshots, read only)."""
        found = [self._snapshots[where] for where in sorted(self._snapshots)]
        return [_copy(pod) for pod in found] if copy else found

    @_locked
    def pod_names(self) -> list[str]:
        return [name for _, name in sorted(self._pods)]

    @_locked
    def secret(self, namespace: str, name: str) -> Manifest | None:
        secret = self._secrets.get((namespace, name))
        return None if secret is None else _copy(secret)

    @_locked
    def secret_names(self) -> list[str]:
        return [name for _, name in sorted(self._secrets)]

    # --- the API ----------------------------------------------------------------------

    @_locked
    def create_pod(self, namespace: str, body: Mapping[str, Any]) -> Manifest:
        """``create_namespaced_pod``: the stored pod (Pending), or an :class:`ApiError`."""
        pod = _copy(dict(body))
        metadata = pod.setdefault("metadata", {})
        name = metadata.get("name")
        self._call("create_pod", namespace, str(name))
        if not isinstance(name, str) or not name:
            raise ApiError(422, "Invalid", "Pod is invalid: metadata.name: Required value")
        if metadata.setdefault("namespace", namespace) != namespace:
            raise ApiError(400, "BadRequest", "the namespace of the object does not match")
        if (namespace, name) in self._pods:
            raise ApiError(409, "AlreadyExists", f'pods "{name}" already exists')
        self._uid += 1
        metadata["uid"] = f"00000000-0000-4000-8000-{self._uid:012d}"
        metadata["creationTimestamp"] = self._timestamp()
        metadata["resourceVersion"] = self._bump()
        pod["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
        self._pods[namespace, name] = pod
        self._changed((namespace, name), pod)
        return _copy(pod)

    @_locked
    def create_secret(self, namespace: str, body: Mapping[str, Any]) -> Manifest:
        secret = _copy(dict(body))
        metadata = secret.setdefault("metadata", {})
        name = metadata.get("name")
        self._call("create_secret", namespace, str(name))
        if not isinstance(name, str) or not name:
            raise ApiError(422, "Invalid", "Secret is invalid: metadata.name: Required value")
        if (namespace, name) in self._secrets:
            raise ApiError(409, "AlreadyExists", f'secrets "{name}" already exists')
        metadata["namespace"] = namespace
        metadata["resourceVersion"] = self._bump()
        self._secrets[namespace, name] = secret
        return _copy(secret)

    @_locked
    def delete_secret(self, namespace: str, name: str) -> None:
        self._call("delete_secret", namespace, name)
        if self._secrets.pop((namespace, name), None) is None:
            raise ApiError(404, "NotFound", f'secrets "{name}" not found')

    @_locked
    def patch_pod_labels(
        self,
        namespace: str,
        name: str,
        labels: Mapping[str, str | None],
        resource_version: str | None = None,
    ) -> Manifest:
        """``patch_namespaced_pod`` with ``{"metadata": {"labels": labels}}`` (None removes);
        with ``resource_version``, only a pod still at that version (else a 409)."""
        self._call("patch_pod", namespace, name)
        pod = self._pods.get((namespace, name))
        if pod is None:
            raise ApiError(404, "NotFound", f'pods "{name}" not found')
        if resource_version is not None and resource_version != pod["metadata"].get(
            "resourceVersion"
        ):
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on pods "{name}": the object has been '
                "modified; please apply your changes to the latest version and try again",
            )
        current = pod["metadata"].setdefault("labels", {})
        for key, value in labels.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value
        pod["metadata"]["resourceVersion"] = self._bump()
        self._changed((namespace, name), pod)
        return _copy(pod)

    @_locked
    def delete_pod(self, namespace: str, name: str) -> None:
        """``delete_namespaced_pod``: MODIFIED with a deletionTimestamp, then DELETED."""
        self._call("delete_pod", namespace, name)
        self._delete(namespace, name)

    @_locked
    def remove_pod(self, namespace: str, name: str) -> None:
        """Someone else deletes the pod (``kubectl delete``, a node drain): as
        :meth:`delete_pod`, but no executor call, so no fault applies."""
        self._delete(namespace, name)

    def _delete(self, namespace: str, name: str) -> None:
        pod = self._pods.get((namespace, name))
        if pod is None:
            raise ApiError(404, "NotFound", f'pods "{name}" not found')
        if self._begin_termination(pod):  # kit-kubelet minimal block (kit-api owns this)
            return
        pod["metadata"].setdefault("deletionTimestamp", self._timestamp())
        pod["metadata"].setdefault("deletionGracePeriodSeconds", 30)
        pod["metadata"]["resourceVersion"] = self._bump()
        self._changed((namespace, name), pod)
        del self._pods[namespace, name]
        pod["metadata"]["resourceVersion"] = self._bump()
        self._changed((namespace, name), pod, deleted=True)

    @_locked
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

    @_locked
    def expire_list_continuations(self) -> None:
        """Forget every list snapshot: each ``continue`` token given so far gets a 410
        ``Expired``, as once etcd compacted its revision."""
        self._lists.clear()

    @_locked
    def watch(
        self,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
    ) -> FakeWatch:
        """A watch of the selected pods from ``resource_version``.

        None or ``"0"``: every selected pod now, as ``ADDED``, then its changes. A version
        within the kept history: every change after it. An older one: a 410 at once.
        """
        labels = LabelSelector.parse(label_selector)
        fields = FieldSelector.parse(field_selector)
        self._call("watch", namespace or "", label_selector or "")
        watch = FakeWatch(namespace, labels, fields)
        if resource_version in {None, "", "0"}:
            for where in sorted(self._snapshots):
                pod = self._snapshots[where]
                if watch.selects(pod):
                    watch._push({"type": "ADDED", "object": pod})  # noqa: SLF001
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

    @_locked
    def read_pod(self, namespace: str, name: str) -> Manifest:
        """``read_namespaced_pod``: a copy of the pod, or a 404 :class:`ApiError`."""
        self._call("read_pod", namespace, name)
        snapshot = self._snapshots.get((namespace, name))
        if snapshot is None:
            raise ApiError(404, "NotFound", f'pods "{name}" not found')
        return _copy(snapshot)

    @_locked
    def stop_watch(self, watch: FakeWatch) -> None:
        """The client closed ``watch``: no more events go to it."""
        watch.closed = True
        self._watches = [other for other in self._watches if other is not watch]

    @_locked
    def expire_watches(self) -> None:
        """End every open watch with a 410 ``ERROR`` event (the watch cache moved on)."""
        for watch in self._watches:
            watch._end(status_document(410, "Expired", "too old resource version"))  # noqa: SLF001
        self._watches = []

    @_locked
    def drop_watches(self) -> None:
        """End every open watch with no event, as a lost connection or a watch timeout does:
        the client resumes from the last version it saw."""
        for watch in self._watches:
            watch._end(None)  # noqa: SLF001
        self._watches = []

    @_locked
    def compact(self) -> None:
        """Forget the kept history, as etcd compaction does: a watch from any version
        before now gets a 410, and so does every list ``continue`` token."""
        self._history.clear()
        self._lists.clear()

    # --- the kubelet's part -----------------------------------------------------------

    @_locked
    def set_status(
        self, namespace: str, name: str, status: Mapping[str, Any], *, uid: str | None = None
    ) -> None:
        """Replace the pod's ``status`` (a kubelet update); with ``uid``, only while the pod
        of that name is still that one (a KeyError otherwise, as when there is none)."""
        pod = self._pods.get((namespace, name))
        if pod is None or (uid is not None and pod["metadata"].get("uid") != uid):
            raise KeyError(f"no pod {namespace}/{name}" + (f" with uid {uid}" if uid else ""))
        pod["status"] = _copy(dict(status))
        pod["metadata"]["resourceVersion"] = self._bump()
        self._changed((namespace, name), pod)

    # --- BEGIN kit-kubelet minimal block: kit-api's interface, until kit-api lands -------
    # (bind_pod, finish_deletion, append_log, pod_log; a bound, running pod is Terminating
    # on deletion until its kubelet confirms). Replace with kit-api's versions on merge.

    @_locked
    def bind_pod(self, namespace: str, name: str, node_name: str) -> None:
        """The scheduler's binding: set ``spec.nodeName``."""
        pod = self._pods.get((namespace, name))
        if pod is None:
            raise ApiError(404, "NotFound", f'pods "{name}" not found')
        pod.setdefault("spec", {})["nodeName"] = node_name
        pod["metadata"]["resourceVersion"] = self._bump()
        self._changed((namespace, name), pod)

    def _begin_termination(self, pod: Manifest) -> bool:
        bound = bool((pod.get("spec") or {}).get("nodeName"))
        phase = (pod.get("status") or {}).get("phase")
        if not bound or phase in {"Succeeded", "Failed"}:
            return False
        metadata = pod["metadata"]
        if not metadata.get("deletionTimestamp"):
            grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
            metadata["deletionTimestamp"] = self._timestamp()
            metadata["deletionGracePeriodSeconds"] = grace
            metadata["resourceVersion"] = self._bump()
            self._changed((metadata["namespace"], metadata["name"]), pod)
        return True

    @_locked
    def finish_deletion(self, namespace: str, name: str, *, uid: str) -> None:
        """The kubelet confirms a Terminating pod's end: it is DELETED."""
        pod = self._pods.get((namespace, name))
        if pod is None or pod["metadata"].get("uid") != uid:
            raise ApiError(404, "NotFound", f'pods "{name}" not found')
        del self._pods[namespace, name]
        pod["metadata"]["resourceVersion"] = self._bump()
        self._changed((namespace, name), pod, deleted=True)

    @_locked
    def append_log(self, namespace: str, name: str, container: str, text: str) -> None:
        """Add ``text`` to the container's log (``pods/{name}/log``)."""
        logs: dict[tuple[str, str, str], str] = self.__dict__.setdefault("_logs", {})
        logs[namespace, name, container] = logs.get((namespace, name, container), "") + text

    @_locked
    def pod_log(self, namespace: str, name: str, container: str) -> str:
        """The container's log so far."""
        logs: dict[tuple[str, str, str], str] = self.__dict__.setdefault("_logs", {})
        return logs.get((namespace, name, container), "")

    # --- END kit-kubelet minimal block ------------------------------------------------

    # --- watch events -----------------------------------------------------------------

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

"""The kit cluster's state: what every part of :class:`~k8s_workloads.testing.FakeCluster`
shares.

The stores (namespaces, pods and their snapshots, Secrets, logs), the resource version
and uids, the clock, the faults :meth:`~k8s_workloads.testing.FakeCluster.fail_next`
arms, and the one lock every public method takes (:func:`locked`). The cluster's other
parts build on it: pods (:mod:`k8s_workloads.testing.cluster`), Secrets
(:mod:`k8s_workloads.testing._cluster_secrets`), lists and watches
(:mod:`k8s_workloads.testing._cluster_watch`).
"""

from __future__ import annotations

import datetime
import functools
import threading
from collections import deque
from typing import TYPE_CHECKING, Any, TypeVar

from k8s_workloads import config_checks as _checks
from k8s_workloads.testing import _admission, _paging
from k8s_workloads.testing.errors import ApiError, Fault, invalid
from k8s_workloads.testing.watch import FakeWatch, _Change, _copy

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from k8s_workloads.pods.manifest import Manifest

__all__ = [
    "CALLS",
    "STALE",
    "ClusterStore",
    "conflict",
    "locked",
    "not_found",
    "not_taken",
    "parse_time",
    "rfc3339",
    "same_namespace",
]

CALLS = frozenset(
    {
        "create_pod",
        "create_secret",
        "delete_pod",
        "delete_secret",
        "patch_pod",
        "patch_pod_status",
        "read_pod_log",
        "list_pods",
        "read_pod",
        "watch",
    }
)
"""The calls :meth:`FakeCluster.fail_next` can fail."""

F = TypeVar("F", bound="Callable[..., Any]")


def locked(method: F) -> F:
    """One lock per cluster: the HTTP server (:mod:`k8s_workloads.testing.server`)
    serves it from several threads while the test changes it."""

    @functools.wraps(method)
    def wrapper(self: ClusterStore, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
        with self._lock:
            self._depth += 1
            try:
                answer = method(self, *args, **kwargs)
            finally:
                self._depth -= 1
                lost, outermost = self._lost, not self._depth
                if outermost:
                    self._lost = None  # a call that failed anyway drops it too
            if lost is not None and outermost:
                # An ``applied`` fault: the change is made, then its answer is lost.
                raise lost.error()
            return answer

    return wrapper  # type: ignore[return-value]


def parse_time(stamp: str) -> datetime.datetime:
    """A timestamp as the API server writes it (RFC 3339, seconds, UTC)."""
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc
    )


def _real_time() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def rfc3339(moment: datetime.datetime) -> str:
    """``moment`` as the API server writes a timestamp."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def not_found(kind: str, name: str) -> ApiError:
    """The 404 for a missing object of ``kind`` (``pods``, ``secrets``, ...)."""
    return ApiError(
        404, "NotFound", f'{kind} "{name}" not found', details={"name": name, "kind": kind}
    )


def conflict(name: str, why: str) -> ApiError:
    """The 409 for a pod a write cannot be applied to, and why."""
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on pods "{name}": {why}',
        details={"name": name, "kind": "pods"},
    )


STALE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def same_namespace(metadata: Manifest, namespace: str) -> None:
    """A create's body names no other namespace than its path (400 otherwise)."""
    if metadata.setdefault("namespace", namespace) != namespace:
        raise ApiError(
            400,
            "BadRequest",
            "the namespace of the provided object does not match the namespace sent on the request",
        )


def not_taken(
    store: Mapping[tuple[str, str], object], kind: str, namespace: str, name: object
) -> None:
    """A create's name is free in its namespace (409 ``AlreadyExists`` otherwise; a pod
    still Terminating holds its name)."""
    if (namespace, name) in store:
        raise ApiError(
            409,
            "AlreadyExists",
            f'{kind} "{name}" already exists',
            details={"name": name, "kind": kind},
        )


class ClusterStore:
    """The state a :class:`~k8s_workloads.testing.FakeCluster` keeps, its clock and its
    faults (the arguments are the cluster's)."""

    def __init__(
        self,
        *,
        history: int = 10_000,
        now: datetime.datetime | None = None,
        clock: Callable[[], datetime.datetime] | None = None,
        list_snapshots: int = 16,
        namespaces: Iterable[str] = (),
    ) -> None:
        _checks.check(self, "history", _checks.positive, history)
        if now is not None:
            _checks.check(self, "now", _checks.kind(datetime.datetime), now)
        _checks.check(self, "list_snapshots", _checks.positive, list_snapshots)
        self._clock: Callable[[], datetime.datetime] = clock or _real_time
        if now is not None:
            self.now = now
        self._lock = threading.RLock()
        self._namespaces: dict[str, Manifest] = {}
        self._pods: dict[tuple[str, str], Manifest] = {}
        self._snapshots: dict[tuple[str, str], Manifest] = {}
        self._secrets: dict[tuple[str, str], Manifest] = {}
        self._logs: dict[tuple[str, str, str], list[str]] = {}
        self._version = 0
        self._uid = 0
        self._history: deque[_Change] = deque(maxlen=history)
        self._lists = _paging.Snapshots(list_snapshots)
        self._watches: list[FakeWatch] = []
        self._faults: dict[str, deque[Fault]] = {}
        self._lost: Fault | None = None
        self._depth = 0
        self.calls: list[tuple[str, str, str]] = []
        """Every call made: (call, namespace, name or selector)."""
        for namespace in ("default", *namespaces):
            self.create_namespace(namespace)

    # --- time -------------------------------------------------------------------------

    @property
    def now(self) -> datetime.datetime:
        """The cluster's current time (what its clock says)."""
        return self._clock()

    @now.setter
    def now(self, moment: datetime.datetime) -> None:
        _checks.check(self, "now", _checks.kind(datetime.datetime), moment)
        self._clock = lambda: moment

    def _timestamp(self, *, later: float = 0) -> str:
        return rfc3339(self.now + datetime.timedelta(seconds=later))

    # --- faults -----------------------------------------------------------------------

    @locked
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
        refused: bool = False,
        applied: bool = False,
    ) -> None:
        """Make the next ``times`` calls of ``call`` fail (see :data:`CALLS`).

        ``status`` None is a connection error: reset (``ConnectionResetError``: it may or
        may not have reached the server; here it did not), or with ``refused`` never made
        (``ConnectionRefusedError``). ``applied``: the call takes effect and then fails,
        as a request whose answer was lost (a create, a delete or a patch).
        """
        if call not in CALLS:
            raise ValueError(f"call must be one of {sorted(CALLS)}, got {call!r}")
        if refused and (status is not None or applied):
            raise ValueError("refused: a connection error (status None) that applies nothing")
        fault = Fault(status, reason, message, body, headers, refused=refused, applied=applied)
        self._faults.setdefault(call, deque()).extend([fault] * times)

    def _create_call(self, call: str, namespace: str, body: Mapping[str, Any]) -> Any:  # noqa: ANN401
        """Record a create call (a fault armed for it raised) and return the name its
        body gives, if any."""
        metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        name = metadata.get("name") if isinstance(metadata, dict) else None
        self._call(call, namespace, str(name))
        return name

    def _stamp_new(
        self,
        store: Mapping[tuple[str, str], object],
        kind: str,
        namespace: str,
        name: object,
        metadata: Manifest,
    ) -> None:
        """A new object's namespace exists (404), its name is free (409); its uid and
        creation time are set."""
        self._namespace_exists(namespace)
        not_taken(store, kind, namespace, name)
        metadata["uid"] = self._next_uid()
        metadata["creationTimestamp"] = self._timestamp()

    def _call(self, call: str, namespace: str, what: str) -> None:
        self.calls.append((call, namespace, what))
        faults = self._faults.get(call)
        if faults:
            fault = faults.popleft()
            if fault.applied:
                self._lost = fault  # raised once the change is made (see locked)
                return
            raise fault.error()

    # --- state ------------------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        """The newest resource version (that of the last change)."""
        return str(self._version)

    def _bump(self) -> str:
        self._version += 1
        return str(self._version)

    def _next_uid(self) -> str:
        self._uid += 1
        return f"00000000-0000-4000-8000-{self._uid:012d}"

    @locked
    def pod(self, namespace: str, name: str, *, copy: bool = True) -> Manifest | None:
        """A copy of the pod, or None (``copy=False``: the shared snapshot, read only)."""
        snapshot = self._snapshots.get((namespace, name))
        if snapshot is None or not copy:
            return snapshot
        return _copy(snapshot)

    @locked
    def pods(self, *, copy: bool = True) -> list[Manifest]:
        """Every pod, by namespace and name (``copy=False``: shared snapshots, read only)."""
        found = [self._snapshots[where] for where in sorted(self._snapshots)]
        return [_copy(pod) for pod in found] if copy else found

    @locked
    def pod_names(self) -> list[str]:
        """The names of every pod (Terminating ones included), by namespace and name."""
        return [name for _, name in sorted(self._pods)]

    @locked
    def secret(self, namespace: str, name: str) -> Manifest | None:
        """A copy of the stored Secret (``data`` in base64), or None."""
        secret = self._secrets.get((namespace, name))
        return None if secret is None else _copy(secret)

    @locked
    def secret_names(self) -> list[str]:
        """The names of every Secret, by namespace and name."""
        return [name for _, name in sorted(self._secrets)]

    # --- namespaces -------------------------------------------------------------------

    @locked
    def create_namespace(self, name: str) -> Manifest:
        """Make namespace ``name`` exist (``Active``); an existing one is kept as it is."""
        causes = _admission.namespace_causes(name)
        if causes:
            raise invalid("Namespace", name, causes)
        if name not in self._namespaces:
            self._namespaces[name] = {
                "kind": "Namespace",
                "apiVersion": "v1",
                "metadata": {
                    "name": name,
                    "uid": self._next_uid(),
                    "resourceVersion": self._bump(),
                    "creationTimestamp": self._timestamp(),
                    "labels": {"kubernetes.io/metadata.name": name},
                },
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            }
        return _copy(self._namespaces[name])

    @locked
    def namespaces(self) -> list[Manifest]:
        """Every namespace, by name."""
        return [_copy(self._namespaces[name]) for name in sorted(self._namespaces)]

    @locked
    def read_namespace(self, name: str) -> Manifest:
        """``read_namespace``: the namespace, or a 404 :class:`ApiError`."""
        if name not in self._namespaces:
            raise not_found("namespaces", name)
        return _copy(self._namespaces[name])

    def _namespace_exists(self, namespace: str) -> None:
        if namespace not in self._namespaces:
            raise not_found("namespaces", namespace)

    def _stored(self, namespace: str, name: str) -> Manifest:
        pod = self._pods.get((namespace, name))
        if pod is None:
            raise not_found("pods", name)
        return pod

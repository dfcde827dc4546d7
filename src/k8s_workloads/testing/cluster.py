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

from k8s_workloads import _config as _checks
from k8s_workloads.testing import _admission, _paging
from k8s_workloads.testing._errors import FAILURES, ApiError, Fault, invalid, status_document
from k8s_workloads.testing._patch import PatchError, apply_patch, patch_type
from k8s_workloads.testing._watch import FakeWatch, _Change, _copy
from k8s_workloads.testing.selectors import FieldSelector, LabelSelector

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

__all__ = ["FAILURES", "ApiError", "FakeCluster", "FakeWatch", "Fault", "status_document"]

Manifest = dict[str, Any]

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


def _locked(method: F) -> F:
    # One lock per cluster: the HTTP server (k8s_workloads.testing.server) serves it from
    # several threads while the test changes it.
    @functools.wraps(method)
    def wrapper(self: FakeCluster, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
        with self._lock:
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


_IN_STREAM_STATUSES = frozenset({410, 500})
# Delete options the registry accepts (DeleteOptions.propagationPolicy).
_PROPAGATION_POLICIES = frozenset({"Orphan", "Background", "Foreground"})


def _check_delete_options(
    name: str, grace_period_seconds: int | None, propagation_policy: str | None
) -> None:
    causes = []
    if grace_period_seconds is not None and (
        isinstance(grace_period_seconds, bool) or not isinstance(grace_period_seconds, int)
    ):
        causes.append(
            _admission.Cause(
                "gracePeriodSeconds", "FieldValueInvalid", "Invalid value: must be an integer"
            )
        )
    if propagation_policy is not None and propagation_policy not in _PROPAGATION_POLICIES:
        causes.append(
            _admission.Cause(
                "propagationPolicy",
                "FieldValueNotSupported",
                f'Unsupported value: "{propagation_policy}": supported values: "Foreground", '
                '"Background", "Orphan", "nil"',
            )
        )
    if causes:
        raise invalid("DeleteOptions", name, causes)


_TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
_DEFAULT_GRACE_SECONDS = 30  # the defaulted spec.terminationGracePeriodSeconds


def _grace_period(pod: Manifest, requested: int | None) -> int:
    # The pod strategy's CheckGracefulDelete: the request's grace, else the pod's
    # terminationGracePeriodSeconds; 0 for a pod not bound to a node or already terminal.
    if not pod["spec"].get("nodeName") or pod["status"].get("phase") in _TERMINAL_PHASES:
        return 0
    if requested is not None:
        return requested
    return int(pod["spec"].get("terminationGracePeriodSeconds", _DEFAULT_GRACE_SECONDS))


def _parse_time(stamp: str) -> datetime.datetime:
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc
    )


def _real_time() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _rfc3339(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _not_found(kind: str, name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'{kind} "{name}" not found', details={"name": name, "kind": kind}
    )


def _conflict(name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on pods "{name}": {why}',
        details={"name": name, "kind": "pods"},
    )


_STALE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


class FakeCluster:
    """Pods, Secrets and namespaces, a resource version, watches and faults.

    Thread-safe: one lock guards every method (the HTTP server serves it from several
    threads while the test changes it).

    ``history`` changes are kept for watches that start from a resource version; one
    older than that gets a 410, as after etcd compaction. A list in pages reads one
    snapshot; the newest ``list_snapshots`` are kept, an older one's ``continue`` token
    gets a 410.

    Namespaces: ``default`` and each of ``namespaces`` exist from the start, and
    :meth:`create_namespace` adds one; a pod or Secret in any other namespace is a 404,
    as on a real cluster.

    Time: timestamps come from ``clock`` (a callable returning an aware datetime; real
    time by default). ``now=`` (or setting the :attr:`now` attribute) fixes the clock at
    that moment, for tests that move time themselves.
    """

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
        return _rfc3339(self.now + datetime.timedelta(seconds=later))

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
        """The newest resource version (that of the last change)."""
        return str(self._version)

    def _bump(self) -> str:
        self._version += 1
        return str(self._version)

    def _next_uid(self) -> str:
        self._uid += 1
        return f"00000000-0000-4000-8000-{self._uid:012d}"

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
        """The names of every pod (Terminating ones included), by namespace and name."""
        return [name for _, name in sorted(self._pods)]

    @_locked
    def secret(self, namespace: str, name: str) -> Manifest | None:
        """A copy of the stored Secret (``data`` in base64), or None."""
        secret = self._secrets.get((namespace, name))
        return None if secret is None else _copy(secret)

    @_locked
    def secret_names(self) -> list[str]:
        """The names of every Secret, by namespace and name."""
        return [name for _, name in sorted(self._secrets)]

    # --- namespaces -------------------------------------------------------------------

    @_locked
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

    @_locked
    def namespaces(self) -> list[Manifest]:
        """Every namespace, by name."""
        return [_copy(self._namespaces[name]) for name in sorted(self._namespaces)]

    @_locked
    def read_namespace(self, name: str) -> Manifest:
        """``read_namespace``: the namespace, or a 404 :class:`ApiError`."""
        if name not in self._namespaces:
            raise _not_found("namespaces", name)
        return _copy(self._namespaces[name])

    def _namespace_exists(self, namespace: str) -> None:
        if namespace not in self._namespaces:
            raise _not_found("namespaces", namespace)

    # --- pods -------------------------------------------------------------------------

    @_locked
    def create_pod(
        self, namespace: str, body: Mapping[str, Any], *, dry_run: bool = False
    ) -> Manifest:
        """``create_namespaced_pod``: the stored pod (Pending), or an :class:`ApiError`.

        Validated as the API server does (:mod:`k8s_workloads.testing._admission`): 400 for
        a body that is not a Pod, 422 ``Invalid`` with ``details.causes`` for an invalid
        one, 404 for a namespace that does not exist, 409 for a name in use (also by a pod
        still Terminating). Unknown fields are dropped. ``dry_run``: checked and answered,
        not stored.
        """
        return self.create_pod_answer(namespace, body, dry_run=dry_run)[0]

    @_locked
    def create_pod_answer(
        self,
        namespace: str,
        body: Mapping[str, Any],
        *,
        dry_run: bool = False,
        field_validation: str | None = None,
    ) -> tuple[Manifest, list[str]]:
        """:meth:`create_pod` with ``fieldValidation`` (``Strict``: an unknown field is a
        400; ``Warn``: listed in the warnings returned beside the pod)."""
        metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        name = metadata.get("name") if isinstance(metadata, dict) else None
        self._call("create_pod", namespace, str(name))
        try:
            pod, warnings = _admission.decode_pod(
                _copy(dict(body)), field_validation=field_validation
            )
        except _admission.Rejected as error:
            raise ApiError(400, "BadRequest", str(error)) from None
        metadata = pod.setdefault("metadata", {})
        if not metadata.get("name") and metadata.get("generateName"):
            metadata["name"] = f"{metadata['generateName']}{self._uid + 1:05d}"[-253:]
        name = metadata.get("name")
        if metadata.setdefault("namespace", namespace) != namespace:
            raise ApiError(
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace sent on "
                "the request",
            )
        causes = _admission.pod_causes(pod)
        if causes:
            raise invalid("Pod", name, causes)
        self._namespace_exists(namespace)
        if (namespace, name) in self._pods:
            raise ApiError(
                409,
                "AlreadyExists",
                f'pods "{name}" already exists',
                details={"name": name, "kind": "pods"},
            )
        metadata["uid"] = self._next_uid()
        metadata["creationTimestamp"] = self._timestamp()
        for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
            metadata.pop(key, None)
        pod["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
        if dry_run:
            metadata["resourceVersion"] = self.resource_version
            return pod, warnings
        metadata["resourceVersion"] = self._bump()
        self._pods[namespace, name] = pod
        self._changed((namespace, name), pod)
        return _copy(pod), warnings

    def _stored(self, namespace: str, name: str) -> Manifest:
        pod = self._pods.get((namespace, name))
        if pod is None:
            raise _not_found("pods", name)
        return pod

    @_locked
    def patch_pod(
        self,
        namespace: str,
        name: str,
        patch: object,
        *,
        patch_type: str = "application/strategic-merge-patch+json",
        dry_run: bool = False,
        field_validation: str | None = None,
    ) -> Manifest:
        """``patch_namespaced_pod``: ``patch`` applied by content type, the pod answered.

        ``patch_type``: ``application/merge-patch+json`` (RFC 7386),
        ``application/strategic-merge-patch+json`` (what the kubernetes clients send for
        a dict; lists merged by the pod's patch keys), ``application/json-patch+json``
        (RFC 6902, what they send for a list; a failed ``test`` is a 422), or the short
        names ``merge``, ``strategic``, ``json``; another type is a 415. The result is
        validated as an update (an immutable field changed: 422); a ``resourceVersion``
        in the patch other than the pod's is a 409; ``status`` is not changed here (see
        :meth:`patch_pod_status`). A patch that changes nothing bumps nothing.
        ``field_validation="Strict"``: an unknown field in the result is a 400 (otherwise
        it is dropped).
        """
        self._call("patch_pod", namespace, name)
        return self._patch(
            namespace,
            name,
            patch,
            patch_type,
            dry_run=dry_run,
            status=False,
            fields=field_validation,
        )

    @_locked
    def patch_pod_status(
        self,
        namespace: str,
        name: str,
        patch: object,
        *,
        patch_type: str = "application/strategic-merge-patch+json",
        dry_run: bool = False,
        field_validation: str | None = None,
    ) -> Manifest:
        """``patch_namespaced_pod_status``: as :meth:`patch_pod`, on the ``pods/status``
        subresource: only ``status`` changes (what a kubelet writes)."""
        self._call("patch_pod_status", namespace, name)
        return self._patch(
            namespace,
            name,
            patch,
            patch_type,
            dry_run=dry_run,
            status=True,
            fields=field_validation,
        )

    def _patch(
        self,
        namespace: str,
        name: str,
        patch: object,
        kind: str,
        *,
        dry_run: bool,
        status: bool,
        fields: str | None,
    ) -> Manifest:
        try:
            kind = patch_type(kind)
        except PatchError as error:
            raise ApiError(415, "UnsupportedMediaType", str(error)) from None
        old = self._stored(namespace, name)
        try:
            patched = apply_patch(old, patch, kind)
        except PatchError as error:
            reason = "BadRequest" if error.code == 400 else "Invalid"
            raise ApiError(error.code, reason, str(error)) from None
        version = (patched.get("metadata") or {}).get("resourceVersion")
        if version not in {None, old["metadata"]["resourceVersion"]}:
            raise _conflict(name, _STALE)
        try:
            new, _ = _admission.decode_pod(patched, field_validation=fields)
        except _admission.Rejected as error:
            if "strict decoding error" in str(error) or "fieldValidation" in str(error):
                raise ApiError(400, "BadRequest", str(error)) from None
            cause = _admission.Cause("patch", "FieldValueInvalid", f"Invalid value: {error}")
            raise invalid("Pod", name, [cause]) from None
        if status:  # the status strategy: everything but status is the stored pod's
            new = {**_copy(old), "status": new.get("status") or {}}
        else:  # the pod strategy: status is the stored pod's
            new["status"] = _copy(old.get("status") or {})
            causes = _admission.pod_update_causes(old, new)
            if causes:
                raise invalid("Pod", name, causes)
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if new == old or dry_run:
            return _copy(new)
        new["metadata"]["resourceVersion"] = self._bump()
        self._pods[namespace, name] = new
        self._changed((namespace, name), new)
        return _copy(new)

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
        metadata: Manifest = {"labels": dict(labels)}
        if resource_version is not None:
            metadata["resourceVersion"] = resource_version
        return self.patch_pod(
            namespace, name, {"metadata": metadata}, patch_type="application/merge-patch+json"
        )

    @_locked
    def bind_pod(self, namespace: str, name: str, node_name: str) -> Manifest:
        """The scheduler's ``pods/binding``: ``spec.nodeName`` set and ``PodScheduled``
        True (MODIFIED); 409 if the pod is already bound, 404 if there is none."""
        pod = self._stored(namespace, name)
        if pod["spec"].get("nodeName"):
            raise _conflict(
                name, f"pod {name} is already assigned to node {pod['spec']['nodeName']!r}"
            )
        if pod["metadata"].get("deletionTimestamp"):
            raise _conflict(name, "pod is being deleted, cannot be assigned to a host")
        pod = _copy(pod)
        pod["spec"]["nodeName"] = node_name
        conditions = [
            condition
            for condition in pod["status"].get("conditions") or []
            if condition.get("type") != "PodScheduled"
        ]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": self._timestamp(),
            }
        )
        pod["status"]["conditions"] = conditions
        pod["metadata"]["resourceVersion"] = self._bump()
        self._pods[namespace, name] = pod
        self._changed((namespace, name), pod)
        return _copy(pod)

    @_locked
    def delete_pod(
        self,
        namespace: str,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, Any] | None = None,
        dry_run: bool = False,
        propagation_policy: str | None = None,
    ) -> Manifest:
        """``delete_namespaced_pod``, as the pod registry deletes: the pod answered.

        A pod not bound to a node (no ``spec.nodeName``), or terminal (``Succeeded``,
        ``Failed``), or deleted with ``grace_period_seconds=0`` goes at once: the registry
        writes ``deletionTimestamp`` (now) with ``deletionGracePeriodSeconds`` 0
        (``MODIFIED``) and deletes it (``DELETED``), as ``Store.Delete`` does. A bound,
        running pod is Terminating: ``deletionTimestamp`` (now plus the grace period) and
        ``deletionGracePeriodSeconds`` (``grace_period_seconds``, else the pod's
        ``terminationGracePeriodSeconds``, defaulted to 30) are set, one ``MODIFIED``, and
        it stays readable until the kubelet confirms with :meth:`finish_deletion`.
        Deleting a Terminating pod again only shortens its grace. ``preconditions``
        (``uid``, ``resourceVersion``) that do not match: 409. ``propagation_policy`` is
        accepted (a pod owns nothing). ``dry_run``: answered, nothing changes.
        """
        self._call("delete_pod", namespace, name)
        return self._delete(
            namespace,
            name,
            grace_period_seconds=grace_period_seconds,
            preconditions=preconditions,
            dry_run=dry_run,
            propagation_policy=propagation_policy,
        )

    @_locked
    def remove_pod(
        self,
        namespace: str,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, Any] | None = None,
    ) -> Manifest:
        """Someone else deletes the pod (``kubectl delete``, a node drain): as
        :meth:`delete_pod`, but no executor call, so no fault applies."""
        return self._delete(
            namespace, name, grace_period_seconds=grace_period_seconds, preconditions=preconditions
        )

    @_locked
    def finish_deletion(self, namespace: str, name: str, *, uid: str) -> Manifest:
        """The kubelet confirms a Terminating pod is gone, as its status manager does: a
        delete with grace 0 and the ``uid`` precondition (``MODIFIED`` with grace 0, then
        ``DELETED``); the name is free again.

        A KeyError if there is no pod of that name with that ``uid``.
        """
        pod = self._pods.get((namespace, name))
        if pod is None or pod["metadata"].get("uid") != uid:
            raise KeyError(f"no pod {namespace}/{name} with uid {uid}")
        return self._delete(namespace, name, grace_period_seconds=0, preconditions={"uid": uid})

    def _delete(
        self,
        namespace: str,
        name: str,
        *,
        grace_period_seconds: int | None,
        preconditions: Mapping[str, Any] | None,
        dry_run: bool = False,
        propagation_policy: str | None = None,
    ) -> Manifest:
        pod = self._stored(namespace, name)
        _check_delete_options(name, grace_period_seconds, propagation_policy)
        metadata = pod["metadata"]
        for key, shown in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
            wanted = (preconditions or {}).get(key)
            if wanted is not None and wanted != metadata.get(key):
                raise _conflict(
                    name,
                    f"Precondition failed: {shown} in precondition: {wanted}, {shown} in "
                    f"object meta: {metadata.get(key)}",
                )
        if grace_period_seconds is not None and grace_period_seconds < 0:
            grace_period_seconds = 1  # rest.BeforeDelete: a negative grace is taken as 1
        current = metadata.get("deletionGracePeriodSeconds")
        if metadata.get("deletionTimestamp") and not current:
            return pod if dry_run else self._remove(namespace, name)  # stuck at 0: now
        if metadata.get("deletionTimestamp"):
            # Already Terminating: only a shorter grace period changes anything.
            if grace_period_seconds is None or grace_period_seconds >= current:
                return _copy(pod)
            grace = grace_period_seconds
            due = _parse_time(metadata["deletionTimestamp"]) - datetime.timedelta(seconds=current)
            deadline = _rfc3339(due + datetime.timedelta(seconds=grace))
        else:
            grace = _grace_period(pod, grace_period_seconds)
            deadline = self._timestamp(later=grace)
        pod = _copy(pod)
        pod["metadata"]["deletionTimestamp"] = deadline
        pod["metadata"]["deletionGracePeriodSeconds"] = grace
        if dry_run:
            return pod
        # Store.Delete: the graceful update is written (MODIFIED), and with no grace left
        # the object is then deleted (DELETED), so even an unscheduled pod shows both.
        pod["metadata"]["resourceVersion"] = self._bump()
        self._pods[namespace, name] = pod
        self._changed((namespace, name), pod)
        if grace == 0:
            return self._remove(namespace, name)
        return _copy(pod)

    def _remove(self, namespace: str, name: str) -> Manifest:
        pod = self._pods.pop((namespace, name))
        pod["metadata"]["resourceVersion"] = self._bump()
        self._changed((namespace, name), pod, deleted=True)
        for key in [key for key in self._logs if key[:2] == (namespace, name)]:
            del self._logs[key]
        return _copy(pod)

    # --- logs -------------------------------------------------------------------------

    def _container(self, namespace: str, name: str, container: str | None) -> str:
        pod = self._stored(namespace, name)
        names = [
            entry.get("name")
            for kind in ("initContainers", "containers")
            for entry in pod["spec"].get(kind) or []
        ]
        if container is None:
            regular = [entry.get("name") for entry in pod["spec"].get("containers") or []]
            if len(regular) != 1:
                raise ApiError(
                    400,
                    "BadRequest",
                    f"a container name must be specified for pod {name}, choose one of: "
                    f"[{' '.join(map(str, regular))}]",
                )
            return str(regular[0])
        if container not in names:
            raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {name}")
        return container

    @_locked
    def append_log(self, namespace: str, name: str, container: str, text: str) -> None:
        """The kubelet captured ``text`` from ``container``'s output (a KeyError if the pod
        or container does not exist)."""
        try:
            container = self._container(namespace, name, container)
        except ApiError as error:
            raise KeyError(str(error)) from None
        self._logs.setdefault((namespace, name, container), []).append(text)

    @_locked
    def pod_log(self, namespace: str, name: str, container: str | None = None) -> str:
        """``read_namespaced_pod_log``: what the container wrote so far (``container`` may
        be left out for a pod of one container); 404 without the pod, 400 for a container
        it does not have."""
        self._call("read_pod_log", namespace, name)
        container = self._container(namespace, name, container)
        return "".join(self._logs.get((namespace, name, container), ()))

    # --- Secrets ----------------------------------------------------------------------

    @_locked
    def create_secret(
        self,
        namespace: str,
        body: Mapping[str, Any],
        *,
        dry_run: bool = False,
        field_validation: str | None = None,
    ) -> Manifest:
        """``create_namespaced_secret``: stored as the API server stores it (``stringData``
        merged into base64 ``data`` and never answered, ``type`` defaulted to ``Opaque``,
        ``uid``, ``resourceVersion``, ``creationTimestamp``); 400/422 for a bad body, 404
        without the namespace, 409 for a name in use."""
        metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        name = metadata.get("name") if isinstance(metadata, dict) else None
        self._call("create_secret", namespace, str(name))
        try:
            secret, _ = _admission.decode_secret(
                _copy(dict(body)), field_validation=field_validation
            )
        except _admission.Rejected as error:
            if error.code == 422:
                raise invalid("Secret", name, error.causes) from None
            raise ApiError(400, "BadRequest", str(error)) from None
        metadata = secret["metadata"]
        if metadata.setdefault("namespace", namespace) != namespace:
            raise ApiError(
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace sent on "
                "the request",
            )
        self._namespace_exists(namespace)
        if (namespace, name) in self._secrets:
            raise ApiError(
                409,
                "AlreadyExists",
                f'secrets "{name}" already exists',
                details={"name": name, "kind": "secrets"},
            )
        metadata["uid"] = self._next_uid()
        metadata["creationTimestamp"] = self._timestamp()
        metadata["resourceVersion"] = self._bump() if not dry_run else self.resource_version
        if not dry_run:
            self._secrets[namespace, str(name)] = secret
        return _copy(secret)

    @_locked
    def read_secret(self, namespace: str, name: str) -> Manifest:
        """``read_namespaced_secret``: the Secret, or a 404 :class:`ApiError`."""
        secret = self._secrets.get((namespace, name))
        if secret is None:
            raise _not_found("secrets", name)
        return _copy(secret)

    @_locked
    def list_secrets(self, namespace: str | None = None) -> Manifest:
        """``list_namespaced_secret`` / ``list_secret_for_all_namespaces``: a
        ``SecretList``."""
        return {
            "kind": "SecretList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": self.resource_version},
            "items": [
                _copy(secret)
                for (where, _), secret in sorted(self._secrets.items())
                if namespace is None or where == namespace
            ],
        }

    @_locked
    def delete_secret(self, namespace: str, name: str, *, dry_run: bool = False) -> Manifest:
        """``delete_namespaced_secret``: the deleted Secret, or a 404."""
        self._call("delete_secret", namespace, name)
        secret = self._secrets.get((namespace, name))
        if secret is None:
            raise _not_found("secrets", name)
        if not dry_run:
            del self._secrets[namespace, name]
        return _copy(secret)

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

    @_locked
    def send_bookmarks(self, watch: FakeWatch | None = None) -> None:
        """A ``BOOKMARK`` at the current resource version to ``watch`` (default: every open
        watch) if it allows them (the API server sends one about once a minute; the HTTP
        server, when a watch has been idle for ``bookmark_seconds``)."""
        for each in self._watches if watch is None else [watch]:
            if each.bookmarks and not each.closed:
                each._push(self._bookmark())  # noqa: SLF001

    @_locked
    def read_pod(self, namespace: str, name: str) -> Manifest:
        """``read_namespaced_pod``: a copy of the pod, or a 404 :class:`ApiError`."""
        self._call("read_pod", namespace, name)
        snapshot = self._snapshots.get((namespace, name))
        if snapshot is None:
            raise _not_found("pods", name)
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

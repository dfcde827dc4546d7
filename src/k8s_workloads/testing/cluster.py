"""A fake Kubernetes cluster: pods, Secrets, watches, and faults on demand.

It keeps pods as manifests and answers the calls an executor makes the way the API
server does: every change bumps ``resourceVersion``; a watch streams ``ADDED``,
``MODIFIED`` and ``DELETED`` for its selectors (a pod that stops matching, say after a
label patch, is sent as ``DELETED`` without a ``deletionTimestamp``); a deletion is a
``MODIFIED`` with the timestamp, then ``DELETED`` (for a pod with finalizers, once a patch
empties them); a watch from a version older than the
kept history, or one expired with :meth:`FakeCluster.expire_watches`, ends with an
``ERROR`` event carrying a 410 Status. Any call can be made to fail with
:meth:`FakeCluster.fail_next`; failures are :class:`ApiError`, shaped like
``kubernetes.client.ApiException`` (``status``, ``reason``, ``body``, ``headers``), or a
``ConnectionResetError`` for a connection error.

Every pod created or patched is read back as the API server stores it, defaults filled in
(``restartPolicy: Always``, ``dnsPolicy``, ``imagePullPolicy``, ...: see
:mod:`k8s_workloads.testing._defaults`): a pod that should end must say
``restartPolicy: Never`` (or ``OnFailure``), as on a real cluster.

The kubelet is the test's part: move pods along with :meth:`FakeCluster.set_status`, or
let :class:`~k8s_workloads.testing.Kubelet` run them.

This module holds the pod calls (create, patch, bind, delete, logs, status); the rest of
the cluster is in its parts: the state, clock and faults
(:mod:`~k8s_workloads.testing._cluster_store`), Secrets
(:mod:`~k8s_workloads.testing._cluster_secrets`), lists and watches
(:mod:`~k8s_workloads.testing._cluster_watch`).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from k8s_workloads.testing import _admission, _defaults, _patch
from k8s_workloads.testing._cluster_secrets import ClusterSecrets
from k8s_workloads.testing._cluster_store import (
    STALE,
    conflict,
    locked,
    parse_time,
    rfc3339,
    same_namespace,
)
from k8s_workloads.testing._cluster_watch import ClusterWatches
from k8s_workloads.testing._patch import PatchError, apply_patch
from k8s_workloads.testing.errors import ApiError, invalid
from k8s_workloads.testing.watch import _copy

if TYPE_CHECKING:
    from collections.abc import Mapping

    from k8s_workloads.pods.manifest import Manifest

__all__ = ["FakeCluster"]

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


def _deleted_by_update(old: Manifest, new: Manifest) -> bool:
    # The generic registry's ShouldDeleteDuringUpdate (apiserver registry/generic/registry/
    # store.go): the update leaves no finalizers on an object whose deletion was requested
    # and whose grace period is over (0, or never set).
    old_meta = old["metadata"]
    return (
        not new["metadata"].get("finalizers")
        and bool(old_meta.get("deletionTimestamp"))
        and not old_meta.get("deletionGracePeriodSeconds")
    )


class FakeCluster(ClusterWatches, ClusterSecrets):
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

    # --- pods -------------------------------------------------------------------------

    @locked
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

    @locked
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
        name = self._create_call("create_pod", namespace, body)
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
        same_namespace(metadata, namespace)
        _defaults.admit_priority(pod)
        causes = _admission.pod_causes(pod)
        if causes:
            raise invalid("Pod", name, causes)
        self._stamp_new(self._pods, "pods", namespace, name, metadata)
        for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
            metadata.pop(key, None)
        pod["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
        if dry_run:
            metadata["resourceVersion"] = self.resource_version
            return pod, warnings
        metadata["resourceVersion"] = self._bump()
        self._pods[namespace, name] = pod
        self._changed((namespace, name), pod)
        answer = _copy(pod)
        self.pod_created(answer)
        return answer, warnings

    def pod_created(self, pod: Manifest) -> None:
        """Called with each pod a creation stores (not a dry run), as answered: a hook for
        a subclass that wants to see every pod created; nothing by default. Read ``pod``
        only: it is also the answer."""

    @locked
    def patch_pod(
        self,
        namespace: str,
        name: str,
        patch: object,
        *,
        subresource: str | None = None,
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
        in the patch other than the pod's is a 409. A patch that changes nothing bumps
        nothing. ``field_validation="Strict"``: an unknown field in the result is a 400
        (otherwise it is dropped).

        ``status`` is not changed here; ``subresource="status"`` is
        ``patch_namespaced_pod_status``, the ``pods/status`` subresource, where only
        ``status`` changes (what a kubelet writes): recorded in :attr:`calls`, and failed
        by :meth:`fail_next`, as ``patch_pod_status``.
        """
        if subresource not in {None, "status"}:
            raise ValueError(f"subresource must be None or 'status', got {subresource!r}")
        call = "patch_pod" if subresource is None else "patch_pod_status"
        fields = field_validation
        # The pods/status subresource changes only status; the pod itself everything but
        # status.
        self._call(call, namespace, name)
        status = subresource == "status"
        try:
            kind = _patch.patch_type(patch_type)
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
            raise conflict(name, STALE)
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
            if _deleted_by_update(old, new):
                # Store.Update (errEmptiedFinalizers): the update is not written; the
                # stored object is deleted (DELETED carries it, finalizers and all).
                return _copy(old) if dry_run else self._remove(namespace, name)
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if new == old or dry_run:
            return _copy(new)
        new["metadata"]["resourceVersion"] = self._bump()
        self._pods[namespace, name] = new
        self._changed((namespace, name), new)
        return _copy(new)

    @locked
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

    @locked
    def bind_pod(self, namespace: str, name: str, node_name: str) -> Manifest:
        """The scheduler's ``pods/binding``: ``spec.nodeName`` set and ``PodScheduled``
        True (MODIFIED); 409 if the pod is already bound, 404 if there is none."""
        pod = self._stored(namespace, name)
        if pod["spec"].get("nodeName"):
            raise conflict(
                name, f"pod {name} is already assigned to node {pod['spec']['nodeName']!r}"
            )
        if pod["metadata"].get("deletionTimestamp"):
            raise conflict(name, "pod is being deleted, cannot be assigned to a host")
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

    @locked
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
        Deleting a Terminating pod again only shortens its grace.

        Finalizers: a pod with ``metadata.finalizers`` is never removed by a delete. It gets
        its ``deletionTimestamp`` and grace as above (grace 0 where it would go at once),
        one ``MODIFIED``, and stays readable, listed and watched until both are done: the
        grace period (the kubelet's confirmation brings it to 0) and an update (a patch)
        that empties ``finalizers``, which then deletes it (``DELETED``, carrying the pod
        as stored, finalizers included). Once ``deletionTimestamp`` is set a patch may not
        add a finalizer (422). ``preconditions``
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

    @locked
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

    @locked
    def finish_deletion(self, namespace: str, name: str, *, uid: str) -> Manifest:
        """The kubelet confirms a Terminating pod is gone, as its status manager does: a
        delete with grace 0 and the ``uid`` precondition (``MODIFIED`` with grace 0, then
        ``DELETED``); the name is free again. A pod with finalizers stays (grace 0) until
        they are removed.

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
                raise conflict(
                    name,
                    f"Precondition failed: {shown} in precondition: {wanted}, {shown} in "
                    f"object meta: {metadata.get(key)}",
                )
        if grace_period_seconds is not None and grace_period_seconds < 0:
            grace_period_seconds = 1  # rest.BeforeDelete: a negative grace is taken as 1
        current = metadata.get("deletionGracePeriodSeconds")
        held = bool(metadata.get("finalizers"))
        if metadata.get("deletionTimestamp") and not current:
            # No grace left: deleted now, unless finalizers still hold it (Store.Delete
            # answers the object as it is).
            return _copy(pod) if dry_run or held else self._remove(namespace, name)
        if metadata.get("deletionTimestamp"):
            # Already Terminating: only a shorter grace period changes anything.
            if grace_period_seconds is None or grace_period_seconds >= current:
                return _copy(pod)
            grace = grace_period_seconds
            due = parse_time(metadata["deletionTimestamp"]) - datetime.timedelta(seconds=current)
            deadline = rfc3339(due + datetime.timedelta(seconds=grace))
        else:
            grace = _grace_period(pod, grace_period_seconds)
            deadline = self._timestamp(later=grace)
        pod = _copy(pod)
        pod["metadata"]["deletionTimestamp"] = deadline
        pod["metadata"]["deletionGracePeriodSeconds"] = grace
        if dry_run:
            return pod
        # Store.Delete: the graceful update is written (MODIFIED), and with no grace left
        # the object is then deleted (DELETED), so even an unscheduled pod shows both;
        # with finalizers it stays until an update empties them (see _patch).
        pod["metadata"]["resourceVersion"] = self._bump()
        self._pods[namespace, name] = pod
        self._changed((namespace, name), pod)
        if grace == 0 and not held:
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

    @locked
    def append_log(self, namespace: str, name: str, container: str, text: str) -> None:
        """The kubelet captured ``text`` from ``container``'s output (a KeyError if the pod
        or container does not exist)."""
        try:
            container = self._container(namespace, name, container)
        except ApiError as error:
            raise KeyError(str(error)) from None
        self._logs.setdefault((namespace, name, container), []).append(text)

    @locked
    def pod_log(self, namespace: str, name: str, container: str | None = None) -> str:
        """``read_namespaced_pod_log``: what the container wrote so far (``container`` may
        be left out for a pod of one container); 404 without the pod, 400 for a container
        it does not have."""
        self._call("read_pod_log", namespace, name)
        container = self._container(namespace, name, container)
        return "".join(self._logs.get((namespace, name, container), ()))

    # --- the kubelet's part -----------------------------------------------------------

    @locked
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

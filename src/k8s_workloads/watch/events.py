"""Pod watch events to workload states: :func:`resolve_event`.

One watch event in — ``{"type": ..., "object": ...}`` from the API server's watch stream,
``kubectl get pods --watch --output-watch-events -o json`` or the kubernetes client's
``Watch.stream`` — and one :class:`Resolution` out: which workload, which state, why.

The rules for task pods are the provider's watcher (``process_status``), row by row, in
:data:`~k8s_workloads.watch.pod_rules.DECISION_TABLE` order. Callback pods (Airflow 3.3+)
are recognised before any task field is read and resolve to
:class:`~k8s_workloads.states.CallbackState` values. The
function is total: whatever the input, it returns a Resolution whose ``outcome`` says
what happened, and never raises. :func:`resolve_event_json` takes the event as JSON text
and gives the Resolution of its full decoding, reading only the fields the rules read.
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from k8s_workloads import model_readers
from k8s_workloads.compat import InvalidVersion
from k8s_workloads.display import shown
from k8s_workloads.json_values import as_int
from k8s_workloads.json_values import as_map as _map
from k8s_workloads.json_values import as_str as _str
from k8s_workloads.pods.codec import (
    InvalidAnnotations,
    annotations_to_key,
    cached_task_key,
    is_callback_pod,
)
from k8s_workloads.pods.labels import KUBERNETES_EXECUTOR_LABEL, POD_REVOKED_LABEL, TRUE_LABEL_VALUE
from k8s_workloads.watch import decoding
from k8s_workloads.watch.pod_rules import _apply_rows, _ManifestPod, _TypedPod
from k8s_workloads.watch.resolution import Outcome, Resolution, ResolverConfig

if TYPE_CHECKING:
    import datetime

    from k8s_workloads.keys import TaskInstanceKey, WorkloadKey

__all__ = ["resolve_event", "resolve_event_json", "resolve_typed_event"]


def _as_manifest(obj: object) -> Mapping[str, Any] | None:
    if isinstance(obj, Mapping):
        return obj
    if obj is None or not hasattr(obj, "to_dict"):
        return None
    # A kubernetes model object (36.x or 37.x): read by the reader the adapter registers.
    reader = model_readers.reader_for(obj)
    if reader is None:
        return None
    try:
        with warnings.catch_warnings():
            # pydantic (kubernetes 37) warns about the odd values it then serialises anyway.
            warnings.simplefilter("ignore")
            return reader(obj)
    except (TypeError, ValueError, AttributeError, RecursionError):
        # A model object holding values its type does not allow (a set, an object, a
        # structure nested past Python's recursion limit): not a pod this can read.
        return None


def _watch_error(event_type: str, obj: Mapping[str, Any]) -> Resolution:
    code = as_int(obj.get("code"))
    reason = _str(obj.get("reason")) or "unknown"
    message = _str(obj.get("message")) or ""
    if code == 410:
        return Resolution(
            Outcome.RESYNC,
            f"watch expired (410 {reason}): list pods again and watch from the new version",
            event_type=event_type,
            error_code=410,
        )
    return Resolution(
        Outcome.WATCH_ERROR,
        f"Kubernetes failure for {reason} with code {shown(code)} and message: {message}",
        event_type=event_type,
        error_code=code,
    )


def resolve_event(
    event: object,
    *,
    config: ResolverConfig = ResolverConfig(),  # frozen, so one shared default is safe
    now: datetime.datetime | None = None,
) -> Resolution:
    """Resolve one pod watch event; total, never raises.

    ``now`` is only read by the opt-in pending policy (``config.pending``).
    """
    if not isinstance(event, Mapping):
        return Resolution(Outcome.MALFORMED, f"not a watch event: {type(event).__name__}")
    event_type = event.get("type")
    if not isinstance(event_type, str):
        return Resolution(Outcome.MALFORMED, "watch event without a type")
    obj = _as_manifest(event.get("object"))
    if obj is None:
        return Resolution(
            Outcome.MALFORMED, f"{event_type} event without an object", event_type=event_type
        )
    if event_type == "ERROR":
        return _watch_error(event_type, obj)
    metadata = _map(obj.get("metadata"))
    resource_version = _str(metadata.get("resourceVersion"))
    if event_type == "BOOKMARK":
        return Resolution(
            Outcome.BOOKMARK,
            f"bookmark at resource version {resource_version}",
            resource_version=resource_version,
            event_type=event_type,
        )
    if event_type not in {"ADDED", "MODIFIED", "DELETED"}:
        return Resolution(
            Outcome.MALFORMED,
            f"unknown watch event type {shown(event_type)}",
            event_type=event_type,
        )
    return _resolve_pod(event_type, obj, metadata, resource_version, config=config, now=now)


_NO_LABELS: Mapping[str, Any] = types.MappingProxyType({})


def _identify(
    event_type: str,
    labels: Mapping[str, Any],
    annotations: Mapping[str, Any],
    where: tuple[str | None, str | None, str | None],
    config: ResolverConfig,
) -> WorkloadKey | Resolution:
    """The workload a pod event is about, or the Resolution of a pod that names none."""
    if POD_REVOKED_LABEL in labels:
        outcome, reason = Outcome.REVOKED, "revoked by the executor: ignored"
    elif labels.get(KUBERNETES_EXECUTOR_LABEL) != TRUE_LABEL_VALUE:
        outcome, reason = Outcome.FOREIGN, "not a KubernetesExecutor pod: ignored"
    else:
        try:
            return annotations_to_key(annotations, labels, airflow_version=config.airflow_version)
        except InvalidAnnotations as error:
            kind = "callback pod" if is_callback_pod(annotations, labels) else "pod"
            outcome, reason = Outcome.UNDECODABLE, f"undecodable {kind}: {error}"
        except InvalidVersion as error:
            outcome, reason = Outcome.UNDECODABLE, f"bad airflow_version in the config: {error}"
    pod_name, namespace, resource_version = where
    return Resolution(
        outcome,
        reason,
        pod_name=pod_name,
        namespace=namespace,
        resource_version=resource_version,
        event_type=event_type,
    )


def _resolve_pod(
    event_type: str,
    manifest: Mapping[str, Any],
    metadata: Mapping[str, Any],
    resource_version: str | None,
    *,
    config: ResolverConfig,
    now: datetime.datetime | None,
) -> Resolution:
    where = (_str(metadata.get("name")), _str(metadata.get("namespace")), resource_version)
    labels = _map(metadata.get("labels"))
    annotations = _map(metadata.get("annotations"))
    key = _identify(event_type, labels, annotations, where, config)
    if isinstance(key, Resolution):
        return key
    return _apply_rows(_ManifestPod(event_type, manifest, metadata, key, config, now, where))


# --- from a watch line ----------------------------------------------------------------

_POD_EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED"})


def resolve_event_json(
    text: str | bytes,
    *,
    config: ResolverConfig = ResolverConfig(),  # frozen, so one shared default is safe
    now: datetime.datetime | None = None,
) -> Resolution:
    """Resolve one watch event given as JSON text; total, never raises.

    The same Resolution as ``resolve_event(json.loads(text), config=config, now=now)``,
    field for field, for any text, at a fraction of the cost: a pod event is decoded only
    as far as the rules read it (its type, five metadata fields, the labels and
    annotations the rules read by name, the status fields failure details read; the
    conditions only when a failure is classified), into typed structures, and the rest
    of it (``spec``, ``managedFields``, other labels) is skipped. A text the typed
    decoding cannot take (a field the rules read of an unexpected type, an ERROR or
    BOOKMARK event, anything but a pod) is decoded in full and resolved by
    :func:`resolve_event`. Text that is not JSON is ``MALFORMED`` (``not JSON: ...``).
    """
    if config.pending is None:  # the pending policy reads what the typed pod leaves out
        event = decoding.decode_pod_event(text)
        if event is not None:
            event_type, obj = event.type, event.object
            if (
                event_type is not None
                and event_type in _POD_EVENT_TYPES
                and obj is not None
                and obj.metadata is not None
            ):  # resolve_typed_event's checks, inline
                try:
                    return _resolve_typed(event_type, obj, obj.metadata, config, now)
                except decoding.UntypedFieldError:
                    pass  # a field read on demand is not of its type: the total path
    try:
        decoded = decoding.decode_event(text)
    except (ValueError, RecursionError) as error:
        return Resolution(Outcome.MALFORMED, f"not JSON: {error}")
    return resolve_event(decoded, config=config, now=now)


def resolve_typed_event(
    event: decoding.PodEvent | decoding.SpecPodEvent,
    *,
    config: ResolverConfig,
    now: datetime.datetime | None,
) -> Resolution | None:
    """The Resolution of a typed pod event, or None when the total path must read it.

    For the library's readers of watch text (:mod:`~k8s_workloads.watch.streams`); None for
    anything but an ADDED, MODIFIED or DELETED event with metadata, under the pending
    policy, which reads fields the typed decoding leaves out, and when a field decoded only
    if a rule reads it (the conditions) does not have its API type.
    """
    event_type, obj = event.type, event.object
    if (
        config.pending is not None
        or event_type is None
        or event_type not in _POD_EVENT_TYPES
        or obj is None
        or obj.metadata is None
    ):
        return None
    try:
        return _resolve_typed(event_type, obj, obj.metadata, config, now)
    except decoding.UntypedFieldError:  # a field read on demand is not of its type
        return None


def _resolve_typed(
    event_type: str,
    obj: decoding.PodObject,
    metadata: decoding.PodMetadata,
    config: ResolverConfig,
    now: datetime.datetime | None,
) -> Resolution:
    key: WorkloadKey | None = _typed_task_key(metadata.labels, metadata.annotations)
    if key is None:
        labels, annotations = metadata.labels, metadata.annotations
        identified = _identify(
            event_type,
            _NO_LABELS if labels is None else labels.as_map(),
            _NO_LABELS if annotations is None else annotations.as_map(),
            (metadata.name, metadata.namespace, metadata.resourceVersion),
            config,
        )
        if isinstance(identified, Resolution):
            return identified
        key = identified
    return _apply_rows(_TypedPod(event_type, obj.status, metadata, key, config, now))


def _typed_task_key(
    labels: decoding.PodLabels | None, annotations: decoding.PodAnnotations | None
) -> TaskInstanceKey | None:
    # The task pod of nearly every event, as _identify decodes it: not revoked, the
    # executor's, no workload type or id (so no callback, no generic workload), the four
    # fields a run's task pod has. None for anything else, which _identify reads in full
    # (and explains).
    unset = msgspec.UNSET
    if (
        labels is None
        or annotations is None
        or labels.revoked is not unset
        or labels.executor != TRUE_LABEL_VALUE
        or labels.workload_type is not unset
        or annotations.callback_id is not unset
        or annotations.workload_id is not unset
    ):
        return None
    dag_id, task_id, try_text = annotations.dag_id, annotations.task_id, annotations.try_number
    run_id, map_text = annotations.run_id, annotations.map_index
    if dag_id is unset or task_id is unset or try_text is unset or run_id is unset or not run_id:
        return None
    try:
        map_value = None if map_text is unset else map_text
        return cached_task_key(dag_id, task_id, try_text, map_value, run_id)
    except InvalidAnnotations:
        return None

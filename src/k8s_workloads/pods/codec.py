"""Pod annotations and labels to workload keys, and back.

The provider decides "task" by reading ``annotations["task_id"]`` and fails with
``KeyError`` on anything else, which is how a callback pod crashes a watcher or a
scheduler at adoption (reference §7.2). Here the kind is decided first, from the
``airflow-workload-type`` label or the ``callback_id`` annotation, never from a missing
``task_id``; every bad input is an :class:`InvalidAnnotations` naming the field, and no
database is ever consulted. A generic workload's pod (``airflow-workload-type=generic``, or
a ``workload_id`` annotation) decodes to a :class:`~k8s_workloads.keys.GenericKey` with no
Airflow version at all.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from k8s_workloads.compat import VersionLike, supports_callbacks
from k8s_workloads.display import shown
from k8s_workloads.errors import FieldError
from k8s_workloads.keys import (
    CallbackKey,
    GenericKey,
    InvalidKey,
    TaskInstanceKey,
    WorkloadKey,
    checked_task_key,
)
from k8s_workloads.pods.labels import (
    CALLBACK_ID_ANNOTATION,
    CALLBACK_WORKLOAD_TYPE,
    DAG_ID_KEY,
    EXECUTION_DATE_KEY,
    GENERIC_WORKLOAD_TYPE,
    LOGICAL_DATE_KEY,
    MAP_INDEX_KEY,
    RUN_ID_KEY,
    TASK_ID_KEY,
    TRY_NUMBER_KEY,
    WORKLOAD_ID_KEY,
    WORKLOAD_TYPE_LABEL,
)

__all__ = [
    "CallbackAnnotationsUnsupported",
    "InvalidAnnotations",
    "LegacyPodAnnotations",
    "annotations_to_key",
    "cached_task_key",
    "is_callback_pod",
    "key_to_annotations",
]


class InvalidAnnotations(FieldError):
    """A pod's annotations (or labels) do not describe a workload; ``field`` is the
    annotation or label at fault, e.g. ``try_number``."""


class LegacyPodAnnotations(InvalidAnnotations):
    """An Airflow 2 pod names its run only by date; its run id needs a database lookup."""


class CallbackAnnotationsUnsupported(InvalidAnnotations):
    """A callback pod was met while callback workloads are off (Airflow older than 3.3)."""


ANNOTATIONS_READ = frozenset(
    {
        DAG_ID_KEY,
        TASK_ID_KEY,
        TRY_NUMBER_KEY,
        MAP_INDEX_KEY,
        RUN_ID_KEY,
        CALLBACK_ID_ANNOTATION,
        WORKLOAD_ID_KEY,
        LOGICAL_DATE_KEY,
        EXECUTION_DATE_KEY,
    }
)
"""Every annotation :func:`annotations_to_key` reads (private to the library: the typed
watch decoding reads these and skips the rest)."""

# ASCII digits only: int() would also take " 1", "+1", "1_0" and other scripts' digits,
# none of which the provider ever writes.
_UNSIGNED_INT = re.compile(r"[0-9]+")
_SIGNED_INT = re.compile(r"-?[0-9]+")


def is_callback_pod(
    annotations: Mapping[str, object] | None, labels: Mapping[str, object] | None
) -> bool:
    """Whether a pod says it runs a callback: by its workload-type label or annotation."""
    if labels is not None and labels.get(WORKLOAD_TYPE_LABEL) == CALLBACK_WORKLOAD_TYPE:
        return True
    return annotations is not None and CALLBACK_ID_ANNOTATION in annotations


def _string(annotations: Mapping[str, object], field: str) -> str:
    if field not in annotations:
        raise InvalidAnnotations(field, "missing")
    value = annotations[field]
    if not isinstance(value, str):
        raise InvalidAnnotations(field, f"must be a string, got {type(value).__name__}")
    return value


def _integer(text: str, field: str, pattern: re.Pattern[str]) -> int:
    if pattern.fullmatch(text) is None:
        raise InvalidAnnotations(field, f"not an integer: {shown(text)}")
    try:
        return int(text)
    except ValueError:  # more digits than int() accepts from text
        raise InvalidAnnotations(field, f"integer too long: {shown(text, limit=20)}") from None


def _decode_callback(
    annotations: Mapping[str, object], airflow_version: VersionLike | None
) -> CallbackKey:
    if not supports_callbacks(airflow_version):
        found = "no Airflow version" if airflow_version is None else f"Airflow {airflow_version}"
        raise CallbackAnnotationsUnsupported(
            CALLBACK_ID_ANNOTATION,
            f"this is a callback pod, and callback workloads need Airflow 3.3+ ({found})",
        )
    callback_id = _string(annotations, CALLBACK_ID_ANNOTATION)
    try:
        return CallbackKey(callback_id)
    except InvalidKey as error:
        raise InvalidAnnotations(CALLBACK_ID_ANNOTATION, str(error)) from None


def _decode_generic(annotations: Mapping[str, object]) -> GenericKey:
    if CALLBACK_ID_ANNOTATION in annotations:
        raise InvalidAnnotations(
            CALLBACK_ID_ANNOTATION, "a generic workload's pod names no callback"
        )
    workload_id = _string(annotations, WORKLOAD_ID_KEY)
    try:
        return GenericKey(workload_id)
    except InvalidKey as error:
        raise InvalidAnnotations(WORKLOAD_ID_KEY, str(error)) from None


_WORKLOAD_TYPES = frozenset({CALLBACK_WORKLOAD_TYPE, GENERIC_WORKLOAD_TYPE})

_ABSENT = object()


def _decode_task(annotations: Mapping[str, object]) -> TaskInstanceKey:
    # The shape of nearly every task pod (Airflow 3: string fields, a run id): decoded once
    # per distinct identity. Keys are immutable, and errors are not cached (they raise).
    get = annotations.get
    dag_id, task_id, try_text = get(DAG_ID_KEY), get(TASK_ID_KEY), get(TRY_NUMBER_KEY)
    map_text, run_id = get(MAP_INDEX_KEY, _ABSENT), get(RUN_ID_KEY)
    if (
        type(dag_id) is str
        and type(task_id) is str
        and type(try_text) is str
        and type(run_id) is str
        and run_id
        and (map_text is _ABSENT or type(map_text) is str)
    ):
        return cached_task_key(
            dag_id, task_id, try_text, None if map_text is _ABSENT else map_text, run_id
        )
    return _decode_task_checked(annotations)


@functools.lru_cache(maxsize=8192)
def cached_task_key(
    dag_id: str, task_id: str, try_text: str, map_text: str | None, run_id: str
) -> TaskInstanceKey:
    """The key of a task pod's annotations, its numbers as written (``map_text`` None: no
    map index), decoded once per distinct identity (keys are immutable; an error is not
    cached). Raises :class:`InvalidAnnotations` naming the annotation at fault."""
    # Well-formed numbers (the usual case, and every miss of a long stream of new pods):
    # the key's own validators check the rest. Anything else is decoded field by field,
    # for the error naming the field.
    if _UNSIGNED_INT.fullmatch(try_text) and (map_text is None or _SIGNED_INT.fullmatch(map_text)):
        try:
            map_index = -1 if map_text is None else int(map_text)
            return checked_task_key(dag_id, task_id, run_id, int(try_text), map_index)
        except (InvalidKey, ValueError):
            pass
    annotations = {DAG_ID_KEY: dag_id, TASK_ID_KEY: task_id, TRY_NUMBER_KEY: try_text}
    if map_text is not None:
        annotations[MAP_INDEX_KEY] = map_text
    annotations[RUN_ID_KEY] = run_id
    return _decode_task_checked(annotations)


def _decode_task_checked(annotations: Mapping[str, object]) -> TaskInstanceKey:
    dag_id = _string(annotations, DAG_ID_KEY)
    task_id = _string(annotations, TASK_ID_KEY)
    try_number = _integer(_string(annotations, TRY_NUMBER_KEY), TRY_NUMBER_KEY, _UNSIGNED_INT)
    map_index = -1
    if MAP_INDEX_KEY in annotations:
        map_index = _integer(_string(annotations, MAP_INDEX_KEY), MAP_INDEX_KEY, _SIGNED_INT)
    run_id: str | None = None
    if RUN_ID_KEY in annotations:
        run_id = _string(annotations, RUN_ID_KEY)
    if not run_id:
        for date_key in (LOGICAL_DATE_KEY, EXECUTION_DATE_KEY):
            if date_key in annotations:
                raise LegacyPodAnnotations(
                    RUN_ID_KEY,
                    f"missing; the pod names its run only by {date_key}, and finding the "
                    "run id from a date needs the Airflow database",
                )
        if run_id == "":
            raise InvalidAnnotations(RUN_ID_KEY, "empty")
    try:
        return TaskInstanceKey(dag_id, task_id, run_id, try_number, map_index)
    except InvalidKey as error:
        # Every field validator names its field; the annotation has the field's name.
        raise InvalidAnnotations(error.field or "annotations", str(error)) from None


def annotations_to_key(
    annotations: Mapping[str, object],
    labels: Mapping[str, object] | None = None,
    *,
    airflow_version: VersionLike | None = None,
) -> WorkloadKey:
    """The workload key a pod's annotations (and labels) describe.

    Task pods need ``dag_id``, ``task_id`` and ``try_number``; ``map_index`` defaults to
    -1 and ``run_id`` to None. A pod is a callback pod when its ``airflow-workload-type``
    label is ``callback`` or it has a ``callback_id`` annotation; callback keys are
    decoded only when ``airflow_version`` (an :class:`~k8s_workloads.compat.AirflowVersion`,
    or text parsed here) supports them (3.3+). A pod is a generic workload's when that
    label is ``generic`` or, with no label, it has a ``workload_id`` annotation (never
    beside a ``callback_id`` one): its key needs no version. Raises
    :class:`InvalidAnnotations` (or a subclass) for anything else, never ``KeyError`` or
    ``TypeError``.
    """
    if not isinstance(annotations, Mapping):
        raise InvalidAnnotations(
            "metadata.annotations", f"must be a mapping, got {type(annotations).__name__}"
        )
    workload_type = None
    if labels is not None:
        if not isinstance(labels, Mapping):
            raise InvalidAnnotations(
                "metadata.labels", f"must be a mapping, got {type(labels).__name__}"
            )
        workload_type = labels.get(WORKLOAD_TYPE_LABEL)
        if workload_type is not None and (
            not isinstance(workload_type, str) or workload_type not in _WORKLOAD_TYPES
        ):
            raise InvalidAnnotations(
                WORKLOAD_TYPE_LABEL, f"unknown workload type {shown(workload_type)}"
            )
    if workload_type == GENERIC_WORKLOAD_TYPE or (
        workload_type is None and WORKLOAD_ID_KEY in annotations
    ):
        return _decode_generic(annotations)
    if is_callback_pod(annotations, labels):
        return _decode_callback(annotations, airflow_version)
    return _decode_task(annotations)


def key_to_annotations(key: WorkloadKey) -> dict[str, str]:
    """The identity annotations a pod of this workload carries (the codec's inverse)."""
    if isinstance(key, CallbackKey):
        return {CALLBACK_ID_ANNOTATION: key.id}
    if isinstance(key, GenericKey):
        return {WORKLOAD_ID_KEY: key.id}
    annotations = {
        DAG_ID_KEY: key.dag_id,
        TASK_ID_KEY: key.task_id,
        TRY_NUMBER_KEY: str(key.try_number),
    }
    if key.map_index >= 0:
        annotations[MAP_INDEX_KEY] = str(key.map_index)
    if key.run_id is not None:
        annotations[RUN_ID_KEY] = key.run_id
    return annotations

"""A worker pod's identity: the labels and annotations the watcher decodes.

The one place that says which annotations name a task, callback or generic workload's pod
(:func:`_task_annotations`, :func:`callback_pod_name`, :func:`generic_pod_name`), which
labels and annotations a pod must carry or must not carry (:class:`_Identity`), and which
keys no template, override or hook may set. Every build path (the general one and the
prepared one) takes a pod's identity from here; the label values are
:mod:`k8s_workloads.pods.labels`'.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from k8s_workloads.display import shown
from k8s_workloads.json_values import as_map
from k8s_workloads.keys import CallbackKey, GenericKey
from k8s_workloads.pods.codec import key_to_annotations
from k8s_workloads.pods.labels import (
    AIRFLOW_WORKER_LABEL,
    CALLBACK_ID_ANNOTATION,
    DAG_ID_KEY,
    EXECUTION_DATE_KEY,
    KUBERNETES_EXECUTOR_LABEL,
    LOGICAL_DATE_KEY,
    MAP_INDEX_KEY,
    POD_EXECUTOR_DONE_LABEL,
    POD_REVOKED_LABEL,
    RUN_ID_KEY,
    TASK_ID_KEY,
    TRY_NUMBER_KEY,
    WORKLOAD_ID_KEY,
    WORKLOAD_TYPE_LABEL,
    add_unique_suffix,
    create_unique_id,
)

if TYPE_CHECKING:
    import datetime
    import random
    from collections.abc import Mapping, Sequence

    from k8s_workloads.pods.manifest import Manifest


# Labels the executor writes later to stop reading a pod (revoked, or done): on a new pod
# every event would be ignored, adoption would skip it, and after a 410 the re-list would
# report its running workload vanished. No template, override or hook may set them.
_HIDING_LABELS = (POD_REVOKED_LABEL, POD_EXECUTOR_DONE_LABEL)
# Every key a task pod's identity holds, or forbids, whatever its values: a plan whose
# layers set none of them keeps every task pod's identity (see _fast_task_pod).
_TASK_IDENTITY_ANNOTATIONS = frozenset(
    (
        DAG_ID_KEY,
        TASK_ID_KEY,
        TRY_NUMBER_KEY,
        MAP_INDEX_KEY,
        RUN_ID_KEY,
        LOGICAL_DATE_KEY,
        EXECUTION_DATE_KEY,
        CALLBACK_ID_ANNOTATION,
    )
)
_TASK_IDENTITY_LABELS = frozenset(
    (AIRFLOW_WORKER_LABEL, KUBERNETES_EXECUTOR_LABEL, WORKLOAD_TYPE_LABEL, *_HIDING_LABELS)
)


# The annotation keys a task pod's date may take (``logical_date_key``).
_DATE_KEYS = (LOGICAL_DATE_KEY, EXECUTION_DATE_KEY)
# The most characters a task pod's own annotation keys can have (dag_id, task_id,
# try_number, map_index, a date key and run_id), for the annotations' size bound.
_TASK_ANNOTATION_KEY_CHARS = sum(
    len(key) for key in (DAG_ID_KEY, TASK_ID_KEY, TRY_NUMBER_KEY, MAP_INDEX_KEY, RUN_ID_KEY)
) + max(len(key) for key in _DATE_KEYS)


@dataclasses.dataclass(frozen=True)
class _Identity:
    """What the watcher decodes, which neither the template, override nor hook may change."""

    annotations: Mapping[str, str]
    labels: Mapping[str, str]
    forbidden_annotations: Sequence[str]
    forbidden_labels: Sequence[str]

    def kept_by(
        self,
        *,
        layer_annotations: frozenset[str],
        layer_labels: frozenset[str],
        annotations: Mapping[str, str],
        labels: Mapping[str, str],
    ) -> bool:
        """Whether a planned pod keeps this identity whatever :meth:`check` would find.

        The pod's labels and annotations are ``{**template's, **the pod's own,
        **override's}``: when the layers (the template and override) name no key of the
        identity or a forbidden one among ``layer_annotations`` and ``layer_labels``, and
        the pod's own hold no forbidden key, the pod carries exactly its own identity.
        """
        return (
            layer_annotations.isdisjoint(self.annotations)
            and layer_annotations.isdisjoint(self.forbidden_annotations)
            and layer_labels.isdisjoint(self.labels)
            and layer_labels.isdisjoint(self.forbidden_labels)
            and annotations.keys().isdisjoint(self.forbidden_annotations)
            and labels.keys().isdisjoint(self.forbidden_labels)
            and self.annotations.items() <= annotations.items()
            and self.labels.items() <= labels.items()
        )

    def check(self, manifest: Manifest, *, stage: str, error: type[ValueError]) -> None:
        metadata = as_map(manifest.get("metadata"))
        found_annotations = as_map(metadata.get("annotations"))
        found_labels = as_map(metadata.get("labels"))
        problems = [
            f"annotation {key!r} is {shown(found_annotations.get(key))}, expected {shown(value)}"
            for key, value in self.annotations.items()
            if found_annotations.get(key) != value
        ]
        problems += [
            f"label {key!r} is {shown(found_labels.get(key))}, expected {shown(value)}"
            for key, value in self.labels.items()
            if found_labels.get(key) != value
        ]
        problems += [
            f"annotation {key!r} must not be set"
            for key in self.forbidden_annotations
            if key in found_annotations
        ]
        problems += [
            f"label {key!r} must not be set" for key in self.forbidden_labels if key in found_labels
        ]
        if problems:
            raise error(
                f"{stage} changed the identity the executor reads back: " + "; ".join(problems)
            )


def _task_annotations(  # noqa: PLR0917 - the identity's parts, in their order
    dag_id: str,
    task_id: str,
    try_number: str,
    map_index: int,
    date: str | None,
    run_id: str | None,
    logical_date_key: str,
) -> dict[str, str]:
    """The annotations naming a task pod, in their order (both build paths make them here;
    the labels are :func:`~k8s_workloads.pods.labels.build_labels_for_k8s_executor_pod`'s)."""
    annotations = {DAG_ID_KEY: dag_id, TASK_ID_KEY: task_id, TRY_NUMBER_KEY: try_number}
    if map_index >= 0:
        annotations[MAP_INDEX_KEY] = str(map_index)
    if date:
        annotations[logical_date_key] = date
    if run_id:
        annotations[RUN_ID_KEY] = run_id
    return annotations


def _task_identity(
    annotations: Mapping[str, str],
    labels: Mapping[str, str],
    *,
    map_index: int,
    run_id: str | None,
    date: datetime.datetime | None,
) -> _Identity:
    return _Identity(
        annotations=annotations,
        labels={
            label: labels[label] for label in (AIRFLOW_WORKER_LABEL, KUBERNETES_EXECUTOR_LABEL)
        },
        # An annotation the pod must not carry would decode to another key: a map index
        # on an unmapped task, a run id or date the task does not have.
        forbidden_annotations=(
            CALLBACK_ID_ANNOTATION,
            *((MAP_INDEX_KEY,) if map_index < 0 else ()),
            *((RUN_ID_KEY,) if not run_id else ()),
            *((LOGICAL_DATE_KEY, EXECUTION_DATE_KEY) if not (date or run_id) else ()),
        ),
        forbidden_labels=(WORKLOAD_TYPE_LABEL, *_HIDING_LABELS),
    )


def _callback_identity(
    key: CallbackKey, labels: Mapping[str, str], *, dag_id: str | None, run_id: str | None
) -> tuple[dict[str, str], _Identity]:
    """A callback pod's annotations (its id; ``dag_id`` and ``run_id`` when known) and
    its identity: the id, the callback labels of ``labels``, and no task key."""
    identity_annotations = key_to_annotations(key)
    annotations = dict(identity_annotations)
    if dag_id:
        annotations[DAG_ID_KEY] = dag_id
    if run_id:
        annotations[RUN_ID_KEY] = run_id
    identity = _Identity(
        annotations=identity_annotations,
        labels={
            label: labels[label]
            for label in (WORKLOAD_TYPE_LABEL, AIRFLOW_WORKER_LABEL, KUBERNETES_EXECUTOR_LABEL)
        },
        forbidden_annotations=(TASK_ID_KEY, TRY_NUMBER_KEY, MAP_INDEX_KEY),
        forbidden_labels=(TASK_ID_KEY, TRY_NUMBER_KEY, MAP_INDEX_KEY, *_HIDING_LABELS),
    )
    return annotations, identity


def callback_pod_name(callback_id: str, *, rng: random.Random | None = None) -> str:
    """``callback-<first 8 hex digits of the id>-<8 random [a-z0-9]>``: 26 characters."""
    return _callback_pod_name(CallbackKey(callback_id), rng)


def _callback_pod_name(key: CallbackKey, rng: random.Random | None) -> str:
    return add_unique_suffix(name=f"callback-{key.id.replace('-', '')[:8]}", rng=rng)


def _generic_identity(key: GenericKey, labels: Mapping[str, str]) -> _Identity:
    """A generic workload's pod identity: its id, its labels, and no task or callback key
    (an annotation of either would make the pod read as another kind, or refused)."""
    return _Identity(
        annotations=key_to_annotations(key),
        labels={
            label: labels[label]
            for label in (
                WORKLOAD_TYPE_LABEL,
                AIRFLOW_WORKER_LABEL,
                KUBERNETES_EXECUTOR_LABEL,
                WORKLOAD_ID_KEY,
            )
        },
        forbidden_annotations=(CALLBACK_ID_ANNOTATION, TASK_ID_KEY, TRY_NUMBER_KEY, MAP_INDEX_KEY),
        forbidden_labels=(TASK_ID_KEY, TRY_NUMBER_KEY, MAP_INDEX_KEY, *_HIDING_LABELS),
    )


def generic_pod_name(workload_id: str, *, rng: random.Random | None = None) -> str:
    """A generic workload's pod name: the id made a DNS-1123 name (transliterated, lower
    case, runs of anything else one ``-``, as :func:`~k8s_workloads.pods.labels.create_unique_id`
    makes it; a hash where nothing is left), cut to fit, and ``-<8 random [a-z0-9]>``."""
    return _generic_pod_name(GenericKey(workload_id), rng)


def _generic_pod_name(key: GenericKey, rng: random.Random | None) -> str:
    return create_unique_id(key.id, rng=rng)

"""Worker pod manifests for task instances and callbacks.

:func:`construct_task_pod` gives, for the same inputs, the manifest the provider's
``PodGenerator.construct_pod`` followed by ``sanitize_for_serialization`` gives: the same
name handling, image precedence, annotations, labels, ``base`` container and merge chain
(template → dynamic pod → ``pod_override``). :func:`construct_callback_pod` builds the
minimal pod for an Airflow 3.3 ``ExecuteCallback``. Both then apply an optional mutation
hook and check that the identity the watcher decodes is still on the pod.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from k8s_workloads._display import shown
from k8s_workloads._json import as_list, as_map
from k8s_workloads.codec import key_to_annotations
from k8s_workloads.compat import VersionLike, require_callback_support
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.labels import (
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
    WORKLOAD_TYPE_LABEL,
    add_unique_suffix,
    build_labels_for_callback_pod,
    build_labels_for_k8s_executor_pod,
)
from k8s_workloads.reconcile import Manifest, PodReconciliationError, merge_pair
from k8s_workloads.schema import (
    SchemaViolation,
    checked_layer,
    is_pod_schema_valid,
    pod_schema_errors,
)
from k8s_workloads.validation import (
    POD_NAME_MAX_LENGTH,
    NamingRuleViolation,
    is_valid_manifest,
    validate_manifest,
)

if TYPE_CHECKING:
    import datetime
    import random

__all__ = [
    "BASE_CONTAINER_NAME",
    "EXECUTE_WORKLOAD_MODULE",
    "EXECUTOR_POD_ENV",
    "InvalidMutatedPod",
    "InvalidPod",
    "MutationHook",
    "PodMutationHookError",
    "callback_pod_name",
    "construct_callback_pod",
    "construct_task_pod",
    "parse_callback_log_path",
    "workload_command_args",
]

BASE_CONTAINER_NAME = "base"
"""The worker container's name; the provider reads logs from it."""
EXECUTOR_POD_ENV = {"name": "AIRFLOW_IS_K8S_EXECUTOR_POD", "value": "True"}
EXECUTE_WORKLOAD_MODULE = "airflow.sdk.execution_time.execute_workload"
_ERROR_LENGTH = 300  # of a caught error's repr in a message (it may echo a template value)

MutationHook: TypeAlias = Callable[[Manifest], "Manifest | None"]
"""Called with the final manifest; mutates it in place (returns None) or returns a new one.

Wrap an Airflow-style ``pod_mutation_hook(V1Pod)`` with
:func:`k8s_workloads.adapters.v1pod_mutation_hook`.
"""


class PodMutationHookError(ValueError):
    """The mutation hook raised, or removed or changed the pod's identity."""


_Violation: TypeAlias = "NamingRuleViolation | SchemaViolation"
_SHOWN_VIOLATIONS = 5


def _refusal(source: str, violations: Sequence[_Violation]) -> str:
    shown = "; ".join(
        str(violation)[len("pod: ") :] if violation.field == "pod" else str(violation)
        for violation in violations[:_SHOWN_VIOLATIONS]
    )
    more = len(violations) - _SHOWN_VIOLATIONS
    suffix = f" (and {more} more)" if more > 0 else ""
    return f"{source}: {shown}{suffix}"


class InvalidPod(PodReconciliationError):
    """The pod would break a Kubernetes naming rule or the Kubernetes 1.37 Pod schema.

    Raised for what the template, the ``pod_override`` or the builder's arguments
    (``namespace``, ``pod_id``, ``args`` ...) put in the pod. ``field`` names the first
    offending field (``metadata.name``, ``spec.initContainers[0].name``,
    ``metadata.annotations``); ``violations`` holds every one found, each a
    :class:`~k8s_workloads.validation.NamingRuleViolation` or
    :class:`~k8s_workloads.schema.SchemaViolation`. Values are shown cut short, and
    never with the Execution API token.
    """

    def __init__(self, source: str, violations: Sequence[_Violation]) -> None:
        super().__init__(_refusal(source, violations))
        self.field = violations[0].field
        """The first offending field."""
        self.violations = tuple(violations)
        """Every violation found."""


class InvalidMutatedPod(PodMutationHookError):
    """The mutation hook returned a pod the API server would refuse.

    ``field`` and ``violations`` as for :class:`InvalidPod`.
    """

    def __init__(self, violations: Sequence[_Violation]) -> None:
        super().__init__(
            _refusal("the pod mutation hook returned a pod the API server refuses", violations)
        )
        self.field = violations[0].field
        """The first offending field."""
        self.violations = tuple(violations)
        """Every violation found."""


def workload_command_args(workload_json: str | Mapping[str, Any]) -> list[str]:
    """The container ``args`` that run one Airflow 3 workload (task or callback).

    ``workload_json`` is the workload's JSON (``workload.model_dump_json()``), or a
    mapping to serialise. The JSON carries the Execution API token: see
    :mod:`k8s_workloads.payload` to keep it out of the pod spec.
    """
    if isinstance(workload_json, Mapping):
        text = json.dumps(workload_json, separators=(",", ":"))
    elif isinstance(workload_json, str):
        text = workload_json
    else:
        raise TypeError(
            f"workload_json must be a JSON string or a mapping, got {type(workload_json).__name__}"
        )
    return ["python", "-m", EXECUTE_WORKLOAD_MODULE, "--json-string", text]


# executor_callbacks/<dag_id>/<run_id>/<callback uuid>, as Airflow 3.3 writes log paths of
# callbacks; run ids may hold '/' in theory, dag ids may not.
_CALLBACKS_FOLDER = "executor_callbacks/"
_LOG_SUFFIX = ".log"


def parse_callback_log_path(log_path: str | None) -> tuple[str, str, str] | None:
    """(dag_id, run_id, callback_id) from a callback's log path, or None if it is not one.

    The path is ``[<anything>/]executor_callbacks/<dag_id>/<run_id>/<callback_id>[.log]``:
    the dag id is one segment, the callback id the last (less ``.log``), the run id all
    between (it may hold ``/``). Where ``executor_callbacks/`` appears more than once,
    the last that fits wins. Neither the run id nor what precedes the folder holds a
    newline. Linear in the path's length (a regular expression took 49 s on
    ``"executor_callbacks/" * 8000``).
    """
    if not log_path:
        return None
    last_slash = log_path.rfind("/")
    callback = log_path[last_slash + 1 :]
    if last_slash < 0 or not callback:
        return None
    first_newline = log_path.find("\n")
    newline_in_run_from = log_path.rfind("\n", 0, last_slash)  # a run id after it has none
    found: tuple[int, int] | None = None
    at = log_path.find(_CALLBACKS_FOLDER)
    while at >= 0:
        starts_a_segment = at == 0 or (log_path[at - 1] == "/" and not 0 <= first_newline < at)
        dag_start = at + len(_CALLBACKS_FOLDER)
        if starts_a_segment:
            dag_end = log_path.find("/", dag_start)
            if dag_end > dag_start and last_slash > dag_end + 1 > newline_in_run_from:
                found = dag_start, dag_end
        at = log_path.find(_CALLBACKS_FOLDER, at + 1)
    if found is None:
        return None
    dag_start, dag_end = found
    if callback.endswith(_LOG_SUFFIX) and len(callback) > len(_LOG_SUFFIX):
        callback = callback[: -len(_LOG_SUFFIX)]
    return log_path[dag_start:dag_end], log_path[dag_end + 1 : last_slash], callback


@dataclasses.dataclass(frozen=True)
class _Layer:
    """A template or pod_override, checked against the schema and copied for merging."""

    manifest: Manifest
    complete: bool
    """Every field the schema requires is there (else the merged pod is checked whole)."""


def _layer(value: object, source: str, secrets: Sequence[object]) -> _Layer:
    manifest, complete, violations = checked_layer(value)
    if violations:
        raise InvalidPod(source, _masked(violations, [value, *secrets]))
    return _Layer(manifest, complete)


def _masked(violations: Sequence[_Violation], where: Sequence[object]) -> list[_Violation]:
    """The violations, with every Execution API token found in ``where`` masked."""
    # payload imports this module; the import waits for the (rare) error.
    from k8s_workloads.payload import token_masker  # noqa: PLC0415

    mask = token_masker(where)
    return [
        type(violation)(mask(violation.field), mask(str(violation)[len(violation.field) + 2 :]))
        for violation in violations
    ]


def _check_arguments(*, namespace: object, name: object, args: object, image: object) -> None:
    """Refuse what the builder's own arguments would put wrong in the pod.

    Its other values are labels and annotations it writes (valid by construction, or the
    key's fields); the naming rules on all of them are checked on the finished pod.
    """
    found: list[_Violation] = []
    if not isinstance(namespace, str):
        found.append(SchemaViolation("metadata.namespace", "must be a string"))
    if not isinstance(name, str):
        found.append(SchemaViolation("metadata.name", "must be a string"))
    if image is not None and not isinstance(image, str):
        found.append(SchemaViolation("spec.containers[0].image", "must be a string"))
    if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
        found.append(SchemaViolation("spec.containers[0].args", "must be a list of strings"))
    elif not all(type(arg) is str for arg in args):
        container = {"name": BASE_CONTAINER_NAME, "args": list(args)}
        found += pod_schema_errors({"spec": {"containers": [container]}})
    if found:
        raise InvalidPod("the builder's arguments", _masked(found, [args]))


def _override_image(pod_override: Manifest | None) -> str | None:
    # The provider reads pod_override.spec.containers[0].image inside a bare try.
    containers = as_list(as_map(as_map(pod_override).get("spec")).get("containers"))
    image = as_map(containers[0]).get("image") if containers else None
    return image if isinstance(image, str) and image else None


def _fit_pod_name(name: str, rng: random.Random | None) -> str:
    if len(name) <= POD_NAME_MAX_LENGTH:
        return name
    warnings.warn(
        f"pod_id supplied is longer than {POD_NAME_MAX_LENGTH} characters; "
        "truncating and adding unique suffix.",
        UserWarning,
        stacklevel=3,  # the caller of construct_task_pod / construct_callback_pod
    )
    return add_unique_suffix(name=name, max_len=POD_NAME_MAX_LENGTH, rng=rng)


def _apply_hook(manifest: Manifest, hook: MutationHook) -> Manifest:
    try:
        returned = hook(manifest)
    except Exception as error:  # any failure of user code is reported, typed, with its cause
        raise PodMutationHookError(
            f"the pod mutation hook raised {shown(error, limit=_ERROR_LENGTH)}"
        ) from error
    result = manifest if returned is None else returned
    if not isinstance(result, dict):
        raise PodMutationHookError(
            f"the pod mutation hook returned {type(result).__name__}, not a manifest"
        )
    return result


# Labels the executor writes later to stop reading a pod (revoked, or done): on a new pod
# every event would be ignored, adoption would skip it, and after a 410 the re-list would
# report its running workload vanished. No template, override or hook may set them.
_HIDING_LABELS = (POD_REVOKED_LABEL, POD_EXECUTOR_DONE_LABEL)


@dataclasses.dataclass(frozen=True)
class _Identity:
    """What the watcher decodes, which neither the template, override nor hook may change."""

    annotations: Mapping[str, str]
    labels: Mapping[str, str]
    forbidden_annotations: Sequence[str]
    forbidden_labels: Sequence[str]

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


def _dynamic_pod(
    *,
    namespace: str,
    name: str,
    annotations: Mapping[str, str],
    labels: Mapping[str, str],
    args: Sequence[str],
    image: str | None,
) -> Manifest:
    """The executor's own layer; new dicts throughout (the identity keeps the originals)."""
    container: Manifest = {"name": BASE_CONTAINER_NAME, "args": list(args)}
    if image is not None:
        container["image"] = image
    container["env"] = [dict(EXECUTOR_POD_ENV)]
    return {
        "metadata": {
            "namespace": namespace,
            "annotations": dict(annotations),
            "name": name,
            "labels": dict(labels),
        },
        "spec": {"containers": [container]},
    }


def _violations(pod: Manifest, *, whole: bool) -> list[_Violation]:
    """The naming rules always; the schema too when the layers did not settle it."""
    found: list[_Violation] = []
    if whole and not is_pod_schema_valid(pod):
        found += pod_schema_errors(pod)
    if not is_valid_manifest(pod):
        reported = {violation.field for violation in found}
        found += [rule for rule in validate_manifest(pod) if rule.field not in reported]
    return found


def _finish(
    template: _Layer,
    dynamic: Manifest,
    override: _Layer | None,
    *,
    hook: MutationHook | None,
    identity: _Identity,
    secrets: Sequence[object],
) -> Manifest:
    try:
        merged = merge_pair(
            merge_pair(template.manifest, dynamic), None if override is None else override.manifest
        )
    except PodReconciliationError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        raise PodReconciliationError(
            f"the pods could not be merged: {shown(error, limit=_ERROR_LENGTH)}"
        ) from error
    identity.check(merged, stage="the template or pod_override", error=PodReconciliationError)
    # Checked layers merge into a pod of the schema's types (every merge rule takes a
    # field's value from one side, or joins two values of the same type); only a layer
    # missing a required field, which the merge may or may not fill, needs the whole pod
    # checked again. The naming rules depend on what the merge chose: always checked.
    incomplete = not template.complete or (override is not None and not override.complete)
    violations = _violations(merged, whole=incomplete)
    if violations:
        source = "the API server would refuse the pod"
        raise InvalidPod(source, _masked(violations, [merged, *secrets]))
    if hook is None:
        return merged
    # Every layer is a private copy, so the merged pod shares nothing with the caller's
    # inputs or the identity: the hook may keep references or mutate it in place.
    final = _apply_hook(merged, hook)
    identity.check(final, stage="the pod mutation hook", error=PodMutationHookError)
    violations = _violations(final, whole=True)
    if violations:
        raise InvalidMutatedPod(_masked(violations, [final, *secrets]))
    return final


def construct_task_pod(
    *,
    namespace: str,
    scheduler_job_id: str | int,
    pod_id: str,
    dag_id: str,
    task_id: str,
    kube_image: str | None,
    try_number: int,
    args: Sequence[str],
    airflow_version: VersionLike,
    run_id: str | None = None,
    map_index: int = -1,
    date: datetime.datetime | None = None,
    pod_override: Mapping[str, Any] | None = None,
    base_worker_pod: Mapping[str, Any] | None = None,
    mutation_hook: MutationHook | None = None,
    logical_date_key: str = LOGICAL_DATE_KEY,
    rng: random.Random | None = None,
) -> Manifest:
    """The manifest of a task instance's worker pod (a new dict, safe to mutate).

    A ``pod_id`` over 63 characters is cut and given a new random suffix (with a
    ``UserWarning``, as the provider). The image is the override's first container's, if
    set, else ``kube_image``.

    The pod returned always passes :func:`~k8s_workloads.validation.validate_manifest`
    and the Kubernetes 1.37 Pod schema (:mod:`k8s_workloads.schema`). Template and
    override values of the wrong type are coerced where the provider's loader coerces
    them unambiguously (an integer for a string field, ``"600"`` or ``600.0`` for an
    integer field) and refused otherwise (``hostNetwork: "False,"``, which the
    provider's loader reads as true).

    Raises :class:`~k8s_workloads.keys.InvalidKey` (naming the field) for ids, a
    ``try_number`` or a ``map_index`` no task instance key can hold; :class:`InvalidPod`
    (a :class:`PodReconciliationError`) when the pod would break a Kubernetes rule;
    :class:`PodReconciliationError` when the layers cannot be merged or the
    template/override overwrite the pod's identity; and :class:`PodMutationHookError`
    (:class:`InvalidMutatedPod` for an invalid pod) when the hook fails or does.
    """
    # The identity the watcher decodes must be a key: try_number 10**70 or -5, or
    # map_index -2, would give a pod it cannot read back (or reads as another task).
    TaskInstanceKey(dag_id, task_id, run_id or None, try_number, map_index)
    secrets = (args,)
    _check_arguments(namespace=namespace, name=pod_id, args=args, image=kube_image)
    pod_id = _fit_pod_name(pod_id, rng)
    template = _layer(
        {} if base_worker_pod is None else base_worker_pod, "base_worker_pod", secrets
    )
    override = None if pod_override is None else _layer(pod_override, "pod_override", secrets)

    annotations = {DAG_ID_KEY: dag_id, TASK_ID_KEY: task_id, TRY_NUMBER_KEY: str(try_number)}
    if map_index >= 0:
        annotations[MAP_INDEX_KEY] = str(map_index)
    if date:
        annotations[logical_date_key] = date.isoformat()
    if run_id:
        annotations[RUN_ID_KEY] = run_id
    labels = build_labels_for_k8s_executor_pod(
        dag_id=dag_id,
        task_id=task_id,
        try_number=try_number,
        airflow_worker=scheduler_job_id,
        map_index=map_index,
        logical_date=date,
        run_id=run_id,
        airflow_version=airflow_version,
        logical_date_key=logical_date_key,
    )
    dynamic = _dynamic_pod(
        namespace=namespace,
        name=pod_id,
        annotations=annotations,
        labels=labels,
        args=args,
        image=_override_image(None if override is None else override.manifest) or kube_image,
    )
    identity = _Identity(
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
    return _finish(
        template, dynamic, override, hook=mutation_hook, identity=identity, secrets=secrets
    )


def callback_pod_name(callback_id: str, *, rng: random.Random | None = None) -> str:
    """``callback-<first 8 hex digits of the id>-<8 random [a-z0-9]>``: 26 characters."""
    return _callback_pod_name(CallbackKey(callback_id), rng)


def _callback_pod_name(key: CallbackKey, rng: random.Random | None) -> str:
    return add_unique_suffix(name=f"callback-{key.id.replace('-', '')[:8]}", rng=rng)


def construct_callback_pod(
    *,
    callback_id: str,
    namespace: str,
    scheduler_job_id: str | int,
    kube_image: str | None,
    args: Sequence[str],
    airflow_version: VersionLike,
    base_worker_pod: Mapping[str, Any] | None = None,
    dag_id: str | None = None,
    run_id: str | None = None,
    pod_id: str | None = None,
    mutation_hook: MutationHook | None = None,
    rng: random.Random | None = None,
) -> Manifest:
    """The manifest of a callback workload's pod (Airflow 3.3+; a new dict).

    Annotated ``callback_id=<id>`` (and ``dag_id`` / ``run_id`` when known; see
    :func:`parse_callback_log_path`), labelled ``airflow-workload-type=callback``,
    ``kubernetes_executor=True``, ``airflow-worker=<job id>`` and ``airflow_version``;
    never task annotations. Merged over the global pod template with the task rules; as
    for tasks, a configured ``kube_image`` wins over the template's image, and the pod
    returned always passes the naming rules and the 1.37 schema. Raises
    :class:`~k8s_workloads.compat.CallbackWorkloadsUnsupported` below Airflow 3.3,
    :class:`~k8s_workloads.keys.InvalidKey` for an id that is not a UUID, and the errors
    of :func:`construct_task_pod` (:class:`InvalidPod` first among them).
    """
    require_callback_support(airflow_version)
    key = CallbackKey(callback_id)
    secrets = (args,)
    _check_arguments(namespace=namespace, name=pod_id or "", args=args, image=kube_image)
    name = _fit_pod_name(pod_id or _callback_pod_name(key, rng), rng)
    identity_annotations = key_to_annotations(key)
    annotations = dict(identity_annotations)
    if dag_id:
        annotations[DAG_ID_KEY] = dag_id
    if run_id:
        annotations[RUN_ID_KEY] = run_id
    labels = build_labels_for_callback_pod(
        scheduler_job_id=scheduler_job_id, airflow_version=airflow_version
    )
    dynamic = _dynamic_pod(
        namespace=namespace,
        name=name,
        annotations=annotations,
        labels=labels,
        args=args,
        image=kube_image,
    )
    identity = _Identity(
        annotations=identity_annotations,
        labels={
            label: labels[label]
            for label in (WORKLOAD_TYPE_LABEL, AIRFLOW_WORKER_LABEL, KUBERNETES_EXECUTOR_LABEL)
        },
        forbidden_annotations=(TASK_ID_KEY, TRY_NUMBER_KEY, MAP_INDEX_KEY),
        forbidden_labels=(TASK_ID_KEY, TRY_NUMBER_KEY, MAP_INDEX_KEY, *_HIDING_LABELS),
    )
    template = _layer(
        {} if base_worker_pod is None else base_worker_pod, "base_worker_pod", secrets
    )
    return _finish(template, dynamic, None, hook=mutation_hook, identity=identity, secrets=secrets)

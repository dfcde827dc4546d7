"""Worker pod manifests for task instances and callbacks.

:func:`construct_task_pod` gives, for the same inputs, the manifest the provider's
``PodGenerator.construct_pod`` followed by ``sanitize_for_serialization`` gives: the same
name handling, image precedence, annotations, labels, ``base`` container and merge chain
(template → dynamic pod → ``pod_override``). :func:`construct_callback_pod` builds the
minimal pod for an Airflow 3.3 ``ExecuteCallback``. Both then apply an optional mutation
hook and check that the identity the watcher decodes is still on the pod.
:class:`PodTemplate` prepares a template (and each override) once for many pods, and
:func:`construct_pod` builds a :class:`~k8s_workloads.states.KubernetesJob`'s pod with the
builder its key calls for.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar, cast

import msgspec

from k8s_workloads._display import shown
from k8s_workloads._json import as_list, as_map
from k8s_workloads._manifest import Manifest, PodReconciliationError, clean_manifest
from k8s_workloads.codec import key_to_annotations
from k8s_workloads.compat import AirflowVersion, VersionLike, require_callback_support
from k8s_workloads.keys import AIRFLOW_INT_MAX, CallbackKey, TaskInstanceKey
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
    _safe_label_of_str,
    _task_labels,
    _version_label_of_str,
    add_unique_suffix,
    build_labels_for_callback_pod,
    build_labels_for_k8s_executor_pod,
    create_unique_id,
    datetime_to_label_safe_datestring,
)
from k8s_workloads.reconcile import merge_pair
from k8s_workloads.redaction import token_masker
from k8s_workloads.schema import (
    SchemaViolation,
    checked_layer,
    is_pod_schema_valid,
    pod_schema_errors,
)
from k8s_workloads.validation import (
    _DNS1123_SUBDOMAIN,
    POD_NAME_MAX_LENGTH,
    TOTAL_ANNOTATION_SIZE_LIMIT_BYTES,
    NamingRuleViolation,
    is_dns1123_label,
    is_label_value,
    is_valid_manifest,
    validate_manifest,
)

if TYPE_CHECKING:
    import datetime
    import random

    from k8s_workloads.states import KubernetesJob

_T = TypeVar("_T")

__all__ = [
    "BASE_CONTAINER_NAME",
    "EXECUTE_WORKLOAD_MODULE",
    "EXECUTOR_POD_ENV",
    "InvalidMutatedPod",
    "InvalidPod",
    "MutationHook",
    "PodMutationHookError",
    "PodTemplate",
    "callback_pod_name",
    "construct_callback_pod",
    "construct_pod",
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
        stacklevel=4,  # the caller of construct_task_pod, PodTemplate.task_pod ...
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


@dataclasses.dataclass(frozen=True)
class _Identity:
    """What the watcher decodes, which neither the template, override nor hook may change."""

    annotations: Mapping[str, str]
    labels: Mapping[str, str]
    forbidden_annotations: Sequence[str]
    forbidden_labels: Sequence[str]

    def kept_by(
        self, plan: _Plan, *, annotations: Mapping[str, str], labels: Mapping[str, str]
    ) -> bool:
        """Whether a planned pod keeps this identity whatever :meth:`check` would find.

        The pod's labels and annotations are ``{**template's, **the pod's own,
        **override's}``: when no layer names a key of the identity or a forbidden one, and
        the pod's own hold no forbidden key, the pod carries exactly its own identity.
        """
        layer_annotations = plan.layer_annotation_keys
        layer_labels = plan.layer_label_keys
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


def _dynamic_layer(
    *,
    namespace: str,
    name: str,
    annotations: dict[str, str],
    labels: dict[str, str],
    args: list[str],
    image: str | None,
) -> Manifest:
    """The executor's own layer, holding the given objects themselves."""
    container: Manifest = {"name": BASE_CONTAINER_NAME, "args": args}
    if image is not None:
        container["image"] = image
    container["env"] = [dict(EXECUTOR_POD_ENV)]
    return {
        "metadata": {
            "namespace": namespace,
            "annotations": annotations,
            "name": name,
            "labels": labels,
        },
        "spec": {"containers": [container]},
    }


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
    return _dynamic_layer(
        namespace=namespace,
        name=name,
        annotations=dict(annotations),
        labels=dict(labels),
        args=list(args),
        image=image,
    )


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
    """The general build: the merge chain run on this pod's layers, then every check."""
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
    return _hooked(merged, hook, identity, secrets)


def _hooked(
    merged: Manifest, hook: MutationHook | None, identity: _Identity, secrets: Sequence[object]
) -> Manifest:
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


# --- prepared layers: the merge worked out once per template and override ----------------
#
# The executor's own layer always has the same shape (a name, a namespace, labels,
# annotations and one ``base`` container with args, env and maybe an image); only its
# values change from pod to pod. So the merge chain template -> dynamic -> override is run
# once, on a probe layer whose values are unique marker objects, and the result is turned
# into a function that builds that pod as one nested literal with this pod's values where
# the markers landed. Labels and annotations are the merge's unions, ``{**template's,
# **the pod's, **override's}``, exactly what the two merge steps give. The pod it returns
# is new throughout (a literal evaluated per call): nothing is shared with another pod,
# the template, or the caller's inputs.
#
# The probe pod is checked against the schema and the naming rules once: a pod of the
# same shape, with values of the same types, passes the schema whenever the probe does,
# and of the naming rules only those on the values that change are checked per pod
# (name, namespace, labels, annotations, and that their strings encode as UTF-8).
# The plan is only for probe values that are all truthy (the merge keeps a template's
# value over a falsy one): an empty args list, image or name takes the general build.

_PLAN_AFTER_USES = 2
"""A layer pair is planned on its second pod: a one-off override is merged directly."""
_CACHED_TEMPLATES = 16
_CACHED_OVERRIDES = 64
_PLAN_PARAMETERS = ("namespace", "name", "annotations", "labels", "args", "image")


@dataclasses.dataclass(frozen=True)
class _Plan:
    build: Callable[[str, str, dict[str, str], dict[str, str], list[str], str | None], Manifest]
    template_labels: Mapping[str, str]
    override_labels: Mapping[str, str]
    template_annotations: Mapping[str, str]
    override_annotations: Mapping[str, str]
    layer_label_keys: frozenset[str]
    layer_annotation_keys: frozenset[str]
    layer_annotation_chars: int
    """The characters of the layers' annotation keys and values, an upper bound of what
    they add to a pod's annotations."""
    keeps_task_identity: bool
    """No layer sets a label or annotation a task pod's identity holds or must not hold."""


class _NotLiteral(Exception):
    """A value the literal writer does not write exactly: take the general build."""


def _literal(value: object, slots: Mapping[int, str], out: list[str]) -> None:
    slot = slots.get(id(value))
    if slot is not None:
        out.append(slot)
        return
    kind = type(value)
    if kind is dict:
        out.append("{")
        for key, item in cast("dict[object, object]", value).items():
            if type(key) is not str:
                raise _NotLiteral
            out.append(str.__repr__(key))
            out.append(":")
            _literal(item, slots, out)
            out.append(",")
        out.append("}")
    elif kind is list:
        out.append("[")
        for item in cast("list[object]", value):
            _literal(item, slots, out)
            out.append(",")
        out.append("]")
    elif kind is str:
        out.append(str.__repr__(value))
    elif kind is bool:
        out.append("True" if value else "False")
    elif kind is int:
        out.append(int.__repr__(value))
    elif kind is float and math.isfinite(value):  # type: ignore[arg-type]
        out.append(float.__repr__(value))
    else:
        raise _NotLiteral


def _marker(what: str) -> str:
    # A new string object (made at run time, never interned), found again by identity.
    return f"\x00k8s-workloads-probe-{what}"


def _labels_of(layer: _Layer | None, field: str) -> dict[str, str]:
    manifest = {} if layer is None else layer.manifest
    return cast("dict[str, str]", dict(as_map(as_map(manifest.get("metadata")).get(field))))


def _make_plan(template: _Layer, override: _Layer | None, *, image: bool) -> _Plan | None:
    """The compiled build of this layer pair, or None where the general build must run."""
    probe_image = _marker("image") if image else None
    probe = {
        "namespace": _marker("namespace"),
        "name": _marker("name"),
        "annotations": {_marker("annotation"): "v"},
        "labels": {_marker("label"): "v"},
        "args": [_marker("args")],
    }
    dynamic = _dynamic_layer(**probe, image=probe_image)  # type: ignore[arg-type]
    try:
        merged = merge_pair(
            merge_pair(template.manifest, dynamic), None if override is None else override.manifest
        )
    except (TypeError, ValueError, KeyError, AttributeError):  # the general build reports it
        return None
    plan_maps = {
        field: (_labels_of(template, field), _labels_of(override, field))
        for field in ("labels", "annotations")
    }
    metadata = as_map(merged.get("metadata"))
    slots = {id(value): name for name, value in probe.items()}
    if probe_image is not None:
        slots[id(probe_image)] = "image"
    for field, (base, client) in plan_maps.items():
        found = metadata.get(field)
        expected = {**base, **probe[field], **client}  # type: ignore[dict-item]
        if type(found) is not dict or list(found.items()) != list(expected.items()):
            return None
        slots[id(found)] = field
    out: list[str] = []
    try:
        _literal(merged, slots, out)
        source = f"def build({', '.join(_PLAN_PARAMETERS)}):\n    return {''.join(out)}\n"
        scope: dict[str, Any] = {"__builtins__": {}}
        # The source is only literals written above (repr of exact str, int, float and
        # bool values, dict and list displays) and the parameter names: no user text runs.
        exec(compile(source, "<k8s_workloads prepared pod>", "exec"), scope)  # noqa: S102
    except (_NotLiteral, RecursionError, MemoryError, SyntaxError, ValueError):
        return None
    build = scope["build"]
    sample = build(
        "default",
        "pod",
        {**plan_maps["annotations"][0], **plan_maps["annotations"][1]},
        {**plan_maps["labels"][0], **plan_maps["labels"][1]},
        ["true"],
        "image" if image else None,
    )
    incomplete = not template.complete or (override is not None and not override.complete)
    if not is_valid_manifest(sample) or (incomplete and not is_pod_schema_valid(sample)):
        return None  # every pod of this pair would be refused: the general build says why
    layer_label_keys = frozenset(plan_maps["labels"][0]) | frozenset(plan_maps["labels"][1])
    layer_annotation_keys = frozenset(plan_maps["annotations"][0]) | frozenset(
        plan_maps["annotations"][1]
    )
    return _Plan(
        build,
        template_labels=plan_maps["labels"][0],
        override_labels=plan_maps["labels"][1],
        template_annotations=plan_maps["annotations"][0],
        override_annotations=plan_maps["annotations"][1],
        layer_label_keys=layer_label_keys,
        layer_annotation_keys=layer_annotation_keys,
        layer_annotation_chars=sum(
            len(key) + len(value)
            for annotations in plan_maps["annotations"]
            for key, value in annotations.items()
        ),
        keeps_task_identity=layer_label_keys.isdisjoint(_TASK_IDENTITY_LABELS)
        and layer_annotation_keys.isdisjoint(_TASK_IDENTITY_ANNOTATIONS),
    )


def _private(layer: _Layer) -> _Layer:
    return _Layer(clean_manifest(layer.manifest), layer.complete)


class _Prepared:
    """A template and maybe an override, checked, with their plans made on demand."""

    def __init__(self, template: _Layer, override: _Layer | None) -> None:
        self.template = template
        self.override = override
        self.override_image = None if override is None else _override_image(override.manifest)
        self._uses = 0
        self._plans: dict[bool, _Plan | None] = {}

    def plan(self, *, image: bool) -> _Plan | None:
        plan = self._plans.get(image, _UNPLANNED)
        if plan is not _UNPLANNED:
            return plan  # type: ignore[return-value]
        self._uses += 1
        if self._uses < _PLAN_AFTER_USES:
            return None
        made = _make_plan(self.template, self.override, image=image)
        self._plans[image] = made
        return made

    def build(
        self,
        *,
        namespace: str,
        name: str,
        annotations: dict[str, str],
        labels: dict[str, str],
        args: Sequence[str],
        image: str | None,
        hook: MutationHook | None,
        identity: _Identity,
        secrets: Sequence[object],
    ) -> Manifest:
        plan = (
            self.plan(image=image is not None)
            if namespace and name and args and labels and annotations and image != ""
            else None
        )
        if plan is None:
            dynamic = _dynamic_pod(
                namespace=namespace,
                name=name,
                annotations=annotations,
                labels=labels,
                args=args,
                image=image,
            )
            # The layers are kept for many pods: the merge shares their values, so each
            # pod merges its own copies.
            return _finish(
                _private(self.template),
                dynamic,
                None if self.override is None else _private(self.override),
                hook=hook,
                identity=identity,
                secrets=secrets,
            )
        merged = plan.build(
            namespace,
            name,
            {**plan.template_annotations, **annotations, **plan.override_annotations},
            {**plan.template_labels, **labels, **plan.override_labels},
            list(args),
            image,
        )
        if not identity.kept_by(plan, annotations=annotations, labels=labels):
            identity.check(
                merged, stage="the template or pod_override", error=PodReconciliationError
            )
        strings = (namespace, name, image, args, labels, annotations)
        if not is_valid_manifest(merged, strings_of=strings, containers=False):
            incomplete = not self.template.complete or (
                self.override is not None and not self.override.complete
            )
            violations = _violations(merged, whole=incomplete)
            source = "the API server would refuse the pod"
            raise InvalidPod(source, _masked(violations, [merged, *secrets]))
        return _hooked(merged, hook, identity, secrets)


_UNPLANNED = object()
_content = msgspec.msgpack.Encoder().encode
_snapshot = msgspec.msgpack.Decoder().decode
_NOT_ENCODABLE = (TypeError, ValueError, OverflowError, RecursionError, msgspec.MsgspecError)


class _ByContent(Generic[_T]):
    """A small bounded cache of values made from a manifest, found by its content.

    The key is the manifest's msgpack encoding (which tells ``True`` from ``1`` and
    ``1.0``, and string keys from others), and a hit also needs the manifest to equal the
    plain copy kept (a tuple, a set or a NaN is never equal to it): so a value whose
    build could differ from the cached one is never served from it. Manifests msgpack
    cannot encode are not cached.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[bytes, tuple[object, _T]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, manifest: object, make: Callable[[], _T]) -> _T:
        try:
            key = _content(manifest)
        except _NOT_ENCODABLE:
            return make()
        entry = self._entries.get(key)
        if entry is not None and entry[0] == manifest:
            return entry[1]
        made = make()  # raises for a refused manifest, which is not cached
        snapshot = _snapshot(key)
        if snapshot == manifest:
            with self._lock:
                self._entries[key] = (snapshot, made)
                while len(self._entries) > self._size:
                    self._entries.popitem(last=False)
        return made


class PodTemplate:
    """A worker pod template cleaned and checked once, for building many pods.

    ``base_worker_pod`` is the manifest every pod is merged over (the provider's
    ``pod_template_file``, loaded; None: no template). It is copied, cleaned and checked
    against the Kubernetes 1.37 Pod schema here, once (raising :class:`InvalidPod` naming
    the field, as :func:`construct_task_pod` does); later changes to the mapping passed
    do not reach it. :meth:`task_pod` and :meth:`callback_pod` then build exactly the pods
    :func:`construct_task_pod` and :func:`construct_callback_pod` build over the same
    template, raising the same errors, in a fraction of the time: the merge is worked out
    once per template and ``pod_override`` (overrides are kept by content, a few dozen at
    most), and each pod only fills in its own values.

    Every pod returned is a new tree of dicts and lists that shares nothing with another
    pod, the template or the arguments: it may be mutated freely. Safe to share between
    threads.
    """

    def __init__(self, base_worker_pod: Mapping[str, Any] | None = None) -> None:
        layer = _layer({} if base_worker_pod is None else base_worker_pod, "base_worker_pod", ())
        self._init(layer)

    def _init(self, layer: _Layer) -> None:
        self._bare = _Prepared(layer, None)
        self._overrides: _ByContent[_Prepared] = _ByContent(_CACHED_OVERRIDES)

    @classmethod
    def _of_layer(cls, layer: _Layer) -> PodTemplate:
        template = cls.__new__(cls)
        template._init(layer)  # noqa: SLF001 - its own class
        return template

    def _with_override(
        self, pod_override: Mapping[str, Any] | None, secrets: Sequence[object]
    ) -> _Prepared:
        if pod_override is None:
            return self._bare
        template = self._bare.template
        return self._overrides.get(
            pod_override,
            lambda: _Prepared(template, _layer(pod_override, "pod_override", secrets)),
        )

    def task_pod(
        self,
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
        mutation_hook: MutationHook | None = None,
        logical_date_key: str = LOGICAL_DATE_KEY,
        rng: random.Random | None = None,
    ) -> Manifest:
        """:func:`construct_task_pod` over this template (the same pod, the same errors)."""
        return _task_pod(
            self,
            namespace,
            scheduler_job_id,
            pod_id,
            dag_id,
            task_id,
            kube_image,
            try_number,
            args,
            airflow_version,
            run_id,
            map_index,
            date,
            pod_override,
            mutation_hook,
            logical_date_key,
            rng,
        )

    def callback_pod(
        self,
        *,
        callback_id: str,
        namespace: str,
        scheduler_job_id: str | int,
        kube_image: str | None,
        args: Sequence[str],
        airflow_version: VersionLike,
        dag_id: str | None = None,
        run_id: str | None = None,
        pod_id: str | None = None,
        mutation_hook: MutationHook | None = None,
        rng: random.Random | None = None,
    ) -> Manifest:
        """:func:`construct_callback_pod` over this template (the same pod and errors)."""
        return _callback_pod(
            self,
            callback_id=callback_id,
            namespace=namespace,
            scheduler_job_id=scheduler_job_id,
            kube_image=kube_image,
            args=args,
            airflow_version=airflow_version,
            dag_id=dag_id,
            run_id=run_id,
            pod_id=pod_id,
            mutation_hook=mutation_hook,
            rng=rng,
        )


_TEMPLATES: _ByContent[PodTemplate] = _ByContent(_CACHED_TEMPLATES)
_NO_TEMPLATE: list[PodTemplate] = []


def _template_of(
    source: PodTemplate | Mapping[str, Any] | None, secrets: Sequence[object]
) -> PodTemplate:
    """The prepared template for a builder's ``base_worker_pod`` (kept by content)."""
    if isinstance(source, PodTemplate):
        return source
    if source is None:
        if not _NO_TEMPLATE:
            _NO_TEMPLATE.append(PodTemplate())
        return _NO_TEMPLATE[0]
    return _TEMPLATES.get(
        source,
        lambda: PodTemplate._of_layer(_layer(source, "base_worker_pod", secrets)),  # noqa: SLF001
    )


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

    The template and override are prepared once (see :class:`PodTemplate`) and kept by
    content, so building many pods over the same ones costs little more than filling in
    each pod's values; build over a :class:`PodTemplate` to skip even the lookup.

    Raises :class:`~k8s_workloads.keys.InvalidKey` (naming the field) for ids, a
    ``try_number`` or a ``map_index`` no task instance key can hold; :class:`InvalidPod`
    (a :class:`PodReconciliationError`) when the pod would break a Kubernetes rule;
    :class:`PodReconciliationError` when the layers cannot be merged or the
    template/override overwrite the pod's identity; and :class:`PodMutationHookError`
    (:class:`InvalidMutatedPod` for an invalid pod) when the hook fails or does.
    """
    return _task_pod(
        base_worker_pod,
        namespace,
        scheduler_job_id,
        pod_id,
        dag_id,
        task_id,
        kube_image,
        try_number,
        args,
        airflow_version,
        run_id,
        map_index,
        date,
        pod_override,
        mutation_hook,
        logical_date_key,
        rng,
    )


_is_namespace = functools.lru_cache(maxsize=16)(is_dns1123_label)
"""A scheduler builds its pods in one namespace or a few: checked once each. Called with
exact ``str`` values only."""


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
    the labels are :func:`~k8s_workloads.labels.build_labels_for_k8s_executor_pod`'s)."""
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


_ARGS_TYPES = (list, tuple)
_VERSION_TYPES = (str, AirflowVersion)
_STR_TYPE = frozenset((str,))
_JOB_ID_TYPES = (str, int)
_DATE_KEYS = (LOGICAL_DATE_KEY, EXECUTION_DATE_KEY)
# The most characters the own annotations' keys can have (dag_id, task_id, try_number,
# map_index, a date key and run_id), for the annotations' size bound.
_OWN_ANNOTATION_KEY_CHARS = sum(
    len(key) for key in (DAG_ID_KEY, TASK_ID_KEY, TRY_NUMBER_KEY, MAP_INDEX_KEY, RUN_ID_KEY)
) + max(len(key) for key in _DATE_KEYS)


def _fast_task_pod(  # noqa: PLR0917 - the builder's values, positional for speed
    prepared: _Prepared,
    namespace: str,
    scheduler_job_id: str | int,
    pod_id: str,
    dag_id: str,
    task_id: str,
    kube_image: str | None,
    try_number: int,
    args: Sequence[str],
    airflow_version: VersionLike,
    run_id: str | None,
    map_index: int,
    date: datetime.datetime | None,
    mutation_hook: MutationHook | None,
    logical_date_key: str,
    secrets: Sequence[object],
) -> Manifest | _Prepared:
    """A planned task pod with only the checks its own values need, else ``prepared``.

    Called for values of exact types that pass the key and argument checks. The pod is
    the one :meth:`_Prepared.build` makes from the same values; what that build checks on
    the finished pod holds here by construction or by a check of the value itself:

    * the labels are valid: the layers' were checked with the plan, and the pod's own are
      :func:`make_safe_label_value`'s, a number's digits, ``True``, or a date label
      checked here; every key is a constant or the plan's;
    * the annotations' keys are constants or the plan's, their values strings, and their
      size is bounded by the characters of both (else: general path);
    * the identity is kept: no layer sets a key an identity holds or forbids
      (:attr:`_Plan.keeps_task_identity`), and the pod's own carry exactly the identity;
    * every string of the pod's own values is ASCII, so encodes (else: general path);
    * the name and namespace are checked here.

    Anything else (no plan yet, a name or namespace the rules refuse, a non-ASCII value,
    huge annotations) returns ``prepared`` and the general path builds, checks and
    reports as it always does.
    """
    image = prepared.override_image or kube_image
    plan = prepared._plans.get(image is not None)  # noqa: SLF001 - planned by build only
    # The label is made from the version's text, as airflow_version_label makes it.
    version = airflow_version if type(airflow_version) is str else str(airflow_version)
    if (
        plan is None
        or type(version) is not str
        or not plan.keeps_task_identity
        or not args
        or image == ""
        or _DNS1123_SUBDOMAIN.fullmatch(pod_id) is None  # at most 63 long (the caller's check)
        or not _is_namespace(namespace)
        or not "".join(args).isascii()
        or not (image is None or image.isascii())
        or not (dag_id.isascii() and task_id.isascii())
        or not (run_id is None or run_id.isascii())
    ):
        return prepared
    try_text = str(try_number)
    iso = date_label = None
    if date:
        iso = date.isoformat()
        date_label = datetime_to_label_safe_datestring(date)
        if not (type(iso) is str and iso.isascii() and is_label_value(date_label)):
            return prepared
    annotations = _task_annotations(
        dag_id, task_id, try_text, map_index, iso, run_id, logical_date_key
    )
    labels = _task_labels(
        dag_id=dag_id,
        task_id=task_id,
        try_number=try_text,
        version=_version_label_of_str(version),
        worker=str(scheduler_job_id),
        map_index=map_index,
        date_label=date_label,
        run_id=run_id,
        logical_date_key=logical_date_key,
        safe=_safe_label_of_str,
    )
    own_characters = sum(map(len, annotations.values())) + _OWN_ANNOTATION_KEY_CHARS
    if (own_characters + plan.layer_annotation_chars) * 4 > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES:
        return prepared
    if mutation_hook is None:
        # The two dicts are this call's own: the pod may hold them.
        if plan.template_annotations or plan.override_annotations:
            annotations = {**plan.template_annotations, **annotations, **plan.override_annotations}
        if plan.template_labels or plan.override_labels:
            labels = {**plan.template_labels, **labels, **plan.override_labels}
        return plan.build(namespace, pod_id, annotations, labels, list(args), image)
    identity = _task_identity(annotations, labels, map_index=map_index, run_id=run_id, date=date)
    merged = plan.build(
        namespace,
        pod_id,
        {**plan.template_annotations, **annotations, **plan.override_annotations},
        {**plan.template_labels, **labels, **plan.override_labels},
        list(args),
        image,
    )
    return _hooked(merged, mutation_hook, identity, secrets)


def _task_pod(  # noqa: PLR0917 - called positionally by the two builders, for speed
    template_source: PodTemplate | Mapping[str, Any] | None,
    namespace: str,
    scheduler_job_id: str | int,
    pod_id: str,
    dag_id: str,
    task_id: str,
    kube_image: str | None,
    try_number: int,
    args: Sequence[str],
    airflow_version: VersionLike,
    run_id: str | None,
    map_index: int,
    date: datetime.datetime | None,
    pod_override: Mapping[str, Any] | None,
    mutation_hook: MutationHook | None,
    logical_date_key: str,
    rng: random.Random | None,
) -> Manifest:
    secrets = (args,)
    prepared: _Prepared | None = None
    if (
        type(dag_id) is str
        and dag_id
        and type(task_id) is str
        and task_id
        and (run_id is None or type(run_id) is str)
        and type(try_number) is int
        and 0 <= try_number <= AIRFLOW_INT_MAX
        and type(map_index) is int
        and -1 <= map_index <= AIRFLOW_INT_MAX
        and type(namespace) is str
        and type(pod_id) is str
        and len(pod_id) <= POD_NAME_MAX_LENGTH
        and (kube_image is None or type(kube_image) is str)
        and type(args) in _ARGS_TYPES
        and set(map(type, args)) <= _STR_TYPE
        and type(airflow_version) in _VERSION_TYPES
        and type(scheduler_job_id) in _JOB_ID_TYPES
        and type(logical_date_key) is str
        and logical_date_key in _DATE_KEYS
    ):
        # Exactly the values every check below lets through: a valid key, the builder's
        # arguments of their types, a name that needs no cut. The fast path returns the
        # pod, or the prepared layers when the general path must build it.
        built = _fast_task_pod(  # positional: this is the path every pod takes
            _template_of(template_source, secrets)._with_override(pod_override, secrets),  # noqa: SLF001
            namespace,
            scheduler_job_id,
            pod_id,
            dag_id,
            task_id,
            kube_image,
            try_number,
            args,
            airflow_version,
            run_id,
            map_index,
            date,
            mutation_hook,
            logical_date_key,
            secrets,
        )
        if not isinstance(built, _Prepared):
            return built
        prepared = built
    # The identity the watcher decodes must be a key: try_number 10**70 or -5, or
    # map_index -2, would give a pod it cannot read back (or reads as another task).
    TaskInstanceKey(dag_id, task_id, run_id or None, try_number, map_index)
    _check_arguments(namespace=namespace, name=pod_id, args=args, image=kube_image)
    pod_id = _fit_pod_name(pod_id, rng)
    if prepared is None:
        prepared = _template_of(template_source, secrets)._with_override(pod_override, secrets)  # noqa: SLF001

    annotations = _task_annotations(
        dag_id,
        task_id,
        str(try_number),
        map_index,
        date.isoformat() if date else None,
        run_id,
        logical_date_key,
    )
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
    identity = _task_identity(annotations, labels, map_index=map_index, run_id=run_id, date=date)
    return prepared.build(
        namespace=namespace,
        name=pod_id,
        annotations=annotations,
        labels=labels,
        args=args,
        image=prepared.override_image or kube_image,
        hook=mutation_hook,
        identity=identity,
        secrets=secrets,
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
    returned always passes the naming rules and the 1.37 schema. The template is prepared
    once and kept by content, as for :func:`construct_task_pod`. Raises
    :class:`~k8s_workloads.compat.CallbackWorkloadsUnsupported` below Airflow 3.3,
    :class:`~k8s_workloads.keys.InvalidKey` for an id that is not a UUID, and the errors
    of :func:`construct_task_pod` (:class:`InvalidPod` first among them).
    """
    return _callback_pod(
        base_worker_pod,
        callback_id=callback_id,
        namespace=namespace,
        scheduler_job_id=scheduler_job_id,
        kube_image=kube_image,
        args=args,
        airflow_version=airflow_version,
        dag_id=dag_id,
        run_id=run_id,
        pod_id=pod_id,
        mutation_hook=mutation_hook,
        rng=rng,
    )


def _callback_pod(
    template_source: PodTemplate | Mapping[str, Any] | None,
    *,
    callback_id: str,
    namespace: str,
    scheduler_job_id: str | int,
    kube_image: str | None,
    args: Sequence[str],
    airflow_version: VersionLike,
    dag_id: str | None,
    run_id: str | None,
    pod_id: str | None,
    mutation_hook: MutationHook | None,
    rng: random.Random | None,
) -> Manifest:
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
    identity = _Identity(
        annotations=identity_annotations,
        labels={
            label: labels[label]
            for label in (WORKLOAD_TYPE_LABEL, AIRFLOW_WORKER_LABEL, KUBERNETES_EXECUTOR_LABEL)
        },
        forbidden_annotations=(TASK_ID_KEY, TRY_NUMBER_KEY, MAP_INDEX_KEY),
        forbidden_labels=(TASK_ID_KEY, TRY_NUMBER_KEY, MAP_INDEX_KEY, *_HIDING_LABELS),
    )
    prepared = _template_of(template_source, secrets)._bare  # noqa: SLF001
    return prepared.build(
        namespace=namespace,
        name=name,
        annotations=annotations,
        labels=labels,
        args=args,
        image=kube_image,
        hook=mutation_hook,
        identity=identity,
        secrets=secrets,
    )


def construct_pod(
    job: KubernetesJob[Any],
    *,
    namespace: str,
    scheduler_job_id: str | int,
    airflow_version: VersionLike,
    kube_image: str | None = None,
    base_worker_pod: PodTemplate | Mapping[str, Any] | None = None,
    args: Sequence[str] | None = None,
    pod_id: str | None = None,
    dag_id: str | None = None,
    run_id: str | None = None,
    mutation_hook: MutationHook | None = None,
    rng: random.Random | None = None,
) -> Manifest:
    """The worker pod of a job, built by the builder its key calls for.

    A :class:`~k8s_workloads.keys.TaskInstanceKey` gets :func:`construct_task_pod` (with
    the job's ``pod_override``; ``pod_id`` defaults to
    :func:`~k8s_workloads.labels.create_unique_id` of the dag and task ids), a
    :class:`~k8s_workloads.keys.CallbackKey` :func:`construct_callback_pod` (``pod_id``
    defaults to :func:`callback_pod_name`). The image is the job's ``kube_image``, else
    ``kube_image``; the container args are ``args``, else the job's ``command``.
    ``base_worker_pod`` is a manifest or a :class:`PodTemplate`.

    ``dag_id`` and ``run_id`` annotate a callback's pod; when None they are read from the
    log path of the workload in the job's command (as the executor does). A task's come
    from its key: passing them for a task job, or a ``pod_override`` on a callback job,
    raises :class:`ValueError`. Otherwise raises what the builder raises.
    """
    key = job.key
    image = job.kube_image or kube_image
    built_args = job.command if args is None else args
    if isinstance(key, CallbackKey):
        if job.pod_override is not None:
            raise ValueError("pod_override: callback pods take no pod_override")
        if dag_id is None and run_id is None:
            dag_id, run_id = _callback_ids(job.command)
        return _callback_pod(
            base_worker_pod,
            callback_id=key.id,
            namespace=namespace,
            scheduler_job_id=scheduler_job_id,
            kube_image=image,
            args=built_args,
            airflow_version=airflow_version,
            dag_id=dag_id,
            run_id=run_id,
            pod_id=pod_id,
            mutation_hook=mutation_hook,
            rng=rng,
        )
    if not isinstance(key, TaskInstanceKey):
        raise TypeError(
            f"job.key must be a TaskInstanceKey or a CallbackKey, got {type(key).__name__}"
        )
    for field, value in (("dag_id", dag_id), ("run_id", run_id)):
        if value is not None:
            raise ValueError(f"{field}: a task pod's {field} comes from its key")
    return _task_pod(
        base_worker_pod,
        namespace=namespace,
        scheduler_job_id=scheduler_job_id,
        pod_id=pod_id or create_unique_id(key.dag_id, key.task_id, rng=rng),
        dag_id=key.dag_id,
        task_id=key.task_id,
        kube_image=image,
        try_number=key.try_number,
        args=built_args,
        airflow_version=airflow_version,
        run_id=key.run_id,
        map_index=key.map_index,
        date=None,
        pod_override=job.pod_override,
        mutation_hook=mutation_hook,
        logical_date_key=LOGICAL_DATE_KEY,
        rng=rng,
    )


def _workload_json(args: Sequence[str]) -> str | None:
    """The workload JSON in an Airflow 3 workload's container args, or None."""
    for index, arg in enumerate(args[:-1]):
        if arg == "--json-string":
            return args[index + 1]
    return None


def _callback_ids(args: Sequence[str]) -> tuple[str | None, str | None]:
    """(dag_id, run_id) from the log path of the callback workload in ``args``, or Nones.

    Airflow 3.3 writes a callback's log path as ``executor_callbacks/<dag>/<run>/<id>``
    (:func:`parse_callback_log_path`); anything unreadable gives ``(None, None)``.
    """
    text = _workload_json(args)
    if text is None:
        return None, None
    try:
        workload = json.loads(text)
    except (ValueError, RecursionError):
        return None, None
    log_path = workload.get("log_path") if isinstance(workload, dict) else None
    parsed = parse_callback_log_path(log_path if isinstance(log_path, str) else None)
    if parsed is None:
        return None, None
    dag_id, run_id, _ = parsed
    return dag_id, run_id

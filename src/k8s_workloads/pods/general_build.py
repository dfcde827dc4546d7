"""The general build of a pod: its layers merged, every rule checked, the hook applied.

A pod is the merge chain template → the executor's own layer → ``pod_override`` (the
provider's ``PodGenerator.construct_pod``), checked against the naming rules and, where
a layer left it open, the Kubernetes 1.37 Pod schema; then the mutation hook, whose pod
is checked whole again. This is the path every pod can take: the prepared path of
:mod:`k8s_workloads.pods.prepared_build` gives the same pods faster and hands it what it cannot
vouch for.
"""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import attrs

from k8s_workloads.display import shown
from k8s_workloads.json_values import as_list, as_map
from k8s_workloads.pods.errors import (
    InvalidMutatedPod,
    InvalidPod,
    PodMutationHookError,
    _masked,
    _Violation,
)
from k8s_workloads.pods.labels import (
    add_unique_suffix,
)
from k8s_workloads.pods.manifest import Manifest, PodReconciliationError
from k8s_workloads.pods.reconcile import merge_pair
from k8s_workloads.pods.restart import _never_restarting
from k8s_workloads.pods.schema import (
    SchemaViolation,
    checked_layer,
    is_pod_schema_valid,
    pod_schema_errors,
)
from k8s_workloads.pods.termination import _saying_why
from k8s_workloads.pods.validation import (
    POD_NAME_MAX_LENGTH,
    is_valid_manifest,
    validate_manifest,
)
from k8s_workloads.pods.workload import BASE_CONTAINER_NAME, EXECUTOR_POD_ENV

if TYPE_CHECKING:
    import datetime
    import random
    from collections.abc import Mapping

    from k8s_workloads.compat import VersionLike
    from k8s_workloads.pods.identity import _Identity


_ERROR_LENGTH = 300  # of a caught error's repr in a message (it may echo a template value)


MutationHook: TypeAlias = Callable[[Manifest], "Manifest | None"]
"""Called with the final manifest; mutates it in place (returns None) or returns a new one.

Wrap an Airflow-style ``pod_mutation_hook(V1Pod)`` with
:func:`k8s_workloads.adapters.v1pod_mutation_hook`.
"""


@dataclasses.dataclass(frozen=True)
class _Layer:
    """A template or pod_override, checked against the schema and copied for merging."""

    manifest: Manifest
    complete: bool
    """Every field the schema requires is there (else the merged pod is checked whole)."""


def _incomplete(template: _Layer, override: _Layer | None) -> bool:
    """A layer lacks a field the schema requires: the merged pod is checked whole."""
    return not template.complete or (override is not None and not override.complete)


def _layer(value: object, source: str, secrets: Sequence[object]) -> _Layer:
    manifest, complete, violations = checked_layer(value)
    if violations:
        raise InvalidPod(source, _masked(violations, [value, *secrets]))
    return _Layer(manifest, complete)


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
        stacklevel=_callers_level(),
    )
    return add_unique_suffix(name=name, max_len=POD_NAME_MAX_LENGTH, rng=rng)


def _callers_level() -> int:
    """The ``stacklevel`` of the first caller outside the pod builders, for a warning
    raised by this function's caller: the line that asked for the pod, whichever
    entrance it took (``construct_task_pod``, ``construct_pod`` ...)."""
    frame = inspect.currentframe()
    frame = None if frame is None else frame.f_back  # the warning's own function: level 1
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith(__package__ + "."):
        frame = frame.f_back
        level += 1
    return level


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


@attrs.define
class _OwnValues:
    """A pod's own values: what the executor's layer holds between template and override.

    The general build merges them as a layer; a plan puts each at the places the probe's
    landed, by its place in this record. (A mutable slots class: the cheapest to make,
    once per pod; never changed after.)"""

    namespace: str
    name: str
    annotations: dict[str, str]
    labels: dict[str, str]
    args: Sequence[str]
    image: str | None


@attrs.define
class _TaskPodValues:
    """The arguments of :func:`~k8s_workloads.pods.build.construct_task_pod` but the
    template, as the builders pass them on. Made in one place, ``construct_task_pod``,
    positionally: by keyword it cost 0.45 µs more a pod (a sixth of a pod with no
    template), and every other entrance delegates to that function by keyword. A mutable
    slots class: the cheapest to make, once per pod; never changed after."""

    namespace: str
    scheduler_job_id: str | int
    pod_id: str
    dag_id: str
    task_id: str
    kube_image: str | None
    try_number: int
    args: Sequence[str]
    airflow_version: VersionLike
    run_id: str | None
    map_index: int
    date: datetime.datetime | None
    pod_override: Mapping[str, Any] | None
    mutation_hook: MutationHook | None
    logical_date_key: str
    rng: random.Random | None


def _dynamic_layer(own: _OwnValues) -> Manifest:
    """The executor's own layer, holding the given objects themselves (the general build
    gives it copies: the identity keeps the originals)."""
    container: Manifest = {"name": BASE_CONTAINER_NAME, "args": own.args}
    if own.image is not None:
        container["image"] = own.image
    container["env"] = [dict(EXECUTOR_POD_ENV)]
    return {
        "metadata": {
            "namespace": own.namespace,
            "annotations": own.annotations,
            "name": own.name,
            "labels": own.labels,
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


def _merged(template: _Layer, dynamic: Manifest, override: _Layer | None) -> Manifest:
    """The merge chain template → dynamic → override, the pod's restart policy and its
    base container's termination message policy (where the layers left it unset).

    Both paths build from what this returns (the prepared one on a probe's layers, once),
    so the rules applied after the merge are applied here. Raises what the merge raises.
    """
    merged = merge_pair(
        merge_pair(template.manifest, dynamic), None if override is None else override.manifest
    )
    return _saying_why(_never_restarting(merged))


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
        merged = _merged(template, dynamic, override)
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
    violations = _violations(merged, whole=_incomplete(template, override))
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
    # A hook may set any policy: the pod it returns never restarts either.
    final = _never_restarting(_apply_hook(merged, hook))
    identity.check(final, stage="the pod mutation hook", error=PodMutationHookError)
    violations = _violations(final, whole=True)
    if violations:
        raise InvalidMutatedPod(_masked(violations, [final, *secrets]))
    return final

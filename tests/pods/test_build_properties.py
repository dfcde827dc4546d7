"""Properties of every pod manifest construct_task_pod and construct_callback_pod build.

Over generated templates, overrides and hostile ids (Unicode, 500 characters, punctuation
only), every manifest is valid Kubernetes (our naming rules and the 1.37 schema, strictly),
decodes back to the workload it runs, is plain JSON, and is a new object: building never
changes the template, override or args, and shares no list or dict with them.

Over hostile templates, overrides and hooks (bad names, label keys and values, annotations
over 256 KiB, values of the wrong type, counters no key holds), a builder returns a pod
passing both checks or raises a typed error naming the field, without the token; never an
invalid pod, never another exception.
"""

from __future__ import annotations

import copy
import json
import random
import uuid
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from k8s_workloads.keys import CallbackKey, InvalidKey, TaskInstanceKey
from k8s_workloads.pods import (
    InvalidMutatedPod,
    InvalidPod,
    PodMutationHookError,
    construct_callback_pod,
    construct_task_pod,
    workload_command_args,
)
from k8s_workloads.pods.codec import annotations_to_key
from k8s_workloads.pods.labels import create_unique_id
from k8s_workloads.pods.reconcile import PodReconciliationError
from k8s_workloads.testing.strategies import (
    HostileHook,
    container_args,
    hostile_hooks,
    hostile_ids,
    hostile_names,
    hostile_run_ids,
    hostile_templates_and_overrides,
    huge_annotation_values,
    kube_images,
    namespaces,
    pod_templates,
    scheduler_job_ids,
    templates_and_overrides,
)
from tests.support.pod_builds import (
    TaskPodInputs,
    assert_valid_pod,
    containers_of,
    task_pod_inputs,
)

if TYPE_CHECKING:
    from k8s_workloads.pods.manifest import Manifest

AIRFLOW_VERSION = "3.3.2"


def _assert_independent(manifest: Manifest, *inputs: object) -> None:
    """The manifest shares no dict or list with the inputs, and is plain JSON."""
    given_ids = {id(found) for value in inputs for found in containers_of(value)}
    assert not any(id(found) in given_ids for found in containers_of(manifest))
    assert json.loads(json.dumps(manifest)) == manifest


def _scribble(value: object) -> None:
    """Empty every dict and list inside a JSON-like value, innermost first."""
    for found in reversed(list(containers_of(value))):
        if isinstance(found, (dict, list)):
            found.clear()


def _snapshot(*values: object) -> tuple[object, ...]:
    return copy.deepcopy(values)


@given(inputs=task_pod_inputs(), seed=st.integers(0, 2**32))
def test_task_pods_are_valid_and_decode_back(*, inputs: TaskPodInputs, seed: int) -> None:
    template, override, args = inputs.template, inputs.override, inputs.args
    rng = random.Random(seed)
    before = _snapshot(template, override, args)
    manifest = construct_task_pod(
        pod_id=create_unique_id(inputs.dag_id, inputs.task_id, rng=rng),
        rng=rng,
        **inputs.arguments(),
    )
    event(f"template: {template is not None}, override: {override is not None}")
    assert_valid_pod(manifest)
    metadata = manifest["metadata"]
    key = annotations_to_key(
        metadata["annotations"], metadata["labels"], airflow_version=AIRFLOW_VERSION
    )
    assert key == TaskInstanceKey(
        inputs.dag_id,
        inputs.task_id,
        inputs.run_id or None,
        inputs.try_number,
        inputs.map_index,
    )
    _assert_independent(manifest, template, override, args)
    assert _snapshot(template, override, args) == before
    _scribble(manifest)
    assert _snapshot(template, override, args) == before


@given(
    callback_id=st.uuids(),
    template=st.one_of(st.none(), pod_templates()),
    dag_id=st.one_of(st.none(), hostile_ids),
    run_id=st.one_of(st.none(), hostile_run_ids),
    kube_image=kube_images,
    args=container_args,
    namespace=namespaces,
    scheduler_job_id=scheduler_job_ids,
    seed=st.integers(0, 2**32),
)
def test_callback_pods_are_valid_and_decode_back(
    *,
    callback_id: uuid.UUID,
    template: Manifest | None,
    dag_id: str | None,
    run_id: str | None,
    kube_image: str | None,
    args: list[str],
    namespace: str,
    scheduler_job_id: str | int,
    seed: int,
) -> None:
    before = _snapshot(template, args)
    manifest = construct_callback_pod(
        callback_id=str(callback_id),
        namespace=namespace,
        scheduler_job_id=scheduler_job_id,
        kube_image=kube_image,
        args=args,
        airflow_version=AIRFLOW_VERSION,
        base_worker_pod=template,
        dag_id=dag_id,
        run_id=run_id,
        rng=random.Random(seed),
    )
    assert_valid_pod(manifest)
    metadata = manifest["metadata"]
    key = annotations_to_key(
        metadata["annotations"], metadata["labels"], airflow_version=AIRFLOW_VERSION
    )
    assert key == CallbackKey(str(callback_id))
    _assert_independent(manifest, template, args)
    assert _snapshot(template, args) == before
    _scribble(manifest)
    assert _snapshot(template, args) == before


# Identity annotations the executor's pod does not have when the task is unmapped and has
# no run id: a pod_override adding one would make the pod decode to another key (or, for a
# date, to none without the Airflow database), so construct_task_pod refuses it.
_ABSENT_IDENTITY = [
    ("map_index", "3"),
    ("run_id", "manual__someone-else"),
    ("logical_date", "2026-01-01T00:00:00+00:00"),
    ("execution_date", "2026-01-01T00:00:00+00:00"),
]


@given(
    pair=templates_and_overrides(valid=True),
    added=st.sampled_from(_ABSENT_IDENTITY),
    layer=st.sampled_from(["template", "override"]),
)
def test_layers_adding_identity_the_pod_lacks_are_refused(
    pair: tuple[Manifest | None, Manifest | None], added: tuple[str, str], layer: str
) -> None:
    template, override = (copy.deepcopy(pod) if pod is not None else {} for pod in pair)
    target = template if layer == "template" else override
    target.setdefault("metadata", {}).setdefault("annotations", {})[added[0]] = added[1]
    with pytest.raises(PodReconciliationError, match=added[0]):
        construct_task_pod(
            namespace="airflow",
            scheduler_job_id=1,
            pod_id="pod",
            dag_id="dag",
            task_id="task",
            kube_image="img",
            try_number=1,
            args=["run"],
            airflow_version=AIRFLOW_VERSION,
            run_id=None,
            map_index=-1,
            pod_override=override,
            base_worker_pod=template,
        )


# --------------------------------------------------------------------------------------
# Hostile inputs (issue 11, item 4): a valid pod or a typed error, nothing else.

# A made-up Execution API token (a JWT's shape), which no error message may show.
_TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJob3N0aWxlIn0.aG9zdGlsZS1zaWduYXR1cmUtdmFsdWUtMDAwMA"  # noqa: S105
_TOKEN_ARGS = workload_command_args({"token": _TOKEN, "ti": {"id": "x"}})
_REFUSALS = (InvalidPod, InvalidMutatedPod, InvalidKey)
"""The typed errors for a pod that would break a rule, or a key no pod can carry."""
_OTHER_TYPED = (PodReconciliationError, PodMutationHookError)
"""Identity overwritten, layers that cannot merge, a hook that raised."""


def _mostly(
    usual: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]
) -> st.SearchStrategy[Any]:
    """``usual`` four times in five, else ``hostile``: so that most pods meet one hazard."""
    return st.integers(0, 4).flatmap(lambda n: hostile if n == 0 else usual)


def _outcome(build: Callable[[], Manifest]) -> str:
    """Build, check the outcome, and name it: ``valid``, ``refused`` or ``other``."""
    refused: ValueError | None = None
    other: ValueError | None = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # pod ids over 63 are cut, with one
        try:
            manifest = build()
        except _REFUSALS as error:
            refused = error
        except _OTHER_TYPED as error:
            other = error
    if refused is not None:
        assert getattr(refused, "field", None), refused
        text = " ".join([str(refused), *map(str, getattr(refused, "violations", ()))])
        assert _TOKEN[:8] not in text
        assert len(str(refused)) < 3000
        return "refused"
    if other is not None:
        assert _TOKEN[:8] not in str(other)
        return "other"
    assert_valid_pod(manifest)
    return "valid"


def build_hostile_task_pod(
    *,
    pod_id: str,
    namespace: str,
    try_number: int,
    map_index: int,
    pair: tuple[Manifest | None, Manifest | None],
    hook: HostileHook | None,
) -> str:
    """One task pod from hostile inputs: its outcome (the pod, if any, checked valid)."""
    template, override = pair
    return _outcome(
        lambda: construct_task_pod(
            namespace=namespace,
            scheduler_job_id=1,
            pod_id=pod_id,
            dag_id="etl",
            task_id="load",
            kube_image="img:1",
            try_number=try_number,
            args=_TOKEN_ARGS,
            airflow_version=AIRFLOW_VERSION,
            run_id="manual__1",
            map_index=map_index,
            pod_override=override,
            base_worker_pod=template,
            mutation_hook=hook,
            rng=random.Random(0),
        )
    )


def build_hostile_callback_pod(
    *,
    pod_id: str | None,
    namespace: str,
    dag_id: str | None,
    template: Manifest | None,
    hook: HostileHook | None,
) -> str:
    """One callback pod from hostile inputs: its outcome."""
    return _outcome(
        lambda: construct_callback_pod(
            callback_id="019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e",
            namespace=namespace,
            scheduler_job_id=1,
            kube_image="img:1",
            args=_TOKEN_ARGS,
            airflow_version=AIRFLOW_VERSION,
            base_worker_pod=template,
            dag_id=dag_id,
            pod_id=pod_id,
            mutation_hook=hook,
            rng=random.Random(0),
        )
    )


@given(
    pod_id=_mostly(st.just("etl-load-abcd1234"), hostile_names),
    namespace=_mostly(namespaces, hostile_names),
    try_number=_mostly(st.integers(0, 10), st.integers(-(10**3), 10**80)),
    map_index=_mostly(st.integers(-1, 10), st.integers(-(10**3), 10**80)),
    pair=hostile_templates_and_overrides(),
    hook=hostile_hooks,
)
def test_hostile_inputs_give_a_valid_pod_or_a_typed_error(
    *,
    pod_id: str,
    namespace: str,
    try_number: int,
    map_index: int,
    pair: tuple[Manifest | None, Manifest | None],
    hook: HostileHook | None,
) -> None:
    outcome = build_hostile_task_pod(
        pod_id=pod_id,
        namespace=namespace,
        try_number=try_number,
        map_index=map_index,
        pair=pair,
        hook=hook,
    )
    event(outcome)


@given(
    pod_id=_mostly(st.none(), hostile_names),
    namespace=_mostly(namespaces, hostile_names),
    dag_id=_mostly(st.none(), st.one_of(hostile_ids, huge_annotation_values)),
    pair=hostile_templates_and_overrides(),
    hook=hostile_hooks,
)
def test_hostile_inputs_give_a_valid_callback_pod_or_a_typed_error(
    *,
    pod_id: str | None,
    namespace: str,
    dag_id: str | None,
    pair: tuple[Manifest | None, Manifest | None],
    hook: HostileHook | None,
) -> None:
    outcome = build_hostile_callback_pod(
        pod_id=pod_id, namespace=namespace, dag_id=dag_id, template=pair[0], hook=hook
    )
    event(outcome)

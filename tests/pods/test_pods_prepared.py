"""The prepared pod builder (:class:`PodTemplate`) and :func:`construct_pod`.

A prepared template works the merge out once and then builds each pod as a compiled
literal with its own values. Every pod it returns must be the pod the general build (the
merge chain run on the pod's own layers, what a fresh template does for its first pod)
returns, key order included, or raise the same error; pass the strict 1.37 schema
(``kubernetes-validate``) and the naming rules; and share nothing with other pods, the
template or the arguments.
"""

from __future__ import annotations

import copy
import functools
import json
import random
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.labels import create_unique_id
from k8s_workloads.pods import (
    InvalidPod,
    PodMutationHookError,
    PodTemplate,
    construct_callback_pod,
    construct_pod,
    construct_task_pod,
    workload_command_args,
)
from k8s_workloads.reconcile import Manifest, PodReconciliationError
from k8s_workloads.states import KubernetesJob
from k8s_workloads.testing.strategies import (
    container_args,
    hostile_ids,
    hostile_names,
    hostile_run_ids,
    hostile_templates_and_overrides,
    kube_images,
    namespaces,
    pod_templates,
    scheduler_job_ids,
    templates_and_overrides,
)
from k8s_workloads.validation import validate_manifest

AIRFLOW_VERSION = "3.3.2"
KUBERNETES_VERSION = "1.37"
CALLBACK_ID = "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"
PODS_PER_EXAMPLE = 4

TEMPLATE: Manifest = {
    "metadata": {"labels": {"team": "data"}, "annotations": {"owner": "platform"}},
    "spec": {
        "serviceAccountName": "airflow-worker",
        "containers": [
            {
                "name": "base",
                "image": "registry.example.com/airflow:3",
                "env": [{"name": "A", "value": "1"}],
                "volumeMounts": [{"name": "logs", "mountPath": "/logs"}],
            },
            {"name": "sidecar", "image": "busybox:1"},
        ],
        "volumes": [{"name": "logs", "emptyDir": {}}],
        "tolerations": [{"key": "dedicated", "operator": "Exists"}],
    },
}
OVERRIDE: Manifest = {
    "metadata": {"labels": {"team": "analytics", "size": "big"}},
    "spec": {
        "containers": [
            {"name": "base", "resources": {"limits": {"memory": "8Gi"}}, "env": [{"name": "B"}]}
        ],
        "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}],
    },
}


def _assert_valid(manifest: Manifest) -> None:
    assert validate_manifest(manifest) == []
    kubernetes_validate.validate(
        {"apiVersion": "v1", "kind": "Pod", **manifest}, KUBERNETES_VERSION, strict=True
    )


def _containers_of(value: object) -> Iterator[object]:
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _containers_of(item)
    elif isinstance(value, list):
        yield value
        for item in value:
            yield from _containers_of(item)


def _ids(*values: object) -> set[int]:
    return {id(found) for value in values for found in _containers_of(value)}


def _outcome(build: Callable[[], Manifest]) -> tuple[str, object]:
    """The pod as JSON text (key order counts), or the error's type and message."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        try:
            return "pod", json.dumps(build())
        except (PodReconciliationError, PodMutationHookError, ValueError, TypeError) as error:
            return "error", (type(error), str(error))


def _task_pod(
    template: PodTemplate, override: Manifest | None, *, number: int, **values: Any
) -> Manifest:
    arguments: dict[str, Any] = {
        "namespace": "airflow",
        "scheduler_job_id": 7,
        "pod_id": f"etl-load-{number}",
        "dag_id": "etl",
        "task_id": "load",
        "kube_image": "img:1",
        "try_number": number + 1,
        "args": ["python", "-m", "work", str(number)],
        "airflow_version": AIRFLOW_VERSION,
        "run_id": f"manual__{number}",
        "pod_override": override,
        "rng": random.Random(number),
    }
    arguments.update(values)
    return template.task_pod(**arguments)


def _planned(template: PodTemplate, override: Manifest | None) -> bool:
    """Whether pods of this pair are built from a plan (not by the general merge)."""
    prepared = template._with_override(override, ())
    plans = prepared._plans
    return any(plan is not None for plan in plans.values())


def test_a_realistic_template_is_planned_from_its_second_pod() -> None:
    template = PodTemplate(TEMPLATE)
    first = _task_pod(template, OVERRIDE, number=0)
    assert not _planned(template, OVERRIDE)
    second = _task_pod(template, OVERRIDE, number=0)
    assert _planned(template, OVERRIDE)
    assert json.dumps(second) == json.dumps(first)
    assert second["spec"]["containers"][0]["env"] == [
        {"name": "A", "value": "1"},
        {"name": "AIRFLOW_IS_K8S_EXECUTOR_POD", "value": "True"},
        {"name": "B"},
    ]
    assert second["metadata"]["labels"]["team"] == "analytics"
    _assert_valid(second)


@given(
    dag_id=hostile_ids,
    task_id=hostile_ids,
    run_id=st.one_of(st.none(), hostile_run_ids),
    try_number=st.integers(0, 10**6),
    map_index=st.integers(-1, 10**4),
    kube_image=kube_images,
    args=container_args,
    namespace=namespaces,
    scheduler_job_id=scheduler_job_ids,
    pair=templates_and_overrides(valid=True),
)
def test_prepared_pods_are_the_general_builds_and_valid(
    *,
    dag_id: str,
    task_id: str,
    run_id: str | None,
    try_number: int,
    map_index: int,
    kube_image: str | None,
    args: list[str],
    namespace: str,
    scheduler_job_id: str | int,
    pair: tuple[Manifest | None, Manifest | None],
) -> None:
    template, override = pair
    prepared = PodTemplate(template)
    built: list[Manifest] = []
    for number in range(PODS_PER_EXAMPLE):
        values: dict[str, Any] = {
            "namespace": namespace,
            "scheduler_job_id": scheduler_job_id,
            "pod_id": create_unique_id(dag_id, task_id, rng=random.Random(number)),
            "dag_id": dag_id,
            "task_id": task_id,
            "kube_image": kube_image,
            "try_number": try_number + number,
            "args": [*args, str(number)] if number % 2 else args,
            "run_id": run_id,
            "map_index": map_index,
        }
        # A fresh template builds its first pod by the general merge: the reference.
        reference = functools.partial(
            _task_pod, PodTemplate(template), override, number=0, **values
        )
        expected = _outcome(reference)
        pod = _task_pod(prepared, override, number=0, **values)
        assert ("pod", json.dumps(pod)) == expected
        _assert_valid(pod)
        built.append(pod)
    event(f"planned: {_planned(prepared, override)}")
    # No two pods share a dict or list; nor do they with the layers given.
    for index, pod in enumerate(built):
        others = _ids(*built[:index], *built[index + 1 :], template, override, args)
        assert not _ids(pod) & others


@given(
    pod_id=st.one_of(st.just("etl-load-abcd1234"), hostile_names),
    namespace=st.one_of(namespaces, hostile_names),
    pair=hostile_templates_and_overrides(),
    image=st.sampled_from([None, "", "img:1"]),
    args=st.sampled_from([[], ["run"]]),
)
def test_prepared_builds_refuse_what_the_general_build_refuses(
    *,
    pod_id: str,
    namespace: str,
    pair: tuple[Manifest | None, Manifest | None],
    image: str | None,
    args: list[str],
) -> None:
    template, override = pair
    values = {"pod_id": pod_id, "namespace": namespace, "kube_image": image, "args": args}

    def fresh() -> Manifest:
        return _task_pod(PodTemplate(template), override, number=0, **values)

    expected = _outcome(fresh)
    refused: Exception | None = None
    try:
        prepared = PodTemplate(template)
    except (PodReconciliationError, ValueError, TypeError) as error:
        refused = error
    if refused is not None:
        assert expected == ("error", (type(refused), str(refused)))
        return
    outcomes = [
        _outcome(lambda: _task_pod(prepared, override, number=0, **values)) for _ in range(3)
    ]
    assert outcomes == [expected] * 3
    event(expected[0])
    if expected[0] == "pod":
        _assert_valid(json.loads(str(expected[1])))


@given(
    template=st.one_of(st.none(), pod_templates()),
    dag_id=st.one_of(st.none(), hostile_ids),
    kube_image=kube_images,
    namespace=namespaces,
)
def test_prepared_callback_pods_are_the_general_builds(
    template: Manifest | None, dag_id: str | None, kube_image: str | None, namespace: str
) -> None:
    prepared = PodTemplate(template)

    def build(source: PodTemplate) -> Manifest:
        return source.callback_pod(
            callback_id=CALLBACK_ID,
            namespace=namespace,
            scheduler_job_id=3,
            kube_image=kube_image,
            args=["python", "-m", "callback"],
            airflow_version=AIRFLOW_VERSION,
            dag_id=dag_id,
            run_id="manual__1",
            rng=random.Random(0),
        )

    for _ in range(3):
        expected = _outcome(lambda: build(PodTemplate(template)))
        pod = build(prepared)
        assert ("pod", json.dumps(pod)) == expected
        _assert_valid(pod)


def test_returned_pods_are_independent_of_each_other_and_the_template() -> None:
    given_template = copy.deepcopy(TEMPLATE)
    template = PodTemplate(given_template)
    pods_built = [_task_pod(template, OVERRIDE, number=number) for number in range(3)]
    assert _planned(template, OVERRIDE)
    reference = copy.deepcopy(pods_built[2])
    # Mutating every dict and list of one pod, and the mapping the template came from,
    # changes neither the other pods nor the pods built after.
    for found in reversed(list(_containers_of(pods_built[1]))):
        if isinstance(found, dict):
            found["scribbled"] = True
        elif isinstance(found, list):
            found.append("scribbled")
    given_template["spec"]["containers"][0]["image"] = "changed:1"
    given_template["spec"]["tolerations"].clear()
    assert pods_built[2] == reference
    again = _task_pod(template, OVERRIDE, number=2)
    assert again == reference
    assert not _ids(again) & _ids(*pods_built, given_template, OVERRIDE)


def test_construct_task_pod_keeps_templates_by_content_not_by_type() -> None:
    # The same msgpack bytes and an equal value is a hit; 1 for True, 1.0 for 1, a tuple
    # for a list: each is built as the general build builds it.
    base: Manifest = {"spec": {"hostNetwork": True, "containers": [{"name": "base"}]}}
    variants: list[Manifest] = [
        base,
        {"spec": {"hostNetwork": 1, "containers": [{"name": "base"}]}},
        {"spec": {"hostNetwork": True, "containers": ({"name": "base"},)}},
        {"spec": {"hostNetwork": True, "terminationGracePeriodSeconds": 600.0, "containers": []}},
        {"spec": {"hostNetwork": True, "terminationGracePeriodSeconds": 600, "containers": []}},
    ]
    for variant in variants * 3:

        def build(template: Manifest = variant) -> Manifest:
            return construct_task_pod(
                namespace="airflow",
                scheduler_job_id=1,
                pod_id="etl-load-1",
                dag_id="etl",
                task_id="load",
                kube_image="img:1",
                try_number=1,
                args=["run"],
                airflow_version=AIRFLOW_VERSION,
                base_worker_pod=template,
            )

        expected = _outcome(
            lambda: PodTemplate(variant).task_pod(  # noqa: B023
                namespace="airflow",
                scheduler_job_id=1,
                pod_id="etl-load-1",
                dag_id="etl",
                task_id="load",
                kube_image="img:1",
                try_number=1,
                args=["run"],
                airflow_version=AIRFLOW_VERSION,
            )
        )
        assert _outcome(build) == expected
    assert (
        _outcome(
            lambda: PodTemplate(variants[1]).task_pod(
                namespace="airflow",
                scheduler_job_id=1,
                pod_id="etl-load-1",
                dag_id="etl",
                task_id="load",
                kube_image="img:1",
                try_number=1,
                args=["run"],
                airflow_version=AIRFLOW_VERSION,
            )
        )[0]
        == "error"
    )


def test_a_bad_template_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidPod) as raised:
        PodTemplate({"spec": {"hostNetwork": "yes"}})
    assert raised.value.field == "spec.hostNetwork"


def test_a_long_pod_id_warns_at_the_caller() -> None:
    builds: tuple[Callable[[], Manifest], ...] = (
        lambda: construct_task_pod(
            namespace="airflow",
            scheduler_job_id=1,
            pod_id="a" * 80,
            dag_id="etl",
            task_id="load",
            kube_image=None,
            try_number=1,
            args=["run"],
            airflow_version=AIRFLOW_VERSION,
        ),
        lambda: _task_pod(PodTemplate(), None, number=1, pod_id="a" * 80),
    )
    for build in builds:
        with pytest.warns(UserWarning, match="truncating") as caught:
            build()
        assert caught[0].filename == __file__


# --- construct_pod ---------------------------------------------------------------------

_COMMON: dict[str, Any] = {
    "namespace": "airflow",
    "scheduler_job_id": 5,
    "airflow_version": AIRFLOW_VERSION,
    "kube_image": "img:1",
}


def test_construct_pod_builds_a_task_job_with_the_task_builder() -> None:
    key = TaskInstanceKey("etl", "load", "manual__1", 2, 4)
    job = KubernetesJob(key, ("python", "-m", "work"), pod_override=OVERRIDE, kube_image="q:2")
    pod = construct_pod(job, base_worker_pod=TEMPLATE, pod_id="etl-load-x", **_COMMON)
    assert pod == construct_task_pod(
        namespace="airflow",
        scheduler_job_id=5,
        pod_id="etl-load-x",
        dag_id="etl",
        task_id="load",
        kube_image="q:2",
        try_number=2,
        args=["python", "-m", "work"],
        airflow_version=AIRFLOW_VERSION,
        run_id="manual__1",
        map_index=4,
        pod_override=OVERRIDE,
        base_worker_pod=TEMPLATE,
    )
    named = construct_pod(job, rng=random.Random(3), **_COMMON)
    assert named["metadata"]["name"] == create_unique_id("etl", "load", rng=random.Random(3))
    prepared = construct_pod(
        job, base_worker_pod=PodTemplate(TEMPLATE), pod_id="etl-load-x", **_COMMON
    )
    assert prepared == pod


def test_construct_pod_builds_a_callback_job_with_the_callback_builder() -> None:
    args = workload_command_args(
        {"log_path": f"executor_callbacks/etl/manual__1/{CALLBACK_ID}", "token": "t"}
    )
    job = KubernetesJob(CallbackKey(CALLBACK_ID), args)
    pod = construct_pod(job, base_worker_pod=TEMPLATE, rng=random.Random(1), **_COMMON)
    assert pod == construct_callback_pod(
        callback_id=CALLBACK_ID,
        namespace="airflow",
        scheduler_job_id=5,
        kube_image="img:1",
        args=args,
        airflow_version=AIRFLOW_VERSION,
        base_worker_pod=TEMPLATE,
        dag_id="etl",
        run_id="manual__1",
        rng=random.Random(1),
    )
    given_ids = construct_pod(job, dag_id="other", args=["run"], rng=random.Random(1), **_COMMON)
    assert given_ids["metadata"]["annotations"]["dag_id"] == "other"
    assert "run_id" not in given_ids["metadata"]["annotations"]
    assert given_ids["spec"]["containers"][0]["args"] == ["run"]


def test_construct_pod_refuses_what_the_key_does_not_take() -> None:
    task = KubernetesJob(TaskInstanceKey("etl", "load", "r", 1, -1), ("run",))
    with pytest.raises(ValueError, match="dag_id"):
        construct_pod(task, dag_id="etl", **_COMMON)
    callback = KubernetesJob(CallbackKey(CALLBACK_ID), ("run",), pod_override=OVERRIDE)
    with pytest.raises(ValueError, match="pod_override"):
        construct_pod(callback, **_COMMON)


@pytest.mark.parametrize(
    "override",
    [
        {"metadata": {"annotations": {"run_id": "manual__other"}}},
        {"metadata": {"annotations": {"dag_id": "other"}}},
        {"metadata": {"labels": {"airflow-worker": "99"}}},
        {"metadata": {"labels": {"airflow_executor_done": "True"}}},
        {"metadata": {"annotations": {"callback_id": CALLBACK_ID}}},
    ],
)
def test_planned_pods_refuse_layers_that_change_the_identity(override: Manifest) -> None:
    template = PodTemplate(TEMPLATE)
    outcomes = [
        _outcome(lambda: _task_pod(template, override, number=0, run_id=None)) for _ in range(3)
    ]
    assert _planned(template, override)
    assert outcomes[0][0] == "error"
    assert outcomes == [outcomes[0]] * 3
    assert "changed the identity" in str(outcomes[0][1])

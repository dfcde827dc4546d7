"""The inputs and helpers the pod builders' tests share: a small template, a task and a
callback pod built with defaults, an args list carrying an Execution API token, the
generated inputs of a task pod, and the checks every built pod passes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import kubernetes_validate  # type: ignore[import-untyped]
from hypothesis import strategies as st

from k8s_workloads.pods import (
    construct_callback_pod,
    construct_task_pod,
    workload_command_args,
)
from k8s_workloads.pods.validation import validate_manifest
from k8s_workloads.testing.strategies import (
    container_args,
    hostile_ids,
    hostile_run_ids,
    kube_images,
    namespaces,
    scheduler_job_ids,
    templates_and_overrides,
)

CALLBACK_ID = "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"


VERSION = "3.3.2"


TEMPLATE: dict[str, Any] = {
    "metadata": {"namespace": "template-ns", "labels": {"tier": "worker"}},
    "spec": {
        "containers": [
            {
                "name": "base",
                "image": "template:1",
                "env": [{"name": "FROM_TEMPLATE", "value": "1"}],
            }
        ],
        "restartPolicy": "Never",
    },
}


def task_pod(**overrides: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "namespace": "airflow",
        "scheduler_job_id": "7",
        "pod_id": "etl-load-abcd1234",
        "dag_id": "etl",
        "task_id": "load",
        "kube_image": "airflow:3.3.2",
        "try_number": 1,
        "args": ["python", "-m", "x"],
        "run_id": "manual__2026-06-07T01:50:23+00:00",
        "airflow_version": VERSION,
        "base_worker_pod": TEMPLATE,
    }
    kwargs.update(overrides)
    return construct_task_pod(**kwargs)


def named_task_pod(name: str, *, namespace: str = "airflow", owner: str = "7") -> dict[str, Any]:
    """A task pod without a template, named ``name`` (its task id too), owned by the
    scheduler job ``owner``: what the kit's servers are sent in their tests."""
    return task_pod(
        namespace=namespace,
        scheduler_job_id=owner,
        pod_id=name,
        task_id=name,
        base_worker_pod=None,
    )


def callback_pod(**overrides: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "callback_id": CALLBACK_ID,
        "namespace": "airflow",
        "scheduler_job_id": 42,
        "kube_image": "airflow:3.3.2",
        "args": workload_command_args({"type": "ExecuteCallback", "token": "secret"}),
        "airflow_version": VERSION,
        "base_worker_pod": TEMPLATE,
    }
    kwargs.update(overrides)
    return construct_callback_pod(**kwargs)


# A made-up Execution API token (a JWT's shape), which no error message may show.
TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0aSIsImV4cCI6OTl9.c2VjcmV0LXNpZ25hdHVyZS12YWx1ZQ"  # noqa: S105


TOKEN_ARGS = workload_command_args({"token": TOKEN, "ti": {"dag_id": "etl"}})


def with_container(**fields: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "base", **fields}]}}


KUBERNETES_VERSION = "1.37"


def schema_valid(manifest: dict[str, Any]) -> bool:
    """kubernetes-validate's strict verdict on a pod (one without apiVersion and kind: v1 Pod)."""
    try:
        kubernetes_validate.validate(
            {"apiVersion": "v1", "kind": "Pod", **manifest}, KUBERNETES_VERSION, strict=True
        )
    except kubernetes_validate.ValidationError:
        return False
    return True


def assert_valid_pod(manifest: dict[str, Any]) -> None:
    """The pod passes our naming rules and the Kubernetes 1.37 schema, strictly."""
    assert validate_manifest(manifest) == []
    kubernetes_validate.validate(
        {"apiVersion": "v1", "kind": "Pod", **manifest}, KUBERNETES_VERSION, strict=True
    )


def containers_of(value: object) -> Iterator[object]:
    """Every dict and list inside a JSON-like value, itself included."""
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from containers_of(item)
    elif isinstance(value, list):
        yield value
        for item in value:
            yield from containers_of(item)


def container_ids(*values: object) -> set[int]:
    """The identities of every dict and list inside the values: what two builds share."""
    return {id(found) for value in values for found in containers_of(value)}


@attrs.frozen
class TaskPodInputs:
    """A task pod's generated inputs, but its pod id: hostile ids, any run id, try number
    and map index, a plausible template and override (None at times)."""

    dag_id: str
    task_id: str
    run_id: str | None
    try_number: int
    map_index: int
    kube_image: str | None
    args: list[str]
    namespace: str
    scheduler_job_id: str | int
    template: dict[str, Any] | None
    override: dict[str, Any] | None

    def arguments(self) -> dict[str, Any]:
        """``construct_task_pod``'s keyword arguments (add ``pod_id``; the layers are the
        drawn objects themselves, so a test can check they are left unchanged)."""
        return {
            "namespace": self.namespace,
            "scheduler_job_id": self.scheduler_job_id,
            "dag_id": self.dag_id,
            "task_id": self.task_id,
            "kube_image": self.kube_image,
            "try_number": self.try_number,
            "args": self.args,
            "airflow_version": VERSION,
            "run_id": self.run_id,
            "map_index": self.map_index,
            "pod_override": self.override,
            "base_worker_pod": self.template,
        }


@st.composite
def task_pod_inputs(draw: st.DrawFn) -> TaskPodInputs:
    template, override = draw(templates_and_overrides(valid=True))
    return TaskPodInputs(
        dag_id=draw(hostile_ids),
        task_id=draw(hostile_ids),
        run_id=draw(st.one_of(st.none(), hostile_run_ids)),
        try_number=draw(st.integers(0, 10**6)),
        map_index=draw(st.integers(-1, 10**4)),
        kube_image=draw(kube_images),
        args=draw(container_args),
        namespace=draw(namespaces),
        scheduler_job_id=draw(scheduler_job_ids),
        template=template,
        override=override,
    )

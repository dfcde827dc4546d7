"""The inputs and helpers the pod builders' tests share: a small template, a task and a
callback pod built with defaults, and an args list carrying an Execution API token."""

from __future__ import annotations

from typing import Any

from k8s_workloads.pods import (
    construct_callback_pod,
    construct_task_pod,
    workload_command_args,
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

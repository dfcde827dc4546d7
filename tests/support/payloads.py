"""The inputs and helpers the payload and redaction tests share: a made-up token, the
bundled workloads, a task pod built around given args."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from importlib import resources
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]

from k8s_workloads.pods import (
    construct_task_pod,
)

# A made-up JWT: header, claims, signature.
TOKEN = (
    "eyJhbGciOiJIUzUxMiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ0aS0xIiwic2NvcGUiOiJ3b3JrbG9hZCJ9"  # noqa: S105
    ".c2lnbmF0dXJlLW5vdC1yZWFs"
)
CALLBACK_ID = "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"


def example(name: str) -> dict[str, Any]:
    text = resources.files("k8s_workloads").joinpath(f"examples/{name}").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def task_workload(token: str = TOKEN, nested: str | None = None) -> dict[str, Any]:
    workload = example("task_workload.json")
    workload["token"] = token
    if nested is not None:
        workload["ti"]["context_carrier"] = {"auth": {"token": nested}}
    return workload


def payload_task_pod(args: list[str], **overrides: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "namespace": "airflow",
        "scheduler_job_id": 7,
        "pod_id": "etl-load-a1b2c3d4",
        "dag_id": "etl",
        "task_id": "load",
        "run_id": "manual__2026-06-07T01:50:23+00:00",
        "kube_image": "apache/airflow:3.3.2",
        "try_number": 1,
        "args": args,
        "airflow_version": "3.3.2",
    }
    kwargs.update(overrides)
    return construct_task_pod(**kwargs)


def schema_valid(manifest: dict[str, Any]) -> None:
    """kubernetes-validate's strict schema check; a pod may lack apiVersion/kind."""
    kubernetes_validate.validate(
        {"apiVersion": "v1", "kind": "Pod", **manifest}, "1.37", strict=True
    )


@dataclasses.dataclass(frozen=True)
class Parsed:
    """JSON text, decoded (so that comparisons ignore its layout)."""

    value: Any


def strings(value: object) -> Iterator[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, Parsed):
        yield from strings(value.value)
    elif isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def spellings(token: str) -> set[str]:
    once = json.dumps(token)[1:-1]
    return {token, once, json.dumps(token, ensure_ascii=False)[1:-1], json.dumps(once)[1:-1]}

"""The protocol's values: a pod request's name, and a repr that never shows the bodies
(they may hold the workload's token)."""

from __future__ import annotations

from k8s_workloads.executor.requests import CreatePod
from k8s_workloads.keys import TaskInstanceKey

KEY = TaskInstanceKey("etl", "load", "manual__1", 1)
TOKEN = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu.c2ln"  # noqa: S105 - a fake token to find


def request(secret: dict[str, object] | None = None) -> CreatePod:
    pod = {"metadata": {"name": "etl-load-1", "namespace": "airflow"}, "spec": {"args": [TOKEN]}}
    return CreatePod(KEY, "airflow", pod, secret)


def test_a_pod_request_is_named_by_its_pod() -> None:
    assert request().pod_name == "etl-load-1"


def test_the_repr_names_the_pod_and_hides_the_bodies() -> None:
    shown = repr(request({"metadata": {"name": "s"}, "stringData": {"workload": TOKEN}}))
    assert "<pod etl-load-1>" in shown
    assert "<secret>" in shown
    assert TOKEN not in shown
    assert "secret=None" in repr(request())

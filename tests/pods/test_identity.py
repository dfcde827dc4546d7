"""A worker pod's identity (:mod:`k8s_workloads.pods.identity`): the annotations and
labels the watcher decodes, which no template, override or hook may change."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from k8s_workloads.keys import TaskInstanceKey
from k8s_workloads.pods import (
    PodMutationHookError,
    callback_pod_name,
)
from k8s_workloads.pods.codec import annotations_to_key
from k8s_workloads.pods.labels import make_safe_label_value
from k8s_workloads.pods.manifest import PodReconciliationError
from k8s_workloads.pods.validation import validate_manifest
from tests.support.pod_builds import (
    CALLBACK_ID,
    TEMPLATE,
    VERSION,
    callback_pod,
    task_pod,
)


def test_task_pod_identity() -> None:
    pod = task_pod()
    metadata = pod["metadata"]
    assert metadata["name"] == "etl-load-abcd1234"
    assert metadata["annotations"] == {
        "dag_id": "etl",
        "task_id": "load",
        "try_number": "1",
        "run_id": "manual__2026-06-07T01:50:23+00:00",
    }
    assert metadata["labels"] == {
        "tier": "worker",
        "dag_id": "etl",
        "task_id": "load",
        "try_number": "1",
        "kubernetes_executor": "True",
        "airflow_version": VERSION,
        "airflow-worker": "7",
        "run_id": make_safe_label_value("manual__2026-06-07T01:50:23+00:00"),
    }
    assert annotations_to_key(metadata["annotations"], metadata["labels"]) == TaskInstanceKey(
        "etl", "load", "manual__2026-06-07T01:50:23+00:00", 1, -1
    )
    assert validate_manifest(pod) == []


def test_mapped_task_pod_carries_map_index() -> None:
    pod = task_pod(map_index=4)
    assert pod["metadata"]["annotations"]["map_index"] == "4"
    assert pod["metadata"]["labels"]["map_index"] == "4"
    unmapped = task_pod(map_index=-1)
    assert "map_index" not in unmapped["metadata"]["annotations"]
    assert "map_index" not in unmapped["metadata"]["labels"]


@pytest.mark.parametrize(
    ("override", "problem"),
    [
        ({"metadata": {"labels": {"airflow-worker": "99"}}}, "label 'airflow-worker'"),
        ({"metadata": {"annotations": {"task_id": "other"}}}, "annotation 'task_id'"),
        ({"metadata": {"annotations": {"callback_id": CALLBACK_ID}}}, "'callback_id' must not"),
        ({"metadata": {"labels": {"airflow-workload-type": "callback"}}}, "must not be set"),
    ],
)
def test_an_override_may_not_change_identity(override: dict[str, Any], problem: str) -> None:
    with pytest.raises(PodReconciliationError, match=problem):
        task_pod(pod_override=override)


@pytest.mark.parametrize(
    "vandalism",
    [
        lambda pod: pod["metadata"]["labels"].pop("airflow-worker") and None,
        lambda pod: pod["metadata"]["annotations"].update(try_number="2"),
        lambda pod: pod["metadata"].pop("annotations") and None,
        lambda pod: pod["metadata"]["labels"].update(kubernetes_executor="False"),
    ],
)
def test_a_hook_that_breaks_identity_is_an_error(vandalism: Any) -> None:
    with pytest.raises(PodMutationHookError, match="changed the identity"):
        task_pod(mutation_hook=vandalism)


def test_callback_pod_template_cannot_make_it_look_like_a_task() -> None:
    template = copy.deepcopy(TEMPLATE)
    template["metadata"]["annotations"] = {"task_id": "oops"}
    with pytest.raises(PodReconciliationError, match="annotation 'task_id' must not be set"):
        callback_pod(base_worker_pod=template)


def test_callback_pod_name() -> None:
    name = callback_pod_name(CALLBACK_ID, rng=random.Random(5))
    assert len(name) == 26
    assert name.startswith("callback-019e9fc6-")
    assert name != callback_pod_name(CALLBACK_ID, rng=random.Random(6))


def test_explicit_callback_pod_id() -> None:
    assert callback_pod(pod_id="my-callback")["metadata"]["name"] == "my-callback"


@pytest.mark.parametrize("label", ["airflow_pod_revoked", "airflow_executor_done"])
@pytest.mark.parametrize("where", ["template", "override", "hook"])
def test_no_layer_may_set_a_label_that_hides_the_pod_from_the_watcher(
    label: str, where: str
) -> None:
    # Issue 11, item 3: every event of such a pod would be ignored, adoption would skip it
    # and a re-list after a 410 would report its running task vanished.
    def hook(pod: dict[str, Any]) -> None:
        pod["metadata"]["labels"][label] = "True"

    template = copy.deepcopy(TEMPLATE)
    kwargs: dict[str, Any] = {}
    if where == "template":
        template["metadata"].setdefault("labels", {})[label] = "True"
    elif where == "override":
        kwargs["pod_override"] = {"metadata": {"labels": {label: "True"}}}
    else:
        kwargs["mutation_hook"] = hook
    error = PodMutationHookError if where == "hook" else PodReconciliationError
    with pytest.raises(error, match=f"label '{label}' must not be set"):
        task_pod(base_worker_pod=template, **kwargs)
    if where == "override":
        return  # callback pods take no pod_override
    with pytest.raises(error, match=f"label '{label}' must not be set"):
        callback_pod(base_worker_pod=template, **kwargs)

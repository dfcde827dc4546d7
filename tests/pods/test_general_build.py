"""The general build (:mod:`k8s_workloads.pods.general_build`): the merge chain template →
the executor's layer → ``pod_override``, and the mutation hook, with every check."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from k8s_workloads.pods import (
    PodMutationHookError,
)
from k8s_workloads.pods.manifest import PodReconciliationError
from k8s_workloads.pods.validation import validate_manifest
from tests.support.pod_builds import (
    TEMPLATE,
    task_pod,
)


def test_inputs_are_not_mutated() -> None:
    template = copy.deepcopy(TEMPLATE)
    override = {"metadata": {"labels": {"x": "y"}}, "spec": {"containers": [{"name": "base"}]}}
    override_before = copy.deepcopy(override)
    pod = task_pod(base_worker_pod=template, pod_override=override)
    pod["spec"]["containers"][0]["env"].append({"name": "NEW"})
    pod["metadata"]["labels"]["new"] = "1"
    assert template == TEMPLATE
    assert override == override_before


def test_merge_errors_are_reconciliation_errors() -> None:
    bad = {"spec": {"containers": [{"name": "base", "env": "X=1"}]}}
    with pytest.raises(PodReconciliationError, match="must be a list"):
        task_pod(pod_override=bad)
    with pytest.raises(PodReconciliationError, match="base_worker_pod: must be an object"):
        task_pod(base_worker_pod=["not", "a", "pod"])


def test_mutation_hook_in_place_and_returning() -> None:
    def add_toleration(pod: dict[str, Any]) -> None:
        pod["spec"].setdefault("tolerations", []).append({"key": "spot", "operator": "Exists"})

    pod = task_pod(mutation_hook=add_toleration)
    assert pod["spec"]["tolerations"] == [{"key": "spot", "operator": "Exists"}]

    def replace(pod: dict[str, Any]) -> dict[str, Any]:
        return pod | {"kind": "Pod"}

    assert task_pod(mutation_hook=replace)["kind"] == "Pod"


def test_mutation_hook_cannot_touch_shared_inputs() -> None:
    template = copy.deepcopy(TEMPLATE)

    def vandal(pod: dict[str, Any]) -> None:
        pod["metadata"]["labels"]["tier"] = "changed"
        pod["spec"]["containers"][0]["env"].clear()

    task_pod(base_worker_pod=template, mutation_hook=vandal)
    assert template == TEMPLATE


def test_mutation_hook_errors_carry_their_cause() -> None:
    def broken(_pod: dict[str, Any]) -> None:
        raise RuntimeError("policy service down")

    with pytest.raises(PodMutationHookError, match="policy service down") as caught:
        task_pod(mutation_hook=broken)
    assert isinstance(caught.value.__cause__, RuntimeError)

    def not_a_pod(_pod: dict[str, Any]) -> Any:
        return ["nope"]

    with pytest.raises(PodMutationHookError, match="returned list"):
        task_pod(mutation_hook=not_a_pod)


def test_unambiguous_wrong_types_are_coerced_as_the_provider_loader_does() -> None:
    # kubernetes' ApiClient deserializer (the provider's deserialize_model_file) writes
    # str(8080) for a string field and int("600") for an integer one.
    template = {
        "metadata": {"labels": {"version": 2}, "annotations": {"build": 1234}},
        "spec": {
            "terminationGracePeriodSeconds": "600",
            "activeDeadlineSeconds": 3600.0,
            "containers": [
                {
                    "name": "base",
                    "args": ["--workers", 4],
                    "env": [{"name": "PORT", "value": 8080}],
                    "ports": [{"containerPort": "8080"}],
                }
            ],
        },
    }
    before = copy.deepcopy(template)
    pod = task_pod(base_worker_pod=template, args=[])
    assert template == before
    assert pod["metadata"]["labels"]["version"] == "2"
    assert pod["metadata"]["annotations"]["build"] == "1234"
    spec = pod["spec"]
    assert spec["terminationGracePeriodSeconds"] == 600
    assert spec["activeDeadlineSeconds"] == 3600
    assert type(spec["activeDeadlineSeconds"]) is int
    container = spec["containers"][0]
    assert container["args"] == ["--workers", "4"]
    assert container["env"][0] == {"name": "PORT", "value": "8080"}
    assert container["ports"] == [{"containerPort": 8080}]


def test_a_template_missing_required_fields_is_fine_when_the_merge_fills_them() -> None:
    # A partial template (no containers, a nameless container) is merged over; only the
    # finished pod must have every required field.
    partial = {"spec": {"nodeSelector": {"pool": "a"}, "containers": [{"image": "t:1"}]}}
    pod = task_pod(base_worker_pod=partial)
    assert pod["spec"]["containers"][0]["name"] == "base"
    assert validate_manifest(pod) == []

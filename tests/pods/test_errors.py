"""The builders' errors (:mod:`k8s_workloads.pods.errors`): each names the offending field,
keeps every violation, and never shows the Execution API token."""

from __future__ import annotations

import re
from typing import Any

import pytest

from k8s_workloads.pods import (
    InvalidMutatedPod,
    InvalidPod,
    PodMutationHookError,
    construct_task_pod,
)
from k8s_workloads.pods.manifest import PodReconciliationError
from tests.support.pod_builds import (
    TOKEN,
    TOKEN_ARGS,
    callback_pod,
    task_pod,
    with_container,
)


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        ({"pod_override": {"metadata": {"name": "Bad_Name!"}}}, "metadata.name", "'Bad_Name!'"),
        ({"pod_id": "Bad_Name!"}, "metadata.name", "'Bad_Name!' must consist of lower-case"),
        ({"namespace": "Bad NS", "base_worker_pod": None}, "metadata.namespace", "'Bad NS'"),
        (
            {"base_worker_pod": {"metadata": {"labels": {"bad key!": "x"}}}},
            "metadata.labels['bad key!']",
            "the name part of 'bad key!'",
        ),
        (
            {"pod_override": {"metadata": {"labels": {"team": "-platform"}}}},
            "metadata.labels['team']",
            "'-platform' must be empty or consist",
        ),
        (
            {"base_worker_pod": {"spec": {"initContainers": [{"name": "Init_DB"}]}}},
            "spec.initContainers[0].name",
            "'Init_DB' must consist",
        ),
        (
            {"pod_override": {"spec": {"initContainers": [{"name": "base"}]}}},
            "spec.initContainers[0].name",
            "'base' is used twice",
        ),
        (
            {"base_worker_pod": {"metadata": {"annotations": {"note": "x" * 300_000}}}},
            "metadata.annotations",
            "total size 300074 bytes exceeds 262144 bytes",
        ),
        ({"dag_id": "d" * 300_000}, "metadata.annotations", "exceeds 262144 bytes"),
    ],
)
def test_a_pod_breaking_a_naming_rule_is_refused_naming_the_field(
    kwargs: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(InvalidPod) as caught:
        task_pod(**kwargs)
    assert isinstance(caught.value, PodReconciliationError)
    assert caught.value.field == field
    assert message in str(caught.value)
    assert len(str(caught.value)) < 400  # the 300 KB value is not repeated


@pytest.mark.parametrize(
    ("layer", "field", "message"),
    [
        # A typo the provider's own test fixture has; its loader reads bool("False,"): True.
        ({"spec": {"hostNetwork": "False,"}}, "spec.hostNetwork",
         "must be a boolean, got str 'False,'"),
        ({"spec": {"hostNetwork": "false"}}, "spec.hostNetwork", "must be a boolean"),
        ({"spec": {"hostNetwork": 0}}, "spec.hostNetwork", "must be a boolean, got int 0"),
        (with_container(tty="true"), "spec.containers[0].tty", "must be a boolean"),
        ({"spec": {"terminationGracePeriodSeconds": 2.5}}, "spec.terminationGracePeriodSeconds",
         "must be an integer, got float 2.5"),
        ({"spec": {"terminationGracePeriodSeconds": True}}, "spec.terminationGracePeriodSeconds",
         "must be an integer, got bool"),
        ({"spec": {"terminationGracePeriodSeconds": "ten"}}, "spec.terminationGracePeriodSeconds",
         "must be an integer, got str 'ten'"),
        ({"spec": {"priority": 2**31}}, "spec.priority", "out of the int32 range"),
        (with_container(env=[{"name": "DEBUG", "value": True}]), "spec.containers[0].env[0].value",
         "must be a string, got bool True"),
        (with_container(env=[{"name": "RATIO", "value": 0.5}]), "spec.containers[0].env[0].value",
         "must be a string, got float 0.5"),
        (with_container(env="X=1"), "spec.containers[0].env", "must be a list, got str 'X=1'"),
        (with_container(imagee="typo:1"), "spec.containers[0].imagee",
         "unknown field"),
        ({"spec": {"hostNetwrk": True}}, "spec.hostNetwrk", "unknown field"),
        ({"kind": "Deployment"}, "kind", "must be 'Pod'"),
        ({"spec": {"containers": [{"name": "base"}, {"image": "sidecar:1"}]}},
         "spec.containers[1].name", "is required"),
        ({"metadata": {"labels": {"tier": None, "x": ["a"]}}}, "metadata.labels['x']",
         "must be a string, got list"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("where", ["base_worker_pod", "pod_override"])
def test_a_layer_value_of_the_wrong_type_is_refused_naming_the_field(
    layer: dict[str, Any], field: str, message: str, where: str
) -> None:
    with pytest.raises(InvalidPod) as caught:
        task_pod(**{where: layer})
    assert caught.value.field == field
    assert message in str(caught.value)
    if where == "base_worker_pod":
        with pytest.raises(InvalidPod, match=re.escape(message)):
            callback_pod(base_worker_pod=layer)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"namespace": None}, "metadata.namespace"),
        ({"pod_id": 5}, "metadata.name"),
        ({"kube_image": ["img"]}, "spec.containers[0].image"),
        ({"args": "python -m x"}, "spec.containers[0].args"),
        ({"args": ["python", 3]}, "spec.containers[0].args[1]"),
    ],
)
def test_builder_arguments_of_the_wrong_type_are_refused(
    kwargs: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidPod) as caught:
        task_pod(**kwargs)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("vandalism", "field"),
    [
        (lambda pod: pod["metadata"].update(name="Bad_Name!"), "metadata.name"),
        (lambda pod: pod["spec"].update(hostNetwork="False,"), "spec.hostNetwork"),
        (lambda pod: pod["spec"]["containers"].append({"image": "x"}), "spec.containers[1].name"),
        (lambda pod: pod["spec"].update(volumes={"data"}), "spec.volumes"),
        (lambda pod: pod["metadata"]["labels"].update({"a/b/c": "x"}), "metadata.labels['a/b/c']"),
    ],
)
def test_a_hook_that_makes_the_pod_invalid_is_an_error(vandalism: Any, field: str) -> None:
    with pytest.raises(InvalidMutatedPod) as caught:
        task_pod(mutation_hook=vandalism)
    assert isinstance(caught.value, PodMutationHookError)
    assert caught.value.field == field
    with pytest.raises(InvalidMutatedPod):
        callback_pod(mutation_hook=vandalism)


def test_errors_never_show_the_token_whole_or_cut() -> None:
    def leaks(pod: dict[str, Any]) -> None:
        pod["spec"]["containers"][0]["name"] = TOKEN  # 82 characters: shown cut to 60
        pod["metadata"]["labels"]["copy"] = f"-{TOKEN}"

    errors: list[ValueError] = []
    for kwargs in (
        {"mutation_hook": leaks},
        {"pod_override": {"metadata": {"name": TOKEN}}},
        {"pod_override": {"spec": {"containers": [{"name": "base", "command": TOKEN}]}}},
        {"pod_override": {"spec": {"hostNetwork": TOKEN}}},
    ):
        with pytest.raises((InvalidPod, InvalidMutatedPod)) as caught:
            task_pod(args=TOKEN_ARGS, **kwargs)
        errors.append(caught.value)
    for error in errors:
        text = " ".join([str(error), *(str(v) for v in error.violations)])  # type: ignore[attr-defined]
        assert TOKEN[:8] not in text, text
        assert "***REDACTED***" in text


def test_a_lone_surrogate_anywhere_is_refused_by_the_builder_not_returned() -> None:
    # The builders' fast check once passed it: every naming rule held, the schema has
    # no encoding, and validate_manifest reports it (issue 11, items 2 and 4).
    with pytest.raises(InvalidPod, match=r"spec\.containers\[0\]\.args\[0\].*lone surrogate"):
        construct_task_pod(
            namespace="airflow",
            scheduler_job_id=1,
            pod_id="p",
            dag_id="etl",
            task_id="load",
            kube_image="apache/airflow:3.3.2",
            try_number=1,
            args=["x\ud800"],
            airflow_version="3.3.2",
        )

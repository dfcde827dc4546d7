"""The pod builders (:mod:`k8s_workloads.pods.build`): reference §2.2 (task pods), §2.6
(callback pods); :class:`PodTemplate` and :func:`construct_pod`."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from typing import Any

import pytest

from k8s_workloads.compat import CallbackWorkloadsUnsupported
from k8s_workloads.keys import CallbackKey, GenericKey, InvalidKey, TaskInstanceKey
from k8s_workloads.pods import (
    InvalidJob,
    InvalidPod,
    PodTemplate,
    check_pod_override,
    construct_callback_pod,
    construct_generic_pod,
    construct_pod,
    construct_task_pod,
    workload_command_args,
)
from k8s_workloads.pods.build import check_job
from k8s_workloads.pods.codec import annotations_to_key
from k8s_workloads.pods.labels import create_unique_id, make_safe_label_value
from k8s_workloads.pods.manifest import PodReconciliationError
from k8s_workloads.pods.validation import validate_manifest
from k8s_workloads.states import KubernetesJob
from tests.support.pod_builds import (
    CALLBACK_ID,
    TEMPLATE,
    VERSION,
    assert_valid_pod,
    callback_pod,
    task_pod,
)


def test_namespace_precedence_template_then_executor_then_override() -> None:
    assert task_pod()["metadata"]["namespace"] == "airflow"
    override = {"metadata": {"namespace": "team-a"}}
    assert task_pod(pod_override=override)["metadata"]["namespace"] == "team-a"


def test_env_order_template_marker_override() -> None:
    override = {"spec": {"containers": [{"name": "base", "env": [{"name": "O", "value": "o"}]}]}}
    env = task_pod(pod_override=override)["spec"]["containers"][0]["env"]
    assert [e["name"] for e in env] == ["FROM_TEMPLATE", "AIRFLOW_IS_K8S_EXECUTOR_POD", "O"]


def test_image_precedence() -> None:
    assert task_pod()["spec"]["containers"][0]["image"] == "airflow:3.3.2"
    assert task_pod(kube_image=None)["spec"]["containers"][0]["image"] == "template:1"
    override = {"spec": {"containers": [{"name": "base", "image": "custom:9"}]}}
    assert task_pod(pod_override=override)["spec"]["containers"][0]["image"] == "custom:9"
    empty_image = {"spec": {"containers": [{"name": "base", "image": ""}]}}
    assert task_pod(pod_override=empty_image)["spec"]["containers"][0]["image"] == "airflow:3.3.2"


def test_no_template_gives_the_bare_dynamic_pod() -> None:
    pod = task_pod(base_worker_pod=None, kube_image=None)
    assert pod["spec"] == {
        "containers": [
            {
                "name": "base",
                "args": ["python", "-m", "x"],
                "env": [{"name": "AIRFLOW_IS_K8S_EXECUTOR_POD", "value": "True"}],
                # The log's tail as its message when it fails (issue 32).
                "terminationMessagePolicy": "FallbackToLogsOnError",
            }
        ],
        "restartPolicy": "Never",  # not the API server's default, Always (issue 29)
    }
    assert "apiVersion" not in pod  # as the provider: only what the template has


def test_long_pod_id_gets_a_new_suffix_with_a_warning() -> None:
    long_id = "a" * 70
    with pytest.warns(UserWarning, match="longer than 63"):
        pod = task_pod(pod_id=long_id, rng=random.Random(3))
    name = pod["metadata"]["name"]
    assert len(name) == 63
    assert re.fullmatch(r"a{54}-[a-z0-9]{8}", name)


def test_512_character_ids_still_give_a_valid_pod() -> None:
    dag_id, task_id = "d" * 512, "t.ü" * 170
    pod = task_pod(
        dag_id=dag_id, task_id=task_id, pod_id=create_unique_id(dag_id, task_id), run_id="r" * 512
    )
    assert validate_manifest(pod) == []
    assert pod["metadata"]["annotations"]["dag_id"] == dag_id
    key = annotations_to_key(pod["metadata"]["annotations"])
    assert key == TaskInstanceKey(dag_id, task_id, "r" * 512)


def test_callback_pod_shape() -> None:
    pod = callback_pod(dag_id="etl", run_id="scheduled__2026", rng=random.Random(1))
    metadata = pod["metadata"]
    assert re.fullmatch(r"callback-019e9fc6-[a-z0-9]{8}", metadata["name"])
    assert metadata["annotations"] == {
        "callback_id": CALLBACK_ID,
        "dag_id": "etl",
        "run_id": "scheduled__2026",
    }
    assert metadata["labels"] == {
        "tier": "worker",
        "airflow-workload-type": "callback",
        "kubernetes_executor": "True",
        "airflow-worker": "42",
        "airflow_version": VERSION,
    }
    container = pod["spec"]["containers"][0]
    assert container["name"] == "base"
    assert container["image"] == "airflow:3.3.2"  # as for tasks: the configured image wins
    assert container["args"][:4] == [
        "python", "-m", "airflow.sdk.execution_time.execute_workload", "--json-string",
    ]  # fmt: skip
    assert '"type":"ExecuteCallback"' in container["args"][4]
    assert {"name": "FROM_TEMPLATE", "value": "1"} in container["env"]
    assert validate_manifest(pod) == []
    assert annotations_to_key(
        metadata["annotations"], metadata["labels"], airflow_version=VERSION
    ) == CallbackKey(CALLBACK_ID)


def test_callback_pod_without_dag_or_run_and_with_template_image() -> None:
    pod = callback_pod(kube_image=None)
    assert pod["metadata"]["annotations"] == {"callback_id": CALLBACK_ID}
    assert pod["spec"]["containers"][0]["image"] == "template:1"


@pytest.mark.parametrize("version", ["3.2.2", "2.11.0"])
def test_callback_pods_need_airflow_3_3(version: str) -> None:
    with pytest.raises(CallbackWorkloadsUnsupported, match=version):
        callback_pod(airflow_version=version)


def test_callback_pod_rejects_a_bad_id() -> None:
    with pytest.raises(InvalidKey):
        callback_pod(callback_id="not-a-uuid")


@pytest.mark.parametrize(
    ("field", "value"),
    [("try_number", 10**70), ("try_number", -5), ("try_number", 2**31), ("map_index", -2)],
)
def test_counters_no_task_instance_key_holds_are_refused(field: str, value: int) -> None:
    # 10**70 gives a 71-character try_number label, -5 an annotation the watcher cannot
    # decode, map_index -2 a pod without map_index that decodes as another task's (-1).
    with pytest.raises(InvalidKey, match=field) as caught:
        task_pod(**{field: value})
    assert caught.value.field == field
    assert len(str(caught.value)) < 200


def test_the_largest_counters_airflow_stores_still_give_a_valid_pod() -> None:
    pod = task_pod(try_number=2**31 - 1, map_index=2**31 - 1)
    assert validate_manifest(pod) == []
    metadata = pod["metadata"]
    key = annotations_to_key(metadata["annotations"], metadata["labels"], airflow_version=VERSION)
    assert key == TaskInstanceKey(
        "etl", "load", "manual__2026-06-07T01:50:23+00:00", 2**31 - 1, 2**31 - 1
    )


def test_callback_pods_are_checked_too() -> None:
    with pytest.raises(InvalidPod, match=r"metadata\.name"):
        callback_pod(pod_id="Callback_1")
    with pytest.raises(InvalidPod, match=r"metadata\.namespace"):
        callback_pod(namespace="Bad NS", base_worker_pod=None)
    with pytest.raises(InvalidPod, match=r"metadata\.annotations"):
        callback_pod(dag_id="d" * 300_000)


OVERRIDE: dict[str, Any] = {
    "metadata": {"labels": {"team": "analytics", "size": "big"}},
    "spec": {
        "containers": [
            {"name": "base", "resources": {"limits": {"memory": "8Gi"}}, "env": [{"name": "B"}]}
        ],
        "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}],
    },
}


def test_a_bad_template_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidPod) as raised:
        PodTemplate({"spec": {"hostNetwork": "yes"}})
    assert raised.value.field == "spec.hostNetwork"


def test_a_long_pod_id_warns_at_the_caller() -> None:
    arguments: dict[str, Any] = {
        "namespace": "airflow",
        "scheduler_job_id": 1,
        "pod_id": "a" * 80,
        "dag_id": "etl",
        "task_id": "load",
        "kube_image": None,
        "try_number": 1,
        "args": ["run"],
        "airflow_version": VERSION,
    }
    # The general builder and a prepared template's, with the same arguments.
    builds: tuple[Callable[[], dict[str, Any]], ...] = (
        lambda: construct_task_pod(**arguments),
        lambda: construct_task_pod(base_worker_pod=PodTemplate(), **arguments),
    )
    for build in builds:
        with pytest.warns(UserWarning, match="truncating") as caught:
            build()
        assert caught[0].filename == __file__


_COMMON: dict[str, Any] = {
    "namespace": "airflow",
    "scheduler_job_id": 5,
    "airflow_version": VERSION,
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
        airflow_version=VERSION,
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
        airflow_version=VERSION,
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


# --- generic workloads' pods (issue 30, item 5) ---------------------------------------------


def test_a_generic_pod_is_the_template_with_the_command_and_its_identity() -> None:
    pod = construct_generic_pod(
        workload_id="nightly/report 1",
        namespace="jobs",
        scheduler_job_id="runner-1",
        kube_image=None,
        args=["python", "-m", "reports", "--day", "2026-06-07"],
        base_worker_pod=TEMPLATE,
        rng=random.Random(2),
    )
    assert_valid_pod(pod)
    metadata, (base,) = pod["metadata"], pod["spec"]["containers"]
    assert metadata["namespace"] == "jobs"
    assert metadata["annotations"] == {"workload_id": "nightly/report 1"}
    labels = metadata["labels"]
    assert labels["airflow-workload-type"] == "generic"
    assert labels["kubernetes_executor"] == "True"
    assert labels["airflow-worker"] == "runner-1"
    assert labels["workload_id"] == make_safe_label_value("nightly/report 1")
    assert labels["tier"] == "worker"  # the template's
    assert "airflow_version" not in labels
    assert metadata["name"] == create_unique_id("nightly/report 1", rng=random.Random(2))
    assert base["args"] == ["python", "-m", "reports", "--day", "2026-06-07"]
    assert base["image"] == "template:1"  # no image given: the template's
    assert "--json-string" not in json.dumps(pod)
    assert annotations_to_key(metadata["annotations"], labels) == GenericKey("nightly/report 1")


def test_a_generic_jobs_pod_takes_its_override_image_and_template_as_a_tasks_does() -> None:
    job = KubernetesJob(GenericKey("job-1"), ("run",), pod_override=OVERRIDE, kube_image="q:2")
    pod = construct_pod(
        job, base_worker_pod=TEMPLATE, rng=random.Random(1), **_COMMON | {"airflow_version": None}
    )
    assert_valid_pod(pod)
    (base,) = pod["spec"]["containers"]
    assert base["image"] == "q:2"
    assert base["resources"] == {"limits": {"memory": "8Gi"}}
    assert pod["metadata"]["labels"]["team"] == "analytics"
    assert pod["spec"]["volumes"] == OVERRIDE["spec"]["volumes"]
    assert pod == construct_generic_pod(
        workload_id="job-1",
        namespace="airflow",
        scheduler_job_id=5,
        kube_image="q:2",
        args=["run"],
        base_worker_pod=TEMPLATE,
        pod_override=OVERRIDE,
        rng=random.Random(1),
    )
    prepared = construct_pod(
        job, base_worker_pod=PodTemplate(TEMPLATE), rng=random.Random(1), **_COMMON
    )
    assert prepared == pod  # the Airflow version, given or not, plays no part


@pytest.mark.parametrize(
    ("override", "words"),
    [
        ({"metadata": {"annotations": {"workload_id": "other"}}}, "annotation 'workload_id'"),
        ({"metadata": {"annotations": {"callback_id": CALLBACK_ID}}}, "'callback_id' must not"),
        ({"metadata": {"labels": {"airflow-workload-type": "callback"}}}, "airflow-workload-type"),
        ({"metadata": {"labels": {"airflow-worker": "9"}}}, "label 'airflow-worker'"),
    ],
)
def test_a_generic_pods_identity_cannot_be_overridden(override: dict[str, Any], words: str) -> None:
    with pytest.raises(PodReconciliationError, match=re.escape(words)):
        construct_generic_pod(
            workload_id="job-1",
            namespace="jobs",
            scheduler_job_id=1,
            kube_image="img:1",
            args=["run"],
            pod_override=override,
        )


def test_a_generic_pod_refuses_an_id_no_key_holds() -> None:
    with pytest.raises(InvalidKey) as raised:
        construct_generic_pod(
            workload_id="a\nb", namespace="jobs", scheduler_job_id=1, kube_image="i", args=[]
        )
    assert raised.value.field == "id"


def test_task_and_callback_jobs_need_the_airflow_version() -> None:
    common = _COMMON | {"airflow_version": None}
    for job in (
        KubernetesJob(TaskInstanceKey("etl", "load", "r", 1, -1), ("run",)),
        KubernetesJob(CallbackKey(CALLBACK_ID), ("run",)),
    ):
        with pytest.raises(InvalidJob, match="airflow_version is not set") as raised:
            construct_pod(job, **common)
        assert raised.value.field == "airflow_version"


@pytest.mark.parametrize(
    ("job", "field", "words"),
    [
        (KubernetesJob(TaskInstanceKey("d", "t", "r"), ("run",)), "airflow_version", "not set"),
        (KubernetesJob(CallbackKey(CALLBACK_ID), ("run",)), "airflow_version", "not set"),
        (KubernetesJob(GenericKey("j"), ("run", 5)), "command", "strings"),  # type: ignore[arg-type]
        (KubernetesJob(GenericKey("j"), ("run",), kube_image=""), "kube_image", "non-empty"),
        (KubernetesJob(GenericKey("j"), (), pod_template_file=""), "pod_template_file", "path"),
        (KubernetesJob(GenericKey("j"), (), pod_template_file="t.yaml"), "pod_template_file",
         "no load_template"),
    ],
)  # fmt: skip
def test_check_job_refuses_what_no_pod_can_be_built_from_naming_the_field(
    job: KubernetesJob[Any], field: str, words: str
) -> None:
    with pytest.raises(InvalidJob, match=re.escape(words)) as raised:
        check_job(job, airflow_version=None, loads_templates=False)
    assert raised.value.field == field
    assert str(raised.value).startswith(f"{field}: ")


def test_check_job_refuses_an_override_on_a_callback_and_a_callback_before_3_3() -> None:
    callback = KubernetesJob(CallbackKey(CALLBACK_ID), ("run",), pod_override=OVERRIDE)
    with pytest.raises(InvalidJob) as raised:
        check_job(callback, airflow_version=VERSION)
    assert raised.value.field == "pod_override"
    with pytest.raises(CallbackWorkloadsUnsupported):
        check_job(KubernetesJob(CallbackKey(CALLBACK_ID), ("run",)), airflow_version="3.2.1")
    check_job(KubernetesJob(GenericKey("j"), ("run",), pod_override=OVERRIDE), airflow_version=None)


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"spec": {"hostNetwork": "yes"}}, "spec.hostNetwork"),
        ({"metadata": {"name": "Bad_Name!"}}, "metadata.name"),
        ({"metadata": {"annotations": {"a/b/c": "x"}}}, "metadata.annotations['a/b/c']"),
        (
            {"spec": {"initContainers": [{"name": "x_y", "image": "i"}]}},
            "spec.initContainers[0].name",
        ),
        ("not a pod", "pod"),
    ],
)  # fmt: skip
def test_check_pod_override_names_the_field_it_breaks(override: Any, field: str) -> None:
    for template in (None, PodTemplate(TEMPLATE)):
        with pytest.raises(InvalidPod) as raised:
            check_pod_override(override, template)
        assert raised.value.field == field


def test_check_pod_override_leaves_what_the_other_layers_give_to_them() -> None:
    # No pod name, a container named by the template: valid as an override.
    check_pod_override(OVERRIDE)
    check_pod_override({"spec": {"containers": [{"resources": {}}]}, "metadata": {"name": None}})

"""Pod builders: reference §2.2 (task pods), §2.6 (callback pods), §1.6 (command args)."""

from __future__ import annotations

import copy
import random
import re
from typing import Any

import pytest

from k8s_workloads.codec import annotations_to_key
from k8s_workloads.compat import CallbackWorkloadsUnsupported
from k8s_workloads.keys import CallbackKey, InvalidKey, TaskInstanceKey
from k8s_workloads.labels import create_unique_id, make_safe_label_value
from k8s_workloads.pods import (
    InvalidMutatedPod,
    InvalidPod,
    PodMutationHookError,
    callback_pod_name,
    construct_callback_pod,
    construct_task_pod,
    parse_callback_log_path,
    workload_command_args,
)
from k8s_workloads.reconcile import PodReconciliationError
from k8s_workloads.validation import validate_manifest

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
            }
        ]
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


def test_inputs_are_not_mutated() -> None:
    template = copy.deepcopy(TEMPLATE)
    override = {"metadata": {"labels": {"x": "y"}}, "spec": {"containers": [{"name": "base"}]}}
    override_before = copy.deepcopy(override)
    pod = task_pod(base_worker_pod=template, pod_override=override)
    pod["spec"]["containers"][0]["env"].append({"name": "NEW"})
    pod["metadata"]["labels"]["new"] = "1"
    assert template == TEMPLATE
    assert override == override_before


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


# --- callback pods ----------------------------------------------------------------------


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


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            f"executor_callbacks/etl/scheduled__2026-01-01/{CALLBACK_ID}",
            ("etl", "scheduled__2026-01-01", CALLBACK_ID),
        ),
        (
            f"/logs/executor_callbacks/etl/run/with/slash/{CALLBACK_ID}.log",
            ("etl", "run/with/slash", CALLBACK_ID),
        ),
        ("dag_id=etl/run_id=r/task_id=t/attempt=1.log", None),
        ("", None),
        (None, None),
    ],
)  # fmt: skip
def test_parse_callback_log_path(path: str | None, expected: tuple[str, str, str] | None) -> None:
    assert parse_callback_log_path(path) == expected


def test_workload_command_args() -> None:
    assert workload_command_args('{"a":1}') == [
        "python", "-m", "airflow.sdk.execution_time.execute_workload", "--json-string", '{"a":1}',
    ]  # fmt: skip
    assert workload_command_args({"a": 1})[-1] == '{"a":1}'
    with pytest.raises(TypeError, match="JSON string or a mapping"):
        workload_command_args(5)  # type: ignore[arg-type]


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


# --- every pod a builder returns is one the API server accepts (issue 11, item 4) ---------

# A made-up Execution API token (a JWT's shape), which no error message may show.
TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0aSIsImV4cCI6OTl9.c2VjcmV0LXNpZ25hdHVyZS12YWx1ZQ"  # noqa: S105
TOKEN_ARGS = workload_command_args({"token": TOKEN, "ti": {"dag_id": "etl"}})


def _with_container(**fields: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "base", **fields}]}}


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


@pytest.mark.parametrize(
    ("layer", "field", "message"),
    [
        # A typo the provider's own test fixture has; its loader reads bool("False,"): True.
        ({"spec": {"hostNetwork": "False,"}}, "spec.hostNetwork",
         "must be a boolean, got str 'False,'"),
        ({"spec": {"hostNetwork": "false"}}, "spec.hostNetwork", "must be a boolean"),
        ({"spec": {"hostNetwork": 0}}, "spec.hostNetwork", "must be a boolean, got int 0"),
        (_with_container(tty="true"), "spec.containers[0].tty", "must be a boolean"),
        ({"spec": {"terminationGracePeriodSeconds": 2.5}}, "spec.terminationGracePeriodSeconds",
         "must be an integer, got float 2.5"),
        ({"spec": {"terminationGracePeriodSeconds": True}}, "spec.terminationGracePeriodSeconds",
         "must be an integer, got bool"),
        ({"spec": {"terminationGracePeriodSeconds": "ten"}}, "spec.terminationGracePeriodSeconds",
         "must be an integer, got str 'ten'"),
        ({"spec": {"priority": 2**31}}, "spec.priority", "out of the int32 range"),
        (_with_container(env=[{"name": "DEBUG", "value": True}]), "spec.containers[0].env[0].value",
         "must be a string, got bool True"),
        (_with_container(env=[{"name": "RATIO", "value": 0.5}]), "spec.containers[0].env[0].value",
         "must be a string, got float 0.5"),
        (_with_container(env="X=1"), "spec.containers[0].env", "must be a list, got str 'X=1'"),
        (_with_container(imagee="typo:1"), "spec.containers[0].imagee",
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


def test_callback_pods_are_checked_too() -> None:
    with pytest.raises(InvalidPod, match=r"metadata\.name"):
        callback_pod(pod_id="Callback_1")
    with pytest.raises(InvalidPod, match=r"metadata\.namespace"):
        callback_pod(namespace="Bad NS", base_worker_pod=None)
    with pytest.raises(InvalidPod, match=r"metadata\.annotations"):
        callback_pod(dag_id="d" * 300_000)


def test_a_template_missing_required_fields_is_fine_when_the_merge_fills_them() -> None:
    # A partial template (no containers, a nameless container) is merged over; only the
    # finished pod must have every required field.
    partial = {"spec": {"nodeSelector": {"pool": "a"}, "containers": [{"image": "t:1"}]}}
    pod = task_pod(base_worker_pod=partial)
    assert pod["spec"]["containers"][0]["name"] == "base"
    assert validate_manifest(pod) == []


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

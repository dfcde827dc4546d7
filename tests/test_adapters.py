"""k8s_workloads.adapters with whichever kubernetes is installed (37 in .venv, 36 beside Airflow).

Every expectation here holds on both versions, except where a test names the version:
the two clients' schemas differ by a few fields.
"""

from __future__ import annotations

import copy
import datetime
import pickle
import re
import types
from typing import Any

import kubernetes
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubernetes.client import (
    Configuration,
    V1Affinity,
    V1Capabilities,
    V1ConfigMapVolumeSource,
    V1Container,
    V1ContainerPort,
    V1EmptyDirVolumeSource,
    V1EnvVar,
    V1KeyToPath,
    V1NodeAffinity,
    V1NodeSelector,
    V1NodeSelectorRequirement,
    V1NodeSelectorTerm,
    V1ObjectMeta,
    V1Pod,
    V1PodSecurityContext,
    V1PodSpec,
    V1ResourceRequirements,
    V1SecurityContext,
    V1Toleration,
    V1Volume,
    V1VolumeMount,
)

from k8s_workloads import adapters
from k8s_workloads.adapters import (
    InvalidManifest,
    NotAModel,
    NotAPod,
    to_manifest,
    to_manifest_object,
    to_v1pod,
    v1pod_mutation_hook,
)
from k8s_workloads.pods import InvalidPod, PodMutationHookError, construct_task_pod
from k8s_workloads.pods.manifest import PodReconciliationError
from tests.support.fresh_python import run_python

K8S_MAJOR = int(kubernetes.__version__.split(".")[0])

# A worker pod as a template and an API server would write it: every datetime in the form
# isoformat() gives, so that the round trip is the identity.
REALISTIC_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "etl-load-7f3k2m9q",
        "namespace": "airflow",
        "uid": "0c7c3a8e-2b4f-4a51-9f0e-6d1f3e2a9b10",
        "resourceVersion": "812",
        "creationTimestamp": "2026-06-07T08:09:10+00:00",
        "labels": {
            "airflow-worker": "42",
            "kubernetes_executor": "True",
            "app.kubernetes.io/name": "airflow",
        },
        "annotations": {"dag_id": "etl", "task_id": "load", "try_number": "1"},
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": "u-1", "controller": True}
        ],
    },
    "spec": {
        "serviceAccountName": "airflow-worker",
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 600,
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "securityContext": {
            "runAsUser": 50000,
            "fsGroup": 0,
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "initContainers": [
            {
                "name": "git-sync-init",
                "image": "registry.k8s.io/git-sync/git-sync:v4.2.1",
                "args": ["--one-time"],
                "env": [{"name": "GITSYNC_REPO", "value": "https://example.com/dags.git"}],
                "volumeMounts": [{"name": "dags", "mountPath": "/git"}],
                "securityContext": {"runAsUser": 65533},
            }
        ],
        "containers": [
            {
                "name": "base",
                "image": "apache/airflow:3.3.2",
                "imagePullPolicy": "IfNotPresent",
                "args": ["python", "-m", "airflow.sdk.execution_time.execute_workload"],
                "env": [
                    {"name": "AIRFLOW_IS_K8S_EXECUTOR_POD", "value": "True"},
                    {
                        "name": "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN",
                        "valueFrom": {"secretKeyRef": {"name": "airflow-db", "key": "conn"}},
                    },
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                ],
                "envFrom": [{"configMapRef": {"name": "airflow-env"}}],
                "resources": {
                    "requests": {"cpu": "500m", "memory": "1Gi"},
                    "limits": {"memory": "2Gi", "nvidia.com/gpu": "1"},
                },
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                },
                "ports": [{"name": "worker-logs", "containerPort": 8793, "protocol": "TCP"}],
                "livenessProbe": {
                    "httpGet": {"path": "/health", "port": "worker-logs"},
                    "initialDelaySeconds": 10,
                    "periodSeconds": 30,
                },
                "readinessProbe": {"tcpSocket": {"port": 8793}},
                "volumeMounts": [
                    {"name": "dags", "mountPath": "/opt/airflow/dags", "readOnly": True},
                    {"name": "logs", "mountPath": "/opt/airflow/logs"},
                    {
                        "name": "config",
                        "mountPath": "/opt/airflow/airflow.cfg",
                        "subPath": "airflow.cfg",
                    },
                ],
            }
        ],
        "volumes": [
            {"name": "dags", "emptyDir": {}},
            {"name": "logs", "persistentVolumeClaim": {"claimName": "airflow-logs"}},
            {
                "name": "config",
                "configMap": {
                    "name": "airflow-config",
                    "items": [{"key": "airflow.cfg", "path": "airflow.cfg"}],
                    "defaultMode": 420,
                },
            },
        ],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "pool", "operator": "In", "values": ["workers"]}
                            ]
                        }
                    ]
                }
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"component": "worker"}},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            },
        },
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "airflow", "effect": "NoSchedule"},
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
        ],
    },
    "status": {
        "phase": "Running",
        "podIP": "10.0.0.5",
        "startTime": "2026-06-07T08:09:12.250000+00:00",
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "lastTransitionTime": "2026-06-07T08:09:20-05:00",
            }
        ],
    },
}

# The same template written twice: as a manifest, and with the client's model classes.
TEMPLATE_MANIFEST: dict[str, Any] = {
    "metadata": {
        "labels": {"team": "data"},
        "creationTimestamp": "2026-01-02T03:04:05+00:00",
    },
    "spec": {
        "securityContext": {"runAsUser": 50000, "fsGroup": 0},
        "containers": [
            {
                "name": "base",
                "image": "apache/airflow:3.3.2",
                "env": [{"name": "AIRFLOW__CORE__LOAD_EXAMPLES", "value": "False"}],
                "resources": {"requests": {"cpu": "250m"}, "limits": {"memory": "1Gi"}},
                "securityContext": {"capabilities": {"drop": ["ALL"]}},
                "ports": [{"containerPort": 8793}],
                "volumeMounts": [{"name": "cfg", "mountPath": "/opt/airflow/airflow.cfg"}],
            }
        ],
        "volumes": [
            {
                "name": "cfg",
                "configMap": {"name": "airflow", "items": [{"key": "cfg", "path": "airflow.cfg"}]},
            },
            {"name": "scratch", "emptyDir": {}},
        ],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}
                    ]
                }
            }
        },
        "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
    },
}


def template_v1pod() -> V1Pod:
    return V1Pod(
        metadata=V1ObjectMeta(
            labels={"team": "data"},
            creation_timestamp=datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
        ),
        spec=V1PodSpec(
            security_context=V1PodSecurityContext(run_as_user=50000, fs_group=0),
            containers=[
                V1Container(
                    name="base",
                    image="apache/airflow:3.3.2",
                    env=[V1EnvVar(name="AIRFLOW__CORE__LOAD_EXAMPLES", value="False")],
                    resources=V1ResourceRequirements(
                        requests={"cpu": "250m"}, limits={"memory": "1Gi"}
                    ),
                    security_context=V1SecurityContext(capabilities=V1Capabilities(drop=["ALL"])),
                    ports=[V1ContainerPort(container_port=8793)],
                    volume_mounts=[
                        V1VolumeMount(name="cfg", mount_path="/opt/airflow/airflow.cfg")
                    ],
                )
            ],
            volumes=[
                V1Volume(
                    name="cfg",
                    config_map=V1ConfigMapVolumeSource(
                        name="airflow", items=[V1KeyToPath(key="cfg", path="airflow.cfg")]
                    ),
                ),
                V1Volume(name="scratch", empty_dir=V1EmptyDirVolumeSource()),
            ],
            affinity=V1Affinity(
                node_affinity=V1NodeAffinity(
                    required_during_scheduling_ignored_during_execution=V1NodeSelector(
                        node_selector_terms=[
                            V1NodeSelectorTerm(
                                match_expressions=[
                                    V1NodeSelectorRequirement(
                                        key="pool", operator="In", values=["a"]
                                    )
                                ]
                            )
                        ]
                    )
                )
            ),
            tolerations=[V1Toleration(key="dedicated", operator="Exists", effect="NoSchedule")],
        ),
    )


TASK_POD_ARGS: dict[str, Any] = {
    "namespace": "airflow",
    "scheduler_job_id": 42,
    "pod_id": "etl-load-7f3k2m9q",
    "dag_id": "etl",
    "task_id": "load",
    "kube_image": "apache/airflow:3.3.2",
    "try_number": 1,
    "args": ["python", "-m", "airflow.sdk.execution_time.execute_workload"],
    "airflow_version": "3.3.2",
    "run_id": "manual__2026-06-07",
}


# --- import boundaries ----------------------------------------------------------------------


def test_only_the_adapter_module_imports_kubernetes() -> None:
    code = (
        "import sys, k8s_workloads, k8s_workloads.pods, k8s_workloads.pods.reconcile; "
        "print('kubernetes' in sys.modules, hasattr(k8s_workloads, 'adapters')); "
        "import k8s_workloads.adapters; "
        "print('kubernetes' in sys.modules)"
    )
    assert run_python(code).split() == ["False", "False", "True"]


def test_public_names() -> None:
    for name in adapters.__all__:
        value = getattr(adapters, name)
        assert callable(value) or isinstance(value, (str, int, frozenset, tuple)), name
    for error in (NotAModel, NotAPod, InvalidManifest):
        assert issubclass(error, ValueError)
        assert error.__doc__ is not None
        assert "\n" not in error.__doc__
    assert issubclass(NotAPod, TypeError)
    assert issubclass(NotAPod, NotAModel)


# --- V1Pod -> manifest ----------------------------------------------------------------------


def test_v1pod_built_from_model_classes_gives_the_camel_case_manifest() -> None:
    assert to_manifest(template_v1pod()) == TEMPLATE_MANIFEST


def test_to_manifest_gives_what_sanitize_for_serialization_gives() -> None:
    pod = template_v1pod()
    sanitized = adapters._api_client().sanitize_for_serialization(pod)
    assert to_manifest(pod) == sanitized
    assert to_manifest_object(pod) == sanitized


def test_to_manifest_leaves_out_nulls_and_empty_fields_stay() -> None:
    pod = V1Pod(
        api_version=None,
        metadata=V1ObjectMeta(name="p", labels={}, annotations=None),
        spec=V1PodSpec(containers=[], security_context=V1PodSecurityContext()),
    )
    assert to_manifest(pod) == {
        "metadata": {"name": "p", "labels": {}},
        "spec": {"containers": [], "securityContext": {}},
    }
    assert to_manifest(V1Pod()) == {}


def test_to_manifest_of_a_mapping_is_a_clean_deep_copy() -> None:
    source = {"metadata": {"name": "p", "labels": {"a": "b"}, "uid": None}, "spec": None}
    proxy = types.MappingProxyType(source)
    manifest = to_manifest(proxy)
    assert manifest == {"metadata": {"name": "p", "labels": {"a": "b"}}}
    manifest["metadata"]["labels"]["a"] = "changed"
    assert source["metadata"] == {"name": "p", "labels": {"a": "b"}, "uid": None}
    with pytest.raises(PodReconciliationError, match=r"pod\.metadata\.name"):
        to_manifest({"metadata": {"name": object()}})


def test_to_manifest_copies_never_share_with_the_pod() -> None:
    pod = template_v1pod()
    manifest = to_manifest(pod)
    manifest["metadata"]["labels"]["team"] = "changed"
    assert pod.metadata is not None
    assert pod.metadata.labels == {"team": "data"}


@pytest.mark.parametrize("value", [42, "pod", None, [REALISTIC_POD], b"{}"])
def test_to_manifest_refuses_what_is_not_a_pod_naming_the_type(value: object) -> None:
    with pytest.raises(NotAPod, match=rf"got {type(value).__name__}$") as caught:
        to_manifest(value)  # type: ignore[arg-type]
    assert isinstance(caught.value, TypeError)
    assert isinstance(caught.value, ValueError)


def test_to_manifest_points_other_kubernetes_objects_to_to_manifest_object() -> None:
    container = V1Container(name="base", image_pull_policy="Always")
    with pytest.raises(NotAPod, match=r"got V1Container \(use to_manifest_object"):
        to_manifest(container)  # type: ignore[arg-type]
    assert to_manifest_object(container) == {"name": "base", "imagePullPolicy": "Always"}
    assert to_manifest_object(V1Toleration(key="k", toleration_seconds=5)) == {
        "key": "k",
        "tolerationSeconds": 5,
    }
    assert to_manifest_object({"a": None, "b": (1, 2)}) == {"b": [1, 2]}
    with pytest.raises(NotAModel, match=r"got object$"):
        to_manifest_object(object())


# --- manifest -> V1Pod -> manifest ----------------------------------------------------------


@pytest.mark.parametrize("strict", [False, True])
def test_realistic_pod_round_trips(strict: bool) -> None:
    original = copy.deepcopy(REALISTIC_POD)
    pod = to_v1pod(REALISTIC_POD, strict=strict)
    assert isinstance(pod, V1Pod)
    assert pod.metadata is not None
    assert pod.metadata.creation_timestamp == datetime.datetime(
        2026, 6, 7, 8, 9, 10, tzinfo=datetime.timezone.utc
    )
    assert pod.spec is not None
    assert pod.spec.containers[0].image_pull_policy == "IfNotPresent"
    assert to_manifest(pod) == REALISTIC_POD
    assert original == REALISTIC_POD  # the input is not touched


def test_template_round_trips_both_ways() -> None:
    assert to_manifest(to_v1pod(TEMPLATE_MANIFEST)) == TEMPLATE_MANIFEST
    assert to_v1pod(to_manifest(template_v1pod())) == template_v1pod()


@pytest.mark.parametrize(
    ("written", "read_back"),
    [
        ("2026-06-07T08:09:10Z", "2026-06-07T08:09:10+00:00"),
        ("2026-06-07T08:09:10.5Z", "2026-06-07T08:09:10.500000+00:00"),
        ("2026-06-07T08:09:10+02:00", "2026-06-07T08:09:10+02:00"),
        ("2026-06-07T08:09:10", "2026-06-07T08:09:10"),
    ],
)
def test_datetimes_come_back_as_isoformat(written: str, read_back: str) -> None:
    # The API server writes "Z"; both clients parse it and give isoformat()'s "+00:00".
    manifest = {"metadata": {"name": "p", "creationTimestamp": written}}
    assert to_manifest(to_v1pod(manifest)) == {
        "metadata": {"name": "p", "creationTimestamp": read_back}
    }


def test_nulls_are_absent_fields() -> None:
    manifest = {
        "metadata": {"name": "p", "labels": {"a": "1", "b": None}, "namespace": None},
        "spec": {"containers": [{"name": "c", "image": None}], "nodeSelector": None},
    }
    assert to_manifest(to_v1pod(manifest, strict=True)) == {
        "metadata": {"name": "p", "labels": {"a": "1"}},
        "spec": {"containers": [{"name": "c"}]},
    }


def test_to_v1pod_refuses_what_is_not_a_mapping() -> None:
    with pytest.raises(NotAPod, match="got list"):
        to_v1pod([REALISTIC_POD])  # type: ignore[arg-type]
    with pytest.raises(NotAPod, match="got V1Pod"):
        to_v1pod(template_v1pod())  # type: ignore[arg-type]


def test_built_pods_pickle_even_with_an_unpicklable_global_configuration() -> None:
    # The provider passes a fresh Configuration for this reason: in a cluster the global
    # one holds a closure, and 36's models keep a reference to their configuration.
    saved = Configuration.get_default_copy()
    unpicklable: Any = Configuration()  # 37 types the hook as None: only ever unset
    unpicklable.refresh_api_key_hook = lambda _configuration: None
    Configuration.set_default(unpicklable)
    adapters._api_client.cache_clear()
    try:
        pod = to_v1pod(REALISTIC_POD)
        assert pickle.loads(pickle.dumps(pod)) == pod  # noqa: S301 - bytes made here
    finally:
        Configuration.set_default(saved)
        adapters._api_client.cache_clear()


def test_the_api_client_is_made_once() -> None:
    assert adapters._api_client() is adapters._api_client()


# --- unknown fields: lenient drops, strict names the path -----------------------------------


def _with_container_typo() -> dict[str, Any]:
    manifest = copy.deepcopy(TEMPLATE_MANIFEST)
    manifest["spec"]["containers"][0]["imagee"] = "typo/image:1"
    return manifest


def test_lenient_drops_unknown_fields_as_the_provider_does() -> None:
    manifest = _with_container_typo()
    manifest["metadata"]["labelz"] = {"x": "y"}
    manifest["spec"]["volumes"][1]["emptyDir"]["sizeLimitt"] = "1Gi"
    manifest["extra"] = True
    assert to_manifest(to_v1pod(manifest)) == TEMPLATE_MANIFEST


def test_strict_names_the_unknown_field_and_a_close_match() -> None:
    with pytest.raises(InvalidManifest, match="did you mean 'image'") as caught:
        to_v1pod(_with_container_typo(), strict=True)
    assert caught.value.path == "spec.containers[0].imagee"
    assert str(caught.value).startswith("spec.containers[0].imagee: unknown field: V1Container")


@pytest.mark.parametrize(
    ("manifest", "path", "hint"),
    [
        ({"kindd": "Pod"}, "kindd", "'kind'"),
        ({"api_version": "v1"}, "api_version", "'apiVersion'"),
        (
            {"spec": {"containers": [{"name": "c", "image_pull_policy": "Always"}]}},
            "spec.containers[0].image_pull_policy",
            "'imagePullPolicy'",
        ),
        (
            {"spec": {"containers": [], "volumes": [{"name": "v", "emptyDir": {"x.y": 1}}]}},
            'spec.volumes[0].emptyDir["x.y"]',
            None,
        ),
    ],
)
def test_strict_paths(manifest: dict[str, Any], path: str, hint: str | None) -> None:
    with pytest.raises(InvalidManifest) as caught:
        to_v1pod(manifest, strict=True)
    assert caught.value.path == path
    assert (hint is None) == ("did you mean" not in str(caught.value))
    if hint is not None:
        assert hint in str(caught.value)
    to_v1pod(manifest)  # lenient: dropped, as 36's deserializer drops snake_case names too


def test_fields_only_one_version_knows() -> None:
    # kubernetes 37 (API 1.37) added VolumeMount.bindMountOptions and EmptyDir.mode, for
    # example; 36 does not know them, so they are dropped, or reported by strict mode.
    container = {
        "name": "c",
        "volumeMounts": [{"name": "v", "mountPath": "/v", "bindMountOptions": ["ro"]}],
    }
    manifest = {"spec": {"containers": [container]}}
    if K8S_MAJOR >= 37:
        assert to_manifest(to_v1pod(manifest, strict=True)) == manifest
    else:
        assert to_manifest(to_v1pod(manifest))["spec"]["containers"][0]["volumeMounts"] == [
            {"name": "v", "mountPath": "/v"}
        ]
        with pytest.raises(InvalidManifest) as caught:
            to_v1pod(manifest, strict=True)
        assert caught.value.path == "spec.containers[0].volumeMounts[0].bindMountOptions"


# --- values of the wrong type: an error in both modes, on both versions ---------------------

WRONG_VALUES = [
    # 36 alone would read "false" as True, True as 1 and keep the float port; 37 alone
    # would raise pydantic's error without the path.
    ({"name": "c", "stdin": "false"}, "spec.containers[0].stdin", "expected a boolean"),
    (
        {"name": "c", "ports": [{"containerPort": True}]},
        "spec.containers[0].ports[0].containerPort",
        "expected an integer",
    ),
    (
        {"name": "c", "ports": [{"containerPort": "80"}]},
        "spec.containers[0].ports[0].containerPort",
        "expected an integer",
    ),
    (
        {"name": "c", "livenessProbe": {"httpGet": {"port": 1.5}}},
        "spec.containers[0].livenessProbe.httpGet.port",
        "got number 1.5",
    ),
    ({"name": "c", "env": "A=1"}, "spec.containers[0].env", "expected an array, got string"),
    (
        {"name": "c", "env": [None]},
        "spec.containers[0].env[0]",
        "expected an object (V1EnvVar), got null",
    ),
    (
        {"name": "c", "resources": {"limits": ["1"]}},
        "spec.containers[0].resources.limits",
        "expected an object",
    ),
    (
        {"name": "c", "resources": {"limits": {"cpu": True}}},
        "spec.containers[0].resources.limits.cpu",
        "got boolean True",
    ),
    (
        {"name": "c", "securityContext": {"runAsUser": 1000.0}},
        "spec.containers[0].securityContext.runAsUser",
        "expected an integer",
    ),
    (
        {"name": "c", "args": [{"a": 1}]},
        "spec.containers[0].args[0]",
        "expected a string, got an object",
    ),
]


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize(("container", "path", "message"), WRONG_VALUES)
def test_wrong_values_are_typed_errors_with_their_path(
    container: dict[str, Any], path: str, message: str, strict: bool
) -> None:
    with pytest.raises(InvalidManifest, match=re.escape(message)) as caught:
        to_v1pod({"spec": {"containers": [container]}}, strict=strict)
    assert caught.value.path == path


@pytest.mark.parametrize(
    ("manifest", "path"),
    [
        ({"metadata": {"creationTimestamp": "yesterday"}}, "metadata.creationTimestamp"),
        ({"metadata": {"creationTimestamp": "2026-02-30T00:00:00Z"}}, "metadata.creationTimestamp"),
        ({"metadata": {"creationTimestamp": 1780000000}}, "metadata.creationTimestamp"),
        (
            {"metadata": {"labels": {"app.kubernetes.io/on": False}}},
            'metadata.labels["app.kubernetes.io/on"]',
        ),
        ({"metadata": "p"}, "metadata"),
        ({"metadata": {1: "p"}}, "metadata"),
    ],
)
def test_wrong_metadata(manifest: dict[Any, Any], path: str) -> None:
    with pytest.raises(InvalidManifest) as caught:
        to_v1pod(manifest)
    assert caught.value.path == path


@pytest.mark.parametrize(
    ("manifest", "path", "model"),
    [
        ({"spec": {"containers": [{"image": "i"}]}}, "spec.containers[0].name", "V1Container"),
        ({"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}}, "spec.containers", "V1PodSpec"),
        (
            {"spec": {"containers": [{"name": "c", "env": [{"value": "1"}]}]}},
            "spec.containers[0].env[0].name",
            "V1EnvVar",
        ),
        (
            {"spec": {"containers": [{"name": "c", "readinessProbe": {"httpGet": {"path": "/"}}}]}},
            "spec.containers[0].readinessProbe.httpGet.port",
            "V1HTTPGetAction",
        ),
    ],
)
def test_missing_required_fields_are_named(manifest: dict[str, Any], path: str, model: str) -> None:
    with pytest.raises(InvalidManifest, match=f"{model} requires this field") as caught:
        to_v1pod(manifest)
    assert caught.value.path == path
    assert caught.value.__cause__ is not None  # the client's own error


def test_lenient_takes_numbers_for_strings_as_the_provider_does_strict_does_not() -> None:
    # `cpu: 1` in a YAML template: the provider (kubernetes 36) sends "1"; 37 refuses it.
    container = {"name": "c", "resources": {"limits": {"cpu": 1, "memory": 0.5}}, "args": [7]}
    manifest = {"metadata": {"labels": {"version": 2}}, "spec": {"containers": [container]}}
    assert to_manifest(to_v1pod(manifest)) == {
        "metadata": {"labels": {"version": "2"}},
        "spec": {
            "containers": [
                {"name": "c", "resources": {"limits": {"cpu": "1", "memory": "0.5"}}, "args": ["7"]}
            ]
        },
    }
    with pytest.raises(InvalidManifest) as caught:
        to_v1pod(manifest, strict=True)
    assert caught.value.path == "metadata.labels.version"


# --- construct_task_pod with V1Pod templates and Airflow-style hooks -----------------------


def test_a_v1pod_template_gives_the_same_worker_pod_as_its_manifest() -> None:
    from_v1pod = construct_task_pod(**TASK_POD_ARGS, base_worker_pod=to_manifest(template_v1pod()))
    from_manifest = construct_task_pod(**TASK_POD_ARGS, base_worker_pod=TEMPLATE_MANIFEST)
    assert from_v1pod == from_manifest
    assert from_v1pod["metadata"]["creationTimestamp"] == "2026-01-02T03:04:05+00:00"
    assert from_v1pod["spec"]["containers"][0]["env"][0]["name"] == "AIRFLOW__CORE__LOAD_EXAMPLES"


def add_team_label_and_gpu_toleration(pod: V1Pod) -> None:
    """An Airflow ``pod_mutation_hook``: mutates the V1Pod in place, returns nothing."""
    assert pod.metadata is not None
    assert pod.spec is not None
    assert pod.metadata.labels is not None
    pod.metadata.labels["cost-center"] = "analytics"
    pod.spec.tolerations = [
        *(pod.spec.tolerations or []),
        V1Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule"),
    ]
    pod.spec.containers[0].image_pull_policy = "Always"


def test_v1pod_mutation_hook_with_construct_task_pod() -> None:
    hook = v1pod_mutation_hook(add_team_label_and_gpu_toleration)
    mutated = construct_task_pod(
        **TASK_POD_ARGS, base_worker_pod=TEMPLATE_MANIFEST, mutation_hook=hook
    )
    expected = construct_task_pod(**TASK_POD_ARGS, base_worker_pod=TEMPLATE_MANIFEST)
    expected["metadata"]["labels"]["cost-center"] = "analytics"
    expected["spec"]["tolerations"].append(
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    )
    expected["spec"]["containers"][0]["imagePullPolicy"] = "Always"
    assert mutated == expected


def test_v1pod_mutation_hook_return_value_is_ignored_as_airflow_does() -> None:
    def returns_another_pod(pod: V1Pod) -> V1Pod:
        assert pod.metadata is not None
        pod.metadata.annotations = {**(pod.metadata.annotations or {}), "seen": "yes"}
        return V1Pod()

    mutated = construct_task_pod(
        **TASK_POD_ARGS, mutation_hook=v1pod_mutation_hook(returns_another_pod)
    )
    assert mutated["metadata"]["annotations"]["seen"] == "yes"
    assert mutated["metadata"]["name"] == TASK_POD_ARGS["pod_id"]


def test_v1pod_mutation_hook_failures_are_pod_mutation_hook_errors() -> None:
    def raises(_pod: V1Pod) -> None:
        raise RuntimeError("boom")

    def drops_identity(pod: V1Pod) -> None:
        assert pod.metadata is not None
        assert pod.metadata.labels is not None
        del pod.metadata.labels["kubernetes_executor"]

    with pytest.raises(PodMutationHookError, match="boom"):
        construct_task_pod(**TASK_POD_ARGS, mutation_hook=v1pod_mutation_hook(raises))
    with pytest.raises(PodMutationHookError, match="kubernetes_executor"):
        construct_task_pod(**TASK_POD_ARGS, mutation_hook=v1pod_mutation_hook(drops_identity))


@pytest.mark.parametrize(
    "junk",
    [
        {"limits": {"cpu": "1"}, "limitz": {"cpu": "2"}},  # unknown key
        {"limits": {"cpu": 1}},  # a number for a quantity
        {"limits": "1"},  # not an object
    ],
)
def test_hooks_that_put_bad_dicts_in_the_pod_fail_on_both_versions(junk: dict[str, Any]) -> None:
    # 37 refuses these at assignment; 36 keeps them verbatim, and the hook's result is
    # checked, so the two versions agree.
    def assigns_a_dict(pod: V1Pod) -> None:
        assert pod.spec is not None
        container: Any = pod.spec.containers[0]
        container.resources = junk

    with pytest.raises(PodMutationHookError):
        construct_task_pod(**TASK_POD_ARGS, mutation_hook=v1pod_mutation_hook(assigns_a_dict))


# 37 warns when it serialises a dict that sits where a model belongs; 36 does not.
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
def test_hooks_may_put_plain_dicts_in_the_pod_with_either_names() -> None:
    def assigns_dicts(pod: V1Pod) -> None:
        assert pod.spec is not None
        container: Any = pod.spec.containers[0]
        container.security_context = {"run_as_user": 1000, "readOnlyRootFilesystem": True}
        pod.spec.tolerations = [*(pod.spec.tolerations or []), V1Toleration(key="a")]
        pod.spec.tolerations.append({"key": "b", "toleration_seconds": 5})  # type: ignore[arg-type]

    mutated = construct_task_pod(**TASK_POD_ARGS, mutation_hook=v1pod_mutation_hook(assigns_dicts))
    assert mutated["spec"]["containers"][0]["securityContext"] == {
        "runAsUser": 1000,
        "readOnlyRootFilesystem": True,
    }
    assert mutated["spec"]["tolerations"] == [{"key": "a"}, {"key": "b", "tolerationSeconds": 5}]


def test_v1pod_mutation_hook_strict_refuses_unknown_fields_in_the_pod() -> None:
    template = _with_container_typo()
    # The builders refuse the typo before any hook runs (the 1.37 schema has no such field) ...
    with pytest.raises(InvalidPod, match=r"spec\.containers\[0\]\.imagee: unknown field"):
        construct_task_pod(
            **TASK_POD_ARGS, base_worker_pod=template, mutation_hook=v1pod_mutation_hook(_noop)
        )
    # ... so the wrapper's own choice shows on a manifest handed to it directly.
    lenient = v1pod_mutation_hook(_noop)(copy.deepcopy(template))
    assert lenient is not None
    assert "imagee" not in lenient["spec"]["containers"][0]
    with pytest.raises(InvalidManifest, match=r"spec\.containers\[0\]\.imagee"):
        v1pod_mutation_hook(_noop, strict=True)(copy.deepcopy(template))


def _noop(_pod: object) -> None:
    return None


# --- property: manifests of known fields survive the round trip ------------------------------

_names = st.from_regex(r"[a-z][a-z0-9-]{0,15}", fullmatch=True)
_texts = st.text(max_size=12)
_string_maps = st.dictionaries(st.text(min_size=1, max_size=12), _texts, max_size=3)
_int32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
_offsets = st.integers(min_value=-14 * 60, max_value=14 * 60).map(
    lambda minutes: datetime.timezone(datetime.timedelta(minutes=minutes))
)
_timestamps = st.datetimes(timezones=st.none() | _offsets).map(lambda moment: moment.isoformat())
_quantities = st.dictionaries(
    st.sampled_from(["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu"]),
    st.sampled_from(["1", "500m", "1Gi", "128974848", "1.5"]),
    max_size=3,
)
_containers = st.fixed_dictionaries(
    {"name": _names},
    optional={
        "image": _texts,
        "imagePullPolicy": st.sampled_from(["Always", "IfNotPresent", "Never"]),
        "args": st.lists(_texts, max_size=3),
        "env": st.lists(
            st.fixed_dictionaries({"name": _names}, optional={"value": _texts}), max_size=3
        ),
        "resources": st.fixed_dictionaries(
            {}, optional={"limits": _quantities, "requests": _quantities}
        ),
        "securityContext": st.fixed_dictionaries(
            {}, optional={"runAsUser": _int32, "privileged": st.booleans()}
        ),
        "ports": st.lists(
            st.fixed_dictionaries(
                {"containerPort": st.integers(1, 65535)},
                optional={"protocol": st.sampled_from(["TCP", "UDP"])},
            ),
            max_size=2,
        ),
        "livenessProbe": st.fixed_dictionaries(
            {"httpGet": st.fixed_dictionaries({"port": st.integers(1, 65535) | _names})},
            optional={"periodSeconds": _int32},
        ),
        "volumeMounts": st.lists(
            st.fixed_dictionaries(
                {"name": _names, "mountPath": _texts}, optional={"readOnly": st.booleans()}
            ),
            max_size=2,
        ),
    },
)
_specs = st.fixed_dictionaries(
    {"containers": st.lists(_containers, max_size=2)},
    optional={
        "initContainers": st.lists(_containers, max_size=1),
        "restartPolicy": st.sampled_from(["Always", "OnFailure", "Never"]),
        "nodeSelector": _string_maps,
        "hostNetwork": st.booleans(),
        "terminationGracePeriodSeconds": _int32,
        "tolerations": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "key": _texts,
                    "operator": st.sampled_from(["Exists", "Equal"]),
                    "effect": st.sampled_from(["NoSchedule", "NoExecute"]),
                    "tolerationSeconds": _int32,
                },
            ),
            max_size=2,
        ),
        "volumes": st.lists(
            st.fixed_dictionaries(
                {"name": _names},
                optional={"emptyDir": st.fixed_dictionaries({}, optional={"medium": _texts})},
            ),
            max_size=2,
        ),
    },
)
_manifests = st.fixed_dictionaries(
    {},
    optional={
        "apiVersion": st.just("v1"),
        "kind": st.just("Pod"),
        "metadata": st.fixed_dictionaries(
            {},
            optional={
                "name": _names,
                "namespace": _names,
                "labels": _string_maps,
                "annotations": _string_maps,
                "creationTimestamp": _timestamps,
            },
        ),
        "spec": _specs,
    },
)


@given(_manifests)
def test_manifests_of_known_fields_round_trip(manifest: dict[str, Any]) -> None:
    assert to_manifest(to_v1pod(manifest)) == manifest
    assert to_manifest(to_v1pod(manifest, strict=True)) == manifest


@given(_manifests, st.dictionaries(st.sampled_from(["zz", "x_y", "image_"]), _texts, min_size=1))
def test_unknown_fields_are_dropped_or_reported(
    manifest: dict[str, Any], extra: dict[str, str]
) -> None:
    polluted = copy.deepcopy(manifest)
    polluted.update(extra)
    for container in polluted.get("spec", {}).get("containers", []):
        container.update(extra)
    assert to_manifest(to_v1pod(polluted)) == manifest
    with pytest.raises(InvalidManifest, match="unknown field"):
        to_v1pod(polluted, strict=True)

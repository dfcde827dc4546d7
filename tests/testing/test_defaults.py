"""The defaults the kit's API server fills in (:mod:`k8s_workloads.testing._defaults`), as
``pkg/apis/core/v1/defaults.go`` sets them: on the pod itself, and seen through the real
clients in every answer, read, list and watch event."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import pytest

from k8s_workloads.testing._defaults import admit_priority, default_pod, image_pull_policy

if TYPE_CHECKING:
    from k8s_workloads.testing import FakeCluster
    from tests.support.kit_clients import Client

NS = "airflow"


def bare(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """A pod that gives nothing it need not give."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": list(containers) or [{"name": "base", "image": "img"}], **spec},
    }


POD_SPEC_DEFAULTS = {
    "restartPolicy": "Always",
    "dnsPolicy": "ClusterFirst",
    "schedulerName": "default-scheduler",
    "terminationGracePeriodSeconds": 30,
    "securityContext": {},
    "enableServiceLinks": True,
}
CONTAINER_DEFAULTS = {
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
}


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("img", "Always"),  # no tag: ParseImageName answers "latest"
        ("img:latest", "Always"),
        ("img:1.2", "IfNotPresent"),
        ("img@sha256:" + "a" * 64, "IfNotPresent"),  # a digest and no tag: no "latest"
        ("img:latest@sha256:" + "a" * 64, "Always"),
        ("registry.local:5000/team/img", "Always"),  # a port is not a tag
        ("registry.local:5000/team/img:2", "IfNotPresent"),
        ("apache/airflow:3.3.2", "IfNotPresent"),
        ("Not A Reference", "IfNotPresent"),  # the parse error is ignored: no tag
    ],
)
def test_the_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    assert image_pull_policy(image) == policy


def test_a_bare_pod_gets_the_pod_spec_and_container_defaults() -> None:
    pod = default_pod(bare(initContainers=[{"name": "setup", "image": "alpine:3"}]))
    spec = pod["spec"]
    assert {key: spec[key] for key in POD_SPEC_DEFAULTS} == POD_SPEC_DEFAULTS
    (base,), (setup,) = spec["containers"], spec["initContainers"]
    assert base == {"name": "base", "image": "img", "imagePullPolicy": "Always"} | (
        CONTAINER_DEFAULTS
    )
    assert setup["imagePullPolicy"] == "IfNotPresent"
    assert {key: setup[key] for key in CONTAINER_DEFAULTS} == CONTAINER_DEFAULTS


def test_given_values_are_kept() -> None:
    given = bare(
        {
            "name": "base",
            "image": "img:latest",
            "imagePullPolicy": "Never",
            "terminationMessagePath": "/var/why",
            "terminationMessagePolicy": "FallbackToLogsOnError",
        },
        restartPolicy="Never",
        dnsPolicy="Default",
        schedulerName="mine",
        terminationGracePeriodSeconds=0,  # 0 is a value, not an absent one
        securityContext={"runAsUser": 1000},
        enableServiceLinks=False,
    )
    assert default_pod(copy.deepcopy(given)) == given


def test_the_generated_defaulters_parts() -> None:
    probe = {"httpGet": {"port": 8080}}
    container = {
        "name": "base",
        "image": "img",
        "ports": [{"containerPort": 8080}],
        "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "livenessProbe": probe,
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}},
    }
    volumes = [
        {"name": "scratch"},
        {"name": "creds", "secret": {"secretName": "s"}},
        {"name": "conf", "configMap": {"name": "c", "defaultMode": 0o400}},
        {
            "name": "token",
            "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]},
        },
    ]
    spec = default_pod(bare(container, volumes=volumes, hostNetwork=True))["spec"]
    (base,) = spec["containers"]
    assert base["ports"] == [{"containerPort": 8080, "protocol": "TCP", "hostPort": 8080}]
    assert base["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1"
    assert base["livenessProbe"] == {
        "httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    # Requests default to limits, resource by resource; a given request stays.
    assert base["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}
    scratch, creds, conf, token = spec["volumes"]
    assert scratch == {"name": "scratch", "emptyDir": {}}
    assert creds["secret"]["defaultMode"] == 0o644
    assert conf["configMap"]["defaultMode"] == 0o400
    assert token["projected"]["defaultMode"] == 0o644
    assert token["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"] == 3600


def test_priority_is_admitted_only_without_a_class() -> None:
    pod = bare()
    admit_priority(pod)
    assert pod["spec"]["priority"] == 0
    named = bare(priorityClassName="high")
    admit_priority(named)
    assert "priority" not in named["spec"]


# --- through the real clients --------------------------------------------------------


def test_every_answer_read_list_and_watch_event_shows_the_defaults(
    client: Client, cluster: FakeCluster
) -> None:
    """SetObjectDefaults_Pod runs when the server decodes the body: the stored object, and
    so every answer about it, is the defaulted one."""
    images = ["img", "img:latest", "img:1.2", "img@sha256:" + "b" * 64]
    containers = [{"name": f"c{index}", "image": image} for index, image in enumerate(images)]
    dry = client("create_namespaced_pod", NS, bare(*containers), dry_run="All")
    watch = cluster.watch(NS)
    created = client("create_namespaced_pod", NS, bare(*containers))
    read = client("read_namespaced_pod", "p", NS)
    (listed,) = client("list_namespaced_pod", NS)["items"]
    (event,) = watch.events()
    for pod in (dry, created, read, listed, event["object"]):
        spec = pod["spec"]
        assert {key: spec[key] for key in POD_SPEC_DEFAULTS} == POD_SPEC_DEFAULTS
        assert spec["priority"] == 0
        policies = [container["imagePullPolicy"] for container in spec["containers"]]
        assert policies == ["Always", "Always", "IfNotPresent", "IfNotPresent"]
        for container in spec["containers"]:
            assert {key: container[key] for key in CONTAINER_DEFAULTS} == CONTAINER_DEFAULTS


def test_given_values_are_kept_and_a_patch_cannot_remove_a_default(client: Client) -> None:
    """Defaulting fills only what is absent; a patch is decoded too, so removing a
    defaulted field brings the default back (and changes nothing)."""
    given = bare(
        {"name": "base", "image": "img:1.2", "imagePullPolicy": "Always"},
        restartPolicy="OnFailure",
        terminationGracePeriodSeconds=5,
    )
    created = client("create_namespaced_pod", NS, given)
    assert created["spec"]["restartPolicy"] == "OnFailure"
    assert created["spec"]["terminationGracePeriodSeconds"] == 5
    assert created["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    patched = client("patch_namespaced_pod", "p", NS, [{"op": "remove", "path": "/spec/dnsPolicy"}])
    assert patched["spec"]["dnsPolicy"] == "ClusterFirst"
    assert patched["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]

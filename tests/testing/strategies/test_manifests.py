"""The manifest strategies (:mod:`k8s_workloads.testing.strategies._manifests`) draw what
users write: names and labels Kubernetes accepts, never the keys a pod's identity is read
from, and templates and overrides whose container names a valid pod can hold and which,
built into a pod, the kit's API server admits."""

from __future__ import annotations

import http.client
import itertools
import json
import urllib.parse
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import assume, given, settings

from k8s_workloads.pods import construct_task_pod
from k8s_workloads.pods.validation import (
    is_dns1123_label,
    is_label_value,
    label_key_errors,
)
from k8s_workloads.testing import FakeApiServer, FakeCluster
from k8s_workloads.testing.strategies import (
    RESERVED_KEYS,
    dns_labels,
    kube_images,
    label_keys,
    label_values,
    namespaces,
    pod_overrides,
    pod_templates,
    templates_and_overrides,
)

if TYPE_CHECKING:
    from k8s_workloads.pods.manifest import Manifest


def _container_names(pod: Manifest | None) -> list[str]:
    spec = (pod or {}).get("spec") or {}
    return [c["name"] for part in ("containers", "initContainers") for c in spec.get(part) or []]


@given(dns_labels, namespaces)
def test_names_and_namespaces_are_dns_labels(name: str, namespace: str) -> None:
    assert is_dns1123_label(name)
    assert is_dns1123_label(namespace)


@given(label_keys, label_values)
def test_labels_are_valid_and_never_a_reserved_key(key: str, value: str) -> None:
    assert label_key_errors(key, field="metadata.labels") == []
    assert is_label_value(value)
    assert key not in RESERVED_KEYS


@settings(max_examples=40)  # a manifest is a large draw: ~2 s at 40
@given(pod_templates())
def test_a_template_has_a_spec_with_distinct_containers_and_passes_the_naming_rules(
    template: Manifest,
) -> None:
    names = _container_names(template)
    assert template["spec"]["containers"]
    assert len(names) == len(set(names))
    assert all(is_dns1123_label(name) for name in names)
    labels = template.get("metadata", {}).get("labels", {})
    assert not set(labels) & RESERVED_KEYS


@settings(max_examples=40)  # a manifest is a large draw: ~2 s at 40
@given(pod_overrides())
def test_an_override_may_leave_main_container_names_empty(override: Manifest) -> None:
    assert all(
        name in {"", "base"} or is_dns1123_label(name) for name in _container_names(override)
    )


@settings(max_examples=40)  # a manifest is a large draw: ~2 s at 40
@given(templates_and_overrides(valid=True))
def test_valid_pairs_never_share_a_container_name_but_base(
    pair: tuple[Manifest | None, Manifest | None],
) -> None:
    template, override = pair
    shared = set(_container_names(template)) & set(_container_names(override))
    assert shared <= {"base"}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeApiServer]:
    served = FakeApiServer(FakeCluster(), lifetime=300).start()
    yield served
    served.stop()


def _post(server: FakeApiServer, pod: Manifest) -> tuple[int, Manifest]:
    """POST ``pod`` to the kit's API server over HTTP, in its namespace: (status, body)."""
    namespace = pod["metadata"]["namespace"]
    server.cluster.create_namespace(namespace)
    address = urllib.parse.urlsplit(server.url)
    connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=30)
    try:
        connection.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/pods",
            body=json.dumps(pod),
            headers={"Content-Type": "application/json"},
        )
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()
        # An override may name the pod: the next draw's must not meet this one.
        server.cluster.remove_pod(namespace, pod["metadata"]["name"])


_BUILT = itertools.count()


@settings(max_examples=60)  # a manifest is a large draw, and each goes over HTTP
@given(pair=templates_and_overrides(valid=True), kube_image=kube_images)
def test_a_pod_built_from_valid_templates_and_overrides_is_admitted_by_the_kit_server(
    server: FakeApiServer, pair: tuple[Manifest | None, Manifest | None], kube_image: str | None
) -> None:
    """What the strategies call valid, built into a pod by the library (the executor's
    image, else the template's first container's) is admitted: ``201 Created``."""
    template, override = pair
    assume(kube_image is not None or template is not None)  # an image comes from somewhere
    pod = construct_task_pod(
        namespace="airflow",
        scheduler_job_id="1",
        pod_id=f"pod-{next(_BUILT)}",
        dag_id="etl",
        task_id="load",
        kube_image=kube_image,
        try_number=1,
        args=["airflow", "tasks", "run"],
        airflow_version="3.3.2",
        run_id="manual__1",
        base_worker_pod=template,
        pod_override=override,
    )
    status, body = _post(server, pod)
    assert status == 201, body.get("message")

"""The kit cluster's Secrets (:mod:`k8s_workloads.testing._cluster_secrets`), as the API
server stores and answers them."""

from __future__ import annotations

import base64

import pytest

from k8s_workloads.testing import ApiError, FakeCluster

NS = "airflow"


def test_a_secret_is_stored_with_its_string_data_in_base64_data() -> None:
    cluster = FakeCluster(namespaces=[NS])
    made = cluster.create_secret(NS, {"metadata": {"name": "s"}, "stringData": {"k": "v"}})
    assert "stringData" not in made  # never answered
    assert base64.b64decode(made["data"]["k"]) == b"v"
    assert made["type"] == "Opaque"
    assert made["metadata"]["uid"]
    assert cluster.read_secret(NS, "s") == made
    assert [item["metadata"]["name"] for item in cluster.list_secrets()["items"]] == ["s"]


def test_a_name_in_use_a_missing_namespace_and_a_dry_run() -> None:
    cluster = FakeCluster(namespaces=[NS])
    body = {"metadata": {"name": "s"}, "stringData": {"k": "v"}}
    cluster.create_secret(NS, body, dry_run=True)
    assert cluster.secret_names() == []  # checked and answered, not stored
    cluster.create_secret(NS, body)
    for namespace, status in ((NS, 409), ("nowhere", 404)):
        with pytest.raises(ApiError) as caught:
            cluster.create_secret(namespace, body)
        assert caught.value.status == status
    with pytest.raises(ApiError) as caught:
        cluster.create_secret(NS, {"metadata": {"name": "Bad_Name"}})
    assert caught.value.status == 422


def test_a_deleted_secret_is_gone_and_a_second_delete_is_a_404() -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_secret(NS, {"metadata": {"name": "s"}})
    assert cluster.delete_secret(NS, "s")["metadata"]["name"] == "s"
    assert cluster.secret(NS, "s") is None
    with pytest.raises(ApiError) as caught:
        cluster.delete_secret(NS, "s")
    assert caught.value.status == 404

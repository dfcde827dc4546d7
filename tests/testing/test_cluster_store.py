"""What every part of the kit cluster shares (:mod:`k8s_workloads.testing._cluster_store`):
faults on demand, the clock, resource versions and namespaces."""

from __future__ import annotations

import datetime

import pytest

from k8s_workloads.testing import (
    ApiError,
    FakeCluster,
)
from tests.support.kit_pods import NS, pod


def test_any_call_fails_on_demand_with_the_api_exception_shape() -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.fail_next("create_pod", 429, reason="TooManyRequests", headers={"Retry-After": "3"})
    with pytest.raises(ApiError) as raised:
        cluster.create_pod(NS, pod("p", {}))
    assert (raised.value.status, raised.value.headers) == (429, {"Retry-After": "3"})
    assert '"code": 429' in raised.value.body
    cluster.fail_next("list_pods", None)
    with pytest.raises(ConnectionResetError):
        cluster.list_pods(NS)
    cluster.create_pod(NS, pod("p", {}))  # the fault was used up
    with pytest.raises(ApiError, match="already exists"):
        cluster.create_pod(NS, pod("p", {}))
    with pytest.raises(ValueError, match="call must be one of"):
        cluster.fail_next("reboot")


BARE = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "base", "image": "x"}]}}


def test_time_comes_from_the_clock_or_is_fixed() -> None:
    current = [datetime.datetime(2026, 6, 7, 1, tzinfo=datetime.timezone.utc)]
    cluster = FakeCluster(clock=lambda: current[0])
    assert cluster.now.hour == 1
    current[0] = current[0].replace(hour=2)
    assert cluster.now.hour == 2  # read from the clock each time
    fixed = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    cluster.now = fixed
    assert cluster.now == fixed
    made = cluster.create_pod("default", BARE)
    assert made["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z"


def test_every_change_bumps_the_resource_version_and_a_no_op_patch_does_not() -> None:
    cluster = FakeCluster(namespaces=[NS])
    start = int(cluster.resource_version)
    made = cluster.create_pod(NS, pod("p", {"a": "1"}))
    assert int(made["metadata"]["resourceVersion"]) == start + 1
    cluster.patch_pod_labels(NS, "p", {"a": "1"})  # changes nothing
    assert int(cluster.resource_version) == start + 1
    cluster.patch_pod_labels(NS, "p", {"a": "2"})
    assert int(cluster.resource_version) == start + 2


def test_namespaces_exist_from_the_start_or_once_created() -> None:
    cluster = FakeCluster(namespaces=[NS])
    assert [ns["metadata"]["name"] for ns in cluster.namespaces()] == ["airflow", "default"]
    with pytest.raises(ApiError) as missing:
        cluster.create_pod("team-a", BARE)
    assert missing.value.status == 404
    made = cluster.create_namespace("team-a")
    assert made["status"] == {"phase": "Active"}
    assert cluster.create_namespace("team-a") == made  # an existing one is kept as it is
    assert cluster.read_namespace("team-a") == made
    with pytest.raises(ApiError):
        cluster.create_namespace("Not_A_Label")

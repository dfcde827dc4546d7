"""The kit's kubelet: pods run, then succeed, with the statuses a real kubelet writes."""

from __future__ import annotations

import datetime
import re
import time
from typing import Any

import pytest

from k8s_workloads import InvalidConfig
from k8s_workloads.testing import FakeCluster, Kubelet

NS = "airflow"


def pod(name: str, *, init: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {"name": "base", "image": "apache/airflow:3.3.2"},
            {"name": "sidecar", "image": "busybox:1.36"},
        ]
    }
    if init:
        spec["initContainers"] = [{"name": "setup", "image": "alpine:3"}]
    return {"metadata": {"name": name}, "spec": spec}


def status(cluster: FakeCluster, name: str) -> dict[str, Any]:
    found = cluster.pod(NS, name)
    assert found is not None
    result: dict[str, Any] = found["status"]
    return result


def test_a_pod_runs_then_succeeds_with_realistic_statuses() -> None:
    cluster = FakeCluster(
        namespaces=[NS], now=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    )
    cluster.create_pod(NS, pod("load", init=True))
    kubelet = Kubelet(cluster, run_seconds=10)
    assert kubelet.step(100.0) == 0  # first seen: not due yet
    assert kubelet.step(109.9) == 0
    assert status(cluster, "load")["phase"] == "Pending"
    assert kubelet.step(110.0) == 1
    running = status(cluster, "load")
    assert running["phase"] == "Running"
    assert re.fullmatch(r"10\.244\.\d+\.\d+", running["podIP"])
    assert running["startTime"] == "2026-01-01T00:00:00Z"
    conditions = {item["type"]: item["status"] for item in running["conditions"]}
    assert conditions["Ready"] == conditions["ContainersReady"] == "True"
    base, sidecar = running["containerStatuses"]
    assert (base["name"], base["image"], sidecar["image"]) == (
        "base",
        "apache/airflow:3.3.2",
        "busybox:1.36",
    )
    assert re.fullmatch(
        r"docker-pullable://apache/airflow:3\.3\.2@sha256:[0-9a-f]{64}", base["imageID"]
    )
    assert base["containerID"] != sidecar["containerID"]
    assert base["containerID"].startswith("containerd://")
    assert (base["ready"], base["started"], base["restartCount"]) == (True, True, 0)
    assert base["state"] == {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
    (setup,) = running["initContainerStatuses"]
    assert setup["state"]["terminated"]["reason"] == "Completed"
    assert kubelet.step(119.0) == 0
    assert kubelet.step(120.0) == 1
    done = status(cluster, "load")
    assert done["phase"] == "Succeeded"
    assert done["podIP"] == running["podIP"]
    conditions = {item["type"]: item for item in done["conditions"]}
    assert conditions["Ready"]["status"] == "False"
    assert conditions["Ready"]["reason"] == "PodCompleted"
    for entry in done["containerStatuses"]:
        terminated = entry["state"]["terminated"]
        assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
        assert terminated["containerID"] == entry["containerID"]
        assert {"startedAt", "finishedAt"} <= set(terminated)
        assert entry["ready"] is False
    assert kubelet.step(1000.0) == 0  # terminal: nothing more


def test_pods_the_test_moved_on_or_deleted_are_left_alone() -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, pod("failed"))
    cluster.create_pod(NS, pod("gone"))
    kubelet = Kubelet(cluster, run_seconds=1)
    kubelet.step(0.0)
    cluster.set_status(NS, "failed", {"phase": "Failed"})
    cluster.delete_pod(NS, "gone")
    assert kubelet.step(5.0) == 0
    assert status(cluster, "failed") == {"phase": "Failed"}
    # A new pod of the same name is a new pod: its own delay, from when it is first seen.
    cluster.create_pod(NS, pod("gone"))
    assert kubelet.step(5.5) == 0
    assert kubelet.step(6.5) == 1
    assert status(cluster, "gone")["phase"] == "Running"


def test_a_status_for_a_replaced_pod_is_refused_by_uid() -> None:
    cluster = FakeCluster(namespaces=[NS])
    first = cluster.create_pod(NS, pod("p"))["metadata"]["uid"]
    cluster.delete_pod(NS, "p")
    cluster.create_pod(NS, pod("p"))
    with pytest.raises(KeyError, match="with uid"):
        cluster.set_status(NS, "p", {"phase": "Running"}, uid=first)
    assert status(cluster, "p")["phase"] == "Pending"


def test_the_kubelet_thread_runs_pods_to_completion_and_stops() -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, pod("load"))
    with Kubelet(cluster, run_seconds=0.01, poll_seconds=0.005) as kubelet:
        deadline = time.monotonic() + 30
        while status(cluster, "load")["phase"] != "Succeeded":
            assert time.monotonic() < deadline, "the kubelet did not run the pod"
            time.sleep(0.01)
    assert not kubelet._thread.is_alive()
    kubelet.stop()  # twice is fine


@pytest.mark.parametrize(
    ("field", "value"),
    [("run_seconds", -1), ("run_seconds", float("inf")), ("poll_seconds", 0), ("cluster", None)],
)
def test_the_kubelets_options_are_checked(field: str, value: Any) -> None:
    options: dict[str, Any] = {"cluster": FakeCluster(namespaces=[NS]), field: value}
    with pytest.raises(InvalidConfig) as raised:
        Kubelet(**options)
    assert raised.value.field == field

"""``cleanup-pods`` (:mod:`k8s_workloads.cli._cleanup`): the executor's finished pods,
callback pods included, deleted through the real ``kubernetes`` client from a kubeconfig,
against the kit's API server over HTTP."""

from __future__ import annotations

import datetime
import json
from typing import TYPE_CHECKING, Any

from k8s_workloads.pods import construct_callback_pod, construct_task_pod
from k8s_workloads.testing import FakeApiServer, FakeCluster
from tests.support.cli import run

if TYPE_CHECKING:
    import pathlib

NS = "airflow"
CALLBACK_ID = "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"


def _ended(phase: str, exit_code: int, minutes_ago: float) -> dict[str, Any]:
    finished = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(
        minutes=minutes_ago
    )
    terminated = {"exitCode": exit_code, "finishedAt": finished.strftime("%Y-%m-%dT%H:%M:%SZ")}
    return {
        "phase": phase,
        "containerStatuses": [{"name": "base", "state": {"terminated": terminated}}],
    }


def _cluster() -> FakeCluster:
    cluster = FakeCluster(namespaces=[NS])
    common: dict[str, Any] = {"namespace": NS, "scheduler_job_id": 7}
    common |= {"kube_image": "apache/airflow:3.3.2", "args": ["python", "-m", "x"]}
    common["airflow_version"] = "3.3.2"
    for name, status in (("ok", _ended("Succeeded", 0, 10)), ("busy", {"phase": "Running"})):
        task = construct_task_pod(
            pod_id=name, dag_id="etl", task_id=name, run_id="r1", try_number=1, **common
        )
        task["metadata"]["name"] = name
        cluster.create_pod(NS, task)
        cluster.set_status(NS, name, status)
    callback = construct_callback_pod(callback_id=CALLBACK_ID, **common)
    callback["metadata"]["name"] = "alert"
    cluster.create_pod(NS, callback)
    cluster.set_status(NS, "alert", _ended("Failed", 1, 5))  # kept for debugging
    stranger = {
        "metadata": {"name": "other"},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    cluster.create_pod(NS, stranger)
    cluster.set_status(NS, "other", _ended("Succeeded", 0, 10))  # not the executor's
    return cluster


def _kubeconfig(url: str, folder: pathlib.Path) -> str:
    path = folder / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "kit", "cluster": {"server": url}}],
                "users": [{"name": "kit", "user": {"token": "kit"}}],
                "contexts": [{"name": "kit", "context": {"cluster": "kit", "user": "kit"}}],
                "current-context": "kit",
            }
        )
    )
    return str(path)


def test_finished_task_and_callback_pods_go_and_a_dry_run_deletes_nothing(
    tmp_path: pathlib.Path,
) -> None:
    cluster = _cluster()
    server = FakeApiServer(cluster, lifetime=60).start()
    try:
        config = _kubeconfig(server.url, tmp_path)
        code, out, err = run("cleanup-pods", "--namespace", NS, "--kubeconfig", config, "--dry-run")
        assert (code, err) == (0, "")
        assert out.splitlines() == [
            "would delete pod airflow/alert: Failed, ended 5 min ago",
            "would delete pod airflow/ok: Succeeded, ended 10 min ago",
            "2 of 3 executor pods in airflow would be deleted",
        ]
        assert sorted(cluster.pod_names()) == ["alert", "busy", "ok", "other"]
        code, out, err = run("cleanup-pods", "--namespace", NS, "--kubeconfig", config)
        assert (code, err) == (0, "")
        assert out.splitlines()[-1] == "2 of 3 executor pods in airflow deleted"
        assert sorted(cluster.pod_names()) == ["busy", "other"]  # a callback's pod went too
    finally:
        server.stop()


def test_bad_input_is_one_line_and_exit_2(tmp_path: pathlib.Path) -> None:
    code, out, err = run("cleanup-pods", "--namespace", "Bad_NS")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert "--namespace must be a namespace name" in err
    code, _, err = run("cleanup-pods", "--min-pending-minutes", "soon")
    assert code == 2
    assert err.count("\n") == 1
    assert "--min-pending-minutes must be a whole number >= 1, got 'soon'" in err
    missing = str(tmp_path / "absent")
    code, _, err = run("cleanup-pods", "--namespace", NS, "--kubeconfig", missing)
    assert code == 2
    assert err.count("\n") == 1
    assert "cannot reach the cluster (--kubeconfig" in err


def test_a_silent_api_server_is_one_line_and_exit_1_not_a_hang(tmp_path: pathlib.Path) -> None:
    server = FakeApiServer(_cluster(), lifetime=60, latency=5.0).start()
    try:
        config = _kubeconfig(server.url, tmp_path)
        code, out, err = run(
            "cleanup-pods", "--namespace", NS, "--kubeconfig", config, "--timeout", "0.5"
        )
        assert (code, out) == (1, "")
        assert err.count("\n") == 1
        assert err.startswith("k8s-workloads cleanup-pods: cannot list pods in airflow: ")
        assert "timed out" in err
    finally:
        server.stop()
    for bad in ("0", "soon", "1e9"):
        code, _, err = run("cleanup-pods", "--timeout", bad)
        assert code == 2
        assert err.count("\n") == 1
        assert f"--timeout must be seconds in (0, 3600], got '{bad}'" in err

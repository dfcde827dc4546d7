"""``python -m k8s_workloads.testing serve`` (:mod:`k8s_workloads.testing.local`): a local
cluster the kubernetes client reaches through the kubeconfig it writes; pods run as
processes; it stops by itself and on SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

kubernetes = pytest.importorskip("kubernetes")

from k8s_workloads.testing.local import kubeconfig  # noqa: E402 - after the skip
from tests.support.processes import alive  # noqa: E402 - after the skip

NS = "default"


def serve(*arguments: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "k8s_workloads.testing", "serve", *arguments],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def settings(process: subprocess.Popen[str]) -> dict[str, str]:
    """What the command printed, up to the namespace line: the URL and each setting."""
    assert process.stdout is not None
    found = {"url": process.stdout.readline().strip()}
    for line in process.stdout:
        key, _, value = line.partition(" = ")
        if value:
            found[key.strip()] = value.strip()
        if key == "namespace":
            return found
    raise AssertionError(f"no settings printed; stderr: {process.communicate()[1]}")


def pod(name: str, code: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "base", "image": "x", "args": ["python", "-c", code]}],
        },
    }


def test_the_kubeconfig_names_the_server_and_the_namespace_as_the_client_reads_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(kubeconfig("http://127.0.0.1:4321", "team-a", "s3cret")))
    api_client = kubernetes.config.new_client_from_config(config_file=str(path))
    try:
        assert api_client.configuration.host == "http://127.0.0.1:4321"
        assert api_client.configuration.api_key == {"BearerToken": "Bearer s3cret"}
    finally:
        api_client.close()
    _, active = kubernetes.config.list_kube_config_contexts(config_file=str(path))
    assert active["context"]["namespace"] == "team-a"


def test_the_kubeconfig_reaches_the_cluster_pods_run_and_sigterm_stops_everything(
    tmp_path: Path,
) -> None:
    config = tmp_path / "kubeconfig"
    process = serve("--kubeconfig", str(config), "--lifetime", "60")
    try:
        found = settings(process)
        assert found["url"].startswith("http://127.0.0.1:")
        assert (found["in_cluster"], found["config_file"]) == ("False", str(config))
        assert found["namespace"] == NS
        api = kubernetes.client.CoreV1Api(
            kubernetes.config.new_client_from_config(config_file=str(config))
        )
        api.create_namespaced_pod(NS, pod("done", "print('hello')"))
        # Pods run as this user's processes: only the kubeconfig's token makes one, and
        # the kubeconfig is its owner's alone.
        assert config.stat().st_mode & 0o777 == 0o600
        stranger = kubernetes.client.CoreV1Api(
            kubernetes.client.ApiClient(kubernetes.client.Configuration(host=found["url"]))
        )
        with pytest.raises(kubernetes.client.ApiException) as refused:
            stranger.create_namespaced_pod(NS, pod("intruder", "print('owned')"))
        assert refused.value.status == 401
        pid_file = tmp_path / "pid"
        code = (
            f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
        )
        api.create_namespaced_pod(NS, pod("sleeper", code))
        deadline = time.monotonic() + 30
        while api.read_namespaced_pod("done", NS).status.phase != "Succeeded":
            assert time.monotonic() < deadline, "the pod did not run"
            time.sleep(0.05)
        read = api.read_namespaced_pod("done", NS)
        terminated = read.status.container_statuses[0].state.terminated
        assert (terminated.exit_code, terminated.reason) == (0, "Completed")
        assert read.spec.node_name
        # Its output, over HTTP; read raw: kubernetes 36 returns the text as the repr of
        # its bytes (kubernetes-client/python#2596).
        log = api.read_namespaced_pod_log("done", NS, _preload_content=False)
        assert log.data == b"hello\n"
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the sleeper did not start"
            time.sleep(0.05)
        sleeper = int(pid_file.read_text())
        assert alive(sleeper)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
        assert not alive(sleeper)  # the kubelet stopped the pod's process with itself
        assert config.exists()  # the user's path is kept
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_it_stops_by_itself_after_its_lifetime_and_removes_its_own_kubeconfig() -> None:
    process = serve("--lifetime", "1")
    try:
        found = settings(process)
        assert Path(found["config_file"]).exists()
        assert process.wait(timeout=15) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert not Path(found["config_file"]).exists()


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        (["--lifetime", "0"], "--lifetime"),
        (["--max-pod-seconds", "nan"], "--max-pod-seconds"),
        (["--port", "70000"], "--port"),
        (["--kubeconfig", "/nonexistent/dir/config"], "--kubeconfig"),
        (["--bogus"], "--bogus"),
    ],
)
def test_a_bad_flag_is_one_line_on_stderr_and_exit_2(arguments: list[str], field: str) -> None:
    process = serve(*arguments)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("python -m k8s_workloads.testing: error: ")
    assert field in err

"""``python -m k8s_workloads.testing.server`` (:mod:`k8s_workloads.testing._process`): the
kit's API server in its own process, with a kubelet that runs pods; it prints its URL
first, exits 0 on SIGTERM or when its stdin closes, and a bad argument is one line on
stderr and exit status 2."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

import k8s_workloads
from k8s_workloads.testing import STATS_PATH, ServerStats
from k8s_workloads.testing._process import SCRIPTED_NOTICE
from tests.support.pod_builds import named_task_pod as task_pod

NS = "airflow"


def _server_process(*arguments: str) -> subprocess.Popen[str]:
    # This interpreter, importing this k8s_workloads (the one under test), not another.
    source = str(Path(k8s_workloads.__file__).resolve().parents[1])
    path = os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))
    return subprocess.Popen(
        [sys.executable, "-m", "k8s_workloads.testing.server", *arguments],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
    )


@pytest.fixture
def process() -> Iterator[subprocess.Popen[str]]:
    running = _server_process(
        "--port", "0", "--latency", "0.01", "--lifetime", "120", "--kubelet", "0.05"
    )
    try:
        yield running
    finally:
        if running.poll() is None:
            running.kill()
        running.wait(timeout=30)
        for stream in (running.stdin, running.stdout, running.stderr):
            if stream is not None:
                stream.close()


def test_a_server_in_its_own_process_runs_pods_and_exits_0_on_sigterm(
    process: subprocess.Popen[str],
) -> None:
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:")
    api_client: Any = k8s.ApiClient(k8s.Configuration(host=url))
    api: Any = k8s.CoreV1Api(api_client)
    api.create_namespaced_pod(NS, task_pod("load"))
    deadline = time.monotonic() + 60
    while (pod := api.read_namespaced_pod("load", NS)).status.phase != "Succeeded":
        assert time.monotonic() < deadline, f"still {pod.status.phase}"
        time.sleep(0.05)
    (container,) = pod.status.container_statuses
    assert container.image == "airflow:3.3.2"
    assert container.image_id.startswith("docker-pullable://airflow:3.3.2@sha256:")
    assert container.state.terminated.exit_code == 0
    api_client.close()
    connection = http.client.HTTPConnection(url.removeprefix("http://"), timeout=10)
    connection.request("GET", STATS_PATH)
    stats = ServerStats.from_json(json.loads(connection.getresponse().read()))
    connection.close()
    assert stats.count("POST", "pods") == 1
    assert stats.count("GET", "pods") >= 3  # Pending, Running, Succeeded at least
    process.terminate()
    assert process.wait(timeout=30) == 0
    # Where a user sees it: the scripted kubelet's Succeeded pod ran nothing.
    assert process.stderr is not None
    assert process.stderr.read().splitlines() == [SCRIPTED_NOTICE]


def test_a_server_in_its_own_process_exits_0_when_its_stdin_closes(
    process: subprocess.Popen[str],
) -> None:
    assert process.stdout is not None
    assert process.stdin is not None
    assert process.stdout.readline().startswith("http://127.0.0.1:")
    process.stdin.close()
    assert process.wait(timeout=30) == 0


@pytest.mark.parametrize(
    "arguments",
    [
        ["--latency", "-1"],
        ["--port", "nope"],
        ["--kubelet", "-2"],
        ["--namespace", "Bad_NS"],
        ["--bookmark-seconds", "0"],
    ],
)
def test_bad_arguments_exit_2_with_one_line_on_stderr(arguments: list[str]) -> None:
    running = _server_process(*arguments)
    out, err = running.communicate(timeout=60)
    assert running.returncode == 2
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith("python -m k8s_workloads.testing.server: error: ")

"""k8s_workloads.airflow._runtime: Airflow as the executor meets it at run time — the
installed provider's executor class it is made on, and which errors are a failed call
(retried or reported to the core) rather than a bug (logged with its traceback).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("airflow.executors.workloads", reason="Airflow runs in the Airflow environment")

from k8s_workloads.airflow._runtime import _AIRFLOW_VERSION, _failures
from k8s_workloads.airflow.convert import from_airflow_key
from k8s_workloads.testing import FakeApiServer, FakeCluster
from tests.support.airflow_support import airflow


def _raised(call: Callable[[], object]) -> BaseException:
    try:
        call()
    except Exception as error:  # noqa: BLE001 - the error is what the test looks at
        return error
    pytest.fail(f"{call} raised nothing")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port  # nothing listens there any more


def test_the_executor_is_made_on_the_installed_providers_executor() -> None:
    from k8s_workloads.airflow import KubernetesExecutor  # noqa: PLC0415

    module = "airflow.providers.cncf.kubernetes.executors.kubernetes_executor"
    assert issubclass(KubernetesExecutor, airflow(module).KubernetesExecutor)
    assert airflow("airflow").__version__ == _AIRFLOW_VERSION


def test_what_a_failed_call_raises_is_a_failure_and_a_bug_is_not(tmp_path: Path) -> None:
    from kubernetes import client  # noqa: PLC0415

    with FakeApiServer(FakeCluster(namespaces=["airflow"]), lifetime=60) as server:
        api = client.CoreV1Api(client.ApiClient(client.Configuration(host=server.url)))
        refused = _raised(lambda: api.read_namespaced_pod("missing", "airflow"))  # a 404
    urllib3 = airflow("urllib3")
    unreachable = _raised(
        lambda: urllib3.PoolManager().request(
            "GET", f"http://127.0.0.1:{_closed_port()}/", retries=False
        )
    )
    sqlalchemy = airflow("sqlalchemy")
    database = _raised(
        lambda: sqlalchemy.create_engine(f"sqlite:///{tmp_path / 'none' / 'x.db'}").connect()
    )
    unreadable = _raised(lambda: from_airflow_key(("etl", "load")))
    failures: tuple[type[BaseException], ...] = _failures()
    for error in (refused, unreachable, database, unreadable, ConnectionResetError()):
        assert isinstance(error, failures), repr(error)
    bugs: list[Any] = [KeyError("state"), AttributeError("core"), AssertionError()]
    for bug in bugs:
        assert not isinstance(bug, failures), repr(bug)

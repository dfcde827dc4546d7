"""Callback scenarios against a real migrated Airflow database (run in a subprocess).

``python -m tests.support.airflow_scenarios`` with ``AIRFLOW_HOME`` pointing at a migrated SQLite
database: real Airflow 3.3.2 and provider code, the executor's real ``start()`` and
``heartbeat()``, real ``ExecutorCallback`` rows, the real
``SchedulerJobRunner.process_executor_events`` applying the events to them, and the
kubernetes client talking HTTP to the test kit's cluster on 127.0.0.1. Prints one JSON
document: the callback rows' states and outputs, and the pods left.
``tests/airflow/test_executor.py`` runs it and checks the result.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from typing import Any

from k8s_workloads.testing import FakeApiServer, FakeCluster
from tests.support.airflow_support import reach_by_kubeconfig
from tests.support.event_factory import RUNNING, SUCCEEDED, kubelet_status

NS = "airflow"
LAST_WORDS = "AttributeError: module 'alerts' has no attribute 'notfy'"
"""The last line of the failing callback's termination message (its log's tail)."""
FAILED_SAYING_WHY = kubelet_status(
    "Failed",
    {
        "terminated": {
            "exitCode": 1,
            "reason": "Error",
            "message": (
                "Traceback (most recent call last):\n"
                '  File "/opt/airflow/dags/alerts.py", line 4, in <module>\n'
                "    alerts.notfy()\n"
                f"{LAST_WORDS}\n"
            ),
        }
    },
)


def airflow(module: str) -> Any:
    return importlib.import_module(module)


def fake_client() -> Any:
    from kubernetes import client  # noqa: PLC0415

    url = os.environ["K8S_WORKLOADS_FAKE_API"]  # this module may be imported twice (-m)
    return client.CoreV1Api(client.ApiClient(client.Configuration(host=url)))


class _Definition:
    """The callback definition an ``ExecutorCallback`` row is made from."""

    def __init__(self, path: str) -> None:
        self.path = path

    def serialize(self) -> dict[str, Any]:
        return {"path": self.path, "kwargs": {}, "executor": None}


def _rows(session: Any, names: list[str]) -> dict[str, Any]:
    models = airflow("airflow.models.callback")
    method = airflow("airflow.executors.workloads.callback").CallbackFetchMethod.IMPORT_PATH
    rows = {}
    for name in names:
        row = models.ExecutorCallback(_Definition(f"alerts.{name}"), method)
        row.state = airflow("airflow.utils.state").CallbackState.QUEUED
        session.add(row)
        rows[name] = row
    session.commit()
    return rows


def _workload(row: Any) -> Any:
    workloads = airflow("airflow.executors.workloads.callback")
    bundle = airflow("airflow.executors.workloads.base").BundleInfo
    return workloads.ExecuteCallback(
        token="scenario-token",  # noqa: S106 - a test value
        callback=workloads.CallbackDTO(
            id=str(row.id), fetch_method=workloads.CallbackFetchMethod.IMPORT_PATH, data=row.data
        ),
        dag_rel_path="dags/etl.py",
        bundle_info=bundle(name="dags"),
        log_path=f"executor_callbacks/etl/manual__1/{row.id}",
    )


def main() -> int:
    cluster = FakeCluster(namespaces=[NS])
    with FakeApiServer(cluster, lifetime=120) as server:
        os.environ["K8S_WORKLOADS_FAKE_API"] = server.url
        reach_by_kubeconfig(server.url)
        executor_module = airflow("k8s_workloads.airflow.executor")
        runner = airflow("airflow.jobs.scheduler_job_runner").SchedulerJobRunner
        create_session = airflow("airflow.utils.session").create_session
        callback_model = airflow("airflow.models.callback").Callback
        dag_bag = airflow("airflow.models.dagbag").DBDagBag()

        def start(job_id: int) -> Any:
            executor = executor_module.KubernetesExecutor()
            executor.job_id = job_id
            executor.start()
            return executor

        def beat(executor: Any, until: Any, timeout: float = 15.0) -> None:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                executor.heartbeat()
                with create_session() as session:
                    runner.process_executor_events(
                        executor=executor,
                        job_id=executor.job_id,
                        scheduler_dag_bag=dag_bag,
                        session=session,
                    )
                if until():
                    executor.heartbeat()  # the loop comes round: what it stored, its pods go
                    return
                time.sleep(0.02)
            raise SystemExit(f"timed out; pods: {cluster.pods()}")

        def state(name: str) -> str | None:
            with create_session() as session:
                row = session.get(callback_model, ids[name])
                return None if row is None or row.state is None else str(row.state)

        def output(name: str) -> str | None:
            with create_session() as session:
                row = session.get(callback_model, ids[name])
                return None if row is None else row.output

        first = start(7)
        names = ["succeeds", "fails", "runs_long", "succeeds_while_down"]
        with create_session() as session:
            rows = _rows(session, names)
            ids = {name: rows[name].id for name in names}
            for name in names:
                first.queue_workload(_workload(rows[name]), session=session)
        beat(first, lambda: len(cluster.pod_names()) == len(names))
        pods = {}
        for pod in cluster.pods():
            workload = pod["spec"]["containers"][0]["args"][-1]
            for key, callback_id in ids.items():
                if str(callback_id) in workload:
                    pods[key] = pod["metadata"]["name"]
        for name in names:
            cluster.set_status(NS, pods[name], RUNNING)
        beat(first, lambda: all(state(name) == "running" for name in names))
        ok, bad = SUCCEEDED, FAILED_SAYING_WHY
        cluster.set_status(NS, pods["succeeds"], ok)
        cluster.set_status(NS, pods["fails"], bad)
        beat(first, lambda: state("succeeds") == "success" and state("fails") == "failed")

        # Scheduler 7 dies; one callback's pod succeeds while nobody watches; 8 starts.
        first.end()
        cluster.set_status(NS, pods["succeeds_while_down"], ok)
        second = start(8)

        def owner(name: str) -> str | None:
            pod = cluster.pod(NS, pods[name])
            return None if pod is None else pod["metadata"]["labels"].get("airflow-worker")

        beat(
            second,
            lambda: owner("runs_long") == "8" and state("succeeds_while_down") == "success",
        )
        adopted_running = len(second.running)
        cluster.set_status(NS, pods["runs_long"], ok)
        # 7 ended as its loop stored "succeeds": its pod was left, and 8 cleans it up.
        beat(
            second,
            lambda: state("runs_long") == "success" and cluster.pod(NS, pods["succeeds"]) is None,
        )
        second.end()
        document = {
            "states": {name: state(name) for name in names},
            "outputs": {name: output(name) for name in names},
            "pods": {
                pod["metadata"]["name"]: {
                    "phase": pod["status"]["phase"],
                    "done": pod["metadata"]["labels"].get("airflow_executor_done"),
                }
                for pod in cluster.pods()
            },
            "pod_of": pods,
            "adopted_running": adopted_running,
            "running": len(second.running),
        }
    sys.stdout.write(json.dumps(document) + "\n")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    sys.exit(main())

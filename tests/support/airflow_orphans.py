"""Orphaned callbacks against a real migrated Airflow database (run in a subprocess).

``python -m tests.support.airflow_orphans`` with ``AIRFLOW_HOME`` pointing at a migrated SQLite
database: real ``ExecutorCallback``, ``DagRun`` and ``Job`` rows, two executors (the
schedulers ``b`` and ``c``, both alive) on one kit cluster served over HTTP on 127.0.0.1,
and the real ``SchedulerJobRunner.process_executor_events`` applying their events.
Scheduler ``a`` is dead and held callbacks no pod was made for; ``d`` is alive and holds
one. Prints one JSON document; ``tests/airflow/test_adoption.py`` checks it.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import threading
import time
import uuid
from typing import Any

from k8s_workloads.pods import construct_callback_pod
from k8s_workloads.testing import FakeApiServer, FakeCluster
from tests.support.airflow_scenarios import _Definition, airflow
from tests.support.airflow_scenarios import fake_client as _fake_client
from tests.support.airflow_support import reach_by_kubeconfig

NS = "airflow"
HOLDER = "k8s_workloads: queued by scheduler job "
ORPHANS = 8


fake_client = _fake_client
"""The ``client_factory`` ``run_scenario`` names (``tests.support.airflow_orphans.fake_client``)."""


class _Recorder:
    """The executor's logger, with its error lines kept for the document."""

    def __init__(self, log: Any) -> None:
        self._log = log
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def error(self, message: str, *args: Any) -> None:
        self.errors.append(message % args)
        self._log.error(message, *args)

    def warning(self, message: str, *args: Any) -> None:
        self.warnings.append(message % args)
        self._log.warning(message, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._log, name)


def _world(session: Any) -> dict[str, int]:
    """A bundle, a DAG, a running dag run and four scheduler jobs; their ids."""
    now = datetime.datetime.now(datetime.timezone.utc)
    session.add(airflow("airflow.models.dagbundle").DagBundleModel(name="dags"))
    session.flush()
    session.add(
        airflow("airflow.models.dag").DagModel(
            dag_id="etl", bundle_name="dags", fileloc="/dags/etl.py", relative_fileloc="etl.py"
        )
    )
    session.flush()
    run = airflow("airflow.models.dagrun").DagRun(
        dag_id="etl", run_id="manual__1", run_type="manual", state="running", run_after=now
    )
    session.add(run)
    ids = {"run": 0}
    session.flush()
    ids["run"] = run.id
    for name, state in (("a", "failed"), ("b", "running"), ("c", "running"), ("d", "running")):
        job = airflow("airflow.jobs.job").Job()
        job.job_type, job.state, job.latest_heartbeat = "SchedulerJob", state, now
        session.add(job)
        session.flush()
        ids[name] = job.id
    session.commit()
    return ids


def _row(session: Any, name: str, *, holder: int | None, state: str = "queued", **data: Any) -> str:
    models = airflow("airflow.models.callback")
    method = airflow("airflow.executors.workloads.callback").CallbackFetchMethod.IMPORT_PATH
    row = models.ExecutorCallback(_Definition(f"alerts.{name}"), method, **data)
    row.state = state
    row.output = None if holder is None else f"{HOLDER}{holder}"
    session.add(row)
    session.commit()
    return str(row.id)


def main() -> int:
    cluster = FakeCluster(namespaces=[NS])
    with FakeApiServer(cluster, lifetime=120) as server:
        os.environ["K8S_WORKLOADS_FAKE_API"] = server.url
        reach_by_kubeconfig(server.url)  # providers before 10.24 read no client_factory
        executor_module = airflow("k8s_workloads.airflow.executor")
        runner = airflow("airflow.jobs.scheduler_job_runner").SchedulerJobRunner
        create_session = airflow("airflow.utils.session").create_session
        callback_model = airflow("airflow.models.callback").Callback
        dag_bag = airflow("airflow.models.dagbag").DBDagBag()

        with create_session() as session:
            ids = _world(session)
            run: dict[str, Any] = {"dag_run_id": ids["run"], "dag_id": "etl"}
            orphans = [_row(session, f"orphan{n}", holder=ids["a"], **run) for n in range(ORPHANS)]
            held_by_live = _row(session, "held", holder=ids["d"], **run)
            unmarked = _row(session, "unmarked", holder=None, **run)
            with_pod = _row(session, "with_pod", holder=ids["a"], **run)
            no_owner = _row(session, "no_owner", holder=ids["a"], **run)

        def callback_pod(callback_id: str, name: str) -> dict[str, Any]:
            return construct_callback_pod(
                callback_id=callback_id,
                namespace=NS,
                scheduler_job_id=ids["a"],
                kube_image="airflow:3.3.2",
                args=["python", "-m", "x"],
                dag_id="etl",
                run_id="manual__1",
                airflow_version="3.3.2",
                pod_id=name,
            )

        # The dead scheduler made with_pod's pod (still Pending): adopted, never rerun.
        cluster.create_pod(NS, callback_pod(with_pod, "callback-of-a"))
        # A pod whose owner label is gone: skipped with a line naming it, never rerun.
        unowned = callback_pod(no_owner, "callback-no-owner")
        del unowned["metadata"]["labels"]["airflow-worker"]
        cluster.create_pod(NS, unowned)

        def start(job_id: int) -> Any:
            executor = executor_module.KubernetesExecutor()
            executor.job_id = job_id
            executor._log = _Recorder(executor.log)  # before start(): its parts log to it
            executor.start()
            return executor

        b, c = start(ids["b"]), start(ids["c"])

        # 1. Two executors race for the same orphans, at once: each row goes to one.
        barrier = threading.Barrier(2)
        taken: dict[str, Any] = {}

        def take(name: str, executor: Any) -> None:
            barrier.wait()
            taken[name] = executor._adoption.take_orphaned_callbacks()

        racers = [threading.Thread(target=take, args=(n, e)) for n, e in (("b", b), ("c", c))]
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.join(timeout=60)
        race = {
            name: sorted(str(workload.callback.id) for workload in workloads)
            for name, (workloads, _) in taken.items()
        }
        race_failed = {name: failed for name, (_, failed) in taken.items()}
        for name, executor in (("b", b), ("c", c)):
            for workload in taken[name][0]:
                executor._process_callback(workload)

        # 2. Rows that cannot be rebuilt, held by the dead scheduler: each fails alone.
        with create_session() as session:
            no_run = _row(session, "no_run", holder=ids["a"], dag_id="etl")
            gone_run = _row(session, "gone_run", holder=ids["a"], dag_run_id=999, dag_id="etl")
            # 3. A pending row queued by both schedulers (no row lock in Airflow's query).
            pending = _row(session, "pending", holder=None, state="pending", **run)

        def queue(executor: Any, callback_id: str) -> None:
            with create_session() as session:
                row = session.get(callback_model, uuid.UUID(callback_id))
                dag_run = session.get(airflow("airflow.models.dagrun").DagRun, ids["run"])
                workload = airflow("airflow.executors.workloads").ExecuteCallback.make(
                    callback=row, dag_run=dag_run
                )
                executor.queue_workload(workload, session=session)
                row.state = "queued"  # what _enqueue_executor_callbacks does next

        queue(b, pending)
        queue(c, pending)

        def beat(until: Any, timeout: float = 30.0) -> None:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                for executor in (b, c):
                    executor._adoption.last_scan = float("-inf")
                    executor.heartbeat()
                    with create_session() as session:
                        runner.process_executor_events(
                            executor=executor,
                            job_id=executor.job_id,
                            scheduler_dag_bag=dag_bag,
                            session=session,
                        )
                if until():
                    return
                time.sleep(0.05)
            raise SystemExit(f"timed out; pods: {[p['metadata'] for p in cluster.pods()]}")

        def row(callback_id: str) -> tuple[str | None, str | None]:
            with create_session() as session:
                found = session.get(callback_model, uuid.UUID(callback_id))
                return (str(found.state), found.output)

        def pods_of(callback_id: str) -> list[str | None]:
            return [
                pod["metadata"]["labels"].get("airflow-worker")
                for pod in cluster.pods()
                if pod["metadata"]["annotations"].get("callback_id") == callback_id
            ]

        beat(
            lambda: (
                all(pods_of(orphan) for orphan in orphans)
                and bool(pods_of(pending))
                and row(no_run)[0] == "failed"
                and row(gone_run)[0] == "failed"
            )
        )
        time.sleep(0.5)
        beat(lambda: True)  # one more round of scans: nothing may change now
        names = {"b": ids["b"], "c": ids["c"], "a": ids["a"], "d": ids["d"]}
        document = {
            "ids": names,
            "race": race,
            "race_failed": race_failed,
            "orphans": orphans,
            "pod_owners": {
                callback_id: pods_of(callback_id)
                for callback_id in [*orphans, held_by_live, unmarked, with_pod, pending, no_owner]
            },
            "rows": {
                name: row(callback_id)
                for name, callback_id in (
                    ("held_by_live", held_by_live),
                    ("unmarked", unmarked),
                    ("with_pod", with_pod),
                    ("no_run", no_run),
                    ("gone_run", gone_run),
                    ("pending", pending),
                    ("no_owner", no_owner),
                )
            },
            "orphan_rows": [row(orphan) for orphan in orphans],
            "ids_of": {
                "no_run": no_run,
                "gone_run": gone_run,
                "with_pod": with_pod,
                "pending": pending,
                "no_owner": no_owner,
            },
            "errors": [*b.log.errors, *c.log.errors],
            "warnings": [*b.log.warnings, *c.log.warnings],
            "running": {"b": len(b.running), "c": len(c.running)},
        }
        b.end()
        c.end()
    sys.stdout.write(json.dumps(document) + "\n")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    # What the scheduler signs workloads with; the executor signs relaunched ones alike.
    os.environ.setdefault("AIRFLOW__API_AUTH__JWT_SECRET", "orphans-scenario-secret")
    sys.exit(main())

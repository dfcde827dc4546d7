"""Task workloads against a real migrated Airflow database (run in a subprocess).

``python -m tests.support.airflow_task_scenarios EXECUTOR`` with ``AIRFLOW_HOME`` pointing at a
migrated SQLite database and ``AIRFLOW__CORE__DAGS_FOLDER`` at a folder holding
``etl.py`` (:data:`DAG_FILE`). The DAG is parsed and serialised as the DAG processor does, a
DAG run creates real ``TaskInstance`` rows, the tasks are queued as the scheduler queues
them, and the real ``SchedulerJobRunner.process_executor_events`` applies the executor's
events to the rows. The kubernetes client talks HTTP to the test kit's cluster on
127.0.0.1; a simulated worker sets the rows as the task process would.

``EXECUTOR`` is ``provider`` (the provider's own ``KubernetesExecutor``), ``library``
(``k8s_workloads.airflow.KubernetesExecutor``), ``restart-provider`` / ``restart-library``
(a scheduler restart and adoption with either), or ``faults`` (the library's, through a
429 on creation, a database outage while results are handled, and a 410 on the watch). Prints
one JSON document; ``tests/airflow/test_tasks.py`` runs it and compares.
"""

from __future__ import annotations

import datetime
import importlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from k8s_workloads.testing import FakeApiServer, FakeCluster
from tests.support.airflow_support import reach_by_kubeconfig
from tests.support.event_factory import FAILED, OOM_KILLED, PULL_FAILED, RUNNING, SUCCEEDED

NS = "airflow"
JOB_ID = 7
TASKS = ["ok", "fails", "oom", "pull", "retried"]
FAULT_TASKS = ["throttled", "handled_while_down", "relisted"]
STALE = "taken_over"  # queued, then taken by another scheduler while creation waits

DAG_FILE = """\
import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG

with DAG("etl", schedule=None, start_date=datetime.datetime(2026, 1, 1)):
    for name in {tasks!r}:
        EmptyOperator(task_id=name, retries=1 if name == "retried" else 0)
"""


def airflow(module: str) -> Any:
    return importlib.import_module(module)


def fake_client() -> Any:
    """``[kubernetes_executor] client_factory`` (also in the provider's watcher process)."""
    from kubernetes import client  # noqa: PLC0415

    url = os.environ["K8S_WORKLOADS_FAKE_API"]
    return client.CoreV1Api(client.ApiClient(client.Configuration(host=url)))


class Database:
    """The metadata database, with an outage on demand at the lowest level (the driver)."""

    def __init__(self) -> None:
        self.down = False
        self.refused = 0
        self.statements: list[tuple[str, Any]] = []  # every one sent, with its parameters
        sqlalchemy = airflow("sqlalchemy")
        engine = airflow("airflow.settings").engine
        sqlalchemy.event.listen(engine, "before_cursor_execute", self._execute)

    def _execute(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:  # noqa: ARG002
        self.statements.append((statement, args[0] if args else None))
        if self.down:
            self.refused += 1
            error = airflow("sqlite3").OperationalError("unable to open database file")
            raise airflow("sqlalchemy.exc").OperationalError(statement, None, error)

    @contextmanager
    def outage(self) -> Iterator[None]:
        self.down = True
        try:
            yield
        finally:
            self.down = False


def _dag_run(tasks: list[str]) -> dict[str, Any]:
    """Parse and serialise the DAG as the DAG processor does; start a run. TIs by task."""
    bundles = airflow("airflow.dag_processing.bundles.manager").DagBundlesManager
    dagbag_module = airflow("airflow.dag_processing.dagbag")
    state = airflow("airflow.utils.state")
    types = airflow("airflow.utils.types")
    create_session = airflow("airflow.utils.session").create_session

    folder = os.environ["AIRFLOW__CORE__DAGS_FOLDER"]
    with open(os.path.join(folder, "etl.py"), "w") as handle:  # noqa: PTH118, PTH123
        handle.write(DAG_FILE.format(tasks=tasks))
    bundles().sync_bundles_to_db()
    bag = dagbag_module.DagBag(dag_folder=folder, bundle_path=folder, bundle_name="dags-folder")
    if bag.import_errors:
        raise SystemExit(f"the DAG did not import: {bag.import_errors}")
    dagbag_module.sync_bag_to_db(bag, "dags-folder", None)
    when = datetime.datetime(2026, 6, 7, tzinfo=datetime.timezone.utc)
    with create_session() as session:
        dag = (
            airflow("airflow.models.dagbag")
            .DBDagBag()
            .get_latest_version_of_dag("etl", session=session)
        )
        run = dag.create_dagrun(
            run_id="manual__2026-06-07",
            logical_date=when,
            data_interval=(when, when),
            run_after=when,
            run_type=types.DagRunType.MANUAL,
            triggered_by=types.DagRunTriggeredByType.TEST,
            state=state.DagRunState.RUNNING,
            session=session,
        )
        return {ti.task_id: ti.id for ti in run.get_task_instances(session=session)}


class Scenario:
    def __init__(self, which: str, cluster: FakeCluster) -> None:
        self.which = which
        self.cluster = cluster
        self.runner = airflow("airflow.jobs.scheduler_job_runner").SchedulerJobRunner
        self.create_session = airflow("airflow.utils.session").create_session
        self.ti_model = airflow("airflow.models.taskinstance").TaskInstance
        self.states = airflow("airflow.utils.state").TaskInstanceState
        self.dag_bag = airflow("airflow.models.dagbag").DBDagBag()
        self.database = Database()
        self.events: dict[str, list[str]] = {}
        self.ids: dict[str, Any] = {}
        self.pods: dict[str, str] = {}
        self.pull_pods: set[str] = set()
        if which == "provider":
            module = "airflow.providers.cncf.kubernetes.executors.kubernetes_executor"
        else:
            module = "k8s_workloads.airflow.executor"
        self.executor = airflow(module).KubernetesExecutor()
        self.executor.job_id = JOB_ID
        sink = airflow("airflow.callbacks.database_callback_sink").DatabaseCallbackSink
        self.executor.callback_sink = sink()

    # --- the scheduler's part ------------------------------------------------------

    def queue(self, tasks: list[str]) -> None:
        """What the scheduler does: TIs to queued, by this job, and their workloads."""
        execute_task = airflow("airflow.executors.workloads").ExecuteTask
        with self.create_session() as session:
            for name in tasks:
                ti = session.get(self.ti_model, self.ids[name])
                ti.state = self.states.QUEUED
                ti.try_number = 1
                ti.queued_by_job_id = JOB_ID
                ti.queued_dttm = datetime.datetime.now(datetime.timezone.utc)
                session.flush()
                self.executor.queue_workload(execute_task.make(ti), session=session)

    def beat(self) -> None:
        """One scheduler loop turn: the executor's heartbeat, then its events applied."""
        self.executor.heartbeat()
        self.apply_events()

    def apply_events(self) -> None:
        for key, (state, _) in list(self.executor.event_buffer.items()):
            seen = self.events.setdefault(key.task_id, [])
            if not seen or seen[-1] != str(state):
                seen.append(str(state))
        with self.create_session() as session:
            self.runner.process_executor_events(
                executor=self.executor,
                job_id=self.executor.job_id,
                scheduler_dag_bag=self.dag_bag,
                session=session,
            )

    def beat_until(self, done: Callable[[], bool], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.beat()
            if done():
                return
            time.sleep(0.02)
        raise SystemExit(
            f"{self.which}: timed out; rows {self.rows()}, events {self.events}, "
            f"pods {self.cluster.pods()}"
        )

    def settle(self, beats: int = 15) -> None:
        """Beat until nothing is running, then a few more times (deletes, labels)."""
        self.beat_until(lambda: not self.executor.running)
        for _ in range(beats):
            self.beat()
            time.sleep(0.02)

    # --- the worker's and the kubelet's part -------------------------------------------

    def _ti(self, session: Any, name: str) -> Any:
        # By task id: a task instance's row id changes when it is set up for a retry.
        select = airflow("sqlalchemy").select
        model = self.ti_model
        return session.scalars(
            select(model).where(model.dag_id == "etl", model.task_id == name)
        ).one()

    def row(self, name: str) -> Any:
        with self.create_session() as session:
            ti = self._ti(session, name)
            return None if ti.state is None else str(ti.state)

    def rows(self) -> dict[str, Any]:
        with self.create_session() as session:
            out = {}
            for name in self.ids:
                ti = self._ti(session, name)
                out[name] = [None if ti.state is None else str(ti.state), ti.try_number]
            return out

    def worker_sets(self, name: str, state: str) -> None:
        with self.create_session() as session:
            ti = self._ti(session, name)
            ti.state = self.states(state)
            if state == "running":
                ti.start_date = datetime.datetime.now(datetime.timezone.utc)

    def kubelet_sets(self, name: str, status: dict[str, Any]) -> None:
        self.cluster.set_status(NS, self.pods[name], status)

    def pull_fails(self) -> bool:
        """Every "pull" pod not failed yet fails to pull its image; always True."""
        for pod in self.cluster.pods():
            metadata = pod["metadata"]
            if metadata["annotations"].get("task_id") == "pull":
                self.pull_pods.add(metadata["name"])
                if not pod["status"].get("containerStatuses"):
                    self.cluster.set_status(NS, metadata["name"], PULL_FAILED)
        return True

    def find_pods(self, names: list[str]) -> None:
        def found() -> bool:
            for pod in self.cluster.pods():
                task = pod["metadata"]["annotations"].get("task_id")
                self.pods.setdefault(task, pod["metadata"]["name"])
            return all(name in self.pods for name in names)

        self.beat_until(found)

    def pods_left(self) -> dict[str, Any]:
        left: dict[str, list[Any]] = {}
        for pod in self.cluster.pods():
            labels = pod["metadata"]["labels"]
            left.setdefault(pod["metadata"]["annotations"]["task_id"], []).append(
                {
                    "phase": pod["status"].get("phase"),
                    "labels": {k: v for k, v in sorted(labels.items()) if k != "airflow_version"},
                }
            )
        return {task: sorted(pods, key=json.dumps) for task, pods in sorted(left.items())}


def _as_built(pod: dict[str, Any]) -> dict[str, Any]:
    """The manifest as the executor sent it: what the API server adds goes, and the
    random pod-name suffix is replaced."""
    pod = json.loads(json.dumps(pod))
    for field in ("uid", "creationTimestamp", "resourceVersion"):
        pod["metadata"].pop(field, None)
    pod.pop("status", None)
    name = pod["metadata"]["name"]
    pod["metadata"]["name"] = name.rsplit("-", 1)[0] + "-<suffix>"
    # The workload JSON names rows of this run's database and a trace of this process.
    args = pod["spec"]["containers"][0]["args"]
    workload = json.loads(args[-1])
    for field in ("id", "dag_version_id", "context_carrier"):
        workload["ti"][field] = f"<{field}>"
    args[-1] = workload
    return pod


def compared(which: str) -> dict[str, Any]:
    """Five tasks through the executor: the pods built, the events, the rows, the pods left."""
    cluster = FakeCluster(namespaces=[NS])
    with FakeApiServer(cluster, lifetime=180) as server:
        os.environ["K8S_WORKLOADS_FAKE_API"] = server.url
        reach_by_kubeconfig(server.url)
        ids = _dag_run(TASKS)
        scenario = Scenario(which, cluster)
        scenario.ids = ids
        scenario.executor.start()
        try:
            scenario.queue(TASKS)
            scenario.find_pods(TASKS)
            built = {name: _as_built(cluster.pod(NS, scenario.pods[name]) or {}) for name in TASKS}
            # The task processes start (and set their rows); one image cannot be pulled.
            for name in ("ok", "fails", "oom", "retried"):
                scenario.worker_sets(name, "running")
                scenario.kubelet_sets(name, RUNNING)
            # Each pod of "pull" fails to pull its image; the launch is requeued once
            # (pod_launch_failure_retries = 1), then the task fails.
            scenario.beat_until(lambda: scenario.pull_fails() and scenario.row("pull") == "failed")
            # "ok" and "fails" end as task processes do (row first, then the pod's exit);
            # "oom" and "retried" are killed with their rows still running.
            scenario.worker_sets("ok", "success")
            scenario.kubelet_sets("ok", SUCCEEDED)
            scenario.worker_sets("fails", "failed")
            scenario.kubelet_sets("fails", FAILED)
            scenario.kubelet_sets("oom", OOM_KILLED)
            scenario.kubelet_sets("retried", OOM_KILLED)
            scenario.beat_until(
                lambda: (
                    scenario.row("oom") == "failed" and scenario.row("retried") == "up_for_retry"
                )
            )
            scenario.settle()
        finally:
            scenario.executor.end()
        return {
            "built": built,
            "events": scenario.events,
            "rows": scenario.rows(),
            "pods_left": scenario.pods_left(),
            "pull_pods": len(scenario.pull_pods),
        }


def faults() -> dict[str, Any]:
    """The library's executor through a 429, a database outage and a 410, real rows."""
    # A 429 is retried only with a publish retry budget (the provider's default is 0).
    os.environ["AIRFLOW__KUBERNETES_EXECUTOR__TASK_PUBLISH_MAX_RETRIES"] = "1"
    cluster = FakeCluster(namespaces=[NS])
    with FakeApiServer(cluster, lifetime=180) as server:
        os.environ["K8S_WORKLOADS_FAKE_API"] = server.url
        reach_by_kubeconfig(server.url)
        ids = _dag_run([*FAULT_TASKS, STALE])
        scenario = Scenario("library", cluster)
        scenario.ids = ids
        executor = scenario.executor
        executor.start()
        report: dict[str, Any] = {}
        try:
            # A 429 with Retry-After on the first creation: paused, then created.
            cluster.fail_next(
                "create_pod", 429, reason="TooManyRequests", headers={"Retry-After": "1"}
            )
            scenario.queue([*FAULT_TASKS, STALE])
            started = time.monotonic()
            scenario.beat()
            report["paused"] = executor.core.paused_until is not None
            # While creation waits, another scheduler re-queues one of them as its own:
            # its pod must not be created by this one (the provider's stale check).
            with scenario.create_session() as session:
                scenario._ti(session, STALE).queued_by_job_id = JOB_ID + 90
            scenario.find_pods(FAULT_TASKS)
            report["created_after_seconds"] = round(time.monotonic() - started, 1)
            scenario.beat()
            report["stale_pods"] = [
                pod["metadata"]["name"]
                for pod in cluster.pods()
                if pod["metadata"]["annotations"]["task_id"] == STALE
            ]
            report["stale_running"] = any(k.task_id == STALE for k in executor.running)
            for name in FAULT_TASKS:
                scenario.worker_sets(name, "running")
                scenario.kubelet_sets(name, RUNNING)
            scenario.worker_sets("throttled", "success")
            scenario.kubelet_sets("throttled", SUCCEEDED)
            scenario.beat_until(lambda: not cluster.pod(NS, scenario.pods["throttled"]))

            # The database goes down while a result waits to be handled: the executor's
            # state reads fail for three heartbeats; the result is handled after.
            scenario.worker_sets("handled_while_down", "success")
            scenario.kubelet_sets("handled_while_down", SUCCEEDED)
            deadline = time.monotonic() + 10
            while not executor.core.waiting_results and time.monotonic() < deadline:
                time.sleep(0.01)  # the watcher has the event
            with scenario.database.outage():
                for _ in range(3):
                    executor.heartbeat()  # no error escapes; the result waits
            report["refused_queries"] = scenario.database.refused
            report["backlog_after_outage"] = executor.core.backlog
            report["pod_kept_during_outage"] = bool(
                cluster.pod(NS, scenario.pods["handled_while_down"])
            )
            scenario.beat_until(lambda: not cluster.pod(NS, scenario.pods["handled_while_down"]))

            # The watch connection drops; meanwhile the pod succeeds and the history is
            # compacted; the watcher resumes from its version, gets a 410, and the re-list
            # finds the Succeeded pod.
            cluster.fail_next("watch", 503, message="the watch cache is warming up")
            mark = len(cluster.calls)
            cluster.drop_watches()
            scenario.worker_sets("relisted", "success")
            scenario.kubelet_sets("relisted", SUCCEEDED)
            cluster.compact()
            scenario.beat_until(lambda: not cluster.pod(NS, scenario.pods["relisted"]))
            calls = [call for call, _, _ in cluster.calls[mark:]]
            report["calls_after_drop"] = [
                call for i, call in enumerate(calls) if i == 0 or calls[i - 1] != call
            ]
            scenario.settle(beats=5)
        finally:
            executor.end()
        report.update(
            {"events": scenario.events, "rows": scenario.rows(), "pods_left": scenario.pods_left()}
        )
        return report


BATCH_TASKS = [f"b{number:02}" for number in range(12)]
TAKEN_OVER = ["b01", "b11"]  # one in each creation batch of 10


def _is_stale_check(statement: str) -> bool:
    """The executor's stale check: a task instance's queued owner, read by row id (one,
    ``= ?``, or several, ``IN (?, ...)``)."""
    text = " ".join(statement.split())
    return "task_instance.queued_by_job_id" in text and "WHERE task_instance.id " in text


def stale_batches() -> dict[str, Any]:
    """Twelve tasks queued at once, created ten per heartbeat: the stale checks' queries
    per heartbeat, and what became of two tasks taken over by another scheduler."""
    cluster = FakeCluster(namespaces=[NS])
    with FakeApiServer(cluster, lifetime=180) as server:
        os.environ["K8S_WORKLOADS_FAKE_API"] = server.url
        reach_by_kubeconfig(server.url)
        ids = _dag_run(BATCH_TASKS)
        scenario = Scenario("library", cluster)
        scenario.ids = ids
        executor = scenario.executor
        executor.start()
        beats: list[dict[str, Any]] = []
        try:
            executor.heartbeat()  # the first sync's adoption reads, before any task
            scenario.queue(BATCH_TASKS)
            with scenario.create_session() as session:
                for name in TAKEN_OVER:
                    scenario._ti(session, name).queued_by_job_id = JOB_ID + 90
            for _ in range(3):
                mark, pods = len(scenario.database.statements), len(cluster.pods())
                executor.heartbeat()
                checks = [
                    (statement, parameters)
                    for statement, parameters in scenario.database.statements[mark:]
                    if _is_stale_check(statement)
                ]
                beats.append(
                    {
                        "pods_created": len(cluster.pods()) - pods,
                        "stale_checks": len(checks),
                        "rows_checked": [len(parameters) for _, parameters in checks],
                    }
                )
        finally:
            executor.end()
        created = sorted(pod["metadata"]["annotations"]["task_id"] for pod in cluster.pods())
        return {
            "beats": beats,
            "created": created,
            "running": sorted(key.task_id for key in executor.running),
            "queued_events": sorted(
                key.task_id
                for key, (state, _) in executor.event_buffer.items()
                if str(state) == "queued"
            ),
        }


RESTART_TASKS = ["survives", "finished_while_down", "failed_while_down", "never_launched"]


def restart(which: str) -> dict[str, Any]:
    """Scheduler 7 dies with pods out; scheduler 8 adopts what it can (the scheduler hands
    it the orphaned task instances), and the rest is reset."""
    cluster = FakeCluster(namespaces=[NS])
    with FakeApiServer(cluster, lifetime=180) as server:
        os.environ["K8S_WORKLOADS_FAKE_API"] = server.url
        reach_by_kubeconfig(server.url)
        ids = _dag_run(RESTART_TASKS)
        first = Scenario(which, cluster)
        first.ids = ids
        first.executor.start()
        launched = RESTART_TASKS[:-1]
        try:
            first.queue(launched)
            first.find_pods(launched)
            for name in launched:
                first.worker_sets(name, "running")
                first.kubelet_sets(name, RUNNING)
            first.beat()
        finally:
            first.executor.end()
        # "never_launched" was queued by 7, which died before giving it to its executor.
        with first.create_session() as session:
            ti = first._ti(session, "never_launched")
            ti.state, ti.try_number, ti.queued_by_job_id = first.states.QUEUED, 1, JOB_ID
        # While no scheduler runs: one task finishes, one is OOM-killed.
        first.worker_sets("finished_while_down", "success")
        first.kubelet_sets("finished_while_down", SUCCEEDED)
        first.kubelet_sets("failed_while_down", OOM_KILLED)

        second = Scenario(which, cluster)
        second.ids, second.pods = ids, first.pods
        second.executor.job_id = JOB_ID + 1
        second.executor.start()
        try:
            # What adopt_or_reset_orphaned_tasks does: the orphans in adoptable states go
            # to the executor; those it adopts become the new scheduler's, the rest reset.
            adoptable = airflow("airflow.utils.state").State.adoptable_states
            with second.create_session() as session:
                orphans = [second._ti(session, name) for name in RESTART_TASKS]
                orphans = [ti for ti in orphans if ti.state in adoptable]
                reset = second.executor.try_adopt_task_instances(orphans)
                reset_names = sorted(ti.task_id for ti in reset)
                for ti in orphans:
                    if ti.task_id in reset_names:
                        ti.state, ti.queued_by_job_id = None, None
                    else:
                        ti.queued_by_job_id = JOB_ID + 1

            def owner(name: str) -> str | None:
                pod = cluster.pod(NS, second.pods[name])
                return None if pod is None else pod["metadata"]["labels"].get("airflow-worker")

            second.beat_until(
                lambda: (
                    owner("survives") == str(JOB_ID + 1)
                    and second.row("failed_while_down") == "failed"
                    and owner("finished_while_down") is None
                )
            )
            adopted_running = sorted(key.task_id for key in second.executor.running)
            second.worker_sets("survives", "success")
            second.kubelet_sets("survives", SUCCEEDED)
            second.beat_until(lambda: owner("survives") is None)
            second.settle()
        finally:
            second.executor.end()
        return {
            "reset": reset_names,
            "adopted_running": adopted_running,
            "events": second.events,
            "rows": second.rows(),
            "pods_left": second.pods_left(),
        }


def main() -> int:
    which = sys.argv[1]
    if which == "faults":
        document = faults()
    elif which == "stale-batches":
        document = stale_batches()
    elif which.startswith("restart-"):
        document = restart(which.removeprefix("restart-"))
    else:
        document = compared(which)
    sys.stdout.write(json.dumps(document) + "\n")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    sys.exit(main())

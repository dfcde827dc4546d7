"""The real Airflow 3.3 processes with this executor, end to end.

``airflow api-server``, ``airflow dag-processor`` and ``airflow scheduler`` run as
subprocesses on a migrated SQLite database, with ``[core] executor =
k8s_workloads.airflow.KubernetesExecutor`` and the test kit's cluster: its API server on
127.0.0.1 and its kubelet running each pod's command as a local process, so task and
callback pods run the real Task SDK against the real api-server (see
``tests/support/airflow_deployment.py``). The scheduler loop, the dag processor, the deadline
machinery and ``_enqueue_executor_callbacks``' routing are Airflow's own. The tests run in
the order written, on one deployment; each DAG run is triggered through the REST API and
its rows read from the database.

What a deadline callback did is proven by the lines it appends to a file (one line per
run): a callback that ran twice would leave two.
"""

from __future__ import annotations

import datetime
import functools
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("airflow.executors.workloads", reason="Airflow runs in the Airflow environment")

from tests.support.airflow_deployment import NS, Deployment
from tests.support.airflow_support import airflow, migrated_database

# Deadline callbacks, in the DAGs folder (the bundle's path is on the callback's sys.path).
# The module names neither of the two words that make the dag processor parse a file.
ALERTS = '''\
"""Deadline callbacks of the end-to-end test: each appends a line to a file."""

import pathlib
import time


def record(marker, line, context=None):
    with open(marker, "a") as out:
        out.write(line + "\\n")


def fail(marker, line, context=None):
    record(marker, line)
    raise RuntimeError("this alert fails on purpose")


def held(marker, line, release, context=None):
    record(marker, "start " + line)
    until = time.monotonic() + 600
    while not pathlib.Path(release).exists():
        if time.monotonic() > until:
            raise TimeoutError("never released: " + release)
        time.sleep(0.1)
    record(marker, "end " + line)
'''

DAGS = '''\
"""The end-to-end test's DAGs: tasks that succeed and fail, and missed deadlines."""

import datetime
import pathlib
import time

from airflow.sdk import DAG, DeadlineAlert, DeadlineReference, SyncCallback, task

ROOT = pathlib.Path(__file__).resolve().parent.parent  # the deployment root: <root>/dags/<file>
MARKER = str(ROOT / "callbacks.txt")
RELEASE = str(ROOT / "release")
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
SOON = datetime.timedelta(seconds=1)


def wait_for_lines(*wanted):
    """Keep the run going until the callbacks wrote these lines: the deadline is missed."""
    until = time.monotonic() + 300
    while time.monotonic() < until:
        path = pathlib.Path(MARKER)
        lines = path.read_text().splitlines() if path.exists() else []
        if all(line in lines for line in wanted):
            return
        time.sleep(0.2)
    raise TimeoutError(f"no {wanted} in {MARKER}")


def alert(callable_path, line, **kwargs):
    return DeadlineAlert(
        reference=DeadlineReference.DAGRUN_QUEUED_AT,
        interval=SOON,
        callback=SyncCallback(callable_path, kwargs={"marker": MARKER, "line": line, **kwargs}),
    )


with DAG("e2e_tasks", schedule=None, start_date=START, default_args={"retries": 0}):

    @task
    def succeeds():
        print("a task pod ran")

    @task
    def fails():
        raise RuntimeError("this task fails on purpose")

    succeeds()
    fails()


with DAG(
    "e2e_deadlines",
    schedule=None,
    start_date=START,
    deadline=[alert("e2e_alerts.record", "alert ran"), alert("e2e_alerts.fail", "alert raised")],
):

    @task
    def outlasts_the_deadline():
        wait_for_lines("alert ran", "alert raised")

    outlasts_the_deadline()


with DAG(
    "e2e_adoption",
    schedule=None,
    start_date=START,
    deadline=alert("e2e_alerts.held", "held", release=RELEASE),
):

    @task
    def outlasts_the_deadline():
        wait_for_lines("start held")

    outlasts_the_deadline()


with DAG(
    "e2e_orphan",
    schedule=None,
    start_date=START,
    deadline=alert("e2e_alerts.record", "orphan ran"),
):

    @task
    def outlasts_the_deadline():
        wait_for_lines("orphan ran")

    outlasts_the_deadline()


with DAG(
    "e2e_stored",
    schedule=None,
    start_date=START,
    deadline=alert("e2e_alerts.record", "stored ran"),
):

    @task
    def outlasts_the_deadline():
        wait_for_lines("stored ran")

    outlasts_the_deadline()
'''

DAG_IDS = ("e2e_tasks", "e2e_deadlines", "e2e_adoption", "e2e_orphan", "e2e_stored")
START_SECONDS = 240.0  # the processes' imports and the first parse, on a loaded machine
RUN_SECONDS = 180.0  # a DAG run of one or two pods
FIGURES: dict[str, float] = {}  # seconds per scenario, printed at the end (pytest -s)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """The three Airflow processes and the kit's cluster, every DAG parsed; all stopped
    and removed afterwards."""
    database = migrated_database(tmp_path_factory.mktemp("airflow"))
    started = time.monotonic()
    try:
        with Deployment(database, {"e2e_dags.py": DAGS, "e2e_alerts.py": ALERTS}) as deployment:
            deployment.start("api-server", "api-server")
            deployment.start("dag-processor", "dag-processor")
            start_scheduler(deployment)
            deployment.wait_for(
                lambda: deployment.answers("/api/v2/monitor/health"), "api-server", START_SECONDS
            )
            for dag_id in DAG_IDS:
                known = functools.partial(deployment.answers, f"/api/v2/dags/{dag_id}")
                deployment.wait_for(known, f"DAG {dag_id} parsed", START_SECONDS)
            deployment.wait_for(lambda: scheduler_jobs(deployment), "scheduler job", START_SECONDS)
            FIGURES["start"] = time.monotonic() - started
            yield deployment
    finally:
        if FIGURES:
            figures = json.dumps({name: round(value, 1) for name, value in FIGURES.items()})
            print(f"\nend-to-end seconds: {figures}")  # noqa: T201 - the figures of docs/guarantees.md (-s)


def start_scheduler(deployment: Deployment) -> None:
    """One more ``airflow scheduler`` (``scheduler-1``, ``scheduler-2``, ...)."""
    count = sum(name.startswith("scheduler") for name in deployment.processes)
    deployment.start(f"scheduler-{count + 1}", "scheduler")


def kill_scheduler(deployment: Deployment) -> None:
    """SIGKILL the running scheduler."""
    (name,) = [name for name in deployment.expected_alive if name.startswith("scheduler")]
    deployment.kill(name)


# --- reading the database ------------------------------------------------------------------


def scheduler_jobs(deployment: Deployment) -> list[int]:
    """Ids of the scheduler jobs that are running, oldest first."""
    rows = deployment.query(
        "SELECT id FROM job WHERE job_type = 'SchedulerJob' AND state = 'running' ORDER BY id"
    )
    return [row[0] for row in rows]


def trigger(deployment: Deployment, dag_id: str) -> str:
    """A manual DAG run through the REST API; its run id."""
    run = deployment.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", {"logical_date": None})
    run_id: str = run["dag_run_id"]
    return run_id


def task_states(deployment: Deployment, dag_id: str, run_id: str) -> dict[str, str | None]:
    rows = deployment.query(
        "SELECT task_id, state FROM task_instance WHERE dag_id = ? AND run_id = ?", dag_id, run_id
    )
    return dict(rows)


def run_state(deployment: Deployment, dag_id: str, run_id: str) -> str | None:
    rows = deployment.query(
        "SELECT state FROM dag_run WHERE dag_id = ? AND run_id = ?", dag_id, run_id
    )
    return rows[0][0] if rows else None


def callbacks(deployment: Deployment, dag_id: str) -> dict[str, dict[str, Any]]:
    """The DAG's executor callbacks by their ``line`` argument: id, state, output."""
    serialization = airflow("airflow.serialization.serialized_objects").BaseSerialization
    found = {}
    for callback_id, state, output, data in deployment.query(
        "SELECT id, state, output, data FROM callback WHERE type = 'executor'"
    ):
        # The column is Airflow's ExtendedJSON: read back as Airflow reads it.
        document = serialization.deserialize(json.loads(data))
        if document.get("dag_id") == dag_id:
            line = document["kwargs"]["line"]
            found[line] = {"id": callback_id, "state": state, "output": output}
    return found


def marker_lines(deployment: Deployment) -> list[str]:
    path = deployment.root / "callbacks.txt"
    return path.read_text().splitlines() if path.exists() else []


def callback_pod(deployment: Deployment, dag_id: str) -> dict[str, Any] | None:
    """The DAG's one callback pod in the cluster, if there is one."""
    pods = [
        pod
        for pod in deployment.cluster.pods()
        if "callback_id" in (annotations := pod["metadata"].get("annotations") or {})
        and annotations.get("dag_id") == dag_id
    ]
    assert len(pods) <= 1, [pod["metadata"]["name"] for pod in pods]
    return pods[0] if pods else None


def created_pods(deployment: Deployment, since: int) -> list[str]:
    """Names of the pods created through the API server since call number ``since``."""
    calls = deployment.cluster.calls[since:]
    return [name for call, namespace, name in calls if call == "create_pod" and namespace == NS]


# --- the scenarios ---------------------------------------------------------------------------


def test_a_task_that_succeeds_and_one_that_fails(deployment: Deployment) -> None:
    started = time.monotonic()
    since = len(deployment.cluster.calls)
    run_id = trigger(deployment, "e2e_tasks")
    ended = {"success", "failed"}

    def finished() -> dict[str, str | None] | None:
        states = task_states(deployment, "e2e_tasks", run_id)
        return states if len(states) == 2 and set(states.values()) <= ended else None

    states = deployment.wait_for(finished, "e2e_tasks' tasks finished", RUN_SECONDS)
    assert states == {"succeeds": "success", "fails": "failed"}
    deployment.wait_for(
        lambda: run_state(deployment, "e2e_tasks", run_id) == "failed",
        "e2e_tasks' run failed",
        RUN_SECONDS,
    )
    pods = created_pods(deployment, since)
    assert len(pods) == 2, pods  # one pod per task, no retry
    FIGURES["tasks"] = time.monotonic() - started


def test_missed_deadlines_run_their_callbacks_as_pods(deployment: Deployment) -> None:
    started = time.monotonic()
    since = len(deployment.cluster.calls)
    run_id = trigger(deployment, "e2e_deadlines")

    def ended() -> dict[str, dict[str, Any]] | None:
        found = callbacks(deployment, "e2e_deadlines")
        states = {line: row["state"] for line, row in found.items()}
        return found if set(states.values()) <= {"success", "failed"} and len(states) == 2 else None

    found = deployment.wait_for(ended, "both deadline callbacks ended", RUN_SECONDS)
    seen = datetime.datetime.now(datetime.timezone.utc)
    ((deadline,),) = deployment.query(
        "SELECT DISTINCT deadline.deadline_time FROM deadline JOIN dag_run"
        " ON deadline.dagrun_id = dag_run.id WHERE dag_run.run_id = ?",
        run_id,
    )
    missed = datetime.datetime.fromisoformat(deadline).replace(tzinfo=datetime.timezone.utc)
    assert found["alert ran"]["state"] == "success"
    assert found["alert raised"]["state"] == "failed"
    # Its row says why (issue 32): the pod by namespace/name, the cause, and the last
    # words the kubelet took from its log (FallbackToLogsOnError): the exception raised.
    output = found["alert raised"]["output"] or ""
    assert f"Pod {NS}/callback-" in output, found["alert raised"]
    assert "exit code 1" in output, found["alert raised"]
    assert "RuntimeError: this alert fails on purpose" in output, found["alert raised"]
    assert sorted(marker_lines(deployment)) == ["alert raised", "alert ran"]
    deployment.wait_for(
        lambda: run_state(deployment, "e2e_deadlines", run_id) == "success",
        "e2e_deadlines' run succeeded",
        RUN_SECONDS,
    )
    callback_pods = [name for name in created_pods(deployment, since) if "callback" in name]
    assert len(callback_pods) == 2, callback_pods  # each callback ran in one pod, once
    # The executor's mark leaves the succeeded callback's output once its state is stored.
    deployment.wait_for(
        lambda: callbacks(deployment, "e2e_deadlines")["alert ran"]["output"] is None,
        "the succeeded callback's output free of the executor's mark",
        RUN_SECONDS,
    )
    FIGURES["deadline callbacks"] = time.monotonic() - started
    FIGURES["callbacks ended after the deadline"] = (seen - missed).total_seconds()


def test_a_scheduler_killed_mid_callback_is_replaced_and_the_callback_runs_once(
    deployment: Deployment,
) -> None:
    started = time.monotonic()
    since = len(deployment.cluster.calls)
    trigger(deployment, "e2e_adoption")
    deployment.wait_for(
        lambda: "start held" in marker_lines(deployment), "the held callback running", RUN_SECONDS
    )
    pod = callback_pod(deployment, "e2e_adoption")
    assert pod is not None
    (first,) = scheduler_jobs(deployment)
    assert pod["metadata"]["labels"]["airflow-worker"] == str(first)

    kill_scheduler(deployment)  # SIGKILL: no end(), no clean-up, its job row left running
    killed = time.monotonic()
    start_scheduler(deployment)
    second = deployment.wait_for(
        lambda: [job for job in scheduler_jobs(deployment) if job != first],
        "a second scheduler job",
        START_SECONDS,
    )[0]

    def adopted() -> bool:
        current = callback_pod(deployment, "e2e_adoption")
        return current is not None and current["metadata"]["labels"]["airflow-worker"] == str(
            second
        )

    deployment.wait_for(adopted, "the callback pod adopted by the second scheduler", RUN_SECONDS)
    FIGURES["adopted after the kill"] = time.monotonic() - killed
    (deployment.root / "release").touch()
    deployment.wait_for(
        lambda: callbacks(deployment, "e2e_adoption")["held"]["state"] == "success",
        "the adopted callback's row success",
        RUN_SECONDS,
    )
    assert marker_lines(deployment).count("start held") == 1
    assert marker_lines(deployment).count("end held") == 1
    callback_pods = [name for name in created_pods(deployment, since) if "callback" in name]
    assert callback_pods == [pod["metadata"]["name"]]  # never launched again
    FIGURES["scheduler killed mid-callback"] = time.monotonic() - started


def test_a_scheduler_killed_while_callback_pods_cannot_be_created_is_replaced_and_it_runs(
    deployment: Deployment,
) -> None:
    """The callback was queued by a scheduler that died before its pod existed: the next
    scheduler runs it again, once (the orphaned-callback relaunch)."""
    started = time.monotonic()
    since = len(deployment.cluster.calls)
    outage = deployment.cluster
    outage.refusing.set()  # every callback pod creation answered 503
    run_id = trigger(deployment, "e2e_orphan")
    deployment.wait_for(lambda: outage.refused, "a callback pod creation refused", RUN_SECONDS)
    deployment.wait_for(
        lambda: callbacks(deployment, "e2e_orphan")["orphan ran"]["state"] == "queued",
        "the callback's row queued",
        RUN_SECONDS,
    )

    kill_scheduler(deployment)  # while its callback's pod cannot be created
    killed = time.monotonic()
    outage.refusing.clear()  # the API answers again
    assert callback_pod(deployment, "e2e_orphan") is None  # it never had a pod
    start_scheduler(deployment)
    deployment.wait_for(
        lambda: callbacks(deployment, "e2e_orphan")["orphan ran"]["state"] == "success",
        "the orphaned callback's row success",
        RUN_SECONDS,
    )
    FIGURES["orphan ran after the kill"] = time.monotonic() - killed
    assert marker_lines(deployment).count("orphan ran") == 1
    callback_pods = [name for name in created_pods(deployment, since) if "callback" in name]
    assert len(callback_pods) == 1, callback_pods  # created once, by the next scheduler
    deployment.wait_for(
        lambda: run_state(deployment, "e2e_orphan", run_id) == "success",
        "e2e_orphan's run succeeded",
        RUN_SECONDS,
    )
    task_pods = [name for name in created_pods(deployment, since) if "callback" not in name]
    assert len(task_pods) == 1, task_pods  # running across the kill: adopted, not run again
    FIGURES["scheduler killed while pods are refused"] = time.monotonic() - started


def test_a_scheduler_killed_as_it_deletes_a_finished_callbacks_pod_never_runs_it_again(
    deployment: Deployment,
) -> None:
    """The window the README listed as not covered: the callback's pod finished and the
    scheduler dies as its pod is deleted. A pod goes only once the scheduler stored the
    result, so the row is ``success`` by then; the DELETE never lands (the scheduler is
    SIGKILLed while it waits), and the next scheduler cleans the pod up and runs nothing
    again."""
    started = time.monotonic()
    since = len(deployment.cluster.calls)
    cluster = deployment.cluster
    cluster.holding_deletes = "e2e_stored"  # its callback pod's DELETE waits, then is dropped
    trigger(deployment, "e2e_stored")
    deployment.wait_for(lambda: cluster.held, "the callback pod's DELETE", RUN_SECONDS)
    stored = callbacks(deployment, "e2e_stored")["stored ran"]["state"]
    assert stored == "success"  # stored before its pod was asked to go
    kill_scheduler(deployment)  # SIGKILL as the DELETE waits
    killed = time.monotonic()
    cluster.holding_deletes = None
    cluster.release_deletes.set()  # the held DELETE is dropped, never applied
    (pod,) = [name for name in created_pods(deployment, since) if "callback" in name]
    assert callback_pod(deployment, "e2e_stored") is not None  # left by the dead scheduler
    start_scheduler(deployment)
    deployment.wait_for(
        lambda: callback_pod(deployment, "e2e_stored") is None,
        "the settled callback's pod cleaned up by the next scheduler",
        RUN_SECONDS,
    )
    FIGURES["a settled callback's pod cleaned up after the kill"] = time.monotonic() - killed
    assert callbacks(deployment, "e2e_stored")["stored ran"]["state"] == "success"
    assert marker_lines(deployment).count("stored ran") == 1  # ran once
    callback_pods = [name for name in created_pods(deployment, since) if "callback" in name]
    assert callback_pods == [pod]  # never launched again
    FIGURES["scheduler killed as it deletes a callback's pod"] = time.monotonic() - started

"""Airflow executors at scale: ours against the provider's, over HTTP, with a real database.

    .venv-airflow/bin/python benchmarks/bench_airflow_scale.py           # N 200 and 2,000
    .venv-airflow/bin/python benchmarks/bench_airflow_scale.py --quick   # N 40, for CI

Three executors run the same N task instances to success, one run each in a process of
its own: ``k8s_workloads.airflow.KubernetesExecutor`` (ours), and the provider's
``KubernetesExecutor`` with ``[kubernetes_executor] async_pod_creation`` False
(provider-sync) and True (provider-async, the baseline of every ratio). All get the same
options: ``worker_pods_creation_batch_size=32``, ``async_pod_creation`` (True but for
provider-sync), ``pod_creation_max_concurrency=16``, ``task_publish_max_retries=5``.

Each run has its own ``AIRFLOW_HOME`` with a copy of a migrated SQLite database (``airflow db
migrate`` once, cached in the temp folder) holding one DAG run of N ``EmptyOperator`` tasks,
queued by this scheduler's job, so the stale-row checks pass. The executor is real Airflow
3.3.2 and provider code; its kubernetes clients (the sync one, the provider's
kubernetes_asyncio one, the watcher's) come from a kubeconfig file, as in production, and
build their pods over one template (``restartPolicy: Never``: the kit's kubelet restarts a
container otherwise, as a real one does) and talk HTTP to the kit's API server in a process
of its own (``python -m
k8s_workloads.testing.server``; the fault runs use ``benchmarks/_kit_server.py``, the same
server failing 5% of the calls), with a per-call latency and its kubelet moving each pod to
Running and then Succeeded. The run
queues the N workloads (``queue_workload``, as the scheduler does) and calls
``executor.heartbeat()`` in a tight loop, draining ``get_event_buffer()`` after each (the
harness's fake scheduler). This process plays the task processes: it watches the pods and
sets a task instance's row to success once its pod exists, so a Succeeded pod reads as
success from the database.

Nothing asserts on timing: targets print PASS or MISS and the script exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import gc
import http.client
import json
import math
import os
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _harness import TIMES, Mode, Outcome, header, summarize, verdict

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

HERE = Path(__file__).resolve().parent

# The API server in its own process: the kit's.
SERVER_COMMAND: tuple[str, ...] = (sys.executable, "-m", "k8s_workloads.testing.server")
# The kit's server with a fault rate (and deletions counted per pod): the fault runs.
FAULT_SERVER_COMMAND: tuple[str, ...] = (sys.executable, str(HERE / "_kit_server.py"))

OURS, SYNC, ASYNC = "ours", "provider-sync", "provider-async"
EXECUTORS = {
    OURS: "k8s_workloads.airflow.executor.KubernetesExecutor",
    SYNC: "airflow.providers.cncf.kubernetes.executors.kubernetes_executor.KubernetesExecutor",
    ASYNC: "airflow.providers.cncf.kubernetes.executors.kubernetes_executor.KubernetesExecutor",
}
NS = "airflow"
DAG_ID = "scale"
RUN_ID = "manual__2026-06-07"
JOB_ID = 7
BATCH = 32
CONCURRENCY = 16
CONNECTIONS = 2 * CONCURRENCY + 1
"""The executor's pool at most: its creations and its clean-ups in flight, and the
watch's own connection (one namespace watched)."""
PUBLISH_RETRIES = 5
FAULT_RATE = 0.05
SETTLE_SECONDS = 3.0
"""Heartbeats go on this long after the last result (the pods' later events, deletes)."""
PSS_EVERY = 0.5
TARGET_N = 2_000
TARGET_LATENCY = 0.02

DAG_FILE = """\
import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG

with DAG({dag_id!r}, schedule=None, start_date=datetime.datetime(2026, 1, 1)):
    for number in range({count}):
        EmptyOperator(task_id=f"t{{number:05d}}")
"""

# Every executor builds its pods over this template: the kit's kubelet honours restartPolicy
# as a real one does, and a pod without one (the API server's default, Always) would be
# restarted for ever (the library builds Never whatever the template says; the provider
# passes the template's through: issue 29).
POD_TEMPLATE = """\
apiVersion: v1
kind: Pod
metadata:
  name: worker
spec:
  restartPolicy: Never
  containers:
  - name: base
"""

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: kit
  cluster: {{server: "{url}"}}
users:
- name: kit
  user: {{}}
contexts:
- name: kit
  context: {{cluster: kit, user: kit, namespace: {ns}}}
current-context: kit
"""


def airflow(module: str) -> Any:  # noqa: ANN401 - Airflow's modules, untyped here
    import importlib  # noqa: PLC0415

    return importlib.import_module(module)


# ------------------------------------------------------------------------ memory: PSS


def _descendants(pid: int) -> list[int]:
    """``pid`` and every process under it (children of all its threads, recursively)."""
    found = [pid]
    for parent in found:  # grows as it goes
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{parent}/task").iterdir():
                with contextlib.suppress(OSError):
                    children = (task / "children").read_text(encoding="ascii")
                    found.extend(int(child) for child in children.split())
    return found


def pss_bytes(pid: int) -> tuple[int, int]:
    """PSS summed over ``pid`` and every process under it, and how many processes."""
    total = 0
    pids = _descendants(pid)
    for each in pids:
        with (
            contextlib.suppress(OSError),
            open(  # noqa: PTH123
                f"/proc/{each}/smaps_rollup", encoding="ascii"
            ) as handle,
        ):
            for line in handle:
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
                    break
    return total, len(pids)


# ------------------------------------------------------------------- the database


def cache_folder() -> Path:
    folder = Path(tempfile.gettempdir()) / "k8s-workloads-bench-airflow-scale"
    folder.mkdir(exist_ok=True)
    return folder


def airflow_env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
    }


def database(count: int) -> Path:
    """A migrated database with one run of ``count`` queued tasks (built once, cached)."""
    version = airflow_version()
    cached = cache_folder() / f"airflow-{version}-{count}.db"
    if cached.exists():
        return cached
    migrated = cache_folder() / f"airflow-{version}-migrated.db"
    if not migrated.exists():
        home = Path(tempfile.mkdtemp(prefix="migrate-", dir=cache_folder()))
        print(f"  (once) airflow db migrate in {home} ...", flush=True)
        airflow_cli = Path(sys.executable).with_name("airflow")
        subprocess.run(  # noqa: S603 - Airflow's own CLI
            [str(airflow_cli), "db", "migrate"],
            env=airflow_env(home),
            check=True,
            capture_output=True,
        )
        shutil.copyfile(home / "airflow.db", migrated)
        shutil.rmtree(home, ignore_errors=True)
    home = Path(tempfile.mkdtemp(prefix=f"prepare-{count}-", dir=cache_folder()))
    (home / "dags").mkdir()
    shutil.copyfile(migrated, home / "airflow.db")
    print(f"  (once) a DAG run of {count:,} queued tasks ...", flush=True)
    subprocess.run(  # noqa: S603 - this script
        [sys.executable, str(Path(__file__).resolve()), "--prepare", str(count)],
        env=airflow_env(home),
        check=True,
        capture_output=True,
    )
    with contextlib.closing(sqlite3.connect(home / "airflow.db")) as db:
        db.execute("PRAGMA journal_mode=WAL")  # the fake task processes write beside it
    shutil.copyfile(home / "airflow.db", cached)
    shutil.rmtree(home, ignore_errors=True)
    return cached


def airflow_version() -> str:
    from importlib.metadata import version  # noqa: PLC0415

    return version("apache-airflow")


def prepare(count: int) -> int:
    """In a fresh AIRFLOW_HOME: the DAG parsed and serialised, a run, its tasks queued."""
    home = Path(os.environ["AIRFLOW_HOME"])
    (home / "dags" / "scale.py").write_text(DAG_FILE.format(dag_id=DAG_ID, count=count))
    bundles = airflow("airflow.dag_processing.bundles.manager").DagBundlesManager
    dagbag_module = airflow("airflow.dag_processing.dagbag")
    state = airflow("airflow.utils.state")
    types = airflow("airflow.utils.types")
    create_session = airflow("airflow.utils.session").create_session
    import datetime  # noqa: PLC0415

    bundles().sync_bundles_to_db()
    folder = str(home / "dags")
    bag = dagbag_module.DagBag(dag_folder=folder, bundle_path=folder, bundle_name="dags-folder")
    if bag.import_errors:
        raise SystemExit(f"the DAG did not import: {bag.import_errors}")
    dagbag_module.sync_bag_to_db(bag, "dags-folder", None)
    when = datetime.datetime(2026, 6, 7, tzinfo=datetime.timezone.utc)
    with create_session() as session:
        dag = (
            airflow("airflow.models.dagbag")
            .DBDagBag()
            .get_latest_version_of_dag(DAG_ID, session=session)
        )
        run = dag.create_dagrun(
            run_id=RUN_ID,
            logical_date=when,
            data_interval=(when, when),
            run_after=when,
            run_type=types.DagRunType.MANUAL,
            triggered_by=types.DagRunTriggeredByType.TEST,
            state=state.DagRunState.RUNNING,
            session=session,
        )
        tis = run.get_task_instances(session=session)
        for ti in tis:
            ti.state = state.TaskInstanceState.QUEUED
            ti.try_number = 1
            ti.queued_by_job_id = JOB_ID
            ti.queued_dttm = when
        session.flush()
        assert len(tis) == count, (len(tis), count)
    return 0


# ------------------------------------------------------------------ one run (child)


class SqlCounter:
    """Statements the executor runs, by kind, while ``active`` (its heartbeats)."""

    def __init__(self) -> None:
        self.active = False
        self.creation = 0
        """The stale-row checks: ``task_instance`` rows read with ``queued_by_job_id``."""
        self.results = 0
        """Other reads of ``task_instance`` (the states of results)."""
        self.other = 0
        sqlalchemy = airflow("sqlalchemy")
        engine = airflow("airflow.settings").engine
        sqlalchemy.event.listen(engine, "before_cursor_execute", self._execute)

    def _execute(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:  # noqa: ANN401
        if not self.active:
            return
        if "task_instance" in statement and "queued_by_job_id" in statement:
            self.creation += 1
        elif "task_instance" in statement:
            self.results += 1
        else:
            self.other += 1

    def snapshot(self) -> tuple[int, int, int]:
        return self.creation, self.results, self.other


def percentile(values: Sequence[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)]


def run_child(spec: dict[str, Any]) -> int:  # noqa: PLR0915 - one run, start to end
    """One executor, N workloads, heartbeats until every result is in; one JSON line out."""
    count: int = spec["n"]
    # A run that hangs (in a heartbeat, or in end()) says where, in the log, and exits.
    faulthandler.dump_traceback_later(spec["timeout"] + 60, exit=True)
    create_session = airflow("airflow.utils.session").create_session
    select = airflow("sqlalchemy").select
    ti_model = airflow("airflow.models.taskinstance").TaskInstance
    execute_task = airflow("airflow.executors.workloads").ExecuteTask
    success = airflow("airflow.utils.state").TaskInstanceState.SUCCESS
    module, _, name = EXECUTORS[spec["executor"]].rpartition(".")
    executor_class = getattr(airflow(module), name)

    sql = SqlCounter()
    executor = executor_class()
    executor.job_id = JOB_ID
    executor.start()
    with create_session() as session:
        tis = session.scalars(select(ti_model).where(ti_model.dag_id == DAG_ID)).all()
        workloads = [execute_task.make(ti) for ti in tis]
        session.expunge_all()
    assert len(workloads) == count, (len(workloads), count)
    gc.collect()
    time.sleep(0.5)  # the provider's watcher and manager processes settle
    baseline, _ = pss_bytes(os.getpid())

    syncs: list[tuple[float, int, int, int]] = []  # seconds, running before, creation/result SQL
    original_sync = executor.sync

    def timed_sync() -> None:
        running = len(executor.running)
        creation, results, _ = sql.snapshot()
        started = time.perf_counter()
        original_sync()
        elapsed = time.perf_counter() - started
        after_creation, after_results, _ = sql.snapshot()
        syncs.append((elapsed, running, after_creation - creation, after_results - results))

    executor.sync = timed_sync
    for workload in workloads:
        executor.queue_workload(workload, session=None)
    del workloads

    reported: dict[Any, int] = {}
    other_events: dict[str, int] = {}
    raised: dict[str, int] = {}
    heartbeats: list[float] = []
    pss_peak, processes = baseline, 1
    started = time.monotonic()
    done_at: float | None = None
    next_pss = started
    deadline = started + spec["timeout"]
    while True:
        sql.active = True
        before = time.perf_counter()
        try:
            executor.heartbeat()
        except Exception as error:  # noqa: BLE001 - it would end a real scheduler's loop
            # Counted and survived: the harness goes on to see what becomes of the results.
            name = type(error).__name__
            raised[name] = raised.get(name, 0) + 1
        heartbeats.append(time.perf_counter() - before)
        sql.active = False
        for key, (state, _info) in executor.get_event_buffer().items():
            if state == success:
                reported[key] = reported.get(key, 0) + 1
            else:
                other_events[str(state)] = other_events.get(str(state), 0) + 1
        now = time.monotonic()
        if now >= next_pss:
            next_pss = now + PSS_EVERY
            pss, processes_now = pss_bytes(os.getpid())
            if pss > pss_peak:
                pss_peak, processes = pss, processes_now
        if done_at is None and len(reported) >= count:
            done_at = now
        if (done_at is not None and now - done_at >= SETTLE_SECONDS) or now >= deadline:
            break
        time.sleep(0)  # a tight loop; lets other threads have the GIL
    ending = time.monotonic()
    executor.end()
    ended = time.monotonic()

    full = [seconds for seconds, running, _, _ in syncs if running >= count]
    durations = [seconds for seconds, _, _, _ in syncs]
    document = {
        "t0": started,
        "setup_s": started - spec["entered"],
        "end_s": ended - ending,
        "all_results_s": None if done_at is None else done_at - started,
        "results": len(reported),
        "doubled": sum(1 for times in reported.values() if times > 1),
        "other_events": other_events,
        "raised": raised,
        "syncs": len(syncs),
        "sync_max_s": max(durations, default=0.0),
        "heartbeat_max_s": max(heartbeats, default=0.0),
        "sync_median_s": statistics.median(durations) if durations else None,
        "sync_p99_s": percentile(durations, 0.99) if durations else None,
        "sync_full_count": len(full),
        "sync_full_median_s": statistics.median(full) if full else None,
        "sync_full_p99_s": percentile(full, 0.99) if full else None,
        "sql_creation": sql.creation,
        "sql_results": sql.results,
        "sql_other": sql.other,
        "sql_creation_max_per_sync": max((c for _, _, c, _ in syncs), default=0),
        "sql_results_max_per_sync": max((r for _, _, _, r in syncs), default=0),
        "pss_baseline": baseline,
        "pss_peak": pss_peak,
        "processes": processes,
    }
    sys.stdout.write(json.dumps(document) + "\n")
    sys.stdout.flush()
    return 0


# ------------------------------------------------------------- the fake task processes


class TaskProcesses(threading.Thread):
    """Watches the pods; sets each one's task instance row to success once the pod exists
    (the task process ran), and notes when each pod was first seen."""

    def __init__(self, url: str, db_path: Path) -> None:
        super().__init__(name="fake-task-processes", daemon=True)
        parsed = urllib.parse.urlsplit(url)
        self.host, self.port = parsed.hostname or "127.0.0.1", parsed.port or 80
        self.db_path = db_path
        self.stopping = threading.Event()
        self.seen: dict[str, float] = {}
        """Task id -> when its first pod was first seen (time.monotonic)."""
        self.connections = 0
        self._connection: http.client.HTTPConnection | None = None

    def stop(self) -> None:
        self.stopping.set()
        connection = self._connection
        if connection is not None and connection.sock is not None:
            with contextlib.suppress(OSError):
                connection.sock.shutdown(socket.SHUT_RDWR)
        self.join(timeout=5)

    def run(self) -> None:
        with contextlib.closing(sqlite3.connect(self.db_path, timeout=60)) as db:
            while not self.stopping.is_set():
                try:
                    self._stream(db)
                except (OSError, http.client.HTTPException, ValueError):  # noqa: PERF203
                    if self.stopping.is_set():
                        return
                    time.sleep(0.05)

    def _stream(self, db: sqlite3.Connection) -> None:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=3600)
        self._connection = connection
        self.connections += 1
        connection.request("GET", f"/api/v1/namespaces/{NS}/pods?watch=true&timeoutSeconds=3600")
        response = connection.getresponse()
        if response.status != 200:
            response.read()
            connection.close()
            raise OSError(f"watch: {response.status}")
        buffer = b""
        while not self.stopping.is_set():
            chunk = response.read1(1 << 16)
            if not chunk:
                return
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            rows = []
            for line in lines:
                if not line.strip():
                    continue
                event = json.loads(line)
                metadata = (event.get("object") or {}).get("metadata") or {}
                annotations = metadata.get("annotations") or {}
                task_id = annotations.get("task_id")
                if event.get("type") == "ERROR" or task_id is None or task_id in self.seen:
                    continue
                self.seen[task_id] = time.monotonic()
                rows.append((annotations.get("dag_id"), task_id, annotations.get("run_id")))
            if rows:
                with db:
                    db.executemany(
                        "UPDATE task_instance SET state = 'success'"
                        " WHERE dag_id = ? AND task_id = ? AND run_id = ?",
                        rows,
                    )


# ------------------------------------------------------------------- one run (parent)


@dataclass(frozen=True)
class Case:
    executor: str
    n: int
    latency: float
    fault: str | None = None  # "5xx" or "429"

    @property
    def label(self) -> str:
        fault = f", 5% {self.fault}" if self.fault else ""
        return f"{self.executor}, N={self.n:,}, {self.latency * 1000:.0f} ms{fault}"


@dataclass
class Result:
    case: Case
    pods_s: float | None = None
    results_s: float | None = None
    pods: int = 0
    child: dict[str, Any] = field(default_factory=dict)
    server: dict[str, Any] = field(default_factory=dict)
    connections: int = 0
    error: str | None = None

    def requests(self, kind: str) -> int:
        return int(self.server.get("requests", {}).get(kind, 0))


@contextlib.contextmanager
def api_server(case: Case, kubelet: float, lifetime: float) -> Iterator[str]:
    command = [
        *(FAULT_SERVER_COMMAND if case.fault else SERVER_COMMAND),
        *("--port", "0", "--latency", str(case.latency), "--lifetime", str(lifetime)),
        *("--kubelet", str(kubelet)),
    ]
    if case.fault:
        command += ["--fail-rate", str(FAULT_RATE), "--fail-kind", case.fault]
    process = subprocess.Popen(  # noqa: S603 - our own command line
        command,
        stdin=subprocess.PIPE,  # the server stops when it closes (this process ends)
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        if not url.startswith("http"):
            raise RuntimeError(f"the API server did not start: {url!r}")
        yield url
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run_case(case: Case, *, kubelet: float, timeout: float, keep: bool) -> Result:
    result = Result(case)
    home = Path(tempfile.mkdtemp(prefix="run-", dir=cache_folder()))
    (home / "dags").mkdir()
    shutil.copyfile(database(case.n), home / "airflow.db")
    with api_server(case, kubelet, timeout + 120) as url:
        (home / "kubeconfig").write_text(KUBECONFIG.format(url=url, ns=NS))
        (home / "pod_template.yaml").write_text(POD_TEMPLATE)
        watcher = TaskProcesses(url, home / "airflow.db")
        watcher.start()
        env = airflow_env(home) | {
            "AIRFLOW__CORE__EXECUTOR": EXECUTORS[case.executor],
            "AIRFLOW__CORE__PARALLELISM": str(max(case.n, 32)),
            "AIRFLOW__KUBERNETES_EXECUTOR__IN_CLUSTER": "False",
            "AIRFLOW__KUBERNETES_EXECUTOR__CONFIG_FILE": str(home / "kubeconfig"),
            "AIRFLOW__KUBERNETES_EXECUTOR__NAMESPACE": NS,
            "AIRFLOW__KUBERNETES_EXECUTOR__POD_TEMPLATE_FILE": str(home / "pod_template.yaml"),
            "AIRFLOW__KUBERNETES_EXECUTOR__WORKER_CONTAINER_REPOSITORY": "apache/airflow",
            "AIRFLOW__KUBERNETES_EXECUTOR__WORKER_CONTAINER_TAG": "3.3.2",
            "AIRFLOW__KUBERNETES_EXECUTOR__WORKER_PODS_CREATION_BATCH_SIZE": str(BATCH),
            "AIRFLOW__KUBERNETES_EXECUTOR__ASYNC_POD_CREATION": str(case.executor != SYNC),
            "AIRFLOW__KUBERNETES_EXECUTOR__POD_CREATION_MAX_CONCURRENCY": str(CONCURRENCY),
            "AIRFLOW__KUBERNETES_EXECUTOR__TASK_PUBLISH_MAX_RETRIES": str(PUBLISH_RETRIES),
            "AIRFLOW__KUBERNETES_EXECUTOR__DELETE_WORKER_PODS": "True",
        }
        spec = {"executor": case.executor, "n": case.n, "timeout": timeout}
        with (home / "executor.log").open("w") as log:
            child = subprocess.Popen(  # noqa: S603 - this script
                [sys.executable, str(Path(__file__).resolve()), "--run", json.dumps(spec)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                start_new_session=True,  # its manager and watcher processes go with it
            )
            try:
                stdout, _ = child.communicate(timeout=timeout + 120)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                stdout, _ = child.communicate()
                result.error = f"hung (killed); see {home / 'executor.log'}"
        with urllib.request.urlopen(f"{url}/_kit/stats", timeout=30) as answer:  # noqa: S310
            result.server = json.loads(answer.read())
        watcher.stop()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)  # what the executor left behind
    lines = stdout.strip().splitlines()
    if result.error or child.returncode != 0 or not lines:
        result.error = result.error or f"exit {child.returncode}; see {home / 'executor.log'}"
        return result
    result.child = json.loads(lines[-1])
    started = float(result.child["t0"])
    seen = sorted(watcher.seen.values())
    result.pods = len(seen)
    if len(seen) >= case.n:
        result.pods_s = seen[case.n - 1] - started
    result.results_s = result.child["all_results_s"]
    # The fake task processes' watches and this stats request are not the executor's.
    result.connections = int(result.server.get("connections", 0)) - watcher.connections - 1
    if not keep:
        shutil.rmtree(home, ignore_errors=True)
    return result


# ----------------------------------------------------------------------------- report


def _s(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ratio(ours: float | None, theirs: float | None) -> str:
    if ours is None or theirs is None or theirs == 0:
        return "-"
    return f"{ours / theirs:.2f}"


def print_table(results: Sequence[Result]) -> None:
    columns = (
        ("pods s", 7),
        ("results s", 9),
        ("max cr.", 7),
        ("sync max", 8),
        ("hb max", 7),
        ("sync med", 8),
        ("sync p99", 8),
        ("conns", 5),
        ("DEL/pod", 7),
        ("SQL/res", 7),
        ("SQL/batch", 9),
        ("PSS MiB", 7),
        ("KiB/wl", 6),
    )
    print("  " + f"{'':<36}" + " ".join(f"{name:>{width}}" for name, width in columns))
    for result in results:
        child = result.child
        if result.error:
            print(f"  {result.case.label:<36} {result.error}")
            continue
        n = result.case.n
        batches = math.ceil(n / BATCH)
        values = (
            _s(result.pods_s),
            _s(result.results_s),
            str(result.server.get("max_in_flight_creations", "-")),
            f"{child['sync_max_s'] * 1000:.0f}ms",
            f"{child['heartbeat_max_s'] * 1000:.0f}ms",
            _ms(child["sync_full_median_s"]),
            _ms(child["sync_full_p99_s"]),
            str(result.connections),
            f"{result.requests('DELETE pods') / max(1, child['results']):.2f}",
            f"{child['sql_results'] / max(1, child['results']):.2f}",
            f"{child['sql_creation'] / batches:.1f}",
            f"{child['pss_peak'] / 2**20:.0f}",
            f"{per_workload(result) / 1024:.1f}",
        )
        print(
            f"  {result.case.label:<36}"
            + " ".join(
                f"{value:>{width}}" for value, (_, width) in zip(values, columns, strict=True)
            )
        )


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f}ms"


def per_workload(result: Result) -> float:
    """Peak PSS over the run less PSS before the workloads were queued, per workload."""
    child = result.child
    return float(child["pss_peak"] - child["pss_baseline"]) / result.case.n


def print_details(results: Sequence[Result]) -> None:
    for result in results:
        if result.error:
            continue
        child = result.child
        print(
            f"  {result.case.label}: {result.pods} pods seen, {child['results']} results,"
            f" {child['doubled']} doubled, other events {child['other_events']},"
            f" heartbeat raised {child['raised']},"
            f" setup {child['setup_s']:.1f} s, end() {child['end_s']:.1f} s,"
            f" {child['syncs']} syncs ({child['sync_full_count']} with N in flight; all:"
            f" median {_ms(child['sync_median_s'])}, p99 {_ms(child['sync_p99_s'])}),"
            f" SQL creation/results/other {child['sql_creation']}/{child['sql_results']}/"
            f"{child['sql_other']} (max per sync {child['sql_creation_max_per_sync']}/"
            f"{child['sql_results_max_per_sync']}), {child['processes']} processes,"
            f" server: {result.server.get('requests')}, max in flight"
            f" {result.server.get('max_in_flight')}"
            + "".join(
                f", {name.replace('_', ' ')} {result.server[name]}"
                for name in ("faults_served", "deletes_per_pod")
                if name in result.server
            )
        )


def find(
    results: Sequence[Result], executor: str, n: int, latency: float, fault: str | None = None
) -> Result | None:
    for result in results:
        case = result.case
        if (case.executor, case.n, case.latency, case.fault) == (executor, n, latency, fault):
            return None if result.error else result
    return None


def ratios(results: Sequence[Result], sizes: Sequence[int], latencies: Sequence[float]) -> None:
    header("Ratios ours / provider-async")
    for n in sizes:
        for latency in latencies:
            ours, theirs = find(results, OURS, n, latency), find(results, ASYNC, n, latency)
            if ours is None or theirs is None:
                continue
            print(
                f"  N={n:,}, {latency * 1000:.0f} ms: pods {_ratio(ours.pods_s, theirs.pods_s)},"
                f" results {_ratio(ours.results_s, theirs.results_s)},"
                f" longest sync {_ratio(ours.child['sync_max_s'], theirs.child['sync_max_s'])},"
                f" connections {_ratio(ours.connections, theirs.connections)},"
                f" PSS {_ratio(ours.child['pss_peak'], theirs.child['pss_peak'])}"
            )


def _ours_alone(
    ours: Result,
    theirs: Result | None,
    smaller: Result | None,
    check: Callable[[str, bool | None, str], None],
) -> None:
    """The targets on ours alone (and its memory against provider-async's), via ``check``."""
    n = ours.case.n
    child = ours.child
    check("longest sync() <= 1 s", child["sync_max_s"] <= 1.0, f"{child['sync_max_s']:.3f} s")
    check(
        f"connections <= {CONNECTIONS}",
        ours.connections <= CONNECTIONS,
        str(ours.connections),
    )
    deletes = ours.requests("DELETE pods") / max(1, child["results"])
    check("DELETE per succeeded pod = 1", abs(deletes - 1) < 1e-9, f"{deletes:.3f}")
    batches = math.ceil(n / BATCH)
    per_batch = child["sql_creation"] / batches
    check(
        "SQL per creation batch <= 1",
        per_batch <= 1,
        f"{per_batch:.2f} (max {child['sql_creation_max_per_sync']} in one sync)",
    )
    check(
        "SQL for results per sync() <= 1",
        child["sql_results_max_per_sync"] <= 1,
        f"max {child['sql_results_max_per_sync']},"
        f" {child['sql_results'] / max(1, child['results']):.3f} per result",
    )
    mine = float(ours.child["pss_peak"])
    base = None if theirs is None else float(theirs.child["pss_peak"])
    check(
        "total memory <= provider-async",
        None if base is None else mine <= base,
        f"{mine / 2**20:.0f} MiB vs {_s(None if base is None else base / 2**20, 0)} MiB",
    )
    if smaller is not None and smaller.case.n != n:
        low, high = per_workload(smaller), per_workload(ours)
        check(
            f"memory per workload flat ({smaller.case.n:,} -> {n:,}, <= 1.25{TIMES})",
            high <= 1.25 * max(low, 1.0),
            f"{low / 1024:.1f} KiB -> {high / 1024:.1f} KiB",
        )


def targets(results: Sequence[Result], n: int, small: int, latency: float) -> list[Outcome]:
    """The targets for ours at (n, latency), against provider-async in the same run."""
    at = f"N={n:,}, {latency * 1000:.0f} ms"
    header(f"Targets (ours, {at}, batch {BATCH}, concurrency {CONCURRENCY})")
    ours, theirs = find(results, OURS, n, latency), find(results, ASYNC, n, latency)
    outcomes: list[Outcome] = []

    def check(name: str, passed: bool | None, shown: str) -> None:
        print(f"  {name}: {shown}  {verdict(passed)}")
        outcomes.append(Outcome.of(f"{name} ({at})", passed))

    def both(value: Callable[[Result], float | None]) -> tuple[float | None, float | None]:
        return (
            None if ours is None else value(ours),
            None if theirs is None else value(theirs),
        )

    for name, getter in (
        ("all pods created <= 0.5x provider-async", lambda r: r.pods_s),
        ("all results <= 0.5x provider-async", lambda r: r.results_s),
    ):
        mine, base = both(getter)
        passed = None if mine is None or base is None else mine <= 0.5 * base
        check(name, passed, f"{_s(mine)} s vs {_s(base)} s, {_ratio(mine, base)}{TIMES}")
    if ours is None:
        for name in (
            "longest sync() <= 1 s",
            f"connections <= {CONNECTIONS}",
            "DELETE per succeeded pod = 1",
            "SQL per creation batch <= 1",
            "SQL for results per sync() <= 1",
            "total memory <= provider-async",
        ):
            check(name, None, "not measured")
    else:
        _ours_alone(ours, theirs, find(results, OURS, small, latency), check)
    for fault in ("5xx", "429"):
        faulty = find(results, OURS, n, latency, fault)
        if faulty is None:
            check(f"0 lost, 0 doubled under 5% {fault}", None, "not measured")
            continue
        lost = n - faulty.child["results"]
        doubled = faulty.child["doubled"]
        check(
            f"0 lost, 0 doubled under 5% {fault}",
            lost == 0 and doubled == 0,
            f"{lost} lost, {doubled} doubled",
        )
    return outcomes


# ------------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ours vs the provider's executor at scale")
    parser.add_argument("--quick", action="store_true", help="N=40 and 20 ms only, for CI")
    parser.add_argument("--sizes", help="comma-separated N (default 200,2000; --quick 40)")
    parser.add_argument("--latencies", help="comma-separated ms (default 0,20; --quick 20)")
    parser.add_argument("--executors", default=",".join(EXECUTORS))
    parser.add_argument(
        "--faults",
        choices=("yes", "no", "only"),
        default="yes",
        help="the runs with 5%% of the calls failing (at the largest N and latency)",
    )
    parser.add_argument(
        "--kubelet", type=float, help="seconds to Running, again to Succeeded (2; --quick 1)"
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run at most")
    parser.add_argument("--keep", action="store_true", help="keep each run's AIRFLOW_HOME and log")
    parser.add_argument("--prepare", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.prepare is not None:
        return prepare(args.prepare)
    if args.run is not None:
        return run_child({**json.loads(args.run), "entered": time.monotonic()})

    mode = Mode(quick=bool(args.quick))
    default_sizes, default_latencies = ("40", "20") if mode.quick else ("200,2000", "0,20")
    sizes = [int(value) for value in (args.sizes or default_sizes).split(",")]
    latencies = [float(value) / 1000 for value in (args.latencies or default_latencies).split(",")]
    executors = [name for name in args.executors.split(",") if name]
    kubelet = args.kubelet if args.kubelet is not None else (1.0 if mode.quick else 2.0)
    print(f"python {sys.version.split()[0]} ({sys.executable})")
    print(
        f"apache-airflow {airflow_version()}, cpus: {os.cpu_count()}, mode: {mode.name},"
        f" server: {' '.join(Path(part).name for part in SERVER_COMMAND[1:])},"
        f" kubelet {kubelet} s + {kubelet} s, batch {BATCH}, concurrency {CONCURRENCY}"
    )
    cases = [Case(e, n, lat) for n in sizes for lat in latencies for e in executors]
    if args.faults == "only":
        cases = []
    if args.faults != "no":
        n, latency = max(sizes), max(latencies)
        cases += [
            Case(e, n, latency, fault) for fault in ("5xx", "429") for e in executors if e != SYNC
        ]
    header("Runs")
    results = []
    for case in cases:
        began = time.monotonic()
        print(f"  {case.label} ...", end="", flush=True)
        result = run_case(case, kubelet=kubelet, timeout=args.timeout, keep=args.keep)
        results.append(result)
        print(f" {time.monotonic() - began:.0f} s{' ' + result.error if result.error else ''}")
    header("Figures")
    print_table(results)
    header("Details")
    print_details(results)
    ratios(results, sizes, latencies)
    n = TARGET_N if TARGET_N in sizes else max(sizes)
    latency = TARGET_LATENCY if TARGET_LATENCY in latencies else max(latencies)
    outcomes = targets(results, n, min(sizes), latency)
    return summarize(outcomes)


if __name__ == "__main__":
    sys.exit(main())

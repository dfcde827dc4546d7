"""A small Airflow deployment for the end-to-end test: the real processes on this machine.

:class:`Deployment` runs ``airflow api-server``, ``airflow dag-processor`` and ``airflow
scheduler`` (with ``k8s_workloads.airflow.KubernetesExecutor``) as subprocesses bound to
127.0.0.1, against a migrated SQLite database in a temporary ``AIRFLOW_HOME`` (or a
migrated PostgreSQL database named by its SQLAlchemy URL, which several schedulers can
share), and the test kit's cluster in the test's own process: a :class:`FakeApiServer`
the scheduler reaches through a kubeconfig, and a :class:`ProcessKubelet` that runs each
pod's command as a local process with this environment's ``python`` (the Task SDK's
command forked from a zygote that imported it once). A pod gets only ``PATH`` from this
process and the rest from the pod template (``AIRFLOW_HOME``, the DAGs folder, the
execution API's URL), as a worker pod gets its settings, so the Task SDK in the pod
reaches the real api-server.

Every wait has a timeout and fails with the tails of the processes' logs. :meth:`close`
stops every process group (SIGTERM, then SIGKILL), the kubelet's pods, the API server, and
removes the temporary directory. Imported only where Airflow is installed.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pytest

from k8s_workloads.pods.labels import CALLBACK_WORKLOAD_TYPE, WORKLOAD_TYPE_LABEL
from k8s_workloads.testing import FakeApiServer, FakeCluster, Fault, ProcessKubelet
from tests.support.airflow_support import kubeconfig

NS = "airflow"
WORKLOAD_MODULE = "airflow.sdk.execution_time.execute_workload"
_STOP_SECONDS = 10.0  # SIGTERM, then SIGKILL: the scheduler ends its executor in between
_TAIL_LINES = 30
_LIFETIME = 900.0  # the kit's server and pods stop by themselves if a test never ends

T = TypeVar("T")


class OutageCluster(FakeCluster):
    """The kit's cluster whose API answers 503 to every callback pod creation while
    ``refusing`` is set (``fail_next`` fails the next creations of any pod: a task pod
    created meanwhile would take them). ``refused``: the names it refused.

    While ``holding_deletes`` names a DAG, a DELETE of one of its callback pods waits (its
    server thread blocked) until ``release_deletes`` is set, then is dropped unapplied, its
    connection reset: a scheduler killed meanwhile never deleted the pod. ``held``: their
    names."""

    def __init__(self, namespaces: list[str]) -> None:
        super().__init__(namespaces=namespaces)
        self.refusing = threading.Event()
        self.refused: list[str] = []
        self.holding_deletes: str | None = None
        self.release_deletes = threading.Event()
        self.held: list[str] = []

    def delete_pod(self, namespace: str, name: str, **options: Any) -> dict[str, Any]:
        """The kit's delete, or (``holding_deletes``) a callback pod's held, then dropped."""
        metadata = (self.pod(namespace, name) or {}).get("metadata", {})
        labels = metadata.get("labels") or {}
        annotations = metadata.get("annotations") or {}
        if (
            self.holding_deletes is not None
            and labels.get(WORKLOAD_TYPE_LABEL) == CALLBACK_WORKLOAD_TYPE
            and annotations.get("dag_id") == self.holding_deletes
        ):
            self.held.append(name)
            self.release_deletes.wait(timeout=_LIFETIME)
            raise ConnectionResetError(104, "the held DELETE is dropped")
        return super().delete_pod(namespace, name, **options)

    def create_pod_answer(
        self,
        namespace: str,
        body: Mapping[str, Any],
        *,
        dry_run: bool = False,
        field_validation: str | None = None,
    ) -> tuple[dict[str, Any], list[str]]:
        """The kit's answer, or a 503 (``Retry-After: 1``) for a callback pod."""
        metadata = body.get("metadata") or {}
        labels = metadata.get("labels") or {}
        if self.refusing.is_set() and labels.get(WORKLOAD_TYPE_LABEL) == CALLBACK_WORKLOAD_TYPE:
            self.refused.append(str(metadata.get("name")))
            outage = Fault(
                503,
                "ServiceUnavailable",
                "the API server is unavailable",
                None,
                {"Retry-After": "1"},
            )
            raise outage.error()
        return super().create_pod_answer(
            namespace, body, dry_run=dry_run, field_validation=field_validation
        )


def _database_errors() -> tuple[type[Exception], ...]:
    """What reading either database raises when it is not there (yet)."""
    try:
        psycopg2 = importlib.import_module("psycopg2")  # where a PostgreSQL driver is installed
    except ImportError:
        return (sqlite3.Error,)
    return (sqlite3.Error, psycopg2.Error)


def _postgres_query(url: str, sql: str, parameters: tuple[object, ...]) -> list[tuple[Any, ...]]:
    """Rows of the PostgreSQL database at the SQLAlchemy ``url``, in a read-only session."""
    psycopg2 = importlib.import_module("psycopg2")
    dsn = url.replace("postgresql+psycopg2://", "postgresql://", 1)
    connection = psycopg2.connect(dsn, connect_timeout=30)
    try:
        connection.set_session(readonly=True, autocommit=True)
        with connection.cursor() as cursor:
            # No parameters: no % substitution either (a LIKE pattern stays as written).
            cursor.execute(sql, parameters or None)
            return list(cursor.fetchall())
    finally:
        connection.close()


def free_port() -> int:
    """A TCP port on 127.0.0.1 free at the time of asking."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Deployment:
    """The Airflow processes and the kit's cluster (see the module's description).

    ``root``: the temporary directory (``home``, ``dags``, the process logs); ``database``:
    a migrated SQLite database, copied into ``home``, or the SQLAlchemy URL of a migrated
    PostgreSQL database (``postgresql+psycopg2://...``), used as it is.
    """

    def __init__(
        self, database: Path | str, dag_files: dict[str, str], *, lifetime: float = _LIFETIME
    ) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="k8s-workloads-e2e-"))
        self.home = self.root / "home"
        self.dags = self.root / "dags"
        self.home.mkdir()
        self.dags.mkdir()
        self.database = self.home / "airflow.db"
        if isinstance(database, Path):
            shutil.copyfile(database, self.database)
            self.database_url = f"sqlite:///{self.database}"
        else:
            self.database_url = database
        for name, text in dag_files.items():
            (self.dags / name).write_text(text)
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.logs: dict[str, Path] = {}
        self.expected_alive: set[str] = set()  # a wait fails at once if one of them exits
        self.cluster = OutageCluster(namespaces=[NS])
        self.lifetime = lifetime
        self.server = FakeApiServer(self.cluster, lifetime=lifetime)
        self.kubelet = ProcessKubelet(
            self.cluster,
            max_lifetime=lifetime,
            executables={"python": sys.executable, "python3": sys.executable},
            inherit_env=False,
            # Each task pod forks from one interpreter that imported the Task SDK once
            # (every pod has the template's env), as Airflow's supervisor forks its runner.
            preload=(WORKLOAD_MODULE,),
        )
        try:
            self.server.start()
            self.kubelet.start()
            self.api_port = free_port()
            self.api_url = f"http://127.0.0.1:{self.api_port}"
            self.settings = self._settings()
            self._write_pod_template()
        except BaseException:
            self.close()
            raise

    # --- configuration ----------------------------------------------------------------

    def _settings(self) -> dict[str, str]:
        """What every Airflow process and pod reads: one database, one secret, short
        intervals so that a restart and a missed deadline are seen in seconds."""
        return {
            "AIRFLOW_HOME": str(self.home),
            "HOME": str(self.root),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__EXECUTOR": "k8s_workloads.airflow.KubernetesExecutor",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.api_url}/execution/",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.database_url,
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(self.api_port),
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API__SECRET_KEY": os.urandom(16).hex(),
            "AIRFLOW__API_AUTH__JWT_SECRET": os.urandom(32).hex(),
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_THRESHOLD": "6",
            "AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL": "2",
            "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.5",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__KUBERNETES_EXECUTOR__IN_CLUSTER": "False",
            "AIRFLOW__KUBERNETES_EXECUTOR__CONFIG_FILE": str(
                kubeconfig(self.server.url, self.root)
            ),
            "AIRFLOW__KUBERNETES_EXECUTOR__NAMESPACE": NS,
            # A pod creation answered 503 is tried again, however long the outage lasts.
            "AIRFLOW__KUBERNETES_EXECUTOR__TASK_PUBLISH_MAX_RETRIES": "-1",
            "AIRFLOW__KUBERNETES_EXECUTOR__POD_TEMPLATE_FILE": str(self.root / "pod_template.json"),
            # Process mode pulls nothing, but the executor's start-up check wants an image.
            "AIRFLOW__KUBERNETES_EXECUTOR__WORKER_CONTAINER_REPOSITORY": "apache/airflow",
            "AIRFLOW__KUBERNETES_EXECUTOR__WORKER_CONTAINER_TAG": "3.3.2",
        }

    def _write_pod_template(self) -> None:
        """The worker pods' template: the settings a pod needs, as env of its ``base``."""
        wanted = ("AIRFLOW_HOME", "HOME", "AIRFLOW__CORE__", "AIRFLOW__DATABASE__", "AIRFLOW__API")
        env = [
            {"name": name, "value": value}
            for name, value in self.settings.items()
            if name.startswith(wanted)
        ]
        template = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "worker"},
            "spec": {"containers": [{"name": "base", "image": "apache/airflow:3.3.2", "env": env}]},
        }
        (self.root / "pod_template.json").write_text(json.dumps(template))

    def environment(self) -> dict[str, str]:
        """This process's environment with the deployment's settings (``PYTHONPATH`` kept:
        a worktree run tests that worktree's package), none of the caller's Airflow ones."""
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
        return {**inherited, **self.settings}

    # --- processes --------------------------------------------------------------------

    def start(self, name: str, *command: str) -> subprocess.Popen[bytes]:
        """``airflow command...`` in its own process group, its output in ``name``'s log.

        Under coreutils' ``timeout`` where there is one: if the test's process is killed
        before it stops them, the group still ends after ``lifetime`` seconds."""
        airflow = Path(sys.executable).with_name("airflow")
        bounded = shutil.which("timeout")
        lifetime = [bounded, "--kill-after=10", f"{self.lifetime:.0f}"] if bounded else []
        log = self.root / f"{name}.log"
        self.logs[name] = log
        with log.open("ab") as output:
            process = subprocess.Popen(
                [*lifetime, str(airflow), *command],
                env=self.environment(),
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes[name] = process
        self.expected_alive.add(name)
        return process

    def kill(self, name: str) -> None:
        """SIGKILL ``name``'s process group, as a node dying would, and reap it."""
        process = self.processes[name]
        self.expected_alive.discard(name)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=_STOP_SECONDS)

    def stop(self, name: str) -> None:
        """SIGTERM ``name``'s process group; SIGKILL what is left after a grace period."""
        process = self.processes[name]
        self.expected_alive.discard(name)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=_STOP_SECONDS)
        # The group's other members (a dag-processor's parsers, uvicorn's worker) too.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=_STOP_SECONDS)

    def close(self) -> None:
        """Stop every process, the kubelet (and its pods) and the server; remove the files."""
        try:
            for name in reversed(list(self.processes)):
                self.stop(name)
        finally:
            self.kubelet.stop()
            self.server.stop()
            keep = os.environ.get("K8S_WORKLOADS_KEEP_DEPLOYMENT")
            if keep:  # a directory to keep the logs, DAGs and pods' logs in, for a post-mortem
                self._keep(Path(keep))
            shutil.rmtree(self.root, ignore_errors=True)

    def _keep(self, into: Path) -> None:
        """Copy the deployment's files and every pod's log under ``into``."""
        target = into / self.root.name
        shutil.copytree(self.root, target, dirs_exist_ok=True, ignore_dangling_symlinks=True)
        pods = target / "pods"
        pods.mkdir(exist_ok=True)
        for pod in self.cluster.pods():
            name = pod["metadata"]["name"]
            (pods / f"{name}.json").write_text(json.dumps(pod, indent=1, default=str))
            (pods / f"{name}.log").write_text(self.cluster.pod_log(NS, name))
        calls = "\n".join(" ".join(map(str, call)) for call in self.cluster.calls)
        (target / "cluster-calls.txt").write_text(calls)

    def __enter__(self) -> Deployment:  # noqa: PYI034 - no typing.Self on Python 3.10
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- what happened ----------------------------------------------------------------

    def tails(self) -> str:
        """The last lines of every process's log, of every pod's log, the pods, and the
        task instance and callback rows."""
        parts = []
        for name, path in self.logs.items():
            lines = path.read_text(errors="replace").splitlines()[-_TAIL_LINES:]
            code = self.processes[name].poll()
            parts.append(f"--- {name} (exit code {code}) ---\n" + "\n".join(lines))
        for pod in self.cluster.pods():
            metadata, status = pod["metadata"], pod.get("status") or {}
            log = self.cluster.pod_log(NS, metadata["name"]).splitlines()[-_TAIL_LINES:]
            parts.append(
                f"--- pod {metadata['name']} {status.get('phase')} "
                f"labels {metadata.get('labels')} ---\n" + "\n".join(log)
            )
        with contextlib.suppress(*_database_errors()):
            rows = self.query("SELECT dag_id, run_id, task_id, state FROM task_instance")
            rows += self.query("SELECT 'callback', id, substr(output, 1, 300), state FROM callback")
            parts.append("--- rows ---\n" + "\n".join(map(str, rows)))
        return "\n".join(parts)

    def wait_for(self, check: Callable[[], T | None], what: str, timeout: float) -> T:
        """Poll ``check`` until it answers something true; fail after ``timeout`` seconds
        naming ``what`` and showing the logs."""
        deadline = time.monotonic() + timeout
        while True:
            found = check()
            if found:
                return found
            for name, process in self.processes.items():
                if process.poll() is not None and name in self.expected_alive:
                    pytest.fail(f"{name} exited while waiting for {what}\n{self.tails()}")
            if time.monotonic() > deadline:
                pytest.fail(f"waited {timeout:.0f} s for {what}, in vain\n{self.tails()}")
            time.sleep(0.25)

    def query(self, sql: str, *parameters: object) -> list[tuple[Any, ...]]:
        """Rows of the metadata database, read-only (the processes write it meanwhile);
        ``?`` marks a parameter, on either database."""
        if not self.database_url.startswith("sqlite"):
            return _postgres_query(self.database_url, sql.replace("?", "%s"), parameters)
        connection = sqlite3.connect(f"file:{self.database}?mode=ro", uri=True, timeout=30)
        try:
            return connection.execute(sql, parameters).fetchall()
        finally:
            connection.close()

    def api(self, method: str, path: str, body: object = None) -> Any:
        """Airflow's REST API (``[core] simple_auth_manager_all_admins``: no login)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(  # noqa: S310 - http://127.0.0.1 only
            f"{self.api_url}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
            return json.loads(answer.read() or b"null")

    def answers(self, path: str) -> bool:
        """Whether ``GET path`` answers 200 (the api-server is up, a DAG is known)."""
        try:
            self.api("GET", path)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False
        return True

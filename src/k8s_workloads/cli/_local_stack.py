"""The processes of ``k8s-workloads local``, started and stopped together.

:class:`LocalStack` runs, in this process, the test kit's cluster: its API server on
127.0.0.1 and its process kubelet, which runs each worker pod's command as a local
process (``python`` is this interpreter; Airflow's task command forks from an interpreter
that imported it once), every pod's output also written to ``logs/pods/<pod>.log``. And,
as subprocesses of this interpreter, ``airflow api-server``, ``airflow dag-processor``
and ``airflow scheduler``, each in its own process group with its output in
``logs/<name>.log``, their environment this one's without any ``AIRFLOW*`` variable, plus
the start's settings (:func:`~k8s_workloads.cli._local_home.run_settings`).

:meth:`LocalStack.stop` sends SIGTERM to every process group, SIGKILL to what is left
after a grace period (and to every process that was a descendant of one), then stops the
kubelet (and so every pod) and the API server: it returns within about 12 seconds.

:class:`ExampleRun` follows ``--trigger``: once the example DAG is parsed it runs
``airflow dags trigger``, then reports the run's deadline callback and task as they end,
read from the SQLite database.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

from k8s_workloads.cli._local_home import (
    EXAMPLE_BUNDLE,
    EXAMPLE_DAG_ID,
    NAMESPACE,
    run_settings,
    write_run_files,
)
from k8s_workloads.testing.cluster import FakeCluster
from k8s_workloads.testing.local import kubeconfig, new_token
from k8s_workloads.testing.process_kubelet import ProcessKubelet
from k8s_workloads.testing.server import FakeApiServer

if TYPE_CHECKING:
    import threading
    from collections.abc import Mapping
    from pathlib import Path
    from typing import TextIO

    from k8s_workloads.cli._local_home import LocalHome

__all__ = ["AIRFLOW_PROCESSES", "ExampleRun", "LocalStack", "StackFailed"]

AIRFLOW_PROCESSES = ("api-server", "dag-processor", "scheduler")
_WORKLOAD_MODULE = "airflow.sdk.execution_time.execute_workload"
# SIGTERM, then SIGKILL after this many seconds: the scheduler ends its executor meanwhile
# (about 5 s on a busy 2-core machine); the api-server's process lingers after uvicorn's
# "Finished server process" until killed.
_GRACE_SECONDS = {"scheduler": 8.0, "dag-processor": 5.0}
_DEFAULT_GRACE_SECONDS = 3.0
_REAP_SECONDS = 2.0
_POD_SECONDS = 24 * 3600.0  # a worker pod runs at most this long (DeadlineExceeded)
_SERVER_SECONDS = 366 * 24 * 3600.0  # the kit's server outlives any start
_LOOK_SECONDS = 1.0  # how often the database and the api-server are looked at


def _grace(name: str) -> float:
    return _GRACE_SECONDS.get(name, _DEFAULT_GRACE_SECONDS)


class StackFailed(Exception):
    """A process of the stack could not start or ended by itself: the message says which
    and where its log is."""


class _LocalCluster(FakeCluster):
    """The kit's cluster that appends each pod's output to ``folder/<pod>.log`` and
    remembers every pod created: ``created``, name to annotations."""

    def __init__(self, folder: Path) -> None:
        super().__init__(namespaces=[NAMESPACE])
        self.folder = folder
        self.created: dict[str, dict[str, str]] = {}

    def pod_created(self, pod: dict[str, Any]) -> None:
        metadata = pod.get("metadata") or {}
        self.created[str(metadata.get("name"))] = dict(metadata.get("annotations") or {})

    def append_log(self, namespace: str, name: str, container: str, text: str) -> None:
        super().append_log(namespace, name, container, text)
        with contextlib.suppress(OSError), (self.folder / f"{name}.log").open("a") as out:
            out.write(text)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class LocalStack:
    """The kit's cluster and the Airflow processes of one start (see the module)."""

    def __init__(self, home: LocalHome, *, api_port: int, environ: Mapping[str, str]) -> None:
        self.home = home
        self.api_port = api_port or _free_port()
        self.api_url = f"http://127.0.0.1:{self.api_port}"
        self.settings = run_settings(home, self.api_port)
        self.environ = dict(environ)
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.cluster = _LocalCluster(home.pod_logs)
        self.server: FakeApiServer | None = None
        self.kubelet: ProcessKubelet | None = None
        self._descendants: dict[int, Any] = {}  # pid: psutil.Process, where psutil is

    def environment(self) -> dict[str, str]:
        """The Airflow processes' environment: this one's but for the caller's Airflow
        settings (the home's ``airflow.cfg`` holds the stack's), plus this start's."""
        inherited = {k: v for k, v in self.environ.items() if not k.startswith("AIRFLOW")}
        return {**inherited, **self.settings}

    # --- starting -------------------------------------------------------------------

    def airflow(self, name: str, *command: str) -> subprocess.Popen[bytes]:
        """``airflow command...`` with this interpreter, in its own process group, its
        output appended to ``logs/<name>.log``."""
        with self.home.log(name).open("ab") as output:
            process = subprocess.Popen(  # noqa: S603 - this interpreter, fixed arguments
                [sys.executable, "-m", "airflow", *command],
                env=self.environment(),
                cwd=self.home.root,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes[name] = process
        return process

    def migrate(self, stopping: threading.Event) -> bool:
        """``airflow db migrate`` (quick when the database is current); False if stopped."""
        process = self.airflow("db-migrate", "db", "migrate")
        while process.poll() is None:
            if stopping.wait(0.1):
                return False
        del self.processes["db-migrate"]
        if process.returncode:
            raise StackFailed(
                f"airflow db migrate failed (exit code {process.returncode}); "
                f"its log: {self.home.log('db-migrate')}"
            )
        return True

    def start(self) -> None:
        """The kit's cluster, the run files, then the three Airflow processes."""
        token = new_token()  # pods run as this user's processes: nobody else may make one
        self.server = FakeApiServer(self.cluster, lifetime=_SERVER_SECONDS, token=token)
        self.kubelet = ProcessKubelet(
            self.cluster,
            max_lifetime=_POD_SECONDS,
            executables={"python": sys.executable, "python3": sys.executable},
            # A pod has what its template gives it (and PATH), as on a cluster.
            inherit_env=False,
            preload=(_WORKLOAD_MODULE,),
        )
        self.server.start()
        self.kubelet.start()
        write_run_files(
            self.home, self.settings, kubeconfig(self.server.url, NAMESPACE, token), self.environ
        )
        for name in AIRFLOW_PROCESSES:
            self.airflow(name, name)

    # --- running --------------------------------------------------------------------

    def check(self) -> None:
        """A :class:`StackFailed` if an Airflow process or the kit's server has ended."""
        for name in AIRFLOW_PROCESSES:
            process = self.processes.get(name)
            if process is not None and process.poll() is not None:
                raise StackFailed(
                    f"airflow {name} exited (code {process.returncode}); "
                    f"its log: {self.home.log(name)}"
                )
        if self.server is not None and self.server.stopped:
            raise StackFailed("the kit's API server stopped")

    def look(self) -> None:
        """What is looked at every second rather than at each check."""
        self._remember_descendants()

    def api_ready(self) -> bool:
        """Whether the api-server answers its health check."""
        try:
            with urllib.request.urlopen(  # noqa: S310 - http://127.0.0.1 only
                f"{self.api_url}/api/v2/monitor/health", timeout=2
            ) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def _remember_descendants(self) -> None:
        """Every process below the Airflow processes, as far as psutil (which Airflow
        installs) sees them: one that left its process group is still stopped."""
        try:
            psutil: Any = importlib.import_module("psutil")
        except ImportError:
            return
        for process in self.processes.values():
            with contextlib.suppress(psutil.Error):
                for child in psutil.Process(process.pid).children(recursive=True):
                    self._descendants.setdefault(child.pid, child)

    # --- stopping -------------------------------------------------------------------

    def stop(self) -> list[str]:
        """Stop everything this stack started (see the module); what was stopped."""
        stopped = []
        self._remember_descendants()
        running = {name: p for name, p in self.processes.items() if p.returncode is None}
        for process in running.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGTERM)
        started = time.monotonic()
        # The shortest grace first: each process gets its own, all of them at once.
        for name, process in sorted(running.items(), key=lambda item: _grace(item[0])):
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.0, started + _grace(name) - time.monotonic()))
            # The group's other members too (uvicorn's worker, the parsers, a supervisor).
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=_REAP_SECONDS)
            stopped.append(f"airflow {name} (pid {process.pid})")
        for child in self._descendants.values():
            with contextlib.suppress(Exception):  # psutil's errors: it is gone already
                if child.is_running():
                    child.kill()
        if self.kubelet is not None:
            self.kubelet.stop()
            stopped.append("the kit's kubelet and its pods")
        if self.server is not None:
            self.server.stop()
            stopped.append("the kit's API server")
        return stopped


class ExampleRun:
    """``--trigger``: the example DAG triggered once parsed, and its run followed."""

    def __init__(self, stack: LocalStack, out: TextIO) -> None:
        self.stack = stack
        self.out = out
        self.run_id = "local__" + datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%S"
        )
        self.trigger: subprocess.Popen[bytes] | None = None
        self.triggered = False
        self.reported: set[str] = set()
        self.unparsed = False  # its parse error was said
        self.done = False

    def _query(self, sql: str, *parameters: object) -> list[tuple[Any, ...]]:
        database = self.stack.home.database
        try:
            connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5)
        except sqlite3.Error:
            return []
        try:
            return connection.execute(sql, parameters).fetchall()
        except sqlite3.Error:  # not migrated yet, or busy: looked at again later
            return []
        finally:
            connection.close()

    def step(self) -> None:
        """One look: trigger when parsed, then report what ended."""
        if self.done:
            return
        if self.trigger is None:
            if self._query("SELECT 1 FROM serialized_dag WHERE dag_id = ?", EXAMPLE_DAG_ID):
                self.trigger = self.stack.airflow(
                    "trigger", "dags", "trigger", EXAMPLE_DAG_ID, "--run-id", self.run_id
                )
            elif not self.unparsed and (
                errors := self._query(
                    "SELECT filename, stacktrace FROM import_error WHERE bundle_name = ?",
                    EXAMPLE_BUNDLE,
                )
            ):
                self.unparsed = True
                filename, stacktrace = errors[0]
                last = (str(stacktrace).strip().splitlines() or ["?"])[-1]
                self._say(f"not triggered: {filename} does not parse: {last}")
            return
        if not self.triggered:
            code = self.trigger.poll()
            if code is None:
                return
            self.triggered = True
            if code:
                self._say(
                    f"airflow dags trigger failed (exit code {code}); "
                    f"its log: {self.stack.home.log('trigger')}"
                )
                self.done = True
                return
            self._say(f"triggered {EXAMPLE_DAG_ID}, run {self.run_id}")
        self._report()

    def _report(self) -> None:
        callbacks = self._query(
            "SELECT callback.id, callback.state FROM callback"
            " JOIN deadline ON deadline.callback_id = callback.id"
            " JOIN dag_run ON deadline.dagrun_id = dag_run.id"
            " WHERE dag_run.dag_id = ? AND dag_run.run_id = ?",
            EXAMPLE_DAG_ID,
            self.run_id,
        )
        for callback_id, state in callbacks:
            if state in {"success", "failed"} and f"callback {callback_id}" not in self.reported:
                self.reported.add(f"callback {callback_id}")
                self._say(f"the deadline callback ended {state}{self._pod_log(callback_id)}")
        tasks = self._query(
            "SELECT task_id, state FROM task_instance WHERE dag_id = ? AND run_id = ?",
            EXAMPLE_DAG_ID,
            self.run_id,
        )
        for task_id, state in tasks:
            if state in {"success", "failed"} and f"task {task_id}" not in self.reported:
                self.reported.add(f"task {task_id}")
                self._say(f"task {task_id} ended {state}")
        runs = self._query(
            "SELECT state FROM dag_run WHERE dag_id = ? AND run_id = ?", EXAMPLE_DAG_ID, self.run_id
        )
        if runs and runs[0][0] in {"success", "failed"}:
            self._say(f"the run ended {runs[0][0]}")
            self.done = True

    def _pod_log(self, callback_id: object) -> str:
        # SQLite holds a UUID column as 32 hex digits; the pod's annotation has the dashes.
        wanted = str(callback_id).replace("-", "").lower()
        for name, marks in list(self.stack.cluster.created.items()):
            if marks.get("callback_id", "").replace("-", "").lower() == wanted:
                return f" in pod {name} (its log: {self.stack.home.pod_logs / name}.log)"
        return ""

    def _say(self, line: str) -> None:
        self.out.write(f"{EXAMPLE_DAG_ID}: {line}\n")
        self.out.flush()

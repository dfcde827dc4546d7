"""``k8s-workloads local --trigger``, end to end, as a user runs it.

The command runs as a subprocess of this environment's Python (the checkout's ``src``
first on ``PYTHONPATH``): it migrates a fresh home's SQLite database, starts the kit's
cluster and Airflow's three processes, and triggers the bundled example. The test waits
for the example's deadline callback and its task to end ``success`` in the home's
database, reads what the callback printed in its pod's log, then sends SIGINT: the
command must exit 0 within 20 s, and no process it started may be left (none of its
descendants, none with the home as ``AIRFLOW_HOME``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

psutil = pytest.importorskip("psutil", reason="Airflow installs psutil")
pytest.importorskip("airflow.executors.workloads", reason="Airflow runs in the Airflow environment")

ROOT = Path(__file__).resolve().parents[2]
CALLBACK_SECONDS = 150.0  # the command to the callback's success: the documented bound
TASK_SECONDS = 90.0  # then the task (it sleeps 30 s from its start)
STOP_SECONDS = 20.0

T = TypeVar("T")


def query(database: Path, sql: str, *parameters: object) -> list[tuple[Any, ...]]:
    """Rows of the home's database, read-only; none while it is not there yet."""
    try:
        connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error:
        return []
    try:
        return connection.execute(sql, parameters).fetchall()
    except sqlite3.Error:
        return []
    finally:
        connection.close()


def wait_for(
    check: Callable[[], T | None], what: str, seconds: float, command: subprocess.Popen[str]
) -> T:
    until = time.monotonic() + seconds
    while True:
        found = check()
        if found:
            return found
        if command.poll() is not None:
            pytest.fail(f"the command exited ({command.returncode}) while waiting for {what}")
        if time.monotonic() > until:
            pytest.fail(f"waited {seconds:.0f} s for {what}, in vain")
        time.sleep(0.5)


def with_home(home: Path) -> list[Any]:
    """Every process of this user whose environment names ``home`` as AIRFLOW_HOME."""
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if process.environ().get("AIRFLOW_HOME") == str(home):
                found.append(process)
    return found


def remember_descendants(pid: int, into: dict[int, Any]) -> None:
    with contextlib.suppress(psutil.Error):
        for process in psutil.Process(pid).children(recursive=True):
            into.setdefault(process.pid, process)


def alive(process: Any) -> bool:
    try:
        return bool(process.is_running() and process.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def tails(home: Path, output: Path) -> str:
    parts = [f"--- the command ---\n{output.read_text(errors='replace')[-3000:]}"]
    for log in sorted((home / "logs").glob("*.log")):
        lines = log.read_text(errors="replace").splitlines()[-15:]
        parts.append(f"--- {log.name} ---\n" + "\n".join(lines))
    return "\n".join(parts)


def test_local_trigger_runs_the_example_callback_as_a_pod_and_ctrl_c_stops_everything(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    output = tmp_path / "output.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    argv = [sys.executable, "-m", "k8s_workloads", "local", "--home", str(home), "--trigger"]
    started = time.monotonic()
    with output.open("w") as out:
        # Its own session: the SIGINT is the command's alone, as a terminal's Ctrl-C is.
        command = subprocess.Popen(
            [*argv, "--lifetime", "600"],
            env=env,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    database = home / "airflow.db"
    descendants: dict[int, Any] = {}
    try:

        def callback_succeeded() -> str | None:
            remember_descendants(command.pid, descendants)
            rows = query(
                database,
                "SELECT callback.state FROM callback"
                " JOIN deadline ON deadline.callback_id = callback.id"
                " JOIN dag_run ON deadline.dagrun_id = dag_run.id"
                " WHERE dag_run.dag_id = 'deadline_example'",
            )
            states = [state for (state,) in rows]
            assert "failed" not in states, tails(home, output)
            return "success" if states == ["success"] else None

        try:
            wait_for(callback_succeeded, "the callback's success", CALLBACK_SECONDS, command)
            seconds = time.monotonic() - started
            wait_for(
                lambda: query(
                    database,
                    "SELECT state FROM task_instance WHERE dag_id = 'deadline_example'"
                    " AND state IN ('success', 'failed')",
                ),
                "the task's end",
                TASK_SECONDS,
                command,
            )
        except BaseException:
            print(tails(home, output))  # noqa: T201 - what failed, on failure
            raise
        (task_state,) = query(
            database, "SELECT state FROM task_instance WHERE dag_id = 'deadline_example'"
        )
        assert task_state == ("success",)

        # The callback ran in a pod: what it printed is in that pod's log.
        pod_logs = list((home / "logs" / "pods").glob("callback-*.log"))
        assert len(pod_logs) == 1, pod_logs
        assert "deadline missed: deadline_example run local__" in pod_logs[0].read_text()
        assert "telling data-platform" in pod_logs[0].read_text()
        shown = output.read_text()
        assert f"the deadline callback ended success in pod {pod_logs[0].stem}" in shown
        assert "Airflow UI: http://127.0.0.1:" in shown
        assert "simple_auth_manager_passwords.json.generated" in shown
        for name in ("api-server", "dag-processor", "scheduler"):
            assert f"airflow {name} (pid " in shown
            assert (home / "logs" / f"{name}.log").stat().st_size > 0

        remember_descendants(command.pid, descendants)
        assert len(with_home(home)) >= 3  # the three Airflow processes at least
        interrupted = time.monotonic()
        command.send_signal(signal.SIGINT)
        code = command.wait(timeout=STOP_SECONDS + 10)
        stopped = time.monotonic() - interrupted
        assert code == 0, tails(home, output)
        assert stopped < STOP_SECONDS, stopped
        print(  # noqa: T201 - the figures of docs/run-locally.md (pytest -s)
            f"\nk8s-workloads local: the callback's success {seconds:.1f} s after the start;"
            f" stopped {stopped:.1f} s after SIGINT"
        )
        left = [process for process in descendants.values() if alive(process)]
        assert left == []
        assert with_home(home) == []
        assert (
            output.read_text()
            .rstrip()
            .splitlines()[-1]
            .startswith("k8s-workloads local: stopped airflow api-server")
        )
    finally:
        if command.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(command.pid, signal.SIGKILL)
            command.wait(timeout=10)
        for process in [*descendants.values(), *with_home(home)]:
            with contextlib.suppress(psutil.Error):
                process.kill()

"""The parts of ``local``'s stack that need no Airflow (:mod:`k8s_workloads.cli._local_stack`):
a process that exits is named, a group that ignores SIGTERM is killed, an example that does
not parse is said once."""

from __future__ import annotations

import io
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from k8s_workloads.cli._local_home import (
    NAMESPACE,
    prepare,
)
from k8s_workloads.cli._local_stack import ExampleRun, LocalStack, StackFailed

# --- the stack's parts that need no Airflow -----------------------------------------------------


def test_a_process_that_exits_by_itself_is_named_with_its_log(tmp_path: Path) -> None:
    home = prepare(tmp_path / "home")
    stack = LocalStack(home, api_port=0, environ={})
    stack.processes["scheduler"] = subprocess.Popen([sys.executable, "-c", "exit(3)"])
    stack.processes["scheduler"].wait(timeout=30)
    with pytest.raises(
        StackFailed, match="airflow scheduler exited \\(code 3\\); its log: "
    ) as info:
        stack.check()
    assert str(home.log("scheduler")) in str(info.value)
    assert stack.stop() == []  # the exited process is not stopped again; nothing else ran


def gone(pid: int, seconds: float = 5.0) -> bool:
    """Whether ``pid`` ends (or is a zombie, ended but not yet reaped) within ``seconds``."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_stop_kills_a_process_group_that_ignores_sigterm(tmp_path: Path) -> None:
    home = prepare(tmp_path / "home")
    stack = LocalStack(home, api_port=0, environ={})
    # A process that ignores SIGTERM, and a child of it in its group.
    script = (
        "import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
        "print(child.pid, flush=True); time.sleep(120)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, start_new_session=True
    )
    assert process.stdout is not None
    child = int(process.stdout.readline())
    stack.processes["trigger"] = process
    started = time.monotonic()
    stopped = stack.stop()
    assert time.monotonic() - started < 10
    assert stopped == [f"airflow trigger (pid {process.pid})"]
    assert process.returncode == -signal.SIGKILL
    assert gone(child)  # killed with its group


def test_the_stacks_cluster_remembers_each_pod_created_with_its_annotations(
    tmp_path: Path,
) -> None:
    stack = LocalStack(prepare(tmp_path / "home"), api_port=0, environ={})
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "cb", "annotations": {"callback_id": "c-1"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "base", "image": "x"}]},
    }
    stack.cluster.create_pod(NAMESPACE, {**body, "metadata": {"name": "dry"}}, dry_run=True)
    stack.cluster.create_pod(NAMESPACE, body)
    stack.cluster.remove_pod(NAMESPACE, "cb", grace_period_seconds=0)
    assert stack.cluster.created == {"cb": {"callback_id": "c-1"}}  # kept once gone too


def test_an_example_that_does_not_parse_is_said_once(tmp_path: Path) -> None:
    home = prepare(tmp_path / "home")
    database = sqlite3.connect(home.database)
    database.executescript(
        "CREATE TABLE serialized_dag (dag_id TEXT);"
        "CREATE TABLE import_error (filename TEXT, bundle_name TEXT, stacktrace TEXT);"
        "INSERT INTO import_error VALUES ('deadline_example.py', 'k8s-workloads-example',"
        " 'Traceback ...\n  line 3\nModuleNotFoundError: No module named ''nope''\n');"
    )
    database.commit()
    database.close()
    out = io.StringIO()
    example = ExampleRun(LocalStack(home, api_port=0, environ={}), out)
    example.step()
    example.step()
    assert out.getvalue() == (
        "deadline_example: not triggered: deadline_example.py does not parse: "
        "ModuleNotFoundError: No module named 'nope'\n"
    )
    assert example.trigger is None

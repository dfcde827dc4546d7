"""What the Airflow executor's tests share: the options, a running executor, workloads.

The kubernetes client comes from the provider's own ``[kubernetes_executor] client_factory``
option (:func:`fake_client`), so ``start()`` and ``sync()`` run unchanged against the test
kit's cluster served over HTTP on 127.0.0.1. Imported only where Airflow is installed.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from k8s_workloads.airflow.convert import from_airflow_key, to_airflow_key
from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.pods import construct_task_pod
from k8s_workloads.states import CallbackState
from k8s_workloads.testing import FakeApiServer, FakeCluster

NS = "airflow"


def airflow(module: str) -> Any:
    return importlib.import_module(module)


SERVER: list[FakeApiServer] = []


def fake_client() -> Any:
    """``[kubernetes_executor] client_factory``: a CoreV1Api for the test's server."""
    from kubernetes import client  # noqa: PLC0415

    return client.CoreV1Api(client.ApiClient(client.Configuration(host=SERVER[0].url)))


def reads_client_factory() -> bool:
    """Whether the installed provider reads ``client_factory`` (10.24 and later)."""
    return hasattr(
        airflow("airflow.providers.cncf.kubernetes.kube_client"), "_get_executor_kube_client"
    )


def kubeconfig(url: str, folder: pathlib.Path) -> pathlib.Path:
    """A kubeconfig file for the API server at ``url`` (no credentials: the kit's server)."""
    path = folder / "kubeconfig.json"
    path.write_text(
        json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "kit",
            "clusters": [{"name": "kit", "cluster": {"server": url}}],
            "users": [{"name": "kit", "user": {}}],
            "contexts": [{"name": "kit", "context": {"cluster": "kit", "user": "kit"}}],
        })
    )  # fmt: skip
    return path


def cluster_options(url: str, folder: pathlib.Path) -> dict[tuple[str, str], str]:
    """How the executor reaches the test's API server: the provider's ``client_factory``
    where it reads it, else a kubeconfig file (provider 10.21-10.23)."""
    if reads_client_factory():
        factory = "tests.support.airflow_support.fake_client"
        return {("kubernetes_executor", "client_factory"): factory}
    return {
        ("kubernetes_executor", "in_cluster"): "False",
        ("kubernetes_executor", "config_file"): str(kubeconfig(url, folder)),
    }


def reach_by_kubeconfig(url: str) -> None:
    """In a scenario's process (``client_factory`` set by environment): where the provider
    does not read that option, reach ``url`` through a kubeconfig in ``AIRFLOW_HOME``."""
    if not reads_client_factory():
        path = kubeconfig(url, pathlib.Path(os.environ["AIRFLOW_HOME"]))
        os.environ["AIRFLOW__KUBERNETES_EXECUTOR__IN_CLUSTER"] = "False"
        os.environ["AIRFLOW__KUBERNETES_EXECUTOR__CONFIG_FILE"] = str(path)


OPTIONS = {
    ("kubernetes_executor", "namespace"): NS,
    ("kubernetes_executor", "worker_container_repository"): "apache/airflow",
    ("kubernetes_executor", "worker_container_tag"): "3.3.2",
    ("kubernetes_executor", "worker_pods_creation_batch_size"): "10",
    ("kubernetes_executor", "pod_template_file"): "",
    ("kubernetes_executor", "task_publish_max_retries"): "1",
}


@contextlib.contextmanager
def running_executor(**options: str | float) -> Iterator[Any]:
    """The executor started against a fresh cluster; state reads from ``.states``.

    ``options``: more ``[kubernetes_executor]`` options for this executor; ``latency``:
    seconds the API server adds to every call; ``record_log=True``: its log is a
    :class:`RecordedLog` from before ``start()`` (``executor._log``)."""
    from k8s_workloads.airflow.executor import KubernetesExecutor  # noqa: PLC0415

    latency = float(options.pop("latency", 0.0))
    record_log = bool(options.pop("record_log", False))
    # The namespaces the tests create pods in (multi-namespace mode lists "a, b").
    cluster = FakeCluster(namespaces=[NS, "a", "b"])
    with (
        FakeApiServer(cluster, lifetime=120, latency=latency) as server,
        tempfile.TemporaryDirectory() as folder,
        configured(
            {
                **OPTIONS,
                **cluster_options(server.url, pathlib.Path(folder)),
                **{("kubernetes_executor", name): str(value) for name, value in options.items()},
            }
        ),
    ):
        SERVER[:] = [server]
        instance: Any = KubernetesExecutor()
        instance.job_id = 7
        instance.states = {}
        instance.cluster = cluster
        instance.cluster_url = server.url
        if record_log:
            instance._log = RecordedLog(instance.log)
        instance.start()
        instance._reads.read_states = lambda keys: {key: instance.states.get(key) for key in keys}
        instance.handled = []
        logged = instance.core.on_decision  # the executor's log lines, still written

        def handled(decision: Any) -> None:
            instance.handled.append(decision)
            if logged is not None:
                logged(decision)

        instance.core.on_decision = handled
        try:
            yield instance
        finally:
            instance.end()


@contextlib.contextmanager
def configured(wanted: dict[tuple[str, str], str]) -> Iterator[None]:
    """Airflow's configuration with the ``wanted`` options, restored afterwards.

    Airflow 3.3 has two configuration objects: the executor reads core's, the provider's
    client factory the Task SDK's. Both get the test's options, and both get them back."""
    core_conf = airflow("airflow.configuration").conf
    sdk_conf = airflow("airflow.providers.common.compat.sdk").conf
    saved = [
        (config, option, config.get(*option) if config.has_option(*option) else None)
        for config in (core_conf, sdk_conf)
        for option in wanted
    ]
    for config in (core_conf, sdk_conf):
        for (section, key), value in wanted.items():
            config.set(section, key, value)
    try:
        yield
    finally:
        for config, (section, name), old in saved:
            if old is None:
                config.remove_option(section, name)
            else:
                config.set(section, name, old)


def callback_workload(number: int) -> Any:
    bundle_info = airflow("airflow.executors.workloads.base").BundleInfo
    callbacks = airflow("airflow.executors.workloads.callback")

    callback_id = str(uuid.UUID(int=number))
    return callbacks.ExecuteCallback(
        token="secret-token",  # noqa: S106 - a test value
        callback=callbacks.CallbackDTO(
            id=callback_id,
            fetch_method=callbacks.CallbackFetchMethod.IMPORT_PATH,
            data={"path": "alerts.notify", "kwargs": {}},
        ),
        dag_rel_path="dags/etl.py",
        bundle_info=bundle_info(name="dags"),
        log_path=f"executor_callbacks/etl/manual__1/{callback_id}",
    )


class RecordedLog:
    """The executor's logger (``running_executor(record_log=True)``), every line also kept
    in ``lines`` as ``(level, text)``: Airflow's logging does not reach caplog.

    Set before ``start()``: the executor hands its logger to its parts (the watchers, the
    reads, adoption) when it starts them."""

    _LEVELS = frozenset({"debug", "info", "warning", "error", "exception"})

    def __init__(self, log: Any) -> None:
        self._log = log
        self.lines: list[tuple[str, str]] = []

    def text(self, *levels: str) -> str:
        """The lines kept at ``levels`` (all of them without), one a line."""
        return "\n".join(text for level, text in self.lines if not levels or level in levels)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._log, name)
        if name not in self._LEVELS:
            return method

        def kept(message: str, *args: Any, **kwargs: Any) -> Any:
            text = message % args if args else message
            if kwargs.get("exc_info") or name == "exception":
                text += "\n" + traceback.format_exc()
            self.lines.append((name, text))
            return method(message, *args, **kwargs)

        return kept


def logged(executor: Any) -> RecordedLog:
    """The lines ``executor`` logs from now on: the :class:`RecordedLog` it was started
    with (``record_log=True``; the ``executor`` fixture's is), emptied."""
    log = executor._log
    assert isinstance(log, RecordedLog), "start the executor with record_log=True"
    log.lines.clear()
    return log


def queue_callbacks(executor: Any, first: int, count: int) -> list[CallbackKey]:
    """Queue ``count`` callbacks numbered from ``first``, their rows read as queued."""
    keys = []
    for number in range(first, first + count):
        workload = callback_workload(number)
        key = CallbackKey(workload.callback.id)
        executor.states[key] = CallbackState.QUEUED
        executor.queue_workload(workload, session=None)
        keys.append(key)
    return keys


def launch_callback(executor: Any, number: int) -> tuple[CallbackKey, str]:
    """Queue a callback the way the scheduler does and wait for its pod: key, pod name."""
    workload = callback_workload(number)
    executor.queue_workload(workload, session=None)
    executor.heartbeat()  # the real BaseExecutor path: _process_workloads, then sync()
    cluster = executor.cluster
    sync_until(executor, lambda: bool(cluster.pod_names()))
    (name,) = cluster.pod_names()
    return CallbackKey(workload.callback.id), name


def scheduler_takes_events(executor: Any) -> None:
    """What the scheduler's loop does after each ``heartbeat()``: take the event buffer
    (the executor then cleans up the reported workloads' pods on its next ``sync()``).
    The events are put back for the test to read."""
    taken = executor.get_event_buffer()  # a new, empty buffer takes its place
    executor.event_buffer.update(taken)


def sync_until(executor: Any, done: Any, timeout: float = 10.0) -> None:
    """``sync()`` as the scheduler's loop calls it (taking the events after each) until
    ``done()``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        executor.sync()
        scheduler_takes_events(executor)
        if done():
            return
        time.sleep(0.02)
    pytest.fail(
        f"the executor did not get there in time: events {executor.event_buffer}, "
        f"running {executor.running}, decisions {executor.handled}"
    )


def states_of(executor: Any, key: WorkloadKey) -> Any:
    return executor.event_buffer.get(to_airflow_key(key))


def task_workload(executor_config: dict[str, Any] | None) -> Any:
    bundle_info = airflow("airflow.executors.workloads.base").BundleInfo
    tasks = airflow("airflow.executors.workloads.task")
    ti = tasks.TaskInstanceDTO(
        id=uuid.UUID(int=11),
        task_id="load",
        dag_id="etl",
        run_id="manual__2026-06-07T00:00:00+00:00",
        try_number=2,
        dag_version_id=uuid.UUID(int=12),
        map_index=3,
        queue="default",
        pool_slots=1,
        priority_weight=1,
        executor_config=executor_config,
    )
    return tasks.ExecuteTask(
        token="task-token",  # noqa: S106 - a test value
        ti=ti,
        dag_rel_path="dags/etl.py",
        bundle_info=bundle_info(name="dags"),
        log_path="dag_id=etl/run_id=manual/task_id=load/attempt=2.log",
    )


def pod_made_by(executor: Any, scheduler: int, workload: Any) -> str:
    """``workload``'s task pod as scheduler ``scheduler`` made it, in the executor's
    cluster (a dead scheduler's pod to adopt); its name."""
    key = from_airflow_key(workload.ti.key)
    assert isinstance(key, TaskInstanceKey)
    pod = construct_task_pod(
        namespace=NS,
        scheduler_job_id=scheduler,
        pod_id=f"etl-{key.task_id}",
        dag_id=key.dag_id,
        task_id=key.task_id,
        run_id=key.run_id,
        map_index=key.map_index,
        try_number=key.try_number,
        kube_image="apache/airflow:3.3.2",
        args=["airflow", "tasks", "run"],
        airflow_version=airflow("airflow").__version__,
    )
    name: str = executor.cluster.create_pod(NS, pod)["metadata"]["name"]
    return name


def another_task(task_id: str, number: int) -> Any:
    """:func:`task_workload` as another task instance: its own task id and row id."""
    workload = task_workload(None)
    ti = workload.ti.model_copy(update={"task_id": task_id, "id": uuid.UUID(int=number)})
    return workload.model_copy(update={"ti": ti})


# --- scenarios in a subprocess, against a real migrated metadata database ---------------

_MIGRATED: list[pathlib.Path] = []


def migrated_database(scratch: pathlib.Path) -> pathlib.Path:
    """A SQLite metadata database migrated by ``airflow db migrate`` (once per session)."""
    if not _MIGRATED:
        home = scratch / "migrated"
        home.mkdir()
        airflow_cli = pathlib.Path(sys.executable).with_name("airflow")
        env = {**os.environ, "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
        subprocess.run(
            [str(airflow_cli), "db", "migrate"], env=env, check=True, capture_output=True
        )
        _MIGRATED.append(home / "airflow.db")
    return _MIGRATED[0]


def run_scenario(
    module: str, *args: str, home: pathlib.Path, database: pathlib.Path, timeout: float = 240
) -> Any:
    """Run ``python -m module args`` in a fresh ``AIRFLOW_HOME`` holding a copy of
    ``database``; return the JSON document it prints last."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "dags").mkdir(exist_ok=True)
    shutil.copyfile(database, home / "airflow.db")
    root = pathlib.Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__KUBERNETES_EXECUTOR__CLIENT_FACTORY": f"{module}.fake_client",
        "AIRFLOW__KUBERNETES_EXECUTOR__NAMESPACE": NS,
        "AIRFLOW__KUBERNETES_EXECUTOR__WORKER_CONTAINER_REPOSITORY": "apache/airflow",
        "AIRFLOW__KUBERNETES_EXECUTOR__WORKER_CONTAINER_TAG": "3.3.2",
        "AIRFLOW__KUBERNETES_EXECUTOR__WORKER_PODS_CREATION_BATCH_SIZE": "10",
        # The caller's path after the checkout's root: a worktree run with
        # PYTHONPATH=<worktree>/src tests that worktree's package, not the installed one.
        "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
    }
    run = subprocess.run(
        [sys.executable, "-m", module, *args],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])

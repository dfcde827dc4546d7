"""The executor second in Airflow 3's list of executors, under an alias: Airflow loads it,
and the scheduler's own routing sends it the tasks pinned to it with ``executor=`` and the
deadline callback that names it, and everything else to the default executor.

``[core] executor = LocalExecutor,k8s:k8s_workloads.airflow.KubernetesExecutor``; the
executors are made by Airflow's ``ExecutorLoader``, and each workload is routed by
``SchedulerJobRunner._executor_to_workloads`` (the function the scheduler calls for task
instances and for ``ExecutorCallback`` rows), on task instances and a ``Deadline``'s
callback made as the scheduler makes them from the serialised DAG.
"""

from __future__ import annotations

import datetime
import functools
import logging
import types
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("airflow.executors.workloads", reason="Airflow runs in the Airflow environment")

from k8s_workloads.airflow.provider import EXECUTOR
from tests.support.airflow_support import OPTIONS, airflow, configured

EXECUTORS = f"LocalExecutor,k8s:{EXECUTOR}"


@pytest.fixture
def executors() -> Iterator[list[Any]]:
    """Airflow's executors for ``EXECUTORS``, made by its loader (caches reset around)."""
    loader = airflow("airflow.executors.executor_loader")
    caches = (
        loader._executor_names,
        loader._alias_to_executors_per_team,
        loader._module_to_executors_per_team,
        loader._classname_to_executors_per_team,
        loader._team_name_to_executors,
    )
    for cache in caches:
        cache.clear()
    try:
        with configured({**OPTIONS, ("core", "executor"): EXECUTORS}):
            yield loader.ExecutorLoader.init_executors()
    finally:
        for cache in caches:
            cache.clear()


def _dag() -> Any:
    """The scheduler's view of a DAG: a task on the default executor, one pinned to the
    alias, one pinned by class name, and a deadline whose callback names the alias."""
    sdk = airflow("airflow.sdk")
    callback = airflow("airflow.sdk.definitions.callback")
    deadline = airflow("airflow.sdk.definitions.deadline")
    empty = airflow("airflow.providers.standard.operators.empty").EmptyOperator
    alert = deadline.DeadlineAlert(
        reference=deadline.DeadlineReference.DAGRUN_QUEUED_AT,
        interval=datetime.timedelta(minutes=10),
        callback=callback.SyncCallback("alerts.notify", kwargs={}, executor="k8s"),
    )
    with sdk.DAG(
        "etl",
        schedule=None,
        start_date=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc),
        deadline=alert,
    ) as dag:
        empty(task_id="on_default")
        empty(task_id="pinned_by_alias", executor="k8s")
        empty(task_id="pinned_by_class", executor="KubernetesExecutor")
    serialization = airflow("airflow.serialization.serialized_objects").DagSerialization
    return serialization.from_dict(serialization.to_dict(dag)), alert


def _route(executors: list[Any], workloads: list[Any]) -> dict[str, list[Any]]:
    """``SchedulerJobRunner._executor_to_workloads`` with the scheduler's executors."""
    runner_class = airflow("airflow.jobs.scheduler_job_runner").SchedulerJobRunner
    runner = types.SimpleNamespace(
        executors=executors,
        executor=executors[0],
        _multi_team=False,
        log=logging.getLogger("scheduler"),
    )
    runner._try_to_load_executor = functools.partial(runner_class._try_to_load_executor, runner)
    routed = runner_class._executor_to_workloads(runner, workloads, session=None)
    return {type(executor).__module__: found for executor, found in routed.items()}


def test_airflow_loads_this_executor_second_under_its_alias(executors: list[Any]) -> None:
    from k8s_workloads.airflow.executor import KubernetesExecutor  # noqa: PLC0415

    assert [type(executor).__name__ for executor in executors] == [
        "LocalExecutor",
        "KubernetesExecutor",
    ]
    ours = executors[1]
    assert isinstance(ours, KubernetesExecutor)
    assert (ours.name.alias, ours.name.module_path) == ("k8s", EXECUTOR)


def test_pinned_tasks_and_the_deadline_callback_reach_this_executor(
    executors: list[Any],
) -> None:
    dag, alert = _dag()
    task_instance = airflow("airflow.models.taskinstance").TaskInstance
    tis = {
        task_id: task_instance(dag.get_task(task_id), run_id="r1", dag_version_id=uuid.uuid4())
        for task_id in ("on_default", "pinned_by_alias", "pinned_by_class")
    }
    # The deadline as the scheduler records it when the run starts (SerializedDAG ->
    # Deadline(callback=...)): its ExecutorCallback row carries the executor's name.
    serialized_alert = airflow("airflow.serialization.encoders").ensure_serialized_deadline_alert(
        alert
    )
    deadline = airflow("airflow.models.deadline").Deadline(
        deadline_time=datetime.datetime(2026, 6, 7, tzinfo=datetime.timezone.utc),
        callback=serialized_alert.callback,
        dagrun_id=1,
        deadline_alert_id=None,
        dag_id="etl",
    )
    callback = deadline.callback
    assert type(callback).__name__ == "ExecutorCallback"
    routed = _route(executors, [*tis.values(), callback])
    assert routed == {
        "airflow.executors.local_executor": [tis["on_default"]],
        "k8s_workloads.airflow.executor": [
            tis["pinned_by_alias"],
            tis["pinned_by_class"],
            callback,
        ],
    }

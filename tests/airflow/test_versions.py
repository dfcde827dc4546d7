"""The executor on each Airflow it runs on: callbacks on 3.3+, tasks only (and said) before.

``scripts/dev.py test`` runs this module in the Airflow 3.3.2 environment (with the rest of
the suite) and alone in an Airflow 3.2.2 environment, where the executor must behave as the
provider's does: tasks run, callback workloads are refused with ``NotImplementedError``,
here with a message that says they need Airflow 3.3.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("airflow.executors.workloads", reason="Airflow runs in the Airflow environment")

from k8s_workloads.airflow.convert import from_airflow_key
from k8s_workloads.compat import release_tuple
from k8s_workloads.states import TaskInstanceState
from tests.support.airflow_support import (
    NS,
    airflow,
    callback_workload,
    sync_until,
    task_workload,
)
from tests.support.event_factory import RUNNING, SUCCEEDED

AIRFLOW_VERSION: str = airflow("airflow").__version__
CALLBACKS = release_tuple(AIRFLOW_VERSION) >= (3, 3)


def test_callback_support_follows_the_airflow_version() -> None:
    from k8s_workloads.airflow import KubernetesExecutor  # noqa: PLC0415

    assert KubernetesExecutor.supports_callbacks is CALLBACKS


def test_a_callback_is_run_on_3_3_and_refused_clearly_before(executor: Any) -> None:
    workload = callback_workload(21)
    if CALLBACKS:
        executor.queue_workload(workload, session=None)
        executor.heartbeat()
        sync_until(executor, lambda: bool(executor.cluster.pod_names()))
        (name,) = executor.cluster.pod_names()
        pod = executor.cluster.pod(NS, name)
        assert pod["metadata"]["annotations"]["callback_id"] == workload.callback.id
        return
    with pytest.raises(NotImplementedError) as raised:
        executor.queue_workload(workload, session=None)
    message = str(raised.value)
    assert "Airflow 3.3 or later" in message
    assert AIRFLOW_VERSION in message
    assert not executor.queued_callbacks
    executor.heartbeat()
    assert executor.cluster.pod_names() == []  # nothing was launched
    assert executor.event_buffer == {}


def test_a_task_runs_end_to_end_on_every_supported_airflow(executor: Any) -> None:
    workload = task_workload(None)
    key = workload.ti.key
    executor.queue_workload(workload, session=None)
    executor.heartbeat()
    sync_until(executor, lambda: bool(executor.cluster.pod_names()))
    (name,) = executor.cluster.pod_names()
    pod = executor.cluster.pod(NS, name)
    annotations = pod["metadata"]["annotations"]
    assert (annotations["dag_id"], annotations["task_id"], annotations["try_number"]) == (
        "etl",
        "load",
        "2",
    )
    assert pod["metadata"]["labels"]["airflow_version"] == AIRFLOW_VERSION.replace("+", "-")
    assert key in executor.running
    executor.states[from_airflow_key(key)] = TaskInstanceState.QUEUED
    executor.cluster.set_status(NS, name, RUNNING)
    sync_until(executor, lambda: executor.core.waiting_results == 0)
    assert executor.event_buffer[key][0] == "queued"  # a Running task pod is not an event
    # The worker sets its row to success; a Succeeded pod reports what the row says.
    executor.states[from_airflow_key(key)] = TaskInstanceState.SUCCESS
    executor.cluster.set_status(NS, name, SUCCEEDED)
    sync_until(executor, lambda: executor.event_buffer.get(key, ("",))[0] == "success")
    assert key not in executor.running
    sync_until(executor, lambda: not executor.cluster.pod_names())  # deleted when done

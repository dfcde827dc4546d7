"""k8s_workloads.airflow._reads: what the executor reads for the core — workload states
(a database outage retried on later syncs), the stale check before a task's pod is created
(one read per creation batch), and pod lists (a 410's re-list of each watched namespace).
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("airflow.executors.workloads", reason="Airflow runs in the Airflow environment")

from k8s_workloads.airflow.convert import from_airflow_key
from k8s_workloads.keys import TaskInstanceKey, WorkloadKey
from k8s_workloads.states import CallbackState, TaskInstanceState
from tests.support.airflow_support import (
    NS,
    another_task,
    launch_callback,
    logged,
    running_executor,
    states_of,
    sync_until,
    task_workload,
)
from tests.support.event_factory import SUCCEEDED


def test_a_database_outage_while_handling_is_retried_on_later_syncs(executor: Any) -> None:
    from airflow.utils.state import CallbackState as AirflowCallbackState  # noqa: PLC0415

    key, name = launch_callback(executor, 6)
    cluster = executor.cluster
    executor.states[key] = CallbackState.RUNNING
    reads = executor._reads.read_states
    failures = [2]

    def outage(keys: Any) -> Any:
        if failures[0]:
            failures[0] -= 1
            raise ConnectionError("the metadata database is unavailable")
        return reads(keys)

    executor._reads.read_states = outage
    cluster.set_status(NS, name, SUCCEEDED)
    sync_until(executor, lambda: states_of(executor, key)[0] == AirflowCallbackState.SUCCESS)
    assert failures == [0]  # two failed reads, then the result went through


def test_a_410_relists_and_settles_a_pod_that_vanished_meanwhile(executor: Any) -> None:
    key, name = launch_callback(executor, 7)
    cluster = executor.cluster
    executor.states[key] = CallbackState.RUNNING
    # The watcher is watching (it saw the pod): a fault armed before its first watch
    # would meet that watch instead, which starts from now and never sees the pod go.
    core = executor.core
    sync_until(executor, lambda: core.waiting_results == 0 and core.resource_version(NS))
    # The watch connection drops and cannot come back at once; meanwhile the pod goes and
    # the history is compacted: the watcher resumes from its version and gets a 410.
    cluster.fail_next("watch", 503, message="the watch cache is warming up")
    cluster.drop_watches()
    cluster.remove_pod(NS, name)
    cluster.compact()
    # The watcher backs off after the 503 before it resumes: more than the default wait
    # on a loaded machine (seen once at 10 s).
    sync_until(executor, lambda: states_of(executor, key)[0].value == "failed", timeout=30)
    assert "vanished" in states_of(executor, key)[1]


def test_multi_namespace_mode_watches_and_relists_each_listed_namespace() -> None:
    from kubernetes import client as k8s  # noqa: PLC0415

    options = {"multi_namespace_mode": "True", "multi_namespace_mode_namespace_list": "a, b"}
    with running_executor(**options) as executor:
        assert [w.namespace for w in executor._watchers] == ["a", "b"]
        cluster = executor.cluster
        override = k8s.V1Pod(metadata=k8s.V1ObjectMeta(namespace="b"))
        workload = task_workload({"pod_override": override})
        key = from_airflow_key(workload.ti.key)
        executor.queue_workload(workload, session=None)
        executor.heartbeat()
        sync_until(executor, lambda: bool(cluster.pod_names()))
        (name,) = cluster.pod_names()
        assert cluster.pod("b", name) is not None  # created where the override says
        watched = {ns for call, ns, _ in cluster.calls if call == "watch"}
        assert watched == {"a", "b"}  # one watch per listed namespace, none elsewhere
        executor.states[key] = TaskInstanceState.SUCCESS
        cluster.set_status("b", name, SUCCEEDED)  # seen by b's watcher
        sync_until(executor, lambda: states_of(executor, key)[0].value == "success")
        sync_until(executor, lambda: not cluster.pod_names())
        # A 410 re-lists every listed namespace, not all of them.
        mark = len(cluster.calls)
        cluster.expire_watches()
        sync_until(executor, lambda: any(c[0] == "list_pods" for c in cluster.calls[mark:]))
        sync_until(
            executor,
            lambda: {c[1] for c in cluster.calls[mark:] if c[0] == "list_pods"} == {"a", "b"},
        )
        # Each watcher watches again from its own namespace's list, as the core says.
        core = executor.core
        sync_until(
            executor, lambda: all(w.relists == core.relists == 1 for w in executor._watchers)
        )
        for watcher in executor._watchers:
            assert watcher.resource_version is not None  # the list's, not from now


def test_a_task_whose_row_moved_on_gets_no_pod_and_no_event(executor: Any) -> None:
    # The rows as the database would answer: "b" was retried by another scheduler meanwhile.
    checked: list[list[str]] = []

    def check_stale(keys: list[WorkloadKey]) -> dict[WorkloadKey, str | None]:
        checked.append([key.task_id for key in keys if isinstance(key, TaskInstanceKey)])
        return {key: "moved on" if getattr(key, "task_id", "") == "b" else None for key in keys}

    executor._reads.check_stale = check_stale
    workloads = [another_task(task_id, number) for number, task_id in enumerate("abc", start=20)]
    for workload in workloads:
        executor.queue_workload(workload, session=None)
    executor.heartbeat()
    stale = workloads[1].ti.key
    sync_until(executor, lambda: any(h.cause == "stale" for h in executor.handled))
    sync_until(executor, lambda: len(executor.cluster.pod_names()) == 2)
    created = {
        executor.cluster.pod(NS, name)["metadata"]["annotations"]["task_id"]
        for name in executor.cluster.pod_names()
    }
    assert created == {"a", "c"}
    assert stale not in executor.event_buffer  # its QUEUED event taken back: no event at all
    assert stale not in executor.running
    assert all(workload.ti.key in executor.running for workload in (workloads[0], workloads[2]))
    # One read for the creation batch, each task in it once.
    assert sorted(task for batch in checked for task in batch) == ["a", "b", "c"]
    assert len(checked) == 1


def test_a_failed_stale_check_creates_the_pod(executor: Any) -> None:
    # The check is a guard: without an answer the pod is created, as the provider does.
    # This process's metadata database has no tables: the read fails.
    log = logged(executor)
    workload = another_task("guarded", 30)
    executor.queue_workload(workload, session=None)
    executor.heartbeat()
    sync_until(executor, lambda: bool(executor.cluster.pod_names()))
    assert workload.ti.key in executor.running
    (line,) = [line for line in log.text("warning").splitlines() if "Could not check" in line]
    assert "task_id='guarded'" in line

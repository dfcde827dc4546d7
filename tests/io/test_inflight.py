"""The drivers' shared bookkeeping (:mod:`k8s_workloads.io._inflight`), through both
drivers: the ``kubernetes`` client on a thread pool and ``kubernetes_asyncio`` on an event
loop, against the kit's server (real HTTP on 127.0.0.1): many requests in flight, reused
connections, a bounded pass, failures reported by the shared policy."""

from __future__ import annotations

from typing import Any

import pytest

from k8s_workloads.executor import NothingToDo, Waiting
from k8s_workloads.keys import GenericKey, TaskInstanceKey
from k8s_workloads.pods import construct_generic_pod, construct_task_pod
from k8s_workloads.states import CallbackState, TaskInstanceState
from tests.support.event_factory import RUNNING, SUCCEEDED
from tests.support.io_world import DRIVERS, NS, T0, Driven, Served, feed_watch, tasks


@pytest.mark.parametrize("kind", DRIVERS)
def test_many_workloads_run_with_requests_in_flight_and_connections_reused(
    slow: Served, kind: str
) -> None:
    driven = Driven(slow, kind, creations=8, cleanups=8)
    core, db = driven.core, driven.db
    keys = tasks(db, core, 40)
    version = slow.cluster.resource_version
    assert isinstance(driven.run(), NothingToDo)
    assert len(slow.cluster.pods()) == 40
    for key in keys:
        assert isinstance(key, TaskInstanceKey)
        db.task_finished(key, TaskInstanceState.SUCCESS)
    for pod in slow.cluster.pods():
        slow.cluster.set_status(NS, pod["metadata"]["name"], SUCCEEDED)
    feed_watch(slow, core, version)
    assert isinstance(driven.run(), NothingToDo)
    feed_watch(slow, core, None)  # the deletions' own events: nothing more to do
    assert isinstance(driven.run(), NothingToDo)
    driven.close()
    stats = slow.server.stats
    assert 1 < stats.max_in_flight_creations <= 8
    assert stats.count("DELETE", "pods") == 40  # one DELETE per pod
    assert stats.connections <= 16  # the pool's size, not one per call
    assert slow.cluster.pods() == []
    for key in keys:
        assert db.reported(key) == [TaskInstanceState.SUCCESS]


@pytest.mark.parametrize("kind", DRIVERS)
def test_a_bounded_pass_returns_with_requests_in_flight_and_loses_nothing(kind: str) -> None:
    # A call takes 2 s and the pass 1 s: a second to start four calls on a loaded machine
    # (0.25 s was once too short on CI), a second before the first can complete.
    world = Served(latency=2.0)
    try:
        driven = Driven(world, kind, creations=4, cleanups=4)
        tasks(driven.db, driven.core, 8)
        answer = driven.run(seconds=1.0)
        assert answer == Waiting(4)  # back to the caller while four creations go on
        assert driven.in_flight == 4
        assert isinstance(driven.run(), NothingToDo)  # the next sync() finishes them
        assert len(world.cluster.pods()) == 8
        assert driven.core.in_flight == ()
        driven.close()
    finally:
        world.close()


@pytest.mark.parametrize("kind", DRIVERS)
def test_failed_calls_go_to_the_core_and_a_404_on_a_delete_is_done(
    served: Served, kind: str
) -> None:
    driven = Driven(served, kind, creations=2, cleanups=2)
    core, db = driven.core, driven.db
    keys = tasks(db, core, 2)
    served.cluster.fail_next("create_pod", 403, message="forbidden")  # whichever comes first
    driven.run()
    (pod,) = served.cluster.pods()
    made = pod["metadata"]["annotations"]["task_id"]
    (finished,) = [k for k in keys if isinstance(k, TaskInstanceKey) and k.task_id == made]
    (refused,) = [key for key in keys if key != finished]
    assert db.reported(refused) == [TaskInstanceState.FAILED]  # the core's rule for a 403
    assert isinstance(finished, TaskInstanceKey)
    db.task_finished(finished, TaskInstanceState.SUCCESS)
    version = served.cluster.resource_version
    served.cluster.set_status(NS, pod["metadata"]["name"], SUCCEEDED)
    feed_watch(served, core, version)
    served.cluster.remove_pod(NS, pod["metadata"]["name"])  # gone before the executor's DELETE
    assert isinstance(driven.run(), NothingToDo)
    # The 404 was the delete done: the result was reported in the same pass, not retried.
    assert db.reported(finished) == [TaskInstanceState.SUCCESS]
    assert core.backlog == 0
    driven.close()


@pytest.mark.parametrize("kind", DRIVERS)
def test_a_guarded_relabel_goes_as_a_json_patch_and_only_one_adopter_wins(
    served: Served, kind: str
) -> None:
    # Issue 19, item 2, through each client: the list body is sent as a JSON patch (the
    # kit's server applies a body by its content type), its owner test passes after a
    # status update, and fails (422: not tracked) once a rival relabelled the pod.
    taken, lost = (TaskInstanceKey("etl", name, "manual__1", 1) for name in ("taken", "lost"))
    for key in (taken, lost):
        _dead_schedulers_pod(served, key, RUNNING)
    driven = Driven(served, kind, creations=2, cleanups=2)
    listed = [
        pod
        for selector in driven.core.adoption_selectors(["9"])
        for pod in served.cluster.list_pods(
            NS, label_selector=selector.label_selector, field_selector=selector.field_selector
        )["items"]
    ]
    served.cluster.set_status(NS, "taken", {**RUNNING, "podIP": "10.0.0.9"})  # a new version
    served.cluster.patch_pod(NS, "lost", {"metadata": {"labels": {"airflow-worker": "5"}}})
    driven.core.adopt(listed, expected_task_keys=[taken, lost])
    while not isinstance(driven.run(), NothingToDo):
        pass
    assert driven.core.is_running(taken)
    assert driven.core.not_adopted([taken, lost]) == []  # the rival runs "lost"
    assert [failed.key for failed in driven.core.take_failed_relabels()] == [lost]
    owners = {
        name: (served.cluster.pod(NS, name) or {})["metadata"]["labels"]["airflow-worker"]
        for name in ("taken", "lost")
    }
    assert owners == {"taken": "1", "lost": "5"}
    driven.close()


@pytest.mark.parametrize("kind", DRIVERS)
def test_one_adopt_call_lists_adopts_and_names_exactly_what_to_run_again(
    served: Served, kind: str
) -> None:
    # Issue 30, item 1: a Succeeded pod is reported (never run again), a live one adopted,
    # a relabel failing for a transient reason retried on the next pass, and only the
    # workload with no pod anywhere is run again.
    running, finished, flaky, lost = (
        TaskInstanceKey("etl", name, "manual__1", 1)
        for name in ("running", "finished", "flaky", "lost")
    )
    for key, status in ((running, RUNNING), (finished, SUCCEEDED), (flaky, RUNNING)):
        _dead_schedulers_pod(served, key, status)
    driven = Driven(served, kind, creations=2, cleanups=2)
    expected = [running, finished, flaky, lost]
    for key in expected:
        driven.db.add_task(key)
    served.cluster.fail_next("patch_pod", 503)  # the first relabel: "finished" is listed last
    adoption = driven.adopt(["9"], expected)
    assert adoption.rerun == (lost,)
    assert not adoption.failed_relabels
    assert len(adoption.retrying) == 1
    assert isinstance(driven.run(), NothingToDo)  # the next pass: relabelled after all
    assert {key for key in expected if driven.core.is_running(key)} == {running, flaky}
    assert served.cluster.pod(NS, "finished") is None  # reported from its pod, cleaned up
    owners = {pod["metadata"]["labels"]["airflow-worker"] for pod in served.cluster.pods()}
    assert owners == {"1"}
    driven.close()


@pytest.mark.parametrize("kind", DRIVERS)
def test_one_adopt_call_takes_generic_workloads_expected(served: Served, kind: str) -> None:
    # Issue 30, item 5: an executor with no Airflow names its unfinished workloads.
    running, finished, lost = (GenericKey(name) for name in ("running", "finished", "lost"))
    for key, status in ((running, RUNNING), (finished, SUCCEEDED)):
        pod = construct_generic_pod(
            workload_id=key.id,
            namespace=NS,
            scheduler_job_id="9",
            kube_image="jobs:1",
            args=["run", key.id],
            pod_id=key.id,
        )
        served.cluster.create_pod(NS, pod)
        served.cluster.set_status(NS, key.id, status)
    driven = Driven(served, kind, creations=2, cleanups=2)
    expected = [running, finished, lost]
    if kind == "threads":
        adoption = driven.pool.adopt(T0, dead_scheduler_ids=["9"], expected_generic_keys=expected)
    else:
        adoption = driven.loop.run_until_complete(
            driven.aio.adopt(T0, dead_scheduler_ids=["9"], expected_generic_keys=expected)
        )
    assert adoption.rerun == (lost,)
    assert adoption.plan.adopted == {running}
    assert isinstance(driven.run(), NothingToDo)
    assert driven.core.running == (running,)
    assert served.cluster.pod(NS, "finished") is None  # reported from its pod, cleaned up
    assert [event.state for event in driven.db.terminal_reports(finished)] == [
        CallbackState.SUCCESS
    ]
    driven.close()


def _dead_schedulers_pod(served: Served, key: TaskInstanceKey, status: dict[str, Any]) -> None:
    """A pod of ``key`` made by scheduler 9 (dead), named after its task, in ``status``."""
    served.cluster.create_pod(
        NS,
        construct_task_pod(
            namespace=NS,
            scheduler_job_id="9",
            pod_id=key.task_id,
            dag_id=key.dag_id,
            task_id=key.task_id,
            run_id=key.run_id,
            try_number=key.try_number,
            kube_image="airflow:3.3.2",
            args=["python", "-m", "x"],
            airflow_version="3.3.2",
        ),
    )
    served.cluster.set_status(NS, key.task_id, status)

"""The kit's executor loop (:mod:`k8s_workloads.testing.driver`): a core run against the
fake cluster and database, one request at a time or many in flight."""

from __future__ import annotations

import datetime
import random

from k8s_workloads.decisions.actions import DeletePod
from k8s_workloads.executor import CreatePod, ExecutorConfig, ExecutorCore
from k8s_workloads.keys import TaskInstanceKey
from k8s_workloads.states import KubernetesJob, TaskInstanceState
from k8s_workloads.testing import CoreDriver, FakeAirflowDB, FakeCluster
from tests.support.event_factory import SUCCEEDED

NS = "airflow"
T0 = datetime.datetime(2026, 6, 7, tzinfo=datetime.timezone.utc)


def driven(count: int) -> tuple[CoreDriver, list[TaskInstanceKey]]:
    core = ExecutorCore(
        ExecutorConfig(
            scheduler_id="1",
            namespace=NS,
            airflow_version="3.3.2",
            kube_image="airflow:3.3.2",
            creation_batch_size=100,
            max_concurrent_creations=4,
            rng=random.Random(1),
        )
    )
    db = FakeAirflowDB()
    driver = CoreDriver(core, FakeCluster(now=T0, namespaces=[NS]), db)
    keys = [TaskInstanceKey("etl", f"t{number}", "manual__1", 1) for number in range(count)]
    for key in keys:
        db.add_task(key)
        core.submit(KubernetesJob(key, ["python", "-m", "x"]))
    return driver, keys


def finish(driver: CoreDriver, keys: list[TaskInstanceKey]) -> None:
    for key in keys:
        driver.db.task_finished(key, TaskInstanceState.SUCCESS)
    for name in driver.cluster.pod_names():
        driver.cluster.set_status(NS, name, SUCCEEDED)
    driver.deliver(now=T0)


def test_a_pass_creates_the_pods_and_a_finished_pod_is_reported_and_deleted() -> None:
    driver, keys = driven(3)
    report = driver.run_pass(T0)
    assert [type(request) for request in report.performed] == [CreatePod] * 3
    assert report.failed == []
    assert len(driver.cluster.pod_names()) == 3
    finish(driver, keys)
    report = driver.run_pass(T0)
    assert sum(isinstance(request, DeletePod) for request in report.performed) == 3
    assert driver.cluster.pod_names() == []  # not bound to a node: gone at once
    assert all(driver.db.reported(key) == [TaskInstanceState.SUCCESS] for key in keys)


def test_a_failed_creation_goes_to_the_core_and_is_in_the_report() -> None:
    driver, _keys = driven(2)
    driver.cluster.fail_next("create_pod", 403, message="forbidden")
    report = driver.run_pass(T0)
    ((request, error),) = report.failed
    assert isinstance(request, CreatePod)
    assert getattr(error, "status", None) == 403
    assert driver.db.reported(request.key) == [TaskInstanceState.FAILED]  # the core's rule
    assert len(driver.cluster.pod_names()) == 1


def test_many_requests_in_flight_complete_in_any_order_to_the_same_end() -> None:
    for seed in range(3):
        driver, keys = driven(6)
        report = driver.run_pass_concurrently(T0, order=random.Random(seed))
        assert len(report.performed) == 6
        assert driver.in_flight == ()
        assert len(driver.cluster.pod_names()) == 6
        finish(driver, keys)
        driver.run_pass_concurrently(T0, order=random.Random(seed))
        assert driver.cluster.pod_names() == []

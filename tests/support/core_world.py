"""The executor core's test world: an :class:`ExecutorCore` over the kit's fake cluster and
database, driven by the kit's :class:`CoreDriver` at a clock the test moves; the keys its
tests submit."""

from __future__ import annotations

import datetime
import random
import uuid
from typing import Any

from k8s_workloads.executor import ExecutorConfig, ExecutorCore, Handled
from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.pods.codec import annotations_to_key
from k8s_workloads.states import KubernetesJob
from k8s_workloads.testing import CoreDriver, FakeAirflowDB, FakeCluster

NS = "airflow"
VERSION = "3.3.2"
T0 = datetime.datetime(2026, 6, 7, tzinfo=datetime.timezone.utc)
TOKEN = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu.c2ln"  # noqa: S105 - a fake token to find


def task(name: str = "load", try_number: int = 1) -> TaskInstanceKey:
    return TaskInstanceKey("etl", name, "manual__1", try_number)


def callback(number: int = 1) -> CallbackKey:
    return CallbackKey(str(uuid.UUID(int=number)))


class World:
    """A core, the fake cluster and database, and the clock."""

    def __init__(self, *, scheduler_id: str = "1", **options: Any) -> None:
        options.setdefault("creation_batch_size", 100)
        self.config = ExecutorConfig(
            scheduler_id=scheduler_id,
            namespace=NS,
            airflow_version=VERSION,
            kube_image="airflow:3.3.2",
            rng=random.Random(7),
            **options,
        )
        self.cluster = FakeCluster(now=T0, namespaces=[NS])
        self.db = FakeAirflowDB()
        self.core = ExecutorCore(self.config)
        self.driver = CoreDriver(self.core, self.cluster, self.db)
        self.now = T0
        self.handled: list[Handled] = []
        self.core.on_decision = self.handled.append

    def submit(self, key: WorkloadKey, command: list[str] | None = None) -> None:
        if isinstance(key, TaskInstanceKey):
            self.db.add_task(key)
        elif isinstance(key, CallbackKey):
            self.db.add_callback(key)
        else:
            self.db.add_generic(key)
        self.core.submit(KubernetesJob(key, command or ["python", "-m", "x"]))

    def sync(self) -> list[Any]:
        """Deliver the watch events, then one pass; the requests performed."""
        self.driver.deliver(now=self.now)
        return self.driver.run_pass(self.now).performed

    def pod_of(self, key: WorkloadKey) -> str:
        pods = [
            pod
            for pod in self.cluster.pods()
            if self.key_of(pod) == key and "deletionTimestamp" not in pod["metadata"]
        ]
        assert pods, f"no pod for {key!r}"
        newest = max(pods, key=lambda pod: pod["metadata"]["uid"])  # uids count up
        return str(newest["metadata"]["name"])

    @staticmethod
    def key_of(pod: dict[str, Any]) -> WorkloadKey:
        metadata = pod["metadata"]
        return annotations_to_key(
            metadata["annotations"], metadata["labels"], airflow_version=VERSION
        )

    def status(self, key: WorkloadKey, status: dict[str, Any]) -> None:
        self.cluster.set_status(NS, self.pod_of(key), status)

    def finished(self, key: WorkloadKey, status: dict[str, Any]) -> None:
        """Submit ``key``, create its pod, give the pod ``status`` and deliver the watch's
        events (no pass run after them: the test runs it)."""
        self.submit(key)
        self.sync()
        self.status(key, status)
        self.driver.deliver(now=self.now)


def kinds(requests: list[Any]) -> list[str]:
    return [type(request).__name__ for request in requests]

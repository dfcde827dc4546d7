"""A core against the kit's API server over real HTTP on 127.0.0.1, driven by either of
the I/O layer's drivers: what the tests of :mod:`k8s_workloads.io` share."""

from __future__ import annotations

import asyncio
import datetime
import random
import threading
from typing import TYPE_CHECKING, Any

from kubernetes import client as k8s

from k8s_workloads.executor import ExecutorConfig, ExecutorCore, NothingToDo, ReadStates, Waiting
from k8s_workloads.io.kube import FAILURES, KubeCalls
from k8s_workloads.io.pool import PoolDriver
from k8s_workloads.keys import TaskInstanceKey, WorkloadKey
from k8s_workloads.pods.labels import watcher_selector
from k8s_workloads.states import KubernetesJob
from k8s_workloads.testing import FakeAirflowDB, FakeApiServer, FakeCluster

if TYPE_CHECKING:
    from k8s_workloads.decisions.actions import EmitEvent
    from k8s_workloads.executor import Adoption

NS = "airflow"
SPEC = {"containers": [{"name": "base", "image": "apache/airflow:3.3.2"}]}  # a valid pod's
T0 = datetime.datetime(2026, 6, 7, tzinfo=datetime.timezone.utc)


class Served:
    def __init__(self, latency: float = 0.0) -> None:
        self.cluster = FakeCluster(now=T0, namespaces=[NS])
        self.server = FakeApiServer(self.cluster, lifetime=120, latency=latency).start()
        self.api_client: Any = k8s.ApiClient(k8s.Configuration(host=self.server.url))
        self.api = k8s.CoreV1Api(self.api_client)

    def close(self) -> None:
        self.api_client.close()
        self.server.stop()


class Driven:
    """A core driven against the kit's server by one of the two shipped drivers: the
    ``kubernetes`` client on a thread pool, or ``kubernetes_asyncio`` on an event loop."""

    def __init__(self, served: Served, kind: str, *, creations: int, cleanups: int) -> None:
        self.core = new_core(creations=creations, cleanups=cleanups)
        self.db = FakeAirflowDB()
        self.kind = kind
        self._lock = threading.Lock()
        if kind == "threads":
            calls = KubeCalls(served.api, pool_size=creations + cleanups)
            perform = calls.performer(read_states=self._read, emit=self._emit)
            self.pool = PoolDriver(self.core, perform, failures=FAILURES)
        else:
            self.loop = asyncio.new_event_loop()
            self.loop.run_until_complete(self._connect(served.server.url))

    async def _connect(self, url: str) -> None:
        from kubernetes_asyncio import client as k8s_aio  # noqa: PLC0415 - the extra

        from k8s_workloads.io.aio import AsyncDriver, AsyncKubeCalls  # noqa: PLC0415

        self.aio_client: Any = k8s_aio.ApiClient(k8s_aio.Configuration(host=url))
        calls = AsyncKubeCalls(k8s_aio.CoreV1Api(self.aio_client))
        self.aio = AsyncDriver(self.core, calls.performer(read_states=self._read, emit=self._emit))

    def _read(self, request: ReadStates) -> object:
        return self.db.read_states(request.keys)

    def _emit(self, event: EmitEvent) -> None:
        with self._lock:
            self.db.record(event)

    def run(self, *, seconds: float | None = None) -> Waiting | NothingToDo:
        if self.kind == "threads":
            return self.pool.run(T0, seconds=seconds)
        return self.loop.run_until_complete(self.aio.run(T0, seconds=seconds))

    def adopt(self, dead: list[str], expected: list[TaskInstanceKey]) -> Adoption:
        if self.kind == "threads":
            return self.pool.adopt(T0, dead_scheduler_ids=dead, expected_task_keys=expected)
        return self.loop.run_until_complete(
            self.aio.adopt(T0, dead_scheduler_ids=dead, expected_task_keys=expected)
        )

    @property
    def in_flight(self) -> int:
        return self.pool.in_flight if self.kind == "threads" else self.aio.in_flight

    def close(self) -> None:
        if self.kind == "threads":
            self.pool.close()
            return
        self.loop.run_until_complete(self.aio.aclose())
        self.loop.run_until_complete(self.aio_client.close())
        self.loop.close()


DRIVERS = ["threads", "asyncio"]


def tasks(db: FakeAirflowDB, core: ExecutorCore, count: int) -> list[WorkloadKey]:
    keys: list[WorkloadKey] = []
    for number in range(count):
        key = TaskInstanceKey("etl", f"t{number}", "manual__1", 1)
        db.add_task(key)
        core.submit(KubernetesJob(key, ["python", "-m", "x"]))
        keys.append(key)
    return keys


def feed_watch(served: Served, core: ExecutorCore, version: str | None) -> None:
    watch = served.cluster.watch(
        NS, label_selector=watcher_selector("1").label_selector, resource_version=version
    )
    for line in watch.lines():
        core.feed_event(line, now=T0)
    served.cluster.stop_watch(watch)


def new_core(*, creations: int = 2, cleanups: int = 2) -> ExecutorCore:
    """A core of this module's settings, without a server: for drivers with a stand-in
    ``perform``."""
    return ExecutorCore(
        ExecutorConfig(
            scheduler_id="1",
            namespace=NS,
            airflow_version="3.3.2",
            kube_image="airflow:3.3.2",
            creation_batch_size=1000,
            max_concurrent_creations=creations,
            max_concurrent_cleanups=cleanups,
            rng=random.Random(3),
        )
    )

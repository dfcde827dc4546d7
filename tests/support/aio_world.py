"""A core driven on an event loop against the kit's API server over real HTTP:
``kubernetes_asyncio``'s client, :class:`~k8s_workloads.io.aio.AsyncDriver` and
:class:`~k8s_workloads.io.aio.AsyncWatch`, for the tests of :mod:`k8s_workloads.io.aio`."""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING, Any

from k8s_workloads.pods.codec import annotations_to_key
from k8s_workloads.testing import FakeAirflowDB

if TYPE_CHECKING:
    from collections.abc import Callable

    from k8s_workloads.decisions.actions import EmitEvent
    from k8s_workloads.executor import ExecutorCore, ReadStates, Request
    from k8s_workloads.io.aio import AsyncDriver, AsyncWatch
    from k8s_workloads.keys import WorkloadKey
    from tests.support.io_world import Served


async def until(condition: Callable[[], object], *, seconds: float = 30.0) -> None:
    """Yield to the loop until ``condition()`` holds (an AssertionError after ``seconds``)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "never happened"
        await asyncio.sleep(0.001)


def pods_of(served: Served) -> dict[WorkloadKey, list[str]]:
    """The live pods of each workload on the server (deleted ones left out)."""
    pods: dict[WorkloadKey, list[str]] = {}
    for pod in served.cluster.pods():
        metadata = pod["metadata"]
        if "deletionTimestamp" in metadata:
            continue
        annotations, labels = metadata["annotations"], metadata["labels"]
        key = annotations_to_key(annotations, labels, airflow_version="3.3.2")
        pods.setdefault(key, []).append(metadata["name"])
    return pods


class Looped:
    """One executor on the loop: its core, the kit's database, the client, the driver and
    the watch (made by :meth:`connect`, inside the loop); ``read_at`` is when each key's
    state was first read (the first request a finished pod's result makes)."""

    def __init__(self, served: Served, core: ExecutorCore, db: FakeAirflowDB | None = None) -> None:
        self.served = served
        self.core = core
        self.db = db or FakeAirflowDB()
        self.read_at: dict[WorkloadKey, float] = {}
        self.slow: Callable[[Request], float] = lambda _request: 0.0

    async def connect(self) -> None:
        from kubernetes_asyncio import client as k8s_aio  # noqa: PLC0415 - the extra

        from k8s_workloads.io.aio import AsyncDriver, AsyncKubeCalls, AsyncWatch  # noqa: PLC0415

        self.api_client: Any = k8s_aio.ApiClient(k8s_aio.Configuration(host=self.served.server.url))
        self.api: Any = k8s_aio.CoreV1Api(self.api_client)
        self.calls = AsyncKubeCalls(self.api)
        perform = self.calls.performer(read_states=self._read, emit=self._emit)

        async def slowed(request: Request) -> object:
            delay = self.slow(request)
            if delay:
                await asyncio.sleep(delay)
            return await perform(request)

        self.driver: AsyncDriver = AsyncDriver(self.core, slowed)
        self.watch: AsyncWatch = AsyncWatch(self.driver, self.api, rng=random.Random(5))
        self.watch.first_backoff = 0.01
        self.versions: list[str | None] = []
        watched = self.api.list_namespaced_pod

        def spied(namespace: str, **kwargs: Any) -> Any:
            if kwargs.get("watch"):
                self.versions.append(kwargs.get("resource_version"))
            return watched(namespace, **kwargs)

        self.api.list_namespaced_pod = spied  # type: ignore[method-assign]

    def _read(self, request: ReadStates) -> object:
        now = asyncio.get_running_loop().time()
        for key in request.keys:
            self.read_at.setdefault(key, now)
        return self.db.read_states(request.keys)

    def _emit(self, event: EmitEvent) -> None:
        self.db.record(event)

    def start(self) -> asyncio.Future[Any]:
        """The watch and the driver, running until the driver stops or aborts."""
        return asyncio.gather(self.watch.run(), self.driver.run_forever())

    async def close(self) -> None:
        await self.driver.aclose()
        await self.api_client.close()

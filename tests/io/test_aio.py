"""``kubernetes_asyncio`` (:mod:`k8s_workloads.io.aio`): its calls against the kit's API
server (lists in pages, a Secret before its pod, the caller's own requests) and its
driver with a stand-in ``perform`` (a bug reported and raised). (The driver against the
server with the thread pool's beside it: ``test_inflight``.)"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from k8s_workloads.actions import EmitEvent
from k8s_workloads.executor import CreatePod, NothingToDo, ReadPod, ReadStates, Request
from k8s_workloads.keys import TaskInstanceKey
from k8s_workloads.states import TaskInstanceState
from k8s_workloads.testing import FakeAirflowDB
from tests.support.event_factory import SUCCEEDED
from tests.support.io_world import NS, SPEC, T0, Served, feed_watch, new_core, tasks

KEY = TaskInstanceKey("etl", "t", "manual__1", 1)


def test_lists_are_read_in_pages_and_a_secret_is_created_before_its_pod(served: Served) -> None:
    from kubernetes_asyncio import client as k8s_aio  # noqa: PLC0415 - the extra

    from k8s_workloads.io.aio import FAILURES, AsyncKubeCalls  # noqa: PLC0415

    for number in range(5):
        served.cluster.create_pod(
            NS, {"metadata": {"name": f"p{number}", "labels": {"a": "b"}}, "spec": SPEC}
        )

    async def scenario() -> tuple[Any, ...]:
        api_client = k8s_aio.ApiClient(k8s_aio.Configuration(host=served.server.url))
        try:
            calls = AsyncKubeCalls(k8s_aio.CoreV1Api(api_client), page_size=2)
            listed = await calls.list_pods(NS, label_selector="a=b")
            assert listed[1] == served.cluster.resource_version
            served.cluster.fail_next("create_pod", 500)
            secret = {"metadata": {"name": "s1"}, "stringData": {"a": "b"}}
            pod = {"metadata": {"name": "p9"}, "spec": SPEC}
            with pytest.raises(FAILURES):
                await calls.perform(CreatePod(KEY, NS, pod, secret))
            emitted: list[EmitEvent] = []
            perform = calls.performer(
                read_states=lambda request: dict.fromkeys(request.keys, "queued"),
                emit=emitted.append,
            )
            states = await perform(ReadStates((KEY,)))
            await perform(EmitEvent(KEY, TaskInstanceState.SUCCESS))
            return listed, states, emitted
        finally:
            await api_client.close()

    (pods, version), states, emitted = asyncio.run(scenario())
    assert sorted(pod["metadata"]["name"] for pod in pods) == [f"p{n}" for n in range(5)]
    assert version is not None
    assert served.server.stats.count("LIST", "pods") == 3  # pages of two
    assert served.cluster.secret(NS, "s1") is not None  # made first; the core deletes it
    assert served.cluster.pod(NS, "p9") is None
    assert states == {KEY: "queued"}
    assert emitted == [EmitEvent(KEY, TaskInstanceState.SUCCESS)]


def test_a_bug_in_perform_is_reported_failed_then_raised() -> None:
    from k8s_workloads.io.aio import AsyncDriver  # noqa: PLC0415 - the extra

    core = new_core(creations=1)
    tasks(FakeAirflowDB(), core, 1)

    async def perform(_request: Request) -> object:
        raise RuntimeError("a bug, not an API error")

    async def scenario() -> None:
        driver = AsyncDriver(core, perform)
        try:
            with pytest.raises(RuntimeError, match="a bug"):
                await driver.run(T0)
        finally:
            await driver.aclose()
        assert driver.in_flight == 0

    asyncio.run(scenario())
    assert core.in_flight == ()  # reported: nothing is left in flight for ever


def test_a_read_back_answers_the_pod_or_none(served: Served) -> None:
    from kubernetes_asyncio import client as k8s_aio  # noqa: PLC0415 - the extra

    from k8s_workloads.io.aio import AsyncKubeCalls  # noqa: PLC0415

    served.cluster.create_pod(NS, {"metadata": {"name": "p1"}, "spec": SPEC})

    async def scenario() -> tuple[object, object]:
        api_client = k8s_aio.ApiClient(k8s_aio.Configuration(host=served.server.url))
        try:
            calls = AsyncKubeCalls(k8s_aio.CoreV1Api(api_client))
            return await calls.perform(ReadPod(KEY, NS, "p1")), await calls.perform(
                ReadPod(KEY, NS, "gone")
            )
        finally:
            await api_client.close()

    found, missing = asyncio.run(scenario())
    assert isinstance(found, dict)
    assert found["metadata"]["name"] == "p1"
    assert missing is None


def _lost_answer(lost: str) -> BaseException:
    """What kubernetes_asyncio raises when the answer to a sent creation is lost, as each
    way of losing it gives (none an ``OSError``)."""
    if lost == "disconnected":
        return aiohttp.ServerDisconnectedError()
    return aiohttp.ClientPayloadError("Response payload is not completed")


@pytest.mark.parametrize("lost", ["reset", "disconnected", "cut short"])
def test_a_creation_whose_connection_is_lost_runs_once_and_is_reported_once(
    served: Served, lost: str
) -> None:
    """The pod is stored and its answer lost: by the server resetting the connection (an
    ``OSError``), or as the server disconnecting or cutting the body short (aiohttp's own
    errors, raised here after the server stored the pod). With the default ``FAILURES``
    the driver hands each to the core, which reads the pod back: one pod, one report."""
    from kubernetes_asyncio import client as k8s_aio  # noqa: PLC0415 - the extra

    from k8s_workloads.io.aio import AsyncDriver, AsyncKubeCalls  # noqa: PLC0415

    core, db = new_core(creations=2), FakeAirflowDB()
    (key,) = tasks(db, core, 1)
    assert isinstance(key, TaskInstanceKey)
    version = served.cluster.resource_version
    if lost == "reset":
        served.server.drop_next_create_answer("pods")

    async def scenario() -> None:
        api_client = k8s_aio.ApiClient(k8s_aio.Configuration(host=served.server.url))
        calls = AsyncKubeCalls(k8s_aio.CoreV1Api(api_client))
        perform = calls.performer(read_states=lambda r: db.read_states(r.keys), emit=db.record)
        losses = [] if lost == "reset" else [_lost_answer(lost)]

        async def losing(request: Request) -> object:
            answer = await perform(request)
            if isinstance(request, CreatePod) and losses:
                raise losses.pop()  # stored by the server; the answer never arrives
            return answer

        driver = AsyncDriver(core, losing)
        try:
            assert isinstance(await driver.run(T0), NothingToDo)
            (pod,) = served.cluster.pods()
            db.task_finished(key, TaskInstanceState.SUCCESS)
            served.cluster.set_status(NS, pod["metadata"]["name"], SUCCEEDED)
            feed_watch(served, core, version)
            assert isinstance(await driver.run(T0), NothingToDo)
        finally:
            await driver.aclose()
            await api_client.close()

    asyncio.run(scenario())
    stats = served.server.stats
    assert stats.count("POST", "pods") == 1  # sent once: the read back found it
    assert stats.count("GET", "pods") == 1
    assert stats.answers_dropped == (1 if lost == "reset" else 0)
    assert db.reported(key) == [TaskInstanceState.SUCCESS]
    assert served.cluster.pods() == []  # cleaned up
    assert core.running == ()

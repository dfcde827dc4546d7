"""``kubernetes_asyncio`` (:mod:`k8s_workloads.io.aio`): its calls against the kit's API
server (lists in pages, a Secret before its pod, the caller's own requests) and its
driver with a stand-in ``perform`` (a bug reported and raised). (The driver against the
server with the thread pool's beside it: ``test_inflight``.)"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import attrs
import pytest

from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.actions import DeletePod, EmitEvent
from k8s_workloads.executor import (
    CreatePod,
    ExecutorConfig,
    ExecutorCore,
    ListPods,
    NothingToDo,
    ReadPod,
    ReadStates,
    Request,
)
from k8s_workloads.keys import TaskInstanceKey, WorkloadKey
from k8s_workloads.states import KubernetesJob, TaskInstanceState
from k8s_workloads.testing import FakeAirflowDB
from tests.support.aio_world import Looped, pods_of, until
from tests.support.event_factory import RUNNING, SUCCEEDED
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


# --- the watch and the driver together, against the kit's server --------------------------


def _job(key: WorkloadKey) -> KubernetesJob[Any]:
    return KubernetesJob(key, ["python", "-m", "x"])


def test_an_event_wakes_the_driver_within_milliseconds(served: Served) -> None:
    # Issue 30, item 6: the driver waits on its calls and a wake-up, so a pod's result is
    # taken up as its event arrives, not at the next slice of a polling loop.
    looped = Looped(served, new_core(creations=8, cleanups=8))
    keys = [TaskInstanceKey("etl", f"t{number}", "manual__1", 1) for number in range(20)]
    latencies: list[float] = []

    async def scenario() -> None:
        await looped.connect()
        running = looped.start()
        for key in keys:
            assert isinstance(key, TaskInstanceKey)
            looped.db.add_task(key)
            looped.driver.submit(_job(key))
        await until(lambda: len(pods_of(served)) == len(keys))
        loop = asyncio.get_running_loop()
        for pod_key, (name,) in pods_of(served).items():
            assert isinstance(pod_key, TaskInstanceKey)
            looped.db.task_finished(pod_key, TaskInstanceState.SUCCESS)
            finished = loop.time()
            served.cluster.set_status(NS, name, SUCCEEDED)
            await until(lambda pod_key=pod_key: pod_key in looped.read_at)  # type: ignore[misc]
            latencies.append(looped.read_at[pod_key] - finished)
        await until(lambda: all(looped.db.reported(key) for key in keys))
        looped.driver.stop()
        await running
        await looped.close()

    asyncio.run(scenario())
    for key in keys:
        assert looped.db.reported(key) == [TaskInstanceState.SUCCESS]
    assert served.cluster.pods() == []
    latencies.sort()
    # The server's watch looks for changes every 5 ms; a 50 ms slice would add up to 50.
    assert latencies[len(latencies) // 2] < 0.05, latencies
    assert looped.core.in_flight == ()


def test_the_watch_resumes_after_a_reset_and_after_a_410(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    looped = Looped(served, new_core())
    first, second = (TaskInstanceKey("etl", name, "manual__1", 1) for name in ("a", "b"))

    async def finish(key: TaskInstanceKey) -> None:
        (name,) = pods_of(served)[key]
        looped.db.task_finished(key, TaskInstanceState.SUCCESS)
        served.cluster.set_status(NS, name, SUCCEEDED)
        await until(lambda: looped.db.reported(key))

    async def scenario() -> None:
        await looped.connect()
        running = looped.start()
        for key in (first, second):
            looped.db.add_task(key)
            looped.driver.submit(_job(key))
        await until(lambda: len(pods_of(served)) == 2 and looped.watch.lines >= 2)
        served.server.reset_connections()  # the API server restarts
        await until(lambda: served.server.stats.count("WATCH", "pods") == 2)
        await finish(first)  # read by the new watch
        served.cluster.expire_watches()  # the version is gone: a 410 in the stream
        await until(lambda: served.server.stats.count("WATCH", "pods") == 3)
        await finish(second)
        looped.driver.stop()
        await running
        await looped.close()

    with caplog.at_level(logging.INFO, logger="k8s_workloads.io.aio"):
        asyncio.run(scenario())
    # The reset is one warning naming the server and the error, then one info line.
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.startswith(f"The pod watch of namespace {NS} at {served.server.url} failed:")
    (info,) = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert info.endswith("is established again after 1 failed attempts")
    assert served.server.stats.count("LIST", "pods") == 1  # the re-list after the 410
    fresh, resumed, relisted = looped.versions
    assert fresh is None  # a new core watches from now
    assert resumed is not None  # from the last version it saw
    assert relisted is not None  # from the re-list's version
    assert int(relisted) > int(resumed)
    for key in (first, second):
        assert looped.db.reported(key) == [TaskInstanceState.SUCCESS]


def test_a_silent_watch_is_replaced_after_its_read_timeout(served: Served) -> None:
    looped = Looped(served, new_core())
    key = TaskInstanceKey("etl", "a", "manual__1", 1)

    async def scenario() -> None:
        await looped.connect()
        looped.watch.read_timeout = 0.5
        running = looped.start()
        looped.db.add_task(key)
        looped.driver.submit(_job(key))
        await until(lambda: pods_of(served) and looped.watch.lines >= 1)
        served.server.stall()  # no bytes on any open connection, until the end
        lines = looped.watch.lines
        (name,) = pods_of(served)[key]
        served.cluster.set_status(NS, name, RUNNING)
        await until(lambda: looped.watch.lines > lines, seconds=10)  # on a new connection
        assert served.server.stats.count("WATCH", "pods") == 2
        looped.driver.abort()  # the driver's pooled connections are held too
        await running
        served.server.unstall()
        await looped.close()

    asyncio.run(scenario())


def test_after_an_abort_a_new_core_adopts_and_every_workload_has_one_pod(slow: Served) -> None:
    # A crash test: abort mid-run (creations on the wire, nothing reported after), then
    # scheduler 2 adopts what scheduler 1's calls made and runs what is left.
    keys = [TaskInstanceKey("etl", f"t{number}", "manual__1", 1) for number in range(30)]
    db = FakeAirflowDB()
    dead = Looped(slow, new_core(creations=8, cleanups=8), db)
    config = attrs.evolve(dead.core.config, scheduler_id="2")
    alive = Looped(slow, ExecutorCore(config), db)

    async def scenario() -> None:
        await dead.connect()
        running = dead.start()
        for key in keys:
            db.add_task(key)
            dead.driver.submit(_job(key))
        await until(lambda: len(slow.cluster.pods()) >= 10)
        dead.driver.abort()
        await running
        left = dead.core.in_flight
        assert left  # creations were on the wire: the core never heard of them
        await dead.close()
        await asyncio.sleep(0.3)  # what reached the server is stored meanwhile
        assert dead.core.in_flight == left  # nothing was reported after the abort
        await alive.connect()
        adoption = await alive.driver.adopt(
            alive.driver.clock(), dead_scheduler_ids=["1"], expected_task_keys=keys
        )
        assert adoption.failed_relabels == ()
        running = alive.start()
        for rerun in adoption.rerun:  # no pod anywhere: the creations that never landed
            alive.driver.submit(_job(rerun))
        await until(lambda: len(pods_of(slow)) == len(keys))
        for pod_key, (name,) in pods_of(slow).items():
            assert isinstance(pod_key, TaskInstanceKey)
            db.task_finished(pod_key, TaskInstanceState.SUCCESS)
            slow.cluster.set_status(NS, name, SUCCEEDED)
        await until(lambda: all(db.reported(key) for key in keys) and not slow.cluster.pods())
        alive.driver.stop()
        await running
        await alive.close()

    asyncio.run(scenario())
    for key in keys:
        assert db.reported(key) == [TaskInstanceState.SUCCESS]  # one pod each, reported once
    assert slow.server.stats.count("POST", "pods") == len(keys)


def test_a_retried_creation_goes_while_an_unrelated_deletion_is_slow(served: Served) -> None:
    config = attrs.evolve(
        new_core().config,
        decisions=DecisionConfig(task_publish_max_retries=3, unreachable_backoff_seconds=(0.05, 1)),
    )
    looped = Looped(served, ExecutorCore(config))
    done, retried = (TaskInstanceKey("etl", name, "manual__1", 1) for name in ("done", "retried"))
    looped.slow = lambda request: 5.0 if isinstance(request, DeletePod) else 0.0
    timings: dict[str, float] = {}

    async def scenario() -> None:
        await looped.connect()
        running = looped.start()
        loop = asyncio.get_running_loop()
        looped.db.add_task(done)
        looped.driver.submit(_job(done))
        await until(lambda: done in pods_of(served))
        (name,) = pods_of(served)[done]
        looped.db.task_finished(done, TaskInstanceState.SUCCESS)
        served.cluster.set_status(NS, name, SUCCEEDED)
        await until(lambda: any(isinstance(r, DeletePod) for r in looped.core.in_flight))
        served.cluster.fail_next("create_pod", 403, message="pods is forbidden: exceeded quota")
        looped.db.add_task(retried)
        timings["submitted"] = loop.time()
        looped.driver.submit(_job(retried))
        await until(lambda: retried in pods_of(served), seconds=3)
        timings["created"] = loop.time()
        assert any(isinstance(r, DeletePod) for r in looped.core.in_flight)  # still slow
        looped.driver.abort()  # not waiting for it
        await running
        await looped.close()

    asyncio.run(scenario())
    assert served.server.stats.count("POST", "pods") == 3  # done, the quota 403, the retry
    assert timings["created"] - timings["submitted"] < 1.0  # its backoff, not the deletion


class _Refused:
    """A watch call answered 410 (the version is gone), as ``_preload_content=False``
    gives it: not raised, the status and the body to read."""

    status, reason, headers = 410, "Gone", {"Content-Type": "application/json"}
    released = closed = False

    async def read(self) -> bytes:
        return b'{"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}'

    def release(self) -> None:
        self.released = True

    def close(self) -> None:
        self.closed = True


def test_a_410_answer_to_the_watch_call_is_read_as_its_error_event() -> None:
    from k8s_workloads.io.aio import AsyncDriver, AsyncWatch  # noqa: PLC0415 - the extra

    core = new_core()
    refused = _Refused()
    asked: list[dict[str, Any]] = []

    class Api:
        async def list_namespaced_pod(self, _namespace: str, **kwargs: Any) -> _Refused:
            asked.append(kwargs)
            return refused

    async def perform(_request: Request) -> object:
        raise AssertionError("not driven here")

    async def scenario() -> None:
        watch = AsyncWatch(AsyncDriver(core, perform), Api())
        running = asyncio.ensure_future(watch.run())
        await until(lambda: core.is_relisting)  # the core asks for a re-list
        await asyncio.sleep(0.05)
        assert len(asked) == 1  # and the watch waits for it, not calling again
        watch.stop()
        await running

    asyncio.run(scenario())
    assert refused.released
    assert asked[0]["allow_watch_bookmarks"] is True
    assert asked[0]["label_selector"] == "airflow-worker=1,airflow_executor_done!=True"


class _Streamed:
    """A watch call answered 200, its lines given by the test as it goes (``send``); it
    ends when closed."""

    status, reason = 200, "OK"

    def __init__(self) -> None:
        self.lines: asyncio.Queue[bytes] = asyncio.Queue()
        self.closed = self.released = False
        self.content = self

    def send(self, event: dict[str, Any]) -> None:
        self.lines.put_nowait(json.dumps(event).encode() + b"\n")

    async def iter_any(self) -> AsyncIterator[bytes]:
        while not self.closed:
            yield await self.lines.get()

    def release(self) -> None:
        self.released = True

    def close(self) -> None:
        self.closed = True


def _mark(version: str) -> dict[str, Any]:
    return {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": version}}}


def test_each_watched_namespace_has_its_watch_resuming_from_its_own_list() -> None:
    from k8s_workloads.io.aio import AsyncDriver, AsyncWatch  # noqa: PLC0415 - the extra

    core = ExecutorCore(ExecutorConfig.generic("1", "a", watch_namespaces=["a", "b"]))
    streams: dict[str, list[_Streamed]] = {"a": [], "b": []}
    asked: list[tuple[str, str | None]] = []

    class Api:
        async def list_namespaced_pod(self, namespace: str, **kwargs: Any) -> _Streamed:
            asked.append((namespace, kwargs.get("resource_version")))
            streams[namespace].append(_Streamed())
            return streams[namespace][-1]

    async def perform(request: Request) -> object:
        assert isinstance(request, ListPods)
        return [], {"a": "50", "b": "60"}[str(request.namespace)]

    async def scenario() -> None:
        driver = AsyncDriver(core, perform)
        watches = [AsyncWatch(driver, Api(), namespace=name) for name in ("a", "b")]
        running = asyncio.gather(*(watch.run() for watch in watches), driver.run_forever())
        await until(lambda: len(asked) == 2)
        streams["a"][0].send(_mark("5"))
        streams["b"][0].send(_mark("7"))
        await until(lambda: core.resource_version("b") == "7")
        assert core.resource_version("a") == "5"  # each watch its own version
        streams["a"][0].send({"type": "ERROR", "object": {"kind": "Status", "code": 410}})
        await until(lambda: core.relists == 1)  # both namespaces listed
        streams["b"][0].send(_mark("8"))  # b's stream is older than its list: not fed
        await until(lambda: len(asked) == 4)
        assert sorted(asked[2:]) == [("a", "50"), ("b", "60")]  # each from its own list
        assert (core.resource_version("a"), core.resource_version("b")) == ("50", "60")
        assert watches[1].lines == 1
        driver.stop()
        await running

    asyncio.run(scenario())
    with pytest.raises(ValueError, match="'c' is not watched"):
        AsyncWatch(AsyncDriver(core, perform), Api(), namespace="c")


_GONE = {"type": "ERROR", "object": {"kind": "Status", "code": 410}}


def test_a_stream_whose_call_was_answered_after_a_relist_is_not_fed() -> None:
    from k8s_workloads.io.aio import AsyncDriver, AsyncWatch  # noqa: PLC0415 - the extra

    core = ExecutorCore(ExecutorConfig.generic("1", "a", watch_namespaces=["a", "b"]))
    streams: dict[str, list[_Streamed]] = {"a": [], "b": []}
    asked: list[tuple[str, str | None]] = []
    gate = asyncio.Event()

    class Api:
        async def list_namespaced_pod(self, namespace: str, **kwargs: Any) -> _Streamed:
            asked.append((namespace, kwargs.get("resource_version")))
            if namespace == "b" and len(streams["b"]) == 1:
                await gate.wait()  # a slow watch call: a re-list ends meanwhile
            streams[namespace].append(_Streamed())
            return streams[namespace][-1]

    async def perform(request: Request) -> object:
        assert isinstance(request, ListPods)
        return [], f"{request.namespace}{core.relists + 1}"

    async def scenario() -> None:
        driver = AsyncDriver(core, perform)
        watches = [AsyncWatch(driver, Api(), namespace=name) for name in ("a", "b")]
        for watch in watches:
            watch.first_backoff = watch.most_backoff = 0.01
        running = asyncio.gather(*(watch.run() for watch in watches), driver.run_forever())
        await until(lambda: len(asked) == 2)
        streams["a"][0].send(_GONE)
        await until(lambda: core.relists == 1)
        streams["b"][0].send(_mark("7"))  # ends b's first stream, unread
        await until(lambda: ("b", "b1") in asked and len(streams["a"]) == 2)
        streams["a"][1].send(_GONE)  # while b's call from "b1" is not answered
        await until(lambda: core.relists == 2)
        gate.set()
        await until(lambda: len(streams["b"]) == 2)
        streams["b"][1].send(_mark("8"))  # b's stream from "b1": older than the list "b2"
        await asyncio.sleep(0.1)
        fed = (watches[1].lines, core.resource_version("b"))
        driver.stop()
        await running
        assert fed == (0, "b2")

    asyncio.run(scenario())


def test_a_watch_waits_for_a_failing_relist_at_most_its_bound_then_watches_from_now() -> None:
    from k8s_workloads.io.aio import AsyncDriver, AsyncWatch  # noqa: PLC0415 - the extra

    core = ExecutorCore(ExecutorConfig.generic("1", "a"))
    streams: list[_Streamed] = []
    asked: list[str | None] = []
    failing = [True]

    class Api:
        async def list_namespaced_pod(self, _namespace: str, **kwargs: Any) -> _Streamed:
            asked.append(kwargs.get("resource_version"))
            streams.append(_Streamed())
            return streams[-1]

    async def perform(request: Request) -> object:
        assert isinstance(request, ListPods)
        if failing[0]:
            raise OSError("the list timed out")
        return [], "50"

    async def scenario() -> None:
        driver = AsyncDriver(core, perform)
        watch = AsyncWatch(driver, Api())
        watch.relist_wait = 0.2
        running = asyncio.gather(watch.run(), driver.run_forever())
        await until(lambda: len(asked) == 1)
        streams[0].send(_mark("5"))
        streams[0].send(_GONE)  # the version is gone; the lists keep failing
        await until(lambda: len(asked) == 2, seconds=5)  # not blind for ever: from now
        assert (asked[1], core.is_relisting) == (None, True)
        streams[1].send(_mark("7"))
        await until(lambda: watch.lines == 3)  # fed while the re-list is under way
        failing[0] = False
        driver.wake()
        await until(lambda: core.relists == 1)
        streams[1].send(_mark("8"))  # older than the list: ends unread
        await until(lambda: len(asked) == 3)
        assert (asked[2], watch.lines) == ("50", 3)  # from the list's version
        driver.stop()
        await running

    asyncio.run(scenario())

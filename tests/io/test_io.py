"""The I/O layer: the shared answer policy, the ``kubernetes`` client's calls on a thread
pool against the kit's API server (real HTTP on 127.0.0.1), paged lists, reused
connections and a bounded pass."""

from __future__ import annotations

import asyncio
import datetime
import random
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from k8s_workloads.decisions.actions import DeletePod, EmitEvent, PatchLabels
from k8s_workloads.executor import (
    CreatePod,
    DeleteSecret,
    ExecutorConfig,
    ExecutorCore,
    NothingToDo,
    ReadStates,
    Waiting,
)
from k8s_workloads.io.kube import FAILURES, KubeCalls
from k8s_workloads.io.policy import LIST_RESTARTS, Paging, failure_is_done, label_patch
from k8s_workloads.io.pool import PoolDriver
from k8s_workloads.keys import TaskInstanceKey, WorkloadKey
from k8s_workloads.labels import watcher_selector
from k8s_workloads.pods import construct_task_pod
from k8s_workloads.states import KubernetesJob, TaskInstanceState
from k8s_workloads.testing import ApiError, FakeAirflowDB, FakeApiServer, FakeCluster
from tests.support.event_factory import RUNNING, SUCCEEDED

NS = "airflow"
SPEC = {"containers": [{"name": "base", "image": "apache/airflow:3.3.2"}]}  # a valid pod's
T0 = datetime.datetime(2026, 6, 7, tzinfo=datetime.timezone.utc)


# --- the policy, written once --------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "status", "done"),
    [
        (DeletePod("p", NS), 404, True),
        (DeleteSecret("s", NS), 404, True),
        (PatchLabels("p", NS, {"a": "b"}), 404, True),
        (PatchLabels("p", NS, {"a": "b"}, "12"), 404, False),  # an adoption took nothing
        (PatchLabels("p", NS, {"a": "b"}, "12"), 409, False),
        (PatchLabels("p", NS, {"a": "b"}, expect={"a": "c"}), 404, False),
        (PatchLabels("p", NS, {"a": "b"}, expect={"a": "c"}), 422, False),  # a rival took it
        (DeletePod("p", NS), 409, False),
        (DeletePod("p", NS), 500, False),
        (EmitEvent(TaskInstanceKey("d", "t", "r", 1), TaskInstanceState.SUCCESS), 404, False),
    ],
)
def test_a_failure_is_done_only_where_the_table_says(
    request_: Any,
    status: int,
    done: bool,
) -> None:
    assert failure_is_done(request_, ApiError(status, "x")) is done
    assert failure_is_done(request_, ConnectionResetError()) is False


# --- the kubernetes client against the kit's server ---------------------------------------


class Served:
    def __init__(self, latency: float = 0.0) -> None:
        self.cluster = FakeCluster(now=T0, namespaces=[NS])
        self.server = FakeApiServer(self.cluster, lifetime=120, latency=latency).start()
        self.api_client: Any = k8s.ApiClient(k8s.Configuration(host=self.server.url))
        self.api = k8s.CoreV1Api(self.api_client)

    def close(self) -> None:
        self.api_client.close()
        self.server.stop()


@pytest.fixture
def served() -> Iterator[Served]:
    world = Served()
    yield world
    world.close()


@pytest.fixture
def slow() -> Iterator[Served]:
    world = Served(latency=0.02)
    yield world
    world.close()


class Driven:
    """A core driven against the kit's server by one of the two shipped drivers: the
    ``kubernetes`` client on a thread pool, or ``kubernetes_asyncio`` on an event loop."""

    def __init__(self, served: Served, kind: str, *, creations: int, cleanups: int) -> None:
        self.core = ExecutorCore(
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
    world = Served(latency=1.0)
    try:
        driven = Driven(world, kind, creations=4, cleanups=4)
        tasks(driven.db, driven.core, 8)
        answer = driven.run(seconds=0.25)
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
        served.cluster.set_status(NS, key.task_id, RUNNING)
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
    assert driven.core.not_adopted([taken, lost]) == [lost]
    owners = {
        name: (served.cluster.pod(NS, name) or {})["metadata"]["labels"]["airflow-worker"]
        for name in ("taken", "lost")
    }
    assert owners == {"taken": "1", "lost": "5"}
    driven.close()


def test_lists_are_read_in_pages_and_an_expired_token_starts_again(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(12):
        served.cluster.create_pod(
            NS, {"metadata": {"name": f"p{number}", "labels": {"a": "b"}}, "spec": SPEC}
        )
    calls = KubeCalls(served.api, page_size=5)
    pods, version = calls.list_pods(NS, label_selector="a=b")
    assert sorted(pod["metadata"]["name"] for pod in pods) == sorted(
        f"p{number}" for number in range(12)
    )
    assert version == served.cluster.resource_version
    assert served.server.stats.count("LIST", "pods") == 3

    pages = 0
    original = served.api.list_namespaced_pod

    def expiring(*args: Any, **kwargs: Any) -> Any:
        nonlocal pages
        pages += 1
        if pages == 2:  # the snapshot behind the first page's token is compacted away
            served.cluster.expire_list_continuations()
        return original(*args, **kwargs)

    monkeypatch.setattr(served.api, "list_namespaced_pod", expiring)
    pods, _ = calls.list_pods(NS, label_selector="a=b")
    assert len(pods) == 12
    assert pages == 2 + 3  # one page, the 410, then a whole new list


def test_a_list_that_keeps_expiring_fails(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    for number in range(6):
        served.cluster.create_pod(NS, {"metadata": {"name": f"p{number}"}, "spec": SPEC})
    calls = KubeCalls(served.api, page_size=2)
    original = served.api.list_namespaced_pod

    def expiring(*args: Any, **kwargs: Any) -> Any:
        served.cluster.expire_list_continuations()
        return original(*args, **kwargs)

    monkeypatch.setattr(served.api, "list_namespaced_pod", expiring)
    with pytest.raises(FAILURES) as caught:
        calls.list_pods(NS)
    assert getattr(caught.value, "status", None) == 410


def test_the_connection_pool_is_sized_to_the_calls_in_flight(served: Served) -> None:
    KubeCalls(served.api, pool_size=40)
    pool = served.api.api_client.rest_client.pool_manager.connection_pool_kw
    assert pool["maxsize"] == 40
    assert pool["block"] is True  # a call beyond the pool waits: never a 41st connection


def test_a_secret_is_created_before_its_pod_in_one_call(served: Served) -> None:
    calls = KubeCalls(served.api)
    secret = {"metadata": {"name": "s1"}, "stringData": {"a": "b"}}
    pod = {"metadata": {"name": "p1"}, "spec": {"containers": [{"name": "base"}]}}
    key = TaskInstanceKey("etl", "t", "manual__1", 1)
    served.cluster.fail_next("create_pod", 500)
    with pytest.raises(FAILURES):
        calls.perform(CreatePod(key, NS, pod, secret))
    assert served.cluster.secret(NS, "s1") is not None  # made first; the core deletes it
    assert served.cluster.pods() == []


def test_a_guarded_relabel_is_a_json_patch_testing_the_owner_first() -> None:
    # Issue 19, item 2: RFC 6902, the tests before the changes (all or nothing), label
    # keys escaped as RFC 6901 pointers.
    request = PatchLabels(
        "p",
        NS,
        {"airflow-worker": "3", "example.com/adopted~by": "k8s"},
        expect={"airflow-worker": "1"},
    )
    assert label_patch(request) == [
        {"op": "test", "path": "/metadata/labels/airflow-worker", "value": "1"},
        {"op": "replace", "path": "/metadata/labels/airflow-worker", "value": "3"},
        {"op": "add", "path": "/metadata/labels/example.com~1adopted~0by", "value": "k8s"},
    ]
    both = PatchLabels("p", NS, {"a": "b"}, "12", expect={"a": "c"})
    patch = label_patch(both)
    assert isinstance(patch, list)
    assert patch[:2] == [
        {"op": "test", "path": "/metadata/labels/a", "value": "c"},
        {"op": "test", "path": "/metadata/resourceVersion", "value": "12"},
    ]
    # Without expect: the merge patch, as before (conditional on the version if given).
    assert label_patch(PatchLabels("p", NS, {"a": "b"}, "12")) == {
        "metadata": {"labels": {"a": "b"}, "resourceVersion": "12"}
    }
    assert not PatchLabels("p", NS, {"a": "b"}, expect={}).conditional


def test_paging_follows_tokens_and_starts_again_a_bounded_number_of_times() -> None:
    paging = Paging({"_request_timeout": 5}, label_selector="a=b", page_size=2)
    assert paging.query() == {"_request_timeout": 5, "limit": 2, "label_selector": "a=b"}
    paging.take({"items": [{"n": 1}, {"n": 2}], "metadata": {"continue": "t1"}})
    assert paging.query() == {
        "_request_timeout": 5,
        "limit": 2,
        "label_selector": "a=b",
        "_continue": "t1",
    }
    assert not paging.expired(ApiError(500, "x"))  # not an expired token: raised
    for _ in range(LIST_RESTARTS):
        assert paging.expired(ApiError(410, "Expired"))  # a whole new list
        assert paging.query() == {"_request_timeout": 5, "limit": 2, "label_selector": "a=b"}
        paging.take({"items": [{"n": 1}], "metadata": {"continue": "t2"}})
    assert not paging.expired(ApiError(410, "Expired"))  # restarts used up: raised
    paging.take({"items": [{"n": 3}], "metadata": {"resourceVersion": "9"}})
    assert paging.query() is None
    assert paging.result == ([{"n": 1}, {"n": 3}], "9")


def test_a_410_on_the_first_page_is_not_an_expired_token() -> None:
    paging = Paging({})
    assert not paging.expired(ApiError(410, "Expired"))

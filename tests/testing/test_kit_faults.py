"""The kit server's network faults, through the real clients: the sync ``kubernetes``
client (urllib3) and ``kubernetes_asyncio`` (aiohttp).

Each fault as a client meets it (kubernetes-api-semantics.md, "Connections"): a reset
(an API server restart) kills a kept-alive pooled connection and a watch stream; a refusal
gives connection-refused errors for its window and the same cluster afterwards; a stall
(a load balancer holding a flow) makes a call with a read timeout time out and a watch
read block, then resets the connection; a lost create answer is a connection error for
a pod that exists. No test bounds a duration from above: waits end on an event.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import kubernetes_asyncio
import pytest
import urllib3
from kubernetes import client as k8s

from k8s_workloads.testing import FakeApiServer, FakeCluster
from tests.support.pod_builds import named_task_pod as task_pod

NS = "airflow"
AIO: Any = kubernetes_asyncio.client
# (connect, read) timeouts. SHORT_READ for the calls a stall must time out; SAFETY for the
# reads a fault must end, so that a broken fault fails the test (a timeout is not the
# error expected) instead of hanging it: no duration is asserted.
SHORT_READ = (30, 0.3)
SAFETY = (30, 60)


def _sockets_on(port: int) -> set[str]:
    """This process's open sockets whose local port is ``port`` (the server's side of its
    connections, and its listener), by inode: /proc/net/tcp joined to /proc/self/fd."""
    local = f":{port:04X}"
    with Path("/proc/net/tcp").open() as table:
        inodes = {
            fields[9]
            for fields in (line.split() for line in list(table)[1:])
            if fields[1].endswith(local)
        }
    ours = set()
    for descriptor in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):  # closed meanwhile (the listing's own, say)
            ours.add(str(descriptor.readlink()))
    return {inode for inode in inodes if f"socket:[{inode}]" in ours}


@pytest.fixture(autouse=True)
def _no_thread_left() -> Iterator[None]:
    """No thread of the test outlives it: servers stop, handler threads end once their
    connection closes (a safety wait, not a bound)."""
    threads = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 30
    while (left := set(threading.enumerate()) - threads) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not left, f"threads left behind: {sorted(thread.name for thread in left)}"


@pytest.fixture
def server(cluster: FakeCluster) -> Iterator[FakeApiServer]:
    """A server whose every socket is closed once it stopped and its clients closed."""
    with FakeApiServer(cluster, lifetime=60) as served:
        yield served
    port = int(served.url.rsplit(":", 1)[1])
    deadline = time.monotonic() + 30  # handler threads close their sockets as they end
    while _sockets_on(port) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _sockets_on(port)


@pytest.fixture
def api(server: FakeApiServer) -> Iterator[Any]:
    api_client: Any = k8s.ApiClient(k8s.Configuration(host=server.url))
    yield k8s.CoreV1Api(api_client)
    api_client.close()


def names(listing: Any) -> list[str]:
    return [pod.metadata.name for pod in listing.items]


def run(server: FakeApiServer, body: Any) -> Any:
    """``await body(api)`` with a kubernetes_asyncio CoreV1Api on one kept-alive pool."""

    async def call() -> Any:
        async with AIO.ApiClient(AIO.Configuration(host=server.url)) as api_client:
            return await body(AIO.CoreV1Api(api_client))

    return asyncio.run(call())


def wait_until(condition: Callable[[], bool]) -> None:
    while not condition():
        time.sleep(0.005)


# --- resets -----------------------------------------------------------------------------


def test_a_reset_kills_a_pooled_connection_and_a_watch_sync(
    server: FakeApiServer, cluster: FakeCluster, api: Any
) -> None:
    cluster.create_pod(NS, task_pod("load"))
    watch = api.list_namespaced_pod(NS, watch=True, _preload_content=False, _request_timeout=SAFETY)
    lines = iter(watch)
    assert json.loads(next(lines))["type"] == "ADDED"  # the stream is served
    assert names(api.list_namespaced_pod(NS)) == ["load"]  # a second connection, now idle
    assert server.stats.connections == 2
    assert server.reset_connections() == 2
    with pytest.raises(urllib3.exceptions.ProtocolError):
        next(lines)
    watch.release_conn()
    # urllib3 finds its pooled connection dead and opens another: the call goes through.
    assert names(api.list_namespaced_pod(NS)) == ["load"]
    stats = server.stats
    assert (stats.connections, stats.connections_reset) == (3, 2)


def test_a_reset_kills_a_pooled_connection_and_a_watch_asyncio(
    server: FakeApiServer, cluster: FakeCluster
) -> None:
    cluster.create_pod(NS, task_pod("load"))

    async def body(api: Any) -> list[str]:
        watch = await api.list_namespaced_pod(
            NS, watch=True, _preload_content=False, _request_timeout=SAFETY
        )
        assert json.loads(await watch.content.readline())["type"] == "ADDED"
        assert names(await api.list_namespaced_pod(NS)) == ["load"]
        assert server.reset_connections() == 2
        with pytest.raises(aiohttp.ClientPayloadError):
            await watch.content.read()
        watch.release()
        return names(await api.list_namespaced_pod(NS))

    assert run(server, body) == ["load"]
    stats = server.stats
    assert (stats.connections, stats.connections_reset) == (3, 2)


def test_a_reset_ends_a_request_under_way_unanswered(cluster: FakeCluster) -> None:
    # The latency holds the creation under way until the reset reaches it.
    with FakeApiServer(cluster, lifetime=60, latency=30) as server:
        api_client: Any = k8s.ApiClient(k8s.Configuration(host=server.url))
        api: Any = k8s.CoreV1Api(api_client)
        failures: list[BaseException] = []

        def create() -> None:
            try:
                api.create_namespaced_pod(NS, task_pod("load"))
            except urllib3.exceptions.ProtocolError as error:
                failures.append(error)

        worker = threading.Thread(target=create)
        worker.start()
        wait_until(lambda: server.stats.count("POST", "pods") == 1)
        assert server.reset_connections() == 1
        worker.join()
        api_client.close()
    (failure,) = failures
    assert isinstance(failure.args[1], ConnectionResetError)
    assert cluster.pod_names() == []  # reset before it reached the cluster


# --- refusals ---------------------------------------------------------------------------


def test_a_refusal_refuses_connections_and_keeps_the_cluster_sync(
    server: FakeApiServer, api: Any
) -> None:
    api.create_namespaced_pod(NS, task_pod("load"))
    url = server.url
    server.refuse_connections()  # until accept_connections
    assert server.refusing
    with pytest.raises(urllib3.exceptions.MaxRetryError) as refused:
        api.list_namespaced_pod(NS)
    reason: Any = refused.value.reason
    assert isinstance(reason, urllib3.exceptions.NewConnectionError)
    assert isinstance(reason.__cause__, ConnectionRefusedError)
    server.accept_connections()
    assert (server.refusing, server.url) == (False, url)  # the same port again
    assert names(api.list_namespaced_pod(NS)) == ["load"]
    # A timed window ends by itself, no sooner than asked.
    began = time.monotonic()
    server.refuse_connections(0.3)
    wait_until(lambda: not server.refusing)
    assert time.monotonic() - began >= 0.3
    assert names(api.list_namespaced_pod(NS)) == ["load"]
    stats = server.stats
    assert (stats.refusals, stats.connections_reset) == (2, 2)  # the pooled one, each time


def test_a_refusal_refuses_connections_and_keeps_the_cluster_asyncio(
    server: FakeApiServer, cluster: FakeCluster
) -> None:
    cluster.create_pod(NS, task_pod("load"))

    async def body(api: Any) -> list[str]:
        assert names(await api.list_namespaced_pod(NS)) == ["load"]
        server.refuse_connections()
        # The pooled connection is reset: seen at once, or the GET that meets it is retried
        # on a new connection (aiohttp retries an idempotent request once), refused.
        with pytest.raises(aiohttp.ClientConnectorError) as refused:
            await api.list_namespaced_pod(NS)
        assert refused.value.os_error.errno == errno.ECONNREFUSED
        server.accept_connections()
        return names(await api.list_namespaced_pod(NS))

    assert run(server, body) == ["load"]
    stats = server.stats
    assert (stats.refusals, stats.connections_reset) == (1, 1)


# --- stalls -----------------------------------------------------------------------------


def test_a_stall_times_out_a_call_on_a_held_connection_sync(
    server: FakeApiServer, cluster: FakeCluster, api: Any
) -> None:
    assert names(api.list_namespaced_pod(NS)) == []  # one kept-alive connection
    assert server.stall() == 1
    began = time.monotonic()
    # A POST is not retried on a read timeout: the timeout reaches the caller.
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        api.create_namespaced_pod(NS, task_pod("load"), _request_timeout=SHORT_READ)
    assert time.monotonic() - began >= SHORT_READ[1]
    assert cluster.pod_names() == []  # held by the stall, it never reached the server
    # New connections are served; the held one is reset when the stall ends.
    api.create_namespaced_pod(NS, task_pod("load"))
    assert server.unstall() == 1
    stats = server.stats
    assert (stats.stalls, stats.connections_reset, stats.count("POST", "pods")) == (1, 1, 1)


def test_a_stall_blocks_a_watch_then_resets_it_sync(
    server: FakeApiServer, cluster: FakeCluster, api: Any
) -> None:
    cluster.create_pod(NS, task_pod("load"))
    watch = api.list_namespaced_pod(NS, watch=True, _preload_content=False, _request_timeout=SAFETY)
    lines = iter(watch)
    assert json.loads(next(lines))["type"] == "ADDED"
    began = time.monotonic()
    assert server.stall(0.5) == 1
    cluster.create_pod(NS, task_pod("other"))  # an event the stream never gets
    # The read waits for the whole stall (its timeout is longer), then the reset ends it.
    with pytest.raises(urllib3.exceptions.ProtocolError):
        next(lines)
    assert time.monotonic() - began >= 0.5
    watch.release_conn()
    assert server.stats.connections_reset == 1


def test_a_stall_times_out_a_call_and_blocks_a_watch_asyncio(
    server: FakeApiServer, cluster: FakeCluster
) -> None:
    cluster.create_pod(NS, task_pod("load"))

    async def held_call(api: Any) -> None:
        assert names(await api.list_namespaced_pod(NS)) == ["load"]  # now idle in the pool
        assert server.stall() == 1
        with pytest.raises(asyncio.TimeoutError):
            await api.create_namespaced_pod(NS, task_pod("other"), _request_timeout=SHORT_READ)
        assert server.unstall() == 1

    async def held_watch(api: Any) -> float:
        watch = await api.list_namespaced_pod(
            NS, watch=True, _preload_content=False, _request_timeout=SAFETY
        )
        assert json.loads(await watch.content.readline())["type"] == "ADDED"
        began = time.monotonic()
        assert server.stall(0.5) == 1
        cluster.create_pod(NS, task_pod("third"))
        with pytest.raises(aiohttp.ClientPayloadError):
            await watch.content.read()
        watch.release()
        return time.monotonic() - began

    run(server, held_call)
    assert cluster.pod_names() == ["load"]  # the held creation never reached the server
    assert run(server, held_watch) >= 0.5
    assert server.stats.connections_reset == 2


# --- lost answers -----------------------------------------------------------------------


def test_a_lost_create_answer_is_a_connection_error_for_a_stored_pod_sync(
    server: FakeApiServer, cluster: FakeCluster, api: Any
) -> None:
    server.drop_next_create_answer("pods")
    # A fault of the cluster's answers that creation, and a dry run is answered: the drop
    # waits for a creation that is stored.
    cluster.fail_next("create_pod", 500)
    with pytest.raises(k8s.ApiException) as failed:
        api.create_namespaced_pod(NS, task_pod("load"))
    assert failed.value.status == 500
    assert api.create_namespaced_pod(NS, task_pod("load"), dry_run="All").metadata.name == "load"
    with pytest.raises(urllib3.exceptions.ProtocolError) as lost:
        api.create_namespaced_pod(NS, task_pod("load"))
    assert isinstance(lost.value.args[1], ConnectionResetError)
    assert api.read_namespaced_pod("load", NS).metadata.name == "load"
    with pytest.raises(k8s.ApiException) as again:
        api.create_namespaced_pod(NS, task_pod("load"))  # the retry a client might make
    assert again.value.status == 409
    stats = server.stats
    assert (stats.answers_dropped, stats.connections_reset, stats.count("POST", "pods")) == (
        1,
        1,
        4,
    )


def test_a_connection_fault_of_the_cluster_is_a_reset_through_the_server_sync(
    server: FakeApiServer, cluster: FakeCluster, api: Any
) -> None:
    # fail_next without a status: "applied" stores the pod and loses the answer, as
    # drop_next_create_answer does; "refused" (a connection made already) applies nothing.
    cluster.fail_next("create_pod", None, applied=True)
    cluster.fail_next("create_pod", None, refused=True)
    for name in ("load", "other"):
        with pytest.raises(urllib3.exceptions.ProtocolError) as lost:
            api.create_namespaced_pod(NS, task_pod(name))
        assert isinstance(lost.value.args[1], ConnectionResetError)
    assert cluster.pod_names() == ["load"]
    assert server.stats.connections_reset == 2


def test_a_lost_create_answer_is_a_connection_error_for_a_stored_pod_asyncio(
    server: FakeApiServer, cluster: FakeCluster
) -> None:
    server.drop_next_create_answer(times=2)

    async def body(api: Any) -> str:
        for name in ("load", "other"):
            with pytest.raises((aiohttp.ClientOSError, aiohttp.ServerDisconnectedError)):
                await api.create_namespaced_pod(NS, task_pod(name))
        created = await api.create_namespaced_pod(NS, task_pod("third"))  # answered
        return str(created.metadata.name)

    assert run(server, body) == "third"
    assert cluster.pod_names() == ["load", "other", "third"]
    assert server.stats.answers_dropped == 2


def test_fault_arguments_are_checked_and_a_stopped_server_takes_none() -> None:
    server = FakeApiServer(FakeCluster(), lifetime=60)
    with pytest.raises(ValueError, match="resource must be one of"):
        server.drop_next_create_answer("nodes")
    with pytest.raises(ValueError, match="seconds"):
        server.stall(0)
    with pytest.raises(ValueError, match="seconds"):
        server.refuse_connections(-1)
    server.stop()
    # Once stopped, nothing is held, refused or reset.
    assert (server.stall(), server.reset_connections(), server.unstall()) == (0, 0, 0)
    server.refuse_connections(1)
    assert not server.refusing

"""Fixtures for the kit's tests: a cluster, and a real client (sync ``kubernetes`` and
``kubernetes_asyncio``, one run each) talking to it through a :class:`FakeApiServer`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from k8s_workloads.testing import FakeApiServer, FakeCluster
from tests.support.kit_clients import AsyncClient, Client, SyncClient

if TYPE_CHECKING:
    from collections.abc import Iterator

NS = "airflow"


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(namespaces=[NS])


@pytest.fixture
def server_options() -> dict[str, Any]:
    """More ``FakeApiServer`` arguments for ``client``: a test parametrizes this to change
    them (``@pytest.mark.parametrize("server_options", [{"bookmark_seconds": 0.2}])``)."""
    return {}


@pytest.fixture(params=[SyncClient, AsyncClient], ids=["sync", "asyncio"])
def client(
    request: pytest.FixtureRequest, cluster: FakeCluster, server_options: dict[str, Any]
) -> Iterator[Client]:
    with FakeApiServer(cluster, lifetime=60, **server_options) as server:
        made = request.param(server.url)
        yield made
        made.close()

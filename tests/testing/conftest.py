"""Fixtures for the kit's tests: a cluster, and a real client (sync ``kubernetes`` and
``kubernetes_asyncio``, one run each) talking to it through a :class:`FakeApiServer`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from k8s_workloads.testing import FakeApiServer, FakeCluster
from tests.support.kit_clients import AsyncClient, Client, SyncClient

if TYPE_CHECKING:
    from collections.abc import Iterator

NS = "airflow"


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(namespaces=[NS])


@pytest.fixture(params=[SyncClient, AsyncClient], ids=["sync", "asyncio"])
def client(request: pytest.FixtureRequest, cluster: FakeCluster) -> Iterator[Client]:
    with FakeApiServer(cluster, lifetime=60) as server:
        made = request.param(server.url)
        yield made
        made.close()

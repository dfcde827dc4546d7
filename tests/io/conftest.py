"""Fixtures of the I/O layer's tests: the kit's API server, fast or with a latency."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.io_world import Served


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

"""The Airflow executor's fixture: one started against a fresh kit cluster per test.

Its imports run when a test asks for it: the modules here that need no Airflow (the
settings, the watcher) are collected in every environment.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def executor() -> Iterator[Any]:
    """``tests.support.airflow_support.running_executor()`` with its default options, its
    log recorded (``airflow_support.logged``)."""
    from tests.support.airflow_support import running_executor  # noqa: PLC0415

    with running_executor(record_log=True) as instance:
        yield instance

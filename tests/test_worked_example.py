"""The docs' worked example (``docs/async-executor.md``): its code, as the page shows it,
runs 500 jobs through API faults and a crash exactly once, and passes ``mypy --strict``."""

from __future__ import annotations

import asyncio
import linecache
import pathlib
import re
import time
from collections.abc import Callable
from typing import Any

import pytest

from k8s_workloads import GenericKey
from k8s_workloads.testing import FakeApiServer, FakeCluster, FaultRate, Kubelet
from tests.test_readme import assert_mypy_strict

pytest.importorskip("kubernetes_asyncio", reason="the example runs on the asyncio extra")

PAGE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "async-executor.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)
JOBS = 500
GLUE_LINES = 60  # issue 30, item 6: the executor in at most this many lines


def example_code() -> str:
    (block,) = _BLOCK.findall(PAGE.read_text(encoding="utf-8"))
    return str(block)


def example() -> dict[str, Any]:
    code = example_code()
    filename = f"<{PAGE.name}: its Python block>"
    linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
    namespace: dict[str, Any] = {"__name__": "async_executor"}
    exec(compile(code, filename, "exec"), namespace)  # noqa: S102 - our own docs page
    return namespace


def test_the_example_is_at_most_sixty_lines() -> None:
    lines = [line for line in example_code().splitlines() if line.strip()]
    assert len(lines) <= GLUE_LINES, len(lines)


async def _until(check: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "the example did not get there in time"
        await asyncio.sleep(0.02)


def test_the_example_runs_every_job_once_through_faults_and_a_crash() -> None:
    job_runner = example()["JobRunner"]
    cluster = FakeCluster(namespaces=["jobs"])
    faults = FaultRate(0.05, status=503, calls=["POST pods", "DELETE pods", "PATCH pods"], seed=7)
    server = FakeApiServer(cluster, lifetime=240, latency=0.02, faults=faults).start()
    kubelet = Kubelet(cluster, run_seconds=0.2).start()
    jobs = [GenericKey(f"job-{number}") for number in range(JOBS)]
    results: dict[str, str] = {}

    async def scenario() -> None:
        first = job_runner("runner-1", server.url, results)
        running = asyncio.ensure_future(first.run(jobs))
        await _until(lambda: len(results) >= JOBS // 2, 120)
        first.driver.abort()  # a crash: what is in flight is never reported
        await running
        second = job_runner("runner-2", server.url, results)
        running = asyncio.ensure_future(second.run(jobs, dead=["runner-1"]))
        await _until(lambda: len(results) == JOBS and not cluster.pods(), 120)
        second.driver.stop()
        await running

    try:
        asyncio.run(scenario())
    finally:
        kubelet.stop()
        server.stop()
    assert results == {key.id: "success" for key in jobs}  # each stored once (asserted)
    created = [name for call, _, name in cluster.calls if call == "create_pod"]
    assert len(created) == JOBS  # one pod per job: none lost, none run twice
    assert server.stats.count_faults() > 0  # the faults were served


def test_the_example_passes_mypy_strict(tmp_path: pathlib.Path) -> None:
    assert_mypy_strict({"async_executor": example_code()}, tmp_path)

"""The Airflow executor through an API server outage: the kit's server stopped for a while
(every connection refused), then a new one on the same port over the same cluster; what
the executor and its client logged meanwhile, and how long its heartbeats took.

``python -m tests.support.airflow_outage [SECONDS]`` (in the Airflow environment, from the
checkout's root) prints the figures as JSON on its last line (Airflow logs to stdout
before it); ``tests/airflow/test_executor.py`` holds them to the issue's bounds.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

import attrs

from k8s_workloads.states import CallbackState
from k8s_workloads.testing import FakeApiServer
from tests.support.airflow_support import (
    SERVER,
    RecordedLog,
    launch_callback,
    logged,
    queue_callbacks,
    running_executor,
    sync_until,
)

# The executor's own lines come through its (structlog) logger, kept by RecordedLog;
# the client's and Airflow's stdlib loggers through a handler on these.
STDLIB_LOGGERS = ("airflow", "k8s_workloads", "urllib3", "kubernetes")


@attrs.frozen
class OutageFigures:
    """What an outage of ``seconds`` cost: the log records at INFO and above (the
    executor's and its client's), those with a traceback, the lines at debug level, the
    longest heartbeat, and whether the work queued meanwhile ran once it was over."""

    seconds: float
    records: int
    tracebacks: int
    debug_lines: int
    longest_heartbeat: float
    heartbeats: int
    recovered: bool
    lines: tuple[str, ...]


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def run_outage(seconds: float = 30.0, *, queued: int = 3) -> OutageFigures:
    """A running executor with a running pod; the API server down for ``seconds`` while
    heartbeats go on, ``queued`` callbacks queued meanwhile; then up again."""
    kept = _Kept()
    saved = []
    for name in STDLIB_LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.level))
        logger.addHandler(kept)
        logger.setLevel(logging.INFO)  # as a deployment runs (the client sets urllib3's)
    try:
        with running_executor(record_log=True) as executor:
            return _outage(executor, seconds, queued, kept)
    finally:
        for logger, level in saved:
            logger.removeHandler(kept)
            logger.setLevel(level)


def _outage(executor: Any, seconds: float, queued: int, kept: _Kept) -> OutageFigures:
    cluster = executor.cluster
    key, _ = launch_callback(executor, 900)  # a pod running: the watch is established
    executor.states[key] = CallbackState.RUNNING
    old = SERVER[0]
    port = int(old.url.rsplit(":", 1)[1])
    log = logged(executor)
    kept.records.clear()
    old.stop()  # down: every connection refused
    heartbeats: list[float] = []
    keys: list[Any] = []
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if len(keys) < queued and time.monotonic() - started > seconds / 3:
            keys += queue_callbacks(executor, 901 + len(keys), 1)
        began = time.monotonic()
        executor.heartbeat()
        heartbeats.append(time.monotonic() - began)
        time.sleep(0.2)
    with FakeApiServer(cluster, port=port, lifetime=120) as server:
        SERVER[:] = [server]
        # Back: the watch is established again and the queued work is created.
        try:
            sync_until(
                executor,
                lambda: _back(log) and len(cluster.pod_names()) == 1 + len(keys),
                timeout=90,
            )
            recovered = True
        except BaseException:  # noqa: BLE001 - the figure says so
            recovered = False
        executor.end()
    stdlib = [r for r in kept.records if r.levelno >= logging.INFO]
    executor_lines = [(level, text) for level, text in log.lines if level != "debug"]
    lines = [f"{level.upper()} {text}" for level, text in executor_lines] + [
        f"{r.levelname} {r.name}: {r.getMessage()}" for r in stdlib
    ]
    tracebacks = sum("Traceback (most recent call last)" in text for _, text in executor_lines)
    tracebacks += sum(r.exc_info is not None for r in stdlib)
    return OutageFigures(
        seconds=seconds,
        records=len(lines),
        tracebacks=tracebacks,
        debug_lines=sum(level == "debug" for level, _ in log.lines),
        longest_heartbeat=max(heartbeats),
        heartbeats=len(heartbeats),
        recovered=recovered,
        lines=tuple(lines),
    )


def _back(log: RecordedLog) -> bool:
    return any("is established again" in text for level, text in log.lines if level == "info")


if __name__ == "__main__":
    figures = run_outage(float(sys.argv[1]) if len(sys.argv) > 1 else 30.0)
    print(json.dumps(attrs.asdict(figures)))  # noqa: T201 - the last line: the figures

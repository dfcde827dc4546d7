"""How a pod watch keeps going (:mod:`k8s_workloads.io.watching`), the rules the Airflow
watcher thread and the event loop's watch share: the server timeout drawn, the backoff,
a failure in one line and an outage in a few."""

from __future__ import annotations

import json
import logging
import random
import types
from typing import TYPE_CHECKING

from k8s_workloads.io.watching import (
    WatchRestarts,
    describe_failure,
    expired_event,
    server_address,
    watch_backoff,
    watch_seconds,
)
from k8s_workloads.testing import ApiError

if TYPE_CHECKING:
    import pytest

LOG = logging.getLogger("test_watching")
WHERE = "The pod watch of namespace airflow at http://kit"


def test_each_watch_asks_for_a_server_timeout_of_5_to_10_minutes_at_random() -> None:
    rng = random.Random(1)
    drawn = [watch_seconds(rng) for _ in range(50)]
    assert all(300 <= seconds < 600 for seconds in drawn)  # client-go's reflector
    assert len(set(drawn)) > 10  # spread: many schedulers' watches do not end together


def test_the_backoff_doubles_from_1_to_30_seconds_with_up_to_a_quarter_more() -> None:
    rng = random.Random(3)
    bases = [1, 2, 4, 8, 16, 30, 30]
    delays = [watch_backoff(failures, rng) for failures in range(1, 8)]
    for delay, base in zip(delays, bases, strict=True):
        assert base <= delay <= base * 1.25
    assert watch_backoff(10_000, rng) <= 30 * 1.25  # no overflow however long it fails


def test_a_failure_is_one_line_and_the_server_is_named() -> None:
    error = ApiError(403, "Forbidden", "pods is forbidden:\n no")
    error.body = json.dumps({"kind": "Status", "message": "pods is forbidden:\n no"})
    assert describe_failure(error) == "ApiError: HTTP 403 Forbidden: pods is forbidden: no"
    assert describe_failure(ConnectionResetError()) == "ConnectionResetError"
    api = types.SimpleNamespace(
        api_client=types.SimpleNamespace(configuration=types.SimpleNamespace(host="http://kit"))
    )
    assert server_address(api) == "http://kit"
    assert server_address(object()) == "the API server"


def test_an_outage_is_a_warning_per_failure_then_one_line_when_it_is_over(
    caplog: pytest.LogCaptureFixture,
) -> None:
    restarts = WatchRestarts(random.Random(2))
    with caplog.at_level(logging.DEBUG, logger="test_watching"):
        waits = [
            restarts.ended(LOG, WHERE, delivered=False, error=ConnectionRefusedError("refused"))
            for _ in range(3)
        ]
        restarts.established(LOG, WHERE)
        restarts.established(LOG, WHERE)  # nothing more to say
        at_once = restarts.ended(LOG, WHERE, delivered=True, error=None)  # its server timeout
        quiet = restarts.ended(LOG, WHERE, delivered=False, error=None)  # ended with nothing
    assert [int(wait or 0) for wait in waits] == [1, 2, 4]
    assert at_once is None
    assert quiet is not None
    assert 1 <= quiet <= 1.25  # a stream delivered since: the backoff starts again
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3
    assert warnings[0].startswith(f"{WHERE} failed: ConnectionRefusedError: refused;")
    assert all(r.exc_info is None for r in caplog.records if r.levelno == logging.WARNING)
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos == [f"{WHERE} is established again after 3 failed attempts"]


def test_a_410_answer_is_the_error_event_it_stands_for() -> None:
    status = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    assert json.loads(expired_event(json.dumps(status))) == {"type": "ERROR", "object": status}
    for body in (None, b"", b"<html>gone</html>", b"[1]"):  # no Status: a plain Expired one
        event = json.loads(expired_event(body))
        assert event["object"] == {"kind": "Status", "code": 410, "reason": "Expired"}

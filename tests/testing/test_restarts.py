"""The kubelet's restart rules (:mod:`k8s_workloads.testing._restarts`): which exits restart
a container, and the back-off before each restart (``doBackOff`` with
``flowcontrol.Backoff``: none for the first, then 10 s doubling to 5 minutes)."""

from __future__ import annotations

import pytest

from k8s_workloads.testing._restarts import (
    CrashLoop,
    crash_loop_message,
    go_duration,
    restart_policy,
    restarts,
)


@pytest.mark.parametrize(
    ("policy", "code", "init", "expected"),
    [
        ("Always", 0, False, True),
        ("Always", 1, False, True),
        ("OnFailure", 0, False, False),
        ("OnFailure", 137, False, True),
        ("Never", 1, False, False),
        ("Always", 0, True, False),  # an init container that completed is done
        ("Always", 1, True, True),
        ("Never", 1, True, False),
        ("Always", None, False, False),  # never ran: not an exit
    ],
)
def test_which_exits_restart(policy: str, code: int | None, init: bool, expected: bool) -> None:
    assert restarts(policy, code, init=init) is expected


def test_the_policy_is_the_defaulted_one() -> None:
    assert restart_policy({"spec": {"restartPolicy": "OnFailure"}}) == "OnFailure"
    assert restart_policy({"spec": {}}) == "Always"
    assert restart_policy({}) == "Always"


def test_the_back_off_is_none_then_ten_seconds_doubling_to_five_minutes() -> None:
    loop = CrashLoop()
    waits = []
    finished = 1000.0
    for _ in range(9):
        restart = loop.restart_at(finished)
        waits.append(restart - finished)
        finished = restart + 1  # each run lasts a second
    assert waits == [0, 10, 20, 40, 80, 160, 300, 300, 300]


def test_a_container_that_ran_long_enough_starts_over() -> None:
    # flowcontrol's hasExpired: an entry not moved on for 2 * max (10 minutes) is reset.
    loop = CrashLoop()
    assert loop.restart_at(0.0) == 0.0
    assert loop.restart_at(5.0) == 15.0
    assert loop.restart_at(15.0 + 600.0) == 635.0  # exactly 10 minutes: still backing off
    assert loop.restart_at(635.0 + 601.0) == 1236.0  # longer: at once, 10 s again next
    assert loop.restart_at(1237.0) == 1247.0


def test_the_back_off_scales_for_tests() -> None:
    loop = CrashLoop(0.01)
    waits = []
    for _ in range(8):
        finished = loop.updated  # each run ends as it starts
        waits.append(round(loop.restart_at(finished) - finished, 6))
    assert waits == [0, 0.01, 0.02, 0.04, 0.08, 0.16, 0.3, 0.3]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(10, "10s"), (80, "1m20s"), (300, "5m0s"), (0.05, "50ms"), (1.5, "1.5s"), (0, "0s")],
)
def test_durations_read_as_go_writes_them(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


def test_the_crash_loop_message_names_the_container_and_the_pod() -> None:
    pod = {"metadata": {"name": "p", "namespace": "airflow", "uid": "u-1"}}
    assert crash_loop_message(20, "base", pod) == (
        "back-off 20s restarting failed container=base pod=p_airflow(u-1)"
    )

"""The thread pool's driver (:mod:`k8s_workloads.io.pool`) with a stand-in ``perform``:
where each request runs, a screened creation, a bug reported and raised, and the pool
stopped. (Against the kit's server through both drivers: ``test_inflight``.)"""

from __future__ import annotations

import threading

import pytest

from k8s_workloads.executor import CreatePod, Handled, NothingToDo, Request, Waiting
from k8s_workloads.io.pool import PoolDriver
from k8s_workloads.testing import FAILURES, FakeAirflowDB
from tests.support.io_world import T0, new_core, tasks


def test_creations_run_on_the_pool_and_inline_requests_on_the_calling_thread() -> None:
    core = new_core()
    keys = tasks(FakeAirflowDB(), core, 3)
    names: set[str] = set()

    def perform(_request: Request) -> object:
        names.add(threading.current_thread().name)
        return None

    driver = PoolDriver(core, perform, failures=FAILURES)
    assert isinstance(driver.run(T0), NothingToDo)
    driver.close()
    assert names
    assert all(name.startswith("k8s-workloads-io") for name in names)
    assert driver.in_flight == 0
    assert len(core.running) == len(keys)

    inline_core = new_core()
    tasks(FakeAirflowDB(), inline_core, 2)
    threads: list[str] = []
    inline = PoolDriver(
        inline_core,
        lambda _request: threads.append(threading.current_thread().name),
        failures=FAILURES,
        inline=lambda _request: True,
    )
    assert isinstance(inline.run(T0), NothingToDo)
    assert threads == [threading.current_thread().name] * 2


def test_a_screened_creation_is_skipped_and_never_performed() -> None:
    core = new_core()
    handled: list[Handled] = []
    core.on_decision = handled.append
    (stale, fresh) = tasks(FakeAirflowDB(), core, 2)
    performed: list[Request] = []

    def screen(request: CreatePod) -> str | None:
        return "requeued since" if request.key == stale else None

    driver = PoolDriver(core, performed.append, failures=FAILURES, screen=screen)
    assert isinstance(driver.run(T0), NothingToDo)
    driver.close()
    assert [request.key for request in performed if isinstance(request, CreatePod)] == [fresh]
    assert [(entry.key, entry.cause) for entry in handled] == [(stale, "stale")]


def test_a_bug_in_perform_is_reported_failed_then_raised() -> None:
    core = new_core(creations=1)
    tasks(FakeAirflowDB(), core, 1)

    def perform(_request: Request) -> object:
        raise RuntimeError("a bug, not an API error")

    driver = PoolDriver(core, perform, failures=FAILURES)
    with pytest.raises(RuntimeError, match="a bug"):
        driver.run(T0)
    driver.close()
    assert core.in_flight == ()  # reported: nothing is left in flight for ever
    assert driver.in_flight == 0


def test_close_is_safe_without_a_pool_and_twice() -> None:
    driver = PoolDriver(new_core(), lambda _request: None, failures=FAILURES, workers=3)
    assert driver.workers == 3
    driver.close()
    driver.close()
    assert isinstance(driver.run(T0), NothingToDo)  # nothing submitted: no pool made


def test_abort_forgets_the_calls_in_flight_and_reports_nothing() -> None:
    core = new_core(creations=2)
    tasks(FakeAirflowDB(), core, 4)
    release = threading.Event()
    performed: list[Request] = []

    def perform(request: Request) -> object:
        release.wait(10)
        performed.append(request)
        return None

    driver = PoolDriver(core, perform, failures=FAILURES)
    assert driver.run(T0, seconds=0.05) == Waiting(2)  # two creations under way
    in_flight = core.in_flight
    driver.abort()  # a crash: the two end on the pool, unreported
    release.set()
    assert driver.in_flight == 0
    assert driver.run(T0) == Waiting(2)  # at once: nothing more starts
    assert core.in_flight == in_flight  # nothing was reported
    assert len(core.queued) == 2

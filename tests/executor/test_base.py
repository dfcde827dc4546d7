"""The executor core's requests in flight and open works (:mod:`k8s_workloads.executor._base`),
driven with many requests at once: ordering, budgets, the 429 pause and the protocol's
typed errors (the stateful machine covers the interleavings at large)."""

from __future__ import annotations

import datetime
import random

import pytest

from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.actions import DeletePod, EmitEvent
from k8s_workloads.executor import (
    CreatePod,
    NothingToDo,
    PodChanged,
    ProtocolError,
    ReadStates,
    Request,
    Waiting,
)
from k8s_workloads.states import CallbackState, KubernetesJob, TaskInstanceState
from k8s_workloads.testing import ApiError, CoreDriver
from tests.support.core_world import NS, World, callback, kinds, task
from tests.support.event_factory import RUNNING, SUCCEEDED


def start_all(world: World) -> tuple[list[Request], Waiting | NothingToDo]:
    return world.driver.start(world.now)


def test_creations_run_side_by_side_up_to_their_budget() -> None:
    world = World(max_concurrent_creations=4, creation_batch_size=10)
    keys = [task(f"t{n}") for n in range(10)]
    for key in keys:
        world.submit(key)
    started, answer = start_all(world)
    assert kinds(started) == ["CreatePod"] * 4
    assert answer == Waiting(4)
    # Completed out of order: each completion frees one slot for the next creation.
    world.driver.complete(started[2])
    more, answer = start_all(world)
    assert [r.key for r in more if isinstance(r, CreatePod)] == [keys[4]]
    assert answer == Waiting(4)
    report = world.driver.run_pass_concurrently(world.now, order=random.Random(1))
    created = {world.key_of(pod) for pod in world.cluster.pods()}
    assert created == set(keys)
    assert report.failed == []
    assert world.core.in_flight == ()


def test_the_batch_size_still_bounds_creations_per_pass() -> None:
    world = World(max_concurrent_creations=8, creation_batch_size=3)
    for n in range(5):
        world.submit(task(f"t{n}"))
    report = world.driver.run_pass_concurrently(world.now, order=random.Random(2))
    assert kinds(report.performed) == ["CreatePod"] * 3
    assert len(world.core.queued) == 2


def test_cleanups_run_side_by_side_and_each_result_is_reported_once() -> None:
    world = World(max_concurrent_cleanups=3, max_concurrent_creations=10)
    keys = [task(f"t{n}") for n in range(6)]
    for key in keys:
        world.submit(key)
    world.driver.run_pass_concurrently(world.now, order=random.Random(3))
    for key in keys:
        world.db.task_finished(key, TaskInstanceState.SUCCESS)
        world.status(key, SUCCEEDED)
    world.driver.deliver(now=world.now)
    started, answer = start_all(world)
    assert kinds(started) == ["ReadStates"]  # the decisions it guards wait for it
    assert answer == Waiting(1)
    world.driver.complete(started[0])
    started, answer = start_all(world)
    assert kinds(started) == ["EmitEvent"] * 6  # each report before its pod goes
    for emit in started:
        world.driver.complete(emit)
    started, answer = start_all(world)
    assert kinds(started) == ["DeletePod"] * 3  # the budget; the rest wait for a slot
    assert answer == Waiting(3)
    world.driver.complete(started[1])
    more, _ = start_all(world)
    assert kinds(more) == ["DeletePod"]  # a delete completed: one more starts
    world.driver.run_pass_concurrently(world.now, order=random.Random(4))
    for key in keys:
        assert world.db.reported(key) == [TaskInstanceState.SUCCESS]
    assert world.cluster.pods() == []


def test_a_workloads_requests_never_overlap() -> None:
    world = World(max_concurrent_cleanups=10)
    key = task()
    world.submit(key)
    world.sync()
    world.status(key, RUNNING)
    world.db.task_finished(key, TaskInstanceState.SUCCESS)
    world.status(key, SUCCEEDED)
    world.driver.deliver(now=world.now)
    in_flight_per_key: list[int] = []
    rng = random.Random(5)
    while True:
        _, answer = start_all(world)
        pod_calls = [r for r in world.core.in_flight if not isinstance(r, ReadStates)]
        in_flight_per_key.append(len(pod_calls))
        if isinstance(answer, NothingToDo):
            break
        in_flight = world.core.in_flight
        world.driver.complete(in_flight[rng.randrange(len(in_flight))])
    assert max(in_flight_per_key) == 1
    assert world.db.reported(key) == [TaskInstanceState.SUCCESS]


def test_a_429_pauses_the_creations_not_yet_handed_out() -> None:
    retry = DecisionConfig(task_publish_max_retries=-1)  # a 429 is retried after a pause
    world = World(max_concurrent_creations=2, creation_batch_size=10, decisions=retry)
    for n in range(6):
        world.submit(task(f"t{n}"))
    started, _ = start_all(world)
    assert len(started) == 2
    world.cluster.fail_next("create_pod", 429, headers={"Retry-After": "30"})
    world.driver.complete(started[0])  # the 429
    more, answer = start_all(world)
    assert not [r for r in more if isinstance(r, CreatePod)]
    assert world.core.paused_until is not None
    world.driver.complete(started[1])  # the other one in flight ends as it does
    _, answer = start_all(world)
    assert isinstance(answer, NothingToDo)
    assert len(world.cluster.pods()) == 1


def test_a_relist_runs_alone() -> None:
    world = World(max_concurrent_creations=4, creation_batch_size=10)
    for n in range(3):
        world.submit(task(f"t{n}"))
    started, _ = start_all(world)
    world.cluster.expire_watches()
    world.driver.deliver(now=world.now)
    assert world.core.is_relisting
    more, answer = start_all(world)
    assert more == []  # nothing starts beside the creations in flight: the list waits
    assert answer == Waiting(3)
    for request in started:
        world.driver.complete(request)
    more, answer = start_all(world)
    assert kinds(more) == ["ListPods"]
    assert answer == Waiting(1)


def test_a_completion_for_a_request_never_handed_out_is_a_protocol_error() -> None:
    world = World()
    world.submit(task())
    stranger = DeletePod("p", "airflow")
    with pytest.raises(ProtocolError, match="not a request in flight"):
        world.core.request_done(stranger)
    with pytest.raises(ProtocolError, match="not a request in flight"):
        world.core.request_failed(stranger, ApiError(500, "x", "y"))
    started, _ = start_all(world)
    # An equal request is not the same request: identity, not equality.
    (create,) = started
    assert isinstance(create, CreatePod)
    twin = CreatePod(create.key, create.namespace, create.pod, create.secret)
    assert twin == create
    with pytest.raises(ProtocolError):
        world.core.request_done(twin)
    assert world.core.in_flight == (create,)


def test_a_completion_reported_twice_is_a_protocol_error_and_changes_nothing() -> None:
    world = World()
    world.submit(task())
    (create,), _ = start_all(world)
    world.driver.complete(create)
    running, queued = world.core.running, world.core.queued
    with pytest.raises(ProtocolError):
        world.core.request_done(create)
    with pytest.raises(ProtocolError):
        world.core.request_failed(create, ApiError(500, "x", "y"))
    assert (world.core.running, world.core.queued, world.core.in_flight) == (running, queued, ())


def test_reads_are_answered_not_marked_done() -> None:
    world = World()
    key = task()
    world.finished(key, SUCCEEDED)
    (read,), _ = start_all(world)
    assert isinstance(read, ReadStates)
    with pytest.raises(ProtocolError, match="states_read"):
        world.core.request_done(read)
    world.core.states_read(read, {key: TaskInstanceState.QUEUED})
    with pytest.raises(ProtocolError):
        world.core.states_read(read, {key: TaskInstanceState.QUEUED})


def test_serial_driving_refuses_to_mix_with_requests_started_concurrently() -> None:
    world = World()
    world.submit(task())
    start_all(world)
    with pytest.raises(ProtocolError, match="start_request"):
        world.core.next_request(world.now)


def test_an_emit_event_needs_no_slot() -> None:
    # Events go to the scheduler's buffer: a full clean-up budget never holds them back.
    world = World(max_concurrent_cleanups=1)
    keys = [callback(n) for n in range(3)]
    for key in keys:
        world.submit(key)
    world.driver.run_pass_concurrently(world.now, order=random.Random(6))
    for key in keys:
        world.status(key, RUNNING)
    world.driver.deliver(now=world.now)
    world.cluster.fail_next("delete_pod", 503, times=100)  # no clean-up is asked for here
    report = world.driver.run_pass_concurrently(world.now, order=random.Random(7))
    assert sorted(kinds(report.performed)) == ["EmitEvent"] * 3 + ["ReadStates"]
    for key in keys:
        assert world.db.reported(key) == [CallbackState.RUNNING]


def test_a_revoked_workloads_pod_created_meanwhile_is_deleted() -> None:
    world = World()
    key = task()
    world.submit(key)
    (create,), _ = start_all(world)
    assert isinstance(create, CreatePod)
    world.core.revoke(key, [])  # the pod is not listed yet: its creation is in flight
    world.driver.complete(create)
    report = world.driver.run_pass_concurrently(world.now, order=random.Random(8))
    assert DeletePod(create.pod_name, create.namespace) in report.performed
    assert world.cluster.pods() == []
    assert not world.core.is_running(key)
    assert world.db.events == []


def test_submitted_again_while_its_last_result_is_handled_keeps_the_new_record() -> None:
    # A work's bookkeeping is the record it was decided on: a newer record (a new job
    # for the same key meanwhile) is not overwritten when the old work ends.
    world = World()
    key = task()
    world.finished(key, SUCCEEDED)
    rng = random.Random(9)
    while True:
        start_all(world)
        if any(isinstance(r, EmitEvent) for r in world.core.in_flight):
            break
        in_flight = world.core.in_flight
        world.driver.complete(in_flight[rng.randrange(len(in_flight))])
    (emit,) = [r for r in world.core.in_flight if isinstance(r, EmitEvent)]
    assert not world.core.is_running(key)  # its slot was freed before the event
    job = KubernetesJob(key, ["python", "-m", "again"])
    world.core.submit(job)
    world.driver.complete(emit)
    world.driver.run_pass_concurrently(world.now, order=rng)
    attempt = world.core.attempts.get(key)
    assert attempt is not None
    assert attempt.job is job


def test_a_retried_creation_does_not_wait_for_an_unrelated_slow_deletion() -> None:
    # Issue 30, item 6: many in flight, a pass ends only when nothing is; a creation
    # retried after a transient error used to wait for that (here: for another workload's
    # deletion that never completes). It goes at its own time now, and not at once.
    world = World(decisions=DecisionConfig(task_publish_max_retries=3))
    done, retried = task("done"), task("retried")
    world.finished(done, SUCCEEDED)
    world.db.task_finished(done, TaskInstanceState.SUCCESS)
    world.submit(retried)
    world.cluster.fail_next("create_pod", 403, message="pods is forbidden: exceeded quota")
    started, _ = start_all(world)
    assert sorted(kinds(started)) == ["CreatePod", "ReadStates"]
    for request in started:
        world.driver.complete(request)  # the creation's quota 403: retried
    (report,), _ = start_all(world)
    assert isinstance(report, EmitEvent)  # reported before its pod goes
    world.driver.complete(report)
    (deletion,), answer = start_all(world)
    assert isinstance(deletion, DeletePod)  # in flight from here on: a slow one
    assert isinstance(answer, Waiting)
    assert answer.until == world.now + datetime.timedelta(seconds=1)  # the first backoff
    world.now += datetime.timedelta(seconds=0.5)
    assert start_all(world) == ([], Waiting(1, answer.until))  # not twice in a burst
    world.now += datetime.timedelta(seconds=0.5)
    (resent,), _ = start_all(world)  # due: the deletion is still in flight
    assert isinstance(resent, CreatePod)
    assert resent.key == retried
    assert world.core.create_retries(retried) == 1
    world.driver.complete(resent)
    assert world.pod_of(retried) in world.cluster.pod_names()
    assert world.core.in_flight == (deletion,)  # still: the retry never waited for it


def test_one_at_a_time_a_retried_creation_waits_for_the_next_pass() -> None:
    # The provider's rule (a retry on the next sync) stays for next_request / run_pass.
    world = World(decisions=DecisionConfig(task_publish_max_retries=3))
    key = task()
    world.submit(key)
    world.cluster.fail_next("create_pod", 403, message="pods is forbidden: exceeded quota")
    assert kinds(world.sync()) == ["CreatePod"]
    assert kinds(world.sync()) == ["CreatePod"]  # the next pass, at the same time


# --- on_pod: the pods created, adopted and deleted ----------------------------------------


def _recording(world: World) -> list[PodChanged]:
    changes: list[PodChanged] = []
    world.core.on_pod = changes.append
    return changes


def test_each_pod_created_and_deleted_is_told_once_with_its_workload() -> None:
    world = World()
    changes = _recording(world)
    running, done = task("a"), callback()
    for key in (running, done):
        world.submit(key)
    world.sync()
    created = {(c.key, c.namespace, c.pod_name) for c in changes}
    assert created == {(key, NS, world.pod_of(key)) for key in (running, done)}
    assert {c.change for c in changes} == {"created"}
    done_pod = world.pod_of(done)
    world.status(done, SUCCEEDED)
    for _ in range(3):
        world.sync()
    assert changes[2:] == [PodChanged("deleted", NS, done_pod, done)]


def test_a_delete_tried_again_still_names_its_workload() -> None:
    world = World()
    changes = _recording(world)
    key = callback()
    world.submit(key)
    world.sync()
    pod = world.pod_of(key)
    world.cluster.fail_next("delete_pod", 503, reason="ServiceUnavailable")
    world.status(key, SUCCEEDED)
    performed = [request for _ in range(4) for request in world.sync()]
    assert kinds(performed).count("DeletePod") == 2  # refused once (503), then made
    assert pod not in world.cluster.pod_names()
    assert changes == [PodChanged("created", NS, pod, key), PodChanged("deleted", NS, pod, key)]


def test_an_adoption_tells_each_pod_it_took_over() -> None:
    old = World(scheduler_id="1")
    running, done = task("a"), task("b")
    for key in (running, done):
        old.submit(key)
    old.sync()
    pods = {key: old.pod_of(key) for key in (running, done)}
    old.status(running, RUNNING)
    old.status(done, SUCCEEDED)
    new = World(scheduler_id="2")
    new.cluster, new.db = old.cluster, old.db
    new.driver = CoreDriver(new.core, old.cluster, old.db)
    changes = _recording(new)
    new.driver.adopt(["1"], now=new.now, expected_task_keys=[running, done])
    for _ in range(3):
        new.sync()
    adopted = [c for c in changes if c.change == "adopted"]
    assert sorted(adopted, key=lambda c: c.pod_name) == sorted(
        (PodChanged("adopted", NS, pods[key], key) for key in (running, done)),
        key=lambda c: c.pod_name,
    )
    assert [c for c in changes if c.change == "deleted"] == [
        PodChanged("deleted", NS, pods[done], done)
    ]

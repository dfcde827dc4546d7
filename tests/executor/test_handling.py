"""Results in the executor core (:mod:`k8s_workloads.executor._handling`): states read in
one query per pass, decisions performed in order, and what a failed read or pod call
means for the result being handled."""

from __future__ import annotations

import json

import attrs
import pytest

from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.actions import DeletePod, EmitEvent
from k8s_workloads.executor import (
    ExecutorCore,
    ProtocolError,
    ReadStates,
)
from k8s_workloads.states import CallbackState, TaskInstanceState
from k8s_workloads.testing import CoreDriver
from tests.support.core_world import World, callback, kinds, task
from tests.support.event_factory import FAILED, RUNNING, SUCCEEDED
from tests.support.event_factory import OOM_KILLED as OOM


def test_state_reads_are_batched_one_query_per_pass() -> None:
    world = World()
    keys = [task(f"t{i}") for i in range(20)] + [callback(i) for i in range(1, 6)]
    for key in keys:
        world.submit(key)
    world.sync()
    for key in keys:
        world.status(key, SUCCEEDED)
    reads_before = world.db.reads
    performed = world.sync()
    assert world.db.reads == reads_before + 1
    (read,) = [request for request in performed if isinstance(request, ReadStates)]
    assert set(read.keys) == set(keys)
    assert world.core.running == ()


def test_without_callback_reads_a_callback_result_needs_no_query() -> None:
    world = World(read_callback_states=False)
    key = callback()
    world.submit(key)
    world.sync()
    world.status(key, SUCCEEDED)
    performed = world.sync()
    assert not any(isinstance(request, ReadStates) for request in performed)
    assert world.db.reported(key) == [CallbackState.SUCCESS]


def test_duplicate_terminal_events_delete_once() -> None:
    world = World(decisions=DecisionConfig(delete_worker_pods_on_failure=True))
    key = task()
    world.submit(key)
    world.sync()
    world.db.task_started(key)
    world.status(key, OOM)
    world.driver.deliver(now=world.now)
    (pod,) = world.cluster.pods()
    world.core.feed_event(json.dumps({"type": "MODIFIED", "object": pod}))  # delivered twice
    performed = world.driver.run_pass(world.now).performed
    deletes = [request for request in performed if isinstance(request, DeletePod)]
    assert len(deletes) == 1  # the provider deletes again for every duplicate (§7.3.3)
    assert world.db.reported(key) == [TaskInstanceState.FAILED]


def test_a_failed_state_read_is_retried_on_the_next_pass_never_the_same() -> None:
    world = World()
    key = task()
    world.submit(key)
    world.sync()
    world.db.task_finished(key, TaskInstanceState.SUCCESS)
    world.status(key, SUCCEEDED)
    world.db.fail_next(1)
    performed = world.sync()
    assert kinds(performed) == ["ReadStates"]  # failed; nothing else this pass
    assert world.core.backlog == 1
    performed = world.driver.run_pass(world.now).performed
    assert kinds(performed) == ["ReadStates", "EmitEvent", "DeletePod"]
    assert world.db.reported(key) == [TaskInstanceState.SUCCESS]


def test_handling_gives_up_after_max_retries_and_reports_failed() -> None:
    world = World(decisions=DecisionConfig(max_handling_retries=2))
    key = task()
    world.submit(key)
    world.sync()
    world.status(key, SUCCEEDED)
    world.db.fail_next(10)
    passes = 0
    while world.core.running:
        world.sync()
        passes += 1
        assert passes < 10
    assert passes == 3  # the first try and two retries
    (event,) = world.db.events
    assert event.state is TaskInstanceState.FAILED
    assert "gave up after 3 failed attempts" in (event.info or "")
    assert world.cluster.pod_names() == []  # still cleaned up


def test_a_pod_is_deleted_after_its_report_and_a_failed_delete_is_tried_next_pass() -> None:
    world = World()
    key = callback()
    world.submit(key)
    world.sync()
    world.status(key, SUCCEEDED)
    world.cluster.fail_next("delete_pod", 503)
    performed = world.sync()
    assert kinds(performed) == ["ReadStates", "EmitEvent", "DeletePod"]
    assert world.db.reported(key) == [CallbackState.SUCCESS]  # reported before the delete
    assert world.core.running == ()
    assert world.cluster.pod_names() != []
    assert kinds(world.sync()) == ["DeletePod"]  # transient: tried again, not decided again
    assert world.cluster.pod_names() == []
    assert world.db.reported(key) == [CallbackState.SUCCESS]


def test_a_refused_clean_up_after_the_report_is_neither_tried_nor_reported_again() -> None:
    # A failed pod kept for debugging is labelled done after its failure is reported.
    world = World(decisions=DecisionConfig(delete_worker_pods_on_failure=False))
    key = callback()
    world.submit(key)
    world.sync()
    world.status(key, FAILED)
    world.cluster.fail_next("patch_pod", 403, reason="Forbidden")
    performed = world.sync()
    assert kinds(performed) == ["ReadStates", "EmitEvent", "PatchLabels"]
    assert world.db.reported(key) == [CallbackState.FAILED]
    assert kinds(world.sync()) == []  # a refusal is final: not tried again
    assert world.db.reported(key) == [CallbackState.FAILED]


def test_an_emit_event_cannot_be_reported_failed() -> None:
    world = World()
    key = callback()
    world.submit(key)
    world.sync()
    world.status(key, RUNNING)
    world.driver.deliver(now=world.now)
    request = world.core.next_request(world.now)
    assert isinstance(request, ReadStates)
    world.core.states_read(request, {key: CallbackState.QUEUED})
    emit = world.core.next_request(world.now)
    assert isinstance(emit, EmitEvent)
    with pytest.raises(ProtocolError, match="EmitEvent cannot fail"):
        world.core.request_failed(emit, RuntimeError("x"))


def test_with_confirm_reports_a_pod_goes_only_once_its_report_is_stored() -> None:
    world = World(confirm_reports=True)
    key = callback()
    world.submit(key)
    world.sync()
    world.status(key, SUCCEEDED)
    performed = world.sync()
    assert kinds(performed) == ["ReadStates", "EmitEvent"]
    assert list(world.core.unstored_reports) == [key]
    assert not world.core.has_work  # nothing to do until the executor says so
    world.status(key, SUCCEEDED)  # the same end, again (a later version): it waits too
    world.driver.deliver(now=world.now)
    assert not world.core.has_work
    assert kinds(world.sync()) == []
    world.core.reports_stored([callback(2)])  # another workload's: nothing changes
    assert kinds(world.sync()) == []
    world.core.reports_stored([key])
    assert not world.core.unstored_reports
    assert kinds(world.sync()) == ["DeletePod"]
    assert world.cluster.pod_names() == []
    assert world.db.reported(key) == [CallbackState.SUCCESS]


def test_a_core_that_dies_before_its_report_is_stored_leaves_the_pod_for_adoption() -> None:
    # The report was made but never stored (the callback is still active): the next
    # scheduler finds the Succeeded pod and reports it, once; the callback runs once.
    world = World(confirm_reports=True)
    key = callback()
    world.submit(key)
    world.sync()
    world.status(key, SUCCEEDED)
    world.sync()
    assert world.core.unstored_reports == (key,)
    world.db.events.clear()  # lost with the process: the scheduler never stored it
    world.db.add_callback(key)  # still queued
    successor = ExecutorCore(attrs.evolve(world.config, scheduler_id="2"))
    driver = CoreDriver(successor, world.cluster, world.db)
    adoption = driver.adopt(["1"], now=world.now, expected_callback_keys=[key])
    assert adoption.rerun == ()
    successor.reports_stored(successor.unstored_reports)
    driver.run_pass(world.now)
    assert world.db.reported(key) == [CallbackState.SUCCESS]
    assert world.cluster.pod_names() == []
    creates = [name for call, _, name in world.cluster.calls if call == "create_pod"]
    assert len(creates) == 1  # ran once


def test_a_core_that_dies_after_its_report_was_stored_leaves_a_pod_cleaned_up_unreported() -> None:
    world = World(confirm_reports=True)
    key = callback()
    world.submit(key)
    world.sync()
    world.status(key, SUCCEEDED)
    world.sync()  # reported and stored (the kit's database stores at once), not confirmed
    successor = ExecutorCore(attrs.evolve(world.config, scheduler_id="2"))
    driver = CoreDriver(successor, world.cluster, world.db)
    adoption = driver.adopt(["1"], now=world.now, expected_callback_keys=[])  # settled
    assert adoption.rerun == ()
    assert world.cluster.pod_names() == []  # a settled callback's pod: cleaned up
    assert world.db.reported(key) == [CallbackState.SUCCESS]  # once

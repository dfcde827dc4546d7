"""ExecutorCore: the loop's rules, driven through the public test kit."""

from __future__ import annotations

import datetime
import json
import random
import subprocess
import sys
import uuid
from typing import Any

import attrs
import pytest

import k8s_workloads
from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.actions import DeletePod, EmitEvent, PatchLabels
from k8s_workloads.executor import (
    CreatePod,
    DeleteSecret,
    ExecutorConfig,
    ExecutorCore,
    Handled,
    InvalidStateAnswer,
    ListPods,
    NothingToDo,
    ProtocolError,
    ReadStates,
    WorkloadAlreadyRunning,
)
from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.labels import AIRFLOW_WORKER_LABEL, POD_REVOKED_LABEL, TRUE_LABEL_VALUE
from k8s_workloads.pods import workload_command_args
from k8s_workloads.states import CallbackState, KubernetesJob, TaskInstanceState
from k8s_workloads.testing import CoreDriver, FakeAirflowDB, FakeCluster
from k8s_workloads.watch.events import Outcome
from tests.support.event_factory import OOM_KILLED as OOM
from tests.support.event_factory import PULL_FAILED, RUNNING, SUCCEEDED

NS = "airflow"
VERSION = "3.3.2"
T0 = datetime.datetime(2026, 6, 7, tzinfo=datetime.timezone.utc)
TOKEN = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu.c2ln"  # noqa: S105 - a fake token to find


def task(name: str = "load", try_number: int = 1) -> TaskInstanceKey:
    return TaskInstanceKey("etl", name, "manual__1", try_number)


def callback(number: int = 1) -> CallbackKey:
    return CallbackKey(str(uuid.UUID(int=number)))


class World:
    """A core, the fake cluster and database, and the clock."""

    def __init__(self, *, scheduler_id: str = "1", **options: Any) -> None:
        options.setdefault("creation_batch_size", 100)
        self.config = ExecutorConfig(
            scheduler_id=scheduler_id,
            namespace=NS,
            airflow_version=VERSION,
            kube_image="airflow:3.3.2",
            rng=random.Random(7),
            **options,
        )
        self.cluster = FakeCluster(now=T0, namespaces=[NS])
        self.db = FakeAirflowDB()
        self.core = ExecutorCore(self.config)
        self.driver = CoreDriver(self.core, self.cluster, self.db)
        self.now = T0
        self.handled: list[Handled] = []
        self.core.on_decision = self.handled.append

    def submit(self, key: WorkloadKey, command: list[str] | None = None) -> None:
        if isinstance(key, TaskInstanceKey):
            self.db.add_task(key)
        else:
            self.db.add_callback(key)
        self.core.submit(KubernetesJob(key, command or ["python", "-m", "x"]))

    def sync(self) -> list[Any]:
        """Deliver the watch events, then one pass; the requests performed."""
        self.driver.deliver(now=self.now)
        return self.driver.run_pass(self.now).performed

    def pod_of(self, key: WorkloadKey) -> str:
        pods = [
            pod
            for pod in self.cluster.pods()
            if self.key_of(pod) == key and "deletionTimestamp" not in pod["metadata"]
        ]
        assert pods, f"no pod for {key!r}"
        newest = max(pods, key=lambda pod: pod["metadata"]["uid"])  # uids count up
        return str(newest["metadata"]["name"])

    @staticmethod
    def key_of(pod: dict[str, Any]) -> WorkloadKey:
        from k8s_workloads.codec import annotations_to_key  # noqa: PLC0415

        metadata = pod["metadata"]
        return annotations_to_key(
            metadata["annotations"], metadata["labels"], airflow_version=VERSION
        )

    def status(self, key: WorkloadKey, status: dict[str, Any]) -> None:
        self.cluster.set_status(NS, self.pod_of(key), status)


def kinds(requests: list[Any]) -> list[str]:
    return [type(request).__name__ for request in requests]


# --- the whole path -----------------------------------------------------------------------


def test_a_task_runs_to_success_and_its_pod_is_deleted() -> None:
    world = World()
    key = task()
    world.submit(key)
    assert kinds(world.sync()) == ["CreatePod"]
    world.status(key, RUNNING)
    assert world.sync() == []  # the provider's watcher reports no RUNNING for tasks
    world.db.task_started(key)
    world.db.task_finished(key, TaskInstanceState.SUCCESS)
    world.status(key, SUCCEEDED)
    performed = world.sync()
    assert kinds(performed) == ["ReadStates", "DeletePod", "EmitEvent"]
    assert performed[-1] == EmitEvent(key, TaskInstanceState.SUCCESS)
    assert world.core.running == ()
    assert world.cluster.pod_names() == []
    assert len(world.core.attempts) == 0


def test_a_callback_is_reported_running_then_success() -> None:
    world = World()
    key = callback()
    world.submit(key)
    world.sync()
    world.status(key, RUNNING)
    world.sync()
    world.status(key, SUCCEEDED)
    world.sync()
    assert world.db.reported(key) == [CallbackState.RUNNING, CallbackState.SUCCESS]
    assert world.db.callback_states[key] is CallbackState.SUCCESS
    assert world.core.running == ()


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


def test_a_terminal_callback_is_never_overwritten_but_its_pod_is_cleaned_up() -> None:
    world = World(decisions=DecisionConfig(delete_worker_pods_on_failure=True))
    key = callback()
    world.submit(key)
    world.sync()
    world.db.callback_states[key] = CallbackState.SUCCESS  # settled elsewhere
    world.status(key, OOM)
    performed = world.sync()
    assert not any(isinstance(request, EmitEvent) for request in performed)
    assert world.cluster.pod_names() == []
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
    world.core.feed_event({"type": "MODIFIED", "object": pod})  # delivered twice
    performed = world.driver.run_pass(world.now).performed
    deletes = [request for request in performed if isinstance(request, DeletePod)]
    assert len(deletes) == 1  # the provider deletes again for every duplicate (§7.3.3)
    assert world.db.reported(key) == [TaskInstanceState.FAILED]


@pytest.mark.parametrize(
    ("key", "status", "options"),
    [
        (task(), SUCCEEDED, {}),
        (callback(), SUCCEEDED, {}),
        (task(), OOM, {"decisions": DecisionConfig(delete_worker_pods_on_failure=True)}),
        (task(), SUCCEEDED, {"secure_payload": True}),
    ],
    ids=["succeeded task", "succeeded callback", "deleted failed task", "secure payload"],
)
def test_one_delete_per_pod_over_its_whole_life_with_its_deletion_events(
    key: WorkloadKey, status: dict[str, Any], options: dict[str, Any]
) -> None:
    # The pod's deletion makes two watch events, MODIFIED (deletionTimestamp) then
    # DELETED, fed together in the next pass: neither may make the core delete it again.
    world = World(**options)
    command = workload_command_args({"token": TOKEN, "ti": {"id": "x"}})
    world.submit(key, command)
    performed = world.sync()
    world.status(key, RUNNING)
    performed += world.sync()
    if isinstance(key, TaskInstanceKey):
        world.db.task_started(key)
        if status is SUCCEEDED:
            world.db.task_finished(key, TaskInstanceState.SUCCESS)
    name = world.pod_of(key)
    world.status(key, status)
    performed += world.sync()
    assert world.cluster.pod_names() == []
    seen = len(world.handled)
    for _ in range(3):  # the deletion events, and the passes after them
        performed += world.sync()
    after_delete = [h for h in world.handled[seen:] if h.result and h.result.pod_name == name]
    assert len(after_delete) == 2  # the MODIFIED and the DELETED event were both read
    deletes = [r for r in performed if isinstance(r, DeletePod)]
    assert [(d.namespace, d.pod_name) for d in deletes] == [(NS, name)]
    secrets = [r for r in performed if isinstance(r, DeleteSecret)]
    assert len(secrets) == (1 if options.get("secure_payload") else 0)
    assert [call for call, _, _ in world.cluster.calls].count("delete_pod") == 1
    assert world.core.running == ()


def test_a_pod_that_fails_before_the_task_ran_is_requeued_once() -> None:
    world = World()
    key = task()
    world.submit(key)
    world.sync()
    world.status(key, PULL_FAILED)
    performed = world.sync()
    assert kinds(performed) == ["ReadStates", "PatchLabels", "CreatePod"]
    assert world.core.attempts.get(key) is not None
    assert world.core.attempts.get(key).attempts == 1  # type: ignore[union-attr]
    assert world.db.reported(key) == []
    world.status(key, PULL_FAILED)
    world.sync()
    assert world.db.reported(key) == [TaskInstanceState.FAILED]
    assert world.core.running == ()


# --- pod creation -------------------------------------------------------------------------


def test_a_429_pauses_all_creation_until_retry_after() -> None:
    world = World(decisions=DecisionConfig(task_publish_max_retries=3))
    first, second = task("a"), task("b")
    world.submit(first)
    world.submit(second)
    world.cluster.fail_next(
        "create_pod", 429, reason="TooManyRequests", headers={"Retry-After": "5"}
    )
    world.driver.deliver(now=world.now)
    report = world.driver.run_pass(world.now)
    assert kinds(report.performed) == ["CreatePod"]  # no second creation in that pass
    assert world.core.paused_until == T0 + datetime.timedelta(seconds=5)
    assert report.until == T0 + datetime.timedelta(seconds=5)
    assert world.core.create_retries(first) == 1
    world.now = T0 + datetime.timedelta(seconds=4)
    assert world.sync() == []
    world.now = T0 + datetime.timedelta(seconds=5)
    assert kinds(world.sync()) == ["CreatePod", "CreatePod"]
    assert len(world.cluster.pod_names()) == 2
    assert world.core.create_retries(first) == 0


@pytest.mark.parametrize(
    ("status", "message"),
    [(500, "etcdserver: request timed out"), (None, "")],
)
def test_transient_creation_errors_are_retried_within_the_budget(
    status: int | None, message: str
) -> None:
    world = World(decisions=DecisionConfig(task_publish_max_retries=1))
    key = task()
    world.submit(key)
    world.cluster.fail_next("create_pod", status, message=message, times=2)
    world.sync()
    assert world.core.is_running(key)
    assert world.core.create_retries(key) == 1
    world.sync()  # the second failure exhausts the budget of one retry
    assert not world.core.running
    (event,) = world.db.events
    assert event.state is TaskInstanceState.FAILED
    assert "retries are exhausted" in (event.info or "")


def test_a_fatal_creation_error_fails_the_workload_at_once() -> None:
    world = World(decisions=DecisionConfig(task_publish_max_retries=5))
    key = callback()
    world.submit(key)
    world.cluster.fail_next("create_pod", 422, reason="Invalid", message='Pod "p" is invalid')
    world.sync()
    assert world.db.reported(key) == [CallbackState.FAILED]
    assert world.core.running == ()
    assert world.core.attempts.get(key) is None
    assert world.handled[-1].cause == "create error"


def test_a_pod_that_cannot_be_built_fails_its_workload() -> None:
    world = World(pod_template={"spec": {"containers": "not a list"}})
    key = task()
    world.submit(key)
    performed = world.sync()
    assert kinds(performed) == ["EmitEvent"]
    assert performed[0].state is TaskInstanceState.FAILED
    assert "could not be built" in performed[0].info
    assert world.core.running == ()


@pytest.mark.parametrize("secure", [False, True])
@pytest.mark.parametrize(
    ("options", "override", "expected"),
    [
        ({}, {"metadata": {"name": "Bad_Name!"}}, "metadata.name: 'Bad_Name!' must consist"),
        ({}, {"spec": {"hostNetwork": "False,"}}, "spec.hostNetwork: must be a boolean"),
        # A namespace from a job's override (the configured one is checked when the
        # ExecutorConfig is made: InvalidConfig, tests/test_config.py).
        ({}, {"metadata": {"namespace": "Bad NS"}}, "metadata.namespace: 'Bad NS'"),
        (
            {"mutation_hook": lambda pod: pod["spec"]["containers"][0].update(name=TOKEN)},
            None,
            "the pod mutation hook returned a pod the API server refuses",
        ),
    ],
)
def test_a_pod_the_api_server_would_refuse_fails_its_workload_with_the_reason(
    options: dict[str, Any], override: dict[str, Any] | None, expected: str, *, secure: bool
) -> None:
    # Issue 11, item 4: the builders' typed error (a ValueError) becomes a failed
    # workload carrying the library's message, never the token; no pod is created.
    options = dict(options)  # shared by both values of secure
    namespace = options.pop("namespace", NS)
    world = World(secure_payload=secure, **options)
    world.config = attrs.evolve(world.config, namespace=namespace)
    world.core = ExecutorCore(world.config)
    world.driver = CoreDriver(world.core, world.cluster, world.db)
    key = task()
    world.db.add_task(key)
    command = workload_command_args({"token": TOKEN, "ti": {"id": "x"}})
    world.core.submit(KubernetesJob(key, command, pod_override=override))
    performed = world.driver.run_pass(world.now).performed
    assert kinds(performed) == ["EmitEvent"]
    (failed,) = performed
    assert isinstance(failed, EmitEvent)
    assert failed.state is TaskInstanceState.FAILED
    assert failed.info is not None
    assert failed.info.startswith("the pod could not be built: ")
    assert expected in failed.info
    assert TOKEN[:8] not in failed.info
    assert world.cluster.pods() == []
    assert world.core.running == ()
    assert world.db.reported(key) == [TaskInstanceState.FAILED]


def test_a_job_naming_a_template_file_gets_it_from_load_template() -> None:
    loaded: list[str] = []

    def load(path: str) -> dict[str, Any]:
        loaded.append(path)
        return {
            "metadata": {"labels": {"team": "data"}},
            "spec": {"containers": [{"name": "base"}]},
        }

    world = World(load_template=load)
    key = task()
    world.db.add_task(key)
    world.core.submit(KubernetesJob(key, ["x"], pod_template_file="/templates/data.yaml"))
    world.sync()
    (pod,) = world.cluster.pods()
    assert loaded == ["/templates/data.yaml"]
    assert pod["metadata"]["labels"]["team"] == "data"


def test_a_template_file_without_a_loader_is_a_clear_failure() -> None:
    world = World()
    key = task()
    world.db.add_task(key)
    world.core.submit(KubernetesJob(key, ["x"], pod_template_file="/t.yaml"))
    world.sync()
    (event,) = world.db.events
    assert "pod_template_file '/t.yaml': no load_template configured" in (event.info or "")


def test_secure_payload_puts_the_workload_in_a_secret_and_deletes_it_with_the_pod() -> None:
    world = World(secure_payload=True)
    key = task()
    command = workload_command_args({"token": TOKEN, "ti": {"id": "x"}})
    world.submit(key, command)
    performed = world.sync()
    (create,) = performed
    assert isinstance(create, CreatePod)
    assert create.secret is not None
    assert TOKEN not in json.dumps(create.pod)
    assert TOKEN in json.dumps(create.secret)
    assert TOKEN not in repr(create)
    assert "--json-path" in create.pod["spec"]["containers"][0]["args"]
    assert world.cluster.secret_names() == [create.secret["metadata"]["name"]]
    world.db.task_finished(key, TaskInstanceState.SUCCESS)
    world.status(key, SUCCEEDED)
    performed = world.sync()
    assert kinds(performed) == ["ReadStates", "DeletePod", "DeleteSecret", "EmitEvent"]
    assert world.cluster.secret_names() == []


# --- failures while handling results -------------------------------------------------------


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
    assert kinds(performed) == ["ReadStates", "DeletePod", "EmitEvent"]
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


def test_a_failed_pod_call_stops_the_decision_and_retries_next_pass() -> None:
    world = World()
    key = callback()
    world.submit(key)
    world.sync()
    world.status(key, SUCCEEDED)
    world.cluster.fail_next("delete_pod", 503)
    performed = world.sync()
    assert kinds(performed) == ["ReadStates", "DeletePod"]
    assert world.db.events == []
    assert world.core.running == (key,)
    world.sync()
    assert world.db.reported(key) == [CallbackState.SUCCESS]


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


# --- the watch ---------------------------------------------------------------------------


def test_a_410_relists_and_settles_a_workload_whose_pod_vanished() -> None:
    world = World()
    gone, kept = task("gone"), task("kept")
    world.submit(gone)
    world.submit(kept)
    world.sync()
    world.status(gone, RUNNING)
    world.status(kept, RUNNING)
    world.db.task_started(gone)
    world.sync()
    world.cluster.delete_pod(NS, world.pod_of(gone))
    world.driver.watch.events()  # the watch missed the deletion ...
    world.cluster.expire_watches()  # ... and expired
    performed = world.sync()
    assert isinstance(performed[0], ListPods)
    assert world.db.reported(gone) == [TaskInstanceState.FAILED]
    assert "vanished" in (world.db.events[0].info or "")
    assert world.core.running == (kept,)
    assert world.core.resource_version == world.cluster.resource_version
    # The new watch goes on from the list: the kept pod's success still arrives.
    world.db.task_finished(kept, TaskInstanceState.SUCCESS)
    world.status(kept, SUCCEEDED)
    world.sync()
    assert world.db.reported(kept) == [TaskInstanceState.SUCCESS]


def test_the_resource_version_follows_the_events() -> None:
    world = World()
    world.submit(task())
    world.sync()
    world.sync()
    assert world.core.resource_version == world.cluster.resource_version


@pytest.mark.parametrize("event", ["{not json", b"\xff\xfe", "[1, 2]", '{"type": "ADDED"}'])
def test_garbage_from_the_watch_is_reported_never_raised(event: str | bytes) -> None:
    core = World().core
    assert core.feed_event(event).outcome is Outcome.MALFORMED
    assert isinstance(core.next_request(T0), NothingToDo)


# --- adoption and revoke -------------------------------------------------------------------


def test_a_restarted_scheduler_adopts_the_dead_ones_pods() -> None:
    old = World(scheduler_id="1")
    running_task, running_callback, done_task = task("a"), callback(), task("b")
    for key in (running_task, running_callback, done_task):
        old.submit(key)
    old.sync()
    old.status(running_task, RUNNING)
    old.status(running_callback, RUNNING)
    old.status(done_task, SUCCEEDED)
    # Scheduler 1 dies before reading any of it; scheduler 2 takes over.
    new_core = ExecutorCore(ExecutorConfig(scheduler_id="2", namespace=NS, airflow_version=VERSION))
    driver = CoreDriver(new_core, old.cluster, old.db)
    plan, reset = driver.adopt(
        ["1"],
        now=T0,
        expected_task_keys=[running_task, done_task, task("lost")],
        expected_callback_keys=[running_callback],
    )
    assert plan.adopted == {running_task, running_callback}
    assert reset == [done_task, task("lost")]  # a Succeeded pod's task is not running
    assert set(new_core.running) == {running_task, running_callback}
    owners = {pod["metadata"]["labels"][AIRFLOW_WORKER_LABEL] for pod in old.cluster.pods()}
    assert owners == {"2"}
    assert done_task not in {old.key_of(pod) for pod in old.cluster.pods()}  # cleaned up
    # A retried adoption (Airflow retries on a database error) resets nothing it owns.
    _, reset_again = driver.adopt(["1"], now=T0, expected_task_keys=[running_task])
    assert reset_again == []


def test_a_failed_relabel_leaves_the_task_to_be_reset() -> None:
    old = World(scheduler_id="1")
    key = task()
    old.submit(key)
    old.sync()
    old.status(key, RUNNING)
    new_core = ExecutorCore(ExecutorConfig(scheduler_id="2", namespace=NS, airflow_version=VERSION))
    driver = CoreDriver(new_core, old.cluster, old.db)
    old.cluster.fail_next("patch_pod", 500)
    _, reset = driver.adopt(["1"], now=T0, expected_task_keys=[key])
    assert reset == [key]
    assert new_core.running == ()


def test_revoke_drops_the_job_marks_and_deletes_the_pod_and_reports_nothing() -> None:
    world = World()
    started, queued = task("a"), task("b")
    world.submit(started)
    world.sync()
    world.submit(queued)
    pods = world.cluster.pods()
    world.core.revoke(queued, pods)
    world.core.revoke(started, pods)
    performed = world.sync()
    assert [type(r) for r in performed] == [PatchLabels, DeletePod]
    assert performed[0].labels == {POD_REVOKED_LABEL: TRUE_LABEL_VALUE}
    assert world.core.running == ()
    assert world.core.queued == ()
    assert world.cluster.pod_names() == []
    assert world.db.events == []


def test_launches_under_one_fixed_pod_name_are_told_apart_by_their_uid() -> None:
    # Issue 11, item 11: a fixed pod name (here an override's metadata.name) and deleted
    # failed pods. Launch 1 fails before the task runs and is requeued; launch 2, under the
    # same name, really fails: that must be reported, not ignored as launch 1's duplicate.
    decisions = DecisionConfig(delete_worker_pods_on_failure=True)
    world = World(decisions=decisions)
    key = task("fixed")
    world.db.add_task(key)
    world.core.submit(
        KubernetesJob(key, ["run"], pod_override={"metadata": {"name": "etl-fixed-pod"}})
    )
    world.sync()
    first = world.cluster.pod(NS, "etl-fixed-pod")
    assert first is not None
    world.status(key, PULL_FAILED)  # the row is still queued: a pre-execution failure
    world.sync()
    world.sync()  # the old pod deleted, the job created again under the same name
    second = world.cluster.pod(NS, "etl-fixed-pod")
    assert second is not None
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    assert world.db.reported(key) == []  # the requeue is not a report
    world.db.task_started(key)
    world.status(key, OOM)
    world.sync()
    world.sync()
    assert world.db.reported(key) == [TaskInstanceState.FAILED]
    assert world.core.running == ()


def test_a_skipped_creation_drops_the_job_without_an_event_or_a_pod() -> None:
    core = ExecutorCore(ExecutorConfig(scheduler_id="1", namespace=NS, airflow_version=VERSION))
    handled: list[Any] = []
    core.on_decision = handled.append
    stale, fresh = task("stale"), task("fresh")
    for key in (stale, fresh):
        core.submit(KubernetesJob(key, ["run"]))
    created, seen = [], []
    for _ in range(3):  # one creation per pass (worker_pods_creation_batch_size 1)
        while not isinstance(request := core.next_request(T0), NothingToDo):
            seen.append(type(request).__name__)
            if isinstance(request, CreatePod) and request.key == stale:
                core.create_skipped(request, "taken over by scheduler 9")
            elif isinstance(request, CreatePod):
                created.append(request.key)
    assert created == [fresh]
    assert "EmitEvent" not in seen  # nothing reported: the workload is someone else's
    assert core.running == (fresh,)
    assert core.queued == ()
    assert core.attempts.get(stale) is None
    assert [(h.key, h.cause) for h in handled] == [(stale, "stale")]
    assert "taken over by scheduler 9" in handled[0].decision.reason
    assert (stale, False) in core.take_running_changes()


def test_only_the_request_being_performed_can_be_skipped() -> None:
    core = ExecutorCore(ExecutorConfig(scheduler_id="1", namespace=NS, airflow_version=VERSION))
    core.submit(KubernetesJob(task(), ["run"]))
    request = core.next_request(T0)
    assert isinstance(request, CreatePod)
    core.create_skipped(request, "stale")
    with pytest.raises(ProtocolError, match="not a request in flight"):
        core.create_skipped(request, "stale")


# --- the protocol --------------------------------------------------------------------------


def test_a_state_read_must_be_answered_before_the_next_request() -> None:
    world = World()
    key = callback()
    world.submit(key)
    world.sync()
    world.status(key, SUCCEEDED)
    world.driver.deliver(now=T0)
    request = world.core.next_request(T0)
    assert isinstance(request, ReadStates)
    with pytest.raises(ProtocolError, match="states_read"):
        world.core.next_request(T0)
    with pytest.raises(InvalidStateAnswer, match="expected a CallbackState"):
        world.core.states_read(request, {key: TaskInstanceState.SUCCESS})
    world.core.states_read(request, {key: CallbackState.RUNNING})
    with pytest.raises(ProtocolError):
        world.core.states_read(request, {key: CallbackState.RUNNING})


def test_submitting_a_running_workload_twice_is_an_error() -> None:
    world = World()
    world.submit(task())
    with pytest.raises(WorkloadAlreadyRunning):
        world.core.submit(KubernetesJob(task(), ["x"]))


def test_only_the_request_being_performed_can_fail() -> None:
    world = World()
    with pytest.raises(ProtocolError):
        world.core.request_failed(DeleteSecret("s", NS), RuntimeError("x"))


def test_the_creation_batch_size_bounds_pods_per_pass() -> None:
    world = World(creation_batch_size=2)
    for number in range(5):
        world.submit(task(f"t{number}"))
    assert kinds(world.driver.run_pass(T0).performed) == ["CreatePod", "CreatePod"]
    assert len(world.core.queued) == 3


_SCRIPT = """
import datetime, random, sys, uuid
sys.path[:0] = {paths!r}
from tests.executor.test_core import World, task, callback, RUNNING, SUCCEEDED, OOM
world = World()
keys = [task(f"t{{i}}") for i in range(8)] + [callback(i) for i in range(1, 5)]
for key in keys:
    world.submit(key)
out = [repr(r) for r in world.sync()]
for index, key in enumerate(keys):
    world.status(key, [RUNNING, SUCCEEDED, OOM][index % 3])
world.cluster.expire_watches()
for _ in range(3):
    out += [repr(r) for r in world.sync()]
print("\\n".join(out))
"""


def test_the_same_run_gives_the_same_requests_under_any_hash_seed() -> None:
    import pathlib  # noqa: PLC0415

    # The tests' root, and the package this process runs (a worktree's, not the install's).
    root = str(pathlib.Path(__file__).resolve().parents[2])
    paths = [root, str(pathlib.Path(k8s_workloads.__file__).resolve().parents[1])]
    outputs = set()
    for seed in ("0", "1", "12345"):
        run = subprocess.run(
            [sys.executable, "-c", _SCRIPT.format(paths=paths)],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        )
        assert run.stdout.count("\n") > 20
        outputs.add(run.stdout)
    assert len(outputs) == 1


def test_running_changes_are_reported_once_each_in_order() -> None:
    world = World()
    first, second = task("a"), task("b")
    world.submit(first)
    world.submit(second)
    world.sync()
    assert world.core.take_running_changes() == []  # submit is the caller's own doing
    world.db.task_finished(second, TaskInstanceState.SUCCESS)
    world.status(second, SUCCEEDED)
    world.sync()
    assert world.core.take_running_changes() == [(second, False)]
    assert world.core.take_running_changes() == []


@pytest.mark.parametrize(("version", "lists"), [("3.3.2", 3), ("3.2.2", 2)])
def test_the_core_names_the_adoption_lists_for_its_airflow(version: str, lists: int) -> None:
    # Callback pods are listed only where Airflow runs callbacks on executors (3.3+).
    core = ExecutorCore(ExecutorConfig(scheduler_id="2", namespace=NS, airflow_version=version))
    selectors = core.adoption_selectors(["1"], ["5"])
    assert len(selectors) == lists
    assert ("airflow-workload-type=callback" in selectors[1].label_selector) is (lists == 3)
    assert selectors[-1].label_selector.endswith(
        "airflow-worker notin (2,5),airflow_executor_done!=True"
    )


def test_a_status_update_between_the_list_and_the_relabel_does_not_fail_adoption() -> None:
    # Issue 19, item 2: the pod's kubelet writes its status after the adopter listed it
    # (a new resourceVersion); the relabel tests the owner, not the version.
    old = World(scheduler_id="1")
    key = task()
    old.submit(key)
    old.sync()
    old.status(key, RUNNING)
    core = ExecutorCore(ExecutorConfig(scheduler_id="2", namespace=NS, airflow_version=VERSION))
    driver = CoreDriver(core, old.cluster, old.db)
    listed = [
        pod
        for selector in core.adoption_selectors(["1"])
        for pod in old.cluster.list_pods(
            NS, label_selector=selector.label_selector, field_selector=selector.field_selector
        )["items"]
    ]
    (pod,) = listed
    name = pod["metadata"]["name"]
    old.status(key, {**RUNNING, "podIP": "10.0.0.7"})  # a status update meanwhile
    moved = old.cluster.pod(NS, name)
    assert moved is not None
    assert moved["metadata"]["resourceVersion"] != pod["metadata"]["resourceVersion"]
    core.adopt(listed, expected_task_keys=[key])
    report = driver.run_pass(T0)
    assert report.failed == []
    assert core.is_running(key)
    assert core.not_adopted([key]) == []
    adopted = old.cluster.pod(NS, name)
    assert adopted is not None
    assert adopted["metadata"]["labels"][AIRFLOW_WORKER_LABEL] == "2"


def test_no_repr_of_a_job_decision_or_record_shows_the_workload_token() -> None:
    from k8s_workloads.decisions.actions import Decision, RequeueJob  # noqa: PLC0415
    from k8s_workloads.decisions.attempts import Attempt, Attempts  # noqa: PLC0415

    args = workload_command_args({"token": TOKEN, "ti": {"id": "x"}})
    job = KubernetesJob(task(), args)
    also = KubernetesJob(task("b"), ["python", "--json-s", json.dumps({"token": TOKEN})])
    equals = KubernetesJob(task("c"), [f"--json-string={json.dumps({'token': TOKEN})}"])
    attempts = Attempts({job.key: Attempt(job)})
    decision = Decision((RequeueJob(job, "why"),), attempts)
    for value in (job, also, equals, attempts, decision, Handled(job.key, "result", decision)):
        text = repr(value)
        assert TOKEN not in text
        assert "***REDACTED***" in text
    assert "'python', '-m', 'airflow.sdk.execution_time.execute_workload'" in repr(job)
    assert job.command == tuple(args)  # the job itself keeps the token for the pod


def test_of_two_schedulers_adopting_one_pod_only_one_tracks_it() -> None:
    # Issue 11, item 12, and issue 19, item 2: the relabel tests the listed owner; the
    # slower scheduler's test fails (422) and it neither tracks nor later fails the
    # workload.
    old = World(scheduler_id="1")
    key = task()
    old.submit(key)
    old.sync()
    old.status(key, RUNNING)
    listed = old.cluster.pods()
    cores = [
        ExecutorCore(ExecutorConfig(scheduler_id=job, namespace=NS, airflow_version=VERSION))
        for job in ("2", "3")
    ]
    drivers = [CoreDriver(core, old.cluster, old.db) for core in cores]
    for core in cores:
        core.adopt(listed, expected_task_keys=[key])
    for driver in drivers:
        driver.run_pass(T0)
    assert [core.is_running(key) for core in cores] == [True, False]
    assert cores[1].not_adopted([key]) == [key]
    (pod,) = old.cluster.pods()
    assert pod["metadata"]["labels"][AIRFLOW_WORKER_LABEL] == "2"

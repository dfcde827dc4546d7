"""Pod creation in the executor core (:mod:`k8s_workloads.executor._creation`): the 429
pause, the retry budget of transient errors, a fatal error or a pod that cannot be built
failing its workload, templates, secure payloads, and skipped creations."""

from __future__ import annotations

import datetime
import json
from typing import Any

import attrs
import pytest

from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.actions import EmitEvent
from k8s_workloads.executor import (
    CreatePod,
    ExecutorConfig,
    ExecutorCore,
    NothingToDo,
    ProtocolError,
)
from k8s_workloads.pods import workload_command_args
from k8s_workloads.states import CallbackState, KubernetesJob, TaskInstanceState
from k8s_workloads.testing import CoreDriver
from tests.support.core_world import NS, T0, TOKEN, VERSION, World, callback, kinds, task
from tests.support.event_factory import SUCCEEDED


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
        # ExecutorConfig is made: InvalidConfig, tests/test__config.py).
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


def test_the_creation_batch_size_bounds_pods_per_pass() -> None:
    world = World(creation_batch_size=2)
    for number in range(5):
        world.submit(task(f"t{number}"))
    assert kinds(world.driver.run_pass(T0).performed) == ["CreatePod", "CreatePod"]
    assert len(world.core.queued) == 3

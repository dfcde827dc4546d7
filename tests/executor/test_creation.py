"""Pod creation in the executor core (:mod:`k8s_workloads.executor._creation`): the 429
pause, the retry budget of transient errors, a creation with no clear answer read back
(one pod per attempt), one that never reached the server waiting, a fatal error or a pod
that cannot be built failing its workload, templates, secure payloads, and skipped
creations."""

from __future__ import annotations

import datetime
import json
import re
from typing import Any

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
from k8s_workloads.pods import InvalidJob, InvalidPod, workload_command_args
from k8s_workloads.states import CallbackState, KubernetesJob, TaskInstanceState
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


def test_a_5xx_is_read_back_then_retried_within_the_budget() -> None:
    world = World(decisions=DecisionConfig(task_publish_max_retries=1))
    key = task()
    world.submit(key)
    world.cluster.fail_next("create_pod", 500, message="etcdserver: request timed out", times=2)
    assert kinds(world.sync()) == ["CreatePod", "ReadPod"]  # no pod: the 500 counts
    assert world.core.is_running(key)
    assert world.core.create_retries(key) == 1
    assert kinds(world.sync()) == ["CreatePod", "ReadPod", "EmitEvent"]  # budget spent
    assert not world.core.running
    (event,) = world.db.events
    assert event.state is TaskInstanceState.FAILED
    assert "retries are exhausted" in (event.info or "")
    assert world.cluster.pod_names() == []


def test_a_5xx_whose_write_landed_is_the_pod_created_even_with_no_retries_left() -> None:
    world = World()  # task_publish_max_retries = 0: the provider fails the task here
    key = task()
    world.submit(key)
    world.cluster.fail_next("create_pod", 504, reason="Timeout", applied=True)
    assert kinds(world.sync()) == ["CreatePod", "ReadPod"]
    assert world.core.is_running(key)
    assert world.db.events == []
    assert [h.cause for h in world.handled] == ["create unknown", "create confirmed"]
    assert len(world.cluster.pod_names()) == 1


@pytest.mark.parametrize("applied", [True, False], ids=["answer lost", "reset before"])
def test_a_creation_with_no_answer_is_read_back_and_makes_one_pod(applied: bool) -> None:
    world = World(decisions=DecisionConfig(task_publish_max_retries=0))
    key = task()
    world.submit(key)
    world.cluster.fail_next("create_pod", None, applied=applied)
    performed = world.sync()
    assert kinds(performed) == ["CreatePod", "ReadPod"]
    if not applied:  # sent again (next pass) under the same name, not counted as a retry
        (again,) = world.sync()
        assert isinstance(again, CreatePod)
        assert again.resend
        assert again.pod_name == performed[0].pod_name
    (name,) = world.cluster.pod_names()
    assert name == performed[0].pod_name
    assert world.core.create_retries(key) == 0
    world.db.task_finished(key, TaskInstanceState.SUCCESS)
    world.status(key, SUCCEEDED)
    assert "DeletePod" in kinds(world.sync())
    assert not world.core.running
    assert [event.state for event in world.db.events] == [TaskInstanceState.SUCCESS]


def test_a_refused_creation_waits_backing_off_with_one_probe_and_is_no_attempt() -> None:
    world = World(decisions=DecisionConfig(task_publish_max_retries=0))
    keys = [task(name) for name in ("a", "b", "c")]
    for key in keys:
        world.submit(key)
    world.cluster.fail_next("create_pod", None, refused=True, times=3)
    performed = world.sync()
    assert kinds(performed) == ["CreatePod"]  # the rest wait for the server
    assert world.core.paused_until == T0 + datetime.timedelta(seconds=1)
    assert [entry.key for entry in world.core.queued] == keys  # the first is still first
    for wait in (1, 2, 4):  # doubling while the server refuses
        world.now += datetime.timedelta(seconds=wait)
        assert kinds(world.sync()) == (["CreatePod"] if wait < 4 else ["CreatePod"] * 3)
    assert len(world.cluster.pod_names()) == 3
    assert world.db.events == []
    assert all(world.core.create_retries(key) == 0 for key in keys)
    assert [h.cause for h in world.handled] == ["create unsent"] * 3
    assert [h.pod_name for h in world.handled] == [performed[0].pod_name] * 3


def test_a_callback_waits_for_the_server_no_longer_than_its_timeout() -> None:
    world = World(decisions=DecisionConfig(callback_queued_timeout=10))
    key = callback()
    world.submit(key)
    world.cluster.fail_next("create_pod", None, refused=True, times=100)
    for _ in range(6):  # 0, 1, 3, 7, 15: the first attempt past 10 s fails it
        world.sync()
        if not world.core.running:
            break
        world.now = world.core.paused_until or world.now
    assert not world.core.running
    (event,) = world.db.events
    assert event.state is CallbackState.FAILED
    assert "callback_queued_timeout" in (event.info or "")
    assert world.now - T0 >= datetime.timedelta(seconds=10)


def test_nothing_is_decided_until_a_read_back_answers() -> None:
    world = World()
    key = task()
    world.submit(key)
    world.cluster.fail_next("create_pod", None, applied=True)
    world.cluster.fail_next("read_pod", None, refused=True, times=2)
    assert kinds(world.sync()) == ["CreatePod", "ReadPod"]
    assert world.core.has_work
    assert world.sync() == []  # the read back waits 1 s
    world.status(key, SUCCEEDED)  # its result waits for the read back too
    world.db.task_finished(key, TaskInstanceState.SUCCESS)
    world.now += datetime.timedelta(seconds=1)
    assert kinds(world.sync()) == ["ReadPod"]  # refused again: 2 s now
    world.now += datetime.timedelta(seconds=2)
    assert kinds(world.sync()) == ["ReadPod", "ReadStates", "EmitEvent", "DeletePod"]
    assert not world.core.running
    assert world.cluster.pod_names() == []
    assert [event.state for event in world.db.events] == [TaskInstanceState.SUCCESS]


def test_a_resent_pod_keeps_its_secret() -> None:
    world = World(secure_payload=True)
    key = task()
    world.submit(key, workload_command_args({"token": TOKEN, "ti": {"id": "x"}}))
    world.cluster.fail_next("create_pod", None)  # the Secret is made, the pod is not
    performed = world.sync() + world.sync()
    assert kinds(performed) == ["CreatePod", "ReadPod", "CreatePod"]
    assert performed[2].secret == performed[0].secret  # its 409 is the first send's Secret
    assert len(world.cluster.pod_names()) == 1
    assert len(world.cluster.secret_names()) == 1


def test_a_409_to_a_first_send_fails_as_the_provider_does() -> None:
    world = World(decisions=DecisionConfig(task_publish_max_retries=3))
    key = task()
    world.submit(key)
    world.cluster.fail_next("create_pod", 409, reason="AlreadyExists", message="exists")
    assert kinds(world.sync()) == ["CreatePod", "EmitEvent"]
    (event,) = world.db.events
    assert event.state is TaskInstanceState.FAILED


def test_a_revoked_task_whose_pod_is_read_back_has_it_deleted() -> None:
    world = World()
    key = task()
    world.submit(key)
    world.cluster.fail_next("create_pod", None, applied=True)
    world.cluster.fail_next("read_pod", None, refused=True)
    world.sync()
    world.core.revoke(key, [])
    world.now += datetime.timedelta(seconds=1)
    assert kinds(world.sync()) == ["ReadPod", "DeletePod"]
    assert world.cluster.pod_names() == []
    assert world.db.events == []


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


@pytest.mark.parametrize(
    ("override", "field", "expected"),
    [
        ({"metadata": {"name": "Bad_Name!"}}, "metadata.name", "'Bad_Name!' must consist"),
        ({"spec": {"hostNetwork": "False,"}}, "spec.hostNetwork", "must be a boolean"),
        # A namespace from a job's override (the configured one is checked when the
        # ExecutorConfig is made: InvalidConfig, tests/test__config.py).
        ({"metadata": {"namespace": "Bad NS"}}, "metadata.namespace", "'Bad NS'"),
        ({"metadata": {"labels": {"team": "a b"}}}, "metadata.labels['team']", "'a b'"),
        ({"spec": {"containers": [{"name": "Base_1"}]}}, "spec.containers[0].name", "Base_1"),
    ],
)
def test_a_pod_override_the_api_server_would_refuse_is_refused_at_submit(
    override: dict[str, Any], field: str, expected: str
) -> None:
    # Issue 30, item 5: the builders' typed error, naming the field, before the job is
    # taken on (it used to fail the workload when its pod was built).
    world = World()
    key = task()
    with pytest.raises(InvalidPod, match=re.escape(expected)) as refused:
        world.core.submit(KubernetesJob(key, ["x"], pod_override=override))
    assert refused.value.field == field
    assert str(refused.value).startswith("pod_override: ")
    assert world.core.running == ()
    assert world.core.queued == ()
    assert world.sync() == []


@pytest.mark.parametrize("secure", [False, True])
def test_a_pod_the_api_server_would_refuse_fails_its_workload_with_the_reason(
    *, secure: bool
) -> None:
    # Issue 11, item 4: the builders' typed error (a ValueError) becomes a failed
    # workload carrying the library's message, never the token; no pod is created. What
    # only building decides (here the mutation hook's pod) still fails the workload then.
    world = World(
        secure_payload=secure,
        mutation_hook=lambda pod: pod["spec"]["containers"][0].update(name=TOKEN),
    )
    key = task()
    world.db.add_task(key)
    command = workload_command_args({"token": TOKEN, "ti": {"id": "x"}})
    world.core.submit(KubernetesJob(key, command))
    performed = world.driver.run_pass(world.now).performed
    assert kinds(performed) == ["EmitEvent"]
    (failed,) = performed
    assert isinstance(failed, EmitEvent)
    assert failed.state is TaskInstanceState.FAILED
    assert failed.info is not None
    assert failed.info.startswith("the pod could not be built: ")
    assert "the pod mutation hook returned a pod the API server refuses" in failed.info
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


def test_a_template_file_without_a_loader_is_refused_at_submit() -> None:
    world = World()
    key = task()
    words = re.escape("'/t.yaml': no load_template configured")
    with pytest.raises(InvalidJob, match=words) as refused:
        world.core.submit(KubernetesJob(key, ["x"], pod_template_file="/t.yaml"))
    assert refused.value.field == "pod_template_file"
    assert world.core.running == ()


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
    assert kinds(performed) == ["ReadStates", "EmitEvent", "DeletePod", "DeleteSecret"]
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


def test_a_pod_the_watch_showed_is_created_even_when_gone_at_its_read_back() -> None:
    # Found by the thorough profile: the answer was lost, the read back met the outage,
    # and meanwhile the pod ran and was deleted by someone else; sent again, the task
    # ran twice.
    world = World()
    key = task()
    world.submit(key)
    world.cluster.fail_next("create_pod", None, applied=True)
    world.cluster.fail_next("read_pod", None, refused=True)
    assert kinds(world.sync()) == ["CreatePod", "ReadPod"]
    world.cluster.remove_pod(NS, world.pod_of(key))
    world.driver.deliver(now=world.now)  # its ADDED and DELETED events
    world.now += datetime.timedelta(seconds=1)
    assert "CreatePod" not in kinds(world.sync())
    assert [h.cause for h in world.handled][:2] == ["create unknown", "create confirmed"]
    assert [call for call in world.cluster.calls if call[0] == "create_pod"] == [
        ("create_pod", NS, world.handled[0].pod_name)
    ]
    assert world.cluster.pod_names() == []


def test_a_creation_that_never_gets_an_answer_backs_off_and_lets_the_others_go() -> None:
    # Review finding: sent again at once after every read back, it spun and held up the
    # jobs behind it. A callback still fails after its callback_queued_timeout.
    world = World(creation_batch_size=1, decisions=DecisionConfig(callback_queued_timeout=20))
    stuck, other = callback(1), task("other")
    world.submit(stuck)
    world.submit(other)
    world.cluster.fail_next("create_pod", None, times=1)
    world.cluster.fail_next("create_pod", None, times=100)  # the second send goes the same way
    sends = 0
    for _ in range(40):
        sends += sum(
            1 for request in world.sync() if isinstance(request, CreatePod) and request.key == stuck
        )
        world.now += datetime.timedelta(seconds=1)
        if not world.core.is_running(stuck):
            break
    assert not world.core.is_running(stuck)
    (event,) = [e for e in world.db.events if e.key == stuck]
    assert event.state is CallbackState.FAILED
    assert "callback_queued_timeout" in (event.info or "")
    assert sends <= 7  # backing off: at once, then after 1, 2, 4, 8 s ... (not every pass)
    # The job behind it was tried meanwhile (the fault meets every creation here).
    tried = {name for call, _, name in world.cluster.calls if call == "create_pod"}
    assert len(tried) == 2


def test_a_revoked_workload_sent_and_not_made_leaves_no_secret() -> None:
    # Review finding: its Secret (the workload's token) stayed.
    world = World(secure_payload=True, creation_batch_size=1)
    key = task()
    world.submit(key, workload_command_args({"token": TOKEN, "ti": {"id": "x"}}))
    world.cluster.fail_next("create_pod", None)
    assert kinds(world.sync()) == ["CreatePod", "ReadPod"]
    assert len(world.cluster.secret_names()) == 1
    world.core.revoke(key, [])
    assert "DeleteSecret" in kinds(world.sync())
    assert world.cluster.secret_names() == []
    assert world.cluster.pod_names() == []


def test_an_earlier_attempts_pod_of_a_fixed_name_is_not_this_attempts() -> None:
    # Review finding: its DELETED event, fed while the new attempt's creation was read
    # back, made that creation count as made.
    world = World()
    key = task()
    world.submit(key)
    world.cluster.fail_next("create_pod", None)  # reset: never stored
    world.cluster.fail_next("read_pod", None, refused=True)
    assert kinds(world.sync()) == ["CreatePod", "ReadPod"]
    (record,) = world.core._unresolved.values()  # the state under test
    sent: dict[str, Any] = record.request.pod
    metadata = {
        **sent["metadata"],
        "resourceVersion": "9",
        # another try's pod that bore this name
        "annotations": {**sent["metadata"]["annotations"], "try_number": "9"},
    }
    other = {"type": "DELETED", "object": {**sent, "metadata": metadata, "status": {}}}
    world.core.feed_event(json.dumps(other), now=world.now)
    assert not record.seen
    world.now += datetime.timedelta(seconds=1)
    world.sync()
    world.sync()
    assert len(world.cluster.pod_names()) == 1  # created, not taken for made

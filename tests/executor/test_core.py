"""ExecutorCore (:mod:`k8s_workloads.executor.core`): the loop's rules, driven through the
public test kit; its parts' own rules are in ``test_creation.py``, ``test_handling.py``,
``test_adopting.py`` and ``test_base.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

import k8s_workloads
from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.actions import DeletePod, EmitEvent
from k8s_workloads.executor import (
    CreatePod,
    DeleteSecret,
    Handled,
    InvalidStateAnswer,
    ListPods,
    NothingToDo,
    ProtocolError,
    ReadStates,
    Request,
    Waiting,
    WorkloadAlreadyRunning,
)
from k8s_workloads.executor.config import ExecutorConfig
from k8s_workloads.executor.core import ExecutorCore
from k8s_workloads.keys import GenericKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.pods import workload_command_args
from k8s_workloads.states import CallbackState, GenericState, KubernetesJob, TaskInstanceState
from k8s_workloads.watch.resolution import Outcome
from tests.support.core_world import NS, T0, TOKEN, World, callback, kinds, task
from tests.support.event_factory import OOM_KILLED as OOM
from tests.support.event_factory import PULL_FAILED, RUNNING, SUCCEEDED

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
    assert kinds(performed) == ["ReadStates", "EmitEvent", "DeletePod"]
    assert performed[1] == EmitEvent(key, TaskInstanceState.SUCCESS)
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
    assert kinds(performed) == ["ReadStates", "DeletePod", "CreatePod"]  # it never started
    assert world.core.attempts.get(key) is not None
    assert world.core.attempts.get(key).attempts == 1  # type: ignore[union-attr]
    assert world.db.reported(key) == []
    world.status(key, PULL_FAILED)
    world.sync()
    assert world.db.reported(key) == [TaskInstanceState.FAILED]
    assert world.core.running == ()


# --- pod creation -------------------------------------------------------------------------


# --- failures while handling results -------------------------------------------------------


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
    assert world.core.resource_version() == world.cluster.resource_version
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
    assert world.core.resource_version() == world.cluster.resource_version


@pytest.mark.parametrize("event", ["{not json", b"\xff\xfe", "[1, 2]", '{"type": "ADDED"}'])
def test_garbage_from_the_watch_is_reported_never_raised(event: str | bytes) -> None:
    core = World().core
    assert core.feed_event(event).outcome is Outcome.MALFORMED
    assert isinstance(core.next_request(T0), NothingToDo)


# --- adoption and revoke -------------------------------------------------------------------


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


_SCRIPT = """
import datetime, random, sys, uuid
sys.path[:0] = {paths!r}
from tests.support.core_world import World, task, callback
from tests.support.event_factory import RUNNING, SUCCEEDED, OOM_KILLED as OOM
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


# --- the watches: one a watched namespace, their versions kept by the core ----------------


def _two_watches() -> ExecutorCore:
    config = ExecutorConfig.generic("7", "a", watch_namespaces=["a", "b", "a"])
    return ExecutorCore(config)


def _bookmark(version: str) -> str:
    return json.dumps({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": version}}})


def _expired() -> str:
    return json.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 410}})


def test_each_watch_resumes_from_its_own_version() -> None:
    core = _two_watches()
    assert core.watched_namespaces == ("a", "b")  # once each, in order
    core.feed_event(_bookmark("5"), namespace="a")
    core.feed_event(_bookmark("9").encode(), namespace="b")  # bytes, as they came
    assert (core.resource_version("a"), core.resource_version("b")) == ("5", "9")
    with pytest.raises(ValueError, match="name the watch"):
        core.resource_version()
    with pytest.raises(ValueError, match="name the watch"):
        core.feed_event(_bookmark("6"))
    with pytest.raises(ValueError, match="'c' is not watched"):
        core.feed_event(_bookmark("6"), namespace="c")
    assert core.resource_version("a") == "5"  # refused before anything changed


def test_one_watch_needs_no_name_and_the_every_namespace_watch_is_none() -> None:
    core = ExecutorCore(ExecutorConfig.generic("7", "a", watch_all_namespaces=True))
    assert core.watched_namespaces == (None,)
    core.feed_event(_bookmark("3"))
    assert core.resource_version() == core.resource_version(None) == "3"
    with pytest.raises(ValueError, match="'a' is not watched"):
        core.resource_version("a")


def test_a_410_lists_each_watched_namespace_then_each_watch_resumes_from_its_list() -> None:
    core = _two_watches()
    core.feed_event(_bookmark("5"), namespace="a")
    core.feed_event(_expired(), namespace="b")
    assert core.is_relisting
    assert core.resource_version("a") is None  # what the watches had is gone with the 410
    first = core.start_request(T0)
    assert isinstance(first, ListPods)
    assert first.namespace == "a"
    assert not isinstance(core.start_request(T0), ListPods)  # one list at a time
    core.pods_listed(first, [], "20")
    assert core.is_relisting  # "b" is not listed yet
    assert core.relists == 0
    second = core.start_request(T0)
    assert isinstance(second, ListPods)
    assert second.namespace == "b"
    core.pods_listed(second, [], "21")
    # Over; a watch started before it is older than its list.
    assert (core.is_relisting, core.relists) == (False, 1)
    assert (core.resource_version("a"), core.resource_version("b")) == ("20", "21")


def test_a_failed_list_asks_for_the_whole_relist_again_on_the_next_pass() -> None:
    core = _two_watches()
    core.feed_event(_expired(), namespace="a")
    first = core.start_request(T0)
    assert isinstance(first, ListPods)
    core.pods_listed(first, [], "20")
    second = core.start_request(T0)
    assert isinstance(second, ListPods)
    core.request_failed(second, OSError("connection reset"))
    assert isinstance(core.start_request(T0), NothingToDo)  # not again in this pass
    again = core.start_request(T0)
    assert isinstance(again, ListPods)
    assert again.namespace == "a"  # from the first: its list would be older than b's
    core.pods_listed(again, [], "30")
    last = core.start_request(T0)
    assert isinstance(last, ListPods)
    core.pods_listed(last, [], "31")
    assert (core.resource_version("a"), core.resource_version("b")) == ("30", "31")
    assert core.relists == 1


def test_a_workload_vanishes_only_when_no_watched_namespace_lists_its_pod() -> None:
    core = _two_watches()
    key = GenericKey("job-1")
    core.submit(KubernetesJob(key, ("run",), pod_override={"metadata": {"namespace": "b"}}))
    create = core.start_request(T0)
    assert isinstance(create, CreatePod)
    assert create.namespace == "b"
    core.request_done(create)
    pod = {**create.pod, "metadata": {**create.pod["metadata"], "namespace": "b"}}
    pod["status"] = {"phase": "Running"}
    core.feed_event(_expired(), namespace="a")
    listing = core.start_request(T0)
    assert isinstance(listing, ListPods)
    core.pods_listed(listing, [], "20")  # "a" has no pod of it: not vanished yet
    assert core.waiting_results == 0
    listing = core.start_request(T0)
    assert isinstance(listing, ListPods)
    core.pods_listed(listing, [pod], "21")
    assert core.is_running(key)
    assert [r.state for r in _drive(core) if isinstance(r, EmitEvent)] == [GenericState.RUNNING]
    core.feed_event(_expired(), namespace="b")
    for _ in range(2):
        listing = core.start_request(T0)
        assert isinstance(listing, ListPods)
        core.pods_listed(listing, [], "40")
    emitted = [r for r in _drive(core) if isinstance(r, EmitEvent)]
    assert [(e.key, e.state) for e in emitted] == [(key, GenericState.FAILED)]
    assert "vanished" in (emitted[0].info or "")


def _drive(core: ExecutorCore) -> list[Request]:
    """Every request of the pass, each done."""
    done: list[Request] = []
    while not isinstance(request := core.start_request(T0), (NothingToDo, Waiting)):
        done.append(request)
        core.request_done(request)
    return done


def test_feed_event_takes_the_line_not_a_decoded_event() -> None:
    core = World().core
    with pytest.raises(TypeError, match="a watch line"):
        core.feed_event({"type": "ADDED", "object": {}})  # type: ignore[arg-type]


def test_the_adoption_lists_cover_each_watched_namespace() -> None:
    core = _two_watches()
    lists = core.adoption_lists(["1"])
    selectors = core.adoption_selectors(["1"])
    assert [(listing.namespace, listing.selector) for listing in lists] == [
        (namespace, selector) for selector in selectors for namespace in ("a", "b")
    ]


def test_a_line_fed_between_two_lists_of_a_relist_is_not_undone_by_the_older_list() -> None:
    # The Airflow executor feeds lines at each sync(): a re-list whose pass ended between
    # its lists (the sync's bound) meets lines of namespaces already listed.
    core = _two_watches()
    key = GenericKey("job-1")
    core.submit(KubernetesJob(key, ("run",), pod_override={"metadata": {"namespace": "a"}}))
    create = core.start_request(T0)
    assert isinstance(create, CreatePod)
    core.request_done(create)
    pod = {**create.pod, "metadata": {**create.pod["metadata"], "namespace": "a"}}
    running = {**pod, "status": {"phase": "Running"}}
    running["metadata"] = {**pod["metadata"], "resourceVersion": "19", "uid": "u1"}
    core.feed_event(json.dumps({"type": "ADDED", "object": running}), namespace="a")
    assert [r.state for r in _drive(core) if isinstance(r, EmitEvent)] == [GenericState.RUNNING]
    core.feed_event(_expired(), namespace="b")
    listing = core.start_request(T0)
    assert isinstance(listing, ListPods)
    core.pods_listed(listing, [running], "20")  # a, listed: Running
    done = {**running, "status": {"phase": "Succeeded"}}
    done["metadata"] = {**running["metadata"], "resourceVersion": "22"}
    line = json.dumps({"type": "MODIFIED", "object": done})
    core.feed_event(line, namespace="a")  # the next sync(): a's pod succeeded since
    listing = core.start_request(T0)
    assert isinstance(listing, ListPods)
    core.pods_listed(listing, [], "21")
    emitted = [(r.key, r.state) for r in _drive(core) if isinstance(r, EmitEvent)]
    core.feed_event(line, namespace="a")  # a's watch, again from "20", sends it again
    emitted += [(r.key, r.state) for r in _drive(core) if isinstance(r, EmitEvent)]
    assert emitted == [(key, GenericState.SUCCESS)]

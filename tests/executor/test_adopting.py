"""Adoption in the executor core (:mod:`k8s_workloads.executor._adopting`): a restarted
scheduler takes over the dead ones' pods and says exactly what to run again, a relabel
that failed is tried again or named, revoking drops a job and its pod, and two adopters
never both track one pod."""

from __future__ import annotations

import datetime
import re
from typing import TYPE_CHECKING

import pytest

from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.actions import DeletePod, PatchLabels
from k8s_workloads.executor import (
    ExecutorConfig,
    ExecutorCore,
)
from k8s_workloads.pods import construct_task_pod
from k8s_workloads.pods.labels import (
    AIRFLOW_WORKER_LABEL,
    POD_REVOKED_LABEL,
    TRUE_LABEL_VALUE,
)
from k8s_workloads.states import CallbackState, TaskInstanceState
from k8s_workloads.testing import CoreDriver, Kubelet, PodOutcome
from tests.support.core_world import NS, T0, VERSION, World, callback, task
from tests.support.event_factory import PULL_FAILED, RUNNING, SUCCEEDED

if TYPE_CHECKING:
    from k8s_workloads.keys import TaskInstanceKey


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
    adoption = driver.adopt(
        ["1"],
        now=T0,
        expected_task_keys=[running_task, done_task, task("lost")],
        expected_callback_keys=[running_callback],
    )
    assert adoption.plan.adopted == {running_task, running_callback}
    # Only what has no pod anywhere runs again: the Succeeded pod's task was reported.
    assert adoption.rerun == (task("lost"),)
    assert not adoption.failed_relabels
    assert not adoption.retrying
    assert set(new_core.running) == {running_task, running_callback}
    owners = {pod["metadata"]["labels"][AIRFLOW_WORKER_LABEL] for pod in old.cluster.pods()}
    assert owners == {"2"}
    assert done_task not in {old.key_of(pod) for pod in old.cluster.pods()}  # cleaned up
    # A retried adoption (Airflow retries on a database error) resets nothing it owns.
    again = driver.adopt(["1"], now=T0, expected_task_keys=[running_task])
    assert again.rerun == ()


def test_a_callback_finished_by_the_adoption_is_not_run_again() -> None:
    # Its pod Succeeded under the dead scheduler: the adoption reports it, so it is not
    # among the keys to run again (it used to be: 14 of 50 workloads ran twice).
    old = World(scheduler_id="1")
    key = callback()
    old.submit(key)
    old.sync()
    old.status(key, SUCCEEDED)
    core = ExecutorCore(ExecutorConfig(scheduler_id="2", namespace=NS, airflow_version=VERSION))
    adoption = CoreDriver(core, old.cluster, old.db).adopt(
        ["1"], now=T0, expected_callback_keys=[key]
    )
    assert adoption.rerun == ()
    assert core.not_adopted([key]) == []
    assert old.db.reported(key) == [CallbackState.SUCCESS]
    assert old.cluster.pods() == []


def _running_under_scheduler_1() -> tuple[World, TaskInstanceKey, ExecutorCore, CoreDriver]:
    """Scheduler 1's world with one task running, and scheduler 2's core and driver over
    the same cluster and database (scheduler 1 is taken for dead)."""
    old = World(scheduler_id="1")
    key = task()
    old.submit(key)
    old.sync()
    old.status(key, RUNNING)
    core = ExecutorCore(ExecutorConfig(scheduler_id="2", namespace=NS, airflow_version=VERSION))
    return old, key, core, CoreDriver(core, old.cluster, old.db)


def test_a_relabel_failing_for_a_transient_reason_is_tried_again_on_the_next_pass() -> None:
    old, key, new_core, driver = _running_under_scheduler_1()
    old.cluster.fail_next("patch_pod", 500)
    adoption = driver.adopt(["1"], now=T0, expected_task_keys=[key])
    assert adoption.rerun == ()  # it has a pod: never run a second time beside it
    assert adoption.retrying == (key,)
    assert not new_core.running
    assert new_core.has_work
    driver.run_pass(T0)
    assert new_core.running == (key,)
    assert new_core.relabels_retrying == ()
    owners = {pod["metadata"]["labels"][AIRFLOW_WORKER_LABEL] for pod in old.cluster.pods()}
    assert owners == {"2"}


def test_a_refused_relabel_is_named_and_its_workload_not_run_again() -> None:
    old, key, new_core, driver = _running_under_scheduler_1()
    old.cluster.fail_next("patch_pod", 422, reason="Invalid")  # the guard's test failed
    adoption = driver.adopt(["1"], now=T0, expected_task_keys=[key])
    assert adoption.rerun == ()
    (failed,) = adoption.failed_relabels
    assert (failed.key, failed.pod_name) == (key, old.pod_of(key))
    assert getattr(failed.error, "status", None) == 422
    assert new_core.running == ()
    assert new_core.take_failed_relabels() == []  # taken by the adoption


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
    old, key, core, driver = _running_under_scheduler_1()
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
    assert cores[1].not_adopted([key]) == []  # the rival runs it: not a second time
    assert [failed.key for failed in cores[1].take_failed_relabels()] == [key]
    (pod,) = old.cluster.pods()
    assert pod["metadata"]["labels"][AIRFLOW_WORKER_LABEL] == "2"


# --- a pod that can never start: stuck pulling its image --------------------------------


def _stuck_pulling(world: World, key: TaskInstanceKey) -> Kubelet:
    """The kit's kubelet takes ``key``'s pod to ``ImagePullBackOff`` (through ErrImagePull)
    while no watch of the world's scheduler sees it: a watch connection lost meanwhile.
    Returns the kubelet (at second 2)."""
    world.cluster.drop_watches()
    kubelet = Kubelet(
        world.cluster, run_seconds=1, plan=lambda _pod: PodOutcome.image_pull_failure()
    )
    for second in range(3):
        kubelet.step(float(second))
    (status,) = [pod["status"] for pod in world.cluster.pods() if world.key_of(pod) == key]
    assert status["phase"] == "Pending"
    assert status["containerStatuses"][0]["state"]["waiting"]["reason"] == "ImagePullBackOff"
    return kubelet


def _run(world: World, kubelet: Kubelet) -> None:
    """A few seconds of the scheduler's loop and the kubelet (which confirms deletions)."""
    for second in range(3, 6):
        world.now += datetime.timedelta(seconds=1)
        kubelet.step(float(second))
        world.sync()


# No launch retry: a relaunch would be a second pod to follow, beside the point here.
_KEEP_FAILED = DecisionConfig(pod_launch_failure_retries=0)
_DELETE_FAILED = DecisionConfig(pod_launch_failure_retries=0, delete_worker_pods_on_failure=True)


@pytest.mark.parametrize("decisions", [_KEEP_FAILED, _DELETE_FAILED])
def test_a_pod_found_backing_off_its_image_pull_fails_and_is_cleaned_up(
    decisions: DecisionConfig,
) -> None:
    """The core's watch lost the ErrImagePull event (a gap, then a re-list after a 410):
    the pod's back-off is all it sees, and the workload fails with it, once."""
    world = World(decisions=decisions)
    key = task()
    world.submit(key)
    world.sync()
    kubelet = _stuck_pulling(world, key)
    world.cluster.compact()  # the watch cannot resume: the core lists again
    _run(world, kubelet)
    _assert_failed_backing_off(world, key)


@pytest.mark.parametrize("decisions", [_KEEP_FAILED, _DELETE_FAILED])
def test_a_pod_adopted_backing_off_its_image_pull_fails_and_is_cleaned_up(
    decisions: DecisionConfig,
) -> None:
    old = World(scheduler_id="1")
    key = task()
    old.submit(key)
    old.sync()
    kubelet = _stuck_pulling(old, key)
    # Scheduler 1 dies; scheduler 2 adopts the pod, and its watch reads it once relabelled.
    config = ExecutorConfig(
        scheduler_id="2", namespace=NS, airflow_version=VERSION, decisions=decisions
    )
    new = World(scheduler_id="2", decisions=decisions)
    new.cluster, new.db = old.cluster, old.db
    new.core = ExecutorCore(config)
    new.core.on_decision = new.handled.append
    new.driver = CoreDriver(new.core, old.cluster, old.db)
    adoption = new.driver.adopt(["1"], now=T0, expected_task_keys=[key])
    assert adoption.plan.adopted == {key}
    assert adoption.rerun == ()
    _run(new, kubelet)
    _assert_failed_backing_off(new, key)


def _assert_failed_backing_off(world: World, key: TaskInstanceKey) -> None:
    (report,) = world.db.terminal_reports(key)
    assert report.state is TaskInstanceState.FAILED
    assert report.info is not None
    assert re.fullmatch(
        r"Pod airflow/etl-load-[a-z0-9]+ failed because of ImagePullBackOff \(container base\)",
        report.info,
    )
    assert world.core.running == ()
    # Deleted whatever the options say of failed pods (the provider keeps it): it never
    # started, and kept it would run the task once its image could be pulled.
    assert [pod for pod in world.cluster.pods() if world.key_of(pod) == key] == []


def test_a_relabel_applied_whose_answer_was_lost_is_confirmed_and_the_pod_tracked() -> None:
    # The first relabel reached the API server (the pod says scheduler 2 now) and its
    # answer was lost; the retry, guarded by the dead owner, is refused (422): checked
    # once more as scheduler 2's, it passes, and the workload is tracked, not lost.
    old, key, new_core, driver = _running_under_scheduler_1()
    old.cluster.fail_next("patch_pod", None, applied=True)
    adoption = driver.adopt(["1"], now=T0, expected_task_keys=[key])
    assert adoption.retrying == (key,)
    owners = {pod["metadata"]["labels"][AIRFLOW_WORKER_LABEL] for pod in old.cluster.pods()}
    assert owners == {"2"}  # applied
    driver.run_pass(T0)
    assert new_core.running == (key,)
    assert new_core.take_failed_relabels() == []
    old.status(key, SUCCEEDED)
    old.db.task_finished(key, TaskInstanceState.SUCCESS)
    driver.deliver(now=T0)
    driver.run_pass(T0)
    assert old.db.reported(key) == [TaskInstanceState.SUCCESS]
    assert old.cluster.pods() == []


@pytest.mark.parametrize("names", [("a-first", "b-second"), ("z-first", "b-second")])
def test_an_earlier_launch_stuck_pending_is_deleted_whatever_its_place_in_the_list(
    names: tuple[str, str],
) -> None:
    # Review finding: the adoption's actions were grouped from each relabel on, so the
    # earlier launch's DeletePod was dropped when it came first in the listing (its name
    # sorts first), or tied to the other pod's relabel when it came after (and lost if
    # that relabel was refused). Kept, the stuck pod runs the task once its image pulls.
    first_name, second_name = names
    world = World(scheduler_id="1")
    key = task()
    world.db.add_task(key)
    for name, second in ((first_name, 0), (second_name, 5)):
        world.cluster.now = T0 + datetime.timedelta(seconds=second)
        pod = construct_task_pod(
            namespace=NS, scheduler_job_id=1, pod_id=name, dag_id=key.dag_id,
            task_id=key.task_id, kube_image="airflow:3.3.2", try_number=key.try_number,
            args=["run"], airflow_version=VERSION, run_id=key.run_id,
        )  # fmt: skip
        world.cluster.create_pod(NS, pod)
    world.cluster.set_status(NS, first_name, PULL_FAILED)
    world.cluster.set_status(NS, second_name, RUNNING)
    core = ExecutorCore(ExecutorConfig(scheduler_id="2", namespace=NS, airflow_version=VERSION))
    driver = CoreDriver(core, world.cluster, world.db)
    adoption = driver.adopt(["1"], now=T0, expected_task_keys=[key])
    assert adoption.rerun == ()
    driver.run_pass(T0)
    assert core.running == (key,)
    left = {pod["metadata"]["name"]: pod for pod in world.cluster.pods()}
    gone = first_name not in left or "deletionTimestamp" in left[first_name]["metadata"]
    assert gone, f"the stuck earlier launch {first_name} is kept"
    assert left[second_name]["metadata"]["labels"][AIRFLOW_WORKER_LABEL] == "2"

"""Bugs the stateful machines found in the library, as regression tests.

Each test is the machine's minimal counterexample, written out step by step, kept as a
regression test once the bug is fixed.
"""

from __future__ import annotations

from k8s_workloads.pods.labels import AIRFLOW_WORKER_LABEL
from k8s_workloads.states import TaskInstanceState
from tests.executor.test_executor_stateful import PATCH_FAULTS, SchedulersMachine


def _machine(
    *,
    schedulers: int,
    delete_worker_pods: bool = True,
    delete_worker_pods_on_failure: bool = False,
    mark_kept_failed_pods_done: bool = False,
    clock_stopped: bool = False,
    fixed_names: bool = False,
) -> SchedulersMachine:
    """The schedulers' machine, configured as a counterexample's first step was."""
    state = SchedulersMachine()
    state.configure(
        schedulers=schedulers,
        delete_worker_pods=delete_worker_pods,
        delete_worker_pods_on_failure=delete_worker_pods_on_failure,
        mark_kept_failed_pods_done=mark_kept_failed_pods_done,
        clock_stopped=clock_stopped,
        fixed_names=fixed_names,
    )
    return state


def test_a_relabel_that_failed_is_tried_again_and_the_task_never_gets_a_second_pod() -> None:
    # Found when a failed relabel left the task to be reset: it was queued again beside
    # its pod, and two pods of one workload (created at the same second) both ran.
    state = _machine(
        schedulers=3,
        delete_worker_pods_on_failure=True,
        mark_kept_failed_pods_done=True,
        clock_stopped=True,  # every pod is created at the same second
    )
    state.queue_task(on=0)  # on scheduler 1
    state.patches_fail(fault=PATCH_FAULTS[0], times=1)  # the next label patch: a 500
    state.scheduler_dies(adopters=1, pick=2)  # 3 dies; 1 adopts nothing, creates pod A
    state.scheduler_starts()  # 4 starts
    # 1 dies; 2 adopts: its relabel of A fails (a 500), so it is tried on 2's next pass.
    state.scheduler_dies(adopters=1, pick=0)
    state.sync_pass(error=None, on=0)  # 2 relabels A; it creates nothing
    pods = state.cluster.pods()
    assert [pod["metadata"]["labels"][AIRFLOW_WORKER_LABEL] for pod in pods] == ["2"]
    state.scheduler_dies(adopters=0, pick=0)  # 2 dies
    state.settle()  # 4 adopts A and runs it to the end
    (key,) = state.workloads
    assert len(state.db.terminal_reports(key)) == 1
    assert len([call for call in state.cluster.calls if call[0] == "create_pod"]) == 1
    left = state.pods_where(state.watched)
    assert not left, f"pods left to be re-reported forever: {left}"


def test_the_loser_of_an_adoption_race_never_tracks_a_pod_the_winner_deleted() -> None:
    state = _machine(
        schedulers=3, delete_worker_pods_on_failure=True, mark_kept_failed_pods_done=True
    )
    state.queue_task(on=0)  # on scheduler 1
    state.sync_pass(on=0, error=None)  # 1 creates the pod
    state.pod_evicted(pick=0)  # it fails; 1 has not read that
    state.watch_expires()
    state.deliver_event(on=1, pick=0)  # 2 reads its 410: its next pass re-lists
    # 1 dies; 2 and 3 list its pods, then adopt at once: 2 relabels, re-lists, reports the
    # eviction and deletes the pod; 3's conditional relabel finds the pod gone (404).
    state.scheduler_dies(adopters=2, pick=0)
    (key,) = state.workloads
    assert state.db.reported(key) == [TaskInstanceState.FAILED]
    assert not state.schedulers[2].core.is_running(key)
    state.settle()
    assert len(state.db.terminal_reports(key)) == 1


def test_a_relaunch_at_the_same_second_as_its_failed_pull_is_the_one_adopted() -> None:
    # The first launch cannot pull its image (Pending, ErrImagePull) and is requeued; its
    # scheduler dies with both pods Pending, created at the same second. The adopter took
    # both, and the failed pull reported the callback failed while the relaunch ran.
    state = _machine(schedulers=2)
    state.clock_stops_or_goes_on()
    state.queue_callback(on=0)
    state.deliver_all_events(on=0)
    state.launch_is_requeued(pick=0)
    state.scheduler_dies(adopters=0, pick=0)
    state.teardown()
    (key,) = state.workloads
    assert [event.state.value for event in state.db.terminal_reports(key)] == ["success"]


def test_a_kept_evicted_pod_of_a_fixed_name_is_not_taken_for_its_relaunch() -> None:
    # Thorough profile: the evicted pod is kept (delete_worker_pods_on_failure off) and
    # the task requeued; the relaunch's creation met a 500 and its read back found the
    # evicted pod under the name every launch shares, with the same annotations. It was
    # taken for the relaunch: the task stayed running for ever, never reported.
    state = _machine(schedulers=2, fixed_names=True)
    state.queue_task(on=0)
    state.deliver_all_events(on=0)
    state.pod_evicted(pick=0)
    state.sync_pass(error=(500, "etcdserver: request timed out", None), on=0)
    state.deliver_all_events(on=0)
    state.teardown()
    (key,) = state.workloads
    # As without the 500: the relaunch is refused (409, the name is the kept pod's).
    assert [event.state for event in state.db.terminal_reports(key)] == [TaskInstanceState.FAILED]


def test_an_earlier_launch_left_by_a_first_adoption_is_not_adopted_by_a_second() -> None:
    # Thorough profile: a callback's first pod cannot pull its image, the callback is
    # requeued and the stuck pod kept. Its scheduler dies; one adopter takes the relaunch
    # and skipped the stuck pod, leaving it the dead scheduler's. A scheduler started
    # later listed it alone, adopted it, and reported the callback failed while the
    # relaunch ran under the first adopter.
    state = _machine(schedulers=2)
    state.scheduler_dies(adopters=0, pick=0)
    state.scheduler_starts()
    state.scheduler_starts()
    state.queue_callback(on=0)
    for _ in range(3):
        state.deliver_all_events(on=0)
    state.pod_fails_before_start(pick=0)
    state.deliver_all_events(on=0)
    state.scheduler_dies(adopters=1, pick=0)
    state.scheduler_starts()
    state.teardown()
    (key,) = state.workloads
    assert [event.state.value for event in state.db.terminal_reports(key)] == ["success"]

"""plan_adoption and plan_revocation over pods built by our own builders (reference §5.5, §5.6).

Scheduler "1" is dead, "2" is alive and "3" is this scheduler. Callback pods are adopted
as callbacks (the provider's crash loop of apache/airflow#70475, §7.2, is impossible),
live schedulers' pods are never touched (#66396) and odd pods are reported, never raised.
"""

from __future__ import annotations

import copy
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions import decide
from k8s_workloads.decisions.actions import (
    DeletePod,
    EmitEvent,
    FreeSlot,
    Ignore,
    PatchLabels,
    TrackRunning,
)
from k8s_workloads.decisions.adoption import (
    AdoptionPlan,
    SkippedPod,
    adoption_selectors,
    plan_adoption,
    plan_relist,
    plan_revocation,
)
from k8s_workloads.decisions.attempts import Attempts
from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey
from k8s_workloads.pods import construct_callback_pod, construct_generic_pod, construct_task_pod
from k8s_workloads.pods.labels import (
    AIRFLOW_WORKER_LABEL,
    POD_EXECUTOR_DONE_LABEL,
    POD_REVOKED_LABEL,
    TRUE_LABEL_VALUE,
)
from k8s_workloads.states import (
    CallbackResult,
    CallbackState,
    ExecutorPseudoState,
    GenericResult,
    KubernetesJob,
    TaskResult,
    WorkloadResult,
)
from k8s_workloads.watch.events import resolve_event
from k8s_workloads.watch.resolution import Outcome, ResolverConfig
from tests.support.event_factory import event, terminated

VERSION = "3.3.2"
NS = "airflow"
DEAD, ALIVE, ME = "1", "2", "3"
RUN_ID = "manual__2026-06-07"
CALLBACK_ID = "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"
OTHER_CALLBACK_ID = "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5f"

RUNNING = {"phase": "Running", "containerStatuses": [{"name": "base", "state": {"running": {}}}]}
SUCCEEDED = {"phase": "Succeeded", "containerStatuses": [terminated("base", 0, "Completed")]}
FAILED = {"phase": "Failed", "containerStatuses": [terminated("base", 1, "Error")]}


def task_key(task_id: str = "load", try_number: int = 1, map_index: int = -1) -> TaskInstanceKey:
    return TaskInstanceKey("etl", task_id, RUN_ID, try_number, map_index)


def task_pod(
    owner: str | int,
    key: TaskInstanceKey,
    status: dict[str, Any] | None = None,
    *,
    name: str | None = None,
    done: bool = False,
) -> dict[str, Any]:
    pod = construct_task_pod(
        namespace=NS,
        scheduler_job_id=owner,
        pod_id=name or f"{key.task_id}-try{key.try_number}-m{key.map_index + 1}",
        dag_id=key.dag_id,
        task_id=key.task_id,
        kube_image="airflow:3.3.2",
        try_number=key.try_number,
        args=["python", "-m", "x"],
        run_id=key.run_id,
        map_index=key.map_index,
        airflow_version=VERSION,
    )
    return _finish(pod, status if status is not None else RUNNING, done=done)


def callback_pod(
    owner: str | int,
    callback_id: str = CALLBACK_ID,
    status: dict[str, Any] | None = None,
    *,
    done: bool = False,
) -> dict[str, Any]:
    pod = construct_callback_pod(
        callback_id=callback_id,
        namespace=NS,
        scheduler_job_id=owner,
        kube_image="airflow:3.3.2",
        args=["python", "-m", "x"],
        dag_id="etl",
        run_id=RUN_ID,
        airflow_version=VERSION,
        pod_id=f"callback-{callback_id[-4:]}",
    )
    return _finish(pod, status if status is not None else RUNNING, done=done)


def _finish(pod: dict[str, Any], status: dict[str, Any], *, done: bool) -> dict[str, Any]:
    pod["metadata"]["resourceVersion"] = "42"
    pod["status"] = copy.deepcopy(status)
    if done:
        pod["metadata"]["labels"][POD_EXECUTOR_DONE_LABEL] = TRUE_LABEL_VALUE
    return pod


def name_of(pod: dict[str, Any]) -> str:
    name = pod["metadata"]["name"]
    assert isinstance(name, str)
    return name


def relabel(pod: dict[str, Any]) -> PatchLabels:
    # Guarded by the listed owner: only one of two schedulers takes a pod over, and a
    # status update between the list and the patch does not fail it.
    owner = pod["metadata"]["labels"][AIRFLOW_WORKER_LABEL]
    return PatchLabels(
        name_of(pod), NS, {AIRFLOW_WORKER_LABEL: ME}, expect={AIRFLOW_WORKER_LABEL: owner}
    )


def retired(pod: dict[str, Any]) -> PatchLabels:
    # An earlier launch that failed: labelled done, guarded by its listed owner.
    owner = pod["metadata"]["labels"][AIRFLOW_WORKER_LABEL]
    done = {POD_EXECUTOR_DONE_LABEL: TRUE_LABEL_VALUE}
    return PatchLabels(name_of(pod), NS, done, expect={AIRFLOW_WORKER_LABEL: owner})


def plan(pods: list[dict[str, Any]], **kwargs: Any) -> AdoptionPlan:
    kwargs.setdefault("me", ME)
    kwargs.setdefault("alive_scheduler_ids", [ALIVE])
    kwargs.setdefault("airflow_version", VERSION)
    return plan_adoption(pods, **kwargs)


def reasons(skipped: tuple[SkippedPod, ...]) -> dict[str, str]:
    return {pod.pod_name: pod.reason for pod in skipped}


# --- live pods ---------------------------------------------------------------------------


def test_dead_schedulers_running_task_pod_is_adopted_when_expected() -> None:
    key = task_key()
    pod = task_pod(DEAD, key)
    adoption = plan([pod], expected_task_keys=[key])
    assert adoption.actions == (relabel(pod), TrackRunning(key))
    assert adoption.adopted == frozenset({key})
    assert adoption.completed == ()
    assert adoption.skipped == ()
    assert adoption.undecodable == ()
    assert adoption.not_adopted([key]) == []


def test_task_pod_not_expected_is_skipped_with_a_reason() -> None:
    pod = task_pod(DEAD, task_key())
    adoption = plan([pod], expected_task_keys=[task_key("other")])
    assert adoption.actions == ()
    assert adoption.adopted == frozenset()
    assert reasons(adoption.skipped) == {name_of(pod): "not among the task instances to adopt"}


def test_another_try_of_an_expected_task_is_not_adopted() -> None:
    pod = task_pod(DEAD, task_key(try_number=1))
    adoption = plan([pod], expected_task_keys=[task_key(try_number=2)])
    assert adoption.adopted == frozenset()
    assert len(adoption.skipped) == 1


def test_without_expected_keys_every_live_pod_is_adopted() -> None:
    pods = [task_pod(DEAD, task_key("a")), task_pod(DEAD, task_key("b"), FAILED)]
    adoption = plan(pods)
    assert adoption.adopted == frozenset({task_key("a"), task_key("b")})
    assert adoption.actions == (
        relabel(pods[0]),
        TrackRunning(task_key("a")),
        relabel(pods[1]),
        TrackRunning(task_key("b")),
    )


def test_running_callback_pod_of_a_dead_scheduler_is_adopted_as_a_callback() -> None:
    # The provider decodes it as a task (KeyError 'task_id') on every start: #70475.
    key = CallbackKey(CALLBACK_ID)
    pod = callback_pod(DEAD)
    adoption = plan([pod], expected_task_keys=[task_key()])
    assert adoption.actions == (relabel(pod), TrackRunning(key))
    assert adoption.adopted == frozenset({key})
    assert adoption.undecodable == ()
    # The scheduler never hands callbacks over, so they are never "not adopted" tasks.
    assert adoption.not_adopted([task_key()]) == [task_key()]


def test_callback_pods_are_adopted_only_when_still_active_if_the_executor_says_so() -> None:
    # A kept Failed callback pod whose failure was reported before the restart must not
    # be adopted and reported again.
    key = CallbackKey(CALLBACK_ID)
    pod = callback_pod(DEAD)
    skipped = plan([pod], expected_callback_keys=[])
    assert skipped.adopted == frozenset()
    assert reasons(skipped.skipped) == {name_of(pod): "not among the active callbacks to adopt"}
    active = plan([pod], expected_callback_keys=[key])
    assert active.adopted == frozenset({key})


@pytest.mark.parametrize(
    ("config", "cleanup"),
    [
        (DecisionConfig(), "delete"),
        (DecisionConfig(delete_worker_pods=False), "done"),
    ],
)
def test_succeeded_pod_of_a_settled_callback_is_cleaned_up_not_reported(
    config: DecisionConfig, cleanup: str
) -> None:
    # Its clean-up failed before the restart (its end was already reported): a COMPLETED
    # result would make the decision report SUCCESS over whatever the callback ended as.
    pod = callback_pod(DEAD, status=SUCCEEDED)
    adoption = plan([pod], expected_callback_keys=[], config=config)
    assert adoption.completed == ()
    assert adoption.adopted == frozenset()
    done = PatchLabels(name_of(pod), NS, {POD_EXECUTOR_DONE_LABEL: TRUE_LABEL_VALUE})
    clean = DeletePod(name_of(pod), NS) if cleanup == "delete" else done
    assert adoption.actions == (relabel(pod), clean)
    assert reasons(adoption.skipped) == {
        name_of(pod): "callback already settled: its Succeeded pod is cleaned up, not reported"
    }
    # An active callback's Succeeded pod is still reported through the decision.
    active = plan([pod], expected_callback_keys=[CallbackKey(CALLBACK_ID)], config=config)
    assert [result.state for result in active.completed] == [ExecutorPseudoState.COMPLETED]


@pytest.mark.parametrize("kind", ["task", "callback"])
def test_failed_earlier_launch_is_left_alone_when_a_newer_pod_is_live(kind: str) -> None:
    # The first pod failed before the workload ran and was requeued; the record of that
    # died with the old scheduler. Adopting the Failed pod would fail the workload while
    # its second pod runs (the provider adopts both).
    if kind == "task":
        key: TaskInstanceKey | CallbackKey = task_key()
        first = task_pod(DEAD, task_key(), FAILED, name="first")
        second = task_pod(DEAD, task_key(), RUNNING, name="second")
    else:
        key = CallbackKey(CALLBACK_ID)
        first = callback_pod(DEAD, status=FAILED)
        first["metadata"]["name"] = "first"
        second = callback_pod(DEAD)
        second["metadata"]["name"] = "second"
    adoption = plan([first, second])
    # Labelled done: once the second pod is taken over, no later adoption (which lists
    # only dead schedulers' pods) takes the first for the workload's.
    assert adoption.actions == (retired(first), relabel(second), TrackRunning(key))
    assert reasons(adoption.skipped) == {
        "first": "a failed earlier launch: the workload has a live pod; labelled done"
    }
    # Alone, a Failed pod is the workload's failure: adopted, and its event decides.
    alone = plan([first])
    assert alone.actions == (relabel(first), TrackRunning(key))


def test_only_the_newest_unfinished_pod_of_a_workload_is_adopted() -> None:
    # The first pod got stuck pulling its image (Pending for ever, kept), the workload
    # was requeued; the creation time says which launch is current.
    stuck = task_pod(DEAD, task_key(), name="first")
    stuck["status"] = {
        "phase": "Pending",
        "containerStatuses": [{"name": "base", "state": {"waiting": {"reason": "ErrImagePull"}}}],
    }
    stuck["metadata"]["creationTimestamp"] = "2026-06-07T10:00:00Z"
    current = task_pod(DEAD, task_key(), name="second")
    current["metadata"]["creationTimestamp"] = "2026-06-07T10:00:05Z"
    # The stuck one is deleted: it has not ended, and would run the workload again once
    # its image can be pulled.
    for pods in ([stuck, current], [current, stuck]):
        adoption = plan(pods)
        assert sorted(adoption.actions, key=repr) == sorted(
            [DeletePod("first", NS), relabel(current), TrackRunning(task_key())], key=repr
        )
        assert reasons(adoption.skipped) == {
            "first": "an earlier launch: the workload has a newer pod; deleted"
        }
    # Created in the same second: the one that can never start is the earlier launch
    # (adopted, its failure would be reported while the relaunch runs).
    current["metadata"]["creationTimestamp"] = "2026-06-07T10:00:00Z"
    for pods in ([stuck, current], [current, stuck]):
        adoption = plan(pods)
        assert sorted(adoption.actions, key=repr) == sorted(
            [DeletePod("first", NS), relabel(current), TrackRunning(task_key())], key=repr
        )
        assert reasons(adoption.skipped) == {
            "first": "a failed earlier launch: the workload has a live pod; deleted"
        }
    # Two live pods of the same second: no way to tell, both are adopted, tracked once.
    del stuck["status"]["containerStatuses"]
    adoption = plan([stuck, current])
    assert adoption.actions == (relabel(stuck), TrackRunning(task_key()), relabel(current))
    # A pull held back by the kubelet's rate limit is no failed launch.
    stuck["status"]["containerStatuses"] = [
        {
            "name": "base",
            "state": {"waiting": {"reason": "ErrImagePull", "message": "pull QPS exceeded"}},
        }
    ]
    adoption = plan([stuck, current])
    assert adoption.actions == (relabel(stuck), TrackRunning(task_key()), relabel(current))
    # A Succeeded pod is never an earlier launch: it is cleaned up as completed.
    finished = task_pod(DEAD, task_key(), SUCCEEDED, name="finished")
    finished["metadata"]["creationTimestamp"] = "2026-06-07T09:00:00Z"
    assert [r.pod_name for r in plan([finished, current]).completed] == ["finished"]


def test_a_workload_with_two_live_pods_is_tracked_once() -> None:
    first = task_pod(DEAD, task_key(), name="first")
    second = task_pod(DEAD, task_key(), name="second")
    adoption = plan([first, second])
    assert adoption.actions == (relabel(first), TrackRunning(task_key()), relabel(second))
    assert adoption.adopted == frozenset({task_key()})


def test_adopted_callback_pod_resolves_and_decides_as_a_callback() -> None:
    key = CallbackKey(CALLBACK_ID)
    pod = callback_pod(DEAD, status=FAILED)
    adoption = plan([pod], expected_task_keys=[])
    assert TrackRunning(key) in adoption.actions
    pod["metadata"]["labels"][AIRFLOW_WORKER_LABEL] = ME  # the patch, applied
    resolution = resolve_event(event("ADDED", pod), config=ResolverConfig(airflow_version=VERSION))
    result = resolution.to_result()
    assert isinstance(result, CallbackResult)
    # No attempt record after a restart: fails normally, with no task-instance lookup.
    decision = decide(result, running=True, config=DecisionConfig(pod_launch_failure_retries=-1))
    assert decision.look_up is None
    assert FreeSlot(key) in decision.actions


@pytest.mark.parametrize("version", ["3.2.0", "3.2.9", None])
def test_callback_pod_with_callbacks_gated_off_is_reported(version: str | None) -> None:
    pod = callback_pod(DEAD)
    adoption = plan([pod, task_pod(DEAD, task_key())], airflow_version=version)
    assert adoption.adopted == frozenset({task_key()})
    (undecodable,) = adoption.undecodable
    assert undecodable.pod_name == name_of(pod)
    assert undecodable.namespace == NS
    assert "3.3" in undecodable.reason
    assert relabel(pod) not in adoption.actions


def test_bad_airflow_version_makes_callback_pods_undecodable_not_an_error() -> None:
    adoption = plan([callback_pod(DEAD)], airflow_version="not a version")
    assert len(adoption.undecodable) == 1
    assert adoption.actions == ()


# --- pods that are left alone ------------------------------------------------------------


def test_pods_of_live_schedulers_and_of_this_one_are_left_alone() -> None:
    # #66396: relabelling other live schedulers' pods made every scheduler fight over them.
    pods = [
        task_pod(ALIVE, task_key("a")),
        task_pod(ALIVE, task_key("b"), SUCCEEDED),
        callback_pod(ALIVE),
        task_pod(ME, task_key("c")),
        task_pod(ME, task_key("d"), SUCCEEDED),
        callback_pod(ME, OTHER_CALLBACK_ID),
    ]
    keys = [task_key(task_id) for task_id in "abcd"]
    adoption = plan(pods, expected_task_keys=keys)
    assert adoption.actions == ()
    assert adoption.completed == ()
    assert adoption.adopted == frozenset()
    assert [pod.reason for pod in adoption.skipped] == [
        "owned by live scheduler 2",
        "owned by live scheduler 2",
        "owned by live scheduler 2",
        "owned by this scheduler",
        "owned by this scheduler",
        "owned by this scheduler",
    ]


def test_scheduler_ids_may_be_integers() -> None:
    pods = [task_pod(2, task_key("a")), task_pod(3, task_key("b")), task_pod(1, task_key("c"))]
    adoption = plan_adoption(pods, me=3, alive_scheduler_ids=[2], airflow_version=VERSION)
    assert adoption.adopted == frozenset({task_key("c")})
    assert adoption.actions[0] == relabel(pods[2])


def test_done_pods_are_skipped() -> None:
    pods = [
        task_pod(DEAD, task_key("a"), FAILED, done=True),
        task_pod(DEAD, task_key("b"), SUCCEEDED, done=True),
        callback_pod(DEAD, done=True),
    ]
    adoption = plan(pods, expected_task_keys=[task_key("a"), task_key("b")])
    assert adoption.actions == ()
    assert [pod.reason for pod in adoption.skipped] == ["already marked done"] * 3


def pod_without(field: str) -> dict[str, Any]:
    pod = task_pod(DEAD, task_key(), name=f"no-{field.replace('_', '-')}")
    del pod["metadata"]["annotations"][field]
    return pod


def garbage_annotations() -> dict[str, Any]:
    pod = task_pod(DEAD, task_key(), name="garbage")
    pod["metadata"]["annotations"]["try_number"] = "one"
    return pod


def bad_callback_id() -> dict[str, Any]:
    pod = callback_pod(DEAD)
    pod["metadata"]["name"] = "bad-callback-id"
    pod["metadata"]["annotations"]["callback_id"] = "not-a-uuid"
    return pod


def unknown_workload_type() -> dict[str, Any]:
    pod = task_pod(DEAD, task_key(), name="unknown-type")
    pod["metadata"]["labels"]["airflow-workload-type"] = "asset-watcher"
    return pod


FOREIGN = {
    "metadata": {
        "name": "nginx",
        "namespace": NS,
        "labels": {"app": "nginx"},
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
    },
    "status": {"phase": "Running"},
}


EXECUTOR_LABEL_ONLY = {
    "metadata": {"name": "bare", "namespace": NS, "labels": {"kubernetes_executor": "True"}}
}
ODD_SHAPES = {
    "metadata": {"name": "odd", "annotations": ["x"], "labels": {"kubernetes_executor": "True"}}
}


@pytest.mark.parametrize(
    "pod",
    [
        FOREIGN,
        {"metadata": {"name": "bare", "namespace": NS}},
        {"metadata": {"name": "odd", "annotations": ["x"], "labels": "y"}},
        # Task annotations do not make a pod the executor's: the label does.
        {
            **task_pod(DEAD, task_key(), name="lookalike"),
            "metadata": {
                **task_pod(DEAD, task_key(), name="lookalike")["metadata"],
                "labels": {AIRFLOW_WORKER_LABEL: DEAD},
            },
        },
        {
            **task_pod(DEAD, task_key(), name="not-true"),
            "metadata": {
                **task_pod(DEAD, task_key(), name="not-true")["metadata"],
                "labels": {AIRFLOW_WORKER_LABEL: DEAD, "kubernetes_executor": "False"},
            },
        },
    ],
)
def test_pods_without_the_executor_label_are_not_taken_over(pod: dict[str, Any]) -> None:
    # The provider lists with the kubernetes_executor=True selector; a caller's wider
    # selector must not make plan_adoption take over someone else's pod.
    adoption = plan([pod])
    assert adoption.actions == ()
    assert adoption.undecodable == ()
    assert reasons(adoption.skipped) == {
        pod["metadata"]["name"]: "not an executor pod (no kubernetes_executor=True label)"
    }


@pytest.mark.parametrize(
    ("pod", "field"),
    [
        (pod_without("dag_id"), "dag_id"),
        (pod_without("task_id"), "task_id"),
        (pod_without("try_number"), "try_number"),
        (garbage_annotations(), "try_number"),
        (bad_callback_id(), "callback_id"),
        (unknown_workload_type(), "airflow-workload-type"),
        (EXECUTOR_LABEL_ONLY, "dag_id"),
        (ODD_SHAPES, "dag_id"),
    ],
)
def test_undecodable_pods_are_reported(pod: dict[str, Any], field: str) -> None:
    adoption = plan([pod, task_pod(DEAD, task_key("fine"))])
    assert adoption.adopted == frozenset({task_key("fine")})
    (undecodable,) = adoption.undecodable
    assert undecodable.pod_name == pod["metadata"]["name"]
    assert undecodable.reason.startswith(f"{field}:")
    assert PatchLabels(undecodable.pod_name, NS, {AIRFLOW_WORKER_LABEL: ME}) not in (
        adoption.actions
    )


# --- completed pods ----------------------------------------------------------------------


def test_succeeded_pods_become_completed_results() -> None:
    task_pod_ = task_pod(DEAD, task_key(), SUCCEEDED)
    callback_pod_ = callback_pod(DEAD, status=SUCCEEDED)
    # Succeeded pods are cleaned up whether or not their task instance was handed over.
    adoption = plan([task_pod_, callback_pod_], expected_task_keys=[])
    assert adoption.actions == (relabel(task_pod_), relabel(callback_pod_))
    assert adoption.adopted == frozenset()
    assert adoption.completed == (
        TaskResult(task_key(), ExecutorPseudoState.COMPLETED, name_of(task_pod_), NS, "42"),
        CallbackResult(
            CallbackKey(CALLBACK_ID),
            ExecutorPseudoState.COMPLETED,
            name_of(callback_pod_),
            NS,
            "42",
        ),
    )
    task_result, callback_result = adoption.completed
    done = PatchLabels(name_of(task_pod_), NS, {POD_EXECUTOR_DONE_LABEL: TRUE_LABEL_VALUE})
    # A task's process wrote its own final state: cleanup only.
    assert decide(task_result, running=False).actions == (DeletePod(name_of(task_pod_), NS),)
    kept = decide(task_result, running=False, config=DecisionConfig(delete_worker_pods=False))
    assert kept.actions == (done,)
    # A callback's end is only ever reported by the executor: cleanup, then SUCCESS.
    assert decide(callback_result, running=False).actions == (
        DeletePod(name_of(callback_pod_), NS),
        EmitEvent(CallbackKey(CALLBACK_ID), CallbackState.SUCCESS),
    )


def test_mixed_pods() -> None:
    adopt = task_pod(DEAD, task_key("adopt"))
    unexpected = task_pod(DEAD, task_key("unexpected"))
    finished = task_pod(DEAD, task_key("finished"), SUCCEEDED)
    live_callback = callback_pod(DEAD)
    bad_id = copy.deepcopy(live_callback)
    bad_id["metadata"]["name"] = "bad-id"
    bad_id["metadata"]["annotations"]["callback_id"] = "bad"
    other = task_pod(ALIVE, task_key("other"))
    mine = task_pod(ME, task_key("mine"))
    done = task_pod(DEAD, task_key("done"), FAILED, done=True)
    pods = [adopt, unexpected, finished, live_callback, bad_id, other, mine, done, FOREIGN]
    expected = [task_key("adopt"), task_key("lost"), task_key("finished")]

    adoption = plan(pods, expected_task_keys=expected)

    callback_key = CallbackKey(CALLBACK_ID)
    assert adoption.actions == (
        relabel(adopt),
        TrackRunning(task_key("adopt")),
        relabel(finished),
        relabel(live_callback),
        TrackRunning(callback_key),
    )
    assert adoption.adopted == frozenset({task_key("adopt"), callback_key})
    assert [result.key for result in adoption.completed] == [task_key("finished")]
    assert reasons(adoption.skipped) == {
        name_of(unexpected): "not among the task instances to adopt",
        name_of(other): "owned by live scheduler 2",
        name_of(mine): "owned by this scheduler",
        name_of(done): "already marked done",
        name_of(FOREIGN): "not an executor pod (no kubernetes_executor=True label)",
    }
    assert [pod.pod_name for pod in adoption.undecodable] == ["bad-id"]
    # Run again: what no pod at all was found for, in the order passed; the Succeeded
    # one is reported from its pod (the provider would reset it and run it twice).
    assert adoption.not_adopted(expected) == [task_key("lost")]
    assert adoption.found >= {task_key("adopt"), task_key("finished"), task_key("done")}


def test_not_adopted_is_empty_when_everything_was_adopted() -> None:
    keys = [task_key("a"), task_key("b", map_index=4)]
    adoption = plan([task_pod(DEAD, key) for key in keys], expected_task_keys=keys)
    assert adoption.not_adopted(keys) == []
    assert adoption.not_adopted([]) == []


# --- issue 19, item 3: an adoption an executor author can follow ---------------------------


def test_the_selectors_to_list_come_from_the_core() -> None:
    selectors = adoption_selectors(ME, dead_scheduler_ids=[DEAD, 5], alive_scheduler_ids=[ALIVE])
    labels = [selector.label_selector for selector in selectors]
    fields = [selector.field_selector for selector in selectors]
    assert labels == [
        # each dead scheduler's live pods (sorted, each once) ...
        f"kubernetes_executor=True,airflow-worker={DEAD},airflow_executor_done!=True",
        "kubernetes_executor=True,airflow-worker=5,airflow_executor_done!=True",
        # ... the live callback pods no live scheduler owns (Airflow never names them) ...
        (
            "kubernetes_executor=True,airflow-workload-type=callback,"
            f"airflow-worker notin ({ALIVE},{ME}),airflow_executor_done!=True"
        ),
        # ... and the Succeeded pods no live scheduler owns.
        (
            f"kubernetes_executor=True,airflow-worker notin ({ALIVE},{ME}),"
            "airflow_executor_done!=True"
        ),
    ]
    assert fields == [*["status.phase!=Succeeded"] * 3, "status.phase=Succeeded"]
    without_callbacks = adoption_selectors(ME, dead_scheduler_ids=[DEAD], callbacks=False)
    assert [selector.field_selector for selector in without_callbacks] == [
        "status.phase!=Succeeded",
        "status.phase=Succeeded",
    ]
    assert "callback" not in " ".join(s.label_selector for s in without_callbacks)


def _listed_again(pod: dict[str, Any], status: dict[str, Any], version: str) -> dict[str, Any]:
    again = copy.deepcopy(pod)
    again["status"] = copy.deepcopy(status)
    again["metadata"]["resourceVersion"] = version
    return again


@pytest.mark.parametrize("completed_first", [False, True])
def test_a_pod_in_both_lists_counts_once_as_its_newer_listing(completed_first: bool) -> None:
    # It Succeeded between the live list and the completed one: whichever order the lists
    # are passed in, the newer resourceVersion (Succeeded) is the pod.
    key = task_key()
    live = _listed_again(task_pod(DEAD, key), RUNNING, "41")
    done = _listed_again(live, SUCCEEDED, "57")
    pods = [done, live] if completed_first else [live, done]
    adoption = plan(pods, expected_task_keys=[key])
    assert adoption.actions == (relabel(live),)  # one relabel, no TrackRunning
    assert [(r.key, r.state) for r in adoption.completed] == [(key, ExecutorPseudoState.COMPLETED)]
    assert adoption.adopted == frozenset()
    assert adoption.skipped == () == adoption.undecodable


def test_a_pod_listed_twice_without_comparable_versions_is_its_later_listing() -> None:
    key = task_key()
    live = _listed_again(task_pod(DEAD, key), RUNNING, "v-a")
    done = _listed_again(live, SUCCEEDED, "v-b")
    assert [r.key for r in plan([live, done], expected_task_keys=[key]).completed] == [key]
    assert plan([done, live], expected_task_keys=[key]).adopted == frozenset({key})


def test_callbacks_have_a_not_adopted_answer_like_tasks() -> None:
    adopted, missing = CallbackKey(CALLBACK_ID), CallbackKey(OTHER_CALLBACK_ID)
    adoption = plan([callback_pod(DEAD)], expected_callback_keys=[adopted, missing])
    assert adoption.adopted == frozenset({adopted})
    assert adoption.not_adopted([adopted, missing]) == [missing]
    assert adoption.not_adopted([task_key()]) == [task_key()]


@pytest.mark.parametrize(
    ("owner", "why"),
    [
        (None, "no airflow-worker label"),
        ("", "no airflow-worker label"),
        ("not a label!", "malformed airflow-worker label 'not a label!'"),
        ("x" * 64, "malformed airflow-worker label"),
        (7, "malformed airflow-worker label 7"),
    ],
)
def test_a_pod_without_a_readable_owner_is_skipped_and_the_rest_adopted(
    owner: object, why: str
) -> None:
    # The relabel is guarded by the owner: without one it cannot be, so the pod is
    # reported (named) and never stops the adoption of the others.
    odd_key, fine_key = task_key("odd"), task_key("fine")
    odd = task_pod(DEAD, odd_key)
    if owner is None:
        del odd["metadata"]["labels"][AIRFLOW_WORKER_LABEL]
    else:
        odd["metadata"]["labels"][AIRFLOW_WORKER_LABEL] = owner
    fine = task_pod(DEAD, fine_key)
    adoption = plan([odd, fine], expected_task_keys=[odd_key, fine_key])
    (skipped,) = adoption.undecodable
    assert skipped.pod_name == name_of(odd)
    assert skipped.reason.startswith(why)
    assert adoption.adopted == frozenset({fine_key})
    assert adoption.actions == (relabel(fine), TrackRunning(fine_key))
    # Its pod may be running the workload: named, never run a second time beside it.
    assert adoption.not_adopted([odd_key, fine_key]) == []


# --- hypothesis: odd pods ------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
label_keys = st.sampled_from(
    [
        "airflow-worker",
        "airflow_executor_done",
        "airflow-workload-type",
        "kubernetes_executor",
        "airflow_pod_revoked",
    ]
)
annotation_keys = st.sampled_from(
    ["dag_id", "task_id", "try_number", "map_index", "run_id", "logical_date", "callback_id"]
)
interesting_values = st.one_of(
    st.sampled_from(["1", "2", "3", "-1", "True", "callback", "etl", CALLBACK_ID, "", "0x1"]),
    # Values no API server would return, which a hand-written manifest may still hold.
    st.sampled_from([None, 1, True, 1.5, [], ["1"], {}, {"a": "b"}]),
    json_values,
)
odd_metadata = st.fixed_dictionaries(
    {
        "labels": st.dictionaries(label_keys, interesting_values, max_size=5) | json_values,
        "annotations": st.dictionaries(annotation_keys, interesting_values, max_size=7)
        | json_values,
    },
    optional={
        "name": st.sampled_from(["p", ""]) | json_values,
        "namespace": st.just(NS) | json_values,
        "resourceVersion": st.just("1") | json_values,
    },
)
odd_pods = st.one_of(
    st.fixed_dictionaries(
        {"metadata": odd_metadata},
        optional={
            "status": st.fixed_dictionaries({"phase": st.sampled_from(["Succeeded", "Running"])})
            | json_values
        },
    ),
    st.dictionaries(st.sampled_from(["metadata", "status", "spec"]), json_values, max_size=3),
)
real_pods = st.builds(
    task_pod,
    st.sampled_from([DEAD, ALIVE, ME]),
    st.builds(task_key, st.sampled_from(["a", "b"]), st.integers(1, 2)),
    st.sampled_from([RUNNING, SUCCEEDED, FAILED]),
) | st.builds(
    callback_pod,
    st.sampled_from([DEAD, ALIVE, ME]),
    st.sampled_from([CALLBACK_ID, OTHER_CALLBACK_ID]),
    st.sampled_from([RUNNING, SUCCEEDED, FAILED]),
)


@given(
    pods=st.lists(odd_pods | real_pods, max_size=6),
    version=st.sampled_from([VERSION, "3.2.0", None, "garbage"]),
    expected=st.none() | st.lists(st.builds(task_key, st.sampled_from(["a", "b"])), max_size=2),
)
def test_plan_adoption_never_raises(
    pods: list[dict[str, Any]], version: str | None, expected: list[TaskInstanceKey] | None
) -> None:
    adoption = plan_adoption(
        pods,
        me=ME,
        alive_scheduler_ids=[ALIVE],
        expected_task_keys=expected,
        airflow_version=version,
    )
    # Every pod is accounted for exactly once: skipped, undecodable, or taken over (one
    # relabel each); a settled callback's Succeeded pod is relabelled, cleaned up and
    # listed as skipped.
    relabels = [
        action
        for action in adoption.actions
        if isinstance(action, PatchLabels) and action.labels == {AIRFLOW_WORKER_LABEL: ME}
    ]
    settled = sum("callback already settled" in pod.reason for pod in adoption.skipped)
    # A pod listed twice (the same namespace and name) counts once.
    distinct = (
        len({_where(pod) for pod in pods})
        + sum(_where(pod) is None for pod in pods)
        - (None in {_where(pod) for pod in pods})
    )
    assert len(adoption.skipped) + len(adoption.undecodable) + len(relabels) - settled == distinct
    taken_over = len(relabels) - len(adoption.completed) - settled
    tracked = [action.key for action in adoption.actions if isinstance(action, TrackRunning)]
    # Each adopted workload is tracked once, however many of its live pods were listed.
    assert len(tracked) == len(set(tracked)) == len(adoption.adopted) <= taken_over
    assert set(tracked) == adoption.adopted


def _where(pod: object) -> tuple[str | None, str] | None:
    # A pod's identity for the dedupe (None: not one it can name, kept as it is).
    metadata = pod.get("metadata") if isinstance(pod, dict) else None
    if not isinstance(metadata, dict):
        return None
    name, namespace = metadata.get("name"), metadata.get("namespace")
    if not isinstance(name, str) or not name or not isinstance(namespace, str | None):
        return None
    return (namespace, name)


def test_plan_adoption_survives_an_unhashable_owner_label() -> None:
    # Found by test_plan_adoption_never_raises: `owner in alive` used to hash the value.
    labels = {"kubernetes_executor": "True", AIRFLOW_WORKER_LABEL: ["1"]}
    pod = {"metadata": {"name": "odd", "labels": labels}}
    adoption = plan_adoption([pod], me=ME)
    assert [skipped.pod_name for skipped in adoption.undecodable] == ["odd"]


# --- revoke --------------------------------------------------------------------------------


def revoke(key: TaskInstanceKey, pods: list[dict[str, Any]]) -> tuple[object, ...]:
    """The revocation's actions, then its ignore note, if any."""
    decision = plan_revocation(key, pods, me=ME)
    return (*decision.actions, *decision.notes)


def test_revoke_marks_then_deletes_every_try_of_the_task() -> None:
    key = task_key(try_number=2)
    first_try = task_pod(ME, task_key(try_number=1))
    second_try = task_pod(ME, key)
    decision = plan_revocation(key, [first_try, second_try], me=ME)
    revoked = {POD_REVOKED_LABEL: TRUE_LABEL_VALUE}
    assert decision.actions == (
        FreeSlot(key),
        PatchLabels(name_of(first_try), NS, revoked),
        DeletePod(name_of(first_try), NS),
        PatchLabels(name_of(second_try), NS, revoked),
        DeletePod(name_of(second_try), NS),
    )
    assert decision.ignored is None


def test_revoke_drops_the_attempt_record() -> None:
    key, other = task_key("a"), task_key("b")
    attempts = Attempts().launched(KubernetesJob(key, ("x",))).launched(KubernetesJob(other, ()))
    decision = plan_revocation(key, [], me=ME, attempts=attempts)
    assert decision.attempts == attempts.without(key)
    assert other in decision.attempts


def test_revoked_pod_events_are_ignored_by_the_resolver() -> None:
    pod = task_pod(ME, task_key())
    (_, patch, delete) = plan_revocation(task_key(), [pod], me=ME).actions
    assert isinstance(patch, PatchLabels)
    assert isinstance(delete, DeletePod)
    pod["metadata"]["labels"].update(patch.labels)
    pod["metadata"]["deletionTimestamp"] = "2026-06-07T00:00:00Z"
    resolution = resolve_event(event("DELETED", pod))
    assert resolution.outcome is Outcome.REVOKED
    assert resolution.to_result() is None


def test_revoke_leaves_other_schedulers_and_other_workloads_alone() -> None:
    key = task_key("load", map_index=3)
    pods = [
        task_pod(ALIVE, key),
        task_pod(DEAD, key),
        task_pod(ME, task_key("load", map_index=4)),
        task_pod(ME, task_key("load")),  # unmapped
        task_pod(ME, task_key("other", map_index=3)),
        task_pod(ME, TaskInstanceKey("other_dag", "load", RUN_ID, 1, 3)),
        task_pod(ME, TaskInstanceKey("etl", "load", "manual__other", 1, 3)),
        callback_pod(ME),
    ]
    assert revoke(key, pods) == (
        FreeSlot(key),
        Ignore(f"no pod of this scheduler runs {key!r}"),
    )
    mine = task_pod(ME, key, name="mine")
    actions = revoke(key, [*pods, mine])
    assert actions[1:] == (
        PatchLabels("mine", NS, {POD_REVOKED_LABEL: TRUE_LABEL_VALUE}),
        DeletePod("mine", NS),
    )


def test_revoke_leaves_pods_without_a_run_id_annotation_alone() -> None:
    # The provider's pod map leaves them out, even for a key without a run id.
    key = TaskInstanceKey("etl", "load", None, 1)
    pod = task_pod(ME, task_key("load"), name="no-run-id")
    del pod["metadata"]["annotations"]["run_id"]
    assert revoke(key, [pod]) == (
        FreeSlot(key),
        Ignore(f"no pod of this scheduler runs {key!r}"),
    )


def test_revoke_without_a_pod_frees_the_slot_and_ignores() -> None:
    key = task_key()
    actions = revoke(key, [])
    assert actions == (FreeSlot(key), Ignore(f"no pod of this scheduler runs {key!r}"))


@given(pods=st.lists(odd_pods | real_pods, max_size=6))
def test_plan_revocation_never_raises(pods: list[dict[str, Any]]) -> None:
    key = task_key("a")
    decision = plan_revocation(key, pods, me=ME)
    actions = decision.actions
    assert actions[0] == FreeSlot(key)
    if len(actions) == 1:
        assert isinstance(decision.ignored, Ignore)
        return
    assert decision.ignored is None
    for patch, delete in zip(actions[1::2], actions[2::2], strict=True):
        assert isinstance(patch, PatchLabels)
        assert patch.labels == {POD_REVOKED_LABEL: TRUE_LABEL_VALUE}
        assert delete == DeletePod(patch.pod_name, patch.namespace)


def test_revoke_never_emits_an_event() -> None:
    pods = [task_pod(ME, task_key()), callback_pod(ME), FOREIGN, {}]
    for key in (task_key(), task_key("missing")):
        decision = plan_revocation(key, pods, me=ME)
        assert {type(action) for action in decision.actions} <= {
            FreeSlot,
            PatchLabels,
            DeletePod,
        }


# --- relist --------------------------------------------------------------------------------


def vanished(key: TaskInstanceKey | CallbackKey, launch: int | None = None) -> WorkloadResult:
    gone = ExecutorPseudoState.VANISHED
    if isinstance(key, CallbackKey):
        return CallbackResult(key, gone, "", "", "", launch=launch)
    return TaskResult(key, gone, "", "", "", launch=launch)


def test_relist_reports_running_workloads_whose_pods_are_gone() -> None:
    listed = [task_pod(ME, task_key("here")), callback_pod(ME)]
    gone_task, gone_callback = task_key("gone"), CallbackKey(OTHER_CALLBACK_ID)
    running: list[TaskInstanceKey | CallbackKey] = [
        task_key("here"),
        gone_task,
        CallbackKey(CALLBACK_ID),
        gone_callback,
    ]
    results = plan_relist(running, listed, airflow_version=VERSION)
    assert results == (vanished(gone_task), vanished(gone_callback))


def test_relist_does_not_report_workloads_waiting_for_their_pod() -> None:
    running = [task_key("queued"), task_key("gone")]
    results = plan_relist(running, [], waiting=[task_key("queued")], airflow_version=VERSION)
    assert results == (vanished(task_key("gone")),)


def test_relist_skips_undecodable_and_foreign_pods() -> None:
    odd = task_pod(ME, task_key("odd"))
    odd["metadata"]["annotations"]["try_number"] = "one"
    results = plan_relist([task_key("odd")], [odd, FOREIGN, {}], airflow_version=VERSION)
    assert results == (vanished(task_key("odd")),)


def test_kept_pod_of_a_requeued_launch_does_not_stand_for_the_current_one() -> None:
    # The first pod failed before the task ran and was kept; the task was requeued and
    # its second pod vanished during the watch gap.
    key = task_key()
    first = task_pod(ME, key, FAILED, name="first")
    attempts = Attempts().launched(KubernetesJob(key, ("x",)))
    record = attempts.get(key)
    assert record is not None
    requeued = attempts.with_record(
        key, attrs.evolve(record, attempts=1, requeued_pods=frozenset({"first"}))
    )
    assert plan_relist([key], [first], attempts=requeued, airflow_version=VERSION) == (
        vanished(key, launch=1),
    )
    # Without the records the kept pod hides the loss (the caller did not say).
    assert plan_relist([key], [first], airflow_version=VERSION) == ()
    # A listed second pod is the current launch.
    second = task_pod(ME, key, RUNNING, name="second")
    assert plan_relist([key], [first, second], attempts=requeued, airflow_version=VERSION) == ()


@given(
    present=st.sets(st.sampled_from(["a", "b", "c", "d"])),
    running=st.sets(st.sampled_from(["a", "b", "c", "d", "e"])),
    waiting=st.sets(st.sampled_from(["a", "b", "c", "d", "e"])),
)
def test_relist_reports_exactly_the_running_keys_with_neither_pod_nor_job(
    present: set[str], running: set[str], waiting: set[str]
) -> None:
    pods = [task_pod(ME, task_key(name)) for name in sorted(present)]
    keys = [task_key(name) for name in sorted(running)]
    results = plan_relist(
        keys, pods, waiting=[task_key(name) for name in waiting], airflow_version=VERSION
    )
    assert [result.key for result in results] == [
        task_key(name) for name in sorted(running - present - waiting)
    ]
    assert all(result.state is ExecutorPseudoState.VANISHED for result in results)


@given(
    pods=st.lists(odd_pods | real_pods, max_size=6),
    running=st.lists(
        st.builds(task_key, st.sampled_from(["a", "b", "c"]), st.integers(1, 2))
        | st.sampled_from([CallbackKey(CALLBACK_ID), CallbackKey(OTHER_CALLBACK_ID)]),
        max_size=5,
        unique=True,
    ),
    version=st.sampled_from([VERSION, "3.2.0", None, "not a version"]),
)
def test_plan_relist_never_raises(
    pods: list[dict[str, Any]],
    running: list[TaskInstanceKey | CallbackKey],
    version: str | None,
) -> None:
    results = plan_relist(running, pods, airflow_version=version)
    assert [result.key for result in results] == [
        key for key in running if key in {result.key for result in results}
    ]
    assert all(result.state is ExecutorPseudoState.VANISHED for result in results)


# --- adoption retried (apache/airflow#39088; the provider's
# test_try_adopt_already_adopted_task_instances) -------------------------------------------


def test_retried_adoption_does_not_reset_a_task_adopted_by_the_first_try() -> None:
    key = task_key()
    pod = task_pod(DEAD, key)
    first = plan([pod], me="5", expected_task_keys=[key])
    assert first.adopted == frozenset({key})
    pod["metadata"]["labels"][AIRFLOW_WORKER_LABEL] = "5"  # the first try's patch landed
    second = plan([pod], me="5", expected_task_keys=[key])
    assert second.not_adopted([key]) == []
    assert key in second.owned
    assert second.actions == ()  # nothing patched or tracked twice


def test_keys_already_running_are_owned_and_never_adopted_twice() -> None:
    key, other = task_key("a"), task_key("b")
    pods = [task_pod(DEAD, key), task_pod(DEAD, other)]
    adoption = plan(pods, expected_task_keys=[key, other], running=[key])
    assert adoption.adopted == frozenset({other})
    assert adoption.owned == frozenset({key})
    assert TrackRunning(key) not in adoption.actions
    assert reasons(adoption.skipped) == {name_of(pods[0]): "already owned by this scheduler"}
    assert adoption.not_adopted([key, other, task_key("c")]) == [task_key("c")]


def test_finished_or_done_pods_of_this_scheduler_do_not_make_a_key_owned() -> None:
    failed, done = task_key("a"), task_key("b")
    pods = [task_pod(ME, failed, FAILED), task_pod(ME, done, done=True)]
    adoption = plan(pods, expected_task_keys=[failed, done])
    assert adoption.owned == frozenset()
    # Yet each ran in its pod (its result is this scheduler's to report): not run again.
    assert adoption.found == frozenset({failed, done})
    assert adoption.not_adopted([failed, done]) == []


def test_a_failed_callback_pod_no_longer_active_is_cleaned_up_a_tasks_is_left() -> None:
    # Its report was stored before the pod would have gone, and its scheduler died in
    # between: a callback's is cleaned up as that scheduler would have (the active
    # callbacks are all known), per the clean-up options. A task's list is only the batch
    # Airflow handed over: its pod is left for a later adoption.
    pod = callback_pod(DEAD, status=FAILED)
    adoption = plan([pod], expected_task_keys=[], expected_callback_keys=[])
    assert adoption.actions == (
        PatchLabels(name_of(pod), NS, {POD_EXECUTOR_DONE_LABEL: TRUE_LABEL_VALUE}),
    )
    assert adoption.adopted == frozenset()
    config = DecisionConfig(delete_worker_pods_on_failure=True)
    deleted = plan([pod], expected_task_keys=[], expected_callback_keys=[], config=config)
    assert deleted.actions == (DeletePod(name_of(pod), NS),)
    assert "cleaned up" in reasons(adoption.skipped)[name_of(pod)]
    task = task_pod(DEAD, task_key("ended"), FAILED)
    left = plan([task], expected_task_keys=[], config=config)
    assert left.actions == ()
    assert reasons(left.skipped) == {name_of(task): "not among the task instances to adopt"}


def test_the_newest_pod_is_adopted_when_it_failed_beside_an_older_stuck_one() -> None:
    # The first launch is stuck Pending (its image cannot be pulled) and was requeued; the
    # second, newer launch failed. The newer one is the workload's: adopting neither (the
    # Failed pod used to count as "beside a live one") left the workload unreported.
    key = task_key()
    stuck = task_pod(DEAD, key, {"phase": "Pending"}, name="first")
    stuck["metadata"]["creationTimestamp"] = "2026-06-07T00:00:03Z"
    failed = task_pod(DEAD, key, FAILED, name="second")
    failed["metadata"]["creationTimestamp"] = "2026-06-07T00:00:05Z"
    adoption = plan([stuck, failed], expected_task_keys=[key])
    assert adoption.actions == (DeletePod("first", NS), relabel(failed), TrackRunning(key))
    assert reasons(adoption.skipped) == {
        "first": "an earlier launch: the workload has a newer pod; deleted"
    }


# --- generic workloads (issue 30, item 5) ---------------------------------------------------


def generic_pod(owner: str | int, workload_id: str, status: dict[str, Any]) -> dict[str, Any]:
    pod = construct_generic_pod(
        workload_id=workload_id,
        namespace=NS,
        scheduler_job_id=owner,
        kube_image="jobs:1",
        args=["run", workload_id],
        pod_id=f"generic-{workload_id}",
    )
    return _finish(pod, status, done=False)


def test_generic_pods_are_adopted_as_generic_workloads_with_no_airflow_version() -> None:
    live, settled, succeeded = (GenericKey(f"job-{n}") for n in range(3))
    pods = [
        generic_pod(DEAD, live.id, RUNNING),
        generic_pod(DEAD, settled.id, RUNNING),
        generic_pod(DEAD, succeeded.id, SUCCEEDED),
    ]
    adoption = plan(pods, airflow_version=None, expected_generic_keys=[live, succeeded])
    assert adoption.adopted == frozenset({live})
    assert TrackRunning(live) in adoption.actions
    assert reasons(adoption.skipped) == {
        name_of(pods[1]): "not among the generic workloads to adopt"
    }
    (completed,) = adoption.completed
    assert isinstance(completed, GenericResult)
    assert (completed.key, completed.state) == (succeeded, ExecutorPseudoState.COMPLETED)
    assert adoption.undecodable == ()
    # Without the expected keys every live generic pod is taken over, as callbacks are.
    assert plan(pods, airflow_version=None).adopted == frozenset({live, settled})


def test_succeeded_pod_of_a_settled_generic_workload_is_cleaned_up_not_reported() -> None:
    pod = generic_pod(DEAD, "job-1", SUCCEEDED)
    adoption = plan([pod], airflow_version=None, expected_generic_keys=[])
    assert adoption.completed == ()
    assert adoption.actions == (relabel(pod), DeletePod(name_of(pod), NS))
    assert reasons(adoption.skipped) == {
        name_of(pod): "generic workload already settled: its Succeeded pod is cleaned up, "
        "not reported"
    }


def test_a_relisted_generic_workload_that_vanished_is_settled_as_a_generic_one() -> None:
    key = GenericKey("job-1")
    (vanished,) = plan_relist([key], [])
    assert isinstance(vanished, GenericResult)
    assert vanished.state is ExecutorPseudoState.VANISHED
    decision = decide(vanished, running=True)
    assert [type(action).__name__ for action in decision.actions] == ["FreeSlot", "EmitEvent"]
    assert decision.actions[-1] == EmitEvent(
        key,
        CallbackState.FAILED,
        "the pod vanished while the watch was down; its final events were lost",
    )


def test_a_scheduler_restarted_under_its_id_reclaims_its_earlier_runs_pods() -> None:
    key = task_key("mine")
    live, finished = task_pod(ME, key), task_pod(ME, task_key("done"), SUCCEEDED)
    held = plan([live, finished], expected_task_keys=[key, task_key("done")])
    assert held.actions == ()  # this run's own pods: left alone
    reclaimed = plan([live, finished], expected_task_keys=[key, task_key("done")], reclaim=True)
    guarded = {AIRFLOW_WORKER_LABEL: ME}
    assert reclaimed.actions == (
        PatchLabels(name_of(live), NS, guarded, expect=guarded),
        TrackRunning(key),
        PatchLabels(name_of(finished), NS, guarded, expect=guarded),
    )
    assert [result.key for result in reclaimed.completed] == [task_key("done")]
    # Still owned, and never planned twice, when it runs already.
    again = plan([live], expected_task_keys=[key], reclaim=True, running=[key])
    assert again.actions == ()
    assert again.not_adopted([key]) == []
    selectors = adoption_selectors(ME, dead_scheduler_ids=[ME])
    assert selectors[-1].label_selector == (
        f"kubernetes_executor=True,airflow-worker={ME},airflow_executor_done!=True"
    )
    assert selectors[-1].field_selector == "status.phase=Succeeded"

"""resolve_event: one test per row of the provider's decision table, tasks and callbacks."""

from __future__ import annotations

import datetime
import re
from typing import Any

import pytest

from k8s_workloads.states import (
    CallbackState,
    ExecutorPseudoState,
    TaskInstanceState,
)
from k8s_workloads.watch.events import resolve_event
from k8s_workloads.watch.failures import (
    DEFAULT_FATAL_PENDING_REASONS,
    PROVIDER_FATAL_PENDING_REASONS,
    FailureKind,
    PendingPolicy,
)
from k8s_workloads.watch.pod_rules import DECISION_TABLE
from k8s_workloads.watch.resolution import Outcome, ResolverConfig
from tests.support.event_factory import (
    CALLBACK_KEY,
    TASK_KEY,
    VERSION,
    callback_pod,
    event,
    task_pod,
    terminated,
    waiting,
)

ON = ResolverConfig(airflow_version=VERSION)
DELETING = {"deletionTimestamp": "2026-06-07T00:00:00Z"}


def both(status: dict[str, Any], kind: str = "MODIFIED", **metadata: Any) -> list[Any]:
    return [
        (resolve_event(event(kind, task_pod(status, **metadata)), config=ON), TASK_KEY),
        (resolve_event(event(kind, callback_pod(status, **metadata)), config=ON), CALLBACK_KEY),
    ]


def test_every_row_names_an_outcome_and_every_pod_outcome_has_a_row() -> None:
    named = []
    for condition, result in DECISION_TABLE:
        found = re.match(r"[A-Z_]+", result)
        assert condition, result
        assert found, (condition, result)
        named.append(found.group(0))
    assert set(named) <= {outcome.name for outcome in Outcome}
    # Outcomes about the event, not the pod, are decided before the table applies.
    before_the_table = {"FOREIGN", "UNDECODABLE", "RESYNC", "WATCH_ERROR", "BOOKMARK", "MALFORMED"}
    assert {outcome.name for outcome in Outcome} - before_the_table == set(named)


def test_row_1_revoked_pods_are_ignored() -> None:
    for kind in ("MODIFIED", "DELETED"):
        pod = task_pod({"phase": "Failed"})
        pod["metadata"]["labels"]["airflow_pod_revoked"] = "True"
        resolution = resolve_event(event(kind, pod))
        assert resolution.outcome is Outcome.REVOKED
        assert resolution.state is None
        assert resolution.key is None


def test_row_2_deleted_without_timestamp_is_adopted() -> None:
    for resolution, key in both({"phase": "Running"}, "DELETED"):
        assert resolution.outcome is Outcome.ADOPTED
        assert resolution.state is ExecutorPseudoState.ADOPTED
        assert resolution.key == key


def test_row_3_provider_failed() -> None:
    for resolution, key in both({"phase": "Pending", "reason": "ProviderFailed"}):
        assert resolution.outcome is Outcome.FAILED
        assert resolution.state in {TaskInstanceState.FAILED, CallbackState.FAILED}
        assert resolution.key == key
        assert resolution.classification is not None
        assert resolution.classification.kind is FailureKind.INFRASTRUCTURE


def test_row_4a_pending_deleted_gracefully_reports_nothing() -> None:
    for resolution, _ in both({"phase": "Pending"}, "DELETED", **DELETING):
        assert resolution.outcome is Outcome.DELETED_BEFORE_START
        assert resolution.state is None


@pytest.mark.parametrize(
    "reason",
    ["CreateContainerConfigError", "ErrImagePull", "CreateContainerError", "ImageInspectError",
     "InvalidImageName", "ImagePullBackOff", "ErrImageNeverPull"],
)  # fmt: skip
def test_row_4b_fatal_pending_reasons_fail(reason: str) -> None:
    status = {"phase": "Pending", "containerStatuses": [waiting("base", reason, "boom")]}
    for resolution, _ in both(status):
        assert resolution.outcome is Outcome.FAILED
        assert reason in resolution.reason
        assert resolution.failure_details is not None
        assert resolution.failure_details.get("container_reason") == reason


def test_row_4b_the_default_is_the_providers_list_and_the_states_that_never_end() -> None:
    provider = {
        "CreateContainerConfigError",
        "ErrImagePull",
        "CreateContainerError",
        "ImageInspectError",
        "InvalidImageName",
    }  # worker_pod_pending_fatal_container_state_reasons' default, provider 10.25.0
    assert provider == PROVIDER_FATAL_PENDING_REASONS
    assert DEFAULT_FATAL_PENDING_REASONS - provider == {"ImagePullBackOff", "ErrImageNeverPull"}


def test_row_4b_a_pod_backing_off_its_image_pull_fails_with_the_reason() -> None:
    """Where a pod that cannot pull its image stays, and all a pod adopted (or re-listed)
    in that state shows: the provider's list leaves it Pending for ever."""
    message = 'Back-off pulling image "registry.example.com/etl:1"'
    status = {
        "phase": "Pending",
        "initContainerStatuses": [
            {"name": "init", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
        ],
        "containerStatuses": [waiting("base", "ImagePullBackOff", message)],
    }
    for resolution, key in both(status):
        assert resolution.outcome is Outcome.FAILED
        assert resolution.key == key
        assert resolution.reason == (
            "Pod failed because of ImagePullBackOff (container base, while pending)"
        )
        assert resolution.failure_details == {
            "pod_status": "Pending",
            "container_state": "waiting",
            "container_reason": "ImagePullBackOff",
            "container_name": "base",
        }
        assert resolution.classification is not None
        assert resolution.classification.kind is FailureKind.APPLICATION
    provider = ResolverConfig(
        airflow_version=VERSION, fatal_pending_reasons=PROVIDER_FATAL_PENDING_REASONS
    )
    pod = event("MODIFIED", task_pod(status))
    assert resolve_event(pod, config=provider).outcome is Outcome.PENDING


def test_row_4b_an_init_container_backing_off_its_pull_fails_the_pod() -> None:
    status = {
        "phase": "Pending",
        "initContainerStatuses": [waiting("init", "ImagePullBackOff", "Back-off pulling image")],
        "containerStatuses": [waiting("base", "PodInitializing")],
    }
    resolution = resolve_event(event("MODIFIED", task_pod(status)))
    assert resolution.outcome is Outcome.FAILED
    assert resolution.failure_details is not None
    assert resolution.failure_details.get("container_name") == "init"


def test_row_4b_a_throttled_pull_and_its_back_off_are_not_fatal() -> None:
    for reason, message in [
        ("ErrImagePull", "pull QPS exceeded"),
        ("ImagePullBackOff", 'Back-off pulling image "etl:1": ErrImagePull: pull QPS exceeded'),
    ]:
        status = {"phase": "Pending", "containerStatuses": [waiting("base", reason, message)]}
        assert resolve_event(event("MODIFIED", task_pod(status))).outcome is Outcome.PENDING
    # The provider's exemption is this exact message of ErrImagePull only.
    other = {
        "phase": "Pending",
        "containerStatuses": [waiting("base", "ErrImagePull", "pull QPS exceeded, retrying")],
    }
    assert resolve_event(event("MODIFIED", task_pod(other))).outcome is Outcome.FAILED


def test_row_4b_init_containers_all_then_only_the_first_main_one() -> None:
    status = {
        "phase": "Pending",
        "initContainerStatuses": [
            waiting("init-a", "PodInitializing"),
            waiting("init-b", "ErrImagePull"),
        ],
    }
    assert resolve_event(event("MODIFIED", task_pod(status))).outcome is Outcome.FAILED
    second_main = {
        "phase": "Pending",
        "containerStatuses": [
            waiting("base", "ContainerCreating"),
            waiting("side", "ErrImagePull"),
        ],
    }
    assert resolve_event(event("MODIFIED", task_pod(second_main))).outcome is Outcome.PENDING


def test_row_4b_pull_qps_exceeded_and_reasonless_waits_are_not_fatal() -> None:
    throttled = {
        "phase": "Pending",
        "containerStatuses": [waiting("base", "ErrImagePull", "pull QPS exceeded")],
    }
    assert resolve_event(event("MODIFIED", task_pod(throttled))).outcome is Outcome.PENDING
    no_reason = {
        "phase": "Pending",
        "containerStatuses": [{"name": "base", "state": {"waiting": {}}}],
    }
    assert resolve_event(event("MODIFIED", task_pod(no_reason))).outcome is Outcome.PENDING


def test_row_4b_crash_loop_only_when_configured_and_empty_list_disables() -> None:
    status = {"phase": "Pending", "containerStatuses": [waiting("base", "CrashLoopBackOff")]}
    pod = event("MODIFIED", task_pod(status))
    assert resolve_event(pod).outcome is Outcome.PENDING
    # An init container restarting (restartPolicy OnFailure) may yet succeed: not fatal.
    init = {
        "phase": "Pending",
        "initContainerStatuses": [waiting("wait-for-db", "CrashLoopBackOff", "back-off 10s")],
    }
    assert resolve_event(event("MODIFIED", task_pod(init))).outcome is Outcome.PENDING
    config = ResolverConfig(fatal_pending_reasons={"CrashLoopBackOff"})
    assert resolve_event(pod, config=config).outcome is Outcome.FAILED
    fatal = event(
        "MODIFIED",
        task_pod({"phase": "Pending", "containerStatuses": [waiting("base", "ErrImagePull")]}),
    )
    assert (
        resolve_event(fatal, config=ResolverConfig(fatal_pending_reasons=())).outcome
        is Outcome.PENDING
    )


def test_row_4c_pending() -> None:
    for resolution, key in both({"phase": "Pending"}):
        assert resolution.outcome is Outcome.PENDING
        assert resolution.state is None
        assert resolution.key == key


def test_row_5_failed_with_details() -> None:
    status = {"phase": "Failed", "containerStatuses": [terminated("base", 137, "OOMKilled")]}
    for resolution, key in both(status):
        assert resolution.outcome is Outcome.FAILED
        assert resolution.key == key
        assert (
            resolution.reason == "Pod failed because of OOMKilled (container base, exit code 137)"
        )
        assert resolution.failure_details == {
            "pod_status": "Failed", "pod_reason": None, "pod_message": None,
            "container_state": "terminated", "container_reason": "OOMKilled",
            "container_message": None, "exit_code": 137, "container_type": "main",
            "container_name": "base",
        }  # fmt: skip
    task, callback = both(status)
    assert task[0].state is TaskInstanceState.FAILED
    assert callback[0].state is CallbackState.FAILED


def test_row_6_succeeded_task_looks_up_callback_succeeds() -> None:
    (task, _), (callback, _) = both({"phase": "Succeeded"})
    assert task.outcome is callback.outcome is Outcome.SUCCEEDED
    assert task.state is ExecutorPseudoState.LOOKUP
    assert callback.state is CallbackState.SUCCESS


def test_row_7a_running_pod_deleted_is_an_infrastructure_failure() -> None:
    for resolution, _ in both({"phase": "Running"}, "DELETED", **DELETING):
        assert resolution.outcome is Outcome.FAILED
        assert resolution.failure_details == {
            "pod_status": "Running", "pod_reason": "PodDeleted", "pod_message": None,
        }  # fmt: skip
        assert resolution.classification is not None
        assert resolution.classification.kind is FailureKind.INFRASTRUCTURE
        assert resolution.classification.retryable


def test_row_7b_running_task_reports_nothing_callback_reports_running() -> None:
    (task, _), (callback, _) = both({"phase": "Running"})
    assert task.outcome is callback.outcome is Outcome.RUNNING
    assert task.state is None
    assert callback.state is CallbackState.RUNNING
    quiet = ResolverConfig(airflow_version=VERSION, report_callback_running=False)
    assert (
        resolve_event(event("MODIFIED", callback_pod({"phase": "Running"})), config=quiet).state
        is None
    )


def test_row_8_other_phases() -> None:
    for resolution, _ in both({"phase": "Unknown"}):
        assert resolution.outcome is Outcome.UNKNOWN_PHASE
        assert resolution.state is None
    assert resolve_event(event("ADDED", task_pod())).outcome is Outcome.UNKNOWN_PHASE


def test_callback_pod_with_the_gate_off_is_undecodable_not_a_crash() -> None:
    for version in (None, "3.2.2"):
        resolution = resolve_event(
            event("MODIFIED", callback_pod({"phase": "Failed"})),
            config=ResolverConfig(airflow_version=version),
        )
        assert resolution.outcome is Outcome.UNDECODABLE
        assert "callback" in resolution.reason
        assert resolution.state is None


def test_foreign_and_undecodable_pods() -> None:
    pod = task_pod({"phase": "Failed"})
    del pod["metadata"]["labels"]["kubernetes_executor"]
    assert resolve_event(event("MODIFIED", pod)).outcome is Outcome.FOREIGN
    pod = task_pod({"phase": "Failed"})
    del pod["metadata"]["annotations"]["try_number"]
    resolution = resolve_event(event("MODIFIED", pod))
    assert resolution.outcome is Outcome.UNDECODABLE
    assert "try_number: missing" in resolution.reason


def test_watch_errors_and_bookmarks() -> None:
    gone = resolve_event(
        {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}
    )
    assert gone.outcome is Outcome.RESYNC
    assert gone.error_code == 410
    other = resolve_event(
        {"type": "ERROR", "object": {"code": 500, "reason": "InternalError", "message": "etcd"}}
    )
    assert other.outcome is Outcome.WATCH_ERROR
    assert other.reason == "Kubernetes failure for InternalError with code 500 and message: etcd"
    bookmark = resolve_event(
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "77"}}}
    )
    assert (bookmark.outcome, bookmark.resource_version) == (Outcome.BOOKMARK, "77")


@pytest.mark.parametrize(
    "bad",
    [None, 5, [], {}, {"type": 1}, {"type": "ADDED"}, {"type": "ADDED", "object": "pod"},
     {"type": "SOMETHING", "object": {}}],
)  # fmt: skip
def test_malformed_events(bad: object) -> None:
    assert resolve_event(bad).outcome is Outcome.MALFORMED


def test_odd_pods_never_raise() -> None:
    odd_objects: list[Any] = [
        {}, {"metadata": None}, {"metadata": {"labels": None}}, {"status": None},
        {"metadata": {"labels": {"kubernetes_executor": "True"}, "annotations": {"dag_id": 5}}},
    ]  # fmt: skip
    for obj in odd_objects:
        resolution = resolve_event({"type": "MODIFIED", "object": obj})
        assert resolution.outcome in {Outcome.FOREIGN, Outcome.UNDECODABLE}


def test_oom_success() -> None:
    status = {"phase": "Succeeded", "containerStatuses": [terminated("base", 0, "OOMKilled")]}
    default = resolve_event(event("MODIFIED", task_pod(status)))
    assert default.outcome is Outcome.SUCCEEDED
    assert "OOMKilled" in default.reason
    strict = resolve_event(
        event("MODIFIED", task_pod(status)), config=ResolverConfig(oom_success_is_failure=True)
    )
    assert strict.state is TaskInstanceState.FAILED
    assert strict.classification is not None
    assert strict.classification.kind is FailureKind.APPLICATION


# --- opt-in pending policy ---------------------------------------------------------------

T0 = datetime.datetime(2026, 6, 7, 12, 0, tzinfo=datetime.timezone.utc)
POLICY = ResolverConfig(pending=PendingPolicy())


def pending_pod(*containers: dict[str, Any], scheduled: bool = True) -> dict[str, Any]:
    conditions = [
        {"type": "ContainersReady", "status": "False", "lastTransitionTime": "2026-06-07T12:00:00Z"}
    ]
    if not scheduled:
        conditions = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                       "message": "0/3 nodes are available: 3 Insufficient cpu."}]  # fmt: skip
    return task_pod(
        {"phase": "Pending", "conditions": conditions, "containerStatuses": list(containers)},
        creationTimestamp="2026-06-07T11:59:00Z",
    )


def at(seconds: float) -> datetime.datetime:
    return T0 + datetime.timedelta(seconds=seconds)


def test_image_pull_backoff_gets_a_grace_period() -> None:
    pod = event(
        "MODIFIED", pending_pod(waiting("base", "ImagePullBackOff", "Back-off pulling image"))
    )
    early = resolve_event(pod, config=POLICY, now=at(60))
    assert early.outcome is Outcome.PENDING
    assert early.reason.startswith("ImagePullBackOff: Back-off pulling image")
    late = resolve_event(pod, config=POLICY, now=at(181))
    assert late.outcome is Outcome.FAILED
    assert late.classification is not None
    assert late.classification.kind is FailureKind.APPLICATION
    # Without a clock nothing with a grace period can expire.
    assert resolve_event(pod, config=POLICY).outcome is Outcome.PENDING


def test_registry_rate_limit_is_infrastructure() -> None:
    pod = event("MODIFIED", pending_pod(waiting("base", "ErrImagePull", "429 Too Many Requests")))
    resolution = resolve_event(pod, config=POLICY, now=at(500))
    assert resolution.classification is not None
    assert resolution.classification.kind is FailureKind.INFRASTRUCTURE
    assert resolution.classification.retryable


def test_config_errors_fail_at_once_and_init_containers_come_first() -> None:
    pod = pending_pod(waiting("base", "ImagePullBackOff"))
    pod["status"]["initContainerStatuses"] = [
        waiting("init", "CreateContainerConfigError", "secret x not found")
    ]
    resolution = resolve_event(event("MODIFIED", pod), config=POLICY, now=at(1))
    assert resolution.outcome is Outcome.FAILED
    assert resolution.failure_details is not None
    assert resolution.failure_details.get("container_name") == "init"
    assert (
        resolve_event(
            event("MODIFIED", pending_pod(waiting("base", "InvalidImageName"))), config=POLICY
        ).outcome
        is Outcome.FAILED
    )


def test_unschedulable_is_reported_never_failed_by_itself() -> None:
    pod = event("MODIFIED", pending_pod(scheduled=False))
    resolution = resolve_event(pod, config=POLICY, now=at(10_000))
    assert resolution.outcome is Outcome.PENDING
    assert resolution.reason == "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu."


def test_overall_pending_timeout() -> None:
    config = ResolverConfig(pending=PendingPolicy(pending_timeout=600))
    pod = event("MODIFIED", pending_pod(scheduled=False))
    assert resolve_event(pod, config=config, now=at(60)).outcome is Outcome.PENDING
    timed_out = resolve_event(pod, config=config, now=at(600))
    assert timed_out.outcome is Outcome.FAILED
    assert timed_out.classification is not None
    assert timed_out.classification.reason == "PodPendingTimeout"


def test_resolving_never_imports_the_adapter_for_plain_events() -> None:
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    code = (
        "import sys\n"
        "from k8s_workloads.watch.events import resolve_event, resolve_event_json\n"
        "from tests.support.event_factory import event, task_pod\n"
        "import json\n"
        "e = event('MODIFIED', task_pod({'phase': 'Running'}))\n"
        "print(resolve_event(e).outcome.name, resolve_event_json(json.dumps(e)).outcome.name)\n"
        "print(sorted(m for m in ('kubernetes', 'k8s_workloads.adapters') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:2] == ["RUNNING RUNNING", "[]"]


def test_a_model_object_is_read_by_the_reader_registered_for_its_package() -> None:
    from k8s_workloads import model_readers  # noqa: PLC0415

    class Model:
        def to_dict(self) -> dict[str, Any]:
            return {}

    Model.__module__ = "fakemodels.v1_pod"
    pod = task_pod({"phase": "Running"})
    unread = {"type": "MODIFIED", "object": Model()}
    assert resolve_event(unread).outcome is Outcome.MALFORMED  # no reader for its package
    model_readers.register("fakemodels", lambda _obj: pod)
    try:
        resolution = resolve_event({"type": "MODIFIED", "object": Model()})
    finally:
        del model_readers._READERS["fakemodels"]
    assert resolution.outcome is Outcome.RUNNING
    assert resolution.key == TASK_KEY

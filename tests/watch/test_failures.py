"""Failure details (reference §4.3), classification and the human reason."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

import pytest

from k8s_workloads.watch.failures import (
    DISRUPTION_REASONS,
    FailureKind,
    PendingPolicy,
    classify_failure,
    collect_failure_details,
    demystify_pending,
    describe_failure,
    describe_pod_failure,
    oom_killed_container,
)
from tests.support.event_factory import terminated, waiting

if TYPE_CHECKING:
    from k8s_workloads.states import FailureDetails


def failed(**status: Any) -> dict[str, Any]:
    return {"status": {"phase": "Failed", **status}}


def test_details_only_for_failed_pods() -> None:
    assert collect_failure_details({"status": {"phase": "Running"}}) is None
    assert collect_failure_details({}) is None
    assert collect_failure_details({"status": None}) is None


def test_pod_level_details() -> None:
    details = collect_failure_details(failed(reason="Evicted", message="low on memory"))
    assert details == {
        "pod_status": "Failed",
        "pod_reason": "Evicted",
        "pod_message": "low on memory",
    }


def test_init_containers_first_then_main() -> None:
    pod = failed(
        initContainerStatuses=[terminated("init", 0, "Completed"), terminated("init2", 2, "Error")],
        containerStatuses=[terminated("base", 137, "OOMKilled")],
    )
    details = collect_failure_details(pod)
    assert details is not None
    assert (details.get("container_name"), details.get("container_type")) == ("init2", "init")
    assert details.get("exit_code") == 2


def test_first_terminated_failure_wins_over_waiting_and_completed() -> None:
    pod = failed(
        containerStatuses=[
            waiting("w1", "ContainerCreating"),
            terminated("ok", 0),
            terminated("done", 1, "Completed"),  # reason Completed is never a failure
            terminated("bad", 3, "Error"),
            terminated("worse", 4, "Error"),
        ]
    )
    details = collect_failure_details(pod)
    assert details is not None
    assert details.get("container_name") == "bad"
    assert details.get("container_state") == "terminated"


def test_last_waiting_container_when_nothing_terminated_badly() -> None:
    pod = failed(
        containerStatuses=[
            waiting("a", "ErrImagePull"),
            waiting("b", "CrashLoopBackOff", "back-off"),
        ]
    )
    details = collect_failure_details(pod)
    assert details == {
        "pod_status": "Failed", "pod_reason": None, "pod_message": None,
        "container_state": "waiting", "container_reason": "CrashLoopBackOff",
        "container_message": "back-off", "container_type": "main", "container_name": "b",
    }  # fmt: skip
    assert "exit_code" not in details


def test_missing_exit_code_counts_as_zero_and_odd_shapes_are_ignored() -> None:
    pod = failed(
        containerStatuses=[{"name": "x", "state": {"terminated": {"reason": "Error"}}}, 5, None]
    )
    assert collect_failure_details(pod) == {
        "pod_status": "Failed",
        "pod_reason": None,
        "pod_message": None,
    }


@pytest.mark.parametrize("reason", sorted(DISRUPTION_REASONS))
def test_disruption_target_condition_is_infrastructure(reason: str) -> None:
    pod = failed(
        conditions=[{"type": "DisruptionTarget", "status": "True", "reason": reason}],
        containerStatuses=[terminated("base", 137, "OOMKilled")],
    )
    found = classify_failure(pod)
    assert (found.kind, found.retryable, found.reason) == (FailureKind.INFRASTRUCTURE, True, reason)
    assert found.evidence == "DisruptionTarget condition"


@pytest.mark.parametrize(
    "reason",
    [
        "Evicted",
        "Preempting",
        "NodeShutdown",
        "NodeLost",
        "NodeAffinity",
        "UnexpectedAdmissionError",
    ],
)
def test_infrastructure_pod_reasons_win_over_container_evidence(reason: str) -> None:
    pod = failed(reason=reason, containerStatuses=[terminated("base", 137, "OOMKilled")])
    found = classify_failure(pod)
    assert found.kind is FailureKind.INFRASTRUCTURE
    assert found.reason == reason


@pytest.mark.parametrize(
    ("reason", "code"), [("OOMKilled", 137), ("Error", 1), ("ContainerCannotRun", 128)]
)
def test_application_container_reasons(reason: str, code: int) -> None:
    found = classify_failure(failed(containerStatuses=[terminated("base", code, reason)]))
    assert (found.kind, found.retryable, found.reason) == (FailureKind.APPLICATION, False, reason)
    assert found.evidence == "container base"


def test_oom_in_a_previous_run_or_a_succeeded_pod_is_seen() -> None:
    pod = {"status": {"phase": "Succeeded", "containerStatuses": [
        {"name": "base", "state": {"terminated": {"exitCode": 0}},
         "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}}  # fmt: skip
    assert oom_killed_container(pod) == "base"
    assert classify_failure(pod).reason == "OOMKilled"


def test_nonzero_exit_without_reason_is_application_and_nothing_is_unknown() -> None:
    found = classify_failure(failed(containerStatuses=[terminated("base", 2)]))
    assert found.kind is FailureKind.APPLICATION
    nothing = classify_failure(failed())
    assert (nothing.kind, nothing.retryable) == (FailureKind.UNKNOWN, False)


def test_deleted_while_running() -> None:
    found = classify_failure({"status": {"phase": "Running"}}, deleted_while_running=True)
    assert (found.kind, found.reason) == (FailureKind.INFRASTRUCTURE, "PodDeleted")


def test_describe_failure_names_the_real_cause() -> None:
    oom = collect_failure_details(failed(containerStatuses=[terminated("base", 137, "OOMKilled")]))
    assert (
        describe_failure(oom) == "Pod failed because of OOMKilled (container base, exit code 137)"
    )
    evicted = collect_failure_details(failed(reason="Evicted", message="low on memory"))
    assert describe_failure(evicted) == "Pod failed because of Evicted"
    assert (
        describe_failure({"pod_status": "Failed", "pod_message": "deadline"})
        == "Pod failed: deadline"
    )
    assert describe_failure(None) == "Pod failed with no reason recorded"
    assert "None" not in describe_failure({"pod_status": "Failed", "pod_reason": None})


def _with_message(name: str, code: int, reason: str, message: str) -> dict[str, Any]:
    status = terminated(name, code, reason)
    status["state"]["terminated"]["message"] = message
    return status


TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/opt/airflow/dags/alerts.py", line 4, in notify\n'
    "AttributeError: module 'alerts' has no attribute 'notfy'\n"
)


def test_a_pods_failure_names_it_and_ends_with_its_containers_last_words() -> None:
    pod = failed(containerStatuses=[_with_message("base", 1, "Error", TRACEBACK)])
    details = collect_failure_details(pod)
    assert describe_pod_failure(details, namespace="airflow", pod_name="alerts-x1") == (
        "Pod airflow/alerts-x1 failed because of Error (container base, exit code 1): "
        "Traceback (most recent call last): | "
        'File "/opt/airflow/dags/alerts.py", line 4, in notify | '
        "AttributeError: module 'alerts' has no attribute 'notfy'"
    )
    # The resolution's own reason is unchanged: the pod and its words are the report's.
    assert describe_failure(details) == "Pod failed because of Error (container base, exit code 1)"


def test_a_pods_failure_without_last_words_is_the_cause() -> None:
    oom = collect_failure_details(failed(containerStatuses=[terminated("base", 137, "OOMKilled")]))
    described = describe_pod_failure(oom, namespace="airflow", pod_name="etl-load-x1")
    assert (
        described
        == "Pod airflow/etl-load-x1 failed because of OOMKilled (container base, exit code 137)"
    )
    # A waiting container's message is the kubelet's, not the workload's last words.
    pulling: FailureDetails = {
        "pod_status": "Pending",
        "container_state": "waiting",
        "container_reason": "ErrImagePull",
        "container_message": "not found",
        "container_name": "base",
    }
    described = describe_pod_failure(pulling, namespace="airflow", pod_name="p")
    assert described == "Pod airflow/p failed because of ErrImagePull (container base)"
    assert (
        describe_pod_failure(None, namespace="", pod_name="p")
        == "Pod p failed with no reason recorded"
    )
    assert (
        describe_pod_failure(None, namespace="ns", pod_name="")
        == "Pod failed with no reason recorded"
    )


def test_with_no_cause_recorded_the_words_are_bounded_and_masked_once() -> None:
    secret = "hunter2-hunter2-hunter2"  # noqa: S105 - made up
    message = "x" * 3000 + f"\nconnecting with {secret}\nfailed"
    details: FailureDetails = {
        "pod_status": "Failed",
        "container_state": "terminated",
        "container_message": message,
    }
    described = describe_pod_failure(
        details,
        namespace="airflow",
        pod_name="p",
        secrets=iter([secret]),  # read more than once
    )
    assert described == "Pod airflow/p failed: connecting with ***REDACTED*** | failed"


def test_pending_without_waiting_containers() -> None:
    verdict = demystify_pending({"status": {"phase": "Pending"}}, PendingPolicy(), None)
    assert (verdict.failed, verdict.reason) == (False, "Pending")


def test_pending_grace_measured_from_the_readiness_condition() -> None:
    ready = {"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    pod = {
        "status": {
            "phase": "Pending",
            "conditions": [ready],
            "containerStatuses": [waiting("base", "CreateContainerError", "no such file")],
        }
    }
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    assert not demystify_pending(
        pod, PendingPolicy(), start + datetime.timedelta(seconds=179)
    ).failed
    late = demystify_pending(pod, PendingPolicy(), start + datetime.timedelta(seconds=180))
    assert late.failed
    assert (
        late.reason
        == "CreateContainerError: no such file (container base) after a 180s grace period"
    )
    never = PendingPolicy(create_container_error_grace=None)
    assert not demystify_pending(pod, never, start + datetime.timedelta(days=9)).failed


def test_a_disruption_is_named_over_the_containers_sigterm() -> None:
    pod = failed(
        conditions=[
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ],
        containerStatuses=[terminated("base", 143, "Error")],
    )
    details = collect_failure_details(pod)
    reason = describe_failure(details, classify_failure(pod, details))
    assert reason == "Pod failed because of PreemptionByScheduler (container base, exit code 143)"
    # Without the classification, the container's reason is all there is.
    assert (
        describe_failure(details) == "Pod failed because of Error (container base, exit code 143)"
    )

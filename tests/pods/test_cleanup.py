"""The clean-up rules (:mod:`k8s_workloads.pods.cleanup`): the provider's ``cleanup-pods``
rules for every executor pod, callbacks included."""

from __future__ import annotations

import datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.pods.cleanup import EXECUTOR_PODS_SELECTOR, pods_to_clean_up

NOW = datetime.datetime(2026, 6, 7, 12, 0, tzinfo=datetime.timezone.utc)


def _at(minutes_ago: float) -> str:
    return (NOW - datetime.timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(
    name: str,
    phase: str,
    *,
    created: float = 60,
    finished: float | None = None,
    reason: str | None = None,
    restart: str = "Never",
    deleting: bool = False,
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if reason:
        status["reason"] = reason
    if finished is not None:
        terminated = {"exitCode": 0, "finishedAt": _at(finished)}
        status["containerStatuses"] = [{"name": "base", "state": {"terminated": terminated}}]
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "airflow",
        "creationTimestamp": _at(created),
    }
    if deleting:
        metadata["deletionTimestamp"] = _at(0)
    return {"metadata": metadata, "spec": {"restartPolicy": restart}, "status": status}


def names(pods: list[dict[str, Any]], **options: int) -> list[str]:
    return [chosen.pod_name for chosen in pods_to_clean_up(pods, now=NOW, **options)]


def test_the_providers_rules_for_every_executor_pod() -> None:
    pods = [
        pod("succeeded-long-ago", "Succeeded", finished=10),
        pod("succeeded-just-now", "Succeeded", finished=0.5),
        pod("failed", "Failed", finished=3),
        pod("failed-restarting", "Failed", finished=3, restart="OnFailure"),
        pod("evicted", "Failed", reason="Evicted", restart="Always"),
        pod("running", "Running"),
        pod("pending-long", "Pending", created=31),
        pod("pending-new", "Pending", created=29),
        pod("going", "Succeeded", finished=10, deleting=True),
    ]
    assert names(pods) == ["succeeded-long-ago", "failed", "evicted", "pending-long"]
    assert "succeeded-just-now" in names(pods, min_completed_minutes=0)
    # The pending bound is at least 5 minutes, as the provider's.
    assert "pending-new" in names(pods, min_pending_minutes=10)
    assert names([pod("p", "Pending", created=4)], min_pending_minutes=1) == []
    assert EXECUTOR_PODS_SELECTOR == "kubernetes_executor=True"


def test_an_ended_pod_without_container_times_ends_at_its_last_condition_or_creation() -> None:
    bare = pod("bare", "Succeeded", created=3)
    assert names([bare]) == ["bare"]  # created 3 min ago: ended at least then
    bare["status"]["conditions"] = [{"type": "Ready", "lastTransitionTime": _at(0.2)}]
    assert names([bare]) == []
    (chosen,) = pods_to_clean_up([pod("x", "Failed", finished=12)], now=NOW)
    assert chosen.why == "Failed, ended 12 min ago"
    assert (chosen.namespace, chosen.phase) == ("airflow", "Failed")


@given(
    phase=st.sampled_from(["Pending", "Running", "Succeeded", "Failed", "Unknown", ""]),
    created=st.floats(0, 100),
    finished=st.none() | st.floats(0, 100),
    restart=st.sampled_from(["Never", "Always", "OnFailure"]),
    reason=st.none() | st.sampled_from(["Evicted", "NodeLost"]),
)
def test_never_a_running_pod_nor_one_pending_under_five_minutes(
    phase: str, created: float, finished: float | None, restart: str, reason: str | None
) -> None:
    candidate = pod("p", phase, created=created, finished=finished, reason=reason, restart=restart)
    chosen = names([candidate], min_pending_minutes=1, min_completed_minutes=0)
    if reason == "Evicted":  # the provider's rule: evicted is ended, whatever the phase
        return
    if phase == "Running" or (phase == "Pending" and created <= 5):
        assert chosen == []

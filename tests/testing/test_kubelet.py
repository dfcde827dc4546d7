"""The kit's kubelet: pods run, then succeed, with the statuses a real kubelet writes;
restarted as their restartPolicy says."""

from __future__ import annotations

import datetime
import re
import time
from typing import Any

import pytest

from k8s_workloads import InvalidConfig
from k8s_workloads.states import ExecutorPseudoState, TaskInstanceState
from k8s_workloads.testing import FakeCluster, Kubelet
from k8s_workloads.testing.kubelet import DEFAULT_NODE, PodOutcome
from k8s_workloads.watch.events import resolve_event
from k8s_workloads.watch.resolution import ResolverConfig
from tests.support.event_factory import VERSION
from tests.support.kit_processes import deserialize_in_both_clients, task_body, wait_for

NS = "airflow"


def pod(name: str, *, init: bool = False, restart_policy: str = "Never") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {"name": "base", "image": "apache/airflow:3.3.2"},
            {"name": "sidecar", "image": "busybox:1.36"},
        ],
        "restartPolicy": restart_policy,
    }
    if init:
        spec["initContainers"] = [{"name": "setup", "image": "alpine:3"}]
    return {"metadata": {"name": name}, "spec": spec}


def status(cluster: FakeCluster, name: str) -> dict[str, Any]:
    found = cluster.pod(NS, name)
    assert found is not None
    result: dict[str, Any] = found["status"]
    return result


def test_a_pod_runs_then_succeeds_with_realistic_statuses() -> None:
    cluster = FakeCluster(
        namespaces=[NS], now=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    )
    cluster.create_pod(NS, pod("load", init=True))
    kubelet = Kubelet(cluster, run_seconds=10)
    assert kubelet.step(100.0) == 0  # first seen: not due yet
    assert kubelet.step(109.9) == 0
    assert status(cluster, "load")["phase"] == "Pending"
    assert kubelet.step(110.0) == 1
    running = status(cluster, "load")
    assert running["phase"] == "Running"
    assert re.fullmatch(r"10\.244\.\d+\.\d+", running["podIP"])
    assert running["startTime"] == "2026-01-01T00:00:00Z"
    conditions = {item["type"]: item["status"] for item in running["conditions"]}
    assert conditions["Ready"] == conditions["ContainersReady"] == "True"
    base, sidecar = running["containerStatuses"]
    assert (base["name"], base["image"], sidecar["image"]) == (
        "base",
        "apache/airflow:3.3.2",
        "busybox:1.36",
    )
    assert re.fullmatch(
        r"docker-pullable://apache/airflow:3\.3\.2@sha256:[0-9a-f]{64}", base["imageID"]
    )
    assert base["containerID"] != sidecar["containerID"]
    assert base["containerID"].startswith("containerd://")
    assert (base["ready"], base["started"], base["restartCount"]) == (True, True, 0)
    assert base["state"] == {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
    (setup,) = running["initContainerStatuses"]
    assert setup["state"]["terminated"]["reason"] == "Completed"
    assert kubelet.step(119.0) == 0
    assert kubelet.step(120.0) == 1
    done = status(cluster, "load")
    assert done["phase"] == "Succeeded"
    assert done["podIP"] == running["podIP"]
    conditions = {item["type"]: item for item in done["conditions"]}
    assert conditions["Ready"]["status"] == "False"
    assert conditions["Ready"]["reason"] == "PodCompleted"
    for entry in done["containerStatuses"]:
        terminated = entry["state"]["terminated"]
        assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
        assert terminated["containerID"] == entry["containerID"]
        assert {"startedAt", "finishedAt"} <= set(terminated)
        assert entry["ready"] is False
    assert kubelet.step(1000.0) == 0  # terminal: nothing more


def test_pods_the_test_moved_on_or_deleted_are_left_alone() -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, pod("failed"))
    cluster.create_pod(NS, pod("gone"))
    kubelet = Kubelet(cluster, run_seconds=1)
    kubelet.step(0.0)
    cluster.set_status(NS, "failed", {"phase": "Failed"})
    cluster.delete_pod(NS, "gone")
    # The bound pod that never ran is Terminating: the kubelet only confirms its deletion.
    assert kubelet.step(5.0) == 1
    assert cluster.pod(NS, "gone") is None
    assert status(cluster, "failed") == {"phase": "Failed"}
    # A new pod of the same name is a new pod: its own delay, from when it is first seen.
    cluster.create_pod(NS, pod("gone"))
    assert kubelet.step(5.5) == 0
    assert kubelet.step(6.5) == 1
    assert status(cluster, "gone")["phase"] == "Running"


def test_a_status_for_a_replaced_pod_is_refused_by_uid() -> None:
    cluster = FakeCluster(namespaces=[NS])
    first = cluster.create_pod(NS, pod("p"))["metadata"]["uid"]
    cluster.delete_pod(NS, "p")
    cluster.create_pod(NS, pod("p"))
    with pytest.raises(KeyError, match="with uid"):
        cluster.set_status(NS, "p", {"phase": "Running"}, uid=first)
    assert status(cluster, "p")["phase"] == "Pending"


def test_the_kubelet_thread_runs_pods_to_completion_and_stops() -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, pod("load"))
    with Kubelet(cluster, run_seconds=0.01, poll_seconds=0.005) as kubelet:
        deadline = time.monotonic() + 30
        while status(cluster, "load")["phase"] != "Succeeded":
            assert time.monotonic() < deadline, "the kubelet did not run the pod"
            time.sleep(0.01)
    assert not kubelet._thread.is_alive()
    kubelet.stop()  # twice is fine


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("run_seconds", -1),
        ("run_seconds", float("inf")),
        ("poll_seconds", 0),
        ("cluster", None),
        ("restart_backoff", -1),
    ],
)
def test_the_kubelets_options_are_checked(field: str, value: Any) -> None:
    options: dict[str, Any] = {"cluster": FakeCluster(namespaces=[NS]), field: value}
    with pytest.raises(InvalidConfig) as raised:
        Kubelet(**options)
    assert raised.value.field == field


# --- the plan: each ending, its status shapes, and how the library reads them ------------

VERSION_CONFIG = ResolverConfig(airflow_version=VERSION)


def run_to_the_end(
    outcome: PodOutcome, *, steps: int = 3
) -> tuple[FakeCluster, Kubelet, list[Any]]:
    """The pod ``p`` under ``outcome``, stepped one ``run_seconds`` at a time; its events."""
    cluster = FakeCluster(namespaces=[NS])
    watch = cluster.watch(NS)
    cluster.create_pod(NS, task_body("p"))
    kubelet = Kubelet(cluster, run_seconds=1, plan={"p": outcome})
    for second in range(steps):
        kubelet.step(float(second))
    return cluster, kubelet, watch.events()


@pytest.mark.parametrize(
    ("outcome", "phase", "state", "exit_code", "reason"),
    [
        (PodOutcome.success(), "Succeeded", ExecutorPseudoState.LOOKUP, 0, "Completed"),
        (PodOutcome.failure(3), "Failed", TaskInstanceState.FAILED, 3, "Error"),
        (PodOutcome.oom_killed(), "Failed", TaskInstanceState.FAILED, 137, "OOMKilled"),
        (PodOutcome.eviction(), "Failed", TaskInstanceState.FAILED, 137, "Error"),
    ],
)
def test_each_ending_is_written_as_a_kubelet_writes_it_and_read_to_its_state(
    outcome: PodOutcome, phase: str, state: Any, exit_code: int, reason: str
) -> None:
    cluster, _kubelet, events = run_to_the_end(outcome)
    pod = cluster.pod(NS, "p")
    assert pod is not None
    assert pod["spec"]["nodeName"] == DEFAULT_NODE
    assert [event["object"]["status"]["phase"] for event in events] == [
        "Pending",  # created
        "Pending",  # bound
        "Running",
        phase,
    ]
    base, sidecar = pod["status"]["containerStatuses"]
    terminated = base["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (exit_code, reason)
    if outcome.kind != "eviction":
        assert sidecar["state"]["terminated"]["exitCode"] == 0
    for event in events:
        deserialize_in_both_clients(event["object"])
    resolution = resolve_event(events[-1], config=VERSION_CONFIG)
    assert resolution.state == state
    if phase == "Failed":
        details = resolution.failure_details
        assert details is not None
        assert details.get("exit_code") == exit_code
        assert details.get("container_name") == "base"


def test_a_scripted_failure_carries_its_message_and_its_logs_tail() -> None:
    # The library's pods have FallbackToLogsOnError: a failure that wrote no message gets
    # its logs' tail; a message written (terminationMessagePath) is the message.
    lines = [f"line {n}" for n in range(100)] + ["AttributeError: notfy"]
    cluster, _kubelet, events = run_to_the_end(PodOutcome.failure(1, logs=lines))
    assert cluster.pod_log(NS, "p", "base").splitlines() == lines
    base, sidecar = events[-1]["object"]["status"]["containerStatuses"]
    message = base["state"]["terminated"]["message"]
    assert message.endswith("line 99\nAttributeError: notfy\n")
    assert message.count("\n") == 80
    assert "message" not in sidecar["state"]["terminated"]
    details = resolve_event(events[-1], config=VERSION_CONFIG).failure_details
    assert details is not None
    assert details.get("container_message") == message
    written = PodOutcome.failure(2, message="why", logs=["ignored"])
    _cluster, _kubelet, events = run_to_the_end(written)
    base = events[-1]["object"]["status"]["containerStatuses"][0]
    assert base["state"]["terminated"]["message"] == "why"


def test_a_file_policy_or_a_success_gives_no_message_from_the_logs() -> None:
    body = task_body("p")
    body["spec"]["containers"][0]["terminationMessagePolicy"] = "File"
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, body)
    kubelet = Kubelet(cluster, run_seconds=1, plan={"p": PodOutcome.failure(1, logs=["x"])})
    for second in range(4):
        kubelet.step(float(second))
    base = status(cluster, "p")["containerStatuses"][0]
    assert "message" not in base["state"]["terminated"]
    _cluster, _kubelet, events = run_to_the_end(PodOutcome.success(logs=["done"]))
    base = events[-1]["object"]["status"]["containerStatuses"][0]
    assert "message" not in base["state"]["terminated"]
    assert _cluster.pod_log(NS, "p", "base") == "done\n"


@pytest.mark.parametrize("logs", [[1], [b"x"], "ab"])
def test_outcome_logs_are_lines_of_text(logs: Any) -> None:
    if isinstance(logs, str):  # one string is one line, not its letters
        assert PodOutcome.success(logs=logs).logs == ("ab",)
        return
    with pytest.raises(InvalidConfig, match="logs"):
        PodOutcome.failure(1, logs=logs)


def test_an_eviction_has_the_pod_reason_message_and_disruption_condition() -> None:
    _cluster, _kubelet, events = run_to_the_end(PodOutcome.eviction(message="low on memory"))
    status = events[-1]["object"]["status"]
    assert (status["reason"], status["message"]) == ("Evicted", "low on memory")
    disruption = [item for item in status["conditions"] if item["type"] == "DisruptionTarget"]
    assert disruption[0]["reason"] == "TerminationByKubelet"
    details = resolve_event(events[-1], config=VERSION_CONFIG).failure_details
    assert details is not None
    assert details.get("pod_reason") == "Evicted"


def test_an_image_that_never_pulls_keeps_the_pod_pending_and_fails_it_as_fatal() -> None:
    cluster, _kubelet, events = run_to_the_end(PodOutcome.image_pull_failure(), steps=5)
    reasons = [
        [
            item["state"]["waiting"]["reason"]
            for item in event["object"]["status"]["containerStatuses"]
        ]
        for event in events[2:]
    ]
    assert reasons == [["ErrImagePull"] * 2, ["ImagePullBackOff"] * 2]
    status = status_of(cluster, "p")
    assert status["phase"] == "Pending"
    base = status["containerStatuses"][0]
    assert (base["imageID"], base["ready"], "containerID" in base) == ("", False, False)
    ready = next(item for item in status["conditions"] if item["type"] == "Ready")
    assert ready["reason"] == "ContainersNotReady"
    assert ready["message"] == "containers with unready status: [base sidecar]"
    for event in events:
        deserialize_in_both_clients(event["object"])
    # ErrImagePull is among the provider's fatal Pending reasons.
    first = resolve_event(events[2], config=VERSION_CONFIG)
    assert first.state == TaskInstanceState.FAILED
    details = first.failure_details
    assert details is not None
    assert details.get("container_reason") == "ErrImagePull"


def test_a_lost_node_leaves_the_pod_running_and_never_confirms_its_deletion() -> None:
    cluster, kubelet, events = run_to_the_end(PodOutcome.node_loss(), steps=6)
    assert events[-1]["object"]["status"]["phase"] == "Running"
    assert resolve_event(events[-1], config=VERSION_CONFIG).state is None  # a task: running
    cluster.delete_pod(NS, "p")
    assert kubelet.step(100.0) == 0
    pod = cluster.pod(NS, "p")
    assert pod is not None
    assert pod["metadata"]["deletionTimestamp"]


def status_of(cluster: FakeCluster, name: str) -> dict[str, Any]:
    return status(cluster, name)


@pytest.mark.parametrize(
    ("outcome", "grace", "stopped_at", "exit_code"),
    [
        (PodOutcome.success(), 30, 10.0, 143),  # exits on SIGTERM at once
        (PodOutcome.success().stopping_after(5), 30, 15.0, 143),
        (PodOutcome.success().stopping_after(None), 7, 17.0, 137),  # killed at the grace's end
        (PodOutcome.success().stopping_after(9), 7, 17.0, 137),
    ],
)
def test_a_deleted_running_pod_stops_within_its_grace_then_is_confirmed(
    outcome: PodOutcome, grace: int, stopped_at: float, exit_code: int
) -> None:
    cluster = FakeCluster(namespaces=[NS])
    body = task_body("p")
    body["spec"]["terminationGracePeriodSeconds"] = grace
    cluster.create_pod(NS, body)
    kubelet = Kubelet(cluster, run_seconds=100, plan={"p": outcome})
    kubelet.step(0.0)
    kubelet.step(100.0)
    assert status_of(cluster, "p")["phase"] == "Running"
    watch = cluster.watch(NS, resource_version=cluster.resource_version)
    cluster.delete_pod(NS, "p")
    assert kubelet.step(10.0) == (2 if stopped_at == 10.0 else 0)
    if stopped_at > 10.0:
        assert kubelet.step(stopped_at - 0.5) == 0
        assert cluster.pod(NS, "p") is not None  # still Terminating
        assert kubelet.step(stopped_at) == 2
    assert cluster.pod(NS, "p") is None
    events = watch.events()
    # Terminating, the stopped status, the kubelet's delete with grace 0, gone.
    assert [event["type"] for event in events] == ["MODIFIED", "MODIFIED", "MODIFIED", "DELETED"]
    terminating, stopped, confirmed, _ = (event["object"] for event in events)
    assert confirmed["metadata"]["deletionGracePeriodSeconds"] == 0
    assert terminating["metadata"]["deletionGracePeriodSeconds"] == grace
    assert stopped["status"]["phase"] == "Failed"
    for entry in stopped["status"]["containerStatuses"]:
        assert entry["state"]["terminated"]["exitCode"] == exit_code
    deserialize_in_both_clients(stopped)
    resolution = resolve_event(events[-1], config=VERSION_CONFIG)
    assert resolution.state == TaskInstanceState.FAILED


def test_two_kubelets_share_the_pods_each_runs_only_what_it_bound() -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, pod("first"))
    one = Kubelet(cluster, run_seconds=1, node_name="one")
    two = Kubelet(cluster, run_seconds=1, node_name="two")
    one.step(0.0)
    cluster.create_pod(NS, pod("second"))
    two.step(0.0)
    one.step(0.0)
    found = {name: cluster.pod(NS, name) for name in ("first", "second")}
    assert {name: item["spec"]["nodeName"] for name, item in found.items() if item} == {
        "first": "one",
        "second": "two",
    }
    for second in (1.0, 2.0):
        assert one.step(second) == 1  # "first" only
    assert two.step(1.0) == 1
    # A pod bound by another node between a kubelet's look and its binding (a 409) is not
    # run by it either.
    cluster.create_pod(NS, pod("raced"))
    snapshot = cluster.pod(NS, "raced")
    assert snapshot is not None
    cluster.bind_pod(NS, "raced", "two")
    assert one._bind(snapshot) is False


# --- restarts: restartPolicy, CrashLoopBackOff, restartCount ---------------------------


def seen(events: list[dict[str, Any]], container: str = "base") -> list[tuple[Any, ...]]:
    """Each status the watch saw: the phase, the container's state and reason, its
    restartCount and what its lastState holds."""
    found = []
    for event in events:
        status = event["object"]["status"]
        entry = {item["name"]: item for item in status.get("containerStatuses") or []}.get(
            container
        )
        if entry is None:
            found.append((status["phase"], None, None, None, None))
            continue
        (kind, state), *_ = entry["state"].items()
        last = entry["lastState"].get("terminated", {})
        found.append(
            (
                status["phase"],
                kind,
                state.get("reason"),
                entry["restartCount"],
                last.get("exitCode"),
            )
        )
    return found


def test_a_pod_that_says_nothing_restarts_always_backing_off_between_runs() -> None:
    """restartPolicy defaults to Always: every exit (0 too) restarts the container; the
    first at once, then after 10 s, 20 s, ... (CrashLoopBackOff meanwhile); the pod stays
    Running, restartCount counts, lastState holds the run before."""
    cluster = FakeCluster(namespaces=[NS])
    watch = cluster.watch(NS)
    body = pod("p")
    del body["spec"]["restartPolicy"]
    cluster.create_pod(NS, body)
    kubelet = Kubelet(cluster, run_seconds=1)
    for now in (0, 1, 2, 3, 4, 5, 13.9, 14, 15, 16, 35.9, 36):
        kubelet.step(float(now))
    timeline = seen(watch.events())
    assert timeline == [
        ("Pending", None, None, None, None),  # created
        ("Pending", None, None, None, None),  # bound
        ("Running", "running", None, 0, None),
        ("Running", "terminated", "Completed", 0, None),  # exit 0: restarted at once
        ("Running", "running", None, 1, 0),
        ("Running", "terminated", "Completed", 1, 0),
        ("Running", "waiting", "CrashLoopBackOff", 1, 0),  # 10 s from the exit at 4
        ("Running", "running", None, 2, 0),
        ("Running", "terminated", "Completed", 2, 0),
        ("Running", "waiting", "CrashLoopBackOff", 2, 0),  # 20 s from the exit at 15
        ("Running", "running", None, 3, 0),
    ]
    stored = cluster.pod(NS, "p")
    assert stored is not None
    base = stored["status"]["containerStatuses"][0]
    # A restarted container is a new one: its id is not the run before's.
    assert base["containerID"] != base["lastState"]["terminated"]["containerID"]
    deserialize_in_both_clients(stored)


def test_the_crash_loop_message_says_how_long_it_backs_off() -> None:
    cluster = FakeCluster(namespaces=[NS])
    uid = cluster.create_pod(NS, pod("p", restart_policy="Always"))["metadata"]["uid"]
    kubelet = Kubelet(cluster, run_seconds=1, plan={"p": PodOutcome.failure(2)})
    for now in range(6):
        kubelet.step(float(now))
    base = status(cluster, "p")["containerStatuses"][0]
    assert base["state"]["waiting"] == {
        "reason": "CrashLoopBackOff",
        "message": f"back-off 10s restarting failed container=base pod=p_{NS}({uid})",
    }
    assert base["lastState"]["terminated"]["exitCode"] == 2
    assert base["ready"] is False
    assert status(cluster, "p")["phase"] == "Running"


def test_on_failure_restarts_only_a_failed_container_and_ends_once_it_succeeds() -> None:
    cluster = FakeCluster(namespaces=[NS])
    watch = cluster.watch(NS)
    outcomes = {
        "fails": PodOutcome.failure(1).succeeding_after(2),
        "works": PodOutcome.success(),
    }
    for name in outcomes:
        cluster.create_pod(NS, pod(name, restart_policy="OnFailure"))
    kubelet = Kubelet(cluster, run_seconds=1, plan=outcomes)
    for now in (0, 1, 2, 3, 4, 5, 14, 15):
        kubelet.step(float(now))
    assert status(cluster, "works")["phase"] == "Succeeded"  # exit 0: not restarted
    done = status(cluster, "fails")
    assert done["phase"] == "Succeeded"
    base, sidecar = done["containerStatuses"]
    assert (base["restartCount"], base["lastState"]["terminated"]["exitCode"]) == (2, 1)
    assert base["state"]["terminated"]["exitCode"] == 0
    # The sidecar exited 0 in the first run: OnFailure left it Completed, not restarted.
    assert (sidecar["restartCount"], sidecar["lastState"]) == (0, {})
    events = [event for event in watch.events() if event["object"]["metadata"]["name"] == "fails"]
    assert ("Running", "waiting", "CrashLoopBackOff", 1, 1) in seen(events)
    phases = [phase for phase, *_ in seen(events)]
    assert phases.index("Succeeded") == len(phases) - 1  # Running until the last write


def test_never_lets_a_failed_pod_fail() -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, pod("p", restart_policy="Never"))
    kubelet = Kubelet(cluster, run_seconds=1, plan={"p": PodOutcome.failure(1)})
    for now in range(5):
        kubelet.step(float(now))
    done = status(cluster, "p")
    assert done["phase"] == "Failed"
    assert done["containerStatuses"][0]["restartCount"] == 0


def test_an_eviction_fails_the_pod_whatever_the_policy() -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, pod("p", restart_policy="Always"))
    kubelet = Kubelet(cluster, run_seconds=1, plan={"p": PodOutcome.eviction()})
    for now in range(5):
        kubelet.step(float(now))
    assert status(cluster, "p")["reason"] == "Evicted"
    assert status(cluster, "p")["phase"] == "Failed"


def test_a_pod_deleted_between_runs_is_confirmed_at_once() -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, pod("p", restart_policy="Always"))
    kubelet = Kubelet(cluster, run_seconds=1, plan={"p": PodOutcome.failure(1)})
    for now in range(6):
        kubelet.step(float(now))
    assert status(cluster, "p")["containerStatuses"][0]["state"]["waiting"]
    cluster.delete_pod(NS, "p")
    assert kubelet.step(6.0) == 1
    assert cluster.pod(NS, "p") is None


def test_the_thread_restarts_a_pod_with_a_short_back_off() -> None:
    cluster = FakeCluster(namespaces=[NS])
    watch = cluster.watch(NS)
    cluster.create_pod(NS, pod("p", restart_policy="Always"))
    timeline: list[tuple[Any, ...]] = []

    def restarted_thrice() -> bool:
        timeline.extend(seen(watch.events()))
        return any(entry[3] == 3 for entry in timeline)

    plan = {"p": PodOutcome.failure(3)}
    with Kubelet(cluster, run_seconds=0.01, poll_seconds=0.002, restart_backoff=0.01, plan=plan):
        wait_for(restarted_thrice, seconds=120)
    states = [entry[1:3] for entry in timeline]
    assert ("waiting", "CrashLoopBackOff") in states
    assert {phase for phase, *_ in timeline[2:]} == {"Running"}


def test_a_pod_held_by_a_finalizer_is_confirmed_once_and_stays_until_it_is_removed() -> None:
    """The kubelet's part of a deletion is done once; the finalizer's owner does the rest."""
    cluster = FakeCluster(namespaces=[NS])
    body = pod("p")
    body["metadata"]["finalizers"] = ["example.com/keep"]
    cluster.create_pod(NS, body)
    kubelet = Kubelet(cluster, run_seconds=1)
    kubelet.step(0.0)
    kubelet.step(1.0)
    cluster.delete_pod(NS, "p")
    assert kubelet.step(1.5) == 2  # stopped (exits on SIGTERM at once), confirmed
    held = cluster.pod(NS, "p")
    assert held is not None
    assert held["metadata"]["deletionGracePeriodSeconds"] == 0
    assert held["status"]["phase"] == "Failed"
    assert kubelet.step(2.0) == kubelet.step(3.0) == 0  # not confirmed again
    cluster.patch_pod(NS, "p", {"metadata": {"finalizers": None}})
    assert cluster.pod(NS, "p") is None


def test_an_outcome_succeeds_only_after_a_run() -> None:
    with pytest.raises(InvalidConfig):
        PodOutcome.failure(1).succeeding_after(0)

"""The simulated kubelet's pod statuses (:mod:`k8s_workloads.sim._kubelet`): what each
step of a pod script looks like to the executor, read back by the library's own readers."""

from __future__ import annotations

from k8s_workloads.keys import TaskInstanceKey
from k8s_workloads.sim import ContainerSpec, Step
from k8s_workloads.sim._kubelet import container_status, main_spec, pod_status
from k8s_workloads.sim._state import Live, PodRun
from k8s_workloads.sim.spec import DEFAULT_POD, WorkloadSpec
from k8s_workloads.watch.failures import collect_failure_details

_KEY = TaskInstanceKey("d", "t", "r")


def _run() -> PodRun:
    live = Live(WorkloadSpec("t", _KEY), _KEY)
    return PodRun("ns", "pod", live, _KEY, DEFAULT_POD, created=0)


def _stamp(tick: int) -> str:
    return f"2026-01-01T00:00:{tick:02d}Z"


def _conditions(status: dict[str, object]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in status["conditions"]}  # type: ignore[attr-defined]


def test_a_running_pod_is_ready_since_it_started_running() -> None:
    run = _run()
    status = pod_status(run, Step(phase="Running"), "Running", t=4, timestamp=_stamp, image="img")
    assert _conditions(status)["Ready"] == "True"
    assert (run.ready, run.ready_since) == (True, 4)
    later = pod_status(run, Step(), "Running", t=6, timestamp=_stamp, image="img")
    ready = next(c for c in later["conditions"] if c["type"] == "Ready")
    assert ready["lastTransitionTime"] == _stamp(4)  # unchanged while it stays ready


def test_an_evicted_pod_reads_as_an_eviction() -> None:
    status = pod_status(_run(), Step(evicted=True), "Failed", t=2, timestamp=_stamp, image="img")
    assert (status["phase"], status["reason"]) == ("Failed", "Evicted")
    assert _conditions(status)["DisruptionTarget"] == "True"
    pod = {"metadata": {"name": "pod"}, "status": status}
    details = collect_failure_details(pod)
    assert details is not None
    assert (details["pod_reason"], details["exit_code"]) == ("Evicted", 137)


def test_the_main_container_follows_the_phase_unless_the_step_says() -> None:
    assert main_spec(Step(), "Pending") == ContainerSpec("waiting", "ContainerCreating")
    assert main_spec(Step(), "Succeeded") == ContainerSpec("terminated", "Completed", None, 0)
    assert main_spec(Step(container=None), "Running") is None  # the kubelet rejected the pod
    oom = ContainerSpec("terminated", "OOMKilled", None, 137)
    assert main_spec(Step(container=oom), "Failed") == oom


def test_a_waiting_container_leaves_out_what_it_was_not_given() -> None:
    status = container_status("base", "img", ContainerSpec("waiting", "ErrImagePull"), "now")
    assert status is not None
    assert status["state"] == {"waiting": {"reason": "ErrImagePull"}}
    assert status["ready"] is False

"""Decision benchmarks: decide_task against resolve_event, and the simulator's throughput.

    .venv-airflow/bin/python benchmarks/bench_decisions.py   # kubernetes 36 (the provider's pin)
    .venv/bin/python benchmarks/bench_decisions.py           # kubernetes 37
    ... bench_decisions.py --quick                           # shorter loops, one simulator run

Every target is a ratio against a baseline measured in the same run. Nothing here asserts
on timing: each target prints PASS or MISS and the script exits 0 whatever the numbers
(it fails only if it cannot run at all).

The inputs are two watch events for one task pod built by ``construct_task_pod`` over a
production-like template, as the API server sends them (``uid``, ``resourceVersion``,
timestamps, a full status): Failed (init container done, ``base`` OOMKilled, the sidecar
completed) and Succeeded. Each is resolved once; the decisions run on the result.

Targets: one decision costs less than resolving the event it came from, i.e.
``decide_task(...) / resolve_event(event) < 1.0``, for

1. a Failed result, the key in ``running``, no attempt record (the pod failed; no
   requeue rule applies): cleanup, free the slot, emit FAILED with the failure line;
2. a Failed result, the key in ``running``, an attempt record and the task instance state
   already read (RUNNING: the task had started, so it is not requeued);
3. a Succeeded result, the key in ``running``, the task instance state already read
   (SUCCESS): delete the pod, free the slot, emit it;
4. case 2 with 10,000 workloads in flight (their attempt records built one launch at a
   time, as an executor does): the bookkeeping must not cost a copy of every record.

Also a target: one write to ``Attempts`` holding 10,000 records (``without`` then
``launched``, the churn of one workload finishing and another starting) against copying a
10,000-entry dict once, the cost a copy-on-write map would pay per write: ratio < 0.1.

Info only: the look-up round trip of case 2 (``LookUpState`` first, then the answer), and
the simulator: ``k8s_workloads.sim.simulate_generated(10_000, 2, seed)`` (10,000
workloads, two scheduler restarts) timed once per run (best of 3 without ``--quick``),
printed as µs per workload and events per second. Until that module exists the script
prints "simulator not available yet" and the line is a SKIP.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
import time
from collections.abc import Mapping, Sized
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import attrs
from _harness import (
    DAG_ID,
    IMAGE,
    NAMESPACE,
    POD_ID,
    REPEATS,
    RUN_ID,
    SCHEDULER_JOB_ID,
    TASK_ID,
    TASK_WORKLOAD,
    TIMES,
    Outcome,
    header,
    parse_mode,
    per_call_us,
    print_environment,
    summarize,
    verdict,
)

from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions import decide_task
from k8s_workloads.decisions.actions import (
    Decision,
    DeletePod,
    EmitEvent,
    FreeSlot,
    LookUpState,
    PatchLabels,
)
from k8s_workloads.decisions.attempts import Attempt, Attempts
from k8s_workloads.pods import construct_task_pod, workload_command_args
from k8s_workloads.states import KubernetesJob, TaskInstanceState, TaskResult
from k8s_workloads.watch.events import resolve_event
from k8s_workloads.watch.resolution import Outcome as EventOutcome
from k8s_workloads.watch.resolution import Resolution

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from k8s_workloads.pods.manifest import Manifest

RATIO_TARGET = 1.0
"""Targets 1-3: decide_task time / resolve_event time of the same event must stay below."""
SIMULATE_MODULE = "k8s_workloads.sim"
SIMULATE_FUNCTION = "simulate_generated"
SIM_WORKLOADS = 10_000
SIM_RESTARTS = 2
SIM_SEED = 20260607
EVENT_COUNT_NAMES = ("events", "event_count", "n_events", "events_processed", "total_events")
"""Where the simulator's result may say how many watch events it handled."""

# ------------------------------------------------------------------------------ inputs

AIRFLOW_VERSION = "3.3.2"
NODE = "ip-10-20-31-142.eu-west-1.compute.internal"
CREATED = "2026-06-07T00:00:04Z"
STARTED = "2026-06-07T00:00:05Z"
FINISHED = "2026-06-07T00:14:52Z"

TEMPLATE: Manifest = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "placeholder-name",
        "labels": {"app.kubernetes.io/name": "airflow-worker", "team": "data-platform"},
        "annotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"},
    },
    "spec": {
        "serviceAccountName": "airflow-worker",
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 600,
        "securityContext": {"runAsUser": 50000, "runAsGroup": 0, "fsGroup": 0},
        "nodeSelector": {"node-pool": "airflow-workers"},
        "initContainers": [
            {"name": "wait-for-db", "image": IMAGE, "command": ["airflow", "db", "check"]}
        ],
        "containers": [
            {
                "name": "base",
                "image": IMAGE,
                "env": [
                    {"name": "AIRFLOW__CORE__EXECUTOR", "value": "LocalExecutor"},
                    {
                        "name": "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN",
                        "valueFrom": {
                            "secretKeyRef": {"name": "airflow-metadata", "key": "connection"}
                        },
                    },
                ],
                "resources": {
                    "requests": {"cpu": "500m", "memory": "1Gi"},
                    "limits": {"memory": "2Gi"},
                },
                "volumeMounts": [{"name": "logs", "mountPath": "/opt/airflow/logs"}],
            },
            {
                "name": "log-shipper",
                "image": "registry.example.com/fluent-bit:3.1",
                "volumeMounts": [
                    {"name": "logs", "mountPath": "/opt/airflow/logs", "readOnly": True}
                ],
            },
        ],
        "volumes": [{"name": "logs", "emptyDir": {"sizeLimit": "1Gi"}}],
    },
}

TASK_ARGS = workload_command_args(TASK_WORKLOAD)


def _terminated(exit_code: int, reason: str) -> dict[str, Any]:
    return {
        "terminated": {
            "exitCode": exit_code,
            "reason": reason,
            "startedAt": STARTED,
            "finishedAt": FINISHED,
            "containerID": f"containerd://{reason.lower()}{exit_code:04d}",
        }
    }


def _container_status(name: str, state: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "image": IMAGE,
        "imageID": f"{IMAGE}@sha256:{'4f' * 32}",
        "ready": False,
        "restartCount": 0,
        "started": False,
        "state": state,
        "lastState": {},
    }


def _status(phase: str, base: dict[str, Any], reason: str) -> dict[str, Any]:
    condition_time = {"lastProbeTime": None, "lastTransitionTime": FINISHED}
    return {
        "phase": phase,
        "conditions": [
            {"type": "Initialized", "status": "True", **condition_time},
            {"type": "Ready", "status": "False", "reason": reason, **condition_time},
            {"type": "ContainersReady", "status": "False", "reason": reason, **condition_time},
            {"type": "PodScheduled", "status": "True", **condition_time},
        ],
        "hostIP": "10.20.31.142",
        "podIP": "10.20.44.7",
        "podIPs": [{"ip": "10.20.44.7"}],
        "startTime": STARTED,
        "qosClass": "Burstable",
        "initContainerStatuses": [
            _container_status("wait-for-db", _terminated(0, "Completed")),
        ],
        "containerStatuses": [
            _container_status("base", base),
            _container_status("log-shipper", _terminated(0, "Completed")),
        ],
    }


def _event(status: dict[str, Any]) -> dict[str, Any]:
    pod = construct_task_pod(
        namespace=NAMESPACE,
        scheduler_job_id=SCHEDULER_JOB_ID,
        pod_id=POD_ID,
        dag_id=DAG_ID,
        task_id=TASK_ID,
        kube_image=None,
        try_number=1,
        args=TASK_ARGS,
        airflow_version=AIRFLOW_VERSION,
        run_id=RUN_ID,
        base_worker_pod=TEMPLATE,
    )
    pod["metadata"].update(
        uid="8c1f6f3e-2b7d-4c55-9a61-0d3f5e7a9b12",
        resourceVersion="918273645",
        creationTimestamp=CREATED,
    )
    pod["spec"]["nodeName"] = NODE
    pod["status"] = status
    return {"type": "MODIFIED", "object": pod}


FAILED_EVENT = _event(_status("Failed", _terminated(137, "OOMKilled"), "PodFailed"))
SUCCEEDED_EVENT = _event(_status("Succeeded", _terminated(0, "Completed"), "PodCompleted"))


def _result(event: dict[str, Any], outcome: EventOutcome) -> TaskResult:
    resolution = resolve_event(event)
    assert resolution.outcome is outcome, resolution
    result = resolution.to_result()
    assert isinstance(result, TaskResult), resolution
    return result


FAILED_RESULT = _result(FAILED_EVENT, EventOutcome.FAILED)
SUCCEEDED_RESULT = _result(SUCCEEDED_EVENT, EventOutcome.SUCCEEDED)
CONFIG = DecisionConfig()
RECORDED = Attempts({FAILED_RESULT.key: Attempt(KubernetesJob(FAILED_RESULT.key, TASK_ARGS))})
IN_FLIGHT = 10_000
WRITE_RATIO_TARGET = 0.1
"""One Attempts write at IN_FLIGHT records / one copy of an IN_FLIGHT-entry dict."""


def _many_in_flight() -> Attempts:
    attempts = RECORDED
    for index in range(IN_FLIGHT - 1):
        key = attrs.evolve(FAILED_RESULT.key, task_id=f"other_{index}")
        attempts = attempts.launched(KubernetesJob(key, TASK_ARGS))
    return attempts


CROWDED = _many_in_flight()

# ------------------------------------------------------------------------------ cases


@dataclass(frozen=True)
class DecisionCase:
    name: str
    event: dict[str, Any]
    decide: Callable[[], Decision]
    expect: tuple[type, ...]
    """The action types the decision must return, in order (checked before timing)."""


def _failed_no_record() -> Decision:
    return decide_task(FAILED_RESULT, running=True, config=CONFIG)


def _failed_with_record(attempts: Attempts = RECORDED) -> Decision:
    return decide_task(
        FAILED_RESULT,
        running=True,
        config=CONFIG,
        attempts=attempts,
        ti_state=TaskInstanceState.RUNNING,
    )


def _succeeded() -> Decision:
    return decide_task(
        SUCCEEDED_RESULT, running=True, config=CONFIG, ti_state=TaskInstanceState.SUCCESS
    )


def _failed_lookup_round_trip() -> Decision:
    first = decide_task(FAILED_RESULT, running=True, config=CONFIG, attempts=RECORDED)
    assert isinstance(first.look_up, LookUpState)
    return decide_task(
        FAILED_RESULT,
        running=True,
        config=CONFIG,
        attempts=first.attempts,
        ti_state=TaskInstanceState.RUNNING,
    )


CASES = (
    DecisionCase(
        "Failed, running, no attempt record",
        FAILED_EVENT,
        _failed_no_record,
        (PatchLabels, FreeSlot, EmitEvent),
    ),
    DecisionCase(
        "Failed, running, attempt record, ti_state=RUNNING",
        FAILED_EVENT,
        _failed_with_record,
        (PatchLabels, FreeSlot, EmitEvent),
    ),
    DecisionCase(
        "Succeeded, running, ti_state=SUCCESS",
        SUCCEEDED_EVENT,
        _succeeded,
        (DeletePod, FreeSlot, EmitEvent),
    ),
    DecisionCase(
        f"case 2 with {IN_FLIGHT:,} workloads in flight",
        FAILED_EVENT,
        functools.partial(_failed_with_record, CROWDED),
        (PatchLabels, FreeSlot, EmitEvent),
    ),
)


def _check_inputs() -> None:
    for case in CASES:
        decision = case.decide()
        kinds = tuple(type(action) for action in decision.actions)
        assert kinds == case.expect, (case.name, decision.actions)
        print(f"  {case.name}: {decision.reason}")
    assert _failed_lookup_round_trip().actions == _failed_with_record().actions
    size = len(repr(FAILED_EVENT))
    print(f"  the Failed event's object has {size:,} characters (repr)")


# ------------------------------------------------------------------------------ targets


def _resolver(event: dict[str, Any]) -> Callable[[], Resolution]:
    return lambda: resolve_event(event)


def bench_decisions(min_seconds: float) -> list[Outcome]:
    header(
        f"1-4. decide_task against resolve_event on the same event (µs per call, best of {REPEATS})"
    )
    print(f"  {'case':<52} {'decide':>8} {'resolve':>8} {'ratio':>6}  target < {RATIO_TARGET}")
    resolve_us = {
        id(event): per_call_us(_resolver(event), min_seconds)
        for event in (FAILED_EVENT, SUCCEEDED_EVENT)
    }
    outcomes: list[Outcome] = []
    for case in CASES:
        decide_us = per_call_us(case.decide, min_seconds)
        baseline = resolve_us[id(case.event)]
        ratio = decide_us / baseline
        passed = ratio < RATIO_TARGET
        print(f"  {case.name:<52} {decide_us:8.2f} {baseline:8.2f} {ratio:6.2f}  {verdict(passed)}")
        outcomes.append(Outcome.of(f"decide/resolve < {RATIO_TARGET}: {case.name}", passed))
    round_trip = per_call_us(_failed_lookup_round_trip, min_seconds)
    print(
        f"  (info) Failed with a record, LookUpState then the answer: {round_trip:.2f} µs,"
        f" {round_trip / resolve_us[id(FAILED_EVENT)]:.2f}{TIMES} resolve_event"
    )
    return outcomes


def bench_attempts_write(min_seconds: float) -> list[Outcome]:
    header(f"Attempts: one write at {IN_FLIGHT:,} records against one dict copy (µs)")
    keys = [attrs.evolve(FAILED_RESULT.key, task_id=f"churn_{i}") for i in range(1024)]
    jobs = [KubernetesJob(key, TASK_ARGS) for key in keys]
    base = CROWDED
    for job in jobs:
        base = base.launched(job)
    plain = dict(base.records)

    def churn() -> Attempts:
        # A workload finishes and is launched again, 1,024 times: 2,048 writes.
        attempts = base
        for job in jobs:
            attempts = attempts.without(job.key).launched(job)
        return attempts

    write_us = per_call_us(churn, min_seconds) / (2 * len(jobs))
    copy_us = per_call_us(plain.copy, min_seconds)
    ratio = write_us / copy_us
    passed = ratio < WRITE_RATIO_TARGET
    print(
        f"  write {write_us:.2f}, dict copy {copy_us:.2f}, ratio {ratio:.3f}"
        f"  target < {WRITE_RATIO_TARGET}  {verdict(passed)}"
    )
    return [Outcome.of(f"Attempts write / dict copy < {WRITE_RATIO_TARGET}", passed)]


# ------------------------------------------------------------------------------ simulator


def _event_count(result: object) -> int | None:
    """How many events the simulator reports having handled, if it says so."""
    for name in EVENT_COUNT_NAMES:
        value = result.get(name) if isinstance(result, Mapping) else getattr(result, name, None)
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            return value
        if isinstance(value, Sized) and not isinstance(value, (str, bytes)):
            return len(value)
    return None


def _simulator() -> Callable[..., object] | None:
    if importlib.util.find_spec(SIMULATE_MODULE) is None:
        return None
    module = importlib.import_module(SIMULATE_MODULE)
    function = getattr(module, SIMULATE_FUNCTION, None)
    return cast("Callable[..., object]", function) if callable(function) else None


def bench_simulator(runs: int) -> list[Outcome]:
    title = (
        f"Simulator: {SIMULATE_FUNCTION}({SIM_WORKLOADS:,} workloads, {SIM_RESTARTS} restarts)"
        " (info)"
    )
    header(title)
    name = f"simulator, {SIM_WORKLOADS:,} workloads with {SIM_RESTARTS} restarts (info)"
    simulate = _simulator()
    if simulate is None:
        print("  simulator not available yet")
        return [Outcome(name, "SKIP")]
    best = float("inf")
    result: object = None
    for _ in range(runs):
        start = time.perf_counter()
        result = simulate(SIM_WORKLOADS, SIM_RESTARTS, SIM_SEED)
        best = min(best, time.perf_counter() - start)
    print(f"  {best:.3f} s (best of {runs}), {best / SIM_WORKLOADS * 1e6:.1f} µs per workload")
    summary = getattr(result, "summary", None)
    if callable(summary):
        print(f"  {summary()}")
    events = _event_count(result)
    if events is None:
        print(f"  events/sec: unknown ({type(result).__name__} reports no event count)")
    else:
        print(f"  {events:,} events, {events / best:,.0f} events/sec")
    return [Outcome(name, "INFO")]


# ------------------------------------------------------------------------------ main


def main(argv: Sequence[str] | None = None) -> int:
    mode = parse_mode(
        "Print the decision targets as PASS/MISS (never fails on timing).",
        "shorter timing loops, one simulator run",
        argv,
    )
    min_seconds = mode.min_seconds

    print_environment(mode)
    print("decisions (the result each event resolves to, default DecisionConfig):")
    _check_inputs()

    outcomes = [
        *bench_decisions(min_seconds),
        *bench_attempts_write(min_seconds),
        *bench_simulator(1 if mode.quick else 3),
    ]
    return summarize(outcomes)


if __name__ == "__main__":
    sys.exit(main())

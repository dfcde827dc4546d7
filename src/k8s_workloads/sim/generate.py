"""Generated scenarios: a random, reproducible mix of behaviours, each workload with the
end state it must reach (for benchmarks and soak tests; no YAML)."""

from __future__ import annotations

import dataclasses
import random
import uuid

from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.sim.config import SimConfig
from k8s_workloads.sim.spec import (
    DEFAULT_POD,
    ContainerSpec,
    CreateError,
    PodScript,
    RestartSpec,
    Scenario,
    Step,
    WatchErrorSpec,
    WorkloadSpec,
)
from k8s_workloads.states import CallbackState, TaskInstanceState, WorkloadState

__all__ = ["generate_scenario"]


_RUN_ID = "scheduled__2026-01-01T00:00:00+00:00"
_SUCCESS = DEFAULT_POD
_RUN, _SUCCEED = _SUCCESS.steps
_IMAGE_MISSING = PodScript(
    (Step(phase="Pending", container=ContainerSpec("waiting", "ErrImagePull", "not found")),)
)
_OOM = ContainerSpec("terminated", "OOMKilled", None, 137)

_GENERATED_TASKS: dict[str, tuple[tuple[PodScript, ...], TaskInstanceState | None, int]] = {
    # behaviour: (pod scripts, expected end state, weight). A launch retry's bookkeeping
    # lives in the scheduler's memory, so a restart between the two launches fails the
    # workload instead: the retry behaviours expect nothing in particular.
    "success": ((_SUCCESS,), TaskInstanceState.SUCCESS, 46),
    "long": ((PodScript((_RUN, Step(after=9, phase="Succeeded"))),), TaskInstanceState.SUCCESS, 8),
    "duplicate": (
        (
            PodScript(
                (
                    Step(phase="Running", duplicate=True),
                    dataclasses.replace(_SUCCEED, duplicate=True),
                )
            ),
        ),
        TaskInstanceState.SUCCESS,
        6,
    ),
    "late": (
        (PodScript((Step(phase="Running", late=3), Step(after=1, phase="Succeeded"))),),
        TaskInstanceState.SUCCESS,
        5,
    ),
    "oom": (
        (PodScript((_RUN, Step(after=2, phase="Failed", container=_OOM))),),
        TaskInstanceState.FAILED,
        5,
    ),
    "error": ((PodScript((_RUN, Step(phase="Failed"))),), TaskInstanceState.FAILED, 4),
    "image": ((_IMAGE_MISSING,), TaskInstanceState.FAILED, 4),
    "evicted": ((PodScript((_RUN, Step(after=2, evicted=True))),), TaskInstanceState.FAILED, 4),
    "rejected_then_success": (
        (PodScript((Step(phase="Failed", reason="OutOfcpu", container=None),)), _SUCCESS),
        None,
        5,
    ),
    "throttled": (
        (PodScript(_SUCCESS.steps, (CreateError(429, "Too many requests", 1),)),),
        TaskInstanceState.SUCCESS,
        4,
    ),
    "unavailable": (
        (PodScript(_SUCCESS.steps, (CreateError(503, "etcdserver: leader changed"),)),),
        TaskInstanceState.SUCCESS,
        3,
    ),
    "invalid": (
        (PodScript(_SUCCESS.steps, (CreateError(422, "Pod is invalid"),)),),
        TaskInstanceState.FAILED,
        1,
    ),
    "deleted": ((PodScript((_RUN, Step(after=2, deleted=True))),), TaskInstanceState.FAILED, 5),
}
_GENERATED_CALLBACKS: dict[str, tuple[tuple[PodScript, ...], CallbackState | None, int]] = {
    "success": ((_SUCCESS,), CallbackState.SUCCESS, 55),
    "long": ((PodScript((_RUN, Step(after=9, phase="Succeeded"))),), CallbackState.SUCCESS, 15),
    "error": ((PodScript((_RUN, Step(phase="Failed"))),), CallbackState.FAILED, 20),
    "image_then_success": ((_IMAGE_MISSING, _SUCCESS), None, 10),
}
_CALLBACK_SHARE = 0.15


def generate_scenario(
    n_workloads: int, restarts: int, seed: int, *, watch_errors: int = 0
) -> Scenario:
    """A random mix of behaviours (no YAML), each workload with its expected end state.

    About 15% callbacks; tasks succeed, run long, see duplicate or late events, are
    OOM-killed, fail, miss their image, are evicted, rejected before they start, throttled
    or refused at creation, or deleted. Restarts fall while workloads arrive, each with a
    downtime of 0 to 2 ticks; ``watch_errors`` 410 errors break the watch stream.
    """
    if n_workloads < 1 or restarts < 0 or watch_errors < 0:
        raise ValueError("need at least one workload and a non-negative number of restarts")
    rng = random.Random(seed)  # noqa: S311 - a reproducible mix, not a secret
    horizon = max(10, n_workloads // 40)
    task_names = list(_GENERATED_TASKS)
    task_weights = [_GENERATED_TASKS[name][2] for name in task_names]
    callback_names = list(_GENERATED_CALLBACKS)
    callback_weights = [_GENERATED_CALLBACKS[name][2] for name in callback_names]
    workloads = []
    for index in range(n_workloads):
        at = rng.randrange(horizon)
        dag_id = f"dag_{index % 50}"
        key: WorkloadKey
        expect: WorkloadState | None
        if rng.random() < _CALLBACK_SHARE:
            behaviour = rng.choices(callback_names, callback_weights)[0]
            pods, expect, _ = _GENERATED_CALLBACKS[behaviour]
            key = CallbackKey(str(uuid.UUID(int=rng.getrandbits(128), version=4)))
        else:
            behaviour = rng.choices(task_names, task_weights)[0]
            pods, expect, _ = _GENERATED_TASKS[behaviour]
            key = TaskInstanceKey(dag_id, f"task_{index}", _RUN_ID)
        workloads.append(
            WorkloadSpec(f"w{index:05d}-{behaviour}", key, at, pods, dag_id, _RUN_ID, expect)
        )
    ticks = sorted(rng.sample(range(2, horizon + 8), k=min(restarts, horizon + 6)))
    # A restart that fell while the scheduler was still down would be lost: space them.
    specs: list[RestartSpec] = []
    for tick in ticks:
        at = max(tick, specs[-1].at + specs[-1].down + 1) if specs else tick
        specs.append(RestartSpec(at, rng.choice((0, 0, 1, 2))))
    restart_specs = tuple(specs)
    config = SimConfig(
        task_publish_max_retries=3,
        pod_launch_failure_retries=1,
        callback_launch_failure_retries=1,
        max_ticks=horizon + 200 + 3 * restarts,
    )
    return Scenario(
        name=f"generated-{n_workloads}-{restarts}-{seed}",
        workloads=tuple(workloads),
        seed=seed,
        config=config,
        restarts=restart_specs,
        watch_errors=tuple(
            WatchErrorSpec(tick)
            for tick in sorted(rng.sample(range(1, horizon + 1), k=min(watch_errors, horizon)))
        ),
    )

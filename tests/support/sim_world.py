"""Small scenarios for the simulator's tests: a workload entry in a few words, a run of
them, and a started world (one scheduler, the workloads queued, their pods created) whose
parts a test calls directly."""

from __future__ import annotations

import io

from k8s_workloads.sim import SimulationResult, parse_scenario, run_simulation_cli, simulate
from k8s_workloads.sim.world import Simulation

CALLBACK_ID = "019ea001-0000-7000-8000-0000000000aa"

_HEADER = "name: world\nseed: 3\nworkloads:\n"


def task(*steps: str, create_errors: str = "", id: str = "t", fields: str = "") -> str:  # noqa: A002
    """A task entry ``id`` (dag ``d``, task ``id``) whose pod takes ``steps`` (flow-style
    YAML mappings such as ``"{phase: Running}"``; none: the default pod)."""
    pod = []
    if steps:
        pod.append(f"steps: [{', '.join(steps)}]")
    if create_errors:
        pod.append(f"create_errors: [{create_errors}]")
    extra = f", {fields}" if fields else ""
    body = f", pod: {{{', '.join(pod)}}}" if pod else ""
    return f"  - {{id: {id}, kind: task, dag_id: d, task_id: {id}{extra}{body}}}\n"


def callback(*, id: str = "cb", fields: str = "") -> str:  # noqa: A002
    """A callback entry ``id`` of dag ``d``, run ``r``."""
    extra = f", {fields}" if fields else ""
    return (
        f"  - {{id: {id}, kind: callback, callback_id: {CALLBACK_ID}, dag_id: d, run_id: r"
        f"{extra}}}\n"
    )


def scenario_text(*workloads: str, extra: str = "") -> str:
    """A whole scenario: the entries (default: one task with the default pod), then
    ``extra`` (top-level keys such as ``config:`` or ``restarts:``)."""
    return _HEADER + "".join(workloads or (task(),)) + extra


def run(*workloads: str, extra: str = "") -> SimulationResult:
    return simulate(parse_scenario(scenario_text(*workloads, extra=extra)))


def texts(result: SimulationResult, kind: str) -> list[str]:
    """The timeline's lines of one kind, in order."""
    return [entry.text for entry in result.timeline if entry.kind == kind]


def started(*workloads: str, extra: str = "", create: bool = True) -> Simulation:
    """A world at tick 0 with scheduler 1 started, every workload queued (their rows
    written) and, if ``create``, the executor's first pass performed (their pods created)."""
    sim = Simulation(parse_scenario(scenario_text(*workloads, extra=extra)))
    sim.start_scheduler()
    sim.queue_due_workloads()
    if create:
        sim.sync()
    return sim


def restarted(sim: Simulation) -> Simulation:
    """``sim`` after its scheduler stops and the next one starts (and adopts)."""
    sim.stop_scheduler("restart")
    sim.start_scheduler()
    return sim


def simulate_cli(path: str | None, fmt: str = "text") -> tuple[int, str, str]:
    """``k8s-workloads simulate [path] -o fmt``: its exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    status = run_simulation_cli(path, out=out, err=err, fmt=fmt)
    return status, out.getvalue(), err.getvalue()

"""The scenario simulator: the shipped executor core against the test kit's cluster.

One module per question:

* :mod:`k8s_workloads.sim.spec`: what a scenario is (workloads, pod scripts, restarts,
  watch errors) and :mod:`k8s_workloads.sim.config` its options;
* :mod:`k8s_workloads.sim.scenario`: how a scenario file reads (the YAML schema, the
  reader with errors naming the line and field); :mod:`k8s_workloads.sim.generate`:
  random scenarios;
* :mod:`k8s_workloads.sim.world`: what happens (the cluster, the kubelet, the task
  process, Airflow's database and scheduler, and an
  :class:`~k8s_workloads.executor.ExecutorCore` per scheduler);
* :mod:`k8s_workloads.sim.report`: what is reported (the timeline, the scheduler's event
  log, the anomalies, the workload table).

No API server, no clock, no network: the same scenario always gives the same output (pod
names come from a ``random.Random`` seeded by the scenario).
"""

from __future__ import annotations

import json
from typing import TextIO

from k8s_workloads.display import one_line, shown
from k8s_workloads.limits import MAX_SCENARIO_BYTES, MAX_SCENARIO_ENTRIES
from k8s_workloads.sim.config import SimConfig
from k8s_workloads.sim.generate import generate_scenario
from k8s_workloads.sim.report import (
    Anomaly,
    EmittedEvent,
    SimulationResult,
    TimelineEntry,
    WorkloadReport,
)
from k8s_workloads.sim.scenario import (
    bundled_scenarios,
    load_bundled_scenario,
    load_scenario,
    parse_scenario,
)
from k8s_workloads.sim.spec import (
    ContainerSpec,
    CreateError,
    PodScript,
    RestartSpec,
    Scenario,
    ScenarioError,
    ScenarioTooLarge,
    Step,
    WatchErrorSpec,
    WorkloadSpec,
)
from k8s_workloads.sim.world import simulate

__all__ = [
    "MAX_SCENARIO_BYTES",
    "MAX_SCENARIO_ENTRIES",
    "Anomaly",
    "ContainerSpec",
    "CreateError",
    "EmittedEvent",
    "PodScript",
    "RestartSpec",
    "Scenario",
    "ScenarioError",
    "ScenarioTooLarge",
    "SimConfig",
    "SimulationResult",
    "Step",
    "TimelineEntry",
    "WatchErrorSpec",
    "WorkloadReport",
    "WorkloadSpec",
    "bundled_scenarios",
    "generate_scenario",
    "load_bundled_scenario",
    "load_scenario",
    "parse_scenario",
    "run_simulation_cli",
    "simulate",
    "simulate_generated",
]


def simulate_generated(
    n_workloads: int, restarts: int, seed: int, *, watch_errors: int = 0
) -> SimulationResult:
    """Run :func:`generate_scenario` without a timeline (for benchmarks and soak tests).

    The result's ``end_states`` counts workloads per end state and ``events_processed``
    the watch events resolved; no wall time is included, so it is deterministic.
    """
    scenario = generate_scenario(n_workloads, restarts, seed, watch_errors=watch_errors)
    return simulate(scenario, record_timeline=False)


def run_simulation_cli(
    path: str | None,
    *,
    out: TextIO,
    err: TextIO,
    fmt: str = "text",
    max_entries: int = MAX_SCENARIO_ENTRIES,
) -> int:
    """``k8s-workloads simulate [PATH] [-o text|json]``: 0 ok, 1 anomalies, 2 bad scenario.

    Without a path the bundled default scenario runs. ``max_entries`` is
    :func:`parse_scenario`'s.
    """
    if fmt not in {"text", "json"}:
        err.write(f"k8s-workloads simulate: unknown output format {shown(fmt)} (text or json)\n")
        return 2
    try:
        scenario = (
            load_scenario(path, max_entries=max_entries)
            if path is not None
            else load_bundled_scenario()
        )
    except ScenarioError as error:
        err.write(one_line(f"k8s-workloads simulate: {error}") + "\n")
        return 2
    result = simulate(scenario)
    if fmt == "json":
        out.write(json.dumps(result.to_json(), indent=2) + "\n")
    else:
        out.write(result.format_text())
    return 1 if result.anomalies else 0

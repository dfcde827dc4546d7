"""The scenario simulator's former home: every name now lives in :mod:`k8s_workloads.sim`.

Kept so that ``from k8s_workloads.simulate import simulate`` goes on working.
"""

from __future__ import annotations

from k8s_workloads.sim import (
    Anomaly,
    ContainerSpec,
    CreateError,
    EmittedEvent,
    PodScript,
    RestartSpec,
    Scenario,
    ScenarioError,
    SimConfig,
    SimulationResult,
    Step,
    TimelineEntry,
    WatchErrorSpec,
    WorkloadReport,
    WorkloadSpec,
    bundled_scenarios,
    generate_scenario,
    load_bundled_scenario,
    load_scenario,
    parse_scenario,
    run_simulation_cli,
    simulate,
    simulate_generated,
)

__all__ = [
    "Anomaly",
    "ContainerSpec",
    "CreateError",
    "EmittedEvent",
    "PodScript",
    "RestartSpec",
    "Scenario",
    "ScenarioError",
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

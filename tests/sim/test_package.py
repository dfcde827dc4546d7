"""The simulator's package (:mod:`k8s_workloads.sim`): ``k8s-workloads simulate``'s
outputs and exit statuses (:func:`run_simulation_cli`), and generated mode without a
timeline (:func:`simulate_generated`). The bundled scenarios: ``test_simulate.py``."""

from __future__ import annotations

import functools
import json

from k8s_workloads.sim import (
    SimulationResult,
    generate_scenario,
    load_bundled_scenario,
    simulate,
    simulate_generated,
)
from tests.support.sim_world import simulate_cli as cli


@functools.cache
def _default() -> SimulationResult:
    """The bundled default scenario's run (its expected end states: test_simulate.py)."""
    return simulate(load_bundled_scenario())


def test_text_output_has_a_timeline_a_table_and_a_summary() -> None:
    status, out, err = cli(None)
    assert err == ""
    result = _default()
    assert status == (0 if result.ok else 1)
    lines = out.splitlines()
    assert lines[0] == "Scenario nightly (seed 42, Airflow 3.3.2)"
    assert lines[1].startswith("t=  0  ")
    assert any(" MODIFIED Succeeded → lookup (task etl.extract try=1) → " in line for line in lines)
    header = next(line for line in lines if line.startswith("workload "))
    assert header.split()[:4] == ["workload", "kind", "key", "end"]
    assert lines[-1] == result.summary()
    assert lines[-1].startswith("13 workloads: 5 failed, 8 success | ")


def test_json_output_parses() -> None:
    status, out, _ = cli(None, "json")
    document = json.loads(out)
    assert document["name"] == "nightly"
    assert status == (0 if document["summary"]["ok"] else 1)
    reports = _default().workloads
    assert [w["id"] for w in document["workloads"]] == [report.id for report in reports]
    assert {w["id"]: w["end_state"] for w in document["workloads"]} == {
        report.id: report.end_state for report in reports
    }
    events = [entry for entry in document["timeline"] if entry["kind"] == "event"]
    assert events
    assert all({"t", "pod", "event", "outcome", "text"} <= entry.keys() for entry in events)
    assert document["summary"]["end_states"] == {"failed": 5, "success": 8}


def test_an_unknown_output_format_is_a_usage_error() -> None:
    status, out, err = cli(None, "yaml")
    assert (status, out) == (2, "")
    assert "unknown output format 'yaml'" in err


@functools.cache
def generated() -> SimulationResult:
    return simulate_generated(500, 2, 7)


def test_generated_mode_counts_every_workload() -> None:
    result = generated()
    assert result.timeline == ()
    assert sum(result.end_states.values()) == 500
    assert result.restarts == 2
    assert result.events_processed > 1000
    assert len({report.id for report in result.workloads}) == 500


def test_generated_mode_ends_with_every_workload_final() -> None:
    result = generated()
    finals = {"success", "failed"}
    assert {report.end_state for report in result.workloads} <= finals
    assert all(report.terminal_events <= 1 for report in result.workloads)
    assert result.anomalies == ()


def test_generated_mode_is_deterministic() -> None:
    again = simulate_generated(500, 2, 7)
    assert again.to_json() == generated().to_json()
    assert simulate_generated(500, 2, 8).to_json() != generated().to_json()


def test_generated_mode_with_watch_errors() -> None:
    result = simulate_generated(300, 1, 3, watch_errors=2)
    assert sum(result.end_states.values()) == 300
    assert result.anomalies == ()
    assert len(generate_scenario(300, 1, 3, watch_errors=2).watch_errors) == 2

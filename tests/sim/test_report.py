"""What a run reports (:mod:`k8s_workloads.sim.report`): JSON without absent fields, one
line per value in the text, and a summary that agrees with the parts."""

from __future__ import annotations

import json

import pytest

from k8s_workloads.sim import Anomaly, SimConfig, SimulationResult, TimelineEntry, WorkloadReport


def _result(**changes: object) -> SimulationResult:
    values: dict[str, object] = {
        "name": "r",
        "seed": 0,
        "config": SimConfig(),
        "ticks": 3,
        "timeline": (TimelineEntry(0, "queue", "queue task d.t try=1", workload="t"),),
        "workloads": (
            WorkloadReport("t", "task", "d.t try=1", "success", ("p",), 1, 1, ("t2:success",), ()),
        ),
        "end_states": {"success": 1},
        "events_processed": 4,
        "restarts": 0,
        "schedulers": 1,
        "anomalies": (),
        "pods_left": (),
    }
    values.update(changes)
    return SimulationResult(**values)  # type: ignore[arg-type]


def test_a_timeline_entry_leaves_out_what_it_does_not_have() -> None:
    entry = TimelineEntry(2, "event", "ADDED Pending", pod="p", actions=("free slot",))
    assert entry.to_json() == {
        "t": 2,
        "kind": "event",
        "text": "ADDED Pending",
        "pod": "p",
        "actions": ["free slot"],
    }


def test_the_json_is_json_and_its_summary_agrees() -> None:
    shown = json.loads(json.dumps(_result().to_json()))
    summary = shown["summary"]
    assert (summary["workloads"], summary["ok"], summary["anomalies"]) == (1, True, 0)
    assert summary["text"] == (
        "1 workloads: 1 success | 4 watch events | 0 restarts | 3 ticks | 0 pods left | 0 anomalies"
    )


def test_an_anomaly_makes_the_run_not_ok_and_is_one_line_of_text() -> None:
    anomaly = Anomaly("slot_leak", "a message\nwith a forged line", 2, "t")
    result = _result(anomalies=(anomaly,))
    assert not result.ok
    text = result.format_text()
    lines = [line for line in text.splitlines() if line.startswith("ANOMALY")]
    assert len(lines) == 1
    assert lines[0].startswith("ANOMALY t=2 slot_leak [t]: a message")
    assert "1 anomaly" in text


def test_an_unknown_workload_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        _result().workload("nope")

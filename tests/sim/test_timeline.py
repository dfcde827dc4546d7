"""The timeline's lines about the executor (:mod:`k8s_workloads.sim._timeline`): a watch
event on one line with the decision about its result, and every other decision with its
actions, keys in their short form."""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

from k8s_workloads.sim import _timeline
from k8s_workloads.testing import FAILURES
from tests.support.sim_world import started

if TYPE_CHECKING:
    from k8s_workloads.executor.requests import Handled
    from k8s_workloads.pods.manifest import Manifest
    from k8s_workloads.sim.world import Simulation


def _event(
    sim: Simulation, phase: str, *, kind: str = "MODIFIED", deleting: bool = False
) -> Manifest:
    """A watch event for the world's one pod, at ``phase`` (a failed container if Failed)."""
    ((namespace, name),) = sim.runs
    pod = copy.deepcopy(sim.cluster.pod(namespace, name))
    assert pod is not None
    pod["status"] = {"phase": phase}
    if phase == "Failed":
        pod["status"]["containerStatuses"] = [
            {"name": "base", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}
        ]
    if deleting:
        pod["metadata"]["deletionTimestamp"] = sim.timestamp()
    return {"type": kind, "object": pod}


def _decided(
    sim: Simulation, event: Manifest
) -> tuple[tuple[str, dict[str, Any], Any], list[Handled]]:
    """The event's line, and what the core decided in the pass after it was fed."""
    sched = sim.scheduler
    sched.handled.clear()
    resolution = sched.core.feed_event(json.dumps(event), now=sim.moment())
    line = _timeline.event_line(event, resolution, by_key=sim.by_key)
    sched.core.run_pass(sim.moment(), sim.perform, failures=FAILURES)
    return line, list(sched.handled)


def test_an_event_line_says_type_phase_and_what_it_resolves_to() -> None:
    sim = started()
    text, fields, result = _timeline.event_line(
        _event(sim, "Running"),
        sim.scheduler.core.feed_event(json.dumps(_event(sim, "Running"))),
        by_key=sim.by_key,
    )
    assert text == "MODIFIED Running → running (task d.t try=1)"
    assert fields["workload"] == "t"
    # Running changes nothing to report: the line shows the outcome, no state.
    assert (fields["event"], fields["phase"], fields["outcome"], fields["state"]) == (
        "MODIFIED",
        "Running",
        "running",
        None,
    )
    assert result is None  # no result: nothing for the core to decide
    assert (sim.config.namespace, fields["pod"]) in sim.runs


def test_a_deleting_pod_is_marked_and_a_failure_shows_its_reason() -> None:
    sim = started()
    event = _event(sim, "Failed", deleting=True)
    text, fields, _ = _timeline.event_line(
        event, sim.scheduler.core.feed_event(json.dumps(event)), by_key=sim.by_key
    )
    assert text.startswith("MODIFIED Failed (deleting) → failed")
    assert fields["outcome"] == "failed"


def test_the_decision_about_the_events_result_goes_on_the_events_line() -> None:
    sim = started()
    line, handled = _decided(sim, _event(sim, "Failed"))
    assert [record.cause for record in handled] == ["result"]
    rest = _timeline.log_event_line(sim.journal, line, handled)
    assert rest == []
    entry = sim.journal.timeline[-1]
    assert entry.kind == "event"
    assert entry.text.startswith(line[0] + " → ")
    assert "task d.t try=1" in entry.text
    assert "TaskInstanceKey(" not in entry.text  # the key in its short form
    assert "emit failed" in entry.actions


def test_an_event_without_a_matching_decision_is_logged_alone() -> None:
    sim = started()
    line, handled = _decided(sim, _event(sim, "Failed"))
    unrelated = [record for record in handled if record.result != line[2]]
    before = len(sim.journal.timeline)
    assert _timeline.log_event_line(sim.journal, line, unrelated) == unrelated
    assert [entry.text for entry in sim.journal.timeline[before:]] == [line[0]]


def test_without_a_timeline_nothing_is_logged_and_the_records_come_back() -> None:
    sim = started()
    line, handled = _decided(sim, _event(sim, "Failed"))
    sim.journal.record_timeline = False
    before = len(sim.journal.timeline)
    assert _timeline.log_event_line(sim.journal, line, handled) == handled
    _timeline.log_handled(sim.journal, handled, "adoption", by_key=sim.by_key)
    assert len(sim.journal.timeline) == before


def test_other_decisions_are_logged_with_why_they_were_made() -> None:
    sim = started()
    _, handled = _decided(sim, _event(sim, "Failed"))
    before = len(sim.journal.timeline)
    _timeline.log_handled(sim.journal, handled, "re-list", by_key=sim.by_key)
    (entry,) = sim.journal.timeline[before:]
    assert entry.kind == "adopt"
    assert entry.text.startswith("re-list: failed (task d.t try=1) → ")
    assert entry.state == "failed"
    _timeline.log_handled(sim.journal, handled, None, by_key=sim.by_key)
    assert sim.journal.timeline[-1].kind == "event"
    assert sim.journal.timeline[-1].text.startswith("failed (task d.t try=1) → ")
